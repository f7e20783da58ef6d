#!/usr/bin/env bash
# Installs the Debian packages megatron-mlir needs to build and test, only
# those missing. Safe to run again. The CUDA toolkit is optional and never
# installed here: the build uses it when nvcc is on the PATH.
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ python3 git   # build tools
  llvm-22-dev libmlir-22-dev mlir-22-tools  # LLVM/MLIR 22, shared libMLIR.so, mlir-tblgen
  llvm-22-tools                              # lit, FileCheck, not, split-file
  libopenblas-dev nlohmann-json3-dev         # the runtime: BLAS GEMMs, JSON artifacts
  zlib1g-dev                                 # the runtime: checkpoint checksums
  libopenmpi-dev openmpi-bin                 # CPU ranks: MPI collectives, mpirun
  libgtest-dev                               # runtime unit tests
  python3-torch python3-numpy                # the independent numerical reference
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The cuDNN frontend (header-only C++, NVIDIA's graph API over cuDNN) for
# the CUDA backend's fused attention: only where the CUDA toolkit is, from
# PyPI's nvidia-cudnn-frontend wheel (its include/ directory; the Python
# module beside it is not used). runtime/CMakeLists.txt looks here.
frontend_version=1.32.0
frontend_dir="${MEGATRON_DEPS:-/opt/megatron-deps}/cudnn-frontend-$frontend_version"
if command -v nvcc >/dev/null 2>&1 && [ ! -f "$frontend_dir/include/cudnn_frontend.h" ]; then
  echo "install-deps: fetching the cuDNN frontend $frontend_version headers"
  download="$(mktemp -d)"
  # Without PyPI the CUDA backend still builds, with its own attention only.
  if python3 -m pip download -q --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux_2_28_x86_64 \
    -d "$download" "nvidia-cudnn-frontend==$frontend_version"; then
    $sudo mkdir -p "$frontend_dir"
    $sudo python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    wheel.extractall(sys.argv[2], [n for n in wheel.namelist() if n.startswith("include/")])' \
      "$download"/nvidia_cudnn_frontend-*.whl "$frontend_dir"
  else
    echo "install-deps: could not fetch the cuDNN frontend; the CUDA backend builds without cuDNN attention" >&2
  fi
  rm -rf "$download"
fi
echo "install-deps: done"
