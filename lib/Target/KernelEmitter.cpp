//===- KernelEmitter.cpp - mt.fusion regions to kernel source -------------===//

#include "megatron/Target/KernelEmitter.h"

#include "mtrt/GeneratedKernelPrelude.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::mt;

namespace {

int64_t numElements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

Type elementType(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

/// The C type operands of `type` are stored as.
StringRef storageType(Type type) { return type.isF32() ? "float" : "uint16_t"; }

/// `expr` (a float) as stored in `type`, and read back from it.
std::string narrow(Type type, const std::string &expr) {
  if (type.isBF16())
    return "mt_to_bf16(" + expr + ")";
  if (type.isF16())
    return "mt_to_f16(" + expr + ")";
  return expr;
}
std::string widen(Type type, const std::string &expr) {
  if (type.isBF16())
    return "mt_from_bf16(" + expr + ")";
  if (type.isF16())
    return "mt_from_f16(" + expr + ")";
  return expr;
}

/// Prints `expr` (a float) as the local `name` of element type `type`. A
/// 16-bit value is rounded once: its bits `<name>_bits` (what a store
/// writes; narrowing the rounded float again would repeat the rounding)
/// and, with `readBack`, the float they hold as `name`. Returns the bits'
/// name, or "" for f32.
std::string printLocal(llvm::raw_ostream &os, StringRef indent,
                       const std::string &name, Type type,
                       const std::string &expr, bool readBack = true) {
  if (type.isF32()) {
    os << indent << "const float " << name << " = " << expr << ";\n";
    return "";
  }
  std::string bits = name + "_bits";
  os << indent << "const uint16_t " << bits << " = " << narrow(type, expr)
     << ";\n";
  if (readBack)
    os << indent << "const float " << name << " = " << widen(type, bits)
       << ";\n";
  return bits;
}

/// The region's dropouts, in order: each takes one parameter block.
SmallVector<DropoutOp> dropoutsOf(FusionOp fusion) {
  SmallVector<DropoutOp> dropouts;
  for (Operation &op : fusion.getBody().front().without_terminator())
    if (auto dropout = dyn_cast<DropoutOp>(op))
      dropouts.push_back(dropout);
  return dropouts;
}

/// A kernel takes at most mtrt::kGeneratedKernelMaxOperands operands, its
/// dropouts' parameter blocks (one pointer) included.
LogicalResult checkOperandCount(FusionOp fusion) {
  Block &body = fusion.getBody().front();
  size_t numOperands = body.getNumArguments() + fusion.getNumResults() +
                       (dropoutsOf(fusion).empty() ? 0 : 1);
  if (numOperands <= size_t(mtrt::kGeneratedKernelMaxOperands))
    return success();
  return fusion.emitOpError() << "has " << numOperands
                              << " operands; a generated kernel takes at most "
                              << mtrt::kGeneratedKernelMaxOperands;
}

/// The kernel's opening: a comment naming the region's ops (and, for a row
/// kernel, its rows), then MT_KERNEL.
void printHeading(llvm::raw_ostream &os, FusionOp fusion, StringRef name,
                  const EmittedKernel &kernel) {
  os << "// " << name << ": " << (kernel.rowLength ? "a row fusion of " : "");
  llvm::interleave(
      fusion.getBody().front().without_terminator(), os,
      [&](Operation &op) { os << op.getName().getStringRef(); }, ", ");
  if (kernel.rowLength)
    os << ", " << kernel.elements << " rows of " << kernel.rowLength;
  os << "\n";
  // A warp per row where a row has at most 1024 columns (32 per thread),
  // else the block (GeneratedKernelPrelude.h). A norm's backward (a
  // row-block kernel) takes MT_NORM_GRAD_ROW_THREADS per row in its first
  // phase, a warp unless a build says the block, and sums its columns in a
  // second phase over the whole block. (A warp per row whose lanes also
  // kept their columns' sums ran GPT-2 124M's slower on an H100: 3.73 ms a
  // step for its 24 instead of 2.96 with the block per row; 24 columns'
  // two sums in double, 168 registers, one block per SM.)
  if (kernel.rowLength)
    os << "#undef MT_ROW_THREADS\n#define MT_ROW_THREADS "
       << (kernel.rowBlock            ? "MT_NORM_GRAD_ROW_THREADS"
           : kernel.rowLength <= 1024 ? "32"
                                      : "256")
       << "\n";
  os << "MT_KERNEL(" << name << ") {\n";
}

/// Declares the operand pointers, the region's inputs (`in<k>`, read-only
/// inputs as MT_INPUT) then its results (`out<k>`), and records their
/// types and extents (`extent` of the value and whether it is an input; -1
/// to be set later). A pointer through which the kernel reads bytes it
/// also writes (`mayAlias`) is a plain pointer, without MT_RESTRICT.
void declareOperands(llvm::raw_ostream &os, FusionOp fusion,
                     EmittedKernel &kernel,
                     llvm::DenseMap<Value, std::string> &pointers,
                     llvm::function_ref<int64_t(Value, bool)> extent,
                     llvm::function_ref<bool(Value)> mayAlias) {
  Block &body = fusion.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  unsigned index = 0;
  auto declare = [&](Value value, bool input, const std::string &pointer) {
    Type element = elementType(value);
    std::string type =
        element.isInteger(32) ? "int32_t" : storageType(element).str();
    std::string constness = input ? "const " : "";
    if (input && !mayAlias(value))
      os << "  MT_INPUT(" << type << ") " << pointer << " = MT_INPUT_ARG("
         << type << ", " << index++ << ");\n";
    else
      os << "  " << constness << type
         << (mayAlias(value) ? " *" : " *MT_RESTRICT ") << pointer << " = ("
         << constness << type << " *)MT_ARG(" << index++ << ");\n";
    kernel.operandTypes.push_back(element);
    kernel.operandExtents.push_back(extent(value, input));
    if (input)
      pointers[value] = pointer;
  };
  for (BlockArgument arg : body.getArguments())
    declare(arg, true, "in" + std::to_string(arg.getArgNumber()));
  for (auto [i, value] : llvm::enumerate(yield.getValues()))
    declare(value, false, "out" + std::to_string(i));
}

/// A row kernel's opening: the heading and its operand pointers, each
/// operand indexed over all its elements (whole rows, one value per row,
/// one row or a scalar).
void openRowKernel(llvm::raw_ostream &os, FusionOp fusion, StringRef name,
                   EmittedKernel &kernel,
                   llvm::DenseMap<Value, std::string> &pointers,
                   llvm::function_ref<bool(Value)> mayAlias) {
  printHeading(os, fusion, name, kernel);
  declareOperands(
      os, fusion, kernel, pointers,
      [](Value value, bool) { return numElements(value); }, mayAlias);
}

/// A row fusion (mt.cross_entropy per position and/or mt.cross_entropy_grad
/// of one pair of logits and labels) as a row kernel: each row's maximum
/// and sum of exponentials once, in one pass over the row
/// (mt_row_softmax_stats), then the loss and the gradient in a second. The
/// gradient recomputes each exponential rather than storing it, so it may
/// overwrite the logits (mt-lower-to-runtime does when nothing reads them
/// afterwards): every column is read before it is written, and the
/// label's logit first of all. Hence no MT_RESTRICT on the row pointers.
FailureOr<EmittedKernel> emitRowKernel(FusionOp fusion, StringRef name) {
  Block &body = fusion.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  CrossEntropyOp loss;
  CrossEntropyGradOp grad;
  for (Operation &op : body.without_terminator()) {
    if (auto lossOp = dyn_cast<CrossEntropyOp>(op))
      loss = lossOp;
    else if (auto gradOp = dyn_cast<CrossEntropyGradOp>(op))
      grad = gradOp;
  }
  Value logits = loss ? loss.getLogits() : grad.getLogits();
  Value labels = loss ? loss.getLabels() : grad.getLabels();
  auto logitsType = cast<RankedTensorType>(logits.getType());
  Type logitsElement = logitsType.getElementType();

  EmittedKernel kernel;
  kernel.elements = numElements(labels);
  kernel.rowLength = logitsType.getShape().back();
  std::string cols = std::to_string(kernel.rowLength) + "LL";
  // A padded vocabulary: the row's columns from its true size on are
  // masked out of the max and the sum, and their gradient is zero.
  int64_t validColumns = kernel.rowLength;
  Operation *crossEntropy = loss ? loss.getOperation() : grad.getOperation();
  if (auto size = crossEntropy->getAttrOfType<IntegerAttr>(
          MTDialect::getVocabSizeAttrName()))
    validColumns = std::clamp<int64_t>(size.getInt(), 1, kernel.rowLength);
  std::string valid = std::to_string(validColumns) + "LL";

  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DenseMap<Value, std::string> pointers;
  // The gradient may overwrite the logits: those rows alias.
  openRowKernel(os, fusion, name, kernel, pointers, [&](Value value) {
    return value.getType() == logits.getType();
  });

  std::string x = pointers[logits];
  os << "  MT_ROW_LOOP(r)\n"
     << "    const int64_t mt_row = r * " << cols << ";\n"
     << "    const int32_t label = " << pointers[labels] << "[r];\n"
     << "    const bool labeled = label >= 0 && label < " << valid << ";\n"
     << "    // The label's logit before anything overwrites the row.\n"
     << "    const float picked = labeled ? "
     << widen(logitsElement, x + "[mt_row + label]") << " : 0.0f;\n"
     << "    // The max and the sum of exponentials in one pass (the sum in\n"
     << "    // double, as the host kernels keep it).\n"
     << "    const mt_softmax_stats mt_st = "
     << "mt_row_softmax_stats<MT_ROW_THREADS>(" << valid
     << ", [&](int64_t c) {\n"
     << "      return " << widen(logitsElement, x + "[mt_row + c]")
     << ";\n    });\n"
     << "    const float m = mt_st.m;\n"
     << "    const double s = mt_st.s;\n";
  // Per element of the row: the max (1), exp and the sum (~12), and for
  // the gradient the exp again, the scale and the label's term (~13).
  kernel.flopsPerElement = 13;
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    if (loss && value == loss.getResult()) {
      os << "    MT_ROW_LEADER "
         << "out" << i
         << "[r] = (float)((double)m + log(s) - (double)picked);\n";
    } else if (grad && value == grad.getResult()) {
      kernel.flopsPerElement += 13;
      // A chunk of each thread's columns loaded before any is written:
      // the gradient overwrites the logits (MT_ROW_FOR_CHUNK).
      os << "    const double kd = (double)" << pointers[grad.getGradLoss()]
         << "[0] / " << kernel.elements << ".0;\n"
         << "    const float k = (float)kd, ks = (float)(kd / s);\n"
         << "    MT_ROW_FOR_CHUNK(mt_c0, " << cols << ")\n"
         << "      float mt_xs[MT_ROW_CHUNK];\n"
         << "      for (int mt_k = 0; mt_k < MT_ROW_CHUNK; ++mt_k) {\n"
         << "        const int64_t c = mt_c0 + mt_k * MT_ROW_STRIDE;\n"
         << "        mt_xs[mt_k] = c < " << cols << " ? "
         << widen(logitsElement, x + "[mt_row + c]") << " : 0.0f;\n"
         << "      }\n"
         << "      for (int mt_k = 0; mt_k < MT_ROW_CHUNK; ++mt_k) {\n"
         << "        const int64_t c = mt_c0 + mt_k * MT_ROW_STRIDE;\n"
         << "        if (c < " << cols << ")\n"
         << "          out" << i << "[mt_row + c] = ";
      std::string value =
          narrow(logitsElement,
                 "mt_exp(mt_xs[mt_k] - m) * ks - (c == label ? k : 0.0f)");
      if (validColumns < kernel.rowLength)
        os << "c < " << valid << " ? " << value << " : "
           << narrow(logitsElement, "0.0f");
      else
        os << value;
      os << ";\n      }\n    MT_ROW_FOR_END\n";
    } else {
      llvm_unreachable("a row fusion yields its one loss and one gradient "
                       "(FusionOp::verify)");
    }
  }
  os << "  MT_ROW_LOOP_END\n}\nMT_ROW_LAUNCHER(" << name << ")\n";
  kernel.source = std::move(text);
  return kernel;
}

/// The float locals of a norm row kernel's elementwise ops at column c of
/// a row (element i): each block argument loaded once per way it is read
/// (whole rows at [i], a row broadcast along them at [c]), each op's result
/// named v<k> in order.
class RowLocals {
public:
  RowLocals(llvm::raw_ostream &os, StringRef indent,
            llvm::DenseMap<Value, std::string> &pointers, int64_t full,
            unsigned firstResult = 0)
      : os(os), indent(indent), pointers(pointers), full(full),
        count(firstResult) {}

