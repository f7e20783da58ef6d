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

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
