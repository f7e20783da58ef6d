//===- ExecutionTrace.cpp - Measured timeline of a rank's commands --------===//

#include "mtrt/ExecutionTrace.h"

#include "mtrt/KernelProfile.h"

#include <nlohmann/json.hpp>

using namespace mtrt;
using json = nlohmann::json;

namespace {

/// Chrome trace rows ("threads") of each rank.
constexpr int kScheduleRow = 0;
constexpr int kCommandRow = 1;
constexpr int kBesideRow = 2;

bool isTransfer(const Command &command) {
  return command.kernel == "send" || command.kernel == "recv";
}

/// The schedule slice's name: F3, B3, optimizer (F and B in a step not
/// split into microbatches), and F3.1 for chunk 1 under the interleaved
/// schedule, as mt-pipeline's print-schedule names them.
std::string actionName(const Command &command) {
  std::string microbatch =
      command.microbatch >= 0 ? std::to_string(command.microbatch) : "";
  if (command.chunk >= 0)
    microbatch += "." + std::to_string(command.chunk);
  switch (command.phase) {
  case Phase::Forward:
    return "F" + microbatch;
  case Phase::Backward:
    return "B" + microbatch;
  case Phase::Optimizer:
    return "optimizer";
  case Phase::None:
    break;
  }
  return "step";
}

json slice(const std::string &name, const char *category, int64_t rank, int row,
           double begin, double end, json args) {
  return {{"name", name}, {"cat", category},        {"ph", "X"},
          {"ts", begin},  {"dur", end - begin},     {"pid", rank},
          {"tid", row},   {"args", std::move(args)}};
}

json metadata(const char *what, int64_t rank, int row,
              const std::string &name) {
  json event = {
      {"name", what}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", name}}}};
  if (row >= 0)
    event["tid"] = row;
  return event;
}

} // namespace

std::string ExecutionTrace::chromeEvents(const RankProgram &program,
                                         int64_t rank,
                                         const std::string &label) const {
  json out = json::array();
  out.push_back(metadata("process_name", rank, -1, label));
  out.push_back({{"name", "process_sort_index"},
                 {"ph", "M"},
                 {"pid", rank},
                 {"args", {{"sort_index", rank}}}});
  out.push_back(metadata("thread_name", rank, kScheduleRow, "schedule"));
  out.push_back(metadata("thread_name", rank, kCommandRow, "commands"));
  for (const Event &event : events)
    if (event.beside) {
      out.push_back(metadata("thread_name", rank, kBesideRow, "communication"));
      break;
    }

  // A schedule slice spans consecutive kernels of one action; a transfer
  // ends it (the wait is not the action's work).
  std::string action;
  double actionBegin = 0, actionEnd = 0;
  int64_t actionStep = 0;
  auto closeAction = [&]() {
    if (!action.empty())
      out.push_back(slice(action, "schedule", rank, kScheduleRow, actionBegin,
                          actionEnd, {{"step", actionStep}}));
    action.clear();
  };
  for (const Event &event : events) {
    const Command &command = program.commands[size_t(event.command)];
    // The work the command did (mtrt/KernelProfile.h), so a slice's rate
    // can be read off in the trace viewer.
    json args = {{"step", event.step},
                 {"command", event.command},
                 {"flops", commandFlops(program, command)},
                 {"bytes", commandBytes(program, command)}};
    if (command.layer >= 0)
      args["layer"] = command.layer;
    if (command.microbatch >= 0)
      args["microbatch"] = command.microbatch;
    if (command.chunk >= 0)
      args["chunk"] = command.chunk;
    if (isTransfer(command)) {
      args["tag"] = int64_t(command.get("tag", -1));
      args["peer_stage"] = int64_t(command.get("peer_stage", -1));
    }
    const char *category = isTransfer(command) ? "transfer"
                           : command.phase == Phase::None
                               ? "step"
                               : phaseName(command.phase);
    out.push_back(slice(command.kernel, category, rank,
                        event.beside ? kBesideRow : kCommandRow, event.beginUs,
                        event.endUs, std::move(args)));
    // Beside the action's commands, it neither extends nor ends it.
    if (event.beside)
      continue;
    if (isTransfer(command)) {
      closeAction();
      continue;
    }
    // A command of no stated phase (a program compiled without a schedule
    // states none) belongs to no action.
    if (command.phase == Phase::None)
      continue;
    std::string name = actionName(command);
    if (name != action || event.step != actionStep) {
      closeAction();
      action = name;
      actionStep = event.step;
      actionBegin = event.beginUs;
    }
    actionEnd = event.endUs;
  }
  closeAction();

  std::string text = out.dump();
  // The array's elements only: rank 0 joins every rank's fragment.
  return text.size() > 2 ? text.substr(1, text.size() - 2) : std::string();
}

std::string
ExecutionTrace::chromeDocument(const std::vector<std::string> &fragments) {
  std::string text = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  bool first = true;
  for (const std::string &fragment : fragments) {
    if (fragment.empty())
      continue;
    if (!first)
      text += ",\n";
    text += fragment;
    first = false;
  }
  text += "]}\n";
  return text;
}