  /// `value` as a local: an op's result, or an input loaded here.
  std::string operand(Value value, bool broadcast) {
    if (!isa<BlockArgument>(value))
      return locals.lookup(value);
    auto &cache = broadcast ? rowLocals : locals;
    if (auto it = cache.find(value); it != cache.end())
      return it->second;
    std::string local =
        "a" + std::to_string(cast<BlockArgument>(value).getArgNumber()) +
        (broadcast ? "_row" : "");
    os << indent << "const float " << local << " = "
       << widen(elementType(value),
                pointers[value] + (broadcast ? "[c]" : "[i]"))
       << ";\n";
    cache[value] = local;
    return local;
  }

  /// Names a value computed elsewhere in the kernel (the input gradient),
  /// and its 16-bit bits where it has them.
  void bind(Value value, std::string local, std::string stored = "") {
    locals[value] = local;
    if (!stored.empty())
      bits[value] = stored;
  }
  bool has(Value value) const { return locals.count(value); }
  std::string lookup(Value value) const { return locals.lookup(value); }

  /// Prints elementwise `op` as the next local; returns its name.
  std::string emit(Operation &op) {
    auto elementwise = cast<ElementwiseOpInterface>(&op);
    SmallVector<std::string> args;
    for (OpOperand &use : op.getOpOperands())
      args.push_back(operand(use.get(), elementwise.isRowBroadcastOperand(
                                            use.getOperandNumber()) &&
                                            numElements(use.get()) != full));
    std::string result = "v" + std::to_string(count++);
    std::string stored =
        printLocal(os, indent, result, elementType(op.getResult(0)),
                   elementwise.scalarExpression(args));
    if (!stored.empty())
      bits[op.getResult(0)] = stored;
    locals[op.getResult(0)] = result;
    return result;
  }

