//===- Fuse.cpp - Elementwise ops into mt.fusion regions ------------------===//
//
// Greedy producer-consumer grouping in program order (Passes.td states the
// rules). Each group becomes one mt.fusion placed where its last op was;
// its results are the values read outside it.
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion/Passes.h"

#include "dialects/MT/IR/MTOps.h"
#include "mtrt/GeneratedKernelPrelude.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <array>

namespace mlir::mt {
#define GEN_PASS_DEF_FUSEPASS
#include "passes/Fusion/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

int64_t numElements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

/// The marks a region's ops share: one action of the schedule.
std::array<StringRef, 5> markNames() {
  return {MTDialect::getPhaseAttrName(), MTDialect::getMicrobatchAttrName(),
          MTDialect::getChunkAttrName(), MTDialect::getLayerAttrName(),
          MTDialect::getRecomputedAttrName()};
}

SmallVector<Attribute, 5> marksOf(Operation *op) {
  SmallVector<Attribute, 5> marks;
  for (StringRef name : markNames())
    marks.push_back(op->getAttr(name));
  return marks;
}

/// Gives `op` the marks (in marksOf's order) that are set.
void setMarks(Operation *op, ArrayRef<Attribute> marks) {
  for (auto [name, mark] : llvm::zip(markNames(), marks))
    if (mark)
      op->setAttr(name, mark);
}

struct Group {
  SmallVector<Operation *> ops;
  int64_t elements = 0;
  std::optional<int64_t> rowLength;
  SmallVector<Attribute, 5> marks;
  /// The norm that ends a row fusion; nothing joins after it.
  Operation *norm = nullptr;
  /// The norm's backward that begins a row-block fusion.
  Operation *normGrad = nullptr;
};

/// The widest norm whose backward is fused: a CPU thread keeps a block's
/// column sums (two rows of doubles) on its stack.
constexpr int64_t kMaxFusedNormGradColumns = 8192;
/// The most rows a fused norm backward's block may take (its rows'
/// statistics, 16 bytes each, in shared memory: 16 KiB).
constexpr int64_t kMaxNormGradRowBlock = 1024;

/// The row length `op` broadcasts operands over, if any.
std::optional<int64_t> rowLengthOf(ElementwiseOpInterface op,
                                   int64_t elements) {
  for (OpOperand &operand : op->getOpOperands())
    if (op.isRowBroadcastOperand(operand.getOperandNumber()) &&
        numElements(operand.get()) != elements)
      return numElements(operand.get());
  return std::nullopt;
}

/// Whether `value` is a tensor of bf16 or f16 elements.
bool isSixteenBit(Value value) {
  Type element = cast<RankedTensorType>(value.getType()).getElementType();
  return element.isBF16() || element.isF16();
}

/// The cast to f32 that is the only reader of the bf16 or f16 `value`, if
/// so: a 16-bit gradient computed only to be widened for the fp32 master
/// weights.
CastOp onlyWidening(Value value) {
  if (!isSixteenBit(value) || !value.hasOneUse())
    return nullptr;
  auto widening = dyn_cast<CastOp>(*value.getUsers().begin());
  if (!widening || !widening.getType().getElementType().isF32())
    return nullptr;
  return widening;
}

class Fuser {
public:
  /// With `widenGradients`, a norm's 16-bit parameter gradient that is
  /// only widened to f32 is left as the f32 sum of its partial sums. A
  /// norm's backward sums its weight and bias gradients over blocks of
  /// `normGradRowBlock` rows, one row of partial sums per block (1/16 of
  /// the input gradient's size at the default 16), summed afterwards in
  /// block order by mt.bias_add_grad.
  Fuser(Block &block, bool widenGradients, int64_t normGradRowBlock)
      : block(block), widenGradients(widenGradients),
        normGradRowBlock(normGradRowBlock) {}

  /// The norms' parameter gradients left in f32 by rewrite().
  int64_t numWidened = 0;

  void group() {
    for (Operation &op : block.without_terminator()) {
      if (isa<LayerNormOp, RMSNormOp>(op)) {
        groupNorm(&op);
        continue;
      }
      if (isa<LayerNormGradOp, RMSNormGradOp>(op)) {
        groupNormGrad(&op);
        continue;
      }
      // The widening of a fused norm backward's parameter gradient goes
      // (rewrite() leaves the gradient in f32): it joins no region.
      if (auto widening = dyn_cast<CastOp>(op);
          widening && widensNormGradient(widening)) {
        wideningsToDrop.insert(widening);
        continue;
      }
      auto elementwise = dyn_cast<ElementwiseOpInterface>(&op);
      if (!elementwise || op.getNumResults() != 1)
        continue;
      int64_t elements = numElements(op.getResult(0));
      if (elements <= 1)
        continue;
      std::optional<int64_t> rowLength = rowLengthOf(elementwise, elements);
      SmallVector<Attribute, 5> marks = marksOf(&op);
      std::optional<unsigned> chosen;
      for (OpOperand &operand : op.getOpOperands()) {
        bool broadcast =
            elementwise.isRowBroadcastOperand(operand.getOperandNumber()) &&
            numElements(operand.get()) != elements;
        Operation *producer = operand.get().getDefiningOp();
        if (broadcast || !producer || !groupOf.contains(producer))
          continue;
        // A norm's backward passes on its input gradient only (its
        // parameter gradients leave the region as partial sums).
        if (groups[groupOf.lookup(producer)].normGrad == producer &&
            cast<OpResult>(operand.get()).getResultNumber() != 0)
          continue;
        unsigned index = groupOf.lookup(producer);
        // Only through a value nothing else reads: it then never reaches
        // memory. Fusing through a value that is also read elsewhere (the
        // stash) would keep the producer's inputs, that value and this
        // op's result alive at once, raising the peak.
        bool internal =
            llvm::all_of(operand.get().getUsers(), [&](Operation *user) {
              auto it = groupOf.find(user);
              return user == &op ||
                     (it != groupOf.end() && it->second == index);
            });
        if (internal && !groups[index].norm &&
            canJoin(groups[index], &op, elements, rowLength, marks)) {
          chosen = index;
          break;
        }
      }
      if (!chosen)
        chosen = newGroup(elements, marks);
      Group &group = groups[*chosen];
      group.ops.push_back(&op);
      if (rowLength)
        group.rowLength = rowLength;
      groupOf[&op] = *chosen;
    }
  }

