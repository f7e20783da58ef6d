//===- MTOps.cpp - mt dialect operations ----------------------------------===//
//
// Verifiers and folders of the mt ops. Each verifier message names the
// operand or result and the dimension that disagrees, with both sizes.
//
//===----------------------------------------------------------------------===//

#include "dialects/MT/IR/MTOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>
#include <limits>

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
static LogicalResult verifyDimsMatch(Operation *op, Value lhs,
                                     StringRef lhsName, int64_t lhsDim,
                                     Value rhs, StringRef rhsName,
                                     int64_t rhsDim) {
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
                           << " does not match " << rhsName << " element type "
                           << rhsType;
}

/// Like verifyElementTypesMatch, but an f32 `wide` is also accepted where
/// `narrow` is bf16 or f16: a result that accumulates in f32 and is stored
/// without rounding to 16 bits (mt-fuse's widened gradients).
static LogicalResult verifySameOrWidened(Operation *op, Value wide,
                                         StringRef wideName, Value narrow,
                                         StringRef narrowName) {
  Type wideType = tensorType(wide).getElementType();
  Type narrowType = tensorType(narrow).getElementType();
  if (wideType.isF32() && (narrowType.isBF16() || narrowType.isF16()))
    return success();
  return verifyElementTypesMatch(op, wide, wideName, narrow, narrowName);
}

/// Fails unless `value` is positive and finite: a float attribute a kernel
/// reads (the artifact, JSON, has no infinity, and 2e702 parses as one).
static LogicalResult verifyPositiveFinite(Operation *op, StringRef name,
                                          double value) {
  if (value > 0.0 && std::isfinite(value))
    return success();
  return op->emitOpError() << name << " must be positive and finite, got "
                           << value;
}

/// Fails unless `value` is a positive normal float: a divisor the kernels
/// use in float32 (a soft cap).
static LogicalResult verifyPositiveFloat32(Operation *op, StringRef name,
                                           double value) {
  if (std::isfinite(value) && value >= 1.1754943508222875e-38 &&
      value <= 3.4028234663852886e38)
    return success();
  return op->emitOpError() << name << " " << value
                           << " is not a positive single-precision number";
}

/// Fails unless `probability` is in [0, 1).
static LogicalResult verifyProbability(Operation *op, StringRef name,
                                       double probability) {
  if (probability >= 0.0 && probability < 1.0)
    return success();
  return op->emitOpError() << name << " must be in [0, 1), got " << probability;
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

/// Shapes of a lookup: `table` [vocab, hidden], `rows` = ids shape + hidden.
static LogicalResult verifyEmbeddingShapes(Operation *op, Value table,
                                           StringRef tableName, Value ids,
                                           Value rows, StringRef rowsName,
                                           bool wideTable = false) {
  if (failed(verifyRank(op, table, tableName, 2, "[vocab, hidden]")))
    return failure();
  int64_t idsRank = tensorType(ids).getRank();
  int64_t rowsRank = tensorType(rows).getRank();
  if (rowsRank != idsRank + 1)
    return op->emitOpError()
           << rowsName << " must have rank " << idsRank + 1
           << " (the ids' rank plus hidden), got rank " << rowsRank;
  for (int64_t dim = 0; dim < idsRank; ++dim)
    if (failed(verifyDimsMatch(op, rows, rowsName, dim, ids, "ids", dim)))
      return failure();
  if (failed(verifyDimsMatch(op, rows, rowsName, idsRank, table, tableName, 1)))
    return failure();
  if (wideTable)
    return verifySameOrWidened(op, table, tableName, rows, rowsName);
  return verifyElementTypesMatch(op, rows, rowsName, table, tableName);
}

LogicalResult EmbeddingOp::verify() {
  return verifyEmbeddingShapes(getOperation(), getTable(), "table", getIds(),
                               getResult(), "result");
}

/// An accumulating op's accumulator: an f32 tensor of the result's type,
/// which the sum replaces.
static LogicalResult verifyAccumulator(Operation *op, Value accumulator,
                                       Value result) {
  if (!accumulator)
    return success();
  if (accumulator.getType() != result.getType() ||
      !tensorType(result).getElementType().isF32())
    return op->emitOpError()
           << "accumulates into an f32 tensor of the result's type: the "
              "accumulator is "
           << accumulator.getType() << " and the result " << result.getType();
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(verifyEmbeddingShapes(getOperation(), getGradTable(), "grad_table",
                                   getIds(), getGradOutput(), "grad_output",
                                   /*wideTable=*/true)))
    return failure();
  return verifyAccumulator(getOperation(), getAccumulator(), getGradTable());
}

//===----------------------------------------------------------------------===//
// PositionEmbeddingOp
//===----------------------------------------------------------------------===//

/// Shapes of a position lookup: `table` [positions, hidden], `rows`
/// [seq, hidden] with seq <= positions.
static LogicalResult verifyPositionShapes(Operation *op, Value table,
                                          StringRef tableName, Value rows,
                                          StringRef rowsName) {
  if (failed(verifyRank(op, table, tableName, 2, "[positions, hidden]")) ||
      failed(verifyRank(op, rows, rowsName, 2, "[seq, hidden]")))
    return failure();
  int64_t seq = tensorType(rows).getDimSize(0);
  int64_t positions = tensorType(table).getDimSize(0);
  if (seq > positions)
    return op->emitOpError() << rowsName << " dimension 0 (sequence length) is "
                             << seq << ", more than the " << positions
                             << " positions of " << tableName << " dimension 0";
  if (failed(verifyDimsMatch(op, rows, rowsName, 1, table, tableName, 1)))
    return failure();
  return verifyElementTypesMatch(op, rows, rowsName, table, tableName);
}

LogicalResult PositionEmbeddingOp::verify() {
  return verifyPositionShapes(getOperation(), getTable(), "table", getResult(),
                              "result");
}

