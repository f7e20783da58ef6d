//===- ExpertExchange.cpp - Expert parallelism's all-to-all ---------------===//
//
// mt.expert_dispatch and mt.expert_combine over a Communicator, on host
// copies of their operands: an all-gather of every rank's rows per expert,
// then point-to-point transfers along the grid axis (a send does not wait
// for its receive, so every rank sends first and then receives: no order of
// ranks can deadlock). The counts the all-gather brings are data: a count
// another rank sent that does not fit this rank's buffer is an error
// naming it, never an overrun. The CPU backend runs it on its buffers, the
// CUDA backend on host copies of the GPU's.
//
//===----------------------------------------------------------------------===//

#include "mtrt/ExpertExchange.h"

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

using namespace mtrt;

namespace {
/// The tag of the exchanges' transfers (their peers differ on a data axis,
/// the pipeline's on the pipeline axis: never the same pair of ranks).
constexpr int64_t kExchangeTag = 7411;

std::string rowsOf(int64_t count) {
  return std::to_string(count) + (count == 1 ? " row" : " rows");
}
} // namespace

Status mtrt::checkExpertOffsets(const int32_t *offsets, int64_t experts,
                                int64_t rows) {
  if (offsets[0] != 0 || offsets[experts] > rows)
    return Status::error("the offsets run from " + std::to_string(offsets[0]) +
                         " to " + std::to_string(offsets[experts]) +
                         ", not from 0 within the " + std::to_string(rows) +
                         " rows");
  for (int64_t e = 0; e < experts; ++e)
    if (offsets[e] > offsets[e + 1])
      return Status::error("expert " + std::to_string(e) + "'s rows [" +
                           std::to_string(offsets[e]) + ", " +
                           std::to_string(offsets[e + 1]) +
                           ") are not an ordered range");
  return Status::ok();
}

