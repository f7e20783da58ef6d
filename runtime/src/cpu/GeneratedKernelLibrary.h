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

#include <string>
#include <vector>

namespace mtrt {

class GeneratedKernelLibrary {
public:
  GeneratedKernelLibrary() = default;
  GeneratedKernelLibrary(const GeneratedKernelLibrary &) = delete;
  GeneratedKernelLibrary &operator=(const GeneratedKernelLibrary &) = delete;
  ~GeneratedKernelLibrary();

  /// Compiles (or finds in the cache) and loads `program`'s kernels,
  /// releasing any library loaded before. The kernel source is trusted
  /// code: it runs in this process as the artifact's author wrote it.
  Status load(const RankProgram &program);

  /// The host entry point of generated kernel `index`.
  GeneratedKernelFn function(size_t index) const { return functions[index]; }

  /// Where the compiled library lies (for messages and tests).
  const std::string &path() const { return libraryPath; }

private:
  void *handle = nullptr;
  std::string libraryPath;
  std::vector<GeneratedKernelFn> functions;
};

} // namespace mtrt

#endif // MTRT_CPU_GENERATEDKERNELLIBRARY_H
