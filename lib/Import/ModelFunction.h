//===- ModelFunction.h - The forward function every importer builds -*- C++
//-*-===//
//
// Every model family's importer builds the same kind of function:
// `func.func @<model>(%tokens, %labels, params...) -> tensor<f32>` whose
// parameters state their name, tensor-parallel role and initializer. This
// builds that signature and checks the micro-batch, so that a family's
// importer only declares its parameters and builds its body.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_LIB_IMPORT_MODELFUNCTION_H
#define MEGATRON_LIB_IMPORT_MODELFUNCTION_H

#include "ConfigReader.h"
#include "dialects/MT/IR/MTOps.h"
#include "megatron/Import/HFConfigImport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

#include <string>

namespace mlir::mt::detail {

/// A parameter as the importer declares it, in checkpoint order.
struct DeclaredParameter {
  std::string name;
  SmallVector<int64_t> shape;
  ParallelRole role;
  ParamInitializer init;
  /// Where published weights store it when not under its name: rows from
  /// `fusedRow` on of tensor `fusedIn` (mt.fused_in). Empty: none.
  std::string fusedIn;
  int64_t fusedRow = 0;
};

/// Checks that the micro-batch is positive, within the supported size, and
/// no longer than the model's `positions` (named by the config key
/// `positionsKey`), reporting at `loc`.
inline LogicalResult checkMicroBatch(MicroBatchShape shape, int64_t positions,
                                     StringRef positionsKey, Location loc) {
  if (shape.batchSize <= 0)
    return emitError(loc) << "micro-batch size (--micro-batch-size) must be "
                             "positive, got "
                          << shape.batchSize;
  if (shape.seqLength <= 0)
    return emitError(loc) << "sequence length (--seq-length) must be "
                             "positive, got "
                          << shape.seqLength;
  if (shape.batchSize > ConfigReader::kMaxSize)
    return emitError(loc) << "micro-batch size (--micro-batch-size) "
                          << shape.batchSize << " is more than the largest "
                          << "supported size " << ConfigReader::kMaxSize;
  if (shape.seqLength > positions)
    return emitError(loc) << "sequence length (--seq-length) "
                          << shape.seqLength << " exceeds the config's "
                          << positionsKey << " " << positions;
  return success();
}

/// Builds the module holding `func.func @name(%tokens, %labels, params...)
/// -> tensor<f32>` (the loss), with `mt.input`, `mt.output` and each
/// parameter's `mt.param`, `mt.parallel` and `mt.init`; `body` builds the
/// loss at `builder`'s insertion point from the token ids, the labels and
/// the parameters by name.
inline OwningOpRef<ModuleOp> buildModelFunction(
    OpBuilder &builder, Location loc, StringRef name, MicroBatchShape shape,
    ArrayRef<DeclaredParameter> params,
    llvm::function_ref<Value(Value ids, Value labels,
                             const llvm::StringMap<Value> &paramValues)>
        body) {
  MLIRContext *context = builder.getContext();
  context->getOrLoadDialect<MTDialect>();
  context->getOrLoadDialect<func::FuncDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  Type floatType = builder.getF32Type();
  auto tokenType = RankedTensorType::get({shape.batchSize, shape.seqLength},
                                         builder.getI32Type());
  SmallVector<Type> argTypes = {tokenType, tokenType};
  for (const DeclaredParameter &param : params)
    argTypes.push_back(RankedTensorType::get(param.shape, floatType));
  auto lossType = RankedTensorType::get({}, floatType);
  auto func = func::FuncOp::create(
      builder, loc, name, builder.getFunctionType(argTypes, {lossType}));
  // Each parameter states its name, its tensor-parallel role and its
  // initializer: the passes and the runtime read these, never the name.
  auto input = [&](StringRef role) {
    return builder.getDictionaryAttr(builder.getNamedAttr(
        MTDialect::getInputAttrName(), builder.getStringAttr(role)));
  };
  SmallVector<DictionaryAttr> argAttrs = {input("tokens"), input("labels")};
  for (const DeclaredParameter &param : params) {
    SmallVector<NamedAttribute> attrs = {
        builder.getNamedAttr(MTDialect::getParamAttrName(),
                             builder.getStringAttr(param.name)),
        builder.getNamedAttr(MTDialect::getParallelAttrName(),
                             param.role.toAttr(context)),
        builder.getNamedAttr(MTDialect::getInitAttrName(),
                             param.init.toAttr(context))};
    if (!param.fusedIn.empty())
      attrs.push_back(builder.getNamedAttr(
          MTDialect::getFusedInAttrName(),
          builder.getDictionaryAttr(
              {builder.getNamedAttr("tensor",
                                    builder.getStringAttr(param.fusedIn)),
               builder.getNamedAttr(
                   "row", builder.getI64IntegerAttr(param.fusedRow))})));
    argAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  func.setAllArgAttrs(argAttrs);
  func.setResultAttr(0, MTDialect::getOutputAttrName(),
                     builder.getStringAttr("loss"));

  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  llvm::StringMap<Value> paramValues;
  for (auto [index, param] : llvm::enumerate(params))
    paramValues[param.name] = entry->getArgument(2 + index);
  Value loss = body(entry->getArgument(0), entry->getArgument(1), paramValues);
  func::ReturnOp::create(builder, loc, loss);
  return module;
}

/// What every family's forward-graph builder shares: the parameters it
/// declares (in checkpoint order), the builder, the micro-batch, and the
/// `mt.layer` tag of the block being built. `Derived` provides
/// `declareParameters()` and `buildBody(ids, labels)`.
template <typename Derived> class ModelBuilder {
public:
  ModelBuilder(MicroBatchShape shape, Location loc)
      : shape(shape), loc(loc), builder(loc.getContext()),
        floatType(builder.getF32Type()) {}

  OwningOpRef<ModuleOp> build(StringRef name) {
    auto &self = static_cast<Derived &>(*this);
    self.declareParameters();
    return buildModelFunction(
        builder, loc, name, shape, params,
        [&](Value ids, Value labels, const llvm::StringMap<Value> &values) {
          paramValues = values;
          return self.buildBody(ids, labels);
        });
  }

protected:
  void declare(std::string name, ArrayRef<int64_t> shape, ParallelRole role,
               ParamInitializer init) {
    params.push_back(
        {namePrefix + name, SmallVector<int64_t>(shape), role, init, "", 0});
  }
  /// The parameter declared last is stored in published weights as rows
  /// from `row` on of tensor `tensor` (a name the builder uses).
  void storedIn(const std::string &tensor, int64_t row) {
    params.back().fusedIn = namePrefix + tensor;
    params.back().fusedRow = row;
  }
  Value param(const std::string &name) {
    return paramValues.lookup(namePrefix + name);
  }
  bool has(const std::string &name) {
    return paramValues.count(namePrefix + name);
  }

  /// What every parameter's name starts with in the checkpoint (a
  /// multimodal model's text part, say), before the names the builder uses.
  std::string namePrefix;

  /// [batch, seq, width] activations.
  RankedTensorType activation(int64_t width) {
    return RankedTensorType::get({shape.batchSize, shape.seqLength, width},
                                 floatType);
  }

  /// Marks `op` as part of the transformer block being built.
  template <typename OpTy> OpTy inLayer(OpTy op) {
    if (currentLayer >= 0)
      op->setAttr(MTDialect::getLayerAttrName(),
                  builder.getI64IntegerAttr(currentLayer));
    return op;
  }

  /// The output head (`x` times the [vocab, hidden] table `head`,
  /// transposed) and the mean cross-entropy loss against `labels`.
  /// The mean cross-entropy of the logits `x head^T` (times
  /// `logitScale`, Granite's 1 / logits_scaling) against `labels`.
  /// The logits (times `logitScale`, then soft-capped by `logitSoftcap`
  /// where given) and their mean cross-entropy against `labels`.
  Value headAndLoss(Value x, const std::string &head, int64_t vocab,
                    Value labels, double logitScale = 1.0,
                    std::optional<double> logitSoftcap = std::nullopt) {
    Value logits = MatmulOp::create(builder, loc, activation(vocab), x,
                                    param(head), /*transpose_a=*/false,
                                    /*transpose_b=*/true);
    if (logitScale != 1.0)
      logits = ScaleOp::create(builder, loc, logits,
                               builder.getF64FloatAttr(logitScale));
    if (logitSoftcap)
      logits = SoftcapOp::create(builder, loc, logits,
                                 builder.getF64FloatAttr(*logitSoftcap));
    return CrossEntropyOp::create(
        builder, loc, RankedTensorType::get({}, floatType), logits, labels);
  }

  MicroBatchShape shape;
  Location loc;
  OpBuilder builder;
  Type floatType;
  SmallVector<DeclaredParameter> params;
  llvm::StringMap<Value> paramValues;
  int64_t currentLayer = -1;
};

} // namespace mlir::mt::detail

#endif // MEGATRON_LIB_IMPORT_MODELFUNCTION_H
