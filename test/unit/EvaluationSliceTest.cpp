//===- EvaluationSliceTest.cpp - The commands a loss depends on -----------===//

#include "mtrt/EvaluationSlice.h"

#include "ProgramOf.h"

#include <gtest/gtest.h>

using namespace mtrt;

namespace {

/// One stage of f32 buffers, each `floats` elements, whose kinds `kinds`
/// gives (persistent ones first, as the compiler places them).
RankProgram stageOf(const std::vector<std::string> &kinds, int64_t floats = 4) {
  std::vector<int64_t> offsets, sizes;
  for (size_t i = 0; i < kinds.size(); ++i) {
    offsets.push_back(int64_t(i) * floats * 4);
    sizes.push_back(floats);
  }
  RankProgram program = programOf(offsets, sizes);
  for (size_t i = 0; i < kinds.size(); ++i)
    program.buffers[i].kind = kinds[i];
  program.arenaBytes = int64_t(kinds.size()) * floats * 4;
  return program;
}

Command &add(RankProgram &program, const char *kernel, std::vector<int64_t> ins,
             std::vector<int64_t> outs) {
  Command command;
  command.kernel = kernel;
  command.ins = std::move(ins);
  command.outs = std::move(outs);
  program.commands.push_back(command);
  return program.commands.back();
}

Artifact artifactOf(std::vector<RankProgram> programs) {
  Artifact artifact;
  artifact.programs = std::move(programs);
  if (artifact.programs.size() > 1) {
    artifact.gridAxes = {"pp"};
    artifact.gridShape = {int64_t(artifact.programs.size())};
  }
  return artifact;
}

/// Why `artifact` has no evaluation slice ("" when it has one).
std::string refusal(const Artifact &artifact) {
  std::vector<std::vector<bool>> slices;
  Status status = evaluationSlices(artifact, slices);
  return status.isOk() ? std::string() : status.message();
}

// The forward's commands and the loss's, not the backward's or the
// optimizer's; an accumulation's every write to what the loss reads.
TEST(EvaluationSlice, TheLossAndWhatItReads) {
  // 0 param, 1 input, 2 hidden, 3 per-token losses, 4 loss, 5 gradient.
  RankProgram program = stageOf(
      {"param", "input", "activation", "activation", "activation", "gradient"});
  add(program, "embedding", {0, 1}, {2});     // 0
  add(program, "cross_entropy", {2, 1}, {3}); // 1
  add(program, "add", {3, 3}, {3});           // 2: accumulates in place
  add(program, "fill", {}, {5});              // 3: the backward's
  add(program, "mean", {3}, {4});             // 4
  add(program, "matmul", {5, 2}, {5});        // 5: backward, after the loss
  program.outputs["loss"] = 4;
  std::vector<std::vector<bool>> slices;
  ASSERT_TRUE(evaluationSlices(artifactOf({program}), slices).isOk());
  EXPECT_EQ(slices[0],
            (std::vector<bool>{true, true, true, false, true, false}));
}

// A command the loss depends on that writes a parameter would change the
// training state: refused, naming it.
TEST(EvaluationSlice, RefusesToWriteAParameter) {
  RankProgram program = stageOf({"param", "activation", "activation"});
  program.buffers[0].name = "wte.weight";
  add(program, "scale", {0}, {1});
  add(program, "copy", {1}, {0});
  add(program, "mean", {0}, {2});
  program.outputs["loss"] = 2;
  EXPECT_EQ(refusal(artifactOf({program})),
            "programs[0].commands[1] ('copy'), which the loss depends on, "
            "writes param 'wte.weight' (buffer 0): evaluating would change "
            "the training state");
}

// Pipeline stages: a receive the loss depends on brings its send, and what
// that reads, on the stage before; the stage's backward transfer stays out.
TEST(EvaluationSlice, FollowsTransfersAcrossStages) {
  RankProgram first = stageOf({"input", "activation", "activation"});
  add(first, "embedding", {0}, {1}); // 0
  add(first, "send", {1}, {}).params = {{"peer_stage", 1}, {"tag", 0}};
  add(first, "recv", {}, {2}).params = {{"peer_stage", 1}, {"tag", 1}};
  RankProgram last =
      stageOf({"input", "activation", "activation", "activation"});
  add(last, "recv", {}, {1}).params = {{"peer_stage", 0}, {"tag", 0}};
  add(last, "cross_entropy", {1, 0}, {2}); // 1
  add(last, "fill", {}, {3});              // 2
  add(last, "send", {3}, {}).params = {{"peer_stage", 0}, {"tag", 1}};
  last.outputs["loss"] = 2;
  std::vector<std::vector<bool>> slices;
  ASSERT_TRUE(evaluationSlices(artifactOf({first, last}), slices).isOk());
  EXPECT_EQ(slices[0], (std::vector<bool>{true, true, false}));
  EXPECT_EQ(slices[1], (std::vector<bool>{true, true, false, false}));

  // A receive whose send is missing.
  last.commands[0].params["tag"] = 7;
  EXPECT_EQ(refusal(artifactOf({first, last})),
            "programs[1].commands[0] ('recv'): stage 0 has no send to stage "
            "1 with its tag 7");
}

// Transfers of one tag match in order: the second receive of tag 0 takes
// the second send of tag 0 (an edited artifact reusing a tag trains alike,
// and its evaluation must not wait on a send that never comes).
TEST(EvaluationSlice, TransfersOfOneTagMatchInOrder) {
  RankProgram first =
      stageOf({"input", "activation", "activation", "activation"});
  add(first, "fill", {}, {1});       // 0: what the optimizer would send
  add(first, "embedding", {0}, {2}); // 1
  add(first, "send", {1}, {}).params = {{"peer_stage", 1}, {"tag", 0}};
  add(first, "send", {2}, {}).params = {{"peer_stage", 1}, {"tag", 0}};
  RankProgram last =
      stageOf({"input", "activation", "activation", "activation"});
  add(last, "recv", {}, {1}).params = {{"peer_stage", 0}, {"tag", 0}};
  add(last, "recv", {}, {2}).params = {{"peer_stage", 0}, {"tag", 0}};
  add(last, "cross_entropy", {2, 0}, {3});
  last.outputs["loss"] = 3;
  std::vector<std::vector<bool>> slices;
  ASSERT_TRUE(evaluationSlices(artifactOf({first, last}), slices).isOk());
  EXPECT_EQ(slices[0], (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(slices[1], (std::vector<bool>{false, true, true}));

  // A third receive of the tag has no send.
  RankProgram third = stageOf(
      {"input", "activation", "activation", "activation", "activation"});
  for (int64_t buffer : {1, 2, 3})
    add(third, "recv", {}, {buffer}).params = {{"peer_stage", 0}, {"tag", 0}};
  add(third, "cross_entropy", {3, 0}, {4});
  third.outputs["loss"] = 4;
  EXPECT_EQ(refusal(artifactOf({first, third})),
            "programs[1].commands[2] ('recv'): stage 0 has no send number 3 "
            "to stage 1 with its tag 0");
}

// A collective over the pipeline axis would need every stage to join it.
TEST(EvaluationSlice, RefusesAPipelineCollective) {
  RankProgram program = stageOf({"input", "activation", "activation"});
  add(program, "embedding", {0}, {1});
  add(program, "all_reduce", {1}, {2}).params = {{"grid_axis", 0}};
  program.outputs["loss"] = 2;
  RankProgram other = stageOf({"input"});
  EXPECT_EQ(refusal(artifactOf({program, other})),
            "programs[0].commands[1] ('all_reduce'), which the loss depends "
            "on, is a collective over the pipeline axis, which evaluation "
            "does not run");
}

TEST(EvaluationSlice, NeedsALoss) {
  RankProgram program = stageOf({"input", "activation"});
  add(program, "embedding", {0}, {1});
  EXPECT_EQ(refusal(artifactOf({program})), "no program has a loss output");
}

} // namespace
