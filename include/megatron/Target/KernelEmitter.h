//===- KernelEmitter.h - mt.fusion regions to kernel source -----*- C++ -*-===//
//
// Prints one mt.fusion region as a kernel in the single-source dialect of
// C++ that mtrt/GeneratedKernelPrelude.h defines: the same text compiles as
// a host function (the CPU backend) and as a CUDA kernel with a launcher
// (nvcc, sm_90a). We emit source rather than going through upstream's
// linalg -> vector -> LLVM and gpu -> nvvm pipelines because the runtime
// links no LLVM: the host kernels are compiled once at load by the system
// C++ compiler for the machine they run on (-march=native), and the same
// text reaches nvcc unchanged, so CPU CI exercises the arithmetic the GPU
// runs.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_TARGET_KERNELEMITTER_H
#define MEGATRON_TARGET_KERNELEMITTER_H

#include "dialects/MT/IR/MTOps.h"

#include <string>

namespace mlir::mt {

struct EmittedKernel {
  std::string source;
  /// Elements of the iteration domain: of the results (elementwise), or
  /// rows (a row kernel).
  int64_t elements = 0;
  /// A row kernel's row length; 0 for an elementwise kernel.
  int64_t rowLength = 0;
  /// A row-block kernel's rows per work item (a norm's backward); else 0.
  int64_t rowBlock = 0;
  /// The region's dropouts: the kernel takes their parameter blocks
  /// (mtrt::kFusedDropoutWords words each) after its operands.
  int64_t dropouts = 0;
  /// Inputs (the region's operands) first, then outputs (its results).
  SmallVector<Type> operandTypes;
  SmallVector<int64_t> operandExtents;
  /// Per element of the domain, or per element of a row (a row kernel).
  int64_t flopsPerElement = 0;
};

/// The kernel `name` computing `fusion`. Fails (with a diagnostic on the
/// op) for a region the emitter cannot print: more operands than the
/// prelude's argument block holds, or row-broadcast operands of different
/// lengths.
FailureOr<EmittedKernel> emitFusedKernel(FusionOp fusion, StringRef name);

/// The whole translation unit of a program's kernels: the prelude and each
/// kernel's source, in order.
std::string generatedKernelTranslationUnit(ArrayRef<std::string> sources);

} // namespace mlir::mt

#endif // MEGATRON_TARGET_KERNELEMITTER_H
