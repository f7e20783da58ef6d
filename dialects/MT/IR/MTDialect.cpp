//===- MTDialect.cpp - The mt dialect -------------------------------------===//
//
// Registration of the mt ops and verification of the dialect's attributes:
// `mt.layer` on ops; `mt.param`, `mt.state` and `mt.input` on function
// arguments; `mt.param`, `mt.state` and `mt.output` on function results.
//
//===----------------------------------------------------------------------===//

#include "dialects/MT/IR/MTDialect.h"
#include "dialects/MT/IR/MTOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace mlir::mt;

#include "dialects/MT/IR/MTOpsDialect.cpp.inc"

void MTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MT/IR/MTOps.cpp.inc"
      >();
}

std::optional<int64_t> MTDialect::getLayer(Operation *op) {
  if (auto layer = op->getAttrOfType<IntegerAttr>(getLayerAttrName()))
    return int64_t(layer.getValue().getZExtValue()); // verified: below 2^63
  return std::nullopt;
}

LogicalResult MTDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == getLayerAttrName()) {
    // Any integer type (a hand-written `0`, `255 : ui8`), up to int64's
    // largest value, which getLayer reads.
    auto layer = dyn_cast<IntegerAttr>(attr.getValue());
    if (!layer || layer.getType().isIndex() || layer.getType().isInteger(1) ||
        (!layer.getType().isUnsignedInteger() &&
         layer.getValue().isNegative()) ||
        layer.getValue().getActiveBits() > 63)
      return op->emitOpError()
             << "attribute '" << name
             << "' must be a non-negative integer up to 2^63 - 1, got "
             << attr.getValue();
    return success();
  }
  if (name == getRngBatchAxisAttrName() || name == getRngHeadAxisAttrName() ||
      name == getRngSeqAxisAttrName() || name == getTpVocabAxisAttrName() ||
      name == getVocabSizeAttrName() || name == getPipelineStageAttrName() ||
      name == getMicrobatchAttrName() || name == getMicrobatchesAttrName() ||
      name == getChunkAttrName() || name == getTransferTagAttrName() ||
      name == getMicroBatchSizeAttrName() ||
      name == getFlopsPerTokenAttrName()) {
    auto axis = dyn_cast<IntegerAttr>(attr.getValue());
    if (!axis || !axis.getType().isSignlessInteger(64) ||
        axis.getValue().isNegative())
      return op->emitOpError()
             << "attribute '" << name << "' must be a non-negative i64, got "
             << attr.getValue();
    return success();
  }
  if (name == getRecomputedAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError()
             << "attribute '" << name << "' is a unit attribute, got "
             << attr.getValue();
    return success();
  }
  if (name == getPhaseAttrName()) {
    auto phase = dyn_cast<StringAttr>(attr.getValue());
    if (!phase || !llvm::is_contained(
                      ArrayRef<StringRef>{"forward", "backward", "optimizer"},
                      phase.getValue()))
      return op->emitOpError()
             << "attribute '" << name
             << "' must be \"forward\", \"backward\" or \"optimizer\", got "
             << attr.getValue();
    return success();
  }
  if (name == getParamAttrName())
    return op->emitOpError()
           << "attribute '" << name
           << "' belongs on a function argument, not on an operation";
  return op->emitOpError() << "unknown mt dialect attribute '" << name << "'";
}

//===----------------------------------------------------------------------===//
// Parameter structure: tensor-parallel roles and initializers
//===----------------------------------------------------------------------===//

static constexpr StringLiteral kRoleNames[] = {"column", "row", "vocab",
                                               "replicated"};
static constexpr StringLiteral kInitNames[] = {"normal", "zeros", "ones"};

DictionaryAttr ParallelRole::toAttr(MLIRContext *context) const {
  Builder b(context);
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("role", b.getStringAttr(kRoleNames[int(kind)]))};
  if (isSplit()) {
    entries.push_back(b.getNamedAttr("dim", b.getI64IntegerAttr(dim)));
    if (chunks != 1)
      entries.push_back(b.getNamedAttr("chunks", b.getI64IntegerAttr(chunks)));
  }
  return b.getDictionaryAttr(entries);
}

