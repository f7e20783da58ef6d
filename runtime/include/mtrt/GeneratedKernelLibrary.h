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
  /// `extraSource` (kernels written against the prelude: a backend's own,
  /// such as the CPU's GEMM epilogues) is compiled with them; its kernels
  /// `extraNames` follow the program's, `function(program kernels + k)`.
  Status load(const RankProgram &program,
              const KernelToolchain &toolchain = KernelToolchain::host(),
              const std::string &extraSource = "",
              const std::vector<std::string> &extraNames = {});

  /// The host entry point of generated kernel `index` (host toolchain).
  GeneratedKernelFn function(size_t index) const {
    return reinterpret_cast<GeneratedKernelFn>(symbols[index]);
  }
  /// The entry point of generated kernel `index`, as the toolchain names it.
  void *symbol(size_t index) const { return symbols[index]; }

  /// Where the compiled library lies (for messages and tests).
  const std::string &path() const { return libraryPath; }
  /// Seconds the last load spent compiling, or waiting on the lock while
  /// another process compiled (0: the cache had the library).
  double buildSeconds() const { return compileSeconds; }

private:
  /// Compiles (or finds in the cache) and loads `source`, whose kernels
  /// `names` are function(0), function(1), ... in that order. Its program
  /// kernels (before `splittableEnd`) may be compiled in several
  /// translation units at once (MEGATRON_KERNEL_JOBS, or the cores).
  Status loadSource(const std::string &source, size_t splittableEnd,
                    const std::vector<std::string> &names,
                    const KernelToolchain &toolchain);

  void *handle = nullptr;
  std::string libraryPath;
  double compileSeconds = 0;
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

/// The parameter blocks of a program's fused dropouts, kFusedDropoutWords
/// words per dropout, laid out command after command. Everything but the
/// seed and the step is resolved once, when the program is prepared, from
/// each `fused` command's `dropout<k>_*` parameters (per-rank values
/// resolved), as the unfused dropout kernel reads its own; a step writes
/// only its seed and step (one upload per step on a GPU).
class FusedDropoutBlocks {
public:
  void prepare(const RankProgram &program) {
    words.clear();
    offsets.assign(program.commands.size(), -1);
    for (size_t i = 0; i < program.commands.size(); ++i) {
      const Command &command = program.commands[i];
      if (command.kernel != "fused")
        continue;
      int64_t dropouts =
          program.generatedKernels[size_t(command.get("generated", 0))]
              .dropouts;
      if (dropouts > 0)
        offsets[i] = int64_t(words.size());
      for (int64_t d = 0; d < dropouts; ++d)
        appendBlock(command, "dropout" + std::to_string(d) + "_");
    }
  }

  /// Every dropout's probability 0, as an evaluation runs them (each
  /// keeps every element, scaled by 1).
  void disable() {
    double zero = 0.0;
    for (size_t at = 0; at < words.size(); at += kFusedDropoutWords)
      std::memcpy(&words[at + kDropoutProbability], &zero, sizeof zero);
  }

  /// Writes the step's key into every block.
  void setStep(uint64_t seed, uint64_t step) {
    for (size_t at = 0; at < words.size(); at += kFusedDropoutWords) {
      words[at + kDropoutSeed] = seed;
      words[at + kDropoutStep] = uint32_t(step);
    }
  }

  /// Where command `index`'s blocks start in `all()`, or -1 (none).
  int64_t offset(size_t index) const { return offsets[index]; }
  const std::vector<uint64_t> &all() const { return words; }

private:
  void appendBlock(const Command &command, const std::string &prefix) {
    size_t at = words.size();
    words.resize(at + kFusedDropoutWords, 0);
    uint64_t *block = words.data() + at;
    auto param = [&](const char *name) {
      return uint64_t(command.get(prefix + name, 0));
    };
    double p = command.get(prefix + "probability", 0.0);
    block[kDropoutStream] = uint32_t(param("rng_stream"));
    std::memcpy(&block[kDropoutProbability], &p, sizeof p);
    block[kDropoutOffset] = param("rng_offset");
    block[kDropoutSeqTotal] = param("rng_seq_total");
    block[kDropoutSeqOffset] = param("rng_seq_offset");
    block[kDropoutSeqLocal] = param("seq_local");
    block[kDropoutInner] = param("inner");
  }

  std::vector<uint64_t> words;
  std::vector<int64_t> offsets;
};

} // namespace mtrt

#endif // MTRT_CPU_GENERATEDKERNELLIBRARY_H