LogicalResult PositionEmbeddingGradOp::verify() {
  return verifyPositionShapes(getOperation(), getGradTable(), "grad_table",
                              getGradOutput(), "grad_output");
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyLayerNormShapes(Operation *op, Value input,
                                           Value weight, double epsilon) {
  int64_t rank = tensorType(input).getRank();
  if (rank < 1)
    return op->emitOpError() << "input must have rank >= 1, got rank 0";
  if (failed(verifyRank(op, weight, "weight", 1, "[normalized]")) ||
      failed(
          verifyDimsMatch(op, weight, "weight", 0, input, "input", rank - 1)) ||
      failed(verifyElementTypesMatch(op, weight, "weight", input, "input")))
    return failure();
  return verifyPositiveFinite(op, "epsilon", epsilon);
}

LogicalResult LayerNormOp::verify() {
  return verifyLayerNormShapes(getOperation(), getInput(), getWeight(),
                               getEpsilon().convertToDouble());
}

/// A type, then, after `separator` (`->` or `,`), a second type that is
/// otherwise the first's: the printed form leaves out what is implied.
static ParseResult parseTypeAndOptionalSecond(OpAsmParser &parser, Type &first,
                                              Type &second,
                                              StringRef separator) {
  if (parser.parseType(first))
    return failure();
  second = first;
  bool given = separator == "->" ? succeeded(parser.parseOptionalArrow())
                                 : succeeded(parser.parseOptionalComma());
  return given ? parser.parseType(second) : success();
}
static void printTypeAndOptionalSecond(OpAsmPrinter &printer, Type first,
                                       Type second, StringRef separator) {
  printer << first;
  if (second != first)
    printer << (separator == "," ? ", " : " -> ") << second;
}

/// `type(weight)` then, when the parameter gradients are not shaped as
/// the weight (partial sums per block of rows), `-> type(gradients)`.
static ParseResult parseParameterGradientTypes(OpAsmParser &parser,
                                               Type &weight, Type &gradWeight) {
  return parseTypeAndOptionalSecond(parser, weight, gradWeight, "->");
}
static ParseResult parseParameterGradientTypes(OpAsmParser &parser,
                                               Type &weight, Type &gradWeight,
                                               Type &gradBias) {
  if (failed(parseParameterGradientTypes(parser, weight, gradWeight)))
    return failure();
  gradBias = gradWeight;
  return success();
}
static void printParameterGradientTypes(OpAsmPrinter &printer, Operation *,
                                        Type weight, Type gradWeight,
                                        Type = {}) {
  printTypeAndOptionalSecond(printer, weight, gradWeight, "->");
}

/// Attention's query type, then its key and value type when they hold
/// fewer (grouped) heads: `type` or `type, type`.
static ParseResult parseGroupedKeys(OpAsmParser &parser, Type &queryType,
                                    Type &keyType) {
  return parseTypeAndOptionalSecond(parser, queryType, keyType, ",");
}
static void printGroupedKeys(OpAsmPrinter &printer, Operation *, Type queryType,
                             Type keyType) {
  printTypeAndOptionalSecond(printer, queryType, keyType, ",");
}

/// A norm's parameter gradient: shaped as the weight, or with `rowBlock`
/// B one row of partial sums per block of B rows.
static LogicalResult verifyParameterGradient(Operation *op, Value gradient,
                                             StringRef name, Value input,
                                             Value weight,
                                             std::optional<uint64_t> rowBlock) {
  auto type = tensorType(gradient);
  auto weightType = tensorType(weight);
  if (!rowBlock) {
    if (type != weightType)
      return op->emitOpError() << name << " has type " << type
                               << " but the weight has " << weightType;
    return success();
  }
  auto inputType = tensorType(input);
  int64_t cols = inputType.getShape().back();
  int64_t rows = inputType.getNumElements() / std::max<int64_t>(1, cols);
  int64_t block = int64_t(*rowBlock);
  if (block <= 0)
    return op->emitOpError() << "row_block must be positive, got " << block;
  // Partial sums stay f32 whatever the weight's type (rounded once, when
  // summed).
  auto expected = RankedTensorType::get({(rows + block - 1) / block, cols},
                                        Float32Type::get(op->getContext()));
  if (type != expected)
    return op->emitOpError()
           << name << " has type " << type << " but with row_block " << block
           << " it holds the partial sums of " << rows << " rows: " << expected;
  return success();
}

/// A norm's backward: the norm's shapes, and its weight gradient shaped as
/// the weight or (row_block) as partial sums.
template <typename NormGradOp>
static LogicalResult verifyNormGrad(NormGradOp op) {
  if (failed(verifyLayerNormShapes(op, op.getInput(), op.getWeight(),
                                   op.getEpsilon().convertToDouble())))
    return failure();
  return verifyParameterGradient(op, op.getGradWeight(), "grad_weight",
                                 op.getInput(), op.getWeight(),
                                 op.getRowBlock());
}

LogicalResult LayerNormGradOp::verify() { return verifyNormGrad(*this); }

std::optional<uint64_t> mlir::mt::getNormGradRowBlock(Operation *op) {
  if (auto grad = dyn_cast<LayerNormGradOp>(op))
    return grad.getRowBlock();
  if (auto grad = dyn_cast<RMSNormGradOp>(op))
    return grad.getRowBlock();
  return std::nullopt;
}

void mlir::mt::setNormGradRowBlock(Operation *op, uint64_t rows) {
  if (auto grad = dyn_cast<LayerNormGradOp>(op))
    grad.setRowBlock(rows);
  else
    cast<RMSNormGradOp>(op).setRowBlock(rows);
}

LogicalResult RMSNormOp::verify() {
  return verifyLayerNormShapes(getOperation(), getInput(), getWeight(),
                               getEpsilon().convertToDouble());
}

LogicalResult RMSNormGradOp::verify() { return verifyNormGrad(*this); }

//===----------------------------------------------------------------------===//
// RopeOp, RepeatKVOp
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  RankedTensorType type = getInput().getType();
  if (type.getRank() != 4 || type.getDimSize(3) % 2 != 0)
    return emitOpError() << "input must be [batch, heads, seq, head_dim] "
                            "with an even head_dim, got "
                         << type;
  if (!(getTheta().convertToDouble() > 1.0) ||
      !std::isfinite(getTheta().convertToDouble()))
    return emitOpError() << "theta must be greater than 1 and finite, got "
                         << getTheta().convertToDouble();
  int given = int(bool(getLlama3Factor())) +
              int(bool(getLlama3LowFreqFactor())) +
              int(bool(getLlama3HighFreqFactor())) +
              int(bool(getLlama3OriginalMaxPositions()));
  if (given != 0 && given != 4)
    return emitOpError() << "llama3 rope scaling needs all of llama3_factor, "
                            "llama3_low_freq_factor, llama3_high_freq_factor "
                            "and llama3_original_max_positions";
  if (given == 4)
    for (auto [name, factor] :
         {std::pair{"llama3_factor", getLlama3Factor()},
          std::pair{"llama3_low_freq_factor", getLlama3LowFreqFactor()},
          std::pair{"llama3_high_freq_factor", getLlama3HighFreqFactor()}})
      if (failed(verifyPositiveFinite(*this, name, factor->convertToDouble())))
        return failure();
  if (given == 4 && !(getLlama3HighFreqFactor()->convertToDouble() >
                      getLlama3LowFreqFactor()->convertToDouble()))
    return emitOpError() << "llama3_high_freq_factor must exceed "
                            "llama3_low_freq_factor";
  if (std::optional<APFloat> linear = getLinearFactor()) {
    if (given)
      return emitOpError() << "takes one rope scaling: llama3 or linear_factor";
    if (failed(verifyPositiveFinite(*this, "linear_factor",
                                    linear->convertToDouble())))
      return failure();
  }
  return success();
}

/// `repeated` is `heads` with its dimension 1 a multiple of `heads`'.
static LogicalResult verifyRepeatedHeads(Operation *op, Value heads,
                                         Value repeated, int64_t groups) {
  RankedTensorType kv = tensorType(heads), all = tensorType(repeated);
  if (kv.getRank() != 4 || all.getRank() != 4 ||
      kv.getElementType() != all.getElementType() ||
      kv.getDimSize(0) != all.getDimSize(0) ||
      kv.getDimSize(2) != all.getDimSize(2) ||
      kv.getDimSize(3) != all.getDimSize(3) || groups < 1 ||
      all.getDimSize(1) != kv.getDimSize(1) * groups)
    return op->emitOpError()
           << "needs [batch, kv_heads, seq, head_dim] and [batch, kv_heads * "
              "groups, seq, head_dim] with groups = "
           << groups << ", got " << kv << " and " << all;
  return success();
}

LogicalResult RepeatKVOp::verify() {
  return verifyRepeatedHeads(getOperation(), getInput(), getResult(),
                             int64_t(getGroups()));
}

LogicalResult RepeatKVGradOp::verify() {
  return verifyRepeatedHeads(getOperation(), getGradInput(), getGradOutput(),
                             int64_t(getGroups()));
}

//===----------------------------------------------------------------------===//
// BiasAddOp
//===----------------------------------------------------------------------===//

/// `bias` has the shape of the trailing dimensions of `input`.
static LogicalResult verifyBiasShape(Operation *op, Value input,
                                     StringRef inputName, Value bias,
                                     StringRef biasName,
                                     bool wideBias = false) {
  int64_t rank = tensorType(input).getRank();
  int64_t biasRank = tensorType(bias).getRank();
  if (biasRank < 1 || biasRank > rank)
    return op->emitOpError()
           << biasName << " must have rank between 1 and the " << inputName
           << " rank " << rank << ", got rank " << biasRank;
  int64_t offset = rank - biasRank;
  for (int64_t dim = 0; dim < biasRank; ++dim)
    if (failed(verifyDimsMatch(op, bias, biasName, dim, input, inputName,
                               offset + dim)))
      return failure();
  if (wideBias)
    return verifySameOrWidened(op, bias, biasName, input, inputName);
  return verifyElementTypesMatch(op, bias, biasName, input, inputName);
}