std::optional<ParallelRole> ParallelRole::fromAttr(Attribute attr) {
  auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
  if (!dict)
    return std::nullopt;
  auto role = dict.getAs<StringAttr>("role");
  if (!role)
    return std::nullopt;
  const StringLiteral *found = llvm::find(kRoleNames, role.getValue());
  if (found == std::end(kRoleNames))
    return std::nullopt;
  ParallelRole result;
  result.kind = Kind(found - std::begin(kRoleNames));
  auto dim = dict.getAs<IntegerAttr>("dim");
  auto chunks = dict.getAs<IntegerAttr>("chunks");
  for (NamedAttribute entry : dict)
    if (!llvm::is_contained({"role", "dim", "chunks"},
                            entry.getName().getValue()))
      return std::nullopt;
  if (!result.isSplit())
    return dim || chunks ? std::nullopt : std::optional<ParallelRole>(result);
  if (!dim || dim.getInt() < 0 || (chunks && chunks.getInt() < 1))
    return std::nullopt;
  result.dim = dim.getInt();
  result.chunks = chunks ? chunks.getInt() : 1;
  return result;
}

DictionaryAttr ParamInitializer::toAttr(MLIRContext *context) const {
  Builder b(context);
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("kind", b.getStringAttr(kindName()))};
  if (kind == Kind::Normal)
    entries.push_back(b.getNamedAttr("std", b.getF64FloatAttr(std)));
  return b.getDictionaryAttr(entries);
}

StringRef ParamInitializer::kindName() const { return kInitNames[int(kind)]; }

std::optional<ParamInitializer> ParamInitializer::fromAttr(Attribute attr) {
  auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
  if (!dict)
    return std::nullopt;
  auto kind = dict.getAs<StringAttr>("kind");
  if (!kind)
    return std::nullopt;
  const StringLiteral *found = llvm::find(kInitNames, kind.getValue());
  if (found == std::end(kInitNames))
    return std::nullopt;
  ParamInitializer result;
  result.kind = Kind(found - std::begin(kInitNames));
  auto std = dict.getAs<FloatAttr>("std");
  if (dict.size() != (result.kind == Kind::Normal ? 2u : 1u))
    return std::nullopt;
  if (result.kind == Kind::Normal) {
    // Finite: the artifact (JSON) has no infinity, and a normal of
    // infinite spread initializes nothing trainable.
    if (!std || !(std.getValueAsDouble() > 0.0) ||
        !std::isfinite(std.getValueAsDouble()))
      return std::nullopt;
    result.std = std.getValueAsDouble();
  }
  return result;
}

/// `mt.parallel` and `mt.init`: a valid role or initializer, on a parameter
/// (not its optimizer state), and a split dimension the tensor has.
static LogicalResult verifyStructureAttr(Operation *op, Type type,
                                         DictionaryAttr attrs,
                                         NamedAttribute attr,
                                         const Twine &where) {
  StringRef name = attr.getName().getValue();
  if (!attrs || !attrs.get(MTDialect::getParamAttrName()) ||
      attrs.get(MTDialect::getStateAttrName()))
    return op->emitOpError()
           << where << ": '" << name << "' belongs on a parameter (with '"
           << MTDialect::getParamAttrName() << "' and no '"
           << MTDialect::getStateAttrName() << "')";
  if (name == MTDialect::getInitAttrName()) {
    if (!ParamInitializer::fromAttr(attr.getValue()))
      return op->emitOpError()
             << where << ": '" << name
             << "' must be {kind = \"normal\", std = S} with a finite S > 0, "
                "{kind = "
                "\"zeros\"} or {kind = \"ones\"}, got "
             << attr.getValue();
    return success();
  }
  std::optional<ParallelRole> role = ParallelRole::fromAttr(attr.getValue());
  if (!role)
    return op->emitOpError()
           << where << ": '" << name
           << "' must be {role = \"column\" | \"row\" | \"vocab\", dim = "
              "D, chunks = K (optional, >= 1)} or {role = \"replicated\"}, "
              "got "
           << attr.getValue();
  // A ZeRO piece is flat: its full shape is the parameter's.
  int64_t rank = -1;
  if (auto full =
          attrs.getAs<DenseI64ArrayAttr>(MTDialect::getFullShapeAttrName()))
    rank = full.size();
  else if (auto tensor = dyn_cast<RankedTensorType>(type))
    rank = tensor.getRank();
  if (role->isSplit() && rank >= 0 && role->dim >= rank)
    return op->emitOpError() << where << ": '" << name << "' splits dimension "
                             << role->dim << " of a tensor of rank " << rank;
  return success();
}

