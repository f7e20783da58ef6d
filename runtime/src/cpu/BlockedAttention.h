//===- BlockedAttention.h - Causal attention in query blocks ----*- C++ -*-===//
//
// The CPU backend's attention, forward and backward, one (batch, head) pair
// at a time and, within it, one block of query rows at a time (as flash
// attention tiles it): the block's scores against the keys it may see are a
// GEMM, the causal softmax runs on the block's rows, and the products with
// V (or, backward, with dO, K and Q) are GEMMs again. Nothing larger than a
// block of rows by the sequence is ever held, in float, and every GEMM is a
// single-threaded BLAS call: the caller shares the (batch, head) pairs out
// over its thread pool. The row-at-a-time kernels in HostKernels.h (double
// precision) are the reference these are tested against.
//
// Dropout draws the same Philox mask as the reference: element (i, j) of
// pair bh keeps by dropoutKeep at maskRowIndex(..., bh, ..., i) + j.
//
// The operands' rows lie as `AttentionShape::layout` says (mtrt/
// HeadLayout.h): a pair's rows are `rowStride` apart, which each GEMM takes
// as its leading dimension, so heads split out of a fused QKV tensor are
// read in place.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CPU_BLOCKEDATTENTION_H
#define MTRT_CPU_BLOCKEDATTENTION_H

#include "cpu/HostKernels.h"
#include "mtrt/HeadLayout.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace mtrt {
namespace cpu {

struct AttentionShape {
  int64_t batch, heads, seq, headDim;
  double scale, dropout;
  uint32_t stream;
  RngKey key;
  uint64_t indexOffset;
  int64_t headOffset, headsTotal;
  AttentionLayout layout;
  /// A sliding window: query i sees keys i - window < j <= i (0: all
  /// keys j <= i).
  int64_t window = 0;
  /// Gemma 2's soft cap of the scaled scores, s = softcap * tanh(s /
  /// softcap), before the softmax (0: none).
  double softcap = 0.0;
};

namespace detail {

/// Query rows per block.
constexpr int64_t kAttentionBlock = 64;

/// One (batch, head) pair's rows of an operand: row i at data + i * stride.
template <typename T> struct PairRows {
  T *data;
  int64_t stride;
  T *row(int64_t i) const { return data + i * stride; }
};

template <typename T>
PairRows<T> pairRows(T *base, const HeadLayout &layout, int64_t bh,
                     int64_t heads) {
  return {base + layout.pair(bh, heads), layout.rowStride};
}

/// P = causal softmax of scale * Q_block K^T for query rows [i0, i0 + rows)
/// against keys [keyStart, keyStart + keys) (`k` starts at row keyStart),
/// row-major [rows x keys]; masked entries (after the query, and with a
/// sliding `window`, window or more before it) are 0. With a `softcap`,
/// the visible scores are capped first (softcap * tanh(s / softcap)) and,
/// if `tanhOut` is not null, their tanh(s / softcap) kept there (the
/// gradient's factor 1 - tanh^2), the same [rows x keys].
/// With the pair's rows' log-sum-exp `givenLse` (indexed by query row),
/// P_ij = exp(s_ij - lse_i) and no sweep rebuilds the softmax; without,
/// the rows are normalized here and, if `lseOut` is not null, their
/// log-sum-exp written to it.
inline void blockProbabilities(PairRows<const float> q, PairRows<const float> k,
                               int64_t i0, int64_t rows, int64_t keyStart,
                               int64_t keys, int64_t headDim, float scale,
                               int64_t window, float softcap, float *probs,
                               float *tanhOut, const float *givenLse,
                               float *lseOut) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, headDim,
              scale, q.row(i0), q.stride, k.data, k.stride, 0.0f, probs, keys);
  for (int64_t r = 0; r < rows; ++r) {
    float *row = probs + r * keys;
    // The columns of keys j <= i and, with a window, j > i - window.
    int64_t i = i0 + r, visible = i + 1 - keyStart;
    int64_t firstKey = firstVisibleKey(i, window) - keyStart;
    std::fill(row, row + firstKey, 0.0f);
    std::fill(row + visible, row + keys, 0.0f);
    if (softcap > 0.0f) {
      float *tanhRow = tanhOut ? tanhOut + r * keys : nullptr;
      for (int64_t j = firstKey; j < visible; ++j) {
        float t = std::tanh(row[j] / softcap);
        row[j] = softcap * t;
        if (tanhRow)
          tanhRow[j] = t;
      }
    }
    if (givenLse) {
      float rowLse = givenLse[i];
      for (int64_t j = firstKey; j < visible; ++j)
        row[j] = std::exp(row[j] - rowLse);
      continue;
    }
    float maxScore = -std::numeric_limits<float>::infinity();
    for (int64_t j = firstKey; j < visible; ++j)
      maxScore = std::max(maxScore, row[j]);
    float sum = 0.0f;
    for (int64_t j = firstKey; j < visible; ++j) {
      row[j] = std::exp(row[j] - maxScore);
      sum += row[j];
    }
    float inverse = 1.0f / sum;
    for (int64_t j = firstKey; j < visible; ++j)
      row[j] *= inverse;
    if (lseOut)
      lseOut[i0 + r] = maxScore + std::log(sum);
  }
}

