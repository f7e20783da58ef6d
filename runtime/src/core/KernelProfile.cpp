//===- KernelProfile.cpp - Where a rank's step time goes ------------------===//

#include "mtrt/KernelProfile.h"

#include "mtrt/KernelSignatures.h"

#include "mtrt/HeadLayout.h"
#include "mtrt/Kernels.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

using namespace mtrt;

double mtrt::commandFlops(const RankProgram &program, const Command &command) {
  auto shape = [&](int64_t id) -> const std::vector<int64_t> & {
    return program.buffers[size_t(id)].shape;
  };
  auto elements = [&](int64_t id) {
    return double(program.buffers[size_t(id)].numElements());
  };
  const KernelInfo *kernel = findKernel(command.kernel);
  if (kernel && isGemm(kernel->id) && command.ins.size() >= 2 &&
      !command.outs.empty()) {
    const std::vector<int64_t> &lhs = shape(command.ins[0]);
    if (lhs.size() < 2)
      return 0;
    double k = double(command.get("transpose_a", 0) != 0 ? lhs[lhs.size() - 2]
                                                         : lhs.back());
    return 2.0 * elements(command.outs[0]) * k;
  }
  if (kernel && isAttention(kernel->id)) {
    // Scores and the weighted sum, 2·d FLOPs each per query row and key it
    // is counted against (the sequence, or a sliding window under it); the
    // backward does twice the forward.
    AttentionKind kind = attentionKind(kernel->id);
    if (command.ins.size() <= kind.keyInput())
      return 0;
    const std::vector<int64_t> &query = shape(command.ins[kind.queryInput()]);
    const std::vector<int64_t> &key = shape(command.ins[kind.keyInput()]);
    int64_t heads = std::max<int64_t>(1, int64_t(command.get("heads", 1)));
    if (query.size() != (kind.fusedQKV ? 3u : 4u) || key.size() < 2)
      return 0;
    AttentionExtent extent = AttentionExtent::of(query, key, kind.fusedQKV,
                                                 kind.mergedOutput, heads);
    const auto window = int64_t(command.get("window", 0));
    double keys =
        double(window > 0 ? std::min(extent.seq, window) : extent.seq);
    double forward = 4.0 * double(extent.batch * extent.heads) *
                     double(extent.seq) * keys * double(extent.headDim);
    return kind.forward ? forward : 2.0 * forward;
  }
  if (command.kernel == "fused" && command.has("generated")) {
    auto index = size_t(command.get("generated", 0));
    if (index < program.generatedKernels.size()) {
      const GeneratedKernel &kernel = program.generatedKernels[index];
      return double(kernel.flopsPerElement) * double(kernel.elements) *
             double(std::max<int64_t>(1, kernel.rowLength));
    }
  }
  double total = 0;
  for (int64_t out : command.outs)
    total += elements(out);
  return total;
}

double mtrt::commandBytes(const RankProgram &program, const Command &command) {
  // A multi_adamw's 16-bit parameter copies (its last inputs) are only
  // written: counted once, as outputs.
  size_t ins = command.ins.size();
  if (command.kernel == "multi_adamw")
    ins -= std::min(ins, MultiAdamWLayout(command).copies);
  std::set<int64_t> operands(command.ins.begin(),
                             command.ins.begin() + std::ptrdiff_t(ins));
  operands.insert(command.outs.begin(), command.outs.end());
  double bytes = 0;
  for (int64_t id : operands)
    bytes += double(program.buffers[size_t(id)].bytes());
  return bytes;
}

namespace {
/// The events of steps after `skipSteps`, summed per step by `keyOf`
/// (which returns false for a command left out and names its row),
/// largest time first; `stepsCounted` is how many steps they span.
template <typename KeyOf>
std::vector<KernelProfileRow>
sumByKey(const RankProgram &program,
         const std::vector<ExecutionTrace::Event> &events, int64_t skipSteps,
         int64_t &stepsCounted, KeyOf keyOf) {
  std::map<std::string, KernelProfileRow> byKey;
  std::set<int64_t> steps;
  for (const ExecutionTrace::Event &event : events) {
    if (event.step <= skipSteps || event.command < 0 ||
        size_t(event.command) >= program.commands.size())
      continue;
    steps.insert(event.step);
    const Command &command = program.commands[size_t(event.command)];
    KernelProfileRow named;
    if (!keyOf(command, named))
      continue;
    KernelProfileRow &row = byKey[named.kernel];
    row.kernel = named.kernel;
    row.calls += 1;
    row.seconds += (event.endUs - event.beginUs) * 1e-6;
    row.flops += commandFlops(program, command);
    row.bytes += commandBytes(program, command);
  }
  stepsCounted = int64_t(steps.size());
  std::vector<KernelProfileRow> rows;
  for (auto &[key, row] : byKey) {
    double n = double(std::max<int64_t>(stepsCounted, 1));
    row.calls /= n;
    row.seconds /= n;
    row.flops /= n;
    row.bytes /= n;
    rows.push_back(row);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const KernelProfileRow &a, const KernelProfileRow &b) {
                     return a.seconds > b.seconds;
                   });
  return rows;
}