  /// Replaces every group by an mt.fusion; returns the ops fused.
  int64_t rewrite(int64_t &regions) {
    int64_t fused = 0;
    for (auto [index, group] : llvm::enumerate(groups)) {
      auto inGroup = [&, index = index](Operation *user) {
        auto it = groupOf.find(user);
        return it != groupOf.end() && it->second == index;
      };
      llvm::SetVector<Value> inputs;
      SmallVector<Value> outputs;
      for (Operation *op : group.ops) {
        for (Value operand : op->getOperands()) {
          Operation *producer = operand.getDefiningOp();
          if (!producer || !inGroup(producer))
            inputs.insert(operand);
        }
        for (Value result : op->getResults())
          if (llvm::any_of(result.getUsers(),
                           [&](Operation *user) { return !inGroup(user); }))
            outputs.push_back(result);
      }
      if (outputs.empty())
        continue; // dead: nothing reads it (canonicalize removes such ops)
      Operation *last = group.ops.back();
      OpBuilder builder(last);
      // A norm's backward yields its parameter gradients as partial sums,
      // one row per block of rows.
      auto isPartial = [&](Value output) {
        return group.normGrad && output.getDefiningOp() == group.normGrad &&
               cast<OpResult>(output).getResultNumber() > 0;
      };
      // (In f32 whatever the gradient's type: a 16-bit partial sum would
      // round each block's sum, where the host kernel rounds once.)
      auto partialType = [&](Value) -> Type {
        int64_t rows = group.elements / *group.rowLength;
        return RankedTensorType::get(
            {(rows + normGradRowBlock - 1) / normGradRowBlock,
             *group.rowLength},
            builder.getF32Type());
      };
      SmallVector<Type> resultTypes;
      for (Value output : outputs)
        resultTypes.push_back(isPartial(output) ? partialType(output)
                                                : output.getType());
      auto fusion = FusionOp::create(builder, last->getLoc(), resultTypes,
                                     inputs.getArrayRef());
      setMarks(fusion, group.marks);
      Block *body = builder.createBlock(&fusion.getBody());
      IRMapping mapping;
      for (Value input : inputs)
        mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
      for (Operation *op : group.ops) {
        Operation *clone = builder.clone(*op, mapping);
        if (op != group.normGrad)
          continue;
        setNormGradRowBlock(clone, normGradRowBlock);
        for (OpResult result : clone->getResults().drop_front())
          result.setType(partialType(result));
      }
      SmallVector<Value> yielded;
      for (Value output : outputs)
        yielded.push_back(mapping.lookup(output));
      YieldOp::create(builder, last->getLoc(), yielded);
      builder.setInsertionPointAfter(fusion);
      for (auto [output, result] : llvm::zip(outputs, fusion.getResults())) {
        Value replacement = result;
        if (isPartial(output)) {
          // The sums of the partial sums, in block order (then in the
          // gradient's own type).
          auto outputType = cast<RankedTensorType>(output.getType());
          auto sum =
              BiasAddGradOp::create(builder, output.getLoc(),
                                    RankedTensorType::get(outputType.getShape(),
                                                          builder.getF32Type()),
                                    result);
          setMarks(sum, group.marks);
          replacement = sum.getResult();
          if (!outputType.getElementType().isF32()) {
            // A gradient only widened again (for the fp32 master weights)
            // keeps the f32 sum: rounding it to 16 bits would lose what the
            // partial sums kept, as widenIntoProducer says for GEMMs.
            if (CastOp widening = onlyWidening(output);
                widening && wideningsToDrop.contains(widening)) {
              widening.getResult().replaceAllUsesWith(replacement);
              wideningsToDrop.erase(widening);
              widening->erase();
              ++numWidened;
            } else {
              auto narrowed = CastOp::create(builder, output.getLoc(),
                                             outputType, replacement);
              setMarks(narrowed, group.marks);
              replacement = narrowed.getResult();
            }
          }
        }
        output.replaceUsesWithIf(replacement, [&](OpOperand &use) {
          return !inGroup(use.getOwner());
        });
      }
      for (Operation *op : llvm::reverse(group.ops)) {
        groupOf.erase(op);
        op->erase();
      }
      ++regions;
      fused += group.ops.size();
    }
    return fused;
  }

private:
  /// Whether `widening` is the only reader of a 16-bit parameter gradient
  /// of a norm's backward that begins a region, to be dropped.
  bool widensNormGradient(CastOp widening) const {
    auto gradient = dyn_cast<OpResult>(widening.getInput());
    if (!widenGradients || !gradient || gradient.getResultNumber() == 0 ||
        onlyWidening(gradient) != widening)
      return false;
    auto it = groupOf.find(gradient.getOwner());
    return it != groupOf.end() &&
           groups[it->second].normGrad == gradient.getOwner();
  }

  /// A layer norm or RMS norm joins the region computing its input (a
  /// residual add, with the bias before it), which then ends; or becomes
  /// a row fusion of its own. The input is stored either way when
  /// something else reads it (the residual stream), so joining never
  /// raises the peak; the norm reads it in registers instead of memory.
  void groupNorm(Operation *norm) {
    Value input = norm->getOperand(0);
    auto type = cast<RankedTensorType>(input.getType());
    int64_t elements = type.getNumElements(), cols = type.getShape().back();
    SmallVector<Attribute, 5> marks = marksOf(norm);
    std::optional<unsigned> chosen;
    if (Operation *producer = input.getDefiningOp();
        producer && groupOf.contains(producer)) {
      unsigned index = groupOf.lookup(producer);
      Group &group = groups[index];
      if (!group.norm && !group.normGrad &&
          (!group.rowLength || *group.rowLength == cols) &&
          canJoin(group, norm, elements, cols, marks))
        chosen = index;
    }
    if (!chosen)
      chosen = newGroup(elements, marks);
    Group &group = groups[*chosen];
    group.ops.push_back(norm);
    group.rowLength = cols;
    group.norm = norm;
    groupOf[norm] = *chosen;
  }

  /// A layer norm's or RMS norm's backward begins a row-block fusion,
  /// which the elementwise ops reading its input gradient (the residual
  /// gradient's add) then join as any region: the input gradient stays in
  /// registers, and the host kernel's single-threaded pass becomes one
  /// multithreaded kernel.
  void groupNormGrad(Operation *grad) {
    auto type = cast<RankedTensorType>(grad->getOperand(1).getType());
    int64_t cols = type.getShape().back();
    if (cols > kMaxFusedNormGradColumns)
      return;
    unsigned index = newGroup(type.getNumElements(), marksOf(grad));
    Group &group = groups[index];
    group.ops.push_back(grad);
    group.rowLength = cols;
    group.normGrad = grad;
    groupOf[grad] = index;
  }

  /// An empty group of `elements` per op and these marks; its index.
  unsigned newGroup(int64_t elements, ArrayRef<Attribute> marks) {
    groups.push_back({});
    groups.back().elements = elements;
    groups.back().marks.assign(marks.begin(), marks.end());
    return groups.size() - 1;
  }

  bool canJoin(const Group &group, Operation *op, int64_t elements,
               std::optional<int64_t> rowLength,
               ArrayRef<Attribute> marks) const {
    if (group.elements != elements || ArrayRef(group.marks) != marks)
      return false;
    if (rowLength && group.rowLength && *rowLength != *group.rowLength)
      return false;
    if (operandCountWith(group, op) > mtrt::kGeneratedKernelMaxOperands)
      return false;
    // A fused dropout draws its mask by the element's index, which only an
    // elementwise kernel's loop has: no dropout in a norm's row fusion.
    if ((group.norm || group.normGrad || isa<LayerNormOp, RMSNormOp>(op)) &&
        withDropout(group, op))
      return false;
    // The region moves to `op`: nothing outside it may read its values
    // before that.
    for (Operation *member : group.ops)
      for (Operation *user : member->getUsers()) {
        auto it = groupOf.find(user);
        bool sameGroup = it != groupOf.end() && &groups[it->second] == &group;
        if (user != op && !sameGroup && user->getBlock() == &block &&
            user->isBeforeInBlock(op))
          return false;
      }
    return true;
  }

  /// The operands (distinct inputs and results read outside) of the
  /// kernel `group` plus `op` would become.
  int64_t operandCountWith(const Group &group, Operation *op) const {
    llvm::SmallPtrSet<Operation *, 16> members(group.ops.begin(),
                                               group.ops.end());
    members.insert(op);
    llvm::SmallPtrSet<Value, 16> inputs;
    int64_t results = 0;
    for (Operation *member : members) {
      for (Value operand : member->getOperands())
        if (!members.contains(operand.getDefiningOp()))
          inputs.insert(operand);
      for (Value result : member->getResults())
        results += llvm::any_of(result.getUsers(), [&](Operation *user) {
          return !members.contains(user);
        });
    }
    // The dropouts' parameter blocks take one more.
    bool dropouts = llvm::any_of(
        members, [](Operation *member) { return isa<DropoutOp>(member); });
    return int64_t(inputs.size()) + results + (dropouts ? 1 : 0);
  }