/// Multiplies the `count` entries of query row i of pair bh that hold keys
/// [keyStart, keyStart + count) by their dropout factors: 1/(1-p) kept, 0
/// dropped (`words` is scratch).
inline void applyRowDropout(const AttentionShape &a, int64_t bh, int64_t i,
                            int64_t keyStart, int64_t count, float *row,
                            uint32_t *words) {
  uint64_t rowIndex = maskRowIndex(a.indexOffset, bh, a.heads, a.headsTotal,
                                   a.headOffset, a.seq, i);
  philoxWords(a.key.seed, rowIndex + uint64_t(keyStart), a.stream,
              uint32_t(a.key.step), count, words);
  float scale = float(dropoutScale(a.dropout));
  for (int64_t j = 0; j < count; ++j)
    row[j] *= keepsWord(words[j], a.dropout) ? scale : 0.0f;
}

/// `rows` from row `first` on.
template <typename T> PairRows<T> fromRow(PairRows<T> rows, int64_t first) {
  return {rows.row(first), rows.stride};
}

} // namespace detail

/// out = dropout(causal softmax(scale Q K^T)) V for pairs [bhBegin, bhEnd),
/// each operand laid out as `a.layout` says; if `lse` is not null, each
/// query row's log-sum-exp of its scaled scores to lse[bh * seq + i].
inline void blockedAttention(const float *q, const float *k, const float *v,
                             float *out, float *lse, const AttentionShape &a,
                             int64_t bhBegin, int64_t bhEnd) {
  const int64_t seq = a.seq, d = a.headDim, heads = a.layout.heads;
  std::vector<float> probs(size_t(detail::kAttentionBlock * seq));
  std::vector<uint32_t> words(static_cast<size_t>(seq));
  for (int64_t bh = bhBegin; bh < bhEnd; ++bh) {
    auto qs = detail::pairRows(q, a.layout.query, bh, heads);
    auto ks = detail::pairRows(k, a.layout.key, bh, heads);
    auto vs = detail::pairRows(v, a.layout.value, bh, heads);
    auto os = detail::pairRows(out, a.layout.output, bh, heads);
    for (int64_t i0 = 0; i0 < seq; i0 += detail::kAttentionBlock) {
      int64_t rows = std::min(detail::kAttentionBlock, seq - i0);
      // The block's keys [keyStart, i0 + rows): with a window, none before
      // its first query's first (the later queries' start later, and are
      // masked from there).
      int64_t keyStart = detail::firstVisibleKey(i0, a.window);
      int64_t keys = i0 + rows - keyStart;
      detail::blockProbabilities(qs, detail::fromRow(ks, keyStart), i0, rows,
                                 keyStart, keys, d, float(a.scale), a.window,
                                 float(a.softcap), probs.data(),
                                 /*tanhOut=*/nullptr, /*givenLse=*/nullptr,
                                 lse ? lse + bh * seq : nullptr);
      if (a.dropout > 0.0)
        for (int64_t r = 0; r < rows; ++r)
          detail::applyRowDropout(a, bh, i0 + r, keyStart,
                                  i0 + r + 1 - keyStart,
                                  probs.data() + r * keys, words.data());
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, d, keys,
                  1.0f, probs.data(), keys, vs.row(keyStart), vs.stride, 0.0f,
                  os.row(i0), os.stride);
    }
  }
}

