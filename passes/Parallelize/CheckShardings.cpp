//===- CheckShardings.cpp - Shardings upstream partition can handle -------===//
//
// Upstream `shard-partition` (MLIR 22) assumes every argument and op of an
// annotated function is used (an op at least through one of its results),
// and that a value annotated with `shard.shard` is read
// only through annotations. Hand-written IR breaks both easily and the
// partition then crashes; this check turns each case into a diagnostic at
// the value, before the partition runs.
//
//===----------------------------------------------------------------------===//

#include "passes/Parallelize/Passes.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::mt {
#define GEN_PASS_DEF_CHECKSHARDINGSPASS
#include "passes/Parallelize/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

/// "argument #1 of @f" or "result #0 of 'mt.gelu'".
std::string describe(Value value, func::FuncOp function) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return "argument #" + std::to_string(arg.getArgNumber()) + " of @" +
           function.getName().str();
  auto result = cast<OpResult>(value);
  return "result #" + std::to_string(result.getResultNumber()) + " of '" +
         result.getOwner()->getName().getStringRef().str() + "'";
}

struct CheckShardingsPass
    : public mt::impl::CheckShardingsPassBase<CheckShardingsPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal() || function.getOps<shard::ShardOp>().empty())
      return;
    bool ok = true;
    auto check = [&](Value value, Location loc) {
      if (!isa<RankedTensorType>(value.getType()) || value.use_empty())
        return;
      bool annotated = false;
      Operation *raw = nullptr;
      for (Operation *user : value.getUsers()) {
        if (isa<shard::ShardOp>(user))
          annotated = true;
        else if (!raw)
          raw = user;
      }
      if (annotated && raw) {
        InFlightDiagnostic diag =
            emitError(loc) << describe(value, function)
                           << " is annotated by shard.shard but also read "
                              "directly by '"
                           << raw->getName()
                           << "': upstream shard-partition cannot partition "
                              "that; annotate every use or none";
        diag.attachNote(raw->getLoc()) << "read here";
        ok = false;
      }
    };
    for (BlockArgument arg : function.getArguments()) {
      if (arg.use_empty()) {
        emitError(arg.getLoc())
            << describe(arg, function)
            << " has no use: upstream shard-partition cannot partition a "
               "sharded function with unused arguments; remove it";
        ok = false;
      }
      check(arg, arg.getLoc());
    }
    function.walk([&](Operation *op) {
      // An op some of whose results are unused partitions; one none of
      // whose results is used does not.
      if (op->getNumResults() > 0 && op->use_empty() &&
          llvm::any_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>)) {
        op->emitError() << "'" << op->getName()
                        << "' has no used result: upstream shard-partition "
                           "cannot partition a sharded function with dead "
                           "ops; remove it";
        ok = false;
      }
      for (Value result : op->getResults())
        check(result, op->getLoc());
    });
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
