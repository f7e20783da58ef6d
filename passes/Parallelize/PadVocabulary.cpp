//===- PadVocabulary.cpp - Vocabulary tables padded to a multiple ---------===//
//
// Megatron-LM pads the vocabulary to a multiple of
// `--make-vocab-size-divisible-by` (default 128) times tp: tensor
// parallelism needs the table to split into equal row ranges, and a GPU
// GEMM whose dimensions are multiples of 8 (16-bit) runs on aligned
// tensor-core tiles; GPT-2's 50257 rows are neither. Unlike Megatron-LM,
// whose padded logits take part in the softmax, the padding here is masked
// out of the loss, so a padded model trains exactly the unpadded one.
//
//===----------------------------------------------------------------------===//

#include "passes/Parallelize/PadVocabulary.h"

#include "dialects/MT/IR/MTOps.h"
#include "megatron/Analysis/ShapeInference.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

#include <limits>

using namespace mlir;
using namespace mlir::mt;

LogicalResult mlir::mt::padVocabulary(func::FuncOp function, int64_t multiple) {
  if (multiple <= 1)
    return success();
  Block &body = function.getBody().front();
  Builder b(function.getContext());
  auto padded = [&](int64_t rows) {
    return (rows + multiple - 1) / multiple * multiple;
  };

  // The vocabulary tables, by parameter name (their optimizer state carries
  // the same name and no role of its own).
  llvm::StringSet<> tables;
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
    auto name =
        function.getArgAttrOfType<StringAttr>(i, MTDialect::getParamAttrName());
    if (!name || function.getArgAttr(i, MTDialect::getStateAttrName()))
      continue;
    std::optional<ParallelRole> role = ParallelRole::fromAttr(
        function.getArgAttr(i, MTDialect::getParallelAttrName()));
    if (role && role->kind == ParallelRole::Kind::Vocab)
      tables.insert(name.getValue());
  }

  std::optional<int64_t> vocab;
  for (BlockArgument arg : body.getArguments()) {
    unsigned index = arg.getArgNumber();
    auto name = function.getArgAttrOfType<StringAttr>(
        index, MTDialect::getParamAttrName());
    if (!name || !tables.contains(name.getValue()))
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    int64_t rows = type.getDimSize(0);
    // Padded before (by a smaller multiple): the true size stays.
    int64_t real = rows;
    auto valid = function.getArgAttrOfType<IntegerAttr>(
        index, MTDialect::getValidRowsAttrName());
    if (valid)
      real = valid.getInt();
    if (rows % multiple == 0)
      continue;
    if (rows > std::numeric_limits<int64_t>::max() - (multiple - 1))
      return function.emitOpError()
             << "cannot pad parameter '" << name.getValue() << "' of " << rows
             << " rows to a multiple of " << multiple
             << " (make-vocab-size-divisible-by x tp): the rows overflow "
                "int64";
    vocab = real;
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = padded(rows);
    arg.setType(RankedTensorType::get(shape, type.getElementType()));
    function.setArgAttr(index, MTDialect::getValidRowsAttrName(),
                        b.getI64IntegerAttr(real));
  }
  if (!vocab)
    return success();
  for (Operation &op : body.without_terminator()) {
    if (isa<EmbeddingOp, EmbeddingGradOp, CrossEntropyOp, CrossEntropyGradOp>(
            op) &&
        !op.hasAttr(MTDialect::getVocabSizeAttrName()))
      op.setAttr(MTDialect::getVocabSizeAttrName(),
                 b.getI64IntegerAttr(*vocab));
    if (auto grad = dyn_cast<EmbeddingGradOp>(op)) {
      // The table gradient has the (padded) table's rows.
      RankedTensorType type = grad.getType();
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = padded(shape[0]);
      grad.getResult().setType(
          RankedTensorType::get(shape, type.getElementType()));
      continue;
    }
    FailureOr<SmallVector<Type>> types = inferResultTypes(&op);
    if (failed(types))
      return failure();
    for (auto [result, type] : llvm::zip_equal(op.getResults(), *types))
      result.setType(type);
  }
  function.setFunctionType(
      FunctionType::get(function.getContext(), body.getArgumentTypes(),
                        body.getTerminator()->getOperandTypes()));
  return success();
}
