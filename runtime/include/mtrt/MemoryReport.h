//===- MemoryReport.h - Where every byte of a rank goes ---------*- C++ -*-===//
//
// The memory of every pipeline stage's ranks, from the compiler's own plan:
// the arena of a stage program is its exact peak, so the report does not
// estimate anything. It splits the persistent region (parameters, optimizer
// state, inputs) and, at the command where the transient region reaches
// its high-water mark, what is live there: activations stashed by the
// forward for the backward (per microbatch in flight), gradients,
// communication buffers (what collectives and receives write, unless the
// backward reads it: a forward value the backward reads is stashed), and the
// rest (activations and workspace of the command at hand); bytes the
// region holds but nothing uses at that moment are fragmentation. It names
// the largest buffers live at the peak.
//
// One program serves all the ranks of a stage, so a report of 1024 ranks
// reads as many programs as there are stages.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_MEMORYREPORT_H
#define MTRT_MEMORYREPORT_H

#include "mtrt/Artifact.h"
#include "mtrt/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mtrt {

/// A buffer live at a stage's peak.
struct PeakBuffer {
  int64_t id = 0;
  std::string kind, name;
  /// The kernel of the command that wrote it, its phase and microbatch.
  std::string kernel;
  Phase phase = Phase::None;
  int64_t microbatch = -1;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  /// What the report counts it as: "stashed", "param_copy" (a copy of a
  /// parameter: its 16-bit cast, ZeRO's gather, or one a peer stage sent
  /// once for the step), "gradient", "communication" or "activation".
  std::string category;
};

struct StageMemory {
  int64_t stage = 0;
  /// Ranks that run this stage's program.
  int64_t ranks = 0;
  /// The persistent region (held across steps) and its parts; the rest of
  /// it is alignment.
  int64_t persistent = 0, parameters = 0, optimizerState = 0, inputs = 0;
  /// The parameters' persistent 16-bit copies (mt-fuse's parameter-copies:
  /// written by the optimizer, read by the step instead of casts).
  int64_t persistentCopies = 0;
  /// The transient region as planned (reused by lifetime), and the whole
  /// arena: the planned peak of every rank of the stage.
  int64_t transient = 0, peak = 0;
  /// The command at which the transient region reaches its high-water
  /// mark, and what is live there, by category.
  int64_t peakCommand = -1;
  int64_t stashed = 0, gradients = 0, communication = 0, activations = 0;
  /// Mixed precision: the 16-bit copies of parameters live at the peak.
  int64_t parameterCopies = 0;
  /// Bytes of the transient region live at no moment of the peak command.
  int64_t fragmentation = 0;
  /// Stashed bytes live at the peak, by the microbatch whose forward wrote
  /// them (-1: none stated).
  std::map<int64_t, int64_t> stashedByMicrobatch;
  /// The most stashed bytes live at any command, and at that command by
  /// the layer of the op that wrote them (-1: none stated).
  int64_t maxStashed = 0;
  std::map<int64_t, int64_t> maxStashedByLayer;
  /// Model states as the ZeRO paper counts them: parameters, optimizer
  /// state, the sum of every gradient the optimizer reads (after its
  /// reduction: pieces under ZeRO-2 and 3; all live until it runs), and the
  /// most 16-bit parameter copies live at once.
  int64_t gradientsTotal = 0, maxParameterCopies = 0;
  int64_t modelStates() const {
    return parameters + persistentCopies + optimizerState + gradientsTotal +
           maxParameterCopies;
  }
  /// The largest buffers live at the peak command, largest first.
  std::vector<PeakBuffer> largest;
};

struct MemoryReport {
  int64_t worldSize = 1;
  std::vector<StageMemory> stages;
};

/// The report of every stage of `artifact`, with the `top` largest buffers
/// at each stage's peak.
Status computeMemoryReport(const Artifact &artifact, size_t top,
                           MemoryReport &report);

/// The report as text (one block per stage), as JSON, and as an SVG chart
/// with one stacked bar per stage.
std::string memoryReportText(const MemoryReport &report);
std::string memoryReportJson(const MemoryReport &report);
std::string memoryReportSvg(const MemoryReport &report);

} // namespace mtrt

#endif // MTRT_MEMORYREPORT_H
