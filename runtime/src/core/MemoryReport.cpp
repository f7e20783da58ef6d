//===- MemoryReport.cpp - Where every byte of a rank goes -----------------===//

#include "mtrt/MemoryReport.h"

#include "mtrt/ArenaLifetimes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <queue>
#include <set>
#include <sstream>

using namespace mtrt;

namespace {

bool writesCommunication(const std::string &kernel) {
  return kernel == "all_reduce" || kernel == "reduce_scatter" ||
         kernel == "all_gather" || kernel == "all_slice" || kernel == "recv" ||
         kernel == "expert_dispatch" || kernel == "expert_combine";
}

/// `text` without its leading spaces (mebibytes pads to a column).
std::string trimmed(const std::string &text) {
  size_t first = text.find_first_not_of(' ');
  return first == std::string::npos ? text : text.substr(first);
}

std::string mebibytes(int64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%10.3f MiB (%lld B)",
                double(bytes) / (1024.0 * 1024.0),
                static_cast<long long>(bytes));
  return text;
}

Status stageMemory(const Artifact &artifact, const RankProgram &program,
                   size_t top, StageMemory &stage) {
  ArenaTimeline timeline;
  MTRT_RETURN_IF_ERROR(buildArenaTimeline(program, timeline));
  const std::vector<BufferDesc> &buffers = program.buffers;
  stage.stage = program.stage;
  stage.ranks = artifact.worldSize / int64_t(artifact.programs.size());
  stage.persistent = program.persistentBytes;
  stage.peak = program.arenaBytes;
  stage.transient = program.arenaBytes - program.persistentBytes;
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferDesc &buffer = buffers[id];
    if (buffer.alias || !isPersistentKind(buffer.kind))
      continue;
    if (buffer.kind == "param")
      stage.parameters += buffer.bytes();
    else if (buffer.kind == "param_copy")
      stage.persistentCopies += buffer.bytes();
    else if (buffer.kind == "input")
      stage.inputs += buffer.bytes();
    else
      stage.optimizerState += buffer.bytes();
  }

  // Each allocation's first reader after its writer: a received value has
  // no phase of its own, and is the forward's when the forward reads it.
  std::vector<int64_t> firstReader(buffers.size(), -1);
  for (size_t c = 0; c < program.commands.size(); ++c)
    for (int64_t input : program.commands[c].ins) {
      int64_t owner = timeline.owner[size_t(input)];
      if (owner >= 0 && firstReader[size_t(owner)] < 0 &&
          int64_t(c) > timeline.begin[size_t(owner)])
        firstReader[size_t(owner)] = int64_t(c);
    }
  // The transient allocations, each with what wrote it and its category.
  std::vector<size_t> transients;
  std::vector<std::string> category(buffers.size());
  for (size_t id = 0; id < buffers.size(); ++id) {
    if (timeline.owner[id] != int64_t(id) || isPersistentKind(buffers[id].kind))
      continue;
    transients.push_back(id);
    const Command &writer = program.commands[size_t(timeline.begin[id])];
    int64_t lastUse = std::min<int64_t>(timeline.end[id],
                                        int64_t(program.commands.size()) - 1);
    const Command &reader = program.commands[size_t(lastUse)];
    // A forward value the backward reads is stashed, whoever wrote it: an
    // activation received from the previous stage, or the all-gathered
    // input of a column-parallel GEMM under sequence parallelism, is part
    // of what a layer keeps for its backward (Korthikanti et al. count it).
    // The 16-bit copies of the parameters that mixed precision reads (the
    // casts from fp32 to 16 bits, mt-mixed-precision; gradients are cast
    // the other way) are weights, not activations.
    // Under ZeRO the copy is the all-gather of a cast piece.
    // A generated kernel (mt-fuse) of one fp32 input and one 16-bit output
    // of its size is such a cast, fused or alone. Either reads a parameter
    // (or, under ZeRO-3, the all-gather of one): narrowing an activation is
    // not a weight copy.
    auto readsParameter = [&](int64_t input) {
      if (buffers[size_t(input)].kind == "param")
        return true;
      int64_t owner = timeline.owner[size_t(input)];
      if (owner < 0 || timeline.begin[size_t(owner)] < 0)
        return false;
      const Command &gather =
          program.commands[size_t(timeline.begin[size_t(owner)])];
      return gather.kernel == "all_gather" && !gather.ins.empty() &&
             buffers[size_t(gather.ins[0])].kind == "param";
    };
    // `output` of `command` (a buffer, or the buffer a view of it owns):
    // for a multi-tensor cast (mt.multi_cast), its own input's.
    auto narrowing = [&](const Command &command, int64_t output) {
      size_t k = 0;
      if (command.kernel == "multi_cast")
        while (k < command.outs.size() &&
               timeline.owner[size_t(command.outs[k])] !=
                   timeline.owner[size_t(output)])
          ++k;
      bool oneToOne = command.kernel == "cast" ||
                      command.kernel == "multi_cast" ||
                      (command.kernel == "fused" && command.ins.size() == 1 &&
                       command.outs.size() == 1 &&
                       buffers[size_t(command.ins[0])].numElements() ==
                           buffers[size_t(command.outs[0])].numElements());
      return oneToOne && k < command.ins.size() && k < command.outs.size() &&
             buffers[size_t(command.ins[k])].dtype == DType::F32 &&
             buffers[size_t(command.outs[k])].dtype != DType::F32 &&
             readsParameter(command.ins[k]);
    };
    bool narrowed = narrowing(writer, int64_t(id));
    if (!narrowed && writer.kernel == "all_gather" && !writer.ins.empty()) {
      // The gather of a cast piece, or of a piece's persistent 16-bit copy
      // (mt-fuse's parameter-copies).
      int64_t owner = timeline.owner[size_t(writer.ins[0])];
      narrowed =
          buffers[size_t(writer.ins[0])].kind == "param_copy" ||
          (owner >= 0 && timeline.begin[size_t(owner)] >= 0 &&
           narrowing(program.commands[size_t(timeline.begin[size_t(owner)])],
                     owner));
    }
    // A value received from another stage and read by later microbatches
    // is one mt-pipeline sends once per step because it is the same for
    // every microbatch (the tied embedding's copy for the head): the
    // stage keeps a copy of a parameter for the step, not an activation.
    bool keptFromPeer = writer.kernel == "recv" && writer.microbatch >= 0 &&
                        reader.microbatch > writer.microbatch;
    // An activation received from the previous stage that the backward
    // reads again is stashed as the stage's own are.
    Phase written = writer.phase;
    if (writer.kernel == "recv" && firstReader[id] >= 0)
      written = program.commands[size_t(firstReader[id])].phase;
    if (buffers[id].kind == "gradient")
      category[id] = "gradient";
    else if (narrowed || keptFromPeer)
      category[id] = "param_copy";
    else if (written == Phase::Forward && reader.phase == Phase::Backward)
      category[id] = "stashed";
    else if (writesCommunication(writer.kernel))
      category[id] = "communication";
    else
      category[id] = "activation";
  }

  // The high-water mark of the transient region, command by command.
  std::sort(transients.begin(), transients.end(), [&](size_t a, size_t b) {
    return timeline.begin[a] < timeline.begin[b];
  });
  std::multiset<int64_t> liveEnds;
  struct Expiry {
    int64_t last, endOffset, bytes; // its last command, end offset and size
    bool operator>(const Expiry &other) const { return last > other.last; }
  };
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>>
      expiring;
  int64_t steps = int64_t(program.commands.size());
  std::vector<int64_t> stashDelta(size_t(steps) + 2, 0);
  std::vector<int64_t> copyDelta(size_t(steps) + 2, 0);
  size_t next = 0;
  // The peak: of the commands that reach the region's top byte, the one
  // with the most bytes live (the first to reach it may hold little more
  // than the buffer placed at the top).
  int64_t highWater = -1, liveBytes = 0, liveAtPeak = -1;
  for (int64_t c = 0; c < steps; ++c) {
    while (!expiring.empty() && expiring.top().last < c) {
      liveEnds.erase(liveEnds.find(expiring.top().endOffset));
      liveBytes -= expiring.top().bytes;
      expiring.pop();
    }
    for (; next < transients.size() && timeline.begin[transients[next]] <= c;
         ++next) {
      size_t id = transients[next];
      int64_t endOffset = buffers[id].offset + buffers[id].bytes();
      liveEnds.insert(endOffset);
      liveBytes += buffers[id].bytes();
      expiring.push({timeline.end[id], endOffset, buffers[id].bytes()});
      std::vector<int64_t> *delta = category[id] == "stashed"      ? &stashDelta
                                    : category[id] == "param_copy" ? &copyDelta
                                                                   : nullptr;
      if (delta) {
        (*delta)[size_t(timeline.begin[id])] += buffers[id].bytes();
        (*delta)[size_t(std::min(timeline.end[id], steps)) + 1] -=
            buffers[id].bytes();
      }
    }
    if (liveEnds.empty())
      continue;
    if (*liveEnds.rbegin() > highWater ||
        (*liveEnds.rbegin() == highWater && liveBytes > liveAtPeak)) {
      highWater = *liveEnds.rbegin();
      liveAtPeak = liveBytes;
      stage.peakCommand = c;
    }
  }
  // Model states as the ZeRO paper counts them: parameters, optimizer
  // state, every gradient the optimizer reads (they all live until it
  // runs), and the most parameter copies (16-bit casts, gathers, copies
  // kept from a peer) live at once.
  for (size_t id : transients)
    if (category[id] == "gradient")
      stage.gradientsTotal += buffers[id].bytes();
  int64_t stashed = 0, copies = 0, maxStashedAt = -1;
  for (int64_t c = 0; c < int64_t(stashDelta.size()); ++c)
    if ((stashed += stashDelta[size_t(c)]) > stage.maxStashed) {
      stage.maxStashed = stashed;
      maxStashedAt = c;
    }
  // The most stashed at once, by the layer of the op that wrote each stash
  // (a layer's output, read by the next layer's backward, is its own).
  for (size_t id : transients)
    if (category[id] == "stashed" && timeline.begin[id] <= maxStashedAt &&
        std::min(timeline.end[id], steps) >= maxStashedAt)
      stage.maxStashedByLayer[program.commands[size_t(timeline.begin[id])]
                                  .layer] += buffers[id].bytes();
  for (int64_t delta : copyDelta)
    stage.maxParameterCopies =
        std::max(stage.maxParameterCopies, copies += delta);
  if (stage.peakCommand < 0)
    return Status::ok();

  // What is live at the peak command.
  std::vector<PeakBuffer> live;
  int64_t used = 0;
  for (size_t id : transients) {
    if (timeline.begin[id] > stage.peakCommand ||
        timeline.end[id] < stage.peakCommand)
      continue;
    const BufferDesc &buffer = buffers[id];
    const Command &writer = program.commands[size_t(timeline.begin[id])];
    PeakBuffer entry;
    entry.id = int64_t(id);
    entry.kind = buffer.kind;
    entry.name = buffer.name;
    entry.kernel = writer.kernel;
    entry.phase = writer.phase;
    entry.microbatch = writer.microbatch;
    entry.shape = buffer.shape;
    entry.bytes = buffer.bytes();
    entry.category = category[id];
    used += entry.bytes;
    if (entry.category == "stashed") {
      stage.stashed += entry.bytes;
      stage.stashedByMicrobatch[entry.microbatch] += entry.bytes;
    } else if (entry.category == "gradient") {
      stage.gradients += entry.bytes;
    } else if (entry.category == "param_copy") {
      stage.parameterCopies += entry.bytes;
    } else if (entry.category == "communication") {
      stage.communication += entry.bytes;
    } else {
      stage.activations += entry.bytes;
    }
    live.push_back(std::move(entry));
  }
  stage.fragmentation = stage.transient - used;
  std::stable_sort(live.begin(), live.end(),
                   [](const PeakBuffer &a, const PeakBuffer &b) {
                     return a.bytes > b.bytes;
                   });
  live.resize(std::min(live.size(), top));
  stage.largest = std::move(live);
  return Status::ok();
}

