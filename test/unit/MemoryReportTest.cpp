//===- MemoryReportTest.cpp - What --memory-report says of a stage --------===//

#include "mtrt/MemoryReport.h"

#include "ProgramOf.h"

#include <gtest/gtest.h>

using namespace mtrt;

namespace {

/// A stage of transient f32 activations of `floats[i]` elements at byte
/// `offsets[i]`, in an arena of `arenaBytes`.
Artifact stageOf(const std::vector<int64_t> &offsets,
                 const std::vector<int64_t> &floats, int64_t arenaBytes) {
  RankProgram program = programOf(offsets, floats, "activation");
  program.arenaBytes = arenaBytes;
  Artifact artifact;
  artifact.programs.push_back(program);
  return artifact;
}

void addCommand(Artifact &artifact, const char *kernel, Phase phase,
                std::vector<int64_t> ins, std::vector<int64_t> outs) {
  Command command;
  command.kernel = kernel;
  command.phase = phase;
  command.microbatch = 0;
  command.ins = std::move(ins);
  command.outs = std::move(outs);
  artifact.programs[0].commands.push_back(command);
}

// An activation received from the previous stage (a receive has no phase)
// that the forward reads and the backward reads again is kept for the
// backward as the stage's own activations are: stashed, not a
// communication buffer.
TEST(MemoryReport, ReceivedActivationTheBackwardReadsIsStashed) {
  // 0: received [0, 16); 1: the forward's output [16, 32); 2: the
  // backward's [32, 48).
  Artifact artifact = stageOf({0, 16, 32}, {4, 4, 4}, 48);
  addCommand(artifact, "recv", Phase::None, {}, {0});
  addCommand(artifact, "scale", Phase::Forward, {0}, {1});
  addCommand(artifact, "add", Phase::Backward, {0, 1}, {2});
  MemoryReport report;
  ASSERT_TRUE(computeMemoryReport(artifact, 4, report).isOk());
  const StageMemory &stage = report.stages[0];
  EXPECT_EQ(stage.peakCommand, 2);
  EXPECT_EQ(stage.stashed, 32);
  EXPECT_EQ(stage.communication, 0);
}

// A received gradient the backward alone reads is a communication buffer.
TEST(MemoryReport, ReceivedGradientIsACommunicationBuffer) {
  Artifact artifact = stageOf({0, 16}, {4, 4}, 32);
  addCommand(artifact, "recv", Phase::None, {}, {0});
  addCommand(artifact, "scale", Phase::Backward, {0}, {1});
  MemoryReport report;
  ASSERT_TRUE(computeMemoryReport(artifact, 4, report).isOk());
  EXPECT_EQ(report.stages[0].communication, 16);
  EXPECT_EQ(report.stages[0].stashed, 0);
}

// The peak is, of the commands that reach the region's top byte, the one
// with the most bytes live: the first to reach it holds one buffer there.
TEST(MemoryReport, PeakIsTheFullestCommandAtTheTop) {
  // 0: [0, 16) and 1: [48, 64) at command 0, then 0 freed; 2: [0, 16),
  // 3: [16, 32) and 4: [32, 48) beside 1 at command 2.
  Artifact artifact = stageOf({0, 48, 0, 16, 32}, {4, 4, 4, 4, 4}, 64);
  addCommand(artifact, "fill", Phase::Forward, {}, {0, 1});
  addCommand(artifact, "scale", Phase::Forward, {0}, {2});
  addCommand(artifact, "add", Phase::Forward, {1, 2}, {3, 4});
  addCommand(artifact, "add", Phase::Forward, {3, 4}, {2});
  MemoryReport report;
  ASSERT_TRUE(computeMemoryReport(artifact, 4, report).isOk());
  const StageMemory &stage = report.stages[0];
  EXPECT_EQ(stage.peakCommand, 2);
  EXPECT_EQ(stage.fragmentation, 0);
}

} // namespace
