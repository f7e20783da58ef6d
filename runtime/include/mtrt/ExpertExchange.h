//===- ExpertExchange.h - Expert parallelism's all-to-all -------*- C++ -*-===//
//
// mt.expert_dispatch and mt.expert_combine over the run's Communicator, on
// host memory: the CPU backend's buffers, or the CUDA backend's host copies
// of its operands (the exchange's sizes come from counts that only the
// all-gather brings, which the host reads).
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_EXPERTEXCHANGE_H
#define MTRT_EXPERTEXCHANGE_H

#include "mtrt/Artifact.h"
#include "mtrt/Communicator.h"
#include "mtrt/Kernels.h"
#include "mtrt/Status.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace mtrt {

/// The experts' rows, offsets[e] to offsets[e + 1], are ordered ranges from
/// row 0 within the `rows` rows (a mixture of experts' routing read at run
/// time, checked before it indexes anything). They may end before the last
/// row: expert parallelism's received rows are as many as could come.
Status checkExpertOffsets(const int32_t *offsets, int64_t experts,
                          int64_t rows);

/// Runs `command` (expert_dispatch or expert_combine, `id`) along its grid
/// axis: `hostData(buffer)` is each operand's memory, f32 for the rows (a
/// 16-bit operand's f32 copy), i32 for the offsets and counts.
Status
exchangeExpertRows(const Communicator *communicator,
                   const std::vector<BufferDesc> &buffers, KernelId id,
                   const Command &command,
                   const std::function<void *(int64_t bufferId)> &hostData);

} // namespace mtrt

#endif // MTRT_EXPERTEXCHANGE_H