ArrayRef<StringRef> MTDialect::getInputRoles() {
  static const StringRef roles[] = {
      "tokens",     "labels",   "step",         "lr",        "adam_beta1",
      "adam_beta2", "adam_eps", "weight_decay", "clip_grad", "loss_scale"};
  return roles;
}

ArrayRef<StringRef> MTDialect::getOutputRoles() {
  static const StringRef roles[] = {"loss", "grad_norm"};
  return roles;
}

ArrayRef<StringRef> MTDialect::getStateKinds() {
  // The moments first (getMomentKinds), then mt-fuse's 16-bit copy.
  static const StringRef kinds[] = {"exp_avg", "exp_avg_sq", "param_copy"};
  return kinds;
}

ArrayRef<StringRef> MTDialect::getMomentKinds() {
  return getStateKinds().take_front(2);
}

/// Verifies an `mt.input`, `mt.output` or `mt.state` string attribute whose
/// value must be one of `allowed`. `where` is "argument #3" or "result #0".
static LogicalResult verifyRoleAttr(Operation *op, NamedAttribute attr,
                                    ArrayRef<StringRef> allowed,
                                    const Twine &where) {
  auto role = dyn_cast<StringAttr>(attr.getValue());
  if (role && llvm::is_contained(allowed, role.getValue()))
    return success();
  InFlightDiagnostic diag = op->emitOpError()
                            << where << ": '" << attr.getName().getValue()
                            << "' must be one of ";
  llvm::interleave(
      allowed, diag, [&](StringRef name) { diag << '"' << name << '"'; }, ", ");
  return diag << ", got " << attr.getValue();
}

/// Checks that a parameter (or its optimizer state) is a statically shaped
/// float tensor and that no earlier argument or result names the same
/// (parameter, state) pair.
static LogicalResult verifyParamAttr(Operation *op, Type type, bool isResult,
                                     unsigned index, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  StringRef what = isResult ? "result" : "argument";
  auto paramName = dyn_cast<StringAttr>(attr.getValue());
  if (!paramName || paramName.getValue().empty())
    return op->emitOpError()
           << what << " #" << index << ": '" << name
           << "' must be a non-empty string, got " << attr.getValue();
  // It names the tensor in checkpoints and the artifact, JSON documents,
  // whose strings are UTF-8.
  if (size_t bad = 0; !llvm::json::isUTF8(paramName.getValue(), &bad))
    return op->emitOpError()
           << what << " #" << index << ": '" << name
           << "' must be UTF-8 (it names the parameter in checkpoints and "
              "the artifact), but byte "
           << bad << " is not";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !isa<FloatType>(tensor.getElementType()))
    return op->emitOpError()
           << what << " #" << index << " ('" << paramName.getValue()
           << "') is a parameter and must be a statically shaped float "
              "tensor, got "
           << type;

  // Two arguments (or results) naming the same checkpoint tensor would make
  // loading and saving ambiguous. Report the pair once, at the later one.
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return success();
  auto stateOf = [&](unsigned i) {
    return isResult ? function.getResultAttrOfType<StringAttr>(
                          i, MTDialect::getStateAttrName())
                    : function.getArgAttrOfType<StringAttr>(
                          i, MTDialect::getStateAttrName());
  };
  auto paramOf = [&](unsigned i) {
    return isResult ? function.getResultAttrOfType<StringAttr>(
                          i, MTDialect::getParamAttrName())
                    : function.getArgAttrOfType<StringAttr>(
                          i, MTDialect::getParamAttrName());
  };
  // Checked once, at the last argument (result) naming a parameter, over
  // all of them with a map: scanning the earlier ones at each made every
  // verification quadratic (13 of the 16 s that --mt-train-pipeline took on
  // a layer of 1,024 experts, 9,000 arguments after mt-autodiff).
  unsigned count =
      isResult ? function.getNumResults() : function.getNumArguments();
  for (unsigned later = index + 1; later < count; ++later)
    if (paramOf(later))
      return success();
  DenseMap<std::pair<StringAttr, StringAttr>, unsigned> first;
  for (unsigned i = 0; i <= index; ++i) {
    StringAttr param = paramOf(i);
    if (!param)
      continue;
    StringAttr state = stateOf(i);
    auto [seen, inserted] = first.try_emplace({param, state}, i);
    if (inserted)
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << what << "s #" << seen->second << " and #" << i
                              << " both name ";
    if (state)
      diag << state.getValue() << " of ";
    return diag << "parameter '" << param.getValue() << "'";
  }
  return success();
}