  /// Whether `group` or `op` holds a dropout.
  static bool withDropout(const Group &group, Operation *op) {
    return isa<DropoutOp>(op) || llvm::any_of(group.ops, [](Operation *member) {
             return isa<DropoutOp>(member);
           });
  }

  Block &block;
  bool widenGradients;
  int64_t normGradRowBlock;
  /// The casts widensNormGradient() chose; rewrite() erases them.
  llvm::SmallPtrSet<Operation *, 8> wideningsToDrop;
  SmallVector<Group> groups;
  llvm::DenseMap<Operation *, unsigned> groupOf;
};

/// Whether `op` is a cross-entropy op computed on one rank's whole
/// vocabulary (padded or not): a vocab-parallel one reduces across ranks
/// inside its kernel, which a generated kernel cannot.
bool isWholeVocabulary(Operation *op) {
  return !op->hasAttr(MTDialect::getTpVocabAxisAttrName());
}

/// Fuses the mean cross-entropy `loss` and the gradient of the same logits
/// and labels into one row fusion: the per-position losses and the
/// logits' gradient come from one pass over the logits (each row's
/// maximum and sum of exponentials computed once), then `mt.mean` of the
/// losses replaces the loss. The region goes where the gradient was when
/// nothing reads the loss in between, else where the loss was when the
/// gradient's operands are ready there; otherwise the two stay apart.
/// Returns whether it fused.
bool fuseCrossEntropy(CrossEntropyOp loss) {
  // A generated kernel reads i32 token ids (i64 labels stay unfused).
  if (loss.getType().getRank() != 0 || !isWholeVocabulary(loss) ||
      !loss.getLabels().getType().getElementType().isInteger(32))
    return false;
  CrossEntropyGradOp grad;
  for (Operation *user : loss.getLogits().getUsers()) {
    auto candidate = dyn_cast<CrossEntropyGradOp>(user);
    if (candidate && candidate->getBlock() == loss->getBlock() &&
        candidate.getLabels() == loss.getLabels() &&
        isWholeVocabulary(candidate) && loss->isBeforeInBlock(candidate) &&
        loss->getAttr(MTDialect::getMicrobatchAttrName()) ==
            candidate->getAttr(MTDialect::getMicrobatchAttrName()) &&
        loss->getAttr(MTDialect::getRecomputedAttrName()) ==
            candidate->getAttr(MTDialect::getRecomputedAttrName()) &&
        loss->getAttr(MTDialect::getVocabSizeAttrName()) ==
            candidate->getAttr(MTDialect::getVocabSizeAttrName())) {
      grad = candidate;
      break;
    }
  }
  if (!grad)
    return false;
  Operation *place = nullptr;
  if (llvm::all_of(loss->getUsers(), [&](Operation *user) {
        return user->getBlock() != grad->getBlock() ||
               grad->isBeforeInBlock(user);
      }))
    place = grad;
  else if (llvm::all_of(grad->getOperands(), [&](Value operand) {
             Operation *producer = operand.getDefiningOp();
             return !producer || producer->getBlock() != loss->getBlock() ||
                    producer->isBeforeInBlock(loss);
           }))
    place = loss;
  if (!place)
    return false;

  OpBuilder builder(place);
  Location location = place->getLoc();
  auto lossesType = RankedTensorType::get(loss.getLabels().getType().getShape(),
                                          builder.getF32Type());
  SmallVector<Value> inputs = {grad.getGradLoss(), loss.getLogits(),
                               loss.getLabels()};
  auto fusion = FusionOp::create(builder, location,
                                 TypeRange{lossesType, grad.getType()}, inputs);
  // The region is one kernel of the action it is placed in.
  setMarks(fusion, marksOf(place));
  Block *body = builder.createBlock(&fusion.getBody());
  SmallVector<Value> args;
  for (Value input : inputs)
    args.push_back(body->addArgument(input.getType(), input.getLoc()));
  auto losses = CrossEntropyOp::create(builder, loss.getLoc(), lossesType,
                                       args[1], args[2]);
  auto gradient = CrossEntropyGradOp::create(
      builder, grad.getLoc(), grad.getType(), args[0], args[1], args[2]);
  // A padded vocabulary's true size goes with them.
  if (Attribute size = loss->getAttr(MTDialect::getVocabSizeAttrName())) {
    losses->setAttr(MTDialect::getVocabSizeAttrName(), size);
    gradient->setAttr(MTDialect::getVocabSizeAttrName(), size);
  }
  YieldOp::create(builder, location,
                  ValueRange{losses.getResult(), gradient.getResult()});
  builder.setInsertionPointAfter(fusion);
  auto mean = MeanOp::create(builder, loss.getLoc(), loss.getType(),
                             fusion.getResult(0));
  setMarks(mean, marksOf(place));
  loss.getResult().replaceAllUsesWith(mean.getResult());
  grad.getResult().replaceAllUsesWith(fusion.getResult(1));
  grad->erase();
  loss->erase();
  return true;
}

/// Carries `from`'s marks and the passes' annotations (its discardable
/// attributes: layer, phase, the tensor-parallel head axis of its masks)
/// over to `to`, the op that replaces it.
void copyMarks(Operation *from, Operation *to) {
  for (NamedAttribute attr : from->getDiscardableAttrs())
    to->setAttr(attr.getName(), attr.getValue());
}

/// The merge_heads that is the only reader of `value`, if any.
MergeHeadsOp soleMerge(Value value) {
  if (!value.hasOneUse())
    return {};
  return dyn_cast<MergeHeadsOp>(*value.getUsers().begin());
}

/// Folds `merge_heads(attention(split_heads(qkv)))` into
/// `mt.qkv_attention`, and each gradient of that attention,
/// `merge_heads(attention_grad(split_heads(dOut), q, k, v))`, into
/// `mt.qkv_attention_grad`: the kernels read and write heads in place
/// with strided GEMMs instead of copying them. Only when every reader of
/// q, k and v is this attention or such a gradient: the stash is then
/// the QKV tensor (the same bytes as q, k and v) and the copies vanish.
/// Returns whether it folded.
bool foldHeadLayouts(AttentionOp attention) {
  auto split = attention.getQuery().getDefiningOp<SplitHeadsOp>();
  if (!split || split.getNumResults() != 3 ||
      split->getBlock() != attention->getBlock() ||
      attention->getOperands() != split->getResults())
    return false;
  MergeHeadsOp merge = soleMerge(attention.getResult());
  if (!merge || merge.getInputs().size() != 1)
    return false;
  struct Backward {
    AttentionGradOp grad;
    SplitHeadsOp gradSplit;
    MergeHeadsOp gradMerge;
  };
  SmallVector<Backward> backward;
  for (Operation *user : split->getUsers()) {
    if (user == attention || llvm::any_of(backward, [&](const Backward &b) {
          return b.grad == user;
        }))
      continue;
    auto grad = dyn_cast<AttentionGradOp>(user);
    // (After the attention: the gradient reads its output and stats.)
    if (!grad || grad->getBlock() != attention->getBlock() ||
        !attention->isBeforeInBlock(grad) ||
        grad->getOperands().drop_front() != split->getResults() ||
        grad.getDropout() != attention.getDropout() ||
        grad.getScaleAttr() != attention.getScaleAttr() ||
        grad.getRngStreamAttr() != attention.getRngStreamAttr() ||
        grad.getWindowAttr() != attention.getWindowAttr() ||
        grad.getSoftcapAttr() != attention.getSoftcapAttr())
      return false;
    auto gradSplit = grad.getGradOutput().getDefiningOp<SplitHeadsOp>();
    if (!gradSplit || gradSplit.getNumResults() != 1 ||
        !gradSplit.getResult(0).hasOneUse())
      return false;
    MergeHeadsOp gradMerge = soleMerge(grad.getGradQuery());
    if (!gradMerge || gradMerge.getInputs() != grad.getResults() ||
        !grad.getGradKey().hasOneUse() || !grad.getGradValue().hasOneUse())
      return false;
    backward.push_back({grad, gradSplit, gradMerge});
  }

  RankedTensorType query = attention.getQuery().getType();
  int64_t heads = query.getDimSize(1);
  OpBuilder builder(attention);
  auto statsType = RankedTensorType::get(
      {query.getDimSize(0), heads, query.getDimSize(2)}, builder.getF32Type());
  auto folded = QKVAttentionOp::create(
      builder, attention.getLoc(), merge.getType(), statsType, split.getInput(),
      builder.getI64IntegerAttr(heads), attention.getDropoutAttr(),
      attention.getScaleAttr(), attention.getRngStreamAttr(),
      attention.getWindowAttr(), attention.getSoftcapAttr());
  copyMarks(attention, folded);
  merge.getResult().replaceAllUsesWith(folded.getResult());
  merge->erase();
  // The gradients read the forward's output and its rows' log-sum-exp:
  // the output is stashed anyway (the projection after attention reads
  // it), the stats cost 4 bytes a query row.
  for (Backward &b : backward) {
    builder.setInsertionPoint(b.grad);
    auto grad = QKVAttentionGradOp::create(
        builder, b.grad.getLoc(), split.getInput().getType(),
        b.gradSplit.getInput(), split.getInput(), folded.getResult(),
        folded.getStats(), builder.getI64IntegerAttr(heads),
        b.grad.getDropoutAttr(), b.grad.getScaleAttr(),
        b.grad.getRngStreamAttr(), b.grad.getWindowAttr(),
        b.grad.getSoftcapAttr());
    copyMarks(b.grad, grad);
    b.gradMerge.getResult().replaceAllUsesWith(grad.getResult());
    b.gradMerge->erase();
    b.grad->erase();
    b.gradSplit->erase();
  }
  attention->erase();
  split->erase();
  return true;
}

/// Folds the repeats of grouped-query attention into it:
/// `attention(q, repeat_kv(k), repeat_kv(v))` becomes `attention(q, k, v)`
/// (the kernels read key and value head h / groups), and each gradient
/// `attention_grad(dO, q, repeat_kv(k), repeat_kv(v))` whose key and value
/// gradients are read only by a `repeat_kv_grad` of the same groups
/// becomes `attention_grad(dO, q, k, v)`, summing over each group itself.
/// Only when every reader of the repeats is this attention or such a
/// gradient: the repeated copies, and their stash (the kv heads `groups`
/// times over), are then gone. Returns whether it folded.
bool foldGroupedKeys(AttentionOp attention) {
  auto keyRepeat = attention.getKey().getDefiningOp<RepeatKVOp>();
  auto valueRepeat = attention.getValue().getDefiningOp<RepeatKVOp>();
  if (!keyRepeat || !valueRepeat || keyRepeat == valueRepeat ||
      keyRepeat.getGroups() != valueRepeat.getGroups() ||
      keyRepeat.getInput().getType() != valueRepeat.getInput().getType())
    return false;
  const uint64_t groups = keyRepeat.getGroups();
  auto soleRepeatGrad = [&](Value gradient) -> RepeatKVGradOp {
    if (!gradient.hasOneUse())
      return {};
    auto sum = dyn_cast<RepeatKVGradOp>(*gradient.getUsers().begin());
    return sum && sum.getGroups() == groups ? sum : RepeatKVGradOp();
  };
  struct Backward {
    AttentionGradOp grad;
    RepeatKVGradOp keySum, valueSum;
  };
  SmallVector<Backward> backward;
  // The forwards on these repeats: this attention, and a recomputed one
  // (mt-remat's selective recompute reads the stashed repeats again).
  SmallVector<AttentionOp> forwards{attention};
  for (RepeatKVOp repeat : {keyRepeat, valueRepeat})
    for (Operation *user : repeat->getUsers()) {
      if (llvm::is_contained(forwards, user) ||
          llvm::any_of(backward,
                       [&](const Backward &b) { return b.grad == user; }))
        continue;
      if (auto other = dyn_cast<AttentionOp>(user);
          other && other.getKey() == attention.getKey() &&
          other.getValue() == attention.getValue()) {
        forwards.push_back(other);
        continue;
      }
      auto grad = dyn_cast<AttentionGradOp>(user);
      if (!grad || grad.getKey() != attention.getKey() ||
          grad.getValue() != attention.getValue())
        return false;
      RepeatKVGradOp keySum = soleRepeatGrad(grad.getGradKey());
      RepeatKVGradOp valueSum = soleRepeatGrad(grad.getGradValue());
      if (!keySum || !valueSum)
        return false;
      backward.push_back({grad, keySum, valueSum});
    }

  // Every use of the repeats must be a key or value slot: a repeat also
  // read as a query or an output gradient would be left dangling.
  auto isRepeat = [&](Value v) {
    return v == keyRepeat.getResult() || v == valueRepeat.getResult();
  };
  if (llvm::any_of(forwards,
                   [&](AttentionOp f) { return isRepeat(f.getQuery()); }) ||
      llvm::any_of(backward, [&](Backward &b) {
        return isRepeat(b.grad.getQuery()) || isRepeat(b.grad.getGradOutput());
      }))
    return false;

  Value key = keyRepeat.getInput(), value = valueRepeat.getInput();
  // The forwards keep their result type: their operands change in place.
  // The gradients' key and value results become the unrepeated type.
  for (AttentionOp forward : forwards) {
    forward.getKeyMutable().assign(key);
    forward.getValueMutable().assign(value);
  }
  OpBuilder builder(attention);
  for (Backward &b : backward) {
    builder.setInsertionPoint(b.grad);
    auto grad = AttentionGradOp::create(
        builder, b.grad.getLoc(), b.grad.getGradQuery().getType(),
        key.getType(), key.getType(), b.grad.getGradOutput(), b.grad.getQuery(),
        key, value, b.grad.getDropoutAttr(), b.grad.getScaleAttr(),
        b.grad.getRngStreamAttr(), b.grad.getWindowAttr(),
        b.grad.getSoftcapAttr());
    copyMarks(b.grad, grad);
    b.grad.getGradQuery().replaceAllUsesWith(grad.getGradQuery());
    b.keySum.getResult().replaceAllUsesWith(grad.getGradKey());
    b.valueSum.getResult().replaceAllUsesWith(grad.getGradValue());
    b.keySum->erase();
    b.valueSum->erase();
    b.grad->erase();
  }
  keyRepeat->erase();
  valueRepeat->erase();
  return true;
}

/// Folds `merge_heads(attention(q, k, v))` into `mt.merged_attention`,
/// which writes its heads merged and returns its rows' log-sum-exp, and
/// each gradient of that attention, `attention_grad(split_heads(dOut), q,
/// k, v)`, into `mt.merged_attention_grad`, which reads dOut merged and
/// the forward's output and stats (the output is the projection's input,
/// stashed anyway; the stats cost 4 bytes a query row) instead of
/// rebuilding the softmax. For the attentions whose split cannot fold into
/// `mt.qkv_attention` (a rotary embedding between them). A gradient of
/// another form stays as it is. Returns whether it folded.
bool foldMergedOutput(AttentionOp attention) {
  MergeHeadsOp merge = soleMerge(attention.getResult());
  if (!merge || merge.getInputs().size() != 1)
    return false;
  Value query = attention.getQuery(), key = attention.getKey(),
        value = attention.getValue();
  struct Backward {
    AttentionGradOp grad;
    SplitHeadsOp gradSplit;
  };
  SmallVector<Backward> backward;
  // A gradient reads the output of the last attention on q, k and v before
  // it: a recomputed one (mt-remat) where there is one, so that the
  // forward's output is not kept alive for it.
  auto recomputedBetween = [&](Operation *grad) {
    return llvm::any_of(query.getUsers(), [&](Operation *other) {
      return other != attention && isa<AttentionOp, MergedAttentionOp>(other) &&
             other->getBlock() == grad->getBlock() &&
             attention->isBeforeInBlock(other) && other->isBeforeInBlock(grad);
    });
  };
  for (Operation *user : query.getUsers()) {
    auto grad = dyn_cast<AttentionGradOp>(user);
    if (!grad || grad.getQuery() != query || grad.getKey() != key ||
        grad.getValue() != value || grad->getBlock() != attention->getBlock() ||
        !attention->isBeforeInBlock(grad) ||
        grad.getDropout() != attention.getDropout() ||
        grad.getScaleAttr() != attention.getScaleAttr() ||
        grad.getRngStreamAttr() != attention.getRngStreamAttr() ||
        grad.getWindowAttr() != attention.getWindowAttr() ||
        grad.getSoftcapAttr() != attention.getSoftcapAttr() ||
        llvm::any_of(backward,
                     [&](const Backward &b) { return b.grad == grad; }) ||
        recomputedBetween(grad))
      continue;
    auto gradSplit = grad.getGradOutput().getDefiningOp<SplitHeadsOp>();
    if (gradSplit && gradSplit.getNumResults() == 1 &&
        gradSplit.getResult(0).hasOneUse())
      backward.push_back({grad, gradSplit});
  }

  RankedTensorType type = attention.getType();
  OpBuilder builder(attention);
  auto statsType = RankedTensorType::get(
      {type.getDimSize(0), type.getDimSize(1), type.getDimSize(2)},
      builder.getF32Type());
  auto folded = MergedAttentionOp::create(
      builder, attention.getLoc(), merge.getType(), statsType, query, key,
      value, attention.getDropoutAttr(), attention.getScaleAttr(),
      attention.getRngStreamAttr(), attention.getWindowAttr(),
      attention.getSoftcapAttr());
  copyMarks(attention, folded);
  merge.getResult().replaceAllUsesWith(folded.getResult());
  merge->erase();
  attention->erase();
  for (Backward &b : backward) {
    builder.setInsertionPoint(b.grad);
    auto grad = MergedAttentionGradOp::create(
        builder, b.grad.getLoc(), b.grad.getResultTypes(),
        b.gradSplit.getInput(), query, key, value, folded.getResult(),
        folded.getStats(), b.grad.getDropoutAttr(), b.grad.getScaleAttr(),
        b.grad.getRngStreamAttr(), b.grad.getWindowAttr(),
        b.grad.getSoftcapAttr());
    copyMarks(b.grad, grad);
    b.grad->replaceAllUsesWith(grad->getResults());
    b.grad->erase();
    b.gradSplit->erase();
  }
  return true;
}

/// Folds `mt.bias_add(mt.matmul(a, b), bias)` into `mt.matmul_bias` when
/// the bias addition is the product's only reader: the GEMM's epilogue
/// adds the bias, and the product is never stored. Returns whether it
/// folded.
bool foldBiasEpilogue(MatmulOp matmul) {
  if (!matmul.getResult().hasOneUse() || matmul.getAccumulator())
    return false;
  auto bias = dyn_cast<BiasAddOp>(*matmul.getResult().getUsers().begin());
  // (bias_add's verifier already holds the types equal; an epilogue adds
  // a vector.)
  if (!bias || bias.getInput() != matmul.getResult() ||
      bias.getBias().getType().getRank() != 1)
    return false;
  OpBuilder builder(bias);
  auto folded = MatmulBiasOp::create(
      builder, bias.getLoc(), bias.getType(), matmul.getLhs(), matmul.getRhs(),
      bias.getBias(), matmul.getTransposeA(), matmul.getTransposeB());
  copyMarks(matmul, folded);
  bias.getResult().replaceAllUsesWith(folded.getResult());
  bias->erase();
  matmul->erase();
  return true;
}

/// Folds `mt.gelu(mt.matmul_bias(a, b, bias))` into `mt.matmul_bias_gelu`
/// when the sum is 16-bit and one GeLU reads it: the GEMM's epilogue
/// writes the sum (which the backward's gelu_grad still reads) and its
/// GeLU, so GeLU's own pass over the sum is gone. Returns whether it
/// folded.
bool foldGeluEpilogue(MatmulBiasOp matmul) {
  Value sum = matmul.getResult();
  if (!isSixteenBit(sum))
    return false;
  GeluOp gelu;
  for (Operation *user : sum.getUsers())
    if (auto candidate = dyn_cast<GeluOp>(user)) {
      if (gelu)
        return false; // two GeLUs of one sum (recomputed): leave both
      gelu = candidate;
    }
  if (!gelu)
    return false;
  OpBuilder builder(matmul);
  auto folded = MatmulBiasGeluOp::create(
      builder, matmul.getLoc(), sum.getType(), gelu.getType(), matmul.getLhs(),
      matmul.getRhs(), matmul.getBias(), matmul.getTransposeA(),
      matmul.getTransposeB());
  copyMarks(matmul, folded);
  gelu.getResult().replaceAllUsesWith(folded.getResult());
  gelu->erase();
  sum.replaceAllUsesWith(folded.getPreactivation());
  matmul->erase();
  return true;
}

/// Folds `mt.gelu_grad(mt.matmul(a, b), x)` into `mt.matmul_gelu_grad`
/// when the product is 16-bit and the gradient is its only reader: the
/// GEMM's epilogue applies GeLU's derivative at `x`, so the product is
/// never stored and read back. Returns whether it folded.
bool foldGeluGradEpilogue(GeluGradOp grad) {
  auto matmul = grad.getGradOutput().getDefiningOp<MatmulOp>();
  if (!matmul || !matmul.getResult().hasOneUse() || matmul.getAccumulator() ||
      !isSixteenBit(matmul.getResult()) ||
      matmul.getResult().getType() != grad.getType() ||
      grad.getInput() == matmul.getResult())
    return false;
  OpBuilder builder(grad);
  auto folded = MatmulGeluGradOp::create(
      builder, grad.getLoc(), grad.getType(), matmul.getLhs(), matmul.getRhs(),
      grad.getInput(), matmul.getTransposeA(), matmul.getTransposeB());
  copyMarks(matmul, folded);
  grad.getResult().replaceAllUsesWith(folded.getResult());
  grad->erase();
  matmul->erase();
  return true;
}

/// Computes in f32 a 16-bit weight or bias gradient whose only reader
/// widens it to f32 (for the fp32 master weights' optimizer): the GEMM
/// accumulates in f32 and writes f32 (bf16 operands with an f32 output in
/// cuBLAS; Megatron-LM's gradient accumulation fusion), the bias gradient
/// sums in f32 and stores the sum. The gradient is then never rounded to 16
/// bits, and the cast's kernel and the 16-bit buffer are gone. Returns
/// whether it widened.
bool widenIntoProducer(CastOp widening) {
  Value narrow = widening.getInput();
  if (onlyWidening(narrow) != widening)
    return false;
  Operation *producer = narrow.getDefiningOp();
  if (!producer || !isa<MatmulOp, BiasAddGradOp, EmbeddingGradOp>(producer))
    return false;
  narrow.setType(widening.getType());
  widening.getResult().replaceAllUsesWith(narrow);
  widening->erase();
  return true;
}

/// Whether `value` is available at `point`: a block argument, or the
/// result of an op before it in its block.
bool availableAt(Value value, Operation *point) {
  Operation *producer = value.getDefiningOp();
  return !producer || (producer->getBlock() == point->getBlock() &&
                       producer->isBeforeInBlock(point));
}

/// Makes `value` available at `point`: it is, or it is a collapse (a view)
/// of a value that is, and the collapse moves up to `point`. Returns
/// whether it is available now.
bool hoistView(Value value, Operation *point) {
  if (availableAt(value, point))
    return true;
  auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || !availableAt(collapse.getSrc(), point))
    return false;
  collapse->moveBefore(point);
  return true;
}

