#!/usr/bin/env bash
# Prepares everything a GPU machine needs to check the CUDA backend in one
# call: the GPU machine has CUDA, nvcc, a C++ compiler and Python but none
# of our Debian dependencies and no MLIR, so the runtime built here travels
# with its libraries (not the CUDA ones: the GPU machine's CUDA 13 serves),
# and the artifacts are compiled here.
#
#   scripts/gpu-bundle.sh            # here: writes gpu-bundle/ (about 35 MiB)
#   gpu-bundle/check.sh              # there (the device tool's `run`, with
#                                    # carry ["gpu-bundle"]); results in $OUT
#
# The bundle: bin/megatron-run, lib/ (libmtrt.so, libmtrt_cuda_backend.so,
# MPI, OpenBLAS as libopenblas.so.0.xz, which check.sh unpacks ...),
# artifacts/*.mtx, check.sh, and Open MPI's launcher relocated under ompi/
# with bin/mpirun to start it; docs/gpu-check.md says how to run it and
# what it checks. The device tool carries at most 64 MiB: past 63 MiB this
# script fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
bundle="$root/gpu-bundle"
# Always brought up to date (ninja does nothing when it is current): a
# bundle of binaries older than the sources would test old code.
if [ -x "$build/bin/megatron-run" ]; then
  cmake --build "$build" -j "${JOBS:-2}"
else
  "$root/scripts/build.sh"
fi
[ -f "$build/lib/libmtrt_cuda_backend.so" ] || {
  echo "gpu-bundle: $build has no CUDA backend (is nvcc installed?)" >&2
  exit 1
}
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/artifacts"
# The commit and any uncommitted change the binaries were built from;
# check.sh prints it at the top of its summary.
{
  echo "bundle built $(date -u +%Y-%m-%dT%H:%MZ) from commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  changes="$(git -C "$root" status --porcelain 2>/dev/null)"
  if [ -n "$changes" ]; then
    echo "with uncommitted changes ($(echo "$changes" | wc -l) files; diff sha256 $(git -C "$root" diff HEAD 2>/dev/null | sha256sum | cut -c1-16))"
  fi
} >"$bundle/PROVENANCE"
cp "$build/bin/megatron-run" "$build/unittests/CudaKernelsTest" "$bundle/bin/"
cp "$build/lib/libmtrt.so" "$build/lib/libmtrt_cuda_backend.so" "$bundle/lib/"
# Every library they load but the C library, the CUDA ones and the driver
# (the C++ runtime is linked into them). They find these beside them
# through their RPATH ($ORIGIN), so no LD_LIBRARY_PATH is needed there.
bundle_libraries() { # elf...: copies the libraries they load into lib/
  ldd "$@" | awk '/=> \// {print $3}' | sort -u |
      grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so|/libcu|/libnv|/libmtrt' |
    while read -r library; do
      [ -e "$bundle/lib/$(basename "$library")" ] || cp -L "$library" "$bundle/lib/"
    done
}
bundle_libraries "$build/bin/megatron-run" "$build/lib/libmtrt_cuda_backend.so"

# Open MPI's launcher, for several ranks on the GPU machine's one GPU: the
# build machine's Open MPI 4.1 (Debian's), relocated under ompi/:
#   ompi/bin/orterun, orted, ompi_info
#   ompi/lib/openmpi/mca_*.so     its components (OPAL_PKGLIBDIR)
#   ompi/lib/pmix/pmix_mca_*.so   PMIx's (PMIX_PKGLIBDIR)
#   ompi/share/openmpi, ompi/share/pmix   help texts (the error messages)
#   ompi/etc/openmpi-mca-params.conf      the MCA defaults for one machine
# and bin/mpirun, which points Open MPI's and PMIx's install directories
# there (OPAL_PREFIX, OPAL_PKGLIBDIR ..., PMIX_PREFIX ...) and starts
# orterun; their libraries (libopen-rte, libopen-pal, libpmix, libhwloc,
# libevent, libmunge ...) go to lib/ beside the runtime's.
ompi_path() { ompi_info --path "$1" --parsable 2>/dev/null | sed -n "s/^path:$1://p" || true; }
ompi_pkglibdir="$(ompi_path pkglibdir)"
ompi_pkgdatadir="$(ompi_path pkgdatadir)"
orterun="$(readlink -f "$(command -v orterun || command -v mpirun || true)" || true)"
# Debian's Open MPI uses the system's PMIx (libpmix.so.2) through ext3x.
pmix_library="$(ldd "$ompi_pkglibdir/mca_pmix_ext3x.so" 2>/dev/null |
  awk '/libpmix\.so/ {print $3}' || true)"