/// The forward's results that its gradient may read: the output and its
/// rows' log-sum-exp (both, or neither when null).
struct AttentionForward {
  const float *out = nullptr, *lse = nullptr;
};

/// dQ, dK, dV of blockedAttention given dOut, for pairs [bhBegin, bhEnd).
/// Per query block, with Pd = dropout(P):
///   dV += Pd^T dO,  dPd = dO V^T,  dP = dropout'(dPd),
///   dS = scale P (dP - D),  dQ = dS K,  dK += dS^T Q,
/// where D = rowsum(P dP), which equals dO . O (Dao 2023): from the
/// forward's output when `forward` has it, and P from its log-sum-exp.
/// With a soft cap, dS = scale (1 - t^2) P (dP - D), t = tanh(s / softcap)
/// of the uncapped scaled scores s.
inline void blockedAttentionGrad(const float *dOut, const float *q,
                                 const float *k, const float *v,
                                 AttentionForward forward, float *dQ, float *dK,
                                 float *dV, const AttentionShape &a,
                                 int64_t bhBegin, int64_t bhEnd) {
  const int64_t seq = a.seq, d = a.headDim, heads = a.layout.heads;
  const size_t block = size_t(detail::kAttentionBlock * seq);
  std::vector<float> probs(block), dropped(block), dProbs(block);
  // tanh(s / softcap) of the block's scores, with a soft cap.
  std::vector<float> capped(a.softcap > 0.0 ? block : 0);
  std::vector<uint32_t> words(static_cast<size_t>(seq));
  const bool given = forward.lse != nullptr;
  for (int64_t bh = bhBegin; bh < bhEnd; ++bh) {
    const float *pairLse = given ? forward.lse + bh * seq : nullptr;
    auto qs = detail::pairRows(q, a.layout.query, bh, heads);
    auto ks = detail::pairRows(k, a.layout.key, bh, heads);
    auto vs = detail::pairRows(v, a.layout.value, bh, heads);
    auto dOs = detail::pairRows(dOut, a.layout.output, bh, heads);
    auto os = detail::pairRows(given ? forward.out : dOut, a.layout.output, bh,
                               heads);
    auto dQs = detail::pairRows(dQ, a.layout.query, bh, heads);
    auto dKs = detail::pairRows(dK, a.layout.key, bh, heads);
    auto dVs = detail::pairRows(dV, a.layout.value, bh, heads);
    // A key and value head shared by `groups` query heads (grouped-query
    // attention) sums their gradients: zeroed by the group's first pair,
    // accumulated by the rest (the caller keeps a group on one thread).
    if (bh % heads % a.layout.groups() == 0)
      for (int64_t j = 0; j < seq; ++j) {
        std::fill(dKs.row(j), dKs.row(j) + d, 0.0f);
        std::fill(dVs.row(j), dVs.row(j) + d, 0.0f);
      }
    for (int64_t i0 = 0; i0 < seq; i0 += detail::kAttentionBlock) {
      int64_t rows = std::min(detail::kAttentionBlock, seq - i0);
      int64_t keyStart = detail::firstVisibleKey(i0, a.window);
      int64_t keys = i0 + rows - keyStart;
      detail::blockProbabilities(
          qs, detail::fromRow(ks, keyStart), i0, rows, keyStart, keys, d,
          float(a.scale), a.window, float(a.softcap), probs.data(),
          capped.empty() ? nullptr : capped.data(), pairLse,
          /*lseOut=*/nullptr);
      const float *pd = probs.data();
      if (a.dropout > 0.0) {
        // The kept-and-scaled probabilities (the masked tail stays 0).
        std::copy(probs.begin(), probs.begin() + rows * keys, dropped.begin());
        for (int64_t r = 0; r < rows; ++r)
          detail::applyRowDropout(a, bh, i0 + r, keyStart,
                                  i0 + r + 1 - keyStart,
                                  dropped.data() + r * keys, words.data());
        pd = dropped.data();
      }
      const float *dOb = dOs.row(i0);
      // dV[keyStart, keyStart + keys) += Pd^T dO_block.
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, keys, d, rows, 1.0f,
                  pd, keys, dOb, dOs.stride, 1.0f, dVs.row(keyStart),
                  dVs.stride);
      // dPd = dO_block V^T, then through the dropout.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, d, 1.0f,
                  dOb, dOs.stride, vs.row(keyStart), vs.stride, 0.0f,
                  dProbs.data(), keys);
      for (int64_t r = 0; r < rows; ++r) {
        float *dp = dProbs.data() + r * keys;
        const float *p = probs.data() + r * keys;
        if (a.dropout > 0.0)
          detail::applyRowDropout(a, bh, i0 + r, keyStart,
                                  i0 + r + 1 - keyStart, dp, words.data());
        double rowDot = 0.0;
        if (given) {
          const float *o = os.row(i0 + r), *dO = dOs.row(i0 + r);
          for (int64_t e = 0; e < d; ++e)
            rowDot += double(dO[e]) * double(o[e]);
        } else {
          for (int64_t j = 0; j < keys; ++j)
            rowDot += double(p[j]) * double(dp[j]);
        }
        if (!capped.empty()) {
          // The capped scores' gradient (whose row sums to zero, as
          // below), then through the cap: times 1 - tanh^2, and the scale.
          const float *t = capped.data() + r * keys;
          double rowSum = 0.0;
          for (int64_t j = 0; j < keys; ++j) {
            dp[j] = p[j] * (dp[j] - float(rowDot));
            rowSum += double(dp[j]);
          }
          for (int64_t j = 0; j < keys; ++j)
            dp[j] = (dp[j] - float(rowSum) * p[j]) * (1.0f - t[j] * t[j]) *
                    float(a.scale);
          continue;
        }
        double rowSum = 0.0;
        for (int64_t j = 0; j < keys; ++j) {
          dp[j] = p[j] * (dp[j] - float(rowDot)) * float(a.scale); // dS
          rowSum += double(dp[j]);
        }
        // Each row of dS sums to zero exactly (softmax ignores a constant
        // added to a row of scores), which is what makes the key bias's
        // gradient zero; in float it sums to rounding noise, which AdamW
        // would turn into steps. Taking the sum out along P restores it to
        // the second order.
        for (int64_t j = 0; j < keys; ++j)
          dp[j] -= float(rowSum) * p[j];
      }
      // dQ_block = dS K;  dK[keyStart, keyStart + keys) += dS^T Q_block.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, d, keys,
                  1.0f, dProbs.data(), keys, ks.row(keyStart), ks.stride, 0.0f,
                  dQs.row(i0), dQs.stride);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, keys, d, rows, 1.0f,
                  dProbs.data(), keys, qs.row(i0), qs.stride, 1.0f,
                  dKs.row(keyStart), dKs.stride);
    }
  }
}

} // namespace cpu
} // namespace mtrt

#endif // MTRT_CPU_BLOCKEDATTENTION_H
