//===- MTOps.cpp - mt dialect operations ----------------------------------===//
//
// Verifiers and folders of the mt ops. Each verifier message names the
// operand or result and the dimension that disagrees, with both sizes.
//
//===----------------------------------------------------------------------===//

#include "dialects/MT/IR/MTOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::mt;

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Fails unless `value` has rank `rank`; `what` names it in the message.
static LogicalResult verifyRank(Operation *op, Value value, StringRef what,
                                int64_t rank, StringRef layout) {
  int64_t actual = tensorType(value).getRank();
  if (actual == rank)
    return success();
  return op->emitOpError() << what << " must have rank " << rank << " ("
                           << layout << "), got rank " << actual;
}

/// Fails unless dimension `lhsDim` of `lhs` equals dimension `rhsDim` of
/// `rhs`.
static LogicalResult verifyDimsMatch(Operation *op, Value lhs, StringRef lhsName,
                                     int64_t lhsDim, Value rhs,
                                     StringRef rhsName, int64_t rhsDim) {
  int64_t lhsSize = tensorType(lhs).getDimSize(lhsDim);
  int64_t rhsSize = tensorType(rhs).getDimSize(rhsDim);
  if (lhsSize == rhsSize)
    return success();
  return op->emitOpError() << lhsName << " dimension " << lhsDim << " is "
                           << lhsSize << " but " << rhsName << " dimension "
                           << rhsDim << " is " << rhsSize;
}

/// Fails unless `lhs` and `rhs` have the same element type.
static LogicalResult verifyElementTypesMatch(Operation *op, Value lhs,
                                             StringRef lhsName, Value rhs,
                                             StringRef rhsName) {
  Type lhsType = tensorType(lhs).getElementType();
  Type rhsType = tensorType(rhs).getElementType();
  if (lhsType == rhsType)
    return success();
  return op->emitOpError() << lhsName << " element type " << lhsType
                           << " does not match " << rhsName
                           << " element type " << rhsType;
}

/// Fails unless `probability` is in [0, 1).
static LogicalResult verifyProbability(Operation *op, StringRef name,
                                       double probability) {
  if (probability >= 0.0 && probability < 1.0)
    return success();
  return op->emitOpError() << name << " must be in [0, 1), got "
                           << probability;
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, getTable(), "table", 2, "[vocab, hidden]")))
    return failure();
  int64_t idsRank = getIds().getType().getRank();
  int64_t resultRank = getResult().getType().getRank();
  if (resultRank != idsRank + 1)
    return emitOpError() << "result must have rank " << idsRank + 1
                         << " (the ids' rank plus hidden), got rank "
                         << resultRank;
  for (int64_t dim = 0; dim < idsRank; ++dim)
    if (failed(verifyDimsMatch(op, getResult(), "result", dim, getIds(), "ids",
                               dim)))
      return failure();
  if (failed(verifyDimsMatch(op, getResult(), "result", idsRank, getTable(),
                             "table", 1)))
    return failure();
  return verifyElementTypesMatch(op, getResult(), "result", getTable(),
                                 "table");
}

//===----------------------------------------------------------------------===//
// PositionEmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult PositionEmbeddingOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, getTable(), "table", 2, "[positions, hidden]")) ||
      failed(verifyRank(op, getResult(), "result", 2, "[seq, hidden]")))
    return failure();
  int64_t seq = getResult().getType().getDimSize(0);
  int64_t positions = getTable().getType().getDimSize(0);
  if (seq > positions)
    return emitOpError() << "result dimension 0 (sequence length) is " << seq
                         << ", more than the " << positions
                         << " positions of table dimension 0";
  if (failed(verifyDimsMatch(op, getResult(), "result", 1, getTable(), "table",
                             1)))
    return failure();
  return verifyElementTypesMatch(op, getResult(), "result", getTable(),
                                 "table");
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::verify() {
  Operation *op = getOperation();
  int64_t rank = getInput().getType().getRank();
  if (rank < 1)
    return emitOpError() << "input must have rank >= 1, got rank 0";
  if (failed(verifyRank(op, getWeight(), "weight", 1, "[normalized]")) ||
      failed(verifyDimsMatch(op, getWeight(), "weight", 0, getInput(), "input",
                             rank - 1)) ||
      failed(verifyElementTypesMatch(op, getWeight(), "weight", getInput(),
                                     "input")))
    return failure();
  double epsilon = getEpsilon().convertToDouble();
  if (!(epsilon > 0.0))
    return emitOpError() << "epsilon must be positive, got " << epsilon;
  return success();
}