[ -d "$ompi_pkglibdir" ] && [ -x "$orterun" ] && [ -f "$pmix_library" ] || {
  echo "gpu-bundle: no Open MPI 4.1 with PMIx here (ompi_info, orterun, mca_pmix_ext3x.so, libpmix)" >&2
  exit 1
}
pmix_libdir="$(dirname "$(readlink -f "$pmix_library")")"
ompi="$bundle/ompi"
mkdir -p "$ompi/bin" "$ompi/lib/openmpi" "$ompi/lib/pmix" "$ompi/share/openmpi" \
  "$ompi/share/pmix" "$ompi/etc"
cp "$orterun" "$(dirname "$orterun")/orted" "$(dirname "$orterun")/ompi_info" "$ompi/bin/"
# Every component whose libraries the bundle carries: those for InfiniBand,
# UCX, libfabric, PSM, OpenSHMEM, MPI-IO (ompio) and netlink need more, and
# would only warn that they do not load.
for component in "$ompi_pkglibdir"/mca_*.so; do
  readelf -d "$component" | awk '/NEEDED/ {gsub(/[][]/, "", $5); print $5}' |
    grep -qvE '^(libopen-pal|libopen-rte|libmpi|libpmix|libevent_core-2\.1|libevent_pthreads-2\.1|libhwloc|libz|libc|libm|libdl|libpthread|librt)\.so' ||
    cp "$component" "$ompi/lib/openmpi/"
done
for component in btl_vader btl_self pml_ob1 plm_isolated pmix_ext3x; do
  [ -f "$ompi/lib/openmpi/mca_$component.so" ] || {
    echo "gpu-bundle: Open MPI's $component component is missing" >&2
    exit 1
  }
