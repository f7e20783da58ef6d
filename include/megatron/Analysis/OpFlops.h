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

namespace mlir::mt {

/// The keys each query of a `seq`-long sequence is counted against: all
/// of them, as Megatron-LM's FLOP formula counts (causality ignored), or
/// at most `window` under a sliding window, whose queries never see more.
inline int64_t attentionKeysPerQuery(int64_t seq,
                                     std::optional<uint64_t> window) {
  return window && *window > 0 ? std::min<int64_t>(seq, int64_t(*window)) : seq;
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
  if (auto attention = dyn_cast<AttentionOp>(op))
    return 4.0 * numel(attention.getQuery()) *
           double(attentionKeysPerQuery(
               attention.getQuery().getType().getDimSize(2),
               attention.getWindow()));
  if (auto grad = dyn_cast<AttentionGradOp>(op))
    return 8.0 * numel(grad.getQuery()) *
           double(attentionKeysPerQuery(grad.getQuery().getType().getDimSize(2),
                                        grad.getWindow()));
  if (auto attention = dyn_cast<QKVAttentionOp>(op))
    return 4.0 * numel(attention.getResult()) *
           double(
               attentionKeysPerQuery(attention.getQkv().getType().getDimSize(1),
                                     attention.getWindow()));
  if (auto grad = dyn_cast<QKVAttentionGradOp>(op))
    return 8.0 * numel(grad.getGradOutput()) *
           double(attentionKeysPerQuery(grad.getQkv().getType().getDimSize(1),
                                        grad.getWindow()));
  double total = 0;
  for (Value result : op->getResults())
    total += numel(result);
  return total;
}

} // namespace mlir::mt

#endif // MEGATRON_ANALYSIS_OPFLOPS_H
