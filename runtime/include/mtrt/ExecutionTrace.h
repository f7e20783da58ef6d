//===- ExecutionTrace.h - Measured timeline of a rank's commands -*- C++
//-*-===//
//
// `megatron-run --trace FILE` records when each command of each step ran on
// each rank and writes them as one Chrome trace (JSON, for Perfetto or
// chrome://tracing): one process per rank, with a "schedule" row holding
// one slice per action of the pipeline schedule (F3, B3: the forward or
// backward of microbatch 3; optimizer), as the compiler's static timeline
// draws them, and a "commands" row below it holding every kernel, send and
// receive. A receive's slice is the time it waited: the bubbles. Commands
// that ran beside the others (the CUDA backend's overlapped collectives, on
// a communication stream) have a "communication" row of their own.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_EXECUTIONTRACE_H
#define MTRT_EXECUTIONTRACE_H

#include "mtrt/Artifact.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace mtrt {

class ExecutionTrace {
public:
  /// The monotonic clock, in microseconds.
  static double clockUs() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  /// Times are microseconds since `originUs` on `clockUs`. The ranks of one
  /// host share that clock, so one origin for all of them lines their
  /// timelines up exactly.
  void start(double originUs) { origin = originUs; }
  double nowUs() const { return clockUs() - origin; }

  /// Command `command` of the rank's program ran in step `step` from
  /// `beginUs` to `endUs`; `beside` the commands before and after it (on a
  /// stream of its own), or between them.
  void record(int64_t step, int64_t command, double beginUs, double endUs,
              bool beside = false) {
    events.push_back({step, command, beginUs, endUs, beside});
  }

  /// This rank's events as Chrome trace event objects, comma separated
  /// (a fragment of the "traceEvents" array), with `rank` as their process
  /// and `label` as the process' name.
  std::string chromeEvents(const RankProgram &program, int64_t rank,
                           const std::string &label) const;

  /// The whole trace document from every rank's fragment.
  static std::string chromeDocument(const std::vector<std::string> &fragments);

  struct Event {
    int64_t step;
    int64_t command;
    double beginUs, endUs;
    bool beside = false;
  };
  /// Every command run so far, in order (megatron-run --profile sums them).
  const std::vector<Event> &recorded() const { return events; }

private:
  double origin = clockUs();
  std::vector<Event> events;
};

} // namespace mtrt

#endif // MTRT_EXECUTIONTRACE_H
