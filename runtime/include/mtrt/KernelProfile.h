//===- KernelProfile.h - Where a rank's step time goes -----------*- C++
//-*-===//
//
// `megatron-run --profile`: the measured time of every command (recorded as
// for --trace), summed by kernel, with the work each kernel did: FLOPs from
// its operand shapes (a GEMM 2·M·N·K, attention 4·b·h·s²·d forward and twice
// that backward, elementwise kernels one per output element) and the bytes
// its operands occupy. Achieved GFLOP/s and GB/s say which kernels are
// compute-bound and which are memory-bound, and how far from the machine's
// rate each is.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_KERNELPROFILE_H
#define MTRT_KERNELPROFILE_H

#include "mtrt/Artifact.h"
#include "mtrt/ExecutionTrace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mtrt {

/// FLOPs of one run of `command`, from its operands' shapes.
double commandFlops(const RankProgram &program, const Command &command);
/// Bytes of `command`'s operands (each read or written once at least).
double commandBytes(const RankProgram &program, const Command &command);

struct KernelProfileRow {
  std::string kernel;
  /// Runs per step, and totals per step.
  double calls = 0, seconds = 0, flops = 0, bytes = 0;
};

/// The events of steps after `skipSteps` (warm-up), summed by kernel and
/// divided by the number of steps they span; largest time first.
std::vector<KernelProfileRow>
profileKernels(const RankProgram &program,
               const std::vector<ExecutionTrace::Event> &events,
               int64_t skipSteps, int64_t &stepsCounted);

/// The table megatron-run prints: the `top` largest rows, the rest as one.
std::string formatKernelProfile(const std::vector<KernelProfileRow> &rows,
                                int64_t steps, size_t top);

/// The "fused" row taken apart by what the generated kernels do: one row
/// per list of ops and shape (as `kernel`, from each kernel's heading in
/// the source; the kernel's name where it has none), so that the layers'
/// copies of one fusion share a row and a slow fusion stands out.
std::vector<KernelProfileRow>
profileGeneratedKernels(const RankProgram &program,
                        const std::vector<ExecutionTrace::Event> &events,
                        int64_t skipSteps);

/// The table megatron-run prints after the other: the `top` largest rows
/// of profileGeneratedKernels ("" when there are none).
std::string
formatGeneratedKernelProfile(const std::vector<KernelProfileRow> &rows,
                             size_t top);

} // namespace mtrt

#endif // MTRT_KERNELPROFILE_H
