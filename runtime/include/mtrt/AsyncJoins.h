//===- AsyncJoins.h - Awaiting commands run beside a stream ----*- C++ -*-===//
//
// A backend may run some commands beside its main stream (the CUDA
// backend: NCCL collectives on a communication stream, so that the data
// parallel gradient reduction overlaps the rest of the backward): such a
// command starts once everything before it in program order has run, and
// the main stream goes on without it. The main stream must then wait for
// it before the first later command that reads or writes any byte the
// command reads or writes: its results' readers, and the commands the
// memory plan lets reuse its operands' bytes once they are dead. This is
// that analysis, on the arena's byte ranges, with no device in it.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_ASYNCJOINS_H
#define MTRT_ASYNCJOINS_H

#include "mtrt/Artifact.h"

#include <cstddef>
#include <vector>

namespace mtrt {

struct AsyncJoins {
  /// before[j]: the asynchronous commands the main stream waits for just
  /// before command j, in program order.
  std::vector<std::vector<size_t>> before;
  /// The asynchronous commands no later command touches: awaited at the
  /// step's end (the runtime reads results and fills inputs after it).
  std::vector<size_t> atEnd;
};

/// The join points of the commands `async` marks (one flag per command of
/// `program`).
AsyncJoins planAsyncJoins(const RankProgram &program,
                          const std::vector<bool> &async);

} // namespace mtrt

#endif // MTRT_ASYNCJOINS_H