/// Folds `mt.bias_add_grad(dY)` and the weight gradient `mt.matmul(x, dY)`
/// (dY as the rank-2 rhs, directly or as the collapse of its leading
/// dimensions into rows) into `mt.matmul_bias_grad` when dY is 16-bit and
/// the two gradients have one element type (cuBLASLt writes the bias
/// gradient in the GEMM's output type): the GEMM's epilogue sums dY's
/// rows as it reads them, so the bias gradient's own pass over dY is gone.
/// The fold sits where the first of the two was. Returns whether it
/// folded.
bool foldBiasGradEpilogue(BiasAddGradOp grad) {
  Value dy = grad.getGradOutput();
  auto biasType = cast<RankedTensorType>(grad.getType());
  if (!isSixteenBit(dy) || biasType.getRank() != 1)
    return false;
  const int64_t columns = biasType.getDimSize(0);
  // dY's rows: itself when rank 2, else a collapse of its leading
  // dimensions (the matmul's rhs view).
  SmallVector<Value> views;
  if (cast<RankedTensorType>(dy.getType()).getRank() == 2)
    views.push_back(dy);
  for (Operation *user : dy.getUsers())
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(user)) {
      RankedTensorType rows = collapse.getResultType();
      if (rows.getRank() == 2 && rows.getDimSize(1) == columns)
        views.push_back(collapse.getResult());
    }
  for (Value rows : views)
    for (Operation *user : rows.getUsers()) {
      auto matmul = dyn_cast<MatmulOp>(user);
      if (!matmul || matmul.getAccumulator() || matmul.getRhs() != rows ||
          matmul.getTransposeB() ||
          cast<RankedTensorType>(matmul.getLhs().getType()).getRank() != 2 ||
          cast<RankedTensorType>(matmul.getType()).getElementType() !=
              biasType.getElementType() ||
          cast<RankedTensorType>(matmul.getType()).getDimSize(1) != columns)
        continue;
      if (grad->getBlock() != matmul->getBlock())
        continue;
      Operation *first =
          grad->isBeforeInBlock(matmul) ? grad.getOperation() : matmul;
      // The weight gradient's operands are views of values computed
      // before both (dY's rows, the forward's activations): they move up
      // to the fold.
      if (!hoistView(matmul.getLhs(), first) || !hoistView(rows, first))
        continue;
      OpBuilder builder(first);
      auto folded = MatmulBiasGradOp::create(
          builder, matmul.getLoc(), matmul.getType(), grad.getType(),
          matmul.getLhs(), rows, matmul.getTransposeA(),
          /*accumulator=*/Value());
      copyMarks(matmul, folded);
      matmul.getResult().replaceAllUsesWith(folded.getResult());
      grad.getResult().replaceAllUsesWith(folded.getBiasGrad());
      matmul->erase();
      grad->erase();
      return true;
    }
  return false;
}

