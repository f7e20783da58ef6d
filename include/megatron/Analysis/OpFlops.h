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

namespace detail {
/// Attention's FLOPs, if `op` is an `Op`: 4 per query element and key it
/// sees (Q K^T and P V), twice that for a gradient. The fused QKV form's
/// result (or its gradient) has as many elements as the queries.
template <typename Op>
std::optional<double> attentionFlopsOf(Operation *op, double perKey) {
  auto typed = dyn_cast<Op>(op);
  if (!typed)
    return std::nullopt;
  double elements;
  int64_t seq;
  if constexpr (std::is_same_v<Op, QKVAttentionOp> ||
                std::is_same_v<Op, QKVAttentionGradOp>) {
    elements = double(cast<RankedTensorType>(typed->getResult(0).getType())
                          .getNumElements()) /
               (std::is_same_v<Op, QKVAttentionOp> ? 1.0 : 3.0);
    seq = typed.getQkv().getType().getDimSize(1);
  } else {
    elements = double(typed.getQuery().getType().getNumElements());
    seq = typed.getQuery().getType().getDimSize(2);
  }
  return perKey * elements *
         double(attentionKeysPerQuery(seq, typed.getWindow()));
}
} // namespace detail

/// Attention's FLOPs in any of its forms, or nothing for another op.
inline std::optional<double> attentionFlops(Operation *op) {
  using namespace detail;
  for (std::optional<double> flops :
       {attentionFlopsOf<AttentionOp>(op, 4.0),
        attentionFlopsOf<AttentionGradOp>(op, 8.0),
        attentionFlopsOf<MergedAttentionOp>(op, 4.0),
        attentionFlopsOf<MergedAttentionGradOp>(op, 8.0),
        attentionFlopsOf<QKVAttentionOp>(op, 4.0),
        attentionFlopsOf<QKVAttentionGradOp>(op, 8.0)})
    if (flops)
      return flops;
  return std::nullopt;
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
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    ArrayRef<int64_t> lhs = matmul.getLhs().getType().getShape();
    int64_t k = matmul.getTransposeA() ? lhs[lhs.size() - 2] : lhs.back();
    return 2.0 * numel(matmul.getResult()) * double(k);
  }
  if (auto matmul = dyn_cast<MatmulBiasOp>(op)) { // the product, the bias
    ArrayRef<int64_t> lhs = matmul.getLhs().getType().getShape();
    int64_t k = matmul.getTransposeA() ? lhs[lhs.size() - 2] : lhs.back();
    return (2.0 * double(k) + 1.0) * numel(matmul.getResult());
  }
  if (std::optional<double> flops = attentionFlops(op))
    return *flops;
  double total = 0;
  for (Value result : op->getResults())
    total += numel(result);
  return total;
}

} // namespace mlir::mt

#endif // MEGATRON_ANALYSIS_OPFLOPS_H
