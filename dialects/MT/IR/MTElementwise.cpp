//===- MTElementwise.cpp - Scalar semantics of the elementwise mt ops -----===//
//
// Each elementwise op's ElementwiseOpInterface: the C expression of one
// result element, which the kernel emitter writes into generated kernels
// (megatron/Target/KernelEmitter.h). The `mt_*` helpers are defined in the
// generated-kernel prelude (mtrt/GeneratedKernelPrelude.h), which compiles
// both as host C++ and as CUDA. Also the verifier of mt.fusion, the region
// these expressions are fused in.
//
//===----------------------------------------------------------------------===//

#include "dialects/MT/IR/MTOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::mt;

namespace {
std::string call(StringRef function, ArrayRef<std::string> args) {
  return (function + "(" + llvm::join(args, ", ") + ")").str();
}

std::string binary(StringRef op, ArrayRef<std::string> args) {
  return "(" + args[0] + " " + op.str() + " " + args[1] + ")";
}

/// A float literal that reads back as the same float.
std::string floatLiteral(double value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.9g", float(value));
  if (text.find_first_of(".en") == std::string::npos)
    text += ".0";
  return text + "f";
}
} // namespace

std::string AddOp::scalarExpression(ArrayRef<std::string> operands) {
  return binary("+", operands);
}
int64_t AddOp::flopsPerElement() { return 1; }

std::string MulOp::scalarExpression(ArrayRef<std::string> operands) {
  return binary("*", operands);
}
int64_t MulOp::flopsPerElement() { return 1; }

std::string BiasAddOp::scalarExpression(ArrayRef<std::string> operands) {
  return binary("+", operands);
}
bool BiasAddOp::isRowBroadcastOperand(unsigned index) { return index == 1; }
int64_t BiasAddOp::flopsPerElement() { return 1; }

std::string GeluOp::scalarExpression(ArrayRef<std::string> operands) {
  return call("mt_gelu", operands);
}
int64_t GeluOp::flopsPerElement() { return 8; }

/// The kernel emitter passes, after the input, the C expression of the
/// dropout's parameter block in the kernel (mtrt::FusedDropoutWord); the
/// element's index is the loop's `i`. An elementwise kernel only: a row
/// kernel's loops index rows (mt-fuse does not put dropout there).
std::string DropoutOp::scalarExpression(ArrayRef<std::string> operands) {
  assert(operands.size() == 3 &&
         "the input, the parameter block and its Philox cache");
  return "mt_dropout(" + operands[1] + ", i, " + operands[0] + ", " +
         operands[2] + ")";
}
int64_t DropoutOp::flopsPerElement() { return 1; }

std::string GeluGradOp::scalarExpression(ArrayRef<std::string> operands) {
  return call("mt_gelu_grad", operands);
}
int64_t GeluGradOp::flopsPerElement() { return 14; }

std::string SiluOp::scalarExpression(ArrayRef<std::string> operands) {
  return call("mt_silu", operands);
}
int64_t SiluOp::flopsPerElement() { return 4; }

std::string SiluGradOp::scalarExpression(ArrayRef<std::string> operands) {
  return call("mt_silu_grad", operands);
}
int64_t SiluGradOp::flopsPerElement() { return 8; }

// The cap as a float literal: the generated kernels compute in float (the
// host kernels in double).
std::string SoftcapOp::scalarExpression(ArrayRef<std::string> operands) {
  return "mt_softcap(" + operands[0] + ", " +
         floatLiteral(getCap().convertToDouble()) + ")";
}
int64_t SoftcapOp::flopsPerElement() { return 4; }

std::string SoftcapGradOp::scalarExpression(ArrayRef<std::string> operands) {
  return "mt_softcap_grad(" + operands[0] + ", " + operands[1] + ", " +
         floatLiteral(getCap().convertToDouble()) + ")";
}
int64_t SoftcapGradOp::flopsPerElement() { return 6; }

std::string ScaleOp::scalarExpression(ArrayRef<std::string> operands) {
  // As the host kernel: the factor is rounded to float first.
  return "(" + floatLiteral(getFactor().convertToDouble()) + " * " +
         operands[0] + ")";
}
int64_t ScaleOp::flopsPerElement() { return 1; }

LogicalResult ScaleOp::verify() {
  // A generated kernel writes the factor as a float literal: it must be one.
  double factor = getFactor().convertToDouble();
  if (!std::isfinite(factor) || std::fabs(factor) > 3.4028234663852886e38)
    return emitOpError() << "factor " << factor
                         << " is not a finite single-precision number";
  return success();
}

std::string CastOp::scalarExpression(ArrayRef<std::string> operands) {
  // The value is float; the emitter rounds it to the result's type.
  return operands[0];
}
int64_t CastOp::flopsPerElement() { return 0; }

//===----------------------------------------------------------------------===//
// mt.fusion
//===----------------------------------------------------------------------===//

Operation *FusionOp::getRowReduction() {
  for (Operation &op : getBody().front())
    if (isa<CrossEntropyOp, CrossEntropyGradOp, LayerNormOp, RMSNormOp,
            LayerNormGradOp, RMSNormGradOp>(op))
      return &op;
  return nullptr;
}