  /// What a store of `value` (an op's result) writes: its 16-bit bits as
  /// rounded, or its float.
  std::string stored(Value value) const {
    if (auto it = bits.find(value); it != bits.end())
      return it->second;
    return narrow(elementType(value), locals.lookup(value));
  }

private:
  llvm::raw_ostream &os;
  StringRef indent;
  llvm::DenseMap<Value, std::string> &pointers;
  int64_t full;
  unsigned count;
  llvm::DenseMap<Value, std::string> locals, rowLocals, bits;
};

/// A norm row fusion (elementwise ops computing the input of one
/// mt.layer_norm or mt.rms_norm) as a row kernel: each row's statistics in
/// double, as the host kernels compute them, then the normalized row. The
/// elementwise ops are recomputed in each pass over the row (cheaper than
/// storing what only the region reads) and their yielded results written
/// in the first.
FailureOr<EmittedKernel> emitNormKernel(FusionOp fusion, Operation *norm,
                                        StringRef name) {
  Block &body = fusion.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (failed(checkOperandCount(fusion)))
    return failure();
  Value input = norm->getOperand(0);
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t cols = inputType.getShape().back();
  int64_t full = inputType.getNumElements();
  bool layerNorm = isa<LayerNormOp>(norm);
  double epsilon = layerNorm
                       ? cast<LayerNormOp>(norm).getEpsilon().convertToDouble()
                       : cast<RMSNormOp>(norm).getEpsilon().convertToDouble();

  EmittedKernel kernel;
  kernel.elements = full / cols;
  kernel.rowLength = cols;
  std::string length = std::to_string(cols) + "LL";

  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DenseMap<Value, std::string> pointers;
  openRowKernel(os, fusion, name, kernel, pointers,
                [](Value) { return false; });

  // The elementwise ops for column c of the row (element i), as float
  // locals; with `store`, the yielded ones are written. Returns the norm
  // input's local.
  auto prologue = [&](StringRef indent, bool store) -> std::string {
    os << indent << "const int64_t i = mt_row + c;\n";
    RowLocals locals(os, indent, pointers, full);
    for (Operation &op : body.without_terminator()) {
      if (&op == norm)
        break;
      locals.emit(op);
      if (store)
        for (auto [i, value] : llvm::enumerate(yield.getValues()))
          if (value == op.getResult(0))
            os << indent << "out" << i << "[i] = " << locals.stored(value)
               << ";\n";
    }
    return locals.operand(input, false);
  };

  for (Operation &op : body.without_terminator())
    if (&op != norm)
      kernel.flopsPerElement +=
          3 * cast<ElementwiseOpInterface>(&op).flopsPerElement();
  kernel.flopsPerElement += layerNorm ? 8 : 5;
  // Every digit of the attribute's double, as the host kernels use it.
  std::string eps = llvm::formatv("{0:e17}", epsilon).str();
  os << "  MT_ROW_LOOP(r)\n"
     << "    const int64_t mt_row = r * " << length << ";\n";
  if (layerNorm) {
    // Mean and variance from one reduction of x and x^2 (in double): one
    // round of barriers, and the elementwise ops before the norm computed
    // once fewer.
    os << "    const mt_f64x<2> mt_s = mt_row_sums_f64<2, MT_ROW_THREADS>("
       << length << ", [&](int64_t c) {\n";
    std::string x = prologue("      ", true);
    os << "      const double mt_x = (double)" << x << ";\n"
       << "      return mt_f64x<2>{{mt_x, mt_x * mt_x}};\n    });\n"
       << "    const double mean = mt_s.v[0] / " << cols << ".0;\n"
       << "    const double rstd = 1.0 / sqrt(mt_max2(mt_s.v[1] / " << cols
       << ".0 - mean * mean, 0.0) + " << eps << ");\n";
  } else {
    os << "    const double rstd = 1.0 / sqrt(mt_row_sum_f64<MT_ROW_THREADS>("
       << length << ", [&](int64_t c) {\n";
    std::string x = prologue("      ", true);
    os << "      return (double)" << x << " * (double)" << x << ";\n    }) / "
       << cols << ".0 + " << eps << ");\n";
  }
  os << "    MT_ROW_FOR(c, " << length << ")\n";
  std::string x = prologue("      ", false);
  auto weight = cast<BlockArgument>(norm->getOperand(1));
  std::string normalized = layerNorm ? "((double)" + x + " - mean) * rstd"
                                     : "(double)" + x + " * rstd";
  std::string scale =
      "(double)" + widen(elementType(weight), pointers[weight] + "[c]");
  // A zero-centered weight (Gemma's) scales by 1 + w.
  if (!layerNorm && cast<RMSNormOp>(norm).getZeroCenteredWeight())
    scale = "(1.0 + " + scale + ")";
  std::string value = normalized + " * " + scale;
  if (layerNorm) {
    auto bias = cast<BlockArgument>(norm->getOperand(2));
    value += " + (double)" + widen(elementType(bias), pointers[bias] + "[c]");
  }
  for (auto [i, yielded] : llvm::enumerate(yield.getValues()))
    if (yielded == norm->getResult(0))
      os << "      out" << i
         << "[i] = " << narrow(elementType(yielded), "(float)(" + value + ")")
         << ";\n";
  os << "    MT_ROW_FOR_END\n  MT_ROW_LOOP_END\n}\nMT_ROW_LAUNCHER(" << name
     << ")\n";
  kernel.source = std::move(text);
  return kernel;
}

/// A norm-backward row fusion (mt.layer_norm_grad or mt.rms_norm_grad,
/// then elementwise ops reading its input gradient: the residual
/// gradient's add) as a row-block kernel. Each work item is a block of
/// `row_block` rows, in two phases. Per row (on CUDA a warp each, the
/// block's rows at once): the statistics and the two row sums of the
/// input gradient in double (as the host kernels), kept for the second
/// phase, then per column the input gradient and the ops after it in
/// registers. Then the weight (and bias) gradient terms of the block's
/// rows, added per column in row order and written as one row of partial
/// sums (the input and output gradient read again, from cache).
FailureOr<EmittedKernel> emitNormGradKernel(FusionOp fusion, Operation *grad,
                                            StringRef name) {
  Block &body = fusion.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (failed(checkOperandCount(fusion)))
    return failure();
  bool layerNorm = isa<LayerNormGradOp>(grad);
  Value dy = grad->getOperand(0), x = grad->getOperand(1),
        weight = grad->getOperand(2);
  auto inputType = cast<RankedTensorType>(x.getType());
  int64_t cols = inputType.getShape().back();
  int64_t full = inputType.getNumElements();
  double epsilon =
      layerNorm ? cast<LayerNormGradOp>(grad).getEpsilon().convertToDouble()
                : cast<RMSNormGradOp>(grad).getEpsilon().convertToDouble();
  int64_t rowBlock = int64_t(*getNormGradRowBlock(grad));

  EmittedKernel kernel;
  kernel.elements = full / cols;
  kernel.rowLength = cols;
  kernel.rowBlock = rowBlock;
  std::string length = std::to_string(cols) + "LL";
  std::string block = std::to_string(rowBlock) + "LL";

  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DenseMap<Value, std::string> pointers;
  openRowKernel(os, fusion, name, kernel, pointers,
                [](Value) { return false; });
  auto load = [&](Value value, StringRef index) {
    return "(double)" +
           widen(elementType(value), pointers[value] + "[" + index.str() + "]");
  };
  std::string xi = load(x, "mt_row + c"), dyi = load(dy, "mt_row + c"),
              wc = load(weight, "c");
  // A zero-centered weight (Gemma's) scales by 1 + w.
  if (!layerNorm && cast<RMSNormGradOp>(grad).getZeroCenteredWeight())
    wc = "(1.0 + " + wc + ")";
  // The normalized input of column c.
  std::string xhat = layerNorm ? "(" + xi + " - mean) * rstd" : xi + " * rstd";
  std::string eps = llvm::formatv("{0:e17}", epsilon).str();

  // The parameter gradients: yielded partial sums, one accumulator each.
  SmallVector<std::pair<unsigned, std::string>> sums; // (output, term)
  bool weightGrad = false; // the weight gradient's term reads xhat
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    if (value == grad->getResult(1)) {
      sums.push_back({unsigned(i), "dy * xhat"});
      weightGrad = true;
    } else if (layerNorm && value == grad->getResult(2)) {
      sums.push_back({unsigned(i), "dy"});
    }
  }

