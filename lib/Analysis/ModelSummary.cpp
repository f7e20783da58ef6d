//===- ModelSummary.cpp - Size and cost of an mt model --------------------===//

#include "megatron/Analysis/ModelSummary.h"

#include "dialects/MT/IR/MTOps.h"
#include "megatron/Analysis/OpFlops.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <set>

using namespace mlir;
using namespace mlir::mt;

bool mlir::mt::hasModelParameters(FunctionOpInterface function) {
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    if (function.getArgAttr(i, MTDialect::getParamAttrName()))
      return true;
  return false;
}

bool mlir::mt::hasTokenInput(FunctionOpInterface function) {
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    if (auto role = function.getArgAttrOfType<StringAttr>(
            i, MTDialect::getInputAttrName());
        role && role.getValue() == "tokens")
      return true;
  return false;
}

namespace {
/// Sums and products that stay empty once one overflows int64.
struct CheckedCount {
  std::optional<int64_t> value = 0;

  static std::optional<int64_t> elements(ArrayRef<int64_t> shape) {
    std::optional<int64_t> product = 1;
    for (int64_t dim : shape)
      product = product ? llvm::checkedMul(*product, dim) : std::nullopt;
    return product;
  }
  void add(std::optional<int64_t> term) {
    value = value && term ? llvm::checkedAdd(*value, *term) : std::nullopt;
  }
  static std::optional<int64_t>
  product(std::initializer_list<int64_t> factors) {
    return elements(llvm::ArrayRef<int64_t>(factors.begin(), factors.size()));
  }
};
} // namespace

FailureOr<ModelSummary> mlir::mt::summarizeModel(FunctionOpInterface function) {
  ModelSummary summary;
  CheckedCount parameters, attentionFlops;
  bool foundTokens = false;
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
    auto type = dyn_cast<RankedTensorType>(function.getArgumentTypes()[i]);
    if (!type || !type.hasStaticShape())
      continue;
    auto role =
        function.getArgAttrOfType<StringAttr>(i, MTDialect::getInputAttrName());
    if (function.getArgAttr(i, MTDialect::getStateAttrName()))
      continue;
    if (function.getArgAttr(i, MTDialect::getParamAttrName())) {
      // A ZeRO-3 piece counts as the full parameter it is a piece of.
      if (auto full = function.getArgAttrOfType<DenseI64ArrayAttr>(
              i, MTDialect::getFullShapeAttrName()))
        parameters.add(CheckedCount::elements(full.asArrayRef()));
      else
        parameters.add(CheckedCount::elements(type.getShape()));
    } else if ((role && role.getValue() == "tokens") ||
               (!foundTokens && !role &&
                type.getElementType().isSignlessInteger())) {
      // Hand-written graphs may leave out roles: the first integer tensor.
      summary.tokensPerMicroBatch =
          CheckedCount::elements(type.getShape()).value_or(-1);
      foundTokens = true;
    }
  }
  if (!foundTokens)
    return function.emitError()
           << "cannot summarize model @" << function.getName()
           << ": no integer tensor argument holds the token ids";

  // The experts' weights of a mixture of experts: each token multiplies k
  // of them (the grouped matmul's rows per token), not all. Counted at the
  // forward's grouped matmuls (a training step's backward and optimizer
  // ops state their phase; the forward's do not).
  CheckedCount expertWeights, activeExpertWeights;
  // Each parameter subtracted once, however many experts or grouped
  // matmuls read it.
  llvm::DenseSet<Value> counted;
  std::set<uint64_t> layers;
  function.walk([&](Operation *op) {
    if (auto grouped = dyn_cast<GroupedMatmulOp>(op);
        grouped && !op->hasAttr(MTDialect::getRecomputedAttrName()) &&
        !op->hasAttr(MTDialect::getPhaseAttrName()) &&
        summary.tokensPerMicroBatch > 0 &&
        llvm::all_of(grouped.getWeights(), [](Value weight) {
          // A parameter, or its 16-bit cast (mt-mixed-precision's).
          if (auto cast = weight.getDefiningOp<CastOp>())
            weight = cast.getInput();
          return isa<BlockArgument>(weight);
        })) {
      int64_t rowsPerToken = grouped.getInput().getType().getDimSize(0) /
                             summary.tokensPerMicroBatch;
      for (Value weight : grouped.getWeights()) {
        if (auto cast = weight.getDefiningOp<CastOp>())
          weight = cast.getInput();
        if (!counted.insert(weight).second)
          continue;
        auto type = cast<RankedTensorType>(weight.getType());
        expertWeights.add(CheckedCount::elements(type.getShape()));
      }
      auto one = cast<RankedTensorType>(grouped.getWeights()[0].getType());
      activeExpertWeights.add(CheckedCount::product(
          {rowsPerToken, one.getDimSize(0), one.getDimSize(1)}));
    }
    if (std::optional<int64_t> layer = MTDialect::getLayer(op))
      layers.insert(*layer);
    // Each layer's forward attention (a recomputed clone is the same
    // model FLOPs again, which model FLOPs do not count), whether or not
    // mt-fuse folded the split and merge of its heads into it. A sliding
    // window counts the keys it lets each query see.
    if (op->hasAttr(MTDialect::getRecomputedAttrName()))
      return;
    if (std::optional<AttentionSize> size = attentionSize(op);
        size && !size->gradient)
      attentionFlops.add(CheckedCount::product({12, size->keys, size->width}));
  });
  summary.numLayers = layers.size();
  CheckedCount perToken, perMicroBatch;
  std::optional<int64_t> activeParameters =
      parameters.value && expertWeights.value && activeExpertWeights.value
          ? llvm::checkedAdd(*parameters.value - *expertWeights.value,
                             *activeExpertWeights.value)
          : std::nullopt;
  std::optional<int64_t> parameterFlops =
      activeParameters ? llvm::checkedMul<int64_t>(6, *activeParameters)
                       : std::nullopt;
  perToken.add(parameterFlops);
  perToken.add(attentionFlops.value);
  if (perToken.value && summary.tokensPerMicroBatch >= 0)
    perMicroBatch.value =
        llvm::checkedMul(*perToken.value, summary.tokensPerMicroBatch);
  else
    perMicroBatch.value = std::nullopt;
  if (!parameters.value || !perMicroBatch.value)
    // At the function's location, without printing the (huge) function.
    return emitError(function.getLoc())
           << "cannot summarize model @" << function.getName()
           << ": its parameter or FLOP count does not fit in 64 bits";
  summary.numParameters = *parameters.value;
  summary.activeParameters = *activeParameters;
  summary.parameterFlopsPerToken = *parameterFlops;
  summary.attentionFlopsPerToken = *attentionFlops.value;
  summary.trainingFlopsPerToken = *perToken.value;
  summary.trainingFlopsPerMicroBatch = *perMicroBatch.value;
  return summary;
}
