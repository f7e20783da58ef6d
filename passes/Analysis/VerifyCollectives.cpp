//===- VerifyCollectives.cpp - Every rank issues matching collectives -----===//

#include "passes/Analysis/Passes.h"

#include "dialects/MTRT/IR/MTRTDialect.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/StringSet.h"

#include <deque>
#include <map>
#include <tuple>

#define DEBUG_TYPE "mt-verify-collectives"

namespace mlir::mt {
#define GEN_PASS_DEF_VERIFYCOLLECTIVESPASS
#include "passes/Analysis/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

bool isCollective(mtrt::KernelOp kernel) {
  static const llvm::StringSet<> names = {"all_reduce",      "reduce_scatter",
                                          "all_gather",      "all_slice",
                                          "expert_dispatch", "expert_combine"};
  return names.contains(kernel.getKernel());
}

int64_t gridAxisOf(mtrt::KernelOp kernel) {
  if (auto axis = kernel.getParams().getAs<IntegerAttr>("grid_axis"))
    return axis.getInt();
  return 0;
}

/// What must agree between ranks: the kernel, its parameters (reduction,
/// tensor axis, grid axis) and the types it reads and writes.
bool sameCollective(mtrt::KernelOp a, mtrt::KernelOp b) {
  return a.getKernel() == b.getKernel() && a.getParams() == b.getParams() &&
         a.getIns().getTypes() == b.getIns().getTypes() &&
         a.getOuts().getTypes() == b.getOuts().getTypes();
}

std::string describe(mtrt::KernelOp kernel) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << kernel.getKernel() << " on grid axis " << gridAxisOf(kernel) << " of ";
  llvm::interleaveComma(kernel.getIns().getTypes(), os);
  os << " -> ";
  llvm::interleaveComma(kernel.getOuts().getTypes(), os);
  os << " with " << kernel.getParams();
  return text;
}

/// What a program's rank does that another stage must answer: a send, a
/// receive, or a collective over the pipeline axis (whose group holds one
/// rank of every stage). Collectives over other axes stay within a stage,
/// whose ranks share one program: they match by construction.
struct CrossStageEvent {
  Operation *op;
  enum Kind { Send, Recv, Collective } kind;
  int64_t peer = -1, tag = -1;
};

std::string describeTransfer(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  int64_t tag = -1, peer = -1;
  std::optional<uint64_t> microbatch;
  Type type;
  if (auto send = dyn_cast<mtrt::SendOp>(op)) {
    os << "send to stage ";
    peer = send.getPeerStage(), tag = send.getTag();
    microbatch = send.getMicrobatch();
    type = send.getBuffer().getType();
  } else {
    auto recv = cast<mtrt::RecvOp>(op);
    os << "receive from stage ";
    peer = recv.getPeerStage(), tag = recv.getTag();
    microbatch = recv.getMicrobatch();
    type = recv.getBuffer().getType();
  }
  os << peer << " (tag " << tag;
  if (microbatch)
    os << ", microbatch " << *microbatch;
  os << ") of " << type;
  return text;
}