  os << "  MT_ROW_BLOCK_LOOP(mt_block, mt_r0, mt_r1, " << block << ")\n";
  if (!sums.empty())
    os << "    MT_ROW_BLOCK_STATS(mt_stats, " << block << ")\n";
  os << "    MT_BLOCK_ROWS(r, mt_r0, mt_r1)\n"
     << "      const int64_t mt_row = r * " << length << ";\n";
  // The row's statistics in one reduction: the sums of x and x^2 give the
  // mean and variance, those of g = dy w and g x the means of g and of
  // g xhat = g (x - mean) rstd (four block-wide sums, each a round of
  // barriers, took the row's time on a GPU).
  std::string n = std::to_string(cols) + ".0";
  if (layerNorm)
    os << "      const mt_f64x<4> mt_s = mt_row_sums_f64<4, MT_ROW_THREADS>("
       << length << ", [&](int64_t c) {\n"
       << "        const double mt_x = " << xi << ", mt_g = " << dyi << " * "
       << wc << ";\n"
       << "        return mt_f64x<4>{{mt_x, mt_x * mt_x, mt_g, mt_g * mt_x}};\n"
       << "      });\n"
       << "      const double mean = mt_s.v[0] / " << n << ";\n"
       << "      const double rstd = 1.0 / sqrt(mt_max2(mt_s.v[1] / " << n
       << " - mean * mean, 0.0) + " << eps << ");\n"
       << "      const double meanG = mt_s.v[2] / " << n << ";\n"
       << "      const double meanGXhat = rstd * (mt_s.v[3] / " << n
       << " - mean * meanG);\n";
  else
    os << "      const mt_f64x<2> mt_s = mt_row_sums_f64<2, MT_ROW_THREADS>("
       << length << ", [&](int64_t c) {\n"
       << "        const double mt_x = " << xi << ";\n"
       << "        return mt_f64x<2>{{mt_x * mt_x, " << dyi << " * " << wc
       << " * mt_x}};\n"
       << "      });\n"
       << "      const double rstd = 1.0 / sqrt(mt_s.v[0] / " << n << " + "
       << eps << ");\n"
       << "      const double meanGXhat = rstd * mt_s.v[1] / " << n << ";\n";
  // The statistics the column sums' second phase reads.
  if (!sums.empty())
    os << "      MT_ROW_LEADER {\n"
       << "        mt_stats[r - mt_r0][0] = " << (layerNorm ? "mean" : "0.0")
       << ";\n"
       << "        mt_stats[r - mt_r0][1] = rstd;\n"
       << "      }\n";
  os << "      MT_ROW_FOR(c, " << length << ")\n"
     << "        const int64_t i = mt_row + c;\n"
     << "        const double xhat = " << xhat << ";\n"
     << "        const double dy = " << dyi << ";\n"
     << "        const double g = dy * " << wc << ";\n";
  Value gradInput = grad->getResult(0);
  std::string dx = layerNorm ? "rstd * (g - meanG - xhat * meanGXhat)"
                             : "rstd * (g - xhat * meanGXhat)";
  std::string gradBits = printLocal(
      os, "        ", "v0", elementType(gradInput), "(float)(" + dx + ")");
  // The ops after the norm's backward, on the input gradient in registers.
  RowLocals locals(os, "        ", pointers, full, /*firstResult=*/1);
  locals.bind(gradInput, "v0", gradBits);
  kernel.flopsPerElement = layerNorm ? 20 : 14;
  for (Operation &op : body.without_terminator()) {
    if (&op == grad)
      continue;
    locals.emit(op);
    kernel.flopsPerElement +=
        cast<ElementwiseOpInterface>(&op).flopsPerElement();
  }
  for (auto [i, value] : llvm::enumerate(yield.getValues()))
    if (locals.has(value))
      os << "        out" << i << "[i] = " << locals.stored(value) << ";\n";
  os << "      MT_ROW_FOR_END\n    MT_BLOCK_ROWS_END\n";
  // The column sums: each column's terms added in row order, as the host
  // kernels add them, whoever adds them.
  if (!sums.empty()) {
    os << "    MT_BLOCK_SYNC\n";
    for (auto [output, term] : sums)
      os << "    MT_COLUMN_SUMS(mt_sum" << output << ", " << length << ")\n";
    // Each row's statistics as the first phase kept them, so that xhat is
    // the first phase's expression and value.
    os << "    for (int64_t mt_k = 0; mt_k < " << block << "; ++mt_k) {\n"
       << "      const int64_t r = mt_r0 + mt_k;\n"
       << "      if (r >= mt_r1)\n"
       << "        break;\n"
       << "      const int64_t mt_row = r * " << length << ";\n";
    if (layerNorm)
      os << "      const double mean = mt_stats[mt_k][0];\n";
    os << "      const double rstd = mt_stats[mt_k][1];\n"
       << "      MT_BLOCK_FOR(c, " << length << ")\n"
       << "        const double dy = " << dyi << ";\n";
    if (weightGrad)
      os << "        const double xhat = " << xhat << ";\n";
    for (auto [output, term] : sums)
      os << "        MT_COLUMN_AT(mt_sum" << output << ", c) += " << term
         << ";\n";
    os << "      MT_BLOCK_FOR_END\n    }\n";
    os << "    MT_BLOCK_FOR(c, " << length << ")\n";
    for (auto [output, term] : sums)
      os << "      out" << output << "[mt_block * " << length << " + c] = "
         << narrow(elementType(yield.getValues()[output]),
                   "(float)MT_COLUMN_AT(mt_sum" + std::to_string(output) +
                       ", c)")
         << ";\n";
    os << "    MT_BLOCK_FOR_END\n"
       << "    MT_BLOCK_SYNC // the next block's rows write mt_stats\n";
  }
  os << "  MT_ROW_BLOCK_LOOP_END\n}\nMT_ROW_BLOCK_LAUNCHER(" << name << ", "
     << block << ")\n";
  kernel.source = std::move(text);
  return kernel;
}

} // namespace