LogicalResult BiasAddOp::verify() {
  return verifyBiasShape(getOperation(), getInput(), "input", getBias(),
                         "bias");
}

LogicalResult BiasAddGradOp::verify() {
  return verifyBiasShape(getOperation(), getGradOutput(), "grad_output",
                         getGradBias(), "grad_bias", /*wideBias=*/true);
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

/// The operand and result shapes of a matmul (mt.matmul, and the product
/// of mt.matmul_bias).
static LogicalResult verifyMatmul(Operation *op, Value lhs, Value rhs,
                                  Value result, bool transposeA,
                                  bool transposeB, bool wideResult = false) {
  RankedTensorType lhsType = tensorType(lhs);
  RankedTensorType rhsType = tensorType(rhs);
  RankedTensorType resultType = tensorType(result);
  int64_t rank = lhsType.getRank();
  if (rank < 2)
    return op->emitOpError() << "lhs must have rank >= 2, got rank " << rank;
  int64_t rhsRank = rhsType.getRank();
  if (rhsRank != 2 && rhsRank != rank)
    return op->emitOpError() << "rhs must have rank 2 (broadcast over batch "
                                "dimensions) or the lhs rank "
                             << rank << ", got rank " << rhsRank;
  if (resultType.getRank() != rank)
    return op->emitOpError() << "result must have the lhs rank " << rank
                             << ", got rank " << resultType.getRank();

  int64_t batchRank = rank - 2;
  if (rhsRank == rank)
    for (int64_t dim = 0; dim < batchRank; ++dim)
      if (failed(verifyDimsMatch(op, rhs, "rhs batch", dim, lhs, "lhs", dim)))
        return failure();
  for (int64_t dim = 0; dim < batchRank; ++dim)
    if (failed(verifyDimsMatch(op, result, "result", dim, lhs, "lhs", dim)))
      return failure();

  // Positions of M and K in lhs, of K and N in rhs, after transposition.
  int64_t lhsRowDim = transposeA ? rank - 1 : rank - 2;
  int64_t lhsContractDim = transposeA ? rank - 2 : rank - 1;
  int64_t rhsContractDim = transposeB ? rhsRank - 1 : rhsRank - 2;
  int64_t rhsColDim = transposeB ? rhsRank - 2 : rhsRank - 1;
  int64_t lhsK = lhsType.getDimSize(lhsContractDim);
  int64_t rhsK = rhsType.getDimSize(rhsContractDim);
  if (lhsK != rhsK)
    return op->emitOpError()
           << "contraction dimensions differ: lhs dimension " << lhsContractDim
           << " is " << lhsK << " but rhs dimension " << rhsContractDim
           << " is " << rhsK;
  if (failed(verifyDimsMatch(op, result, "result", rank - 2, lhs, "lhs",
                             lhsRowDim)) ||
      failed(verifyDimsMatch(op, result, "result", rank - 1, rhs, "rhs",
                             rhsColDim)))
    return failure();
  if (failed(verifyElementTypesMatch(op, rhs, "rhs", lhs, "lhs")))
    return failure();
  if (wideResult)
    return verifySameOrWidened(op, result, "result", lhs, "lhs");
  return verifyElementTypesMatch(op, result, "result", lhs, "lhs");
}

LogicalResult MatmulOp::verify() {
  if (failed(verifyMatmul(getOperation(), getLhs(), getRhs(), getResult(),
                          getTransposeA(), getTransposeB(),
                          /*wideResult=*/true)))
    return failure();
  return verifyAccumulator(getOperation(), getAccumulator(), getResult());
}

/// A matmul whose epilogue adds `bias`, a vector of the result's last
/// dimension of the result's element type.
static LogicalResult verifyBiasedMatmul(Operation *op, Value lhs, Value rhs,
                                        Value bias, Value result,
                                        bool transposeA, bool transposeB) {
  if (failed(verifyMatmul(op, lhs, rhs, result, transposeA, transposeB)) ||
      failed(verifyRank(op, bias, "bias", 1, "[result's last dimension]")))
    return failure();
  if (failed(verifyDimsMatch(op, bias, "bias", 0, result, "result",
                             tensorType(result).getRank() - 1)))
    return failure();
  return verifyElementTypesMatch(op, bias, "bias", result, "result");
}

LogicalResult MatmulBiasOp::verify() {
  return verifyBiasedMatmul(getOperation(), getLhs(), getRhs(), getBias(),
                            getResult(), getTransposeA(), getTransposeB());
}

LogicalResult MultiCastOp::verify() {
  if (getInputs().empty() || getInputs().size() != getResults().size())
    return emitOpError() << "must cast one or more tensors, one result each; "
                         << "got " << getInputs().size() << " inputs and "
                         << getResults().size() << " results";
  Type from = tensorType(getInputs().front()).getElementType();
  Type to = tensorType(getResults().front()).getElementType();
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(getInputs(), getResults()))) {
    auto [input, result] = pair;
    RankedTensorType inputType = tensorType(input),
                     resultType = tensorType(result);
    if (inputType.getElementType() != from || resultType.getElementType() != to)
      return emitOpError() << "casts one element type to another: input "
                           << index << " is " << inputType << " and result "
                           << index << " is " << resultType << ", expected "
                           << from << " to " << to;
    if (inputType.getShape() != resultType.getShape())
      return emitOpError() << "result " << index << " must have input " << index
                           << "'s shape: " << inputType << " to " << resultType;
  }
  return success();
}

LogicalResult MatmulBiasGeluOp::verify() {
  if (failed(verifyBiasedMatmul(getOperation(), getLhs(), getRhs(), getBias(),
                                getResult(), getTransposeA(), getTransposeB())))
    return failure();
  RankedTensorType result = getResult().getType();
  if (getPreactivation().getType() != result)
    return emitOpError() << "preactivation must have the result's type "
                         << result << ", got " << getPreactivation().getType();
  return success();
}

LogicalResult MatmulGeluGradOp::verify() {
  if (failed(verifyMatmul(getOperation(), getLhs(), getRhs(), getResult(),
                          getTransposeA(), getTransposeB())))
    return failure();
  if (getPreactivation().getType() != getResult().getType())
    return emitOpError() << "preactivation must have the result's type "
                         << getResult().getType() << ", got "
                         << getPreactivation().getType();
  return success();
}