/// The ops of generated kernel `name`: its heading in the program's
/// source ("// <name>: mt.bias_add, mt.gelu"), without the dialect's
/// prefix; "" if the source has none.
std::string generatedKernelOps(const RankProgram &program,
                               const std::string &name) {
  const std::string heading = "// " + name + ": ";
  size_t at = program.kernelSource.find("\n" + heading);
  if (at == std::string::npos)
    return "";
  at += 1 + heading.size();
  size_t end = program.kernelSource.find('\n', at);
  std::string ops = program.kernelSource.substr(
      at, end == std::string::npos ? std::string::npos : end - at);
  for (size_t prefix; (prefix = ops.find("mt.")) != std::string::npos;)
    ops.erase(prefix, 3);
  return ops;
}
} // namespace

std::vector<KernelProfileRow>
mtrt::profileKernels(const RankProgram &program,
                     const std::vector<ExecutionTrace::Event> &events,
                     int64_t skipSteps, int64_t &stepsCounted) {
  return sumByKey(program, events, skipSteps, stepsCounted,
                  [](const Command &command, KernelProfileRow &row) {
                    row.kernel = command.kernel;
                    return true;
                  });
}

std::vector<KernelProfileRow>
mtrt::profileGeneratedKernels(const RankProgram &program,
                              const std::vector<ExecutionTrace::Event> &events,
                              int64_t skipSteps) {
  int64_t counted = 0;
  return sumByKey(program, events, skipSteps, counted,
                  [&](const Command &command, KernelProfileRow &row) {
                    if (command.kernel != "fused" || !command.has("generated"))
                      return false;
                    auto index = size_t(command.get("generated", -1));
                    if (index >= program.generatedKernels.size())
                      return false;
                    // Kernels of the same ops and shape (one per layer)
                    // share a row.
                    const std::string &name =
                        program.generatedKernels[index].name;
                    std::string ops = generatedKernelOps(program, name);
                    row.kernel = ops.empty() ? name : ops;
                    return true;
                  });
}

std::string mtrt::formatKernelProfile(const std::vector<KernelProfileRow> &rows,
                                      int64_t steps, size_t top) {
  double total = 0;
  for (const KernelProfileRow &row : rows)
    total += row.seconds;
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof(line),
                "profile: %lld step%s, per step (rank 0)\n"
                "  %-22s %8s %10s %7s %10s %9s\n",
                static_cast<long long>(steps), steps == 1 ? "" : "s", "kernel",
                "calls", "ms", "share", "GFLOP/s", "GB/s");
  os << line;
  auto print = [&](const KernelProfileRow &row) {
    double share = total > 0 ? row.seconds / total : 0;
    double seconds = std::max(row.seconds, 1e-12);
    std::snprintf(
        line, sizeof(line), "  %-22s %8.0f %10.3f %6.1f%% %10.2f %9.2f\n",
        row.kernel.c_str(), row.calls, row.seconds * 1e3, 100.0 * share,
        row.flops / seconds * 1e-9, row.bytes / seconds * 1e-9);
    os << line;
  };
  auto add = [](KernelProfileRow &sum, const KernelProfileRow &row) {
    sum.calls += row.calls;
    sum.seconds += row.seconds;
    sum.flops += row.flops;
    sum.bytes += row.bytes;
  };
  KernelProfileRow rest, all;
  rest.kernel = "(the rest)";
  all.kernel = "all commands";
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i < top)
      print(rows[i]);
    else
      add(rest, rows[i]);
    add(all, rows[i]);
  }
  if (rest.calls > 0)
    print(rest);
  print(all);
  return os.str();
}

std::string
mtrt::formatGeneratedKernelProfile(const std::vector<KernelProfileRow> &rows,
                                   size_t top) {
  if (rows.empty())
    return "";
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof(line),
                "fused, by ops: the %zu largest of %zu kinds\n"
                "  %8s %10s %9s  %s\n",
                std::min(top, rows.size()), rows.size(), "calls", "ms", "GB/s",
                "ops");
  os << line;
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const KernelProfileRow &row = rows[i];
    std::snprintf(line, sizeof(line), "  %8.0f %10.3f %9.2f  ", row.calls,
                  row.seconds * 1e3,
                  row.bytes / std::max(row.seconds, 1e-12) * 1e-9);
    os << line << row.kernel << "\n";
  }
  return os.str();
}
