//===- PipelineSchedule.cpp - Pipeline-parallel training schedules --------===//

#include "megatron/Analysis/PipelineSchedule.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

using namespace mlir::mt;

std::optional<ScheduleKind>
mlir::mt::parseScheduleKind(const std::string &name) {
  if (name == "gpipe")
    return ScheduleKind::GPipe;
  if (name == "1f1b")
    return ScheduleKind::OneFOneB;
  if (name == "interleaved")
    return ScheduleKind::Interleaved;
  return std::nullopt;
}

const char *mlir::mt::scheduleKindName(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved:
    return "interleaved";
  }
  return "unknown";
}

std::optional<std::string> mlir::mt::checkSchedule(ScheduleKind kind,
                                                   int64_t stages,
                                                   int64_t microbatches,
                                                   int64_t virtualStages) {
  std::ostringstream os;
  if (stages < 1 || microbatches < 1 || virtualStages < 1) {
    os << "pipeline stages (p = " << stages
       << "), microbatches (m = " << microbatches
       << ") and model chunks per stage (v = " << virtualStages
       << ") must be positive";
    return os.str();
  }
  if (kind != ScheduleKind::Interleaved && virtualStages != 1) {
    os << "more than one model chunk per stage (v = " << virtualStages
       << ") needs the interleaved schedule, not " << scheduleKindName(kind);
    return os.str();
  }
  if (kind == ScheduleKind::Interleaved && stages < 2) {
    // As Megatron-LM's arguments require: the chunks interleave across
    // stages; on one stage they would only add stashed activations.
    os << "the interleaved schedule needs pipeline stages (p = " << stages
       << "); with one stage, microbatches=N accumulates gradients";
    return os.str();
  }
  if (kind == ScheduleKind::Interleaved) {
    if (virtualStages < 2) {
      os << "the interleaved schedule needs at least 2 model chunks per stage "
            "(v = "
         << virtualStages << "); with one chunk use 1f1b";
      return os.str();
    }
    if (microbatches % stages != 0) {
      os << "microbatches (m = " << microbatches
         << ") not a multiple of pipeline stages (p = " << stages
         << ") under interleaved";
      return os.str();
    }
  }
  return std::nullopt;
}

namespace {

PipelineAction forward(int64_t microbatch, int64_t chunk = 0) {
  return {PipelineAction::Forward, microbatch, chunk};
}
PipelineAction backward(int64_t microbatch, int64_t chunk = 0) {
  return {PipelineAction::Backward, microbatch, chunk};
}

std::vector<PipelineAction> buildGPipe(int64_t microbatches) {
  std::vector<PipelineAction> actions;
  for (int64_t mb = 0; mb < microbatches; ++mb)
    actions.push_back(forward(mb));
  for (int64_t mb = 0; mb < microbatches; ++mb)
    actions.push_back(backward(mb));
  return actions;
}

/// Megatron-LM's `forward_backward_pipelining_without_interleaving`: rank r
/// is p - r - 1 forwards ahead of the last rank, which is exactly how many
/// forwards it must run before the first backward reaches it.
std::vector<PipelineAction> buildOneFOneB(int64_t rank, int64_t stages,
                                          int64_t microbatches) {
  std::vector<PipelineAction> actions;
  int64_t warmup = std::min(stages - rank - 1, microbatches);
  int64_t steady = microbatches - warmup;
  for (int64_t mb = 0; mb < warmup; ++mb)
    actions.push_back(forward(mb));
  for (int64_t i = 0; i < steady; ++i) {
    actions.push_back(forward(warmup + i));
    actions.push_back(backward(i));
  }
  for (int64_t mb = steady; mb < microbatches; ++mb)
    actions.push_back(backward(mb));
  return actions;
}

/// Megatron-LM's `forward_backward_pipelining_with_interleaving`. The k-th
/// forward of a rank belongs to group k / (p * v); within a group, p
/// consecutive microbatches go through chunk 0, then the same p through chunk
/// 1, and so on. Backwards walk the same sequence with the chunks reversed,
/// since a microbatch's gradient leaves the last chunk first.
std::vector<PipelineAction> buildInterleaved(int64_t rank, int64_t stages,
                                             int64_t microbatches,
                                             int64_t virtualStages) {
  int64_t group = stages * virtualStages;
  auto at = [&](int64_t k, bool isForward) {
    int64_t chunk = (k % group) / stages;
    int64_t microbatch = k / group * stages + k % stages;
    return isForward ? forward(microbatch, chunk)
                     : backward(microbatch, virtualStages - 1 - chunk);
  };
  int64_t total = microbatches * virtualStages;
  // The first chunk's backward of microbatch 0 needs all v chunks of the
  // pipeline to have run forward: (v - 1) * p forwards of other microbatches
  // on every rank, plus 2 per rank downstream (one forward and one backward
  // ahead). Megatron-LM runs everything as warmup when m == p.
  int64_t warmup = total;
  if (microbatches != stages)
    warmup =
        std::min((stages - rank - 1) * 2 + (virtualStages - 1) * stages, total);
  std::vector<PipelineAction> actions;
  for (int64_t k = 0; k < warmup; ++k)
    actions.push_back(at(k, /*isForward=*/true));
  for (int64_t k = 0; k < total - warmup; ++k) {
    actions.push_back(at(warmup + k, /*isForward=*/true));
    actions.push_back(at(k, /*isForward=*/false));
  }
  for (int64_t k = total - warmup; k < total; ++k)
    actions.push_back(at(k, /*isForward=*/false));
  return actions;
}

} // namespace

