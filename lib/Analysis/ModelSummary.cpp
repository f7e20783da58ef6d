//===- ModelSummary.cpp - Size and cost of an mt model --------------------===//

#include "megatron/Analysis/ModelSummary.h"

#include "dialects/MT/IR/MTOps.h"

#include <set>

using namespace mlir;
using namespace mlir::mt;

bool mlir::mt::hasModelParameters(FunctionOpInterface function) {
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    if (function.getArgAttr(i, MTDialect::getParamAttrName()))
      return true;
  return false;
}

FailureOr<ModelSummary> mlir::mt::summarizeModel(FunctionOpInterface function) {
  ModelSummary summary;
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
        summary.numParameters += ShapedType::getNumElements(full.asArrayRef());
      else
        summary.numParameters += type.getNumElements();
    } else if (role && role.getValue() == "tokens") {
      summary.tokensPerMicroBatch = type.getNumElements();
      foundTokens = true;
    } else if (!foundTokens && !role &&
               type.getElementType().isSignlessInteger()) {
      // Hand-written graphs may leave out roles: the first integer tensor.
      summary.tokensPerMicroBatch = type.getNumElements();
      foundTokens = true;
    }
  }
  if (!foundTokens)
    return function.emitError()
           << "cannot summarize model @" << function.getName()
           << ": no integer tensor argument holds the token ids";

  std::set<uint64_t> layers;
  function.walk([&](Operation *op) {
    if (auto layer =
            op->getAttrOfType<IntegerAttr>(MTDialect::getLayerAttrName()))
      layers.insert(layer.getValue().getZExtValue());
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      RankedTensorType type = attention.getQuery().getType();
      int64_t seq = type.getDimSize(2);
      int64_t width = type.getDimSize(1) * type.getDimSize(3);
      summary.attentionFlopsPerToken += 12 * seq * width;
    }
  });
  summary.numLayers = layers.size();
  summary.parameterFlopsPerToken = 6 * summary.numParameters;
  return summary;
}
