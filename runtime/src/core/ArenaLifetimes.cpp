//===- ArenaLifetimes.cpp - Buffers live together do not overlap ----------===//

#include "mtrt/ArenaLifetimes.h"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

using namespace mtrt;

bool mtrt::isPersistentKind(const std::string &kind) {
  return kind == "param" || kind == "param_copy" || kind == "exp_avg" ||
         kind == "exp_avg_sq" || kind == "input";
}

Status mtrt::buildArenaTimeline(const RankProgram &program,
                                ArenaTimeline &timeline) {
  const std::vector<BufferDesc> &buffers = program.buffers;
  int64_t steps = int64_t(program.commands.size());
  auto persistent = [&](size_t id) {
    return isPersistentKind(buffers[id].kind);
  };

  // Allocations, found in program order. A buffer that is not an alias is
  // its own allocation, written by the first command that names it. An
  // alias joins the allocation that holds its bytes, kind and name at that
  // moment (a reshaped view of an activation), and so does the output alias
  // of a command that updates one of its inputs in place (AdamW); the
  // output alias of any other command defines its bytes afresh (a receive
  // into an empty tensor) and starts an allocation.
  using Key = std::tuple<int64_t, int64_t, std::string, std::string>;
  auto keyOf = [&](size_t id) {
    const BufferDesc &buffer = buffers[id];
    return Key{buffer.offset, buffer.bytes(), buffer.kind, buffer.name};
  };
  std::map<Key, size_t> holder;
  std::vector<int64_t> &owner = timeline.owner, &begin = timeline.begin,
                       &end = timeline.end;
  owner.assign(buffers.size(), -1);
  begin.assign(buffers.size(), -1);
  end.assign(buffers.size(), -1);
  for (size_t id = 0; id < buffers.size(); ++id)
    if (!buffers[id].alias && persistent(id)) {
      owner[id] = int64_t(id);
      end[id] = steps;
      holder[keyOf(id)] = id;
    }
  for (int64_t c = 0; c < steps; ++c) {
    const Command &command = program.commands[size_t(c)];
    auto use = [&](size_t o) { end[o] = std::max(end[o], c); };
    for (int64_t in : command.ins) {
      size_t id = size_t(in);
      if (owner[id] < 0 && !buffers[id].alias)
        return Status::error("command " + std::to_string(c) + " (" +
                             command.kernel + ") reads buffer " +
                             std::to_string(id) +
                             " before any command writes it");
      if (owner[id] < 0) {
        auto held = holder.find(keyOf(id));
        if (held == holder.end())
          return Status::error("command " + std::to_string(c) + " (" +
                               command.kernel + ") reads alias buffer " +
                               std::to_string(id) +
                               ", a view of bytes no buffer holds yet");
        owner[id] = int64_t(held->second);
      }
      use(size_t(owner[id]));
    }
    for (int64_t out : command.outs) {
      size_t id = size_t(out);
      if (owner[id] < 0) {
        auto held = holder.find(keyOf(id));
        bool inPlace =
            held != holder.end() &&
            (persistent(held->second) ||
             std::any_of(command.ins.begin(), command.ins.end(),
                         [&](int64_t in) {
                           return owner[size_t(in)] == int64_t(held->second);
                         }));
        if (buffers[id].alias && inPlace)
          owner[id] = int64_t(held->second);
        else {
          owner[id] = int64_t(id);
          begin[id] = c;
          if (buffers[id].alias && persistent(id))
            return Status::error("command " + std::to_string(c) + " (" +
                                 command.kernel + ") writes alias buffer " +
                                 std::to_string(id) + " of " +
                                 buffers[id].kind + " '" + buffers[id].name +
                                 "', which no buffer holds");
          holder[keyOf(id)] = id;
        }
      }
      use(size_t(owner[id]));
    }
  }
  // The step's outputs (the loss) are read after its last command.
  for (const auto &[role, id] : program.outputs)
    if (owner[size_t(id)] >= 0)
      end[size_t(owner[size_t(id)])] = steps;
  return Status::ok();
}