LogicalResult MatmulBiasGradOp::verify() {
  Operation *op = getOperation();
  if (tensorType(getRhs()).getRank() != 2)
    return emitOpError() << "rhs must have rank 2 ([k, n], summed over k), "
                            "got rank "
                         << tensorType(getRhs()).getRank();
  if (failed(verifyMatmul(op, getLhs(), getRhs(), getResult(), getTransposeA(),
                          /*transposeB=*/false, /*wideResult=*/true)) ||
      failed(verifyRank(op, getBiasGrad(), "bias_grad", 1,
                        "[rhs's last dimension]")) ||
      failed(verifyDimsMatch(op, getBiasGrad(), "bias_grad", 0, getRhs(), "rhs",
                             1)) ||
      failed(verifyAccumulator(op, getAccumulator(), getResult())))
    return failure();
  return verifyElementTypesMatch(op, getBiasGrad(), "bias_grad", getResult(),
                                 "result");
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
  if (failed(
          verifyRank(op, first, "result", 4, "[batch, heads, seq, head_dim]")))
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
  if (getInputs().empty())
    return emitOpError() << "must have at least one input";
  Value first = getInputs().front();
  for (auto [index, input] : llvm::enumerate(getInputs()))
    if (input.getType() != first.getType())
      return emitOpError() << "input #" << index << " has type "
                           << input.getType() << " but input #0 has type "
                           << first.getType();
  if (failed(
          verifyRank(op, first, "input", 4, "[batch, heads, seq, head_dim]")) ||
      failed(verifyRank(op, getResult(), "result", 3,
                        "[batch, seq, chunks * heads * head_dim]")) ||
      failed(
          verifyDimsMatch(op, getResult(), "result", 0, first, "input", 0)) ||
      failed(
          verifyDimsMatch(op, getResult(), "result", 1, first, "input", 2)) ||
      failed(
          verifyElementTypesMatch(op, getResult(), "result", first, "input")))
    return failure();
  RankedTensorType inputType = tensorType(first);
  int64_t chunks = getInputs().size();
  int64_t heads = inputType.getDimSize(1);
  int64_t headDim = inputType.getDimSize(3);
  int64_t hidden = getResult().getType().getDimSize(2);
  if (chunks * heads * headDim != hidden) {
    InFlightDiagnostic diag = emitOpError()
                              << "result dimension 2 is " << hidden << " but ";
    if (chunks > 1)
      diag << chunks << " inputs x ";
    return diag << heads << " heads x " << headDim << " head_dim is "
                << chunks * heads * headDim;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// SoftcapOp, SoftcapGradOp
//===----------------------------------------------------------------------===//

LogicalResult SoftcapOp::verify() {
  return verifyPositiveFloat32(*this, "cap", getCap().convertToDouble());
}

LogicalResult SoftcapGradOp::verify() {
  return verifyPositiveFloat32(*this, "cap", getCap().convertToDouble());
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// A sliding window, where there is one, sees at least the query's own key;
/// a soft cap of the scores is a positive float.
static LogicalResult verifyScoreMask(Operation *op,
                                     std::optional<uint64_t> window,
                                     std::optional<APFloat> softcap) {
  if (window && int64_t(*window) < 1)
    return op->emitOpError()
           << "window must be at least 1, got " << int64_t(*window);
  if (softcap)
    return verifyPositiveFloat32(op, "softcap", softcap->convertToDouble());
  return success();
}

static LogicalResult verifyAttention(Operation *op, Value query, Value key,
                                     double dropout,
                                     std::optional<APFloat> scale,
                                     std::optional<uint64_t> window,
                                     std::optional<APFloat> softcap) {
  if (failed(
          verifyRank(op, query, "query", 4, "[batch, heads, seq, head_dim]")) ||
      failed(
          verifyRank(op, key, "key", 4, "[batch, kv_heads, seq, head_dim]")) ||
      failed(verifyElementTypesMatch(op, key, "key", query, "query")) ||
      failed(verifyProbability(op, "dropout", dropout)))
    return failure();
  for (int64_t dim : {0, 2, 3})
    if (failed(verifyDimsMatch(op, key, "key", dim, query, "query", dim)))
      return failure();
  // Grouped-query attention: every key head serves as many query heads.
  int64_t heads = tensorType(query).getDimSize(1);
  int64_t kvHeads = tensorType(key).getDimSize(1);
  if (kvHeads <= 0 || heads % kvHeads != 0)
    return op->emitOpError()
           << "key and value have " << kvHeads
           << " heads, which do not divide the query's " << heads;
  if (scale &&
      failed(verifyPositiveFinite(op, "scale", scale->convertToDouble())))
    return failure();
  return verifyScoreMask(op, window, softcap);
}

LogicalResult AttentionOp::verify() {
  return verifyAttention(getOperation(), getQuery(), getKey(),
                         getDropout().convertToDouble(), getScale(),
                         getWindow(), getSoftcap());
}

LogicalResult AttentionGradOp::verify() {
  return verifyAttention(getOperation(), getQuery(), getKey(),
                         getDropout().convertToDouble(), getScale(),
                         getWindow(), getSoftcap());
}

//===----------------------------------------------------------------------===//
// QKVAttentionOp, QKVAttentionGradOp
//===----------------------------------------------------------------------===//

/// `qkv` is [batch, seq, 3 * heads * head_dim] and `merged` (the result,
/// or the gradient of it) [batch, seq, heads * head_dim].
static LogicalResult verifyQKVAttention(Operation *op, Value qkv, Value merged,
                                        StringRef mergedName, int64_t heads,
                                        double dropout,
                                        std::optional<APFloat> scale) {
  if (failed(verifyRank(op, qkv, "qkv", 3,
                        "[batch, seq, 3 * heads * head_dim]")) ||
      failed(verifyRank(op, merged, mergedName, 3,
                        "[batch, seq, heads * head_dim]")) ||
      failed(verifyDimsMatch(op, merged, mergedName, 0, qkv, "qkv", 0)) ||
      failed(verifyDimsMatch(op, merged, mergedName, 1, qkv, "qkv", 1)) ||
      failed(verifyElementTypesMatch(op, merged, mergedName, qkv, "qkv")) ||
      failed(verifyProbability(op, "dropout", dropout)))
    return failure();
  if (heads <= 0)
    return op->emitOpError() << "heads must be positive, got " << heads;
  int64_t width = tensorType(merged).getDimSize(2);
  if (width % heads != 0)
    return op->emitOpError() << mergedName << " dimension 2 (" << width
                             << ") is not a multiple of " << heads << " heads";
  int64_t fused = tensorType(qkv).getDimSize(2);
  if (fused != 3 * width)
    return op->emitOpError() << "qkv dimension 2 is " << fused << " but 3 x "
                             << mergedName << " dimension 2 is " << 3 * width;
  if (scale &&
      failed(verifyPositiveFinite(op, "scale", scale->convertToDouble())))
    return failure();
  return success();
}

/// `stats` holds one log-sum-exp per query row: [batch, heads, seq].
static LogicalResult verifyAttentionStats(Operation *op, Value stats, Value qkv,
                                          int64_t heads) {
  if (failed(verifyRank(op, stats, "stats", 3, "[batch, heads, seq]")) ||
      failed(verifyDimsMatch(op, stats, "stats", 0, qkv, "qkv", 0)) ||
      failed(verifyDimsMatch(op, stats, "stats", 2, qkv, "qkv", 1)))
    return failure();
  if (tensorType(stats).getDimSize(1) != heads)
    return op->emitOpError()
           << "stats dimension 1 is " << tensorType(stats).getDimSize(1)
           << " but there are " << heads << " heads";
  return success();
}

LogicalResult QKVAttentionOp::verify() {
  if (failed(verifyQKVAttention(getOperation(), getQkv(), getResult(), "result",
                                int64_t(getHeads()),
                                getDropout().convertToDouble(), getScale())) ||
      failed(verifyScoreMask(getOperation(), getWindow(), getSoftcap())))
    return failure();
  return verifyAttentionStats(getOperation(), getStats(), getQkv(),
                              int64_t(getHeads()));
}

LogicalResult QKVAttentionGradOp::verify() {
  if (failed(verifyQKVAttention(getOperation(), getQkv(), getGradOutput(),
                                "grad_output", int64_t(getHeads()),
                                getDropout().convertToDouble(), getScale())) ||
      failed(verifyScoreMask(getOperation(), getWindow(), getSoftcap())))
    return failure();
  return verifyAttentionStats(getOperation(), getStats(), getQkv(),
                              int64_t(getHeads()));
}

/// mt.merged_attention's merged tensor (the result, or its gradient) is
/// [batch, seq, heads * head_dim] for its [batch, heads, seq, head_dim]
/// queries, and its stats [batch, heads, seq].
static LogicalResult verifyMergedAttention(Operation *op, Value query,
                                           Value merged, StringRef mergedName,
                                           Value stats) {
  if (failed(verifyRank(op, merged, mergedName, 3,
                        "[batch, seq, heads * head_dim]")) ||
      failed(verifyElementTypesMatch(op, merged, mergedName, query, "query")) ||
      failed(verifyRank(op, stats, "stats", 3, "[batch, heads, seq]")))
    return failure();
  ArrayRef<int64_t> q = tensorType(query).getShape();
  ArrayRef<int64_t> m = tensorType(merged).getShape();
  ArrayRef<int64_t> st = tensorType(stats).getShape();
  if (m[0] != q[0] || m[1] != q[2] || m[2] != q[1] * q[3])
    return op->emitOpError()
           << mergedName << " is " << tensorType(merged)
           << " but queries of shape " << tensorType(query)
           << " merge into [batch, seq, heads * head_dim] = [" << q[0] << ", "
           << q[2] << ", " << q[1] * q[3] << "]";
  if (st[0] != q[0] || st[1] != q[1] || st[2] != q[2])
    return op->emitOpError() << "stats is " << tensorType(stats)
                             << " but the queries' [batch, heads, seq] is ["
                             << q[0] << ", " << q[1] << ", " << q[2] << "]";
  return success();
}

template <typename Op>
static LogicalResult verifyMergedAttentionOp(Op op, Value merged,
                                             StringRef mergedName) {
  if (failed(verifyAttention(op, op.getQuery(), op.getKey(),
                             op.getDropout().convertToDouble(), op.getScale(),
                             op.getWindow(), op.getSoftcap())))
    return failure();
  return verifyMergedAttention(op, op.getQuery(), merged, mergedName,
                               op.getStats());
}

LogicalResult MergedAttentionOp::verify() {
  return verifyMergedAttentionOp(*this, getResult(), "result");
}

LogicalResult MergedAttentionGradOp::verify() {
  return verifyMergedAttentionOp(*this, getGradOutput(), "grad_output");
}

double AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt(double(getQuery().getType().getDimSize(3)));
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// The leading dimensions of `value` (all but the last): the tokens.
static ArrayRef<int64_t> tokenDims(Value value) {
  return tensorType(value).getShape().drop_back();
}

/// The number of tokens `value` holds ([tokens..., x]).
static int64_t tokenCount(Value value) {
  int64_t count = 1;
  for (int64_t dim : tokenDims(value))
    count *= dim;
  return count;
}

/// Fails unless `value` has rank 2 or more ([tokens..., x]).
static LogicalResult verifyTokenRows(Operation *op, Value value,
                                     StringRef what) {
  if (tensorType(value).getRank() >= 2)
    return success();
  return op->emitOpError() << what
                           << " must have rank 2 or more ([tokens..., "
                              "features]), got "
                           << value.getType();
}

/// Fails unless `value` is `[tokens..., last]` with the tokens of `like`.
static LogicalResult verifyPerToken(Operation *op, Value value, StringRef what,
                                    Value like, StringRef likeName,
                                    int64_t last) {
  RankedTensorType type = tensorType(value);
  if (tokenDims(value) == tokenDims(like) && type.getShape().back() == last)
    return success();
  SmallVector<int64_t> expected(tokenDims(like));
  expected.push_back(last);
  InFlightDiagnostic diag = op->emitOpError() << what << " must be [";
  llvm::interleave(expected, diag, "x");
  return diag << "] (the tokens of " << likeName << ", then " << last
              << "), got " << value.getType();
}

int64_t mlir::mt::expertCapacity(int64_t tokens, int64_t k, int64_t experts,
                                 double factor) {
  // Megatron-LM's arithmetic, in double: ceil(num_tokens / num_experts *
  // capacity_factor), num_tokens counting every choice.
  double capacity = std::ceil(double(tokens * k) / double(experts) * factor);
  if (!(capacity < double(tokens)))
    return tokens;
  return std::max<int64_t>(1, int64_t(capacity));
}

int64_t mlir::mt::routedRows(int64_t tokens, int64_t k, int64_t experts,
                             std::optional<double> factor) {
  if (!factor || experts < 1)
    return tokens * k;
  return experts * expertCapacity(tokens, k, experts, *factor);
}

/// Fails unless the rows `rows` are `[tokens * k, width]` for the
/// `positions` `[tokens..., k]`, or with a capacity `factor`, `[experts *
/// capacity, width]`.
static LogicalResult verifyExpertRows(Operation *op, Value rows, StringRef what,
                                      Value positions, int64_t width,
                                      std::optional<double> factor = {},
                                      int64_t experts = 0) {
  RankedTensorType type = tensorType(rows);
  int64_t tokens = tokenCount(positions);
  int64_t k = tensorType(positions).getShape().back();
  int64_t expected = routedRows(tokens, k, experts, factor);
  if (type.getRank() == 2 && type.getDimSize(0) == expected &&
      type.getDimSize(1) == width)
    return success();
  if (factor)
    return op->emitOpError()
           << what << " must be [" << expected << "x" << width << "] ("
           << experts << " experts of capacity "
           << expertCapacity(tokens, k, experts, *factor) << " for positions "
           << positions.getType() << " at capacity factor " << *factor
           << "), got " << type;
  return op->emitOpError() << what << " must be [" << expected << "x" << width
                           << "] (a row per token and choice of positions "
                           << positions.getType() << "), got " << type;
}

LogicalResult TopKGatingOp::verify() {
  if (failed(verifyTokenRows(*this, getLogits(), "logits")))
    return failure();
  int64_t experts = getLogits().getType().getShape().back();
  int64_t k = int64_t(getK());
  if (k < 1 || k > experts)
    return emitOpError() << "k must be between 1 and the number of experts "
                         << experts << ", got " << k;
  if (failed(verifyPerToken(*this, getWeights(), "weights", getLogits(),
                            "logits", k)) ||
      failed(verifyPerToken(*this, getExperts(), "experts", getLogits(),
                            "logits", k)))
    return failure();
  return verifyElementTypesMatch(*this, getWeights(), "weights", getLogits(),
                                 "logits");
}

LogicalResult TopKGatingGradOp::verify() {
  int64_t experts = int64_t(getNumExperts());
  if (failed(verifyTokenRows(*this, getWeights(), "weights")))
    return failure();
  int64_t k = getWeights().getType().getShape().back();
  if (k < 1 || k > experts)
    return emitOpError() << "num_experts must be at least k = " << k << ", got "
                         << experts;
  if (failed(verifyPerToken(*this, getExperts(), "experts", getWeights(),
                            "weights", k)) ||
      failed(verifyPerToken(*this, getGradLogits(), "grad_logits", getWeights(),
                            "weights", experts)))
    return failure();
  if (getLogits() && getLogits().getType() != getGradLogits().getType())
    return emitOpError() << "logits must have grad_logits' type "
                         << getGradLogits().getType() << ", got "
                         << getLogits().getType();
  return verifyElementTypesMatch(*this, getGradLogits(), "grad_logits",
                                 getWeights(), "weights");
}

LogicalResult MoeRouteOp::verify() {
  int64_t experts = int64_t(getNumExperts());
  if (experts < 1)
    return emitOpError() << "num_experts must be positive, got " << experts;
  // Expert ids are i32 (and experts + 1 below cannot overflow).
  if (experts > std::numeric_limits<int32_t>::max())
    return emitOpError() << "num_experts must be at most "
                         << std::numeric_limits<int32_t>::max()
                         << " (expert ids are i32), got " << experts;
  if (failed(verifyTokenRows(*this, getExperts(), "experts")))
    return failure();
  if (getPositions().getType() != getExperts().getType())
    return emitOpError() << "positions must have the experts' type "
                         << getExperts().getType() << ", got "
                         << getPositions().getType();
  RankedTensorType offsets = getOffsets().getType();
  if (offsets.getRank() != 1 || offsets.getDimSize(0) != experts + 1)
    return emitOpError() << "offsets must be [" << experts + 1
                         << "] (where each of " << experts
                         << " experts' rows begin, then the end), got "
                         << offsets;
  std::optional<double> factor = asDouble(getCapacityFactor());
  if (factor && failed(verifyPositiveFinite(*this, "capacity_factor", *factor)))
    return failure();
  if (Value weights = getWeights()) {
    // The weights rank the choices an expert keeps: only a capacity drops.
    if (!factor)
      return emitOpError() << "takes weights only with a capacity_factor "
                              "(they choose the choices a full expert keeps)";
    if (tensorType(weights).getShape() != getExperts().getType().getShape())
      return emitOpError() << "weights must have the experts' shape "
                           << getExperts().getType() << ", got "
                           << weights.getType();
  }
  return success();
}

/// The capacity the ops of a routing share: `factor` and `experts` both or
/// neither (when given, positive).
static LogicalResult verifyCapacity(Operation *op, std::optional<double> factor,
                                    std::optional<uint64_t> experts) {
  if (bool(factor) != bool(experts))
    return op->emitOpError()
           << "needs capacity_factor and num_experts together, got only "
           << (factor ? "capacity_factor" : "num_experts");
  if (!factor)
    return success();
  if (failed(verifyPositiveFinite(op, "capacity_factor", *factor)))
    return failure();
  if (int64_t(*experts) < 1 ||
      int64_t(*experts) > std::numeric_limits<int32_t>::max())
    return op->emitOpError() << "num_experts must be in [1, "
                             << std::numeric_limits<int32_t>::max() << "], got "
                             << int64_t(*experts);
  return success();
}

/// The checks `mt.moe_permute` and `mt.moe_unpermute` share: `tokens`
/// `[tokens..., hidden]`, positions `[tokens..., k]`, weights like them,
/// rows `[tokens * k, hidden]` (with a capacity, the experts' capacity
/// rows, as the route the positions come from says), one float type.
static LogicalResult verifyPermutation(Operation *op, Value tokens,
                                       StringRef tokensName, Value positions,
                                       Value weights, Value rows,
                                       std::optional<double> factor,
                                       std::optional<uint64_t> experts) {
  if (failed(verifyCapacity(op, factor, experts)) ||
      failed(verifyTokenRows(op, tokens, tokensName)) ||
      failed(verifyTokenRows(op, positions, "positions")))
    return failure();
  if (tokenDims(positions) != tokenDims(tokens))
    return op->emitOpError()
           << "positions " << positions.getType() << " must have the tokens of "
           << tokensName << " " << tokens.getType();
  if (weights &&
      tensorType(weights).getShape() != tensorType(positions).getShape())
    return op->emitOpError()
           << "weights must have the positions' shape, got "
           << weights.getType() << " and " << positions.getType();
  if (weights && failed(verifyElementTypesMatch(op, weights, "weights", tokens,
                                                tokensName)))
    return failure();
  if (failed(verifyExpertRows(op, rows, "rows", positions,
                              tensorType(tokens).getShape().back(), factor,
                              int64_t(experts.value_or(0)))))
    return failure();
  // The rows are the route's: its capacity (or none) and its experts.
  if (auto route = positions.getDefiningOp<MoeRouteOp>()) {
    std::optional<double> routed = asDouble(route.getCapacityFactor());
    if (routed != factor ||
        (factor && int64_t(*experts) != int64_t(route.getNumExperts())))
      return op->emitOpError()
             << "must have the capacity of the mt.moe_route of its positions "
                "(capacity_factor and num_experts)";
  }
  return verifyElementTypesMatch(op, rows, "rows", tokens, tokensName);
}

LogicalResult MoePermuteOp::verify() {
  return verifyPermutation(*this, getInput(), "input", getPositions(),
                           getWeights(), getRows(),
                           asDouble(getCapacityFactor()), getNumExperts());
}

LogicalResult MoeUnpermuteOp::verify() {
  return verifyPermutation(*this, getResult(), "result", getPositions(),
                           getWeights(), getRows(),
                           asDouble(getCapacityFactor()), getNumExperts());
}

LogicalResult MoeWeightsGradOp::verify() {
  return verifyPermutation(*this, getGradOutput(), "grad_output",
                           getPositions(), getGradWeights(), getRows(),
                           asDouble(getCapacityFactor()), getNumExperts());
}

/// The checks `mt.sigmoid_gate` and its gradient share: `input`
/// `[tokens..., hidden]` and `gate` `[tokens..., 1]`, one float type.
static LogicalResult verifySigmoidGate(Operation *op, Value input, Value gate) {
  if (failed(verifyTokenRows(op, input, "input")) ||
      failed(verifyPerToken(op, gate, "gate", input, "input", 1)))
    return failure();
  return verifyElementTypesMatch(op, gate, "gate", input, "input");
}

LogicalResult SigmoidGateOp::verify() {
  return verifySigmoidGate(*this, getInput(), getGate());
}

LogicalResult SigmoidGateGradOp::verify() {
  return verifySigmoidGate(*this, getInput(), getGate());
}

/// `weight` is expert `e`'s `[n, k]` (transposed) or `[k, n]`.
static LogicalResult verifyExpertWeight(Operation *op, Value weight,
                                        StringRef what, size_t e, int64_t k,
                                        int64_t n, bool transposed,
                                        Value input) {
  RankedTensorType type = tensorType(weight);
  SmallVector<int64_t> expected =
      transposed ? SmallVector<int64_t>{n, k} : SmallVector<int64_t>{k, n};
  if (type.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError()
           << what << " " << e << " must be [" << expected[0] << "x"
           << expected[1] << "]" << (transposed ? " (transpose_b)" : "")
           << ", got " << type;
  return verifyElementTypesMatch(op, weight, what, input, "input");
}

/// `offsets` is `[experts + 1]`.
static LogicalResult verifyOffsets(Operation *op, Value offsets,
                                   size_t experts) {
  RankedTensorType type = tensorType(offsets);
  if (experts == 0)
    return op->emitOpError() << "needs one weight per expert, got none";
  if (type.getRank() == 1 && type.getDimSize(0) == int64_t(experts) + 1)
    return success();
  return op->emitOpError() << "offsets must be [" << experts + 1 << "] for "
                           << experts << " experts, got " << type;
}

LogicalResult GroupedMatmulOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  if (input.getRank() != 2 || result.getRank() != 2)
    return emitOpError() << "input and result must be [rows, features], got "
                         << input << " and " << result;
  if (failed(verifyOffsets(*this, getOffsets(), getWeights().size())))
    return failure();
  if (failed(verifyDimsMatch(*this, getResult(), "result", 0, getInput(),
                             "input", 0)))
    return failure();
  for (auto [e, weight] : llvm::enumerate(getWeights()))
    if (failed(verifyExpertWeight(*this, weight, "weight", e,
                                  input.getDimSize(1), result.getDimSize(1),
                                  getTransposeB(), getInput())))
      return failure();
  return verifyElementTypesMatch(*this, getResult(), "result", getInput(),
                                 "input");
}

LogicalResult GroupedMatmulWeightGradOp::verify() {
  RankedTensorType dy = getGradOutput().getType(), input = getInput().getType();
  if (input.getRank() != 2 || dy.getRank() != 2)
    return emitOpError()
           << "grad_output and input must be [rows, features], got " << dy
           << " and " << input;
  if (failed(verifyOffsets(*this, getOffsets(), getGradWeights().size())) ||
      failed(verifyDimsMatch(*this, getGradOutput(), "grad_output", 0,
                             getInput(), "input", 0)) ||
      failed(verifyElementTypesMatch(*this, getGradOutput(), "grad_output",
                                     getInput(), "input")))
    return failure();
  for (auto [e, weight] : llvm::enumerate(getGradWeights()))
    if (failed(verifyExpertWeight(*this, weight, "grad_weight", e,
                                  input.getDimSize(1), dy.getDimSize(1),
                                  getTransposeB(), getInput())))
      return failure();
  return success();
}

/// Fails unless the shapes of an expert dispatch or combine agree: `rows`
/// `[rows, features]` on the sending side, `received` `[ranks * rows,
/// features]` (`capacityBounded`: `[rows, features]`) on the receiving one,
/// `counts` `[ranks, local]` and `offsets` `[ranks * local + 1]`.
static LogicalResult verifyExpertExchange(Operation *op, Value rows,
                                          Value received, Value counts,
                                          Value offsets, int64_t gridAxis,
                                          bool capacityBounded) {
  RankedTensorType rowsType = tensorType(rows),
                   receivedType = tensorType(received),
                   countsType = tensorType(counts);
  if (gridAxis < 0)
    return op->emitOpError()
           << "grid_axis must be non-negative, got " << gridAxis;
  if (rowsType.getRank() != 2 || receivedType.getRank() != 2)
    return op->emitOpError()
           << "the rows sent and received must be [rows, features], got "
           << rowsType << " and " << receivedType;
  if (countsType.getRank() != 2)
    return op->emitOpError()
           << "counts must be [ranks, local experts], got " << countsType;
  int64_t ranks = countsType.getDimSize(0), local = countsType.getDimSize(1);
  if (ranks < 1 || local < 1)
    return op->emitOpError()
           << "counts " << countsType << " must have a rank and an expert";
  if (failed(verifyOffsets(op, offsets, size_t(ranks * local))))
    return failure();
  if (capacityBounded) {
    // A capacity's rows: an expert's capacity from each of the ranks, for
    // each of the rank's experts, as many as the rank's own rows.
    if (rowsType.getDimSize(0) % (ranks * local) != 0)
      return op->emitOpError()
             << "capacity_bounded rows must be the " << ranks * local
             << " experts' capacity rows, got " << rowsType;
    if (receivedType != rowsType.clone(receivedType.getElementType()))
      return op->emitOpError()
             << "the rows received must be as many as the rows sent "
             << rowsType << " (capacity_bounded: " << local
             << " local experts' capacity from each of " << ranks
             << " ranks), got " << receivedType;
  } else if (receivedType.getDimSize(0) != ranks * rowsType.getDimSize(0) ||
             receivedType.getDimSize(1) != rowsType.getDimSize(1)) {
    return op->emitOpError()
           << "the rows received must be [" << ranks << " x "
           << rowsType.getDimSize(0) << ", " << rowsType.getDimSize(1)
           << "] (every row of " << ranks << " ranks), got " << receivedType;
  }
  return verifyElementTypesMatch(op, rows, "rows", received, "received");
}

LogicalResult StridedAllReduceOp::verify() {
  // (The accessors return the attributes' bits unsigned.)
  if (int64_t(getGridAxis()) < 0)
    return emitOpError() << "grid_axis must be non-negative, got "
                         << int64_t(getGridAxis());
  if (int64_t(getStride()) < 1)
    return emitOpError() << "stride must be positive, got "
                         << int64_t(getStride());
  return success();
}

/// The strided ZeRO collectives: flat tensors of one element type, the
/// whole (`whole`) a positive multiple of the piece (`piece`).
static LogicalResult verifyStridedPieces(Operation *op, int64_t gridAxis,
                                         int64_t stride, RankedTensorType whole,
                                         RankedTensorType piece) {
  if (gridAxis < 0)
    return op->emitOpError()
           << "grid_axis must be non-negative, got " << gridAxis;
  if (stride < 1)
    return op->emitOpError() << "stride must be positive, got " << stride;
  if (whole.getRank() != 1 || piece.getRank() != 1)
    return op->emitOpError() << "takes and gives flat (1-D) tensors, got "
                             << whole << " and " << piece;
  if (whole.getElementType() != piece.getElementType())
    return op->emitOpError() << "the whole " << whole << " and the piece "
                             << piece << " differ in element type";
  if (piece.getDimSize(0) < 1 || whole.getDimSize(0) % piece.getDimSize(0))
    return op->emitOpError() << "the whole " << whole
                             << " is not a whole number of pieces " << piece;
  return success();
}

LogicalResult StridedReduceScatterOp::verify() {
  return verifyStridedPieces(*this, int64_t(getGridAxis()),
                             int64_t(getStride()), getInput().getType(),
                             getType());
}

LogicalResult StridedAllGatherOp::verify() {
  return verifyStridedPieces(*this, int64_t(getGridAxis()),
                             int64_t(getStride()), getType(),
                             getInput().getType());
}

LogicalResult StridedAllSliceOp::verify() {
  return verifyStridedPieces(*this, int64_t(getGridAxis()),
                             int64_t(getStride()), getInput().getType(),
                             getType());
}

LogicalResult ExpertDispatchOp::verify() {
  if (failed(verifyExpertExchange(*this, getRows(), getReceived(), getCounts(),
                                  getOffsets(), getGridAxis(),
                                  getCapacityBounded())))
    return failure();
  int64_t local = getCounts().getType().getDimSize(1);
  if (getLocalOffsets().getType().getRank() != 1 ||
      getLocalOffsets().getType().getDimSize(0) != local + 1)
    return emitOpError() << "local_offsets must be [" << local + 1 << "] for "
                         << local << " local experts, got "
                         << getLocalOffsets().getType();
  return success();
}

LogicalResult ExpertCombineOp::verify() {
  return verifyExpertExchange(*this, getRows(), getReceived(), getCounts(),
                              getOffsets(), getGridAxis(),
                              getCapacityBounded());
}

/// Fails unless `value` is `[experts]`, the experts of a router.
static LogicalResult verifyPerExpert(Operation *op, Value value, StringRef what,
                                     int64_t experts) {
  RankedTensorType type = tensorType(value);
  if (type.getRank() == 1 && type.getDimSize(0) == experts)
    return success();
  return op->emitOpError() << what << " must be [" << experts << "] (one per "
                           << "expert), got " << type;
}

LogicalResult RouterStatisticsOp::verify() {
  if (failed(verifyTokenRows(*this, getLogits(), "logits")) ||
      failed(verifyTokenRows(*this, getExperts(), "experts")))
    return failure();
  int64_t experts = getLogits().getType().getShape().back();
  int64_t k = getExperts().getType().getShape().back();
  if (tokenDims(getExperts()) != tokenDims(getLogits()))
    return emitOpError() << "experts " << getExperts().getType()
                         << " must have the tokens of logits "
                         << getLogits().getType();
  if (k > experts)
    return emitOpError() << "experts choose " << k << " of " << experts
                         << " experts per token";
  if (failed(verifyPerExpert(*this, getLoad(), "load", experts)) ||
      failed(verifyPerExpert(*this, getProbability(), "probability", experts)))
    return failure();
  if (failed(verifyElementTypesMatch(*this, getLoad(), "load", getLogits(),
                                     "logits")))
    return failure();
  return verifyElementTypesMatch(*this, getProbability(), "probability",
                                 getLogits(), "logits");
}

LogicalResult RouterProbabilityGradOp::verify() {
  if (failed(verifyTokenRows(*this, getLogits(), "logits")) ||
      failed(verifyPerExpert(*this, getGradProbability(), "grad_probability",
                             getLogits().getType().getShape().back())) ||
      failed(verifyElementTypesMatch(*this, getGradProbability(),
                                     "grad_probability", getLogits(),
                                     "logits")))
    return failure();
  if (getGradLogits().getType() != getLogits().getType())
    return emitOpError() << "grad_logits must have the logits' type "
                         << getLogits().getType() << ", got "
                         << getGradLogits().getType();
  return success();
}

/// The checks the load-balancing loss and its gradient share: one or more
/// per-expert vectors of one type (that of `values`' first) and a positive
/// coefficient.
static LogicalResult verifyRouterVectors(Operation *op, ValueRange values,
                                         StringRef what, double coefficient) {
  if (failed(verifyPositiveFinite(op, "coefficient", coefficient)))
    return failure();
  if (values.empty())
    return op->emitOpError() << "needs the " << what << " of one router or "
                             << "more";
  RankedTensorType first = tensorType(values.front());
  if (first.getRank() != 1)
    return op->emitOpError() << what << " must be [experts], got " << first;
  for (auto [index, value] : llvm::enumerate(values))
    if (value.getType() != first)
      return op->emitOpError()
             << what << " #" << index << " has type " << value.getType()
             << ", expected " << first << " as #0";
  return success();
}

LogicalResult LoadBalancingLossOp::verify() {
  if (getLoads().size() != getProbabilities().size())
    return emitOpError() << "has " << getLoads().size() << " loads but "
                         << getProbabilities().size()
                         << " probabilities (one of each per router)";
  if (failed(verifyRouterVectors(*this, getLoads(), "loads",
                                 getCoefficient().convertToDouble())) ||
      failed(verifyRouterVectors(*this, getProbabilities(), "probabilities",
                                 getCoefficient().convertToDouble())))
    return failure();
  if (getLoads().front().getType() != getProbabilities().front().getType())
    return emitOpError() << "probabilities have type "
                         << getProbabilities().front().getType()
                         << " but loads " << getLoads().front().getType();
  return success();
}

LogicalResult LoadBalancingLossGradOp::verify() {
  if (failed(verifyRouterVectors(*this, getLoads(), "loads",
                                 getCoefficient().convertToDouble())))
    return failure();
  if (getGradProbability().getType() != getLoads().front().getType())
    return emitOpError() << "grad_probability must have the loads' type "
                         << getLoads().front().getType() << ", got "
                         << getGradProbability().getType();
  return success();
}

/// The z-loss and its gradient: a positive coefficient and the router's
/// logits [tokens..., experts].
template <typename ZLossOp> static LogicalResult verifyZLoss(ZLossOp op) {
  if (failed(verifyPositiveFinite(op, "coefficient",
                                  op.getCoefficient().convertToDouble())))
    return failure();
  return verifyTokenRows(op, op.getLogits(), "logits");
}

LogicalResult RouterZLossOp::verify() { return verifyZLoss(*this); }

LogicalResult RouterZLossGradOp::verify() { return verifyZLoss(*this); }

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyCrossEntropyShapes(Operation *op, Value logits,
                                              Value labels) {
  int64_t rank = tensorType(logits).getRank();
  if (rank < 2)
    return op->emitOpError() << "logits must have rank >= 2 ([positions..., "
                                "vocab]), got rank "
                             << rank;
  int64_t labelsRank = tensorType(labels).getRank();
  if (labelsRank != rank - 1)
    return op->emitOpError()
           << "labels must have rank " << rank - 1
           << " (the logits' rank without vocab), got rank " << labelsRank;
  for (int64_t dim = 0; dim < labelsRank; ++dim)
    if (failed(
            verifyDimsMatch(op, labels, "labels", dim, logits, "logits", dim)))
      return failure();
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(
          verifyCrossEntropyShapes(getOperation(), getLogits(), getLabels())))
    return failure();
  // The mean (a scalar) or one loss per position.
  RankedTensorType loss = getType();
  if (loss.getRank() != 0 &&
      loss.getShape() != tensorType(getLabels()).getShape())
    return emitOpError() << "result must be tensor<f32> (the mean loss) or "
                            "have the labels' shape (one loss per "
                            "position), got "
                         << loss;
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  return verifyCrossEntropyShapes(getOperation(), getLogits(), getLabels());
}

//===----------------------------------------------------------------------===//
// MultiAdamWOp
//===----------------------------------------------------------------------===//

// The results in their groups, as ODS would name several result groups:
// %new_params:N, %new_exp_avgs:N, %new_exp_avg_sqs:N[, %new_copies:N].
void MultiAdamWOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  if (getNumResults() != 3 * getParams().size() + getCopies().size())
    return; // the verifier says why
  for (auto [group, name] : {std::pair{getNewParams(), "new_params"},
                             std::pair{getNewExpAvgs(), "new_exp_avgs"},
                             std::pair{getNewExpAvgSqs(), "new_exp_avg_sqs"},
                             std::pair{getNewCopies(), "new_copies"}})
    if (!group.empty())
      setNameFn(group.front(), name);
}

LogicalResult MultiAdamWOp::verify() {
  size_t count = getParams().size();
  if (count == 0)
    return emitOpError() << "must update at least one parameter";
  if (getGrads().size() != count || getExpAvgs().size() != count ||
      getExpAvgSqs().size() != count)
    return emitOpError() << "takes " << count << " parameters but "
                         << getGrads().size() << " gradients, "
                         << getExpAvgs().size() << " first moments and "
                         << getExpAvgSqs().size()
                         << " second moments; each needs one of each";
  size_t copies = getCopies().size();
  if (copies != 0 && copies != count)
    return emitOpError() << "takes " << count << " parameters but " << copies
                         << " 16-bit copies; give each parameter one, or "
                            "none";
  if (getNumResults() != 3 * count + copies)
    return emitOpError() << "has " << getNumResults() << " results; " << count
                         << " parameter" << (count == 1 ? "" : "s")
                         << (copies ? ", " : " and ") << "their moments"
                         << (copies ? " and copies" : "") << " need "
                         << 3 * count + copies;
  Type element = tensorType(getParams().front()).getElementType();
  for (size_t i = 0; i < count; ++i) {
    Type type = getParams()[i].getType();
    if (tensorType(getParams()[i]).getElementType() != element)
      return emitOpError() << "parameter #" << i << " is " << type
                           << "; one multi_adamw updates one dtype (" << element
                           << ")";
    for (Value other : std::initializer_list<Value>{
             getGrads()[i], getExpAvgs()[i], getExpAvgSqs()[i],
             getNewParams()[i], getNewExpAvgs()[i], getNewExpAvgSqs()[i]})
      if (other.getType() != type)
        return emitOpError() << "parameter #" << i << " is " << type
                             << " but its gradient, moments or results are "
                             << other.getType();
    if (!copies)
      continue;
    for (Value copy :
         std::initializer_list<Value>{getCopies()[i], getNewCopies()[i]}) {
      auto copyType = tensorType(copy);
      if (copyType.getShape() != tensorType(getParams()[i]).getShape() ||
          !isa<BFloat16Type, Float16Type>(copyType.getElementType()) ||
          copyType.getElementType() !=
              tensorType(getCopies().front()).getElementType())
        return emitOpError()
               << "parameter #" << i << " is " << type << " but its copy is "
               << copy.getType()
               << "; a copy is the parameter's shape in bf16 or f16, one "
                  "type for all the copies";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// GlobalNormOp
//===----------------------------------------------------------------------===//

LogicalResult GlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "must have at least one input";
  return success();
}

LogicalResult SumSquaresOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "must have at least one input";
  return success();
}

Value mlir::mt::getAccumulator(Operation *op) {
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return matmul.getAccumulator();
  if (auto grad = dyn_cast<MatmulBiasGradOp>(op))
    return grad.getAccumulator();
  if (auto grad = dyn_cast<EmbeddingGradOp>(op))
    return grad.getAccumulator();
  return Value();
}

bool mlir::mt::isWritableAccumulator(Value acc) {
  Operation *producer = acc.getDefiningOp();
  return acc.hasOneUse() && producer &&
         !isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, tensor::EmptyOp,
              shard::SendOp, shard::RecvOp, AdamWOp, MultiAdamWOp>(producer);
}

#include "dialects/MT/IR/MTInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/MT/IR/MTOps.cpp.inc"