//===----------------------------------------------------------------------===//
// BiasAddOp
//===----------------------------------------------------------------------===//

LogicalResult BiasAddOp::verify() {
  Operation *op = getOperation();
  int64_t rank = getInput().getType().getRank();
  int64_t biasRank = getBias().getType().getRank();
  if (biasRank < 1 || biasRank > rank)
    return emitOpError() << "bias must have rank between 1 and the input rank "
                         << rank << ", got rank " << biasRank;
  int64_t offset = rank - biasRank;
  for (int64_t dim = 0; dim < biasRank; ++dim)
    if (failed(verifyDimsMatch(op, getBias(), "bias", dim, getInput(), "input",
                               offset + dim)))
      return failure();
  return verifyElementTypesMatch(op, getBias(), "bias", getInput(), "input");
}

//===----------------------------------------------------------------------===//
// DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::verify() {
  return verifyProbability(getOperation(), "probability",
                           getProbability().convertToDouble());
}

OpFoldResult DropoutOp::fold(FoldAdaptor adaptor) {
  // Dropping nothing is the identity: GPT-2 configs with pdrop 0 and
  // evaluation graphs lose their dropout ops here.
  if (getProbability().isZero())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  Operation *op = getOperation();
  RankedTensorType lhsType = getLhs().getType();
  RankedTensorType rhsType = getRhs().getType();
  RankedTensorType resultType = getResult().getType();
  int64_t rank = lhsType.getRank();
  if (rank < 2)
    return emitOpError() << "lhs must have rank >= 2, got rank " << rank;
  int64_t rhsRank = rhsType.getRank();
  if (rhsRank != 2 && rhsRank != rank)
    return emitOpError() << "rhs must have rank 2 (broadcast over batch "
                            "dimensions) or the lhs rank "
                         << rank << ", got rank " << rhsRank;
  if (resultType.getRank() != rank)
    return emitOpError() << "result must have the lhs rank " << rank
                         << ", got rank " << resultType.getRank();

  int64_t batchRank = rank - 2;
  if (rhsRank == rank)
    for (int64_t dim = 0; dim < batchRank; ++dim)
      if (failed(verifyDimsMatch(op, getRhs(), "rhs batch", dim, getLhs(),
                                 "lhs", dim)))
        return failure();
  for (int64_t dim = 0; dim < batchRank; ++dim)
    if (failed(verifyDimsMatch(op, getResult(), "result", dim, getLhs(), "lhs",
                               dim)))
      return failure();

  // Positions of M and K in lhs, of K and N in rhs, after transposition.
  int64_t lhsRowDim = getTransposeA() ? rank - 1 : rank - 2;
  int64_t lhsContractDim = getTransposeA() ? rank - 2 : rank - 1;
  int64_t rhsContractDim = getTransposeB() ? rhsRank - 1 : rhsRank - 2;
  int64_t rhsColDim = getTransposeB() ? rhsRank - 2 : rhsRank - 1;
  int64_t lhsK = lhsType.getDimSize(lhsContractDim);
  int64_t rhsK = rhsType.getDimSize(rhsContractDim);
  if (lhsK != rhsK)
    return emitOpError() << "contraction dimensions differ: lhs dimension "
                         << lhsContractDim << " is " << lhsK
                         << " but rhs dimension " << rhsContractDim << " is "
                         << rhsK;
  if (failed(verifyDimsMatch(op, getResult(), "result", rank - 2, getLhs(),
                             "lhs", lhsRowDim)) ||
      failed(verifyDimsMatch(op, getResult(), "result", rank - 1, getRhs(),
                             "rhs", rhsColDim)))
    return failure();
  if (failed(verifyElementTypesMatch(op, getRhs(), "rhs", getLhs(), "lhs")))
    return failure();
  return verifyElementTypesMatch(op, getResult(), "result", getLhs(), "lhs");
}