/// Folds `mt.add(acc, dW)` (either order) into dW's GEMM as its
/// accumulator, when dW is an f32 weight gradient (the product x^T dY of
/// an `mt.matmul` with transpose_a, or the weight gradient of an
/// `mt.matmul_bias_grad`, or a table's `mt.embedding_grad`: a tied
/// embedding's gradient added to the head's, not yet accumulating) that
/// only the add reads, and `acc` is an f32 value of
/// dW's type that only the add reads, computed before the GEMM by an op
/// the lowering can write over (not an argument, a view, a transfer, an
/// empty tensor or an optimizer update: the lowering refuses those).
/// The GEMM then computes the add's result in place of the accumulator:
/// Megatron-LM's gradient accumulation fusion.
bool foldGradientAccumulation(AddOp add) {
  auto type = dyn_cast<RankedTensorType>(add.getType());
  if (!type || !type.getElementType().isF32())
    return false;
  for (auto [product, acc] : {std::pair{add.getLhs(), add.getRhs()},
                              std::pair{add.getRhs(), add.getLhs()}}) {
    Operation *gemm = product.getDefiningOp();
    if (!gemm || product.getType() != type || acc.getType() != type ||
        !product.hasOneUse() || product == acc)
      continue;
    // A weight gradient x^T dY (transpose_a, as autodiff writes it); an
    // activation gradient dY W^T added into another stays an add.
    auto matmul = dyn_cast<MatmulOp>(gemm);
    auto biasGrad = dyn_cast<MatmulBiasGradOp>(gemm);
    auto embedding = dyn_cast<EmbeddingGradOp>(gemm);
    if (getAccumulator(gemm) ||
        !((matmul && matmul.getTransposeA() && !matmul.getTransposeB()) ||
          (biasGrad && product == biasGrad.getResult()) || embedding))
      continue;
    // The lowering writes the sum over the accumulator's bytes.
    Operation *producer = acc.getDefiningOp();
    if (!isWritableAccumulator(acc) ||
        producer->getBlock() != gemm->getBlock() ||
        !producer->isBeforeInBlock(gemm))
      continue;
    OpBuilder builder(gemm);
    Operation *folded;
    if (matmul)
      folded = MatmulOp::create(builder, matmul.getLoc(), type, matmul.getLhs(),
                                matmul.getRhs(), matmul.getTransposeA(),
                                matmul.getTransposeB(), acc);
    else if (embedding)
      folded = EmbeddingGradOp::create(builder, embedding.getLoc(), type,
                                       embedding.getGradOutput(),
                                       embedding.getIds(), acc);
    else
      folded = MatmulBiasGradOp::create(
          builder, biasGrad.getLoc(), type, biasGrad.getBiasGrad().getType(),
          biasGrad.getLhs(), biasGrad.getRhs(), biasGrad.getTransposeA(), acc);
    copyMarks(gemm, folded);
    add.getResult().replaceAllUsesWith(folded->getResult(0));
    add->erase();
    if (biasGrad)
      biasGrad.getBiasGrad().replaceAllUsesWith(folded->getResult(1));
    gemm->erase();
    return true;
  }
  return false;
}