Status mtrt::checkArenaLifetimes(const RankProgram &program) {
  const std::vector<BufferDesc> &buffers = program.buffers;
  auto persistent = [&](size_t id) {
    return isPersistentKind(buffers[id].kind);
  };
  ArenaTimeline timeline;
  MTRT_RETURN_IF_ERROR(buildArenaTimeline(program, timeline));
  const std::vector<int64_t> &owner = timeline.owner, &begin = timeline.begin,
                             &end = timeline.end;

  // The persistent region first: a persistent_bytes too small for the
  // persistent buffers is the program's fault, not the first buffer's.
  size_t furthest = buffers.size();
  for (size_t id = 0; id < buffers.size(); ++id)
    if (!buffers[id].alias && persistent(id) &&
        (furthest == buffers.size() ||
         buffers[id].offset + buffers[id].bytes() >
             buffers[furthest].offset + buffers[furthest].bytes()))
      furthest = id;
  if (furthest != buffers.size() &&
      buffers[furthest].offset + buffers[furthest].bytes() >
          program.persistentBytes)
    return Status::error(
        "persistent_bytes is " + std::to_string(program.persistentBytes) +
        ", but the persistent buffers reach byte " +
        std::to_string(buffers[furthest].offset + buffers[furthest].bytes()) +
        " (buffer " + std::to_string(furthest) + ", '" +
        buffers[furthest].name + "', " + buffers[furthest].kind + ")");
  // Placement: persistent buffers before persistentBytes, transients after.
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferDesc &buffer = buffers[id];
    if (buffer.alias)
      continue;
    bool inside = persistent(id) ? buffer.offset + buffer.bytes() <=
                                       program.persistentBytes
                                 : buffer.offset >= program.persistentBytes;
    if (!inside)
      return Status::error("buffer " + std::to_string(id) + " ('" +
                           buffer.name + "', " + buffer.kind + ") at bytes [" +
                           std::to_string(buffer.offset) + ", " +
                           std::to_string(buffer.offset + buffer.bytes()) +
                           ") lies " + (persistent(id) ? "outside" : "inside") +
                           " the persistent region [0, " +
                           std::to_string(program.persistentBytes) + ")");
  }

  // Sweep the allocations in order of definition; `live` holds the byte
  // ranges of those still live, which must not overlap.
  std::vector<size_t> order;
  for (size_t id = 0; id < buffers.size(); ++id)
    if (owner[id] == int64_t(id))
      order.push_back(id);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return begin[a] < begin[b]; });
  std::map<int64_t, size_t> live; // offset -> allocation
  using Expiry = std::pair<int64_t, size_t>;
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>>
      expiring;
  auto overlapError = [&](size_t a, size_t b) {
    const BufferDesc &x = buffers[a], &y = buffers[b];
    int64_t from = std::max(x.offset, y.offset);
    int64_t to = std::min(x.offset + x.bytes(), y.offset + y.bytes());
    auto describe = [&](size_t id) {
      const BufferDesc &buffer = buffers[id];
      return std::to_string(id) + " (" + buffer.kind +
             (buffer.name.empty() ? "" : " '" + buffer.name + "'") + ", live " +
             (persistent(id) ? std::string("the whole step")
                             : "commands " + std::to_string(begin[id]) +
                                   " to " + std::to_string(end[id])) +
             ")";
    };
    return Status::error("buffers " + describe(a) + " and " + describe(b) +
                         " share bytes [" + std::to_string(from) + ", " +
                         std::to_string(to) + ")");
  };
  for (size_t id : order) {
    while (!expiring.empty() && expiring.top().first < begin[id]) {
      size_t gone = expiring.top().second;
      expiring.pop();
      auto it = live.find(buffers[gone].offset);
      if (it != live.end() && it->second == gone)
        live.erase(it);
    }
    const BufferDesc &buffer = buffers[id];
    auto next = live.lower_bound(buffer.offset);
    if (next != live.end() && next->first < buffer.offset + buffer.bytes())
      return overlapError(next->second, id);
    if (next != live.begin()) {
      auto previous = std::prev(next);
      if (buffers[previous->second].offset + buffers[previous->second].bytes() >
          buffer.offset)
        return overlapError(previous->second, id);
    }
    live[buffer.offset] = id;
    expiring.push({end[id], id});
  }
  return Status::ok();
}