//===----------------------------------------------------------------------===//
// SplitHeadsOp
//===----------------------------------------------------------------------===//

LogicalResult SplitHeadsOp::verify() {
  Operation *op = getOperation();
  if (getResults().empty())
    return emitOpError() << "must have at least one result";
  if (failed(verifyRank(op, getInput(), "input", 3,
                        "[batch, seq, chunks * heads * head_dim]")))
    return failure();
  Value first = getResults().front();
  if (failed(verifyRank(op, first, "result", 4,
                        "[batch, heads, seq, head_dim]")))
    return failure();
  for (auto [index, result] : llvm::enumerate(getResults()))
    if (result.getType() != first.getType())
      return emitOpError() << "result #" << index << " has type "
                           << result.getType() << " but result #0 has type "
                           << first.getType();
  if (failed(verifyDimsMatch(op, first, "result", 0, getInput(), "input", 0)) ||
      failed(verifyDimsMatch(op, first, "result", 2, getInput(), "input", 1)) ||
      failed(verifyElementTypesMatch(op, first, "result", getInput(), "input")))
    return failure();
  RankedTensorType resultType = tensorType(first);
  int64_t chunks = getResults().size();
  int64_t heads = resultType.getDimSize(1);
  int64_t headDim = resultType.getDimSize(3);
  int64_t hidden = getInput().getType().getDimSize(2);
  if (chunks * heads * headDim != hidden)
    return emitOpError() << "input dimension 2 is " << hidden << " but "
                         << chunks << " results x " << heads << " heads x "
                         << headDim << " head_dim is "
                         << chunks * heads * headDim;
  return success();
}

//===----------------------------------------------------------------------===//
// MergeHeadsOp
//===----------------------------------------------------------------------===//

LogicalResult MergeHeadsOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, getInput(), "input",
                        4, "[batch, heads, seq, head_dim]")) ||
      failed(verifyRank(op, getResult(), "result", 3,
                        "[batch, seq, heads * head_dim]")) ||
      failed(verifyDimsMatch(op, getResult(), "result", 0, getInput(), "input",
                             0)) ||
      failed(verifyDimsMatch(op, getResult(), "result", 1, getInput(), "input",
                             2)) ||
      failed(verifyElementTypesMatch(op, getResult(), "result", getInput(),
                                     "input")))
    return failure();
  RankedTensorType inputType = getInput().getType();
  int64_t heads = inputType.getDimSize(1);
  int64_t headDim = inputType.getDimSize(3);
  int64_t hidden = getResult().getType().getDimSize(2);
  if (heads * headDim != hidden)
    return emitOpError() << "result dimension 2 is " << hidden << " but "
                         << heads << " heads x " << headDim
                         << " head_dim is " << heads * headDim;
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, getQuery(), "query", 4,
                        "[batch, heads, seq, head_dim]")) ||
      failed(verifyProbability(op, "dropout", getDropout().convertToDouble())))
    return failure();
  if (std::optional<APFloat> scale = getScale())
    if (!(scale->convertToDouble() > 0.0))
      return emitOpError() << "scale must be positive, got "
                           << scale->convertToDouble();
  return success();
}

double AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt(double(getQuery().getType().getDimSize(3)));
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::verify() {
  Operation *op = getOperation();
  int64_t rank = getLogits().getType().getRank();
  if (rank < 2)
    return emitOpError() << "logits must have rank >= 2 ([positions..., "
                            "vocab]), got rank "
                         << rank;
  int64_t labelsRank = getLabels().getType().getRank();
  if (labelsRank != rank - 1)
    return emitOpError() << "labels must have rank " << rank - 1
                         << " (the logits' rank without vocab), got rank "
                         << labelsRank;
  for (int64_t dim = 0; dim < labelsRank; ++dim)
    if (failed(verifyDimsMatch(op, getLabels(), "labels", dim, getLogits(),
                               "logits", dim)))
      return failure();
  return success();
}

#define GET_OP_CLASSES
#include "dialects/MT/IR/MTOps.cpp.inc"