done
if [ -d "$pmix_libdir/pmix" ]; then cp "$pmix_libdir"/pmix/*.so "$ompi/lib/pmix/"; fi
cp "$ompi_pkgdatadir"/help-*.txt "$ompi/share/openmpi/"
if [ -d "$pmix_libdir/../share/pmix" ]; then cp "$pmix_libdir"/../share/pmix/help-*.txt "$ompi/share/pmix/"; fi
bundle_libraries "$ompi"/bin/* "$ompi"/lib/openmpi/*.so "$ompi"/lib/pmix/*.so
cat >"$ompi/etc/openmpi-mca-params.conf" <<'CONF'
# Open MPI's MCA defaults for the bundle (OPAL_SYSCONFDIR points here; an
# OMPI_MCA_* variable or mpirun --mca overrides them): ranks on one machine,
# maybe a container with no network interface but loopback.
# Shared memory (vader) and self only: no TCP, InfiniBand or UCX probing.
btl = self,vader
pml = ob1
# No single copy through process_vm_readv/CMA, which a container's seccomp
# or ptrace policy often forbids ("Read -1, expected ..., errno = 1").
btl_vader_single_copy_mechanism = none
# Ranks on this machine only, started by mpirun itself: no ssh or rsh,
# which the default launcher (rsh) insists on finding, even for one node.
plm = isolated
# Several ranks share the machine and each runs its own threads: no binding.
hwloc_base_binding_policy = none
rmaps_base_oversubscribe = 1
btl_base_warn_component_unused = 0
# As Debian's own defaults (/etc/openmpi/openmpi-mca-params.conf).
osc = ^pt2pt
CONF
: >"$ompi/etc/pmix-mca-params.conf"
# Debian's Open MPI finds its libraries through DT_RUNPATH
# /usr/lib/x86_64-linux-gnu/openmpi/lib, absent there, and a RUNPATH keeps
# the libraries it loads from using the executable's RPATH. So the
# bundle's copies get a DT_RPATH relative to themselves ($ORIGIN), in
# place, as `patchelf --force-rpath --set-rpath` would; readelf checks that
# nothing else changed.
relocate() { # rpath elf...: DT_RPATH rpath for each with a RUNPATH or an openmpi RPATH
  local rpath="$1"
  shift
  python3 - "$rpath" "$@" <<'PY'
import os, struct, subprocess, sys
DT_NULL, DT_STRTAB, DT_RPATH, DT_RUNPATH = 0, 5, 15, 29
def readelf(path):
    text = subprocess.run(["readelf", "-W", "-d", "--dyn-syms", "-V", path],
                          check=True, capture_output=True, text=True).stdout
    return [l for l in text.splitlines()
            if "(RPATH)" not in l and "(RUNPATH)" not in l]
rpath = sys.argv[1].encode()
for path in sys.argv[2:]:
    data = bytearray(open(path, "rb").read())
    if data[:6] != b"\x7fELF\x02\x01":
        sys.exit("gpu-bundle: %s: not a 64-bit little-endian ELF" % path)
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for i in range(phnum):
        kind, _, offset, vaddr, _, filesz, _, _ = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if kind == 1:
            loads.append((vaddr, offset, filesz))
        elif kind == 2:
            dynamic = (offset, filesz)
    def file_offset(vaddr):
        for start, offset, size in loads:
            if start <= vaddr < start + size:
                return offset + vaddr - start
        sys.exit("gpu-bundle: %s: address %#x outside the file" % (path, vaddr))
    strtab, paths = None, []
    for entry in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, value = struct.unpack_from("<qQ", data, entry)
        if tag == DT_NULL:
            break
        if tag == DT_STRTAB:
            strtab = file_offset(value)
        elif tag in (DT_RPATH, DT_RUNPATH):
            paths.append((entry, tag, value))
    if not paths:
        continue
    if len(paths) != 1:
        sys.exit("gpu-bundle: %s: %d RPATH/RUNPATH entries" % (path, len(paths)))
    entry, tag, value = paths[0]
    start = strtab + value
    end = data.index(b"\0", start)
    if tag == DT_RPATH and b"openmpi" not in data[start:end]:
        continue
    if len(rpath) > end - start:
        sys.exit("gpu-bundle: %s: %r longer than %r" % (path, rpath, bytes(data[start:end])))
    before = readelf(path)
    data[start:end] = rpath + b"\0" * (end - start - len(rpath))
    struct.pack_into("<q", data, entry, DT_RPATH)
    mode = os.stat(path).st_mode
    open(path, "wb").write(data)
    os.chmod(path, mode)
    if readelf(path) != before:
        sys.exit("gpu-bundle: %s: patching its RPATH changed more" % path)
PY
}
relocate '$ORIGIN' "$bundle"/lib/*.so*
relocate '$ORIGIN/../../lib' "$ompi"/bin/*
relocate '$ORIGIN/../../../lib' "$ompi"/lib/openmpi/*.so "$ompi"/lib/pmix/*.so
cat >"$bundle/bin/mpirun" <<'SH'
#!/bin/sh
# Open MPI's mpirun (orterun 4.1, Debian 12's), relocated into the bundle by
# scripts/gpu-bundle.sh: every install directory Open MPI and PMIx look in
# is the bundle's ompi/ (components, help texts, MCA defaults in
# ompi/etc/openmpi-mca-params.conf), and every library is found through
# RPATH $ORIGIN, so no LD_LIBRARY_PATH is set (the ranks' nvcc must not
# load the bundle's libraries); --noprefix keeps orterun, started by its
# absolute path, from adding ompi/lib to the ranks' LD_LIBRARY_PATH.
# Arguments pass through:
#   gpu-bundle/bin/mpirun -np 2 gpu-bundle/bin/megatron-run a.mtx --steps 3
#   gpu-bundle/bin/mpirun -np 1 gpu-bundle/ompi/bin/ompi_info --all
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
bundle="$(cd "$here/.." && pwd)"
ompi="$bundle/ompi"
export OPAL_PREFIX="$ompi" OPAL_EXEC_PREFIX="$ompi" OPAL_BINDIR="$ompi/bin" \
  OPAL_LIBDIR="$ompi/lib" OPAL_PKGLIBDIR="$ompi/lib/openmpi" \
  OPAL_DATAROOTDIR="$ompi/share" OPAL_DATADIR="$ompi/share" \
  OPAL_PKGDATADIR="$ompi/share/openmpi" OPAL_SYSCONFDIR="$ompi/etc"
export PMIX_PREFIX="$ompi" PMIX_EXEC_PREFIX="$ompi" PMIX_BINDIR="$ompi/bin" \
  PMIX_LIBDIR="$ompi/lib" PMIX_PKGLIBDIR="$ompi/lib/pmix" \
  PMIX_DATAROOTDIR="$ompi/share" PMIX_DATADIR="$ompi/share" \
  PMIX_PKGDATADIR="$ompi/share/pmix" PMIX_SYSCONFDIR="$ompi/etc"
export PATH="$ompi/bin:$PATH"
exec "$ompi/bin/orterun" --allow-run-as-root --oversubscribe --noprefix "$@"
SH
chmod +x "$bundle/bin/mpirun"
# OpenBLAS is most of the bundle (36 MiB): it travels compressed, and
# check.sh unpacks it before any run.
python3 -c 'import lzma, shutil, sys
with open(sys.argv[1], "rb") as source, lzma.open(sys.argv[2], "wb", preset=9) as target:
    shutil.copyfileobj(source, target, 1 << 20)' \
  "$bundle/lib/libopenblas.so.0" "$bundle/lib/libopenblas.so.0.xz"
rm "$bundle/lib/libopenblas.so.0"

translate="$build/bin/megatron-translate"
opt="$build/bin/megatron-opt"
compile() { # name config micro-batch seq pipeline-options [import-flags...]
  # shellcheck disable=SC2086
  "$translate" --import-hf-config "$2" --micro-batch-size "$3" --seq-length "$4" ${6:-} |
    "$opt" --mt-train-pipeline="$5" |
    "$translate" --export-artifact -o "$bundle/artifacts/$1.mtx"
}
compile tiny "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 ""
compile tiny-dropout "$root/test/runtime/Inputs/gpt2-tiny-dropout.json" 2 8 ""
compile gpt2-2layer "$root/test/runtime/Inputs/gpt2-2layer.json" 4 32 ""
compile gpt2-124m "$root/examples/gpt2/gpt2.json" 4 128 ""
python3 -c 'import json, sys
config = dict(json.load(open(sys.argv[1])), embd_pdrop=0.0, attn_pdrop=0.0, resid_pdrop=0.0)
json.dump(config, open(sys.argv[2], "w"))' "$root/examples/gpt2/gpt2.json" "$bundle/gpt2-nodropout.json"
compile gpt2-124m-bf16 "$bundle/gpt2-nodropout.json" 4 128 "precision=bf16"
rm "$bundle/gpt2-nodropout.json"
compile tiny-bf16 "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 "precision=bf16"
# Casting the parameters every step instead of reading the bf16 copies
# AdamW writes: check.sh's bit-for-bit comparison of the two.
compile tiny-bf16-cast "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 "precision=bf16 parameter-copies=false"
compile llama-gqa "$root/test/integration/Inputs/llama-2layer-gqa.json" 2 8 ""
compile llama31 "$root/test/integration/Inputs/llama31-2layer.json" 2 8 ""
compile tiny-unfused "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 "fuse=false"
# A padded vocabulary (32 rows to 48): the fused and the unfused loss mask
# the padding.
compile tiny-padded "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 "make-vocab-size-divisible-by=24"
compile tiny-padded-unfused "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 "fuse=false make-vocab-size-divisible-by=24"
# fp16 with Megatron-LM's dynamic loss scale (its first steps overflow and
# are skipped), full recomputation with dropout (the recomputed forward
# draws the forward's masks), and LLaMA's kernels (RMSNorm, RoPE, SiLU,
# grouped-query heads) in bf16.
compile tiny-fp16 "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 "precision=fp16"
compile tiny-dropout-remat "$root/test/runtime/Inputs/gpt2-tiny-dropout.json" 2 8 "remat=full"
compile llama-gqa-bf16 "$root/test/integration/Inputs/llama-2layer-gqa.json" 2 8 "precision=bf16"
# Gradient accumulation over 2 microbatches, each later microbatch's weight
# gradients added by their GEMMs (beta = 1: cublasSgemm's in fp32,
# cuBLASLt's bias-gradient epilogue in bf16).
compile gpt2-2layer-accum "$root/test/runtime/Inputs/gpt2-2layer.json" 4 32 "microbatches=2"
compile gpt2-2layer-accum-bf16 "$root/test/runtime/Inputs/gpt2-2layer.json" 4 32 "precision=bf16 microbatches=2"
# Mistral's sliding window (5 keys at sequence 16): the flash kernels'
# window mask, forward and backward.
compile mistral-window "$root/test/integration/Inputs/mistral-2layer-window.json" 2 16 ""
# A mixture of experts on the GPU (MoeKernels.h): Mixtral's renormalized
# top-2 of 4 experts with Hugging Face's load-balancing loss, Qwen2-MoE's
# unnormalized gating with its sigmoid-gated shared expert, token dropping
# at a capacity (Megatron-LM's probs policy, per-layer auxiliary loss and
# router z-loss), and
# Mixtral in bf16. Gemma 2's soft caps: the attention scores' in the flash
# kernels, the final logits' unfused (fuse=false: mt.softcap's own
# kernel).
compile moe-mixtral "$root/test/integration/Inputs/mixtral-2layer-aux.json" 2 8 ""
compile moe-qwen2 "$root/test/integration/Inputs/qwen2-moe-3layer.json" 2 8 ""
compile moe-capacity "$root/test/integration/Inputs/mixtral-2layer.json" 4 8 "" \
  "--moe-expert-capacity-factor 1.0 --moe-token-drop-policy probs --moe-aux-loss-coeff 0.01 --moe-z-loss-coeff 0.01"
compile moe-capacity-position "$root/test/integration/Inputs/mixtral-2layer.json" 4 8 "" \
  "--moe-expert-capacity-factor 0.75 --moe-token-drop-policy position"
compile moe-mixtral-bf16 "$root/test/integration/Inputs/mixtral-2layer-aux.json" 2 8 "precision=bf16"
# Evaluation on the GPU (--eval-interval): the dropout model's validation
# losses with every dropout off, against the CPU backend's.
compile tiny-dropout-eval "$root/test/runtime/Inputs/gpt2-tiny-dropout.json" 2 8 ""
compile gemma2-softcap "$root/test/integration/Inputs/gemma2-2layer.json" 2 16 "fuse=false"
# Several ranks on the one GPU (check.sh's compare_ranks): tensor
# parallelism with the vocab-parallel loss, ZeRO-3, the pipeline, pp x tp.
compile tiny-tp2 "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 "tp=2"
compile tiny-dp2-zero3 "$root/test/runtime/Inputs/gpt2-tiny.json" 2 8 "dp=2 zero=3"
# ZeRO over a dp that does not divide the parameters (width 8 over 3 ranks):
# the padding's copy_prefix kernels, in fp32 and in bf16.
compile tiny-dp3-zero3 "$root/test/runtime/Inputs/gpt2-tiny.json" 3 8 "dp=3 zero=3"
compile tiny-dp3-zero2-bf16 "$root/test/runtime/Inputs/gpt2-tiny.json" 3 8 "dp=3 zero=2 precision=bf16"
compile gpt2-2layer-pp2 "$root/test/runtime/Inputs/gpt2-2layer.json" 4 32 "pp=2 microbatches=2"
compile gpt2-2layer-pp2-tp2 "$root/test/runtime/Inputs/gpt2-2layer.json" 4 32 "pp=2 tp=2 microbatches=2"
# Expert parallelism on ranks sharing the GPU: the exchange (dp2 ep2), an
# expert's replicas' sum (dp4 ep2) and ZeRO-2's pieces of an expert over
# its replicas (the strided reduce-scatter, slice and all-gather), all
# through host memory.
compile moe-dp2-ep2 "$root/test/integration/Inputs/mixtral-2layer.json" 4 8 "dp=2 ep=2"
compile moe-dp4-ep2 "$root/test/integration/Inputs/mixtral-2layer.json" 4 8 "dp=4 ep=2"
compile moe-dp4-ep2-zero2 "$root/test/integration/Inputs/mixtral-2layer.json" 4 8 "dp=4 ep=2 zero=2"
# Issue 12's bench, against PyTorch there: GPT-2 124M, 350M and a 1.3B
# config (width 2048, 24 layers), bf16, 8 x 1024, dropout 0 (as PyTorch's),
# each 16-bit weight copy kept from the forward for the backward as
# PyTorch's autocast keeps it (recast-parameters=false: one cast kernel per
# parameter fewer; the 1.3B config plans well inside an H100's memory), and
# the vocabulary padded as Megatron-LM pads it by default (50257 rows to
# 50304, make-vocab-size-divisible-by=128: the LM head's GEMMs on aligned
# tiles; the padding is masked, so the model is PyTorch's 50257-token one).
configs="$(mktemp -d)"
python3 - "$root/examples/gpt2/gpt2.json" "$configs" <<'PY'
import json, sys
base = json.load(open(sys.argv[1]))
for name, (width, layers, heads) in {"124m": (768, 12, 12),
                                     "350m": (1024, 24, 16),
                                     "1.3b": (2048, 24, 16)}.items():
    config = dict(base, n_embd=width, n_layer=layers, n_head=heads,
                  embd_pdrop=0.0, attn_pdrop=0.0, resid_pdrop=0.0)
    json.dump(config, open("%s/gpt2-%s.json" % (sys.argv[2], name), "w"))
PY
for model in 124m 350m 1.3b; do
  compile "bench-$model" "$configs/gpt2-$model.json" 8 1024 \
    "precision=bf16 recast-parameters=false make-vocab-size-divisible-by=128"
done
# The 1.3B bench with gradient accumulation: 4 micro-batches of 8 x 1024
# a step (check.sh's megatron-1.3b-accum4, against PyTorch's
# --accumulate 4).
compile bench-1.3b-accum4 "$configs/gpt2-1.3b.json" 32 1024 \
  "precision=bf16 recast-parameters=false make-vocab-size-divisible-by=128 microbatches=4"
# The 124M bench with the bias epilogue alone (no GeLU or bias-gradient
# epilogue) and one cast kernel per parameter, as on 2026-11-27 (its
# generated kernels are this build's): the same run's baseline for what
# they save (check.sh's "megatron-124m-plain").
compile bench-124m-plain "$configs/gpt2-124m.json" 8 1024 \
  "precision=bf16 recast-parameters=false make-vocab-size-divisible-by=128 gelu-epilogues=false bias-grad-epilogues=false group-casts=false parameter-copies=false"
# The 124M and 1.3B benches with the norms' backward over blocks of 4
# rows, and 124M's over blocks of 32, for check.sh's kernel variants.
for variant in 124m:4 1.3b:4 124m:32; do
  model="${variant%:*}" rows="${variant#*:}"
  compile "bench-$model-rowblock$rows" "$configs/gpt2-$model.json" 8 1024 \
    "precision=bf16 recast-parameters=false make-vocab-size-divisible-by=128 norm-grad-row-block=$rows"
done
# The 1.3B bench with the weight-gradient GEMMs plain and the bias
# gradients reduced by their own kernel (check.sh's no-bias-grad-epilogues
# variant: cuBLASLt's bias-gradient epilogue GEMMs ran at 634 TFLOP/s
# against the plain GEMMs' 764 there on 2026-11-27).
compile bench-1.3b-no-bias-grad-epilogues "$configs/gpt2-1.3b.json" 8 1024 \
  "precision=bf16 recast-parameters=false make-vocab-size-divisible-by=128 bias-grad-epilogues=false"
# The 124M and 1.3B benches casting their fp32 parameters to bf16 every
# step (one mt.multi_cast per layer, as before 2026-11-28) instead of
# reading the bf16 copies AdamW writes (check.sh's cast-parameters
# variant: the casts took 3.7 ms of the 1.3B step's 143.6 on 2026-11-27).
for model in 124m 1.3b; do
  compile "bench-$model-cast-parameters" "$configs/gpt2-$model.json" 8 1024 \
    "precision=bf16 recast-parameters=false make-vocab-size-divisible-by=128 parameter-copies=false"
done
# A plan larger than any one GPU (the 1.3B config at 128 x 1024: hundreds
# of GiB of activations), which the CUDA backend must refuse before it
# allocates, naming both sizes (check.sh's too-large check).
compile too-large "$configs/gpt2-1.3b.json" 128 1024 "precision=bf16"
rm -rf "$configs"
cp "$root/bench/gpu_torch_baseline.py" "$bundle/"
cp "$root/scripts/gpu-check.sh" "$bundle/check.sh"

# The CPU backend's losses for the two GPT-2 124M comparisons, computed
# here: each took about 100 s of the GPU call's device time there (10 steps
# of 4 x 128 on the CPU), the longest of the correctness checks. check.sh
# uses a reference whose recorded arguments are its own and runs the CPU
# side itself otherwise. Cached in $build/gpu-references by the artifact's,
# the runtime's and the arguments' hashes (about 4 minutes on 2 cores when
# they change, or the machine). The CPU's BLAS kernels may differ from the
# GPU machine's:
# the fp32 bar (1e-5) is 25 times the CUDA-vs-CPU difference seen there.
references="$build/gpu-references"
mkdir -p "$references" "$bundle/references"
reference() { # name args...: the CPU run of artifacts/NAME.mtx with args
  local name="$1"
  shift
  local key
  # What decides the CPU's losses: the artifact, the runtime, the
  # arguments, and the machine (the generated kernels' compiler and
  # -march=native's CPU, the BLAS library and the kernels it picks).
  key="$( (cat "$bundle/artifacts/$name.mtx" "$build/bin/megatron-run" "$build/lib/libmtrt.so"
    echo "$*"
    "${MEGATRON_CXX:-c++}" --version 2>&1 | head -1
    cat "$(ldd "$build/bin/megatron-run" | awk '/libopenblas|libblas/ {print $3; exit}')" 2>/dev/null
    grep -m2 -E '^(model name|flags)' /proc/cpuinfo
    echo "${OPENBLAS_CORETYPE:-}") | sha256sum | cut -c1-16)"
  if [ ! -f "$references/$name-$key.jsonl" ]; then
    echo "gpu-bundle: computing the CPU reference of $name ($*)"
    "$build/bin/megatron-run" "$bundle/artifacts/$name.mtx" "$@" --device cpu --quiet \
      --log "$references/$name-$key.jsonl.part" >/dev/null
    mv "$references/$name-$key.jsonl.part" "$references/$name-$key.jsonl"
  fi
  cp "$references/$name-$key.jsonl" "$bundle/references/$name-cpu.jsonl"
  echo "$*" >"$bundle/references/$name-cpu.args"
}
reference gpt2-124m --steps 10
reference gpt2-124m-bf16 --steps 10 --lr 1e-4
du -sh "$bundle"
# The device tool carries at most 64 MiB: the bundle and the working tree
# that travels with it (tracked files and untracked ones git does not
# ignore). Keep a MiB to spare (on disk or in bytes, whichever is more).
size_kib="$(du -sk "$bundle" | cut -f1)"
bytes_kib=$(($(du -sb "$bundle" | cut -f1) / 1024))
[ "$bytes_kib" -gt "$size_kib" ] && size_kib="$bytes_kib"
tree_bytes="$(cd "$root" && { git ls-files -z; git ls-files -z --others --exclude-standard; } |
  xargs -0 -r du -cb 2>/dev/null | awk '$2 == "total" {sum += $1} END {print sum + 0}')"
total_kib=$((size_kib + tree_bytes / 1024))
if [ "$total_kib" -gt $((63 * 1024)) ]; then
  echo "gpu-bundle: $bundle ($((size_kib / 1024)) MiB) and the working tree ($((tree_bytes / 1048576)) MiB) are $((total_kib / 1024)) MiB, over the 63 MiB that the device tool's 64 MiB carry allows" >&2
  exit 1
fi