PipelineSchedule mlir::mt::buildSchedule(ScheduleKind kind, int64_t stages,
                                         int64_t microbatches,
                                         int64_t virtualStages) {
  PipelineSchedule schedule;
  schedule.kind = kind;
  schedule.stages = stages;
  schedule.microbatches = microbatches;
  schedule.virtualStages = virtualStages;
  for (int64_t rank = 0; rank < stages; ++rank) {
    switch (kind) {
    case ScheduleKind::GPipe:
      schedule.actions.push_back(buildGPipe(microbatches));
      break;
    case ScheduleKind::OneFOneB:
      schedule.actions.push_back(buildOneFOneB(rank, stages, microbatches));
      break;
    case ScheduleKind::Interleaved:
      schedule.actions.push_back(
          buildInterleaved(rank, stages, microbatches, virtualStages));
      break;
    }
  }
  return schedule;
}

std::string mlir::mt::formatAction(const PipelineAction &action,
                                   bool withChunk) {
  std::string name = action.kind == PipelineAction::Forward ? "F" : "B";
  name += std::to_string(action.microbatch);
  if (withChunk)
    name += "." + std::to_string(action.chunk);
  return name;
}

std::optional<std::string>
mlir::mt::verifySchedule(const PipelineSchedule &schedule) {
  int64_t p = schedule.stages, m = schedule.microbatches,
          v = schedule.virtualStages;
  if (p < 1 || m < 1 || v < 1)
    return std::string("nonpositive schedule sizes");
  if (static_cast<int64_t>(schedule.actions.size()) != p)
    return "schedule has " + std::to_string(schedule.actions.size()) +
           " ranks, expected " + std::to_string(p);
  bool interleaved = v > 1;
  for (int64_t rank = 0; rank < p; ++rank) {
    // 0: nothing yet, 1: forward seen, 2: backward seen.
    std::vector<int> seen(m * v, 0);
    std::string where = "stage " + std::to_string(rank) + ": ";
    for (const PipelineAction &action : schedule.actions[rank]) {
      if (action.microbatch < 0 || action.microbatch >= m || action.chunk < 0 ||
          action.chunk >= v)
        return where + formatAction(action, interleaved) + " out of range";
      int &state = seen[action.microbatch * v + action.chunk];
      bool isForward = action.kind == PipelineAction::Forward;
      if (state != (isForward ? 0 : 1))
        return where + formatAction(action, interleaved) +
               (isForward ? " repeated" : " before its forward or repeated");
      state = isForward ? 1 : 2;
    }
    for (int64_t mb = 0; mb < m; ++mb)
      for (int64_t chunk = 0; chunk < v; ++chunk)
        if (seen[mb * v + chunk] != 2)
          return where + "missing " +
                 formatAction({seen[mb * v + chunk] == 0
                                   ? PipelineAction::Forward
                                   : PipelineAction::Backward,
                               mb, chunk},
                              interleaved);
  }
  return std::nullopt;
}