/// Simulates the stage programs in lockstep: a send never waits (the
/// runtime copies its bytes out), a receive waits for the send of its tag
/// from its peer, and a pipeline-axis collective waits for every stage.
/// Fails on a receive whose send differs in type, on receives in another
/// order than their peer's sends (NCCL matches in order), on a send nobody
/// receives, on collectives that do not match, and on a state where every
/// unfinished stage waits (a deadlock), naming the stages and ops.
LogicalResult verifyPipelineSchedule(ModuleOp module, ArrayRef<int64_t> shape) {
  auto programs = llvm::to_vector(module.getOps<mtrt::ProgramOp>());
  // Without a pipeline axis, one program serves every rank.
  constexpr int64_t kPipelineAxis = 0;
  int64_t stages = shape.size() == 3 ? shape[kPipelineAxis] : 1;
  std::vector<mtrt::ProgramOp> byStage(stages);
  for (auto program : programs) {
    int64_t stage = program.getStage();
    if (stage < 0 || stage >= stages)
      return program.emitOpError()
             << "is stage " << stage << " of a " << stages << "-stage pipeline";
    if (byStage[stage]) {
      InFlightDiagnostic diag = program.emitOpError()
                                << "is a second program for stage " << stage;
      diag.attachNote(byStage[stage].getLoc()) << "the first one is here";
      return failure();
    }
    byStage[stage] = program;
  }
  if (stages == 1)
    for (auto program : programs)
      for (Operation &op : program.getBody().front())
        if (isa<mtrt::SendOp, mtrt::RecvOp>(op))
          return op.emitOpError()
                 << "is a pipeline transfer on a grid without a pipeline axis";
  if (stages == 1)
    return success();
  std::vector<std::vector<CrossStageEvent>> events(stages);
  for (int64_t stage = 0; stage < stages; ++stage) {
    if (!byStage[stage])
      return module.emitError()
             << "mt-verify-collectives: no program for pipeline stage "
             << stage;
    for (Operation &op : byStage[stage].getBody().front()) {
      if (auto send = dyn_cast<mtrt::SendOp>(op))
        events[stage].push_back({&op, CrossStageEvent::Send,
                                 int64_t(send.getPeerStage()),
                                 int64_t(send.getTag())});
      else if (auto recv = dyn_cast<mtrt::RecvOp>(op))
        events[stage].push_back({&op, CrossStageEvent::Recv,
                                 int64_t(recv.getPeerStage()),
                                 int64_t(recv.getTag())});
      else if (auto kernel = dyn_cast<mtrt::KernelOp>(op);
               kernel && isCollective(kernel) &&
               gridAxisOf(kernel) == kPipelineAxis)
        events[stage].push_back({&op, CrossStageEvent::Collective});
    }
    for (const CrossStageEvent &event : events[stage])
      if (event.kind != CrossStageEvent::Collective &&
          (event.peer < 0 || event.peer >= stages || event.peer == stage))
        return event.op->emitOpError()
               << "of stage " << stage << " names peer stage " << event.peer
               << ", not another stage of the " << stages << "-stage pipeline";
  }
  // In-flight sends: (from, to, tag) -> the send; and per direction
  // (from, to), the sends in the order they were issued. NCCL matches a
  // direction's transfers in order, whatever their tags (MPI by tag), so a
  // program that runs on either must receive in the order of the sends.
  std::map<std::tuple<int64_t, int64_t, int64_t>, Operation *> inFlight;
  std::map<std::pair<int64_t, int64_t>, std::deque<Operation *>> sentInOrder;
  std::vector<size_t> next(stages, 0);
  while (true) {
    bool progress = false, done = true;
    for (int64_t stage = 0; stage < stages; ++stage) {
      while (next[stage] < events[stage].size()) {
        const CrossStageEvent &event = events[stage][next[stage]];
        if (event.kind == CrossStageEvent::Send) {
          auto key = std::make_tuple(stage, event.peer, event.tag);
          if (Operation *other = inFlight[key]) {
            InFlightDiagnostic diag = event.op->emitOpError()
                                      << "stage " << stage << " sends tag "
                                      << event.tag << " to stage " << event.peer
                                      << " twice";
            diag.attachNote(other->getLoc()) << "the first send is here";
            return failure();
          }
          inFlight[key] = event.op;
          sentInOrder[{stage, event.peer}].push_back(event.op);
        } else if (event.kind == CrossStageEvent::Recv) {
          std::deque<Operation *> &order = sentInOrder[{event.peer, stage}];
          if (order.empty())
            break;
          if (int64_t(cast<mtrt::SendOp>(order.front()).getTag()) !=
              event.tag) {
            InFlightDiagnostic diag =
                event.op->emitOpError()
                << "stage " << stage << "'s " << describeTransfer(event.op)
                << " is not the next transfer stage " << event.peer
                << " sends it, its " << describeTransfer(order.front())
                << ": the receives must come in the order of the sends (NCCL "
                   "matches each direction's transfers in order)";
            diag.attachNote(order.front()->getLoc())
                << "stage " << event.peer << "'s earlier send is here";
            return failure();
          }
          Operation *send = order.front();
          order.pop_front();
          Type sent = cast<mtrt::SendOp>(send).getBuffer().getType();
          Type received = cast<mtrt::RecvOp>(event.op).getBuffer().getType();
          if (sent != received) {
            InFlightDiagnostic diag = event.op->emitOpError()
                                      << "stage " << stage << "'s "
                                      << describeTransfer(event.op)
                                      << " does not match stage " << event.peer
                                      << "'s " << describeTransfer(send);
            diag.attachNote(send->getLoc())
                << "stage " << event.peer << "'s send is here";
            return failure();
          }
          inFlight.erase(std::make_tuple(event.peer, stage, event.tag));
        } else {
          // A pipeline-axis collective: every stage must be at one.
          bool all = true;
          for (int64_t other = 0; other < stages; ++other)
            all &=
                next[other] < events[other].size() &&
                events[other][next[other]].kind == CrossStageEvent::Collective;
          if (!all)
            break;
          auto first = cast<mtrt::KernelOp>(events[0][next[0]].op);
          for (int64_t other = 1; other < stages; ++other) {
            auto kernel = cast<mtrt::KernelOp>(events[other][next[other]].op);
            if (!sameCollective(first, kernel)) {
              InFlightDiagnostic diag =
                  kernel.emitOpError()
                  << "stage " << other << "'s collective (" << describe(kernel)
                  << ") does not match stage 0's (" << describe(first)
                  << "): the ranks would hang";
              diag.attachNote(first.getLoc()) << "stage 0's collective is here";
              return failure();
            }
          }
          for (int64_t other = 0; other < stages; ++other)
            if (other != stage)
              ++next[other];
        }
        ++next[stage];
        progress = true;
      }
      done &= next[stage] == events[stage].size();
    }
    if (done)
      break;
    if (progress)
      continue;
    // Every unfinished stage waits: name what each waits for.
    int64_t first = -1;
    for (int64_t stage = 0; stage < stages && first < 0; ++stage)
      if (next[stage] < events[stage].size())
        first = stage;
    const CrossStageEvent &blocked = events[first][next[first]];
    InFlightDiagnostic diag = blocked.op->emitOpError()
                              << "the pipeline schedule deadlocks: stage "
                              << first << " waits here";
    for (int64_t stage = 0; stage < stages; ++stage) {
      if (next[stage] >= events[stage].size() || stage == first)
        continue;
      const CrossStageEvent &event = events[stage][next[stage]];
      diag.attachNote(event.op->getLoc())
          << "while stage " << stage << " waits at its "
          << (event.kind == CrossStageEvent::Collective
                  ? std::string("pipeline-axis collective")
                  : describeTransfer(event.op));
    }
    if (blocked.kind != CrossStageEvent::Collective)
      diag << " for its " << describeTransfer(blocked.op);
    return failure();
  }
  for (auto &[key, send] : inFlight)
    if (send)
      return send->emitOpError()
             << "stage " << std::get<0>(key) << "'s " << describeTransfer(send)
             << " is never received";
  return success();
}