/// Groups the block's casts of a layer's parameters (function arguments)
/// to 16 bits into mt.multi_cast: one command per group of casts with the
/// same marks (the layer's, in one phase and microbatch) and types, where
/// the first of them was; an argument cast twice in a group is cast once.
/// Casts outside the layers (the embedding, the final norm, the head: no
/// layer mark) stay where they are, each mt.cast: grouped, the head's
/// vocabulary-sized copy would live from the embedding on. Groups of one
/// stay mt.cast. Returns the casts grouped.
int64_t groupParameterCasts(Block &block, int64_t &commands) {
  using Key = std::tuple<Type, Type, DictionaryAttr>;
  llvm::MapVector<Key, SmallVector<CastOp>> groups;
  for (auto cast : block.getOps<CastOp>()) {
    if (!isa<BlockArgument>(cast.getInput()) ||
        !isSixteenBit(cast.getResult()) ||
        !cast->hasAttr(MTDialect::getLayerAttrName()))
      continue;
    Key key{
        cast.getInput().getType().getElementType(),
        cast.getType().getElementType(),
        DictionaryAttr::get(cast.getContext(),
                            cast->getDiscardableAttrDictionary().getValue())};
    groups[key].push_back(cast);
  }
  int64_t grouped = 0;
  for (auto &[key, casts] : groups) {
    if (casts.size() < 2)
      continue;
    SmallVector<Value> inputs;
    SmallVector<Type> types;
    llvm::DenseMap<Value, unsigned> resultOf; // input -> its result
    for (CastOp cast : casts)
      if (resultOf.try_emplace(cast.getInput(), inputs.size()).second) {
        inputs.push_back(cast.getInput());
        types.push_back(cast.getType());
      }
    if (inputs.size() < 2)
      continue;
    OpBuilder builder(casts.front());
    auto multi =
        MultiCastOp::create(builder, casts.front().getLoc(), types, inputs);
    copyMarks(casts.front(), multi);
    for (CastOp cast : casts) {
      cast.getResult().replaceAllUsesWith(
          multi.getResult(resultOf.lookup(cast.getInput())));
      cast->erase();
    }
    grouped += int64_t(casts.size());
    ++commands;
  }
  return grouped;
}