Timeline
mlir::mt::simulateSchedule(const PipelineSchedule &schedule,
                           std::function<double(int64_t)> forwardCost,
                           std::function<double(int64_t)> backwardCost) {
  Timeline timeline;
  int64_t p = schedule.stages, m = schedule.microbatches,
          v = schedule.virtualStages;
  timeline.ranks.resize(schedule.actions.size());
  if (std::optional<std::string> error = verifySchedule(schedule)) {
    timeline.error = std::move(error);
    return timeline;
  }
  if (!forwardCost)
    forwardCost = [v](int64_t) { return 1.0 / static_cast<double>(v); };
  if (!backwardCost)
    backwardCost = [v](int64_t) { return 2.0 / static_cast<double>(v); };

  int64_t numVirtual = p * v;
  // End times per (microbatch, virtual stage); negative until it has run.
  std::vector<double> forwardEnd(m * numVirtual, -1.0);
  std::vector<double> backwardEnd(m * numVirtual, -1.0);
  auto index = [&](int64_t mb, int64_t vs) { return mb * numVirtual + vs; };

  // Start times do not depend on the order in which ready actions are
  // visited, so sweep the ranks, running each as far as its inputs allow,
  // until all are done or a sweep makes no progress (a cycle).
  std::vector<size_t> next(p, 0);
  std::vector<double> freeAt(p, 0.0);
  size_t remaining = 0;
  for (const auto &actions : schedule.actions)
    remaining += actions.size();
  bool progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (int64_t rank = 0; rank < p; ++rank) {
      const std::vector<PipelineAction> &actions = schedule.actions[rank];
      while (next[rank] < actions.size()) {
        const PipelineAction &action = actions[next[rank]];
        int64_t vs = virtualStage(rank, action.chunk, p);
        double ready = freeAt[rank];
        double duration;
        if (action.kind == PipelineAction::Forward) {
          if (vs > 0) {
            double input = forwardEnd[index(action.microbatch, vs - 1)];
            if (input < 0)
              break;
            ready = std::max(ready, input);
          }
          duration = forwardCost(vs);
        } else {
          // The rank's own forward ran earlier in its list (verified above).
          ready = std::max(ready, forwardEnd[index(action.microbatch, vs)]);
          if (vs + 1 < numVirtual) {
            double grad = backwardEnd[index(action.microbatch, vs + 1)];
            if (grad < 0)
              break;
            ready = std::max(ready, grad);
          }
          duration = backwardCost(vs);
        }
        double end = ready + duration;
        (action.kind == PipelineAction::Forward
             ? forwardEnd
             : backwardEnd)[index(action.microbatch, vs)] = end;
        timeline.ranks[rank].push_back({action, ready, end});
        freeAt[rank] = end;
        ++next[rank];
        --remaining;
        progress = true;
      }
    }
  }

  if (remaining > 0) {
    std::ostringstream os;
    os << "schedule deadlocks: " << remaining
       << " actions can never run; waiting:";
    for (int64_t rank = 0; rank < p; ++rank)
      if (next[rank] < schedule.actions[rank].size())
        os << " stage " << rank << " at "
           << formatAction(schedule.actions[rank][next[rank]], v > 1);
    timeline.error = os.str();
  }

  for (const auto &ranks : timeline.ranks)
    if (!ranks.empty())
      timeline.makespan = std::max(timeline.makespan, ranks.back().end);
  for (const auto &ranks : timeline.ranks) {
    double busy = 0;
    int64_t inFlight = 0, peak = 0;
    for (const TimedAction &timed : ranks) {
      busy += timed.end - timed.start;
      inFlight += timed.action.kind == PipelineAction::Forward ? 1 : -1;
      peak = std::max(peak, inFlight);
    }
    if (busy > 0)
      timeline.bubbleFraction =
          std::max(timeline.bubbleFraction, (timeline.makespan - busy) / busy);
    timeline.peakInFlight.push_back(peak);
  }
  return timeline;
}

void mlir::mt::printTimeline(std::ostream &os, const PipelineSchedule &schedule,
                             const Timeline &timeline) {
  bool withChunk = schedule.virtualStages > 1;
  for (size_t rank = 0; rank < timeline.ranks.size(); ++rank) {
    os << "stage " << rank << ":";
    for (const TimedAction &timed : timeline.ranks[rank])
      os << " " << formatAction(timed.action, withChunk);
    os << "\n";
  }
  if (timeline.error)
    os << "error: " << *timeline.error << "\n";
  os << "makespan: " << timeline.makespan << "\n";
  os << "bubble fraction: " << timeline.bubbleFraction << "\n";
  os << "peak in-flight microbatches:";
  for (int64_t peak : timeline.peakInFlight)
    os << " " << peak;
  os << "\n";
}

namespace {

/// The fill of a microbatch's boxes as "#rrggbb": hues spread by the golden
/// angle so that neighbours differ clearly whatever m is; backward boxes are
/// darker. Hex rather than hsl() because not every SVG renderer reads CSS3
/// colours.
std::string microbatchColour(int64_t microbatch, bool isForward) {
  double hue = std::fmod(static_cast<double>(microbatch) * 137.508, 360.0);
  double saturation = isForward ? 0.70 : 0.60;
  double lightness = isForward ? 0.72 : 0.38;
  double chroma = (1 - std::fabs(2 * lightness - 1)) * saturation;
  double h = hue / 60.0;
  double x = chroma * (1 - std::fabs(std::fmod(h, 2.0) - 1));
  double rgb[3] = {0, 0, 0};
  int sector = static_cast<int>(h) % 6;
  // Per 60-degree sector: the channels that get chroma, x and nothing.
  static const int order[6][3] = {{0, 1, 2}, {1, 0, 2}, {1, 2, 0},
                                  {2, 1, 0}, {2, 0, 1}, {0, 2, 1}};
  rgb[order[sector][0]] = chroma;
  rgb[order[sector][1]] = x;
  double base = lightness - chroma / 2;
  std::ostringstream os;
  os << "#" << std::hex << std::setfill('0');
  for (double channel : rgb)
    os << std::setw(2)
       << static_cast<int>(
              std::lround(255 * std::clamp(channel + base, 0.0, 1.0)));
  return os.str();
}

} // namespace

