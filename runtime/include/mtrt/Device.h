//===- Device.h - The backend seam: one rank's device -----------*- C++ -*-===//
//
// What the trainer asks of a backend, on the model of IREE's HAL device at
// our size: prepare a program once (check every command, resolve its
// kernels, build generated code, allocate the arena at the planned size),
// move bytes between the host and a buffer, execute a step, and say how
// much of the arena the step touched. The trainer (parameter binding,
// checkpoints, the data, the loss scaler) works only through this
// interface and never through a device address, so the CPU backend and a
// CUDA backend run the same training loop.
//
// Collectives reach the device through the Communicator of the run.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_DEVICE_H
#define MTRT_DEVICE_H

#include "mtrt/Artifact.h"
#include "mtrt/Communicator.h"
#include "mtrt/ExecutionTrace.h"
#include "mtrt/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mtrt {

class Device {
public:
  virtual ~Device();

  /// The backend's name as `--device` spells it ("cpu", "cuda").
  virtual const char *backendName() const = 0;

  /// Checks every command against the backend's kernels, resolves them
  /// (once: never by name during a step), builds the program's generated
  /// kernels and allocates the zeroed arena. `program` must outlive the
  /// device. Errors name the command and its kernel. A program that fails
  /// to prepare leaves none: transfers and steps are then refused rather
  /// than run against a half-built device.
  Status prepare(const RankProgram &program);

  /// The ranks collectives run among; required by programs with
  /// collectives.
  virtual void setCommunicator(const Communicator *comm) = 0;
  /// The grid axis along which pipeline stages send and receive (-1: none).
  virtual void setPipelineAxis(int64_t axis) = 0;
  /// Records when each command runs (megatron-run --trace); null: none.
  virtual void setTrace(ExecutionTrace *trace) = 0;

  /// Copies `bytes` bytes from `host` into buffer `bufferId`, starting at
  /// byte `offset` of the buffer. Transfers are synchronous: they see every
  /// step executed before them, and `host` may be reused on return.
  virtual Status upload(int64_t bufferId, const void *host, int64_t bytes,
                        int64_t offset = 0) = 0;
  /// Copies `bytes` bytes of buffer `bufferId` from byte `offset` to `host`.
  virtual Status download(int64_t bufferId, void *host, int64_t bytes,
                          int64_t offset = 0) const = 0;

  /// Runs every command of the program once. `seed` and `step` key the
  /// dropout masks.
  virtual Status executeStep(uint64_t seed, uint64_t step) = 0;

  /// Runs the commands `slice` marks (one flag per command: a program's
  /// evaluation slice, mtrt/EvaluationSlice.h) in program order, with every
  /// dropout off, as Megatron-LM's evaluation runs the model (model.eval()):
  /// the loss of the inputs as they are, the parameters and optimizer state
  /// left as they were. Not traced. A backend without it refuses.
  virtual Status executeEvaluation(const std::vector<bool> &slice);
  /// Whether executeEvaluation is built for this backend.
  virtual bool evaluates() const { return false; }

  /// The first of `bufferIds` (f32 buffers) holding an inf or NaN, or -1:
  /// scanned where the data lies, so that checking the parameters after
  /// every step moves no tensor to the host.
  virtual Status findNonFinite(const std::vector<int64_t> &bufferIds,
                               int64_t &first) const = 0;

  /// One past the highest arena byte read or written so far, counting the
  /// persistent buffers the trainer fills.
  virtual int64_t measuredPeakBytes() const = 0;

  /// Bytes the backend holds beside the arena for the program's operands,
  /// which the plan does not count: the CPU backend's f32 copies of 16-bit
  /// operands (it computes in f32), as large as the largest command's.
  virtual int64_t hostScratchBytes() const { return 0; }

  /// Device memory this process took from the driver's allocator since
  /// just before the arena, measured now (the arena, what the backend holds
  /// beside it, and what its libraries allocate: NCCL's buffers, cuBLAS's
  /// and cuDNN's state, CUDA graphs); 0 where there is no such allocator.
  virtual int64_t deviceBytesTaken() const { return 0; }

  /// The hardware as its driver names it (a GPU's CUDA name, "NVIDIA H100
  /// 80GB HBM3"), for the MFU's peak (PeakFlops.h); empty where the backend
  /// does not say (the CPU's).
  virtual std::string hardwareName() const { return {}; }

  /// What the backend chose for the prepared program that changes its
  /// numbers or speed (which library runs attention, and why not another),
  /// one line each; megatron-run prints them after the memory plan.
  virtual std::vector<std::string> choices() const { return {}; }

  /// Seconds the last prepare() spent compiling the program's generated
  /// kernels, or waiting while another process compiled them (0 when they
  /// came from the kernel cache, or there are none).
  virtual double kernelBuildSeconds() const { return 0; }

  /// Typed helpers over upload and download, from the buffer's start:
  /// `values.size()` elements (the rest of the buffer is left as it was),
  /// or the first `count`.
  template <typename T>
  Status uploadValues(int64_t bufferId, const std::vector<T> &values) {
    return upload(bufferId, values.data(), int64_t(values.size() * sizeof(T)));
  }
  template <typename T>
  Status downloadValues(int64_t bufferId, std::vector<T> &values,
                        int64_t count) const {
    if (count < 0)
      return Status::error("download of " + std::to_string(count) +
                           " elements");
    values.resize(size_t(count));
    return download(bufferId, values.data(), int64_t(count * sizeof(T)));
  }

protected:
  /// The backend's part of prepare: `prog` is set before it runs and
  /// cleared if it fails.
  virtual Status prepareProgram(const RankProgram &program) = 0;

  /// What every backend checks before it touches memory, for `what` (the
  /// operation, as errors name it): a prepared program; an upload or
  /// download of `bytes` at `offset` that fits buffer `bufferId`; an f32
  /// buffer (findNonFinite).
  Status checkPrepared(const char *what) const;
  Status checkTransfer(int64_t bufferId, int64_t bytes, int64_t offset,
                       const char *what) const;
  Status checkFloatBuffer(int64_t bufferId, const char *what) const;
  /// A prepared program and an evaluation slice of one flag per command
  /// (executeEvaluation).
  Status checkEvaluationSlice(const std::vector<bool> &slice) const;

  /// The prepared program, or null.
  const RankProgram *prog = nullptr;
};

/// What a device is created with.
struct DeviceOptions {
  /// Host threads per rank (the CPU backend's pool); 0: the default.
  int hostThreads = 0;
  /// fp32 GEMMs may round their inputs to TF32 (the CUDA backend's tensor
  /// cores; --tf32). A backend without TF32 refuses it.
  bool tf32 = false;
};

/// A matmul command's GEMMs: C [batch..., m, n] = op(A) op(B) with op a
/// transpose where asked; a B of lower rank (a weight) is shared by every
/// batch.
struct MatmulShape {
  bool transposeA = false, transposeB = false, sharedB = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
};
MatmulShape matmulShape(const RankProgram &program, const Command &command);

/// What a step touches, for measuredPeakBytes: one past the highest arena
/// byte of the persistent buffers (the trainer fills them), and of the
/// buffers `command` reads or writes.
int64_t persistentExtent(const RankProgram &program);
int64_t commandExtent(const RankProgram &program, const Command &command);

} // namespace mtrt

#endif // MTRT_DEVICE_H