/// Groups the block's mt.adamw updates into mt.multi_adamw: one command
/// per parameter group (same dtype, same `decay`, same hyperparameter
/// operands and marks) instead of one per tensor. A group is placed where
/// its last update was, so an update joins only while nothing outside the
/// group has read the group's results yet (a ZeRO all-gather of an updated
/// piece closes it). Groups of one stay mt.adamw. Returns the updates
/// fused.
int64_t fuseAdamW(Block &block, int64_t &commands) {
  struct Update {
    SmallVector<AdamWOp> members;
    bool open = true;
    /// The members' first reader in the block (kept as members join: a
    /// scan of every member's readers per update was quadratic in the
    /// parameters, 2.6 s of a 12,000-parameter step).
    Operation *firstReader = nullptr;
    void add(AdamWOp member, Block &block) {
      members.push_back(member);
      for (Operation *user : member->getUsers())
        if (user->getBlock() == &block &&
            (!firstReader || user->isBeforeInBlock(firstReader)))
          firstReader = user;
    }
  };
  SmallVector<Update> updates;
  auto sameGroup = [](AdamWOp a, AdamWOp b) {
    return a.getParam().getType().getElementType() ==
               b.getParam().getType().getElementType() &&
           a.getDecay() == b.getDecay() &&
           llvm::equal(a->getOperands().drop_front(4),
                       b->getOperands().drop_front(4)) &&
           marksOf(a) == marksOf(b);
  };
  for (AdamWOp op : block.getOps<AdamWOp>()) {
    Update *joined = nullptr;
    for (Update &update : updates) {
      if (!update.open || !sameGroup(update.members.front(), op))
        continue;
      // Read before `op`: the group cannot move there. (`op` itself
      // reading a member's result counts: the group would be placed after
      // its own user.)
      Operation *reader = update.firstReader;
      if (reader && (reader == op || reader->isBeforeInBlock(op))) {
        update.open = false;
        continue;
      }
      joined = &update;
      break;
    }
    if (!joined)
      joined = &updates.emplace_back();
    joined->add(op, block);
  }

  int64_t fused = 0;
  for (Update &update : updates) {
    if (update.members.size() < 2)
      continue;
    AdamWOp last = update.members.back();
    SmallVector<Value> params, grads, expAvgs, expAvgSqs;
    SmallVector<Type> types;
    for (AdamWOp member : update.members) {
      params.push_back(member.getParam());
      grads.push_back(member.getGrad());
      expAvgs.push_back(member.getExpAvg());
      expAvgSqs.push_back(member.getExpAvgSq());
      types.push_back(member.getParam().getType());
    }
    SmallVector<Type> resultTypes;
    for (int part = 0; part < 3; ++part)
      resultTypes.append(types.begin(), types.end());
    OpBuilder builder(last);
    auto multi = MultiAdamWOp::create(
        builder, last.getLoc(), resultTypes, params, grads, expAvgs, expAvgSqs,
        last.getStep(), last.getLr(), last.getBeta1(), last.getBeta2(),
        last.getEps(), last.getWeightDecay(), last.getGradScale(),
        /*copies=*/ValueRange(), last.getDecay());
    setMarks(multi, marksOf(last));
    for (auto [i, member] : llvm::enumerate(update.members)) {
      member.getNewParam().replaceAllUsesWith(multi.getNewParams()[i]);
      member.getNewExpAvg().replaceAllUsesWith(multi.getNewExpAvgs()[i]);
      member.getNewExpAvgSq().replaceAllUsesWith(multi.getNewExpAvgSqs()[i]);
      member->erase();
    }
    fused += int64_t(update.members.size());
    ++commands;
  }
  return fused;
}

/// The 16-bit type every cast of `param` (a parameter argument) in `body`
/// gives it, where each cast and every reader of it is before `update`;
/// null when it is not read through one such cast before its update (or
/// read through casts to two types, or a cast or its value after it: the
/// copy that replaces the cast is rewritten in place by the update, so a
/// later reader would see the new parameter's cast).
Type parameterCopyType(BlockArgument param, Operation *update, Block &body) {
  Type type;
  auto beforeUpdate = [&](Operation *op) {
    return op->getBlock() == &body && op->isBeforeInBlock(update);
  };
  for (Operation *user : param.getUsers()) {
    if (user == update)
      continue;
    auto cast = dyn_cast<CastOp>(user);
    if (!cast || !isSixteenBit(cast.getResult()))
      continue; // reads the fp32 parameter itself: it still can
    if (!beforeUpdate(cast) || (type && cast.getType() != type) ||
        !llvm::all_of(cast->getUsers(), beforeUpdate))
      return Type();
    type = cast.getType();
  }
  return type;
}