bool MTDialect::isShardAttrName(StringRef name) {
  return name == MTDialect::getFullShapeAttrName() ||
         name == MTDialect::getShardAxisAttrName() ||
         name == MTDialect::getShardDimAttrName() ||
         name == MTDialect::getShardChunksAttrName() ||
         name == MTDialect::getPieceAxisAttrName() ||
         name == MTDialect::getValidRowsAttrName() ||
         name == MTDialect::getExpertAxisAttrName();
}

/// `mt.full_shape` (positive dimensions) and the other sharding attributes
/// (non-negative integers) of a sharded argument or result.
static LogicalResult verifyShardAttr(Operation *op, NamedAttribute attr,
                                     const std::string &where) {
  StringRef name = attr.getName().getValue();
  if (name == MTDialect::getFullShapeAttrName()) {
    auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!shape ||
        llvm::any_of(shape.asArrayRef(), [](int64_t dim) { return dim <= 0; }))
      return op->emitOpError() << where << ": '" << name
                               << "' must be an array of positive i64 "
                                  "dimensions, got "
                               << attr.getValue();
    return success();
  }
  auto axis = dyn_cast<IntegerAttr>(attr.getValue());
  if (!axis || !axis.getType().isSignlessInteger(64) ||
      axis.getValue().isNegative())
    return op->emitOpError()
           << where << ": '" << name << "' must be a non-negative i64, got "
           << attr.getValue();
  return success();
}

/// Attributes shared by arguments and results: `mt.param`, and `mt.state`
/// which needs an `mt.param` beside it.
static LogicalResult verifyParamOrState(Operation *op, Type type,
                                        DictionaryAttr attrs, bool isResult,
                                        unsigned index, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  std::string where =
      (isResult ? "result #" : "argument #") + std::to_string(index);
  if (name == MTDialect::getParamAttrName())
    return verifyParamAttr(op, type, isResult, index, attr);
  if (failed(verifyRoleAttr(op, attr, MTDialect::getStateKinds(), where)))
    return failure();
  if (!attrs || !attrs.get(MTDialect::getParamAttrName()))
    return op->emitOpError() << where << ": '" << name << "' needs an '"
                             << MTDialect::getParamAttrName()
                             << "' naming the parameter whose state it is";
  return success();
}

/// `mt.input`: a known role, on an argument that is not also a parameter,
/// and no other argument of the same role (and microbatch, which
/// mt-pipeline gives each of a role's copies): the runtime fills each role
/// once, so a second one would be read uninitialized or overwritten.
static LogicalResult verifyInputAttr(Operation *op, unsigned index,
                                     NamedAttribute attr) {
  std::string where = "argument #" + std::to_string(index);
  if (failed(verifyRoleAttr(op, attr, MTDialect::getInputRoles(), where)))
    return failure();
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return success();
  auto role = cast<StringAttr>(attr.getValue());
  if (auto param = function.getArgAttrOfType<StringAttr>(
          index, MTDialect::getParamAttrName()))
    return op->emitOpError() << where << " is both input '" << role.getValue()
                             << "' and parameter '" << param.getValue() << "'";
  Attribute microbatch =
      function.getArgAttr(index, MTDialect::getMicrobatchAttrName());
  for (unsigned other = 0; other < index; ++other)
    if (function.getArgAttr(other, MTDialect::getInputAttrName()) == role &&
        function.getArgAttr(other, MTDialect::getMicrobatchAttrName()) ==
            microbatch)
      return op->emitOpError() << "arguments #" << other << " and #" << index
                               << " are both input '" << role.getValue() << "'";
  return success();
}

