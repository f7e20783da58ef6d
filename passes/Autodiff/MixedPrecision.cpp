//===- MixedPrecision.cpp - 16-bit activations, fp32 master weights -------===//
//
// Rewrites a forward graph so that its training step is mixed precision:
// parameters stay fp32 and are cast to 16 bits where the forward pass reads
// them, and every forward activation is stored in 16 bits. See the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Autodiff/Passes.h"

#include "dialects/MT/IR/MTDialect.h"
#include "dialects/MT/IR/MTOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::mt {
#define GEN_PASS_DEF_MIXEDPRECISIONPASS
#include "passes/Autodiff/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

/// A floating-point tensor of rank 1 or more: what is stored in 16 bits.
/// Scalars (the loss, run-time hyperparameters) stay fp32.
bool isStoredLow(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() > 0 &&
         isa<FloatType>(tensor.getElementType());
}

struct MixedPrecisionPass
    : public mt::impl::MixedPrecisionPassBase<MixedPrecisionPass> {
  using MixedPrecisionPassBase::MixedPrecisionPassBase;

  void runOnOperation() override {
    Builder builder(&getContext());
    Type low;
    if (precision == "bf16")
      low = builder.getBF16Type();
    else if (precision == "fp16")
      low = builder.getF16Type();
    else if (precision != "fp32") {
      getOperation().emitError()
          << "mt-mixed-precision: precision='" << precision
          << "' is not one of bf16, fp16, fp32";
      return signalPassFailure();
    }
    if (!low)
      return;
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal() || !hasParameters(function))
        continue;
      if (!function.getOps<AdamWOp>().empty()) {
        function.emitOpError()
            << "is already a training step: mt-mixed-precision runs on the "
               "forward graph, before mt-autodiff";
        return signalPassFailure();
      }
      // A second conversion would cast 16-bit values to themselves (or
      // from one 16-bit type to the other) and keep the first's casts.
      WalkResult converted =
          function.walk([&](CastOp cast) {
            cast.emitOpError()
                << "is a precision cast: the graph is already mixed precision "
                   "(mt-mixed-precision runs once, on an fp32 forward graph)";
            return WalkResult::interrupt();
          });
      if (converted.wasInterrupted())
        return signalPassFailure();
      if (failed(convert(function, low)))
        return signalPassFailure();
    }
  }

  static bool hasParameters(func::FuncOp function) {
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      if (function.getArgAttr(i, MTDialect::getParamAttrName()))
        return true;
    return false;
  }

  LogicalResult convert(func::FuncOp function, Type low) {
    if (!function.getBody().hasOneBlock())
      return function.emitOpError()
             << "mt-mixed-precision needs a single-block function";
    Block &body = function.getBody().front();
    auto lowered = [&](Type type) {
      auto tensor = cast<RankedTensorType>(type);
      return RankedTensorType::get(tensor.getShape(), low);
    };

    // Every floating-point forward value of rank >= 1 is stored as `low`;
    // scalars (the loss) stay fp32.
    for (Operation &op : body.without_terminator()) {
      if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
        auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
        if (!isStoredLow(constant.getType()) || !splat)
          continue;
        auto type = lowered(constant.getType());
        double value = splat.getSplatValue<APFloat>().convertToDouble();
        constant.setValueAttr(
            DenseElementsAttr::get(type, FloatAttr::get(low, value)));
        constant.getResult().setType(type);
        ++numRetyped;
        continue;
      }
      for (Value result : op.getResults())
        if (isStoredLow(result.getType())) {
          result.setType(lowered(result.getType()));
          ++numRetyped;
        }
    }

    // Each use of a parameter reads its own cast, placed just before the
    // op: its gradient reaches the fp32 parameter on its own, so the
    // gradients of a parameter used twice (tied embeddings) add in fp32.
    OpBuilder b(&getContext());
    // A floating-point input (a model fed embeddings) is read the same way.
    for (BlockArgument arg : body.getArguments()) {
      if (!isStoredLow(arg.getType()))
        continue;
      for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
        Operation *user = use.getOwner();
        if (isa<func::ReturnOp>(user))
          return user->emitOpError()
                 << "returns argument #" << arg.getArgNumber()
                 << ": mt-mixed-precision needs a forward graph returning "
                    "its loss only";
        b.setInsertionPoint(user);
        auto castOp =
            CastOp::create(b, arg.getLoc(), lowered(arg.getType()), arg);
        if (Attribute layer = user->getAttr(MTDialect::getLayerAttrName()))
          castOp->setAttr(MTDialect::getLayerAttrName(), layer);
        use.set(castOp.getResult());
        ++numCasts;
      }
    }

    auto ret = cast<func::ReturnOp>(body.getTerminator());
    function.setFunctionType(FunctionType::get(
        &getContext(), body.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }
};
} // namespace
