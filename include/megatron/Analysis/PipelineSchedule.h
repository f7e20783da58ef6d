//===- PipelineSchedule.h - Pipeline-parallel schedules ---------*- C++ -*-===//
//
// The order in which each pipeline rank runs the forward and backward passes
// of its microbatches (GPipe, 1F1B, interleaved 1F1B), a discrete-event
// simulation of that order, and renderings of the simulated timeline as
// text, SVG and a Chrome trace.
//
// Plain standard C++17 with no LLVM or MLIR dependency, so that the runtime
// can execute the very schedule the compiler reasons about.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_ANALYSIS_PIPELINESCHEDULE_H
#define MEGATRON_ANALYSIS_PIPELINESCHEDULE_H

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace mlir::mt {

enum class ScheduleKind {
  /// All forwards, then all backwards (Huang et al. 2019).
  GPipe,
  /// PipeDream-Flush (Narayanan et al. 2021): a short warmup of forwards,
  /// then one forward and one backward alternately, then the remaining
  /// backwards. Holds at most p microbatches' activations per rank.
  OneFOneB,
  /// Megatron-LM's interleaved 1F1B: each rank holds v model chunks, which
  /// divides the bubble by v at the cost of v times more communication.
  Interleaved,
};

/// Parses "gpipe", "1f1b" or "interleaved"; std::nullopt otherwise.
std::optional<ScheduleKind> parseScheduleKind(const std::string &name);
/// The name parseScheduleKind accepts for `kind`.
const char *scheduleKindName(ScheduleKind kind);

/// One pass of one microbatch through one model chunk of a rank.
struct PipelineAction {
  enum Kind { Forward, Backward };
  Kind kind = Forward;
  /// In [0, m).
  int64_t microbatch = 0;
  /// The model chunk on this rank, in [0, v); always 0 unless interleaved.
  int64_t chunk = 0;

  bool operator==(const PipelineAction &other) const {
    return kind == other.kind && microbatch == other.microbatch &&
           chunk == other.chunk;
  }
};

/// The model's layers are split, in order, into p * v virtual stages; rank r
/// holds virtual stages r, r + p, r + 2p, ... (Megatron-LM's interleaved
/// assignment), so chunk c of rank r is virtual stage c * p + r. With v == 1
/// the virtual stage is the rank.
inline int64_t virtualStage(int64_t rank, int64_t chunk, int64_t stages) {
  return chunk * stages + rank;
}

struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  /// Pipeline ranks (p).
  int64_t stages = 1;
  /// Microbatches per training step (m).
  int64_t microbatches = 1;
  /// Model chunks per rank (v); 1 unless interleaved.
  int64_t virtualStages = 1;
  /// Per pipeline rank, the actions in execution order.
  std::vector<std::vector<PipelineAction>> actions;
};

/// Returns why (kind, p, m, v) has no schedule, or std::nullopt if it has
/// one. p, m and v must be positive; v > 1 only under Interleaved. 1F1B
/// takes any m, as Megatron-LM's: with m < p a rank's warmup, min(p - r -
/// 1, m) forwards, holds every microbatch (then it runs as GPipe does).
/// Interleaved needs p >= 2, v >= 2 (v == 1 is plain 1F1B, so ask for
/// "1f1b") and m a multiple of p, as Megatron-LM requires: microbatches
/// enter each chunk in groups of p.
std::optional<std::string> checkSchedule(ScheduleKind kind, int64_t stages,
                                         int64_t microbatches,
                                         int64_t virtualStages);

/// Builds the schedule. Precondition: checkSchedule(...) returned nullopt.
///
/// Interleaved follows Megatron-LM's
/// `forward_backward_pipelining_with_interleaving`: the k-th forward of a
/// rank runs chunk (k mod pv) / p on microbatch (k / pv) * p + k mod p; the
/// k-th backward likewise with the chunk reversed (v - 1 - chunk). Rank r
/// runs min((p - r - 1) * 2 + (v - 1) * p, m * v) warmup forwards (all m * v
/// when m == p, as Megatron-LM does), then alternates one forward and one
/// backward, then runs the remaining backwards.
PipelineSchedule buildSchedule(ScheduleKind kind, int64_t stages,
                               int64_t microbatches, int64_t virtualStages);

/// Returns why `schedule` is malformed, or std::nullopt: each rank must hold
/// exactly one forward and one backward of every (microbatch, chunk), the
/// backward after the forward. Says nothing about deadlocks between ranks;
/// simulateSchedule finds those.
std::optional<std::string> verifySchedule(const PipelineSchedule &schedule);

/// "F3", "B0"; with `withChunk`, "F3.1" for chunk 1.
std::string formatAction(const PipelineAction &action, bool withChunk);

struct TimedAction {
  PipelineAction action;
  double start = 0;
  double end = 0;
};

struct Timeline {
  /// Per rank, the actions in execution order with their simulated times.
  std::vector<std::vector<TimedAction>> ranks;
  /// End of the last action.
  double makespan = 0;
  /// The maximum over ranks of idle / busy, where busy is the rank's total
  /// compute time and idle = makespan - busy. Under uniform costs every rank
  /// is equally busy and this is the papers' bubble fraction.
  double bubbleFraction = 0;
  /// Per rank, the most (microbatch, chunk) pairs whose forward has run and
  /// whose backward has not: the activations the rank must keep, in units of
  /// one chunk's activations for one microbatch.
  std::vector<int64_t> peakInFlight;
  /// Set when the schedule is malformed or cannot complete (its order waits
  /// in a cycle); `ranks` then holds only the actions that could run.
  std::optional<std::string> error;
};

/// Simulates `schedule`: each rank runs its actions strictly in list order,
/// one at a time, and each starts as soon as the rank is free and its inputs
/// exist. F(mb, vs) needs F(mb, vs - 1); B(mb, vs) needs F(mb, vs) and
/// B(mb, vs + 1). Communication is free.
///
/// `forwardCost(vs)` and `backwardCost(vs)` give the duration of one action
/// of virtual stage vs in [0, p * v). By default a forward costs 1 / v and a
/// backward 2 / v, so a rank's whole slice of the model costs 1 forward and
/// 2 backward, as in the papers.
Timeline simulateSchedule(const PipelineSchedule &schedule,
                          std::function<double(int64_t)> forwardCost = {},
                          std::function<double(int64_t)> backwardCost = {});

/// One line per rank ("stage 0: F0 F1 B0 F2 B1 ..."), then the makespan, the
/// bubble fraction and the peak in-flight microbatches per rank.
void printTimeline(std::ostream &os, const PipelineSchedule &schedule,
                   const Timeline &timeline);

/// An SVG picture in the style of the papers' figures: a row per rank, time
/// running right, one box per action coloured by microbatch (backward darker)
/// with the microbatch number inside, and a legend line.
void writeSvg(std::ostream &os, const PipelineSchedule &schedule,
              const Timeline &timeline);

/// A Chrome trace (chrome://tracing, Perfetto): one complete ("X") event per
/// action on thread `rank`, named like formatAction, plus metadata naming
/// each thread "stage r". One time unit is 1000 us.
void writeChromeTrace(std::ostream &os, const PipelineSchedule &schedule,
                      const Timeline &timeline);

} // namespace mlir::mt

#endif // MEGATRON_ANALYSIS_PIPELINESCHEDULE_H