struct VerifyCollectivesPass
    : public mt::impl::VerifyCollectivesPassBase<VerifyCollectivesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Before mt-lower-to-runtime there is nothing to simulate: passing
    // would claim a proof that was never made.
    if (module.getOps<mtrt::ProgramOp>().empty()) {
      module.emitError()
          << "mt-verify-collectives checks the programs of "
             "mt-lower-to-runtime, and the module has none: run it after "
             "--mt-lower-to-runtime (--mt-train-pipeline runs it last)";
      return signalPassFailure();
    }
    auto grids = llvm::to_vector(module.getOps<shard::GridOp>());
    if (grids.empty())
      return;
    ArrayRef<int64_t> shape = grids.front().getShape();
    if (failed(checkProgramsAgainstGrid(module, shape)))
      return signalPassFailure();
    if (failed(verifyPipelineSchedule(module, shape)))
      return signalPassFailure();
  }

  /// Every collective names an axis of the grid.
  LogicalResult checkProgramsAgainstGrid(ModuleOp module,
                                         ArrayRef<int64_t> shape) {
    for (auto program : module.getOps<mtrt::ProgramOp>())
      for (auto kernel : program.getOps<mtrt::KernelOp>())
        if (isCollective(kernel) &&
            (gridAxisOf(kernel) < 0 ||
             gridAxisOf(kernel) >= int64_t(shape.size())))
          return kernel.emitOpError()
                 << "runs on grid axis " << gridAxisOf(kernel)
                 << ", not an axis of the " << shape.size() << "-axis grid";
    return success();
  }
};
} // namespace
