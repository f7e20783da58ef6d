//===- OpFlops.h - Floating-point operations of one op ----------*- C++ -*-===//
//
// One count of an op's work, shared by the passes that weigh ops against
// each other (the pipeline's FLOP-driven timeline, rematerialization's
// report of what it recomputes).
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_ANALYSIS_OPFLOPS_H
#define MEGATRON_ANALYSIS_OPFLOPS_H

#include "dialects/MT/IR/MTOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <algorithm>
#include <optional>
#include <type_traits>

namespace mlir::mt {

/// The keys each query of a `seq`-long sequence is counted against: all
/// of them, as Megatron-LM's FLOP formula counts (causality ignored), or
/// at most `window` under a sliding window, whose queries never see more.
inline int64_t attentionKeysPerQuery(int64_t seq,
                                     std::optional<uint64_t> window) {
  return window && *window > 0 ? std::min<int64_t>(seq, int64_t(*window)) : seq;
}

/// An attention op's size in any of its forms: elements of its queries
/// (the fused QKV form's result, or its gradient's input, has as many),
/// the keys each query is counted against, the model width (heads x
/// head_dim), and whether it is a gradient.
struct AttentionSize {
  int64_t queryElements, keys, width;
  bool gradient;
};

namespace detail {
template <typename Op>
std::optional<AttentionSize> attentionSizeOf(Operation *op, bool gradient) {
  auto typed = dyn_cast<Op>(op);
  if (!typed)
    return std::nullopt;
  int64_t seq;
  RankedTensorType queries; // [batch, heads, seq, head_dim], or merged
  if constexpr (std::is_same_v<Op, QKVAttentionOp> ||
                std::is_same_v<Op, QKVAttentionGradOp>) {
    seq = typed.getQkv().getType().getDimSize(1);
    if constexpr (std::is_same_v<Op, QKVAttentionOp>)
      queries = typed.getResult().getType();
    else
      queries = typed.getGradOutput().getType();
  } else {
    seq = typed.getQuery().getType().getDimSize(2);
    queries = typed.getQuery().getType();
  }
  int64_t width = queries.getRank() == 4
                      ? queries.getDimSize(1) * queries.getDimSize(3)
                      : queries.getDimSize(2);
  return AttentionSize{queries.getNumElements(),
                       attentionKeysPerQuery(seq, typed.getWindow()), width,
                       gradient};
}
} // namespace detail

/// The size of `op` if it is attention in any of its forms.
inline std::optional<AttentionSize> attentionSize(Operation *op) {
  using namespace detail;
  for (std::optional<AttentionSize> size :
       {attentionSizeOf<AttentionOp>(op, false),
        attentionSizeOf<AttentionGradOp>(op, true),
        attentionSizeOf<MergedAttentionOp>(op, false),
        attentionSizeOf<MergedAttentionGradOp>(op, true),
        attentionSizeOf<QKVAttentionOp>(op, false),
        attentionSizeOf<QKVAttentionGradOp>(op, true)})
    if (size)
      return size;
  return std::nullopt;
}

/// Attention's FLOPs: 4 per query element and key it sees (Q K^T and
/// P V), twice that for a gradient; nothing for another op.
inline std::optional<double> attentionFlops(Operation *op) {
  std::optional<AttentionSize> size = attentionSize(op);
  if (!size)
    return std::nullopt;
  return (size->gradient ? 8.0 : 4.0) * double(size->queryElements) *
         double(size->keys);
}

/// Floating-point operations of `op`, counted as in Megatron-LM's FLOP
/// formula: 2 per multiply-add of a matmul, 4 * seq per query element of
/// attention (Q K^T and P V), twice that for its gradient; one per element
/// of everything else.
inline double opFlops(Operation *op) {
  auto numel = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type ? double(type.getNumElements()) : 0.0;
  };
  // A GEMM's product (lhs's contracted dimension k), and one per element
  // of what its epilogue computes (the bias, GeLU, its derivative, the
  // bias gradient's sums).
  auto product = [&](auto matmul) {
    ArrayRef<int64_t> lhs =
        cast<RankedTensorType>(matmul.getLhs().getType()).getShape();
    int64_t k = matmul.getTransposeA() ? lhs[lhs.size() - 2] : lhs.back();
    return 2.0 * numel(matmul.getResult()) * double(k);
  };
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return product(matmul);
  if (auto matmul = dyn_cast<MatmulBiasOp>(op))
    return product(matmul) + numel(matmul.getResult());
  if (auto matmul = dyn_cast<MatmulBiasGeluOp>(op))
    return product(matmul) + 2.0 * numel(matmul.getResult());
  if (auto matmul = dyn_cast<MatmulGeluGradOp>(op))
    return product(matmul) + numel(matmul.getResult());
  if (auto matmul = dyn_cast<MatmulBiasGradOp>(op))
    return product(matmul) + numel(matmul.getRhs());
  // Each expert's rows times its weight: 2 per multiply-add, over all
  // rows together.
  if (auto grouped = dyn_cast<GroupedMatmulOp>(op))
    return 2.0 * numel(grouped.getResult()) *
           double(grouped.getInput().getType().getDimSize(1));
  if (auto grouped = dyn_cast<GroupedMatmulWeightGradOp>(op))
    return 2.0 * numel(grouped.getGradOutput()) *
           double(grouped.getInput().getType().getDimSize(1));
  if (std::optional<double> flops = attentionFlops(op))
    return *flops;
  double total = 0;
  for (Value result : op->getResults())
    total += numel(result);
  return total;
}

} // namespace mlir::mt

#endif // MEGATRON_ANALYSIS_OPFLOPS_H
