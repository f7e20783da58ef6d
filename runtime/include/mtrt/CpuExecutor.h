//===- CpuExecutor.h - Runs a rank program on the host ----------*- C++ -*-===//
//
// The CPU backend: one arena of the planned size, host kernels for every
// mt op, BLAS for GEMMs. Kernels compute in fp32: a bf16 or f16 operand is
// widened into a staging copy before its command and a 16-bit output is
// rounded back after it, so results are rounded exactly where a GPU storing
// 16-bit results rounds them, and reductions accumulate in fp32 or better.
// Executing a program also measures the highest arena byte any command touches,
// which must equal the compiler's planned peak.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CPUEXECUTOR_H
#define MTRT_CPUEXECUTOR_H

#include "mtrt/Artifact.h"
#include "mtrt/Communicator.h"
#include "mtrt/ExecutionTrace.h"
#include "mtrt/Kernels.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace mtrt {

class GeneratedKernelLibrary;

class CpuExecutor {
public:
  CpuExecutor();
  CpuExecutor(const CpuExecutor &) = delete;
  CpuExecutor &operator=(const CpuExecutor &) = delete;
  ~CpuExecutor();

  /// Checks every command (known kernel, operand counts and types) and
  /// allocates the zeroed arena. Errors name the command and kernel.
  Status init(const RankProgram &program);

  /// The ranks collectives run among; required by programs with
  /// collectives.
  void setCommunicator(const Communicator *comm) { communicator = comm; }
  /// The grid axis along which pipeline stages send and receive (-1: none).
  void setPipelineAxis(int64_t axis) { pipelineAxis = axis; }

  /// Records when each command runs (megatron-run --trace); null: none.
  void setTrace(ExecutionTrace *recorder) { trace = recorder; }

  /// Host address of a buffer.
  void *data(int64_t bufferId) const;
  template <typename T> T *as(int64_t bufferId) const {
    return static_cast<T *>(data(bufferId));
  }

  /// Threads per rank (megatron-run --threads): the size of the one pool
  /// (mtrt/ThreadPool.h) that generated kernels, GEMMs (split into blocks,
  /// each a single-threaded BLAS call) and the parallel host kernels share.
  static void setThreads(int threads);
  static int threads();

  /// Runs every command once. `seed` and `step` key the dropout masks.
  Status run(uint64_t seed, uint64_t step);

  /// One past the highest arena byte read or written so far, counting the
  /// persistent buffers the runtime itself fills.
  int64_t measuredPeakBytes() const { return measuredPeak; }

  const RankProgram &program() const { return *prog; }

private:
  Status runCommand(KernelId id, const Command &command, uint64_t seed,
                    uint64_t step);
  Status runCollective(KernelId id, const Command &command);
  Status runVocabParallelCrossEntropy(KernelId id, const Command &command);
  /// An fp32 view of a floating-point operand: the buffer itself when it is
  /// f32, else its staged copy.
  float *f32(int64_t bufferId) const;
  /// Widens the command's 16-bit operands into staging copies (the token
  /// ids of `kernel`'s index input stay as they are).
  void stageOperands(const KernelInfo &kernel, const Command &command);
  /// Rounds the staged outputs back into their 16-bit buffers.
  void unstageOutputs(const Command &command);
  /// Converts between storage types (the `cast` kernel).
  void castBuffer(int64_t from, int64_t to);

  struct StagedBuffer {
    int64_t bufferId = -1;
    std::vector<float> values;
  };
  /// Staging copies of the current command's 16-bit operands; the first
  /// `numStaged` are in use (their storage is reused across commands).
  std::vector<StagedBuffer> staged;
  size_t numStaged = 0;

  const RankProgram *prog = nullptr;
  /// Each command's kernel, resolved once by `init`.
  std::vector<const KernelInfo *> resolved;
  const Communicator *communicator = nullptr;
  int64_t pipelineAxis = -1;
  ExecutionTrace *trace = nullptr;
  uint8_t *arena = nullptr;
  std::unique_ptr<GeneratedKernelLibrary> generated;
  int64_t measuredPeak = 0;
};

} // namespace mtrt

#endif // MTRT_CPUEXECUTOR_H