std::string describeWriter(const PeakBuffer &buffer) {
  std::string text = buffer.kernel;
  std::string phase = phaseName(buffer.phase);
  if (!phase.empty() || buffer.microbatch >= 0) {
    text += " (" + phase;
    if (buffer.microbatch >= 0)
      text += std::string(phase.empty() ? "" : ", ") + "microbatch " +
              std::to_string(buffer.microbatch);
    text += ")";
  }
  return text;
}

} // namespace

Status mtrt::computeMemoryReport(const Artifact &artifact, size_t top,
                                 MemoryReport &report) {
  report = MemoryReport();
  report.worldSize = artifact.worldSize;
  for (const RankProgram &program : artifact.programs) {
    StageMemory stage;
    if (Status status = stageMemory(artifact, program, top, stage); !status)
      return Status::error("stage " + std::to_string(program.stage) + ": " +
                           status.message());
    report.stages.push_back(std::move(stage));
  }
  return Status::ok();
}

std::string mtrt::memoryReportText(const MemoryReport &report) {
  std::ostringstream os;
  os << "memory report: " << report.worldSize << " rank"
     << (report.worldSize == 1 ? "" : "s") << ", " << report.stages.size()
     << " pipeline stage" << (report.stages.size() == 1 ? "" : "s")
     << " (the compiler's plan: every rank of a stage has the same)\n";
  for (const StageMemory &stage : report.stages) {
    os << "stage " << stage.stage << " (" << stage.ranks << " rank"
       << (stage.ranks == 1 ? "" : "s") << "):\n";
    os << "  parameters                " << mebibytes(stage.parameters) << "\n";
    if (stage.persistentCopies > 0)
      os << "  16-bit parameter copies   " << mebibytes(stage.persistentCopies)
         << "\n";
    os << "  optimizer state           " << mebibytes(stage.optimizerState)
       << "\n";
    os << "  inputs                    " << mebibytes(stage.inputs) << "\n";
    os << "  persistent region         " << mebibytes(stage.persistent) << "\n";
    os << "  transient region          " << mebibytes(stage.transient);
    if (stage.peakCommand >= 0)
      os << ", at its peak at command " << stage.peakCommand << ":";
    os << "\n";
    os << "    stashed activations     " << mebibytes(stage.stashed);
    // Per microbatch where the step has them (-1: a step not split).
    if (!stage.stashedByMicrobatch.empty() &&
        stage.stashedByMicrobatch.begin()->first >= 0) {
      os << " in " << stage.stashedByMicrobatch.size() << " microbatch"
         << (stage.stashedByMicrobatch.size() == 1 ? "" : "es") << " (";
      bool first = true;
      for (const auto &[microbatch, bytes] : stage.stashedByMicrobatch) {
        os << (first ? "" : ", ") << microbatch << ": " << bytes << " B";
        first = false;
      }
      os << ")";
    }
    os << "\n";
    if (stage.parameterCopies > 0)
      os << "    parameter copies        " << mebibytes(stage.parameterCopies)
         << "\n";
    os << "    gradients for the step  " << mebibytes(stage.gradients) << "\n";
    os << "    communication buffers   " << mebibytes(stage.communication)
       << "\n";
    os << "    other activations       " << mebibytes(stage.activations)
       << "\n";
    os << "    unused (fragmentation)  " << mebibytes(stage.fragmentation)
       << "\n";
    os << "  most stashed at once      " << mebibytes(stage.maxStashed);
    if (!stage.maxStashedByLayer.empty()) {
      os << " (by layer:";
      for (const auto &[layer, bytes] : stage.maxStashedByLayer)
        os << " " << (layer < 0 ? std::string("none") : std::to_string(layer))
           << ": " << bytes << " B"
           << (layer == stage.maxStashedByLayer.rbegin()->first ? "" : ",");
      os << ")";
    }
    os << "\n";
    os << "  planned peak              " << mebibytes(stage.peak) << "\n";
    if (!stage.largest.empty())
      os << "  largest buffers live at the peak:\n";
    for (const PeakBuffer &buffer : stage.largest)
      os << "    " << buffer.bytes << " B  buffer " << buffer.id << " "
         << shapeString(buffer.shape) << " " << buffer.category << ", from "
         << describeWriter(buffer) << "\n";
    // The ZeRO paper's per-device accounting.
    os << "  model states              " << mebibytes(stage.modelStates())
       << ": parameters"
       << (stage.persistentCopies > 0 ? ", their 16-bit copies" : "")
       << ", optimizer state, gradients (the gradients "
       << trimmed(mebibytes(stage.gradientsTotal));
    if (stage.maxParameterCopies > 0)
      os << ", the most parameter copies at once "
         << trimmed(mebibytes(stage.maxParameterCopies));
    os << ")\n";
  }
  return os.str();
}

