//===- EvaluationSlice.cpp - The commands a loss depends on ---------------===//

#include "mtrt/EvaluationSlice.h"

#include "mtrt/ArenaLifetimes.h"
#include "mtrt/Kernels.h"

#include <map>
#include <tuple>

using namespace mtrt;

Status mtrt::evaluationSlices(const Artifact &artifact,
                              std::vector<std::vector<bool>> &slices) {
  const std::vector<RankProgram> &programs = artifact.programs;
  size_t stages = programs.size();
  int64_t pipelineAxis = artifact.axis("pp");
  auto where = [&](size_t s, size_t c) {
    const Command &command = programs[s].commands[c];
    return "programs[" + std::to_string(s) + "].commands[" + std::to_string(c) +
           "] ('" + command.kernel + "')";
  };

  // Per program: each allocation's writers in program order; the sends of
  // each (stage, peer stage, tag) in program order, and each receive's
  // place among the receives of its own: the k-th receive of a tag from a
  // peer takes the k-th send of that tag to it, as the transfers match.
  std::vector<ArenaTimeline> timelines(stages);
  std::vector<std::map<int64_t, std::vector<size_t>>> writers(stages);
  using TransferKey = std::tuple<size_t, int64_t, int64_t>;
  std::map<TransferKey, std::vector<size_t>> sends;
  std::map<TransferKey, size_t> receivesSeen;
  std::vector<std::map<size_t, size_t>> receiveOrdinal(stages);
  for (size_t s = 0; s < stages; ++s) {
    const RankProgram &program = programs[s];
    if (Status status = buildArenaTimeline(program, timelines[s]); !status)
      return Status::error("programs[" + std::to_string(s) +
                           "]: " + status.message());
    for (size_t c = 0; c < program.commands.size(); ++c) {
      const Command &command = program.commands[c];
      for (int64_t out : command.outs)
        writers[s][timelines[s].owner[size_t(out)]].push_back(c);
      TransferKey key{s, int64_t(command.get("peer_stage", -1)),
                      int64_t(command.get("tag", -1))};
      if (command.kernel == "send")
        sends[key].push_back(c);
      else if (command.kernel == "recv")
        receiveOrdinal[s][c] = receivesSeen[key]++;
    }
  }

  slices.assign(stages, {});
  std::vector<std::pair<size_t, size_t>> work;
  bool anyLoss = false;
  for (size_t s = 0; s < stages; ++s) {
    slices[s].assign(programs[s].commands.size(), false);
    auto loss = programs[s].outputs.find("loss");
    if (loss == programs[s].outputs.end())
      continue;
    anyLoss = true;
    for (size_t c : writers[s][timelines[s].owner[size_t(loss->second)]])
      work.push_back({s, c});
  }
  if (!anyLoss)
    return Status::error("no program has a loss output");

  while (!work.empty()) {
    auto [s, c] = work.back();
    work.pop_back();
    if (slices[s][c])
      continue;
    slices[s][c] = true;
    const RankProgram &program = programs[s];
    const Command &command = program.commands[c];
    for (int64_t out : command.outs) {
      const BufferDesc &buffer = program.buffers[size_t(out)];
      if (isPersistentKind(buffer.kind))
        return Status::error(
            where(s, c) + ", which the loss depends on, writes " + buffer.kind +
            (buffer.name.empty() ? "" : " '" + buffer.name + "'") +
            " (buffer " + std::to_string(out) +
            "): evaluating would change the training state");
    }
    const KernelInfo *kernel = findKernel(command.kernel);
    if (kernel && isCollective(kernel->id) && pipelineAxis >= 0 &&
        int64_t(command.get("grid_axis", -1)) == pipelineAxis)
      return Status::error(where(s, c) +
                           ", which the loss depends on, is a collective over "
                           "the pipeline axis, which evaluation does not run");
    if (command.kernel == "recv") {
      int64_t peer = int64_t(command.get("peer_stage", -1));
      int64_t tag = int64_t(command.get("tag", -1));
      size_t ordinal = receiveOrdinal[s][c];
      auto send = peer >= 0 && size_t(peer) < stages
                      ? sends.find({size_t(peer), int64_t(s), tag})
                      : sends.end();
      if (send == sends.end() || send->second.size() <= ordinal)
        return Status::error(
            where(s, c) + ": stage " + std::to_string(peer) + " has no " +
            (ordinal == 0 ? std::string("send")
                          : "send number " + std::to_string(ordinal + 1)) +
            " to stage " + std::to_string(s) + " with its tag " +
            std::to_string(tag));
      work.push_back({size_t(peer), send->second[ordinal]});
    }
    // Every earlier writer of what it reads: the bytes as the step left
    // them when it ran. Persistent buffers nothing earlier writes hold what
    // the runtime or the previous step put there.
    for (int64_t in : command.ins)
      for (size_t writer : writers[s][timelines[s].owner[size_t(in)]]) {
        if (writer >= c)
          break;
        work.push_back({s, writer});
      }
  }
  return Status::ok();
}
