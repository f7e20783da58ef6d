//===- AsyncJoins.cpp - Awaiting commands run beside a stream -------------===//

#include "mtrt/AsyncJoins.h"

#include <algorithm>
#include <utility>

using namespace mtrt;

namespace {
/// The arena bytes [begin, end) a command's operands cover.
using ByteRange = std::pair<int64_t, int64_t>;

std::vector<ByteRange> rangesOf(const RankProgram &program,
                                const Command &command) {
  std::vector<ByteRange> ranges;
  for (const auto *ids : {&command.ins, &command.outs})
    for (int64_t id : *ids) {
      const BufferDesc &buffer = program.buffers[size_t(id)];
      if (buffer.bytes() > 0)
        ranges.push_back({buffer.offset, buffer.offset + buffer.bytes()});
    }
  return ranges;
}

bool overlap(const std::vector<ByteRange> &a, const std::vector<ByteRange> &b) {
  for (const ByteRange &x : a)
    for (const ByteRange &y : b)
      if (x.first < y.second && y.first < x.second)
        return true;
  return false;
}
} // namespace

AsyncJoins mtrt::planAsyncJoins(const RankProgram &program,
                                const std::vector<bool> &async) {
  const size_t count = program.commands.size();
  AsyncJoins joins;
  joins.before.resize(count);
  std::vector<std::vector<ByteRange>> ranges(count);
  for (size_t i = 0; i < count; ++i)
    ranges[i] = rangesOf(program, program.commands[i]);
  for (size_t i = 0; i < count; ++i) {
    if (i >= async.size() || !async[i])
      continue;
    size_t j = i + 1;
    while (j < count && !overlap(ranges[i], ranges[j]))
      ++j;
    if (j < count)
      joins.before[j].push_back(i);
    else
      joins.atEnd.push_back(i);
  }
  return joins;
}