LogicalResult MTDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  // Declarations have no body: take the type from the signature.
  auto function = dyn_cast<FunctionOpInterface>(op);
  Type type = function && regionIndex == 0
                  ? function.getArgumentTypes()[argIndex]
                  : op->getRegion(regionIndex).getArgument(argIndex).getType();
  if (name == getInputAttrName())
    return verifyInputAttr(op, argIndex, attr);
  if (MTDialect::isShardAttrName(name))
    return verifyShardAttr(op, attr, "argument #" + std::to_string(argIndex));
  if (name == getMicrobatchAttrName()) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!index || index.getValue().isNegative())
      return op->emitOpError() << "attribute '" << name << "' on argument #"
                               << argIndex << " must be a non-negative integer";
    return success();
  }
  DictionaryAttr attrs;
  if (function && regionIndex == 0)
    attrs = function.getArgAttrDict(argIndex);
  if (name == getExpertNamesAttrName()) {
    // One checkpoint name per coordinate of the expert axis, beside the
    // parameter and the axis.
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!names || names.empty() || !llvm::all_of(names, [](Attribute name) {
          auto string = dyn_cast<StringAttr>(name);
          return string && !string.getValue().empty();
        }))
      return op->emitOpError()
             << "argument #" << argIndex << ": '" << name
             << "' must be a non-empty array of parameter names, got "
             << attr.getValue();
    if (!attrs || !attrs.get(getParamAttrName()) ||
        !attrs.get(getExpertAxisAttrName()))
      return op->emitOpError() << "argument #" << argIndex << ": '" << name
                               << "' needs '" << getParamAttrName() << "' and '"
                               << getExpertAxisAttrName() << "' beside it";
    return success();
  }
  if (name == getParallelAttrName() || name == getInitAttrName())
    return verifyStructureAttr(op, type, attrs, attr,
                               "argument #" + Twine(argIndex));
  if (name == getFusedInAttrName()) {
    // {tensor = "name", row = R}: a parameter's rows in a published tensor.
    auto fused = dyn_cast<DictionaryAttr>(attr.getValue());
    auto tensor = fused ? fused.getAs<StringAttr>("tensor") : StringAttr();
    auto row = fused ? fused.getAs<IntegerAttr>("row") : IntegerAttr();
    if (!fused || fused.size() != 2 || !tensor || tensor.getValue().empty() ||
        !row || !row.getType().isSignlessInteger(64) ||
        row.getValue().isNegative())
      return op->emitOpError()
             << "argument #" << argIndex << ": '" << name
             << "' must be {tensor = \"name\", row = R} with a non-negative "
                "i64 row, got "
             << attr.getValue();
    if (!attrs || !attrs.get(getParamAttrName()))
      return op->emitOpError()
             << "argument #" << argIndex << ": '" << name << "' needs '"
             << getParamAttrName() << "' beside it";
    auto ranked = dyn_cast<RankedTensorType>(type);
    if (!ranked || ranked.getRank() == 0)
      return op->emitOpError()
             << "argument #" << argIndex << ": '" << name
             << "' states rows of a tensor; the argument has none (" << type
             << ")";
    return success();
  }
  if (name != getParamAttrName() && name != getStateAttrName())
    return op->emitOpError() << "unknown mt dialect argument attribute '"
                             << name << "' on argument #" << argIndex;
  return verifyParamOrState(op, type, attrs, /*isResult=*/false, argIndex,
                            attr);
}

LogicalResult MTDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  // MLIR verifies result attributes only on function-like ops.
  auto function = cast<FunctionOpInterface>(op);
  if (name == getOutputAttrName())
    return verifyRoleAttr(op, attr, getOutputRoles(),
                          "result #" + Twine(resultIndex));
  if (MTDialect::isShardAttrName(name))
    return verifyShardAttr(op, attr, "result #" + std::to_string(resultIndex));
  if (name != getParamAttrName() && name != getStateAttrName())
    return op->emitOpError() << "unknown mt dialect result attribute '" << name
                             << "' on result #" << resultIndex;
  return verifyParamOrState(op, function.getResultTypes()[resultIndex],
                            function.getResultAttrDict(resultIndex),
                            /*isResult=*/true, resultIndex, attr);
}
