//===- CpuDevice.h - The CPU backend behind the seam ------------*- C++ -*-===//
//
// The CPU backend behind the device seam (mtrt/Device.h): one arena of the
// planned size, host kernels for every mt op, BLAS for GEMMs, MPI for
// collectives (through the Communicator). Kernels compute in fp32: a bf16 or
// f16 operand is widened into a staging copy before its command and a 16-bit
// output is rounded back after it, so results are rounded exactly where a GPU
// storing 16-bit results rounds them, and reductions accumulate in fp32 or
// better. Executing a program also measures the highest arena byte any command
// touches, which must equal the compiler's planned peak.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CPU_CPUDEVICE_H
#define MTRT_CPU_CPUDEVICE_H

#include "mtrt/Device.h"
#include "mtrt/GeneratedKernelLibrary.h"
#include "mtrt/Kernels.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace mtrt {

class CpuDevice final : public Device {
public:
  /// A device whose pool has `hostThreads` threads (0: leave the pool as
  /// it is).
  explicit CpuDevice(int hostThreads = 0);
  CpuDevice(const CpuDevice &) = delete;
  CpuDevice &operator=(const CpuDevice &) = delete;
  ~CpuDevice() override;

  const char *backendName() const override { return "cpu"; }

  void setCommunicator(const Communicator *comm) override {
    communicator = comm;
  }
  void setPipelineAxis(int64_t axis) override { pipelineAxis = axis; }
  void setTrace(ExecutionTrace *recorder) override { trace = recorder; }
  Status upload(int64_t bufferId, const void *host, int64_t bytes,
                int64_t offset = 0) override;
  Status download(int64_t bufferId, void *host, int64_t bytes,
                  int64_t offset = 0) const override;
  Status executeStep(uint64_t seed, uint64_t step) override;
  Status executeEvaluation(const std::vector<bool> &slice) override;
  bool evaluates() const override { return true; }
  Status findNonFinite(const std::vector<int64_t> &bufferIds,
                       int64_t &first) const override;
  int64_t measuredPeakBytes() const override { return measuredPeak; }
  int64_t hostScratchBytes() const override;
  std::vector<std::string> choices() const override;
  double kernelBuildSeconds() const override {
    return generated ? generated->buildSeconds() : 0;
  }

  /// Threads per rank (megatron-run --threads): the size of the one pool
  /// (mtrt/ThreadPool.h) that generated kernels, GEMMs (split into blocks,
  /// each a single-threaded BLAS call) and the parallel host kernels share.
  static void setThreads(int threads);

private:
  Status prepareProgram(const RankProgram &program) override;
  /// Host address of a buffer.
  void *data(int64_t bufferId) const;
  template <typename T> T *as(int64_t bufferId) const {
    return static_cast<T *>(data(bufferId));
  }
  Status runCommand(KernelId id, const Command &command, uint64_t seed,
                    uint64_t step);
  /// Runs the commands `slice` marks (all when null), traced when a trace
  /// is set.
  Status runCommands(uint64_t seed, uint64_t step,
                     const std::vector<bool> *slice);
  /// A command's dropout probability `name`: 0 while evaluating.
  double dropoutProbability(const Command &command, const char *name) const {
    return evaluating ? 0.0 : command.get(name, 0.0);
  }
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
    float *values = nullptr;
  };
  /// Staging copies of the current command's 16-bit operands, the first
  /// `numStaged` in use, each a range of `stagingPool`: one allocation the
  /// size of the largest command's 16-bit operands as f32, reused by every
  /// command (copies kept per slot would hold the largest operand ever
  /// staged in each: several times the arena with a large vocabulary).
  std::vector<StagedBuffer> staged;
  size_t numStaged = 0;
  std::unique_ptr<float[]> stagingPool;
  size_t stagingCapacity = 0;

  /// The fused dropouts' parameter blocks, resolved once by `init`.
  FusedDropoutBlocks dropoutBlocks;
  /// The same blocks with every probability 0, and whether the commands
  /// running now are an evaluation's (executeEvaluation): dropout off.
  FusedDropoutBlocks noDropoutBlocks;
  bool evaluating = false;
  /// Each command's kernel, resolved once by `init`.
  std::vector<const KernelInfo *> resolved;
  const Communicator *communicator = nullptr;
  int64_t pipelineAxis = -1;
  ExecutionTrace *trace = nullptr;
  uint8_t *arena = nullptr;
  std::unique_ptr<GeneratedKernelLibrary> generated;
  /// The GeLU epilogues' kernels (after the program's own in `generated`),
  /// where the program has GEMMs with them.
  GeneratedKernelFn geluEpilogue = nullptr, geluGradEpilogue = nullptr;
  int64_t measuredPeak = 0;
};

} // namespace mtrt

#endif // MTRT_CPU_CPUDEVICE_H
