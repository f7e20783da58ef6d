//===- Kernels.h - The one table of runtime kernels ------------*- C++ -*-===//
//
// Every kernel the runtime executes, with its operand counts and which
// input holds token ids: the one table both sides use. The compiler's
// exporter refuses an mtrt.kernel whose name or operand counts are not
// here (an error at compile time, naming the op), and the runtime resolves
// each command to its KernelId once, when a program is loaded, instead of
// comparing names on every step. Adding a kernel is one row here and its
// body in the backend.
//
// Header-only and plain C++17: the compiler includes it without linking
// anything new.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_KERNELS_H
#define MTRT_KERNELS_H

#include <cstddef>
#include <cstring>
#include <string>

namespace mtrt {

enum class KernelId {
  embedding,
  embedding_grad,
  position_embedding,
  position_embedding_grad,
  layer_norm,
  layer_norm_grad,
  add,
  bias_add,
  bias_add_grad,
  gelu,
  rms_norm,
  rms_norm_grad,
  silu,
  silu_grad,
  softcap,
  softcap_grad,
  mul,
  rope,
  repeat_kv,
  repeat_kv_grad,
  gelu_grad,
  dropout,
  matmul,
  matmul_bias,
  matmul_bias_gelu,
  matmul_gelu_grad,
  matmul_bias_grad,
  split_heads,
  merge_heads,
  attention,
  attention_grad,
  qkv_attention,
  qkv_attention_grad,
  merged_attention,
  merged_attention_grad,
  cross_entropy,
  cross_entropy_grad,
  global_norm,
  clip_scale,
  div,
  cast,
  multi_cast,
  adamw,
  multi_adamw,
  fill,
  copy_prefix,
  sum_squares,
  mean,
  sqrt,
  scale,
  all_reduce,
  reduce_scatter,
  all_gather,
  all_slice,
  send,
  recv,
  top_k_gating,
  top_k_gating_grad,
  moe_route,
  moe_permute,
  moe_unpermute,
  moe_weights_grad,
  sigmoid_gate,
  sigmoid_gate_grad,
  grouped_matmul,
  grouped_matmul_weight_grad,
  router_statistics,
  router_probability_grad,
  load_balancing_loss,
  load_balancing_loss_grad,
  router_z_loss,
  router_z_loss_grad,
  expert_dispatch,
  expert_combine,
  fused
};

struct KernelInfo {
  KernelId id;
  const char *name;
  /// Operand counts; -1 means any number (at least one).
  int ins;
  int outs;
  /// The inputs holding i32 values (token ids, a mixture of experts'
  /// routing), bit j for input j; every other input is floating point.
  unsigned indexInputs;
  /// The outputs holding i32 values (a routing), as indexInputs.
  unsigned indexOutputs = 0;