int64_t FusionOp::getDomainElements() {
  if (Operation *row = getRowReduction()) {
    if (isa<LayerNormOp, RMSNormOp, LayerNormGradOp, RMSNormGradOp>(row)) {
      // The norm's input (after the output gradient in the backward).
      auto input = cast<RankedTensorType>(
          row->getOperand(isa<LayerNormOp, RMSNormOp>(row) ? 0 : 1).getType());
      return input.getNumElements() /
             std::max<int64_t>(1, input.getShape().back());
    }
    Value labels = isa<CrossEntropyOp>(row)
                       ? cast<CrossEntropyOp>(row).getLabels()
                       : cast<CrossEntropyGradOp>(row).getLabels();
    return cast<RankedTensorType>(labels.getType()).getNumElements();
  }
  return cast<RankedTensorType>(getResult(0).getType()).getNumElements();
}

/// A norm row fusion: elementwise ops over whole rows (a bias broadcast
/// along them) computing the input of one mt.layer_norm or mt.rms_norm,
/// which ends the region; its weight and bias are the region's inputs.
/// A row kernel writes what the region's ops compute, each once.
static LogicalResult verifyRowYields(FusionOp fusion, Block &body) {
  auto yielded = cast<YieldOp>(body.getTerminator()).getValues();
  for (Value value : yielded)
    if (isa<BlockArgument>(value) || llvm::count(yielded, value) != 1)
      return fusion.emitOpError()
             << "yields an input or a value twice; a row fusion yields what "
                "its ops compute, once each";
  return success();
}

/// An elementwise op of a norm's row fusion (`role` says where it may
/// stand): it computes whole rows of `elements / cols`, reading whole rows
/// or one row broadcast along them.
static LogicalResult verifyWholeRowOp(Operation &op, int64_t elements,
                                      int64_t cols, StringRef role) {
  auto elementwise = dyn_cast<ElementwiseOpInterface>(&op);
  if (!elementwise)
    return op.emitOpError() << "cannot join a row fusion of a norm" << role;
  if (isa<DropoutOp>(op))
    return op.emitOpError()
           << "cannot join a row fusion of a norm: a fused dropout draws its "
              "mask by the element's index, which only an elementwise "
              "fusion's loop has";
  if (cast<RankedTensorType>(op.getResult(0).getType()).getNumElements() !=
      elements)
    return op.emitOpError() << "must compute whole rows: " << elements
                            << " elements, as the norm's input";
  for (OpOperand &operand : op.getOpOperands()) {
    int64_t size =
        cast<RankedTensorType>(operand.get().getType()).getNumElements();
    bool broadcast =
        elementwise.isRowBroadcastOperand(operand.getOperandNumber()) &&
        size != elements;
    if (broadcast ? size != cols : size != elements)
      return op.emitOpError()
             << "operand #" << operand.getOperandNumber() << " has " << size
             << " elements: a row fusion reads whole rows of " << cols
             << " or one row broadcast along them";
  }
  return success();
}

static LogicalResult verifyNormFusion(FusionOp fusion, Block &body,
                                      Operation *norm) {
  if (failed(verifyRowYields(fusion, body)))
    return failure();
  auto input = cast<RankedTensorType>(norm->getOperand(0).getType());
  int64_t cols = input.getShape().back(), elements = input.getNumElements();
  for (Operation &op : body.without_terminator()) {
    if (&op == norm) {
      for (Value operand : op.getOperands().drop_front())
        if (!isa<BlockArgument>(operand))
          return op.emitOpError()
                 << "must read its weight and bias from the fusion's inputs";
      if (&op != body.getTerminator()->getPrevNode())
        return op.emitOpError() << "must end its row fusion: nothing in the "
                                   "region may read the normalized rows";
      continue;
    }
    if (failed(verifyWholeRowOp(op, elements, cols,
                                ": only ops with ElementwiseOpInterface may "
                                "compute the norm's input")))
      return failure();
  }
  return success();
}

/// A norm-backward row fusion: mt.layer_norm_grad or mt.rms_norm_grad
/// first, reading the fusion's inputs, with a row_block (its parameter
/// gradients are per-block partial sums), then elementwise ops over whole
/// rows reading its input gradient (the residual gradient's add).
static LogicalResult verifyNormGradFusion(FusionOp fusion, Block &body,
                                          Operation *grad) {
  if (failed(verifyRowYields(fusion, body)))
    return failure();
  if (grad != &body.front())
    return grad->emitOpError() << "must begin its row fusion";
  for (Value operand : grad->getOperands())
    if (!isa<BlockArgument>(operand))
      return grad->emitOpError()
             << "must read its operands from the fusion's inputs";
  if (!getNormGradRowBlock(grad))
    return grad->emitOpError()
           << "needs a row_block in a row fusion: the kernel writes its "
              "parameter gradients as partial sums per block of rows";
  auto input = cast<RankedTensorType>(grad->getOperand(1).getType());
  int64_t cols = input.getShape().back(), elements = input.getNumElements();
  for (Operation &op : body.without_terminator()) {
    if (&op == grad)
      continue;
    // The parameter gradients are partial sums, not rows: only the input
    // gradient flows on.
    for (Value operand : op.getOperands())
      if (operand.getDefiningOp() == grad &&
          cast<OpResult>(operand).getResultNumber() != 0)
        return op.emitOpError()
               << "reads a parameter gradient of the norm's backward: in a "
                  "row fusion those are partial sums per block of rows";
    if (failed(verifyWholeRowOp(op, elements, cols,
                                "'s backward: only ops with "
                                "ElementwiseOpInterface may follow it")))
      return failure();
  }
  return success();
}

