//===- ExecutionTraceTest.cpp - The Chrome trace's rows -------------------===//

#include "mtrt/ExecutionTrace.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

using namespace mtrt;
using json = nlohmann::json;

namespace {

RankProgram
programOf(const std::vector<std::pair<const char *, Phase>> &commands) {
  RankProgram program;
  BufferDesc buffer;
  buffer.id = 0;
  buffer.shape = {4};
  program.buffers.push_back(buffer);
  for (auto [kernel, phase] : commands) {
    Command command;
    command.kernel = kernel;
    command.phase = phase;
    command.microbatch = 0;
    command.ins = {0};
    command.outs = {0};
    program.commands.push_back(command);
  }
  return program;
}

json eventsOf(const ExecutionTrace &trace, const RankProgram &program) {
  return json::parse("[" + trace.chromeEvents(program, 0, "rank 0") + "]");
}

/// The slices ("X" events) of row `tid`, by name.
std::vector<std::string> slicesOf(const json &events, int tid) {
  std::vector<std::string> names;
  for (const json &event : events)
    if (event["ph"] == "X" && event["tid"] == tid)
      names.push_back(event["name"]);
  return names;
}

// A collective that ran beside the backward (the CUDA backend's overlapped
// all-reduce) gets a "communication" row of its own; the backward's action
// spans the commands around it as one slice.
TEST(ExecutionTrace, CommandsBesideTheOthersHaveARowOfTheirOwn) {
  RankProgram program = programOf({{"matmul", Phase::Backward},
                                   {"all_reduce", Phase::Backward},
                                   {"matmul", Phase::Backward}});
  ExecutionTrace trace;
  trace.record(1, 0, 0, 10);
  trace.record(1, 1, 10, 40, /*beside=*/true);
  trace.record(1, 2, 10, 20);
  json events = eventsOf(trace, program);
  bool named = false;
  for (const json &event : events)
    named |= event["ph"] == "M" && event["name"] == "thread_name" &&
             event["tid"] == 2 && event["args"]["name"] == "communication";
  EXPECT_TRUE(named);
  EXPECT_EQ(slicesOf(events, 1),
            (std::vector<std::string>{"matmul", "matmul"}));
  EXPECT_EQ(slicesOf(events, 2), (std::vector<std::string>{"all_reduce"}));
  // One backward action, from the first matmul's start to the second's end.
  int actions = 0;
  for (const json &event : events)
    if (event["ph"] == "X" && event["tid"] == 0) {
      ++actions;
      EXPECT_EQ(event["name"], "B0");
      EXPECT_EQ(event["ts"], 0.0);
      EXPECT_EQ(event["dur"], 20.0);
    }
  EXPECT_EQ(actions, 1);
}

// Without such commands there is no third row.
TEST(ExecutionTrace, NoCommunicationRowWithoutCommandsBeside) {
  RankProgram program = programOf({{"matmul", Phase::Forward}});
  ExecutionTrace trace;
  trace.record(1, 0, 0, 10);
  for (const json &event : eventsOf(trace, program))
    EXPECT_FALSE(event.contains("tid") && event["tid"] == 2);
}

} // namespace
