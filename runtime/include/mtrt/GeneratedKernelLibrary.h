//===- GeneratedKernelLibrary.h - Kernels compiled at load -----*- C++ -*-===//
//
// The CPU backend's generated kernels: the program's kernel source
// (single-source C++, mtrt/GeneratedKernelPrelude.h) compiled once per
// machine by the system C++ compiler with -O3 -march=native into a shared
// library, cached by the hash of source, compiler (and its version), flags
// and the CPU's model and features, and loaded
// with dlopen. Compiling at load rather than at export keeps the artifact
// portable across CPUs (AVX2 here, AVX-512 there), as the CUDA backend
// compiles the same source for its GPU. Ranks that start together compile
// once: the first takes a lock on the cache entry, the rest wait for it.
//
// MEGATRON_CXX names the compiler (default: c++); MEGATRON_KERNEL_CACHE the
// cache directory (default: $XDG_CACHE_HOME or ~/.cache, then
// megatron-mlir/kernels).
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CPU_GENERATEDKERNELLIBRARY_H
#define MTRT_CPU_GENERATEDKERNELLIBRARY_H

#include "mtrt/Artifact.h"
#include "mtrt/GeneratedKernelPrelude.h"
#include "mtrt/Status.h"

#include <cstring>
#include <string>
#include <vector>

namespace mtrt {

/// How a backend builds the kernel source: the compiler, its flags, the
/// entry point it looks up per kernel and what else decides the code.
struct KernelToolchain {
  std::string compiler;
  std::vector<std::string> flags;
  /// Appended to each kernel's name to find its entry point: "" for the
  /// host function, "_launch" for the CUDA launcher (MT_LAUNCHER).
  std::string symbolSuffix;
  /// Part of the cache key besides source, compiler version and flags (the
  /// host CPU is added for host builds; a GPU backend names its GPU).
  std::string targetIdentity;
  /// For errors: what the compiler is and how to choose another.
  std::string what = "C++ compiler";
  std::string hint = "set MEGATRON_CXX to a C++17 compiler";

  /// The CPU backend's: MEGATRON_CXX (default c++), -O3 -march=native.
  static KernelToolchain host();
};

class GeneratedKernelLibrary {
public:
  GeneratedKernelLibrary() = default;
  GeneratedKernelLibrary(const GeneratedKernelLibrary &) = delete;
  GeneratedKernelLibrary &operator=(const GeneratedKernelLibrary &) = delete;
  ~GeneratedKernelLibrary();

  /// Compiles (or finds in the cache) and loads `program`'s kernels,
  /// releasing any library loaded before. The kernel source is trusted
  /// code: it runs in this process as the artifact's author wrote it.
  Status load(const RankProgram &program,
              const KernelToolchain &toolchain = KernelToolchain::host());

  /// The host entry point of generated kernel `index` (host toolchain).
  GeneratedKernelFn function(size_t index) const {
    return reinterpret_cast<GeneratedKernelFn>(symbols[index]);
  }
  /// The entry point of generated kernel `index`, as the toolchain names it.
  void *symbol(size_t index) const { return symbols[index]; }

  /// Where the compiled library lies (for messages and tests).
  const std::string &path() const { return libraryPath; }

private:
  void *handle = nullptr;
  std::string libraryPath;
  std::vector<void *> symbols;
};

/// A `fused` command's operands in its generated kernel's order, inputs
/// then outputs, each at `address(buffer id)` (the backend's memory), then
/// its dropouts' parameter blocks at `dropoutParams` (in the backend's
/// memory; null for a kernel without dropouts).
template <typename Address>
GeneratedKernelArgs generatedKernelArgs(const Command &command, Address address,
                                        const void *dropoutParams = nullptr) {
  GeneratedKernelArgs args{};
  size_t k = 0;
  for (int64_t buffer : command.ins)
    args.p[k++] = address(buffer);
  for (int64_t buffer : command.outs)
    args.p[k++] = address(buffer);
  if (dropoutParams)
    args.p[k++] = const_cast<void *>(dropoutParams);
  return args;
}

/// The parameter blocks of `dropouts` fused dropouts of `command` for the
/// step keyed by (seed, step): kFusedDropoutWords words each, from the
/// command's `dropout<k>_*` parameters (per-rank values resolved), as the
/// unfused dropout kernel reads its own.
inline std::vector<uint64_t> fusedDropoutParams(const Command &command,
                                                int64_t dropouts, uint64_t seed,
                                                uint64_t step) {
  std::vector<uint64_t> words(size_t(dropouts) * kFusedDropoutWords);
  for (int64_t d = 0; d < dropouts; ++d) {
    uint64_t *block = words.data() + d * kFusedDropoutWords;
    std::string prefix = "dropout" + std::to_string(d) + "_";
    auto param = [&](const char *name) {
      return uint64_t(command.get(prefix + name, 0));
    };
    double p = command.get(prefix + "probability", 0.0);
    block[kDropoutSeed] = seed;
    block[kDropoutStep] = uint32_t(step);
    block[kDropoutStream] = uint32_t(param("rng_stream"));
    std::memcpy(&block[kDropoutProbability], &p, sizeof p);
    block[kDropoutOffset] = param("rng_offset");
    block[kDropoutSeqTotal] = param("rng_seq_total");
    block[kDropoutSeqOffset] = param("rng_seq_offset");
    block[kDropoutSeqLocal] = param("seq_local");
    block[kDropoutInner] = param("inner");
  }
  return words;
}

} // namespace mtrt

#endif // MTRT_CPU_GENERATEDKERNELLIBRARY_H
