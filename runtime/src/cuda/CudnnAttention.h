//===- CudnnAttention.h - cuDNN's fused attention ---------------*- C++ -*-===//
//
// Causal attention (qkv_attention over the fused QKV tensor, and
// merged_attention over head-major q, k and v), forward and backward, by
// cuDNN's fused flash-attention kernels on the tensor cores, built through
// the cuDNN frontend's graph API (header-only, `nvidia-cudnn-frontend`):
// `sdpa` with its rows' log-sum-exp as the stats, and `sdpa_backward`
// reading the output and those stats, which is why mt.qkv_attention and
// mt.merged_attention state them in the IR.
//
// cuDNN is loaded at run time (dlopen of libcudnn.so.9, or
// MEGATRON_CUDNN_LIBRARY): a GPU machine without it runs the backend's own
// fp32 kernels (FlashAttention.cuh) instead. Only 16-bit attention without
// dropout goes to cuDNN, whose dropout mask is not the CPU backend's
// Philox mask; fp32 attention stays on our kernels, as PyTorch keeps fp32
// SDPA off the flash kernels.
//
// The operands are read and written in place in the artifact's layout:
// q, k and v at their offsets in the [batch, seq, 3 * heads * head_dim]
// tensor with row stride 3 * heads * head_dim (qkv_attention), or as
// [batch, heads, seq, head_dim] tensors of their own, keys and values
// possibly of fewer heads, which cuDNN's grouped-query attention reads
// as they are (merged_attention); the output and its gradient [batch, seq,
// heads * head_dim], the stats [batch, heads, seq] in f32.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_CUDNNATTENTION_H
#define MTRT_CUDA_CUDNNATTENTION_H

#include "mtrt/Artifact.h"
#include "mtrt/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

namespace mtrt::gpu {

/// One qkv_attention or qkv_attention_grad call's shape.
struct CudnnAttentionShape {
  int64_t batch = 0, heads = 0, seq = 0, headDim = 0;
  /// Head-major q, k and v of their own (merged_attention) rather than the
  /// fused QKV tensor; then `kvHeads` key and value heads.
  bool headMajor = false;
  int64_t kvHeads = 0;
  double scale = 1.0;
  DType dtype = DType::BF16;
  bool forward = true;
};

/// cuDNN's fused attention: graphs built once per shape and reused.
class CudnnAttention {
public:
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention &) = delete;
  CudnnAttention &operator=(const CudnnAttention &) = delete;

  /// Loads cuDNN (once per process) and creates a handle on `stream`.
  /// Returns false, with `why`, when cuDNN cannot be used here.
  bool open(cudaStream_t stream, std::string &why);

  /// Destroys the handle (before the stream it was bound to goes).
  void close();

  /// Whether cuDNN runs this call (a 16-bit dtype, a head dimension and
  /// alignment it supports, a plan it can build); builds and keeps the
  /// graph. `why` says what stopped it.
  bool supports(const CudnnAttentionShape &shape, std::string &why);

  /// The largest workspace of the graphs built so far.
  int64_t workspaceBytes() const;

  /// out, lse = attention(q, k, v); every pointer on the device (for the
  /// fused QKV tensor, the three chunks' starts: qkvChunks).
  Status forward(const CudnnAttentionShape &shape, const void *q, const void *k,
                 const void *v, void *out, float *lse, void *workspace);
  /// dQ, dK, dV from dOut and the forward's q, k, v, out and lse.
  Status backward(const CudnnAttentionShape &shape, const void *dOut,
                  const void *q, const void *k, const void *v, const void *out,
                  const float *lse, void *dQ, void *dK, void *dV,
                  void *workspace);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace mtrt::gpu

#endif // MTRT_CUDA_CUDNNATTENTION_H
