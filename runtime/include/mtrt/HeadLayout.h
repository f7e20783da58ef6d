//===- HeadLayout.h - Where attention finds each head's rows ----*- C++ -*-===//
//
// Attention works on one (batch, head) pair at a time, row by row: a row is
// head_dim contiguous floats. Where the rows lie depends on the layout the
// compiler chose. `attention` reads tensors of their own, [batch, heads,
// seq, head_dim]; `qkv_attention` reads queries, keys and values where the
// fused QKV projection wrote them, [batch, seq, 3 * heads * head_dim], and
// writes [batch, seq, heads * head_dim], so that no split or merge of heads
// is ever copied: the rows of a pair are then strided, and the GEMMs over
// them take the stride as their leading dimension. Both backends (the CPU
// backend and the CUDA kernels, host-tested) index through this one type.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_HEADLAYOUT_H
#define MTRT_HEADLAYOUT_H

#include <cstdint>
#include <vector>

#include "mtrt/HostDevice.h"

namespace mtrt {

/// Element (b, h, i, d) of one operand's [batch, heads, seq, head_dim] view
/// lies at offset + b * batchStride + (h / groups) * headStride +
/// i * rowStride + d: with `groups` > 1 (grouped-query attention's keys and
/// values), each stored head serves `groups` consecutive query heads.
struct HeadLayout {
  int64_t offset = 0, batchStride = 0, headStride = 0, rowStride = 0;
  int64_t groups = 1;

  /// A [batch, heads, seq, headDim] tensor of its own.
  static MTRT_HOST_DEVICE HeadLayout headMajor(int64_t heads, int64_t seq,
                                               int64_t headDim) {
    return {0, heads * seq * headDim, seq * headDim, headDim};
  }

  /// Chunk `chunk` (0 queries, 1 keys, 2 values) of a [batch, seq, chunks
  /// * heads * headDim] tensor: head h's columns are [h * headDim, (h + 1)
  /// * headDim) of the chunk.
  static MTRT_HOST_DEVICE HeadLayout chunkOf(int64_t chunk, int64_t chunks,
                                             int64_t heads, int64_t seq,
                                             int64_t headDim) {
    int64_t width = chunks * heads * headDim;
    return {chunk * heads * headDim, seq * width, headDim, width};
  }

  /// Row 0 of pair bh = b * heads + h (`heads` the query's).
  MTRT_HOST_DEVICE int64_t pair(int64_t bh, int64_t heads) const {
    return offset + bh / heads * batchStride + bh % heads / groups * headStride;
  }

  /// [batch, kvHeads, seq, headDim] keys or values, each head serving
  /// `groups` query heads.
  static MTRT_HOST_DEVICE HeadLayout grouped(int64_t kvHeads, int64_t groups,
                                             int64_t seq, int64_t headDim) {
    HeadLayout own = headMajor(kvHeads, seq, headDim);
    own.groups = groups;
    return own;
  }

  /// Row i of pair bh.
  MTRT_HOST_DEVICE int64_t row(int64_t bh, int64_t heads, int64_t i) const {
    return pair(bh, heads) + i * rowStride;
  }
};

/// The layouts of one attention command's operands. A gradient lies as the
/// value it is the gradient of (dQ as Q, dOut as the output).
struct AttentionLayout {
  int64_t heads = 1;
  HeadLayout query, key, value, output;

  /// Every operand [batch, heads, seq, headDim] (`attention`), or keys and
  /// values [batch, kvHeads, seq, headDim] with kvHeads dividing heads.
  static MTRT_HOST_DEVICE AttentionLayout headMajor(int64_t heads, int64_t seq,
                                                    int64_t headDim,
                                                    int64_t kvHeads = 0) {
    HeadLayout own = HeadLayout::headMajor(heads, seq, headDim);
    HeadLayout kv =
        kvHeads > 0 && kvHeads != heads
            ? HeadLayout::grouped(kvHeads, heads / kvHeads, seq, headDim)
            : own;
    return {heads, own, kv, kv, own};
  }

  /// Query heads per key and value head.
  MTRT_HOST_DEVICE int64_t groups() const { return key.groups; }

  /// Queries, keys and values in one [batch, seq, 3 * heads * headDim]
  /// tensor, the output [batch, seq, heads * headDim] (`qkv_attention`).
  static MTRT_HOST_DEVICE AttentionLayout fusedQKV(int64_t heads, int64_t seq,
                                                   int64_t headDim) {
    return {heads, HeadLayout::chunkOf(0, 3, heads, seq, headDim),
            HeadLayout::chunkOf(1, 3, heads, seq, headDim),
            HeadLayout::chunkOf(2, 3, heads, seq, headDim),
            HeadLayout::chunkOf(0, 1, heads, seq, headDim)};
  }
};

/// The pairs an attention command runs over, read from the shape of its
/// query operand: [batch, heads, seq, headDim], or with `fusedQKV` the QKV
/// tensor [batch, seq, 3 * heads * headDim] and `heads` from the command.
struct AttentionExtent {
  int64_t batch, heads, seq, headDim;
  bool fusedQKV;
  /// Key and value heads (grouped-query attention: fewer than `heads`).
  int64_t kvHeads;
  /// Head-major operands whose output (and its gradient) is merged,
  /// [batch, seq, heads * headDim] (`merged_attention`).
  bool mergedOutput = false;

  /// From the query's shape and the key's (`attention`, `merged_attention`
  /// with `mergedOutput`), or from the fused QKV tensor's and the `heads`
  /// attribute (`qkv_attention`).
  static AttentionExtent of(const std::vector<int64_t> &query,
                            const std::vector<int64_t> &key, bool fusedQKV,
                            bool mergedOutput, int64_t heads) {
    if (fusedQKV)
      return {query[0], heads, query[1], query[2] / (3 * heads), true, heads};
    return {query[0], query[1], query[2],    query[3],
            false,    key[1],   mergedOutput};
  }

  AttentionLayout layout() const {
    if (fusedQKV)
      return AttentionLayout::fusedQKV(heads, seq, headDim);
    AttentionLayout layout =
        AttentionLayout::headMajor(heads, seq, headDim, kvHeads);
    if (mergedOutput)
      layout.output = HeadLayout::chunkOf(0, 1, heads, seq, headDim);
    return layout;
  }
};

} // namespace mtrt

#endif // MTRT_HEADLAYOUT_H
