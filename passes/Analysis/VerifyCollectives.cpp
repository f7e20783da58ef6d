//===- VerifyCollectives.cpp - Every rank issues matching collectives -----===//

#include "passes/Analysis/Passes.h"

#include "dialects/MTRT/IR/MTRTDialect.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "mt-verify-collectives"

namespace mlir::mt {
#define GEN_PASS_DEF_VERIFYCOLLECTIVESPASS
#include "passes/Analysis/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

bool isCollective(mtrt::KernelOp kernel) {
  static const llvm::StringSet<> names = {"all_reduce", "reduce_scatter",
                                          "all_gather", "all_slice"};
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

struct VerifyCollectivesPass
    : public mt::impl::VerifyCollectivesPassBase<VerifyCollectivesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto grids = llvm::to_vector(module.getOps<shard::GridOp>());
    if (grids.empty())
      return;
    ArrayRef<int64_t> shape = grids.front().getShape();
    // Rank programs by coordinates.
    std::map<std::vector<int64_t>, mtrt::ProgramOp> byCoords;
    for (auto program : module.getOps<mtrt::ProgramOp>()) {
      auto coords = program.getCoordsAttr();
      if (!coords || coords.size() != int64_t(shape.size())) {
        program.emitOpError() << "has no coordinates on the " << shape.size()
                              << "-axis device grid";
        return signalPassFailure();
      }
      std::vector<int64_t> key(coords.asArrayRef().begin(),
                               coords.asArrayRef().end());
      for (size_t axis = 0; axis < key.size(); ++axis)
        if (key[axis] < 0 || key[axis] >= shape[axis]) {
          program.emitOpError()
              << "has coordinate " << key[axis] << " on grid axis " << axis
              << ", outside the grid's " << shape[axis];
          return signalPassFailure();
        }
      auto [it, inserted] = byCoords.try_emplace(key, program);
      if (!inserted) {
        InFlightDiagnostic diag = program.emitOpError()
                                  << "has the same coordinates as rank "
                                  << it->second.getRank();
        diag.attachNote(it->second.getLoc()) << "the other rank is here";
        return signalPassFailure();
      }
    }
    if (int64_t(byCoords.size()) != ShapedType::getNumElements(shape)) {
      module.emitError() << "mt-verify-collectives: the device grid has "
                         << ShapedType::getNumElements(shape)
                         << " ranks but the module holds " << byCoords.size()
                         << " programs";
      return signalPassFailure();
    }
    for (int64_t axis = 0; axis < int64_t(shape.size()); ++axis)
      for (auto &[coords, program] : byCoords) {
        if (coords[axis] == 0)
          continue;
        // Compare with the group's first rank (coordinate 0 on this axis).
        std::vector<int64_t> firstCoords = coords;
        firstCoords[axis] = 0;
        auto first = byCoords.find(firstCoords);
        if (first == byCoords.end())
          continue;
        if (failed(compare(first->second, program, axis)))
          return signalPassFailure();
      }
  }

  static SmallVector<mtrt::KernelOp> collectivesOn(mtrt::ProgramOp program,
                                                   int64_t axis) {
    SmallVector<mtrt::KernelOp> result;
    for (auto kernel : program.getOps<mtrt::KernelOp>())
      if (isCollective(kernel) && gridAxisOf(kernel) == axis)
        result.push_back(kernel);
    return result;
  }

  LogicalResult compare(mtrt::ProgramOp first, mtrt::ProgramOp other,
                        int64_t axis) {
    SmallVector<mtrt::KernelOp> expected = collectivesOn(first, axis);
    SmallVector<mtrt::KernelOp> actual = collectivesOn(other, axis);
    for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
      if (sameCollective(expected[i], actual[i]))
        continue;
      InFlightDiagnostic diag =
          actual[i].emitOpError()
          << "collective #" << i << " of rank " << other.getRank() << " ("
          << describe(actual[i]) << ") does not match collective #" << i
          << " of rank " << first.getRank() << " (" << describe(expected[i])
          << "): the ranks would hang";
      diag.attachNote(expected[i].getLoc())
          << "rank " << first.getRank() << "'s collective #" << i << " is here";
      return failure();
    }
    if (expected.size() != actual.size())
      return other.emitOpError()
             << "rank " << other.getRank() << " issues " << actual.size()
             << " collectives on grid axis " << axis << " but rank "
             << first.getRank() << " issues " << expected.size()
             << ": the ranks would hang";
    return success();
  }
};
} // namespace