std::string mtrt::memoryReportJson(const MemoryReport &report) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StageMemory &stage : report.stages) {
    nlohmann::json largest = nlohmann::json::array();
    for (const PeakBuffer &buffer : stage.largest)
      largest.push_back({{"id", buffer.id},
                         {"kind", buffer.kind},
                         {"name", buffer.name},
                         {"kernel", buffer.kernel},
                         {"phase", phaseName(buffer.phase)},
                         {"microbatch", buffer.microbatch},
                         {"shape", buffer.shape},
                         {"bytes", buffer.bytes},
                         {"category", buffer.category}});
    nlohmann::json byLayer = nlohmann::json::object();
    for (const auto &[layer, bytes] : stage.maxStashedByLayer)
      byLayer[layer < 0 ? std::string("none") : std::to_string(layer)] = bytes;
    nlohmann::json byMicrobatch = nlohmann::json::object();
    for (const auto &[microbatch, bytes] : stage.stashedByMicrobatch)
      byMicrobatch[std::to_string(microbatch)] = bytes;
    stages.push_back({{"stage", stage.stage},
                      {"ranks", stage.ranks},
                      {"parameters", stage.parameters},
                      {"persistent_parameter_copies", stage.persistentCopies},
                      {"optimizer_state", stage.optimizerState},
                      {"inputs", stage.inputs},
                      {"persistent", stage.persistent},
                      {"transient", stage.transient},
                      {"peak", stage.peak},
                      {"peak_command", stage.peakCommand},
                      {"stashed", stage.stashed},
                      {"stashed_by_microbatch", byMicrobatch},
                      {"max_stashed", stage.maxStashed},
                      {"max_stashed_by_layer", byLayer},
                      {"parameter_copies", stage.parameterCopies},
                      {"gradients_total", stage.gradientsTotal},
                      {"max_parameter_copies", stage.maxParameterCopies},
                      {"model_states", stage.modelStates()},
                      {"gradients", stage.gradients},
                      {"communication", stage.communication},
                      {"activations", stage.activations},
                      {"fragmentation", stage.fragmentation},
                      {"largest_at_peak", largest}});
  }
  nlohmann::json document = {{"world_size", report.worldSize},
                             {"stages", stages}};
  return document.dump(2) + "\n";
}