FailureOr<EmittedKernel> mlir::mt::emitFusedKernel(FusionOp fusion,
                                                   StringRef name) {
  if (Operation *row = fusion.getRowReduction()) {
    if (isa<LayerNormOp, RMSNormOp>(row))
      return emitNormKernel(fusion, row, name);
    if (isa<LayerNormGradOp, RMSNormGradOp>(row))
      return emitNormGradKernel(fusion, row, name);
    return emitRowKernel(fusion, name);
  }
  EmittedKernel kernel;
  kernel.elements = fusion.getDomainElements();
  Block &body = fusion.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (failed(checkOperandCount(fusion)))
    return failure();

  // The row length of the broadcast operands (one length per kernel).
  int64_t cols = kernel.elements;
  std::optional<int64_t> broadcastLength;
  for (Operation &op : body.without_terminator()) {
    auto elementwise = cast<ElementwiseOpInterface>(&op);
    for (OpOperand &operand : op.getOpOperands()) {
      // A broadcast operand as large as the domain is read as a full one.
      int64_t length = numElements(operand.get());
      if (!elementwise.isRowBroadcastOperand(operand.getOperandNumber()) ||
          length == kernel.elements)
        continue;
      if (broadcastLength && *broadcastLength != length)
        return fusion.emitOpError()
               << "broadcasts operands of " << *broadcastLength << " and "
               << length << " elements; a generated kernel has one row length";
      broadcastLength = length;
      cols = length;
    }
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  printHeading(os, fusion, name, kernel);
  llvm::DenseMap<Value, std::string> pointers;
  // Input extents are set from their uses below.
  declareOperands(
      os, fusion, kernel, pointers,
      [&](Value, bool input) { return input ? -1 : kernel.elements; },
      [](Value) { return false; });
  // The dropouts' parameter blocks follow the operands (one pointer).
  kernel.dropouts = int64_t(dropoutsOf(fusion).size());
  if (kernel.dropouts > 0)
    os << "  const uint64_t *MT_RESTRICT mt_rng = (const uint64_t *)MT_ARG("
       << kernel.operandTypes.size() << ");\n"
       << "  mt_dropout_cache mt_dropout_blocks[" << kernel.dropouts << "];\n";
  // The body is written twice: for the domain's full groups of elements
  // and, each element guarded, for its last (MT_ELEMENT_GROUPS).
  std::string loopBounds = "(i, c, " + std::to_string(cols) + "LL)";
  os << "  MT_ELEMENT_GROUPS" << loopBounds << "\n";
  size_t bodyStart = text.size();

  // One float local per block argument use kind and per op result.
  llvm::DenseMap<Value, std::string> full, broadcast;
  auto load = [&](Value value, bool rowBroadcast) -> std::string {
    auto &cache = rowBroadcast ? broadcast : full;
    if (auto it = cache.find(value); it != cache.end())
      return it->second;
    auto arg = cast<BlockArgument>(value);
    std::string local =
        "a" + std::to_string(arg.getArgNumber()) + (rowBroadcast ? "_row" : "");
    os << "    const float " << local << " = "
       << widen(elementType(arg),
                pointers[arg] + (rowBroadcast ? "[c]" : "[i]"))
       << ";\n";
    int64_t &extent = kernel.operandExtents[arg.getArgNumber()];
    extent = rowBroadcast ? numElements(arg) : kernel.elements;
    cache[value] = local;
    return local;
  };
  unsigned local = 0;
  int64_t dropoutSlot = 0;
  // The 16-bit results' stored bits, by value.
  llvm::DenseMap<Value, std::string> stored;
  for (Operation &op : body.without_terminator()) {
    auto elementwise = cast<ElementwiseOpInterface>(&op);
    SmallVector<std::string> args;
    for (OpOperand &operand : op.getOpOperands()) {
      bool rowBroadcast =
          elementwise.isRowBroadcastOperand(operand.getOperandNumber()) &&
          numElements(operand.get()) != kernel.elements;
      if (isa<BlockArgument>(operand.get()))
        args.push_back(load(operand.get(), rowBroadcast));
      else
        args.push_back(full.lookup(operand.get()));
    }
    if (isa<DropoutOp>(op)) {
      args.push_back("mt_rng + " +
                     std::to_string(dropoutSlot * mtrt::kFusedDropoutWords));
      args.push_back("mt_dropout_blocks[" + std::to_string(dropoutSlot++) +
                     "]");
    }
    kernel.flopsPerElement += elementwise.flopsPerElement();
    std::string result = "v" + std::to_string(local++);
    Value value = op.getResult(0);
    Type type = elementType(value);
    std::string expr = elementwise.scalarExpression(args);
    // The float read back only where the region reads it.
    bool readInRegion = llvm::any_of(
        value.getUsers(), [](Operation *user) { return !isa<YieldOp>(user); });
    if (std::string bits =
            printLocal(os, "    ", result, type, expr, readInRegion);
        !bits.empty())
      stored[value] = bits;
    full[value] = result;
  }
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    if (auto it = stored.find(value); it != stored.end()) {
      os << "    out" << i << "[i] = " << it->second << ";\n";
      continue;
    }
    std::string expr =
        isa<BlockArgument>(value) ? load(value, false) : full.lookup(value);
    os << "    out" << i << "[i] = " << narrow(elementType(value), expr)
       << ";\n";
  }
  std::string loopBody = text.substr(bodyStart);
  os << "  MT_ELEMENT_GROUPS_TAIL" << loopBounds << "\n"
     << loopBody << "  MT_ELEMENT_GROUPS_END\n}\nMT_LAUNCHER(" << name << ")\n";
  // An input no op reads (none today) still has a well-formed extent.
  for (int64_t &extent : kernel.operandExtents)
    if (extent < 0)
      extent = kernel.elements;
  kernel.source = std::move(text);
  return kernel;
}

std::string
mlir::mt::generatedKernelTranslationUnit(ArrayRef<std::string> sources) {
  std::string unit = mtrt::generatedKernelPrelude();
  for (const std::string &source : sources)
    unit += "\n" + source;
  return unit;
}