  bool isIndexInput(size_t j) const {
    return j < 32 && ((indexInputs >> j) & 1u);
  }
  bool isIndexOutput(size_t j) const {
    return j < 32 && ((indexOutputs >> j) & 1u);
  }
};

/// Bit j of KernelInfo's index masks: operand j.
constexpr unsigned operand(unsigned j) { return 1u << j; }

inline const KernelInfo *kernelTable(size_t &count) {
  static constexpr KernelInfo table[] = {
      {KernelId::embedding, "embedding", 2, 1, operand(1)},
      // A third input is an accumulator, output 0 updated in place.
      {KernelId::embedding_grad, "embedding_grad", -1, 1, operand(1)},
      {KernelId::position_embedding, "position_embedding", 1, 1, 0},
      {KernelId::position_embedding_grad, "position_embedding_grad", 1, 1, 0},
      {KernelId::layer_norm, "layer_norm", 3, 1, 0},
      {KernelId::layer_norm_grad, "layer_norm_grad", 3, 3, 0},
      {KernelId::add, "add", 2, 1, 0},
      {KernelId::bias_add, "bias_add", 2, 1, 0},
      {KernelId::bias_add_grad, "bias_add_grad", 1, 1, 0},
      {KernelId::gelu, "gelu", 1, 1, 0},
      {KernelId::rms_norm, "rms_norm", 2, 1, 0},
      {KernelId::rms_norm_grad, "rms_norm_grad", 3, 2, 0},
      {KernelId::silu, "silu", 1, 1, 0},
      {KernelId::silu_grad, "silu_grad", 2, 1, 0},
      // cap * tanh(x / cap) (Gemma 2's logits) and its gradient, `cap`
      // their attribute.
      {KernelId::softcap, "softcap", 1, 1, 0},
      {KernelId::softcap_grad, "softcap_grad", 2, 1, 0},
      {KernelId::mul, "mul", 2, 1, 0},
      {KernelId::rope, "rope", 1, 1, 0},
      {KernelId::repeat_kv, "repeat_kv", 1, 1, 0},
      {KernelId::repeat_kv_grad, "repeat_kv_grad", 1, 1, 0},
      {KernelId::gelu_grad, "gelu_grad", 2, 1, 0},
      {KernelId::dropout, "dropout", 1, 1, 0},
      // A third input is an accumulator: output 0 is it updated in place,
      // plus the product (cuBLAS's beta = 1; mt.matmul's accumulate).
      {KernelId::matmul, "matmul", -1, 1, 0},
      // A matmul with its bias (the result's last dimension) added in the
      // GEMM's epilogue.
      {KernelId::matmul_bias, "matmul_bias", 3, 1, 0},
      // matmul_bias whose epilogue also applies GeLU: outputs the sum (the
      // GeLU's input, which the backward reads) and its GeLU.
      {KernelId::matmul_bias_gelu, "matmul_bias_gelu", 3, 2, 0},
      // A matmul whose product is a GeLU's output gradient, times GeLU's
      // derivative at input 2 (the GeLU's input) in its epilogue.
      {KernelId::matmul_gelu_grad, "matmul_gelu_grad", 3, 1, 0},
      // A weight gradient's matmul (rhs [k, n], not transposed) that also
      // writes the sum of the rhs's rows: the bias gradient, output 1.
      // A third input accumulates the weight gradient, as matmul's.
      {KernelId::matmul_bias_grad, "matmul_bias_grad", -1, 2, 0},
      {KernelId::split_heads, "split_heads", 1, -1, 0},
      {KernelId::merge_heads, "merge_heads", -1, 1, 0},
      {KernelId::attention, "attention", 3, 1, 0},
      {KernelId::attention_grad, "attention_grad", 4, 3, 0},
      // Attention reading a fused [batch, seq, 3 * heads * head_dim] QKV
      // tensor in place and writing merged heads (mtrt/HeadLayout.h), and
      // its rows' log-sum-exp [batch, heads, seq] in f32; the gradient
      // reads dOut, QKV, the output and those stats.
      {KernelId::qkv_attention, "qkv_attention", 1, 2, 0},
      {KernelId::qkv_attention_grad, "qkv_attention_grad", 4, 1, 0},
      // Attention over head-major q, k and v (keys and values possibly of
      // fewer heads) writing merged heads and the rows' log-sum-exp; the
      // gradient reads dOut (merged), q, k, v, the output and the stats.
      {KernelId::merged_attention, "merged_attention", 3, 2, 0},
      {KernelId::merged_attention_grad, "merged_attention_grad", 6, 3, 0},
      {KernelId::cross_entropy, "cross_entropy", 2, 1, operand(1)},
      {KernelId::cross_entropy_grad, "cross_entropy_grad", 3, 1, operand(2)},
      {KernelId::global_norm, "global_norm", -1, 1, 0},
      {KernelId::clip_scale, "clip_scale", 2, 1, 0},
      {KernelId::div, "div", 2, 1, 0},
      {KernelId::cast, "cast", 1, 1, 0},
      // N tensors of one element type cast to N of another, each its
      // input's shape.
      {KernelId::multi_cast, "multi_cast", -1, -1, 0},
      {KernelId::adamw, "adamw", 11, 3, 0},
      // N parameters, gradients, first and second moments, the seven
      // scalars of adamw; N of each updated in place.
      {KernelId::multi_adamw, "multi_adamw", -1, -1, 0},
      {KernelId::fill, "fill", 0, 1, 0},
      // The input's leading elements, then zeros to the output's length:
      // ZeRO's padding to equal pieces and its cut after a gather.
      {KernelId::copy_prefix, "copy_prefix", 1, 1, 0},
      {KernelId::sum_squares, "sum_squares", -1, 1, 0},
      {KernelId::mean, "mean", 1, 1, 0},
      {KernelId::sqrt, "sqrt", 1, 1, 0},
      {KernelId::scale, "scale", 1, 1, 0},
      {KernelId::all_reduce, "all_reduce", 1, 1, 0},
      {KernelId::reduce_scatter, "reduce_scatter", 1, 1, 0},
      {KernelId::all_gather, "all_gather", 1, 1, 0},
      {KernelId::all_slice, "all_slice", 1, 1, 0},
      {KernelId::send, "send", 1, 0, 0},
      {KernelId::recv, "recv", 0, 1, 0},
      // A mixture of experts (mt.top_k_gating and the ops after it):
      // routings are i32.
      {KernelId::top_k_gating, "top_k_gating", 1, 2, 0, operand(1)},
      // A fourth input, the logits, for unnormalized weights.
      {KernelId::top_k_gating_grad, "top_k_gating_grad", -1, 1, operand(2)},
      // A second input, the weights, ranks a capacity's choices.
      {KernelId::moe_route, "moe_route", -1, 2, operand(0),
       operand(0) | operand(1)},
      // A third input, the weights, is optional.
      {KernelId::moe_permute, "moe_permute", -1, 1, operand(1)},
      {KernelId::moe_unpermute, "moe_unpermute", -1, 1, operand(1)},
      {KernelId::moe_weights_grad, "moe_weights_grad", 3, 1, operand(2)},
      // A shared expert's output scaled per token: the rows [tokens...,
      // hidden] and their gates [tokens..., 1]; the gradient reads the
      // output gradient first and writes both inputs' gradients.
      {KernelId::sigmoid_gate, "sigmoid_gate", 2, 1, 0},
      {KernelId::sigmoid_gate_grad, "sigmoid_gate_grad", 3, 2, 0},
      // The rows, their offsets, then one weight per expert.
      {KernelId::grouped_matmul, "grouped_matmul", -1, 1, operand(1)},
      // One weight gradient per expert.
      {KernelId::grouped_matmul_weight_grad, "grouped_matmul_weight_grad", 3,
       -1, operand(2)},
      // The auxiliary load-balancing loss: a router's per-expert load and
      // mean probability; the loss reads every router's loads, then their
      // probabilities (two equal halves); its gradient reads the loss's
      // gradient, then the loads.
      {KernelId::router_statistics, "router_statistics", 2, 2, operand(1)},
      {KernelId::router_probability_grad, "router_probability_grad", 2, 1, 0},
      {KernelId::load_balancing_loss, "load_balancing_loss", -1, 1, 0},
      {KernelId::load_balancing_loss_grad, "load_balancing_loss_grad", -1, 1,
       0},
      {KernelId::router_z_loss, "router_z_loss", 1, 1, 0},
      {KernelId::router_z_loss_grad, "router_z_loss_grad", 2, 1, 0},
      // Expert parallelism's all-to-all along a grid axis: rows and their
      // offsets out, the received rows, local offsets and counts back; and
      // the received rows, counts and offsets back to the rows.
      {KernelId::expert_dispatch, "expert_dispatch", 2, 3, operand(1),
       operand(1) | operand(2)},
      {KernelId::expert_combine, "expert_combine", 3, 1,
       operand(1) | operand(2)},
      // A kernel the compiler generated (RankProgram::generatedKernels).
      {KernelId::fused, "fused", -1, -1, 0},
  };
  count = sizeof(table) / sizeof(table[0]);
  return table;
}

/// The kernel named `name`, or nullptr.
inline const KernelInfo *findKernel(const std::string &name) {
  size_t count = 0;
  const KernelInfo *table = kernelTable(count);
  for (size_t i = 0; i < count; ++i)
    if (name == table[i].name)
      return &table[i];
  return nullptr;
}

/// The six attention kernels: forward or backward, over head-major
/// operands, a fused QKV tensor, or head-major operands with a merged
/// output (mtrt/HeadLayout.h).
struct AttentionKind {
  bool forward, fusedQKV, mergedOutput;
  /// The command input holding the queries (after dOut in the backward).
  size_t queryInput() const { return forward ? 0 : 1; }
  /// The command input holding the keys (the query's in the fused form).
  size_t keyInput() const { return fusedQKV ? queryInput() : queryInput() + 1; }
  /// Whether the forward writes its rows' log-sum-exp (its output 1) and
  /// the gradient reads it with the output (its last two inputs).
  bool hasStats() const { return fusedQKV || mergedOutput; }
};
/// Whether kernel `id` reads and writes its 16-bit operands in their own
/// storage: transfers and copy_prefix move raw bytes; casts, generated
/// kernels and
/// multi_adamw (f32, but for the parameters' 16-bit copies it rounds)
/// convert them themselves. Every backend leaves these unstaged (no fp32
/// copies of their operands): a 16-bit output such a kernel writes would
/// be overwritten by its staged copy rounded back. One predicate for the
/// CPU and CUDA backends, which once disagreed about multi_adamw.
inline bool convertsOwnStorage(KernelId id) {
  return id == KernelId::send || id == KernelId::recv ||
         id == KernelId::copy_prefix || id == KernelId::cast ||
         id == KernelId::multi_cast || id == KernelId::fused ||
         id == KernelId::multi_adamw;
}

/// The GEMMs: a matmul, and a matmul with an epilogue (its bias, GeLU,
/// GeLU's derivative or the bias gradient); each command's lhs is input 0,
/// rhs input 1, product output 0 (matmulShape).
inline bool isGemm(KernelId id) {
  return id == KernelId::matmul || id == KernelId::matmul_bias ||
         id == KernelId::matmul_bias_gelu || id == KernelId::matmul_gelu_grad ||
         id == KernelId::matmul_bias_grad;
}
/// Whether a kernel takes an optional third input, an f32 accumulator that
/// output 0 overwrites with what it computes added (mt.matmul's,
/// mt.matmul_bias_grad's and mt.embedding_grad's accumulate).
inline bool takesAccumulator(KernelId id) {
  return id == KernelId::matmul || id == KernelId::matmul_bias_grad ||
         id == KernelId::embedding_grad;
}
/// Whether a command of `inputs` inputs accumulates: a GEMM's product
/// added with beta = 1, an embedding's table gradient added to its rows.
inline bool accumulatesInPlace(KernelId id, size_t inputs) {
  return takesAccumulator(id) && inputs == 3;
}
/// The collectives across a grid axis' ranks (send and recv are the
/// pipeline's transfers): each moves one type, input 0's (a signature
/// check).
inline bool isCollective(KernelId id) {
  return id == KernelId::all_reduce || id == KernelId::reduce_scatter ||
         id == KernelId::all_gather || id == KernelId::all_slice;
}
inline bool isAttention(KernelId id) {
  return id == KernelId::attention || id == KernelId::attention_grad ||
         id == KernelId::qkv_attention || id == KernelId::qkv_attention_grad ||
         id == KernelId::merged_attention ||
         id == KernelId::merged_attention_grad;
}
inline AttentionKind attentionKind(KernelId id) {
  return {id == KernelId::attention || id == KernelId::qkv_attention ||
              id == KernelId::merged_attention,
          id == KernelId::qkv_attention || id == KernelId::qkv_attention_grad,
          id == KernelId::merged_attention ||
              id == KernelId::merged_attention_grad};
}

} // namespace mtrt

#endif // MTRT_KERNELS_H
