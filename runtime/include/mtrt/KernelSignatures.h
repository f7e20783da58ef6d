//===- KernelSignatures.h - What each kernel's operands must be -*- C++ -*-===//
//
// The typed signature of every kernel of the kernel table (mtrt/Kernels.h):
// operand counts and dtypes, ranks, the relations between shapes that the
// kernel's loops rely on (a matmul's inner dimensions, a layer norm's
// weight of the input's last dimension, an all-gather's pieces), in-place
// rules and attribute ranges. `loadArtifact` checks every command against
// it, so an artifact whose shapes were shrunk, whose transpose flag was
// dropped or whose dropout probability is 5 is refused at load, naming the
// command, instead of running to wrong results or out of its buffers.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_KERNELSIGNATURES_H
#define MTRT_KERNELSIGNATURES_H

#include "mtrt/Artifact.h"
#include "mtrt/Status.h"

#include <cstdint>
#include <vector>

namespace mtrt {

/// Checks `command` against its kernel's signature, with `buffers` its
/// program's buffers and `gridShape` the device grid (collectives split
/// along its axes). Errors say what is wrong, not where: the caller names
/// the command. A `fused` command is checked against the generated kernel
/// it names, one of `generated`.
Status checkKernelSignature(const Command &command,
                            const std::vector<BufferDesc> &buffers,
                            const std::vector<int64_t> &gridShape,
                            const std::vector<GeneratedKernel> &generated = {});

/// The offset an rms_norm or rms_norm_grad command adds to its weight: 1
/// with `zero_centered_weight` (Gemma's scale 1 + w), else 0. (The
/// signature check refuses values outside [0, 1]; any but 0 is set, as for
/// the artifact's other flags.)
inline double rmsNormWeightOffset(const Command &command) {
  return command.get("zero_centered_weight", 0) != 0 ? 1.0 : 0.0;
}

/// Where a multi_adamw command's operands are. Inputs: `count` parameters,
/// their gradients, first and second moments, the 7 scalars (step, lr,
/// beta1, beta2, eps, weight decay, gradient scale), then the parameters'
/// 16-bit copies, if any (attribute `copies`: 0 or `count`). Outputs: the
/// parameters, first and second moments updated in place, then the copies.
struct MultiAdamWLayout {
  size_t count = 0, copies = 0;
  /// `copies` is a whole number of the outputs at most (else count and
  /// copies are 0: the signature check says why).
  bool validCopies = true;
  explicit MultiAdamWLayout(const Command &command) {
    const size_t outs = command.outs.size();
    const double value = command.get("copies", 0);
    // (Compared as a double first: converting 1e300 or a NaN to size_t is
    // undefined.)
    validCopies =
        value >= 0 && value <= double(outs) && value == double(int64_t(value));
    if (!validCopies)
      return;
    copies = size_t(value);
    count = (outs - copies) / 3;
  }
  size_t param(size_t k) const { return k; }
  size_t grad(size_t k) const { return count + k; }
  size_t expAvg(size_t k) const { return 2 * count + k; }
  size_t expAvgSq(size_t k) const { return 3 * count + k; }
  /// Scalar j of the 7.
  size_t scalar(size_t j) const { return 4 * count + j; }
  size_t copyIn(size_t k) const { return 4 * count + 7 + k; }
  /// Outputs.
  size_t newParam(size_t k) const { return k; }
  size_t newExpAvg(size_t k) const { return count + k; }
  size_t newExpAvgSq(size_t k) const { return 2 * count + k; }
  size_t newCopy(size_t k) const { return 3 * count + k; }
  size_t numIns() const { return 4 * count + 7 + copies; }
  size_t numOuts() const { return 3 * count + copies; }
};

} // namespace mtrt

#endif // MTRT_KERNELSIGNATURES_H
