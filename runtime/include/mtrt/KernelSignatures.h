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

} // namespace mtrt

#endif // MTRT_KERNELSIGNATURES_H