/// Gives the parameters of each of the function's mt.multi_adamw updates a
/// persistent 16-bit copy, when every one of them is an argument of the
/// step that it reads through casts to one 16-bit type, all before the
/// update, and whose updated value is the step's new value of that
/// parameter (not a ZeRO piece, which an all-gather completes): the casts
/// become reads of a new argument (mt.state "param_copy", the parameter's
/// marks but its initializer and its parallel role), which the update
/// rewrites from the new parameters (mt.multi_adamw's copies) and the step
/// returns. What it saves on every step: reading the fp32 parameters a
/// second time to cast them (Megatron-LM's bf16 model parameters beside
/// fp32 main ones). The runtime fills the copies from the parameters as it
/// uploads them, and checkpoints leave them out. Returns the parameters
/// given copies, or failure (with an error) where the function's signature
/// cannot be changed. A hand-written walk rather than a rewrite pattern: it
/// changes the function's signature, which a pattern on the update cannot.
FailureOr<int64_t> keepParameterCopies(func::FuncOp function) {
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder builder(function.getContext());
  int64_t kept = 0;
  for (auto multi : llvm::make_early_inc_range(body.getOps<MultiAdamWOp>())) {
    if (!multi.getCopies().empty())
      continue;
    const size_t count = multi.getParams().size();
    SmallVector<BlockArgument> params;
    SmallVector<Type> copyTypes;
    SmallVector<unsigned> resultIndices;
    for (size_t i = 0; i < count; ++i) {
      auto param = dyn_cast<BlockArgument>(multi.getParams()[i]);
      if (!param || param.getOwner() != &body)
        break;
      unsigned arg = param.getArgNumber();
      auto name = function.getArgAttrOfType<StringAttr>(
          arg, MTDialect::getParamAttrName());
      if (!name || function.getArgAttr(arg, MTDialect::getStateAttrName()))
        break;
      Value updated = multi.getNewParams()[i];
      if (!updated.hasOneUse() || updated.use_begin()->getOwner() != ret)
        break;
      unsigned result = updated.use_begin()->getOperandNumber();
      if (function.getResultAttr(result, MTDialect::getParamAttrName()) !=
              name ||
          function.getResultAttr(result, MTDialect::getStateAttrName()))
        break;
      Type type = parameterCopyType(param, multi, body);
      if (!type)
        break;
      params.push_back(param);
      copyTypes.push_back(type);
      resultIndices.push_back(result);
    }
    // One multi_adamw writes copies of one type for all its parameters, or
    // none.
    if (params.size() != count ||
        !llvm::all_equal(llvm::map_range(copyTypes, [](Type type) {
          return cast<RankedTensorType>(type).getElementType();
        })))
      continue;

    // The copies: arguments after the others, returned after the others.
    SmallVector<Value> copies;
    for (auto [param, type] : llvm::zip(params, copyTypes)) {
      SmallVector<NamedAttribute> attrs;
      for (NamedAttribute attr :
           function.getArgAttrDict(param.getArgNumber()).getValue())
        if (attr.getName() != MTDialect::getInitAttrName() &&
            attr.getName() != MTDialect::getParallelAttrName() &&
            attr.getName() != MTDialect::getFusedInAttrName())
          attrs.push_back(attr);
      attrs.push_back(builder.getNamedAttr(
          MTDialect::getStateAttrName(), builder.getStringAttr("param_copy")));
      unsigned index = function.getNumArguments();
      if (failed(function.insertArgument(
              index, type, builder.getDictionaryAttr(attrs), param.getLoc())))
        return function.emitOpError()
               << "mt-fuse: could not add the 16-bit copy of argument #"
               << param.getArgNumber() << " as an argument";
      BlockArgument copy = body.getArgument(index);
      for (Operation *user : llvm::make_early_inc_range(param.getUsers()))
        if (auto castOp = dyn_cast<CastOp>(user);
            castOp && castOp.getType() == type) {
          castOp.getResult().replaceAllUsesWith(copy);
          castOp->erase();
        }
      copies.push_back(copy);
    }
    SmallVector<Type> resultTypes(multi->getResultTypes());
    llvm::append_range(resultTypes, copyTypes);
    builder.setInsertionPoint(multi);
    auto withCopies = MultiAdamWOp::create(
        builder, multi.getLoc(), resultTypes, multi.getParams(),
        multi.getGrads(), multi.getExpAvgs(), multi.getExpAvgSqs(),
        multi.getStep(), multi.getLr(), multi.getBeta1(), multi.getBeta2(),
        multi.getEps(), multi.getWeightDecay(), multi.getGradScale(), copies,
        multi.getDecay());
    withCopies->setDiscardableAttrs(multi->getDiscardableAttrDictionary());
    for (auto [from, to] :
         llvm::zip(multi->getResults(), withCopies->getResults()))
      from.replaceAllUsesWith(to);
    multi->erase();
    for (auto [i, copy] : llvm::enumerate(withCopies.getNewCopies())) {
      unsigned index = ret.getNumOperands();
      SmallVector<NamedAttribute> attrs(
          function.getResultAttrDict(resultIndices[i]).getValue());
      attrs.push_back(builder.getNamedAttr(
          MTDialect::getStateAttrName(), builder.getStringAttr("param_copy")));
      if (failed(function.insertResult(index, copy.getType(),
                                       builder.getDictionaryAttr(attrs))))
        return function.emitOpError()
               << "mt-fuse: could not return the 16-bit copy of parameter #"
               << i << " of an update";
      ret->insertOperands(index, copy);
    }
    kept += int64_t(count);
  }
  return kept;
}

struct FusePass : mt::impl::FusePassBase<FusePass> {
  using FusePassBase::FusePassBase;
  void runOnOperation() override {
    // The kernel keeps each of a block's rows' statistics (16 bytes) in
    // shared memory on a GPU, which gives a block 48 KiB, and on a CPU
    // thread's stack.
    if (normGradRowBlock < 1 || normGradRowBlock > kMaxNormGradRowBlock) {
      getOperation().emitError()
          << "mt-fuse: norm-grad-row-block must be from 1 to "
          << kMaxNormGradRowBlock << " (got "
          << static_cast<int64_t>(normGradRowBlock) << ")";
      return signalPassFailure();
    }
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      for (Block &block : function.getBody()) {
        if (groupedAttention)
          for (auto attention :
               llvm::make_early_inc_range(block.getOps<AttentionOp>()))
            if (foldGroupedKeys(attention))
              ++numGroupedAttention;
        for (auto attention :
             llvm::make_early_inc_range(block.getOps<AttentionOp>()))
          if (foldHeadLayouts(attention))
            ++numFoldedAttention;
        for (auto attention :
             llvm::make_early_inc_range(block.getOps<AttentionOp>()))
          if (foldMergedOutput(attention))
            ++numMergedAttention;
        for (auto loss :
             llvm::make_early_inc_range(block.getOps<CrossEntropyOp>()))
          if (fuseCrossEntropy(loss))
            ++numRowRegions;
        if (gemmEpilogues)
          for (auto matmul :
               llvm::make_early_inc_range(block.getOps<MatmulOp>()))
            if (foldBiasEpilogue(matmul))
              ++numEpilogues;
        if (gemmEpilogues && geluEpilogues) {
          for (auto matmul :
               llvm::make_early_inc_range(block.getOps<MatmulBiasOp>()))
            if (foldGeluEpilogue(matmul))
              ++numGeluEpilogues;
          for (auto grad :
               llvm::make_early_inc_range(block.getOps<GeluGradOp>()))
            if (foldGeluGradEpilogue(grad))
              ++numGeluEpilogues;
        }
        if (widenGradients)
          for (auto cast : llvm::make_early_inc_range(block.getOps<CastOp>()))
            if (widenIntoProducer(cast))
              ++numWidened;
        if (gemmEpilogues && biasGradEpilogues)
          for (auto grad :
               llvm::make_early_inc_range(block.getOps<BiasAddGradOp>()))
            if (foldBiasGradEpilogue(grad))
              ++numBiasGradEpilogues;
        if (gradientAccumulationFusion)
          for (auto add : llvm::make_early_inc_range(block.getOps<AddOp>()))
            if (foldGradientAccumulation(add))
              ++numAccumulatingGemms;
        // The updates first: parameter copies replace the casts that
        // grouping would otherwise group.
        int64_t commands = 0;
        numFusedUpdates += fuseAdamW(block, commands);
        numMultiAdamW += commands;
        // The step's own arguments and results change: not for a function
        // something calls, whose calls would no longer match.
        if (parameterCopies && block.isEntryBlock() &&
            function.symbolKnownUseEmpty(getOperation())) {
          FailureOr<int64_t> kept = keepParameterCopies(function);
          if (failed(kept))
            return signalPassFailure();
          numParameterCopies += *kept;
        }
        if (groupCasts) {
          int64_t castCommands = 0;
          numGroupedCasts += groupParameterCasts(block, castCommands);
          numMultiCasts += castCommands;
        }
        Fuser fuser(block, widenGradients, normGradRowBlock);
        fuser.group();
        int64_t regions = 0;
        numFusedOps += fuser.rewrite(regions);
        numRegions += regions;
        numWidened += fuser.numWidened;
      }
    }
  }
};

} // namespace