Status mtrt::exchangeExpertRows(
    const Communicator *communicator, const std::vector<BufferDesc> &buffers,
    KernelId id, const Command &command,
    const std::function<void *(int64_t bufferId)> &hostData) {
  if (!communicator)
    return Status::error("an expert exchange needs the run's communicator");
  int64_t axis = int64_t(command.get("grid_axis", 0));
  if (axis < 0 || axis >= int64_t(communicator->coords().size()))
    return Status::error("grid axis " + std::to_string(axis) +
                         " is not an axis of the device grid");
  const bool dispatch = id == KernelId::expert_dispatch;
  auto f32 = [&](int64_t buffer) {
    return static_cast<float *>(hostData(buffer));
  };
  auto i32 = [&](int64_t buffer) {
    return static_cast<int32_t *>(hostData(buffer));
  };
  // Shapes were checked at load against the grid (KernelSignatures): own
  // rows [rows, width], received [ranks * rows, width] (capacity_bounded:
  // [rows, width]), counts [ranks, local], offsets [ranks * local + 1].
  const BufferDesc &own = buffers[dispatch ? command.ins[0] : command.outs[0]];
  const BufferDesc &offsetsDesc = buffers[command.ins[dispatch ? 1 : 2]];
  // The axis is groups of `ranks` consecutive ranks (the counts' rows, a
  // divisor of the axis' ranks, checked at load), each holding every expert
  // once: rows travel within this rank's group.
  const BufferDesc &countsDesc =
      buffers[dispatch ? command.outs[2] : command.ins[1]];
  const int64_t ranks = countsDesc.shape[0];
  const int64_t axisRanks = communicator->groupSize(axis);
  const int64_t first = communicator->groupIndex(axis) / ranks * ranks;
  const int64_t me = communicator->groupIndex(axis) - first;
  const int64_t experts = offsetsDesc.numElements() - 1;
  const int64_t local = experts / ranks;
  const int64_t rows = own.shape[0];
  const int64_t width = own.shape.size() > 1 ? own.shape[1] : 1;
  const size_t rowBytes = size_t(width) * sizeof(float);
  // A rank's own rows are every expert's: the offsets end at the last
  // (but for a capacity's, below).
  const int32_t *offsets = i32(offsetsDesc.id);
  MTRT_RETURN_IF_ERROR(checkExpertOffsets(offsets, experts, rows));
  // A capacity's rows end with rows no choice took (capacity_bounded: the
  // received rows are as many as the rank's own, for a local expert's
  // capacity from each rank).
  const bool bounded = command.get("capacity_bounded", 0) != 0;
  const int64_t receivedRows =
      buffers[dispatch ? command.outs[0] : command.ins[0]].shape[0];
  if (!bounded && offsets[experts] != rows)
    return Status::error("the offsets end at row " +
                         std::to_string(offsets[experts]) + " of the rank's " +
                         rowsOf(rows) + ", which are all some expert's");
  // The rows rank q sends (or is sent back) for this rank's expert j:
  // counts[q * local + j].
  int32_t *counts = dispatch ? i32(command.outs[2]) : i32(command.ins[1]);
  if (dispatch) {
    std::vector<int32_t> mine(static_cast<size_t>(experts));
    std::vector<int32_t> every(static_cast<size_t>(axisRanks * experts));
    for (int64_t e = 0; e < experts; ++e)
      mine[size_t(e)] = offsets[e + 1] - offsets[e];
    // Every rank's of the axis (a few integers each); this group's are read.
    MTRT_RETURN_IF_ERROR(communicator->allGather(
        axis, mine.data(), every.data(), experts, DType::I32));
    for (int64_t q = 0; q < ranks; ++q)
      for (int64_t j = 0; j < local; ++j)
        counts[q * local + j] =
            every[size_t((first + q) * experts + me * local + j)];
  }
  // Where each local expert's rows from each rank lie in the received rows:
  // grouped by expert, then by rank.
  std::vector<int64_t> fromRank(size_t(ranks), 0), start(size_t(ranks * local));
  int64_t total = 0;
  for (int64_t j = 0; j < local; ++j)
    for (int64_t q = 0; q < ranks; ++q) {
      int64_t count = counts[q * local + j];
      if (count < 0 || count > rows)
        return Status::error("rank " + std::to_string(q) + " has " +
                             std::to_string(count) + " rows for local expert " +
                             std::to_string(j) + ", outside [0, " +
                             std::to_string(rows) + "]");
      start[size_t(q * local + j)] = total;
      total += count;
      fromRank[size_t(q)] += count;
    }
  for (int64_t q = 0; q < ranks; ++q)
    if (fromRank[size_t(q)] > rows)
      return Status::error("rank " + std::to_string(q) + " sends " +
                           rowsOf(fromRank[size_t(q)]) + ", more than its " +
                           rowsOf(rows));
  if (total > receivedRows)
    return Status::error("the ranks send this rank's experts " + rowsOf(total) +
                         ", more than the " + rowsOf(receivedRows) +
                         " received (a capacity's rows: an expert's "
                         "capacity from each rank)");
  if (dispatch) {
    int32_t *localOffsets = i32(command.outs[1]);
    int64_t at = 0;
    for (int64_t j = 0; j < local; ++j) {
      localOffsets[j] = int32_t(at);
      for (int64_t q = 0; q < ranks; ++q)
        at += counts[q * local + j];
    }
    localOffsets[local] = int32_t(at);
  }

  // A rank's block: its rows for rank q's experts, in expert order.
  auto ownBlock = [&](int64_t q) {
    return std::pair<int64_t, int64_t>{offsets[q * local],
                                       offsets[(q + 1) * local]};
  };
  // Rank q's rows for this rank's experts travel as one block in expert
  // order, and lie in the received rows grouped by expert: `copy(inBlock,
  // inReceived, count)` (rows) for each expert's run.
  auto forEachRun = [&](int64_t q, auto &&copy) {
    int64_t inBlock = 0;
    for (int64_t j = 0; j < local; ++j) {
      int64_t count = counts[q * local + j];
      copy(inBlock, start[size_t(q * local + j)], count);
      inBlock += count;
    }
  };
  if (dispatch) {
    const float *rowsIn = f32(command.ins[0]);
    float *received = f32(command.outs[0]);
    for (int64_t q = 0; q < ranks; ++q) {
      if (q == me)
        continue;
      auto [begin, end] = ownBlock(q);
      MTRT_RETURN_IF_ERROR(communicator->send(
          axis, first + q, kExchangeTag, rowsIn + begin * width,
          int64_t(size_t(end - begin) * rowBytes)));
    }
    // Each rank's block arrives whole, then its experts' rows take their
    // places; the rest of the buffer is zeros.
    std::vector<float> block;
    for (int64_t q = 0; q < ranks; ++q) {
      const float *from;
      if (q == me) {
        from = rowsIn + ownBlock(me).first * width;
      } else {
        block.resize(size_t(fromRank[size_t(q)] * width));
        MTRT_RETURN_IF_ERROR(communicator->recv(
            axis, first + q, kExchangeTag, block.data(),
            int64_t(size_t(fromRank[size_t(q)]) * rowBytes)));
        from = block.data();
      }
      forEachRun(q, [&](int64_t inBlock, int64_t inReceived, int64_t count) {
        std::memcpy(received + inReceived * width, from + inBlock * width,
                    size_t(count) * rowBytes);
      });
    }
    std::memset(received + total * width, 0,
                size_t(buffers[command.outs[0]].shape[0] - total) * rowBytes);
    return communicator->finishSends();
  }

  // Combine: each rank's rows, gathered from the expert groups, go back.
  const float *received = f32(command.ins[0]);
  float *rowsOut = f32(command.outs[0]);
  // The rows no choice took (a capacity's) are zeros.
  std::memset(rowsOut + offsets[experts] * width, 0,
              size_t(rows - offsets[experts]) * rowBytes);
  std::vector<float> block;
  for (int64_t q = 0; q < ranks; ++q) {
    float *to = q == me ? rowsOut + ownBlock(me).first * width
                        : (block.resize(size_t(fromRank[size_t(q)] * width)),
                           block.data());
    forEachRun(q, [&](int64_t inBlock, int64_t inReceived, int64_t count) {
      std::memcpy(to + inBlock * width, received + inReceived * width,
                  size_t(count) * rowBytes);
    });
    if (q != me)
      MTRT_RETURN_IF_ERROR(
          communicator->send(axis, first + q, kExchangeTag, to,
                             int64_t(size_t(fromRank[size_t(q)]) * rowBytes)));
  }
  for (int64_t q = 0; q < ranks; ++q) {
    if (q == me)
      continue;
    auto [begin, end] = ownBlock(q);
    MTRT_RETURN_IF_ERROR(communicator->recv(
        axis, first + q, kExchangeTag, rowsOut + begin * width,
        int64_t(size_t(end - begin) * rowBytes)));
  }
  return communicator->finishSends();
}