/// A row fusion: cross-entropy losses per position and the logits'
/// gradient, of one pair of logits and labels, in any combination.
static LogicalResult verifyRowFusion(FusionOp fusion, Block &body) {
  if (failed(verifyRowYields(fusion, body)))
    return failure();
  Value logits, labels;
  for (Operation &op : body.without_terminator()) {
    Value opLogits, opLabels;
    if (auto loss = dyn_cast<CrossEntropyOp>(op)) {
      if (loss.getType().getRank() == 0)
        return op.emitOpError()
               << "computes the mean loss; inside an mt.fusion it must "
                  "return the per-position losses (followed by mt.mean)";
      opLogits = loss.getLogits();
      opLabels = loss.getLabels();
    } else if (auto grad = dyn_cast<CrossEntropyGradOp>(op)) {
      opLogits = grad.getLogits();
      opLabels = grad.getLabels();
      if (!isa<BlockArgument>(grad.getGradLoss()))
        return op.emitOpError()
               << "must take its loss gradient from the fusion's inputs";
    } else {
      return op.emitOpError()
             << "cannot join a row fusion: only mt.cross_entropy and "
                "mt.cross_entropy_grad may appear beside each other";
    }
    if (!isa<BlockArgument>(opLogits) || !isa<BlockArgument>(opLabels))
      return op.emitOpError()
             << "must read its logits and labels from the fusion's inputs";
    if (logits && (logits != opLogits || labels != opLabels))
      return op.emitOpError() << "reads other logits or labels than the "
                                 "row fusion's first op";
    if (llvm::count_if(body.without_terminator(), [&](Operation &other) {
          return other.getName() == op.getName();
        }) != 1)
      return op.emitOpError() << "appears twice in one row fusion";
    logits = opLogits;
    labels = opLabels;
  }
  return success();
}

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (body.empty() || !isa<YieldOp>(body.back()))
    return emitOpError() << "must end with mt.yield";
  if (getNumResults() == 0)
    return emitOpError() << "must have at least one result";
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size()
                         << " inputs but its block has "
                         << body.getNumArguments() << " arguments";
  for (auto [index, input, arg] :
       llvm::enumerate(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError() << "input #" << index << " has type "
                           << input.getType() << " but block argument #"
                           << index << " has " << arg.getType();
  auto yield = cast<YieldOp>(body.back());
  if (TypeRange(yield.getValues().getTypes()) != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().getTypes()
                         << " but has results " << getResultTypes();
  if (Operation *row = getRowReduction()) {
    if (isa<LayerNormOp, RMSNormOp>(row))
      return verifyNormFusion(*this, body, row);
    if (isa<LayerNormGradOp, RMSNormGradOp>(row))
      return verifyNormGradFusion(*this, body, row);
    return verifyRowFusion(*this, body);
  }
  for (auto [index, input] : llvm::enumerate(getInputs()))
    if (!isa<FloatType>(
            cast<RankedTensorType>(input.getType()).getElementType()))
      return emitOpError() << "input #" << index << " is " << input.getType()
                           << "; an elementwise fusion reads floats (token "
                              "ids only reach a fused cross-entropy)";
  int64_t domain = getDomainElements();
  for (Operation &op : body.without_terminator()) {
    auto elementwise = dyn_cast<ElementwiseOpInterface>(&op);
    if (!elementwise)
      return op.emitOpError()
             << "cannot be fused: only ops with ElementwiseOpInterface may "
                "appear in an mt.fusion";
    for (Value result : op.getResults())
      if (cast<RankedTensorType>(result.getType()).getNumElements() != domain)
        return op.emitOpError()
               << "has " << cast<RankedTensorType>(result.getType())
               << " but the fusion's iteration domain has " << domain
               << " elements";
    for (OpOperand &operand : op.getOpOperands()) {
      int64_t size =
          cast<RankedTensorType>(operand.get().getType()).getNumElements();
      bool broadcast =
          elementwise.isRowBroadcastOperand(operand.getOperandNumber());
      if (broadcast ? (size == 0 || domain % size != 0) : size != domain)
        return op.emitOpError()
               << "operand #" << operand.getOperandNumber() << " has " << size
               << " elements, which does not "
               << (broadcast ? "divide" : "equal")
               << " the fusion's iteration domain of " << domain;
    }
  }
  return success();
}