void mlir::mt::writeSvg(std::ostream &os, const PipelineSchedule &schedule,
                        const Timeline &timeline) {
  int64_t v = schedule.virtualStages;
  // Wide enough that the narrowest box (a forward of one chunk, 1 / v of a
  // time unit under default costs) still fits a two-digit number.
  const double unitPx = std::max(40.0, 24.0 * static_cast<double>(v));
  const double rowPx = 28, gapPx = 4, leftPx = 64, topPx = 28;
  double width = leftPx + timeline.makespan * unitPx + 8;
  double height =
      topPx + static_cast<double>(timeline.ranks.size()) * (rowPx + gapPx) + 4;

  std::ostringstream out;
  out << std::fixed << std::setprecision(2);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
      << "\" height=\"" << height << "\" font-family=\"sans-serif\">\n";
  out << "<text x=\"4\" y=\"18\" font-size=\"13\">"
      << scheduleKindName(schedule.kind) << ": p=" << schedule.stages
      << " m=" << schedule.microbatches << " v=" << v << std::setprecision(4)
      << " bubble fraction=" << timeline.bubbleFraction << std::setprecision(2)
      << "</text>\n";
  for (size_t rank = 0; rank < timeline.ranks.size(); ++rank) {
    double y = topPx + static_cast<double>(rank) * (rowPx + gapPx);
    out << "<text x=\"4\" y=\"" << y + rowPx / 2 + 4
        << "\" font-size=\"12\">stage " << rank << "</text>\n";
    for (const TimedAction &timed : timeline.ranks[rank]) {
      bool isForward = timed.action.kind == PipelineAction::Forward;
      double x = leftPx + timed.start * unitPx;
      double w = (timed.end - timed.start) * unitPx;
      out << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w
          << "\" height=\"" << rowPx << "\" fill=\""
          << microbatchColour(timed.action.microbatch, isForward)
          << "\" stroke=\"black\" stroke-width=\"0.5\"><title>"
          << formatAction(timed.action, v > 1) << " [" << timed.start << ", "
          << timed.end << ")</title></rect>\n";
      out << "<text x=\"" << x + w / 2 << "\" y=\"" << y + rowPx / 2 + 4
          << "\" font-size=\"11\" text-anchor=\"middle\" fill=\""
          << (isForward ? "black" : "white") << "\">" << timed.action.microbatch
          << "</text>\n";
    }
  }
  out << "</svg>\n";
  os << out.str();
}

void mlir::mt::writeChromeTrace(std::ostream &os,
                                const PipelineSchedule &schedule,
                                const Timeline &timeline) {
  // Chrome traces count microseconds; one time unit (a stage's forward under
  // the default costs) becomes a millisecond.
  const double unitUs = 1000.0;
  bool withChunk = schedule.virtualStages > 1;
  std::ostringstream out;
  out << std::fixed << std::setprecision(3);
  out << "{\"traceEvents\":[\n";
  bool first = true;
  auto separate = [&] {
    if (!first)
      out << ",\n";
    first = false;
  };
  for (size_t rank = 0; rank < timeline.ranks.size(); ++rank) {
    separate();
    out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" << rank
        << ",\"args\":{\"name\":\"stage " << rank << "\"}}";
    for (const TimedAction &timed : timeline.ranks[rank]) {
      bool isForward = timed.action.kind == PipelineAction::Forward;
      separate();
      out << "{\"name\":\"" << formatAction(timed.action, withChunk)
          << "\",\"cat\":\"" << (isForward ? "forward" : "backward")
          << "\",\"ph\":\"X\",\"pid\":0,\"tid\":" << rank
          << ",\"ts\":" << timed.start * unitUs
          << ",\"dur\":" << (timed.end - timed.start) * unitUs
          << ",\"args\":{\"microbatch\":" << timed.action.microbatch
          << ",\"chunk\":" << timed.action.chunk << "}}";
    }
  }
  out << "\n],\"displayTimeUnit\":\"ms\"}\n";
  os << out.str();
}