std::string mtrt::memoryReportSvg(const MemoryReport &report) {
  struct Part {
    const char *label, *color;
    int64_t StageMemory::*field;
  };
  const Part parts[] = {
      {"parameters", "#4e79a7", &StageMemory::parameters},
      {"16-bit parameter copies", "#d4a6c8", &StageMemory::persistentCopies},
      {"optimizer state", "#59a14f", &StageMemory::optimizerState},
      {"inputs", "#9c755f", &StageMemory::inputs},
      {"stashed activations", "#e15759", &StageMemory::stashed},
      {"parameter copies", "#b07aa1", &StageMemory::parameterCopies},
      {"gradients", "#f28e2b", &StageMemory::gradients},
      {"communication", "#76b7b2", &StageMemory::communication},
      {"activations, workspace", "#edc948", &StageMemory::activations},
      {"fragmentation", "#bab0ac", &StageMemory::fragmentation},
  };
  int64_t tallest = 1;
  for (const StageMemory &stage : report.stages)
    tallest = std::max(tallest, stage.peak);
  const int barWidth = 60, gap = 30, height = 300, left = 60, top = 20;
  int width = left + int(report.stages.size()) * (barWidth + gap) + 220;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height + top + 40 << "\" font-family=\"sans-serif\" "
     << "font-size=\"11\">\n";
  os << "<text x=\"" << left << "\" y=\"12\">planned peak per rank, by stage "
     << "(" << mebibytes(tallest) << " at most)</text>\n";
  for (size_t s = 0; s < report.stages.size(); ++s) {
    const StageMemory &stage = report.stages[s];
    int x = left + int(s) * (barWidth + gap);
    double y = top + height;
    for (const Part &part : parts) {
      double h = double(stage.*part.field) / double(tallest) * height;
      y -= h;
      os << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << barWidth
         << "\" height=\"" << h << "\" fill=\"" << part.color << "\"><title>"
         << part.label << ": " << stage.*part.field << " B</title></rect>\n";
    }
    os << "<text x=\"" << x << "\" y=\"" << top + height + 14 << "\">stage "
       << stage.stage << "</text>\n";
  }
  int legendX = left + int(report.stages.size()) * (barWidth + gap) + 10;
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); ++i) {
    int y = top + int(i) * 18;
    os << "<rect x=\"" << legendX << "\" y=\"" << y
       << "\" width=\"12\" height=\"12\" fill=\"" << parts[i].color
       << "\"/><text x=\"" << legendX + 18 << "\" y=\"" << y + 10 << "\">"
       << parts[i].label << "</text>\n";
  }
  os << "</svg>\n";
  return os.str();
}
