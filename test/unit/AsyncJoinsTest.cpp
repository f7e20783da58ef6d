//===- AsyncJoinsTest.cpp - Where an asynchronous command is awaited ------===//

#include "mtrt/AsyncJoins.h"

#include "ProgramOf.h"

#include <gtest/gtest.h>

using namespace mtrt;

namespace {

void addCommand(RankProgram &program, const char *kernel,
                std::vector<int64_t> ins, std::vector<int64_t> outs) {
  Command command;
  command.kernel = kernel;
  command.ins = std::move(ins);
  command.outs = std::move(outs);
  program.commands.push_back(command);
}

// A gradient all-reduced in place while the backward goes on: awaited by
// its first reader (the optimizer), not by the commands between.
TEST(AsyncJoins, AwaitedByTheFirstReaderOfItsResult) {
  // 0: grad [0, 16); 1: activation [16, 48); 2: other grad [48, 64).
  RankProgram program = programOf({0, 16, 48}, {4, 8, 4});
  addCommand(program, "matmul", {1}, {0});     // 0: the gradient
  addCommand(program, "all_reduce", {0}, {0}); // 1: async
  addCommand(program, "matmul", {1}, {2});     // 2: unrelated
  addCommand(program, "adamw", {0, 2}, {0});   // 3: reads the gradient
  AsyncJoins joins = planAsyncJoins(program, {false, true, false, false});
  ASSERT_EQ(joins.before.size(), 4u);
  EXPECT_TRUE(joins.before[2].empty());
  EXPECT_EQ(joins.before[3], std::vector<size_t>{1});
  EXPECT_TRUE(joins.atEnd.empty());
}

// The memory plan reuses a dead operand's bytes: the command that writes
// over them waits, even though it reads nothing the collective wrote.
TEST(AsyncJoins, AwaitedByACommandReusingItsBytes) {
  // 0: input [0, 32); 1: output [32, 48); 2: a later buffer over [8, 24).
  RankProgram program = programOf({0, 32, 8}, {8, 4, 4});
  addCommand(program, "reduce_scatter", {0}, {1}); // 0: async
  addCommand(program, "fill", {}, {2});            // 1: writes input bytes
  addCommand(program, "adamw", {1}, {1});          // 2
  AsyncJoins joins = planAsyncJoins(program, {true, false, false});
  EXPECT_EQ(joins.before[1], std::vector<size_t>{0});
  EXPECT_TRUE(joins.before[2].empty());
}

// Touched by nothing later (the step's loss): awaited at the step's end.
TEST(AsyncJoins, UntouchedResultsAreAwaitedAtTheEnd) {
  RankProgram program = programOf({0, 4, 8}, {1, 1, 1});
  addCommand(program, "all_reduce", {0}, {0}); // 0: async
  addCommand(program, "fill", {}, {1});        // 1
  addCommand(program, "all_reduce", {2}, {2}); // 2: async
  AsyncJoins joins = planAsyncJoins(program, {true, false, true});
  EXPECT_EQ(joins.atEnd, (std::vector<size_t>{0, 2}));
  for (const auto &waits : joins.before)
    EXPECT_TRUE(waits.empty());
}

// Adjacent byte ranges do not overlap; empty buffers cover no bytes.
TEST(AsyncJoins, AdjacentAndEmptyBuffersDoNotOverlap) {
  RankProgram program = programOf({0, 16, 8}, {4, 4, 0});
  addCommand(program, "all_reduce", {0}, {0}); // 0: async, [0, 16)
  addCommand(program, "fill", {}, {1});        // 1: [16, 32)
  addCommand(program, "fill", {}, {2});        // 2: empty, at 8
  AsyncJoins joins = planAsyncJoins(program, {true, false, false});
  EXPECT_TRUE(joins.before[1].empty());
  EXPECT_TRUE(joins.before[2].empty());
  EXPECT_EQ(joins.atEnd, std::vector<size_t>{0});
}

} // namespace
