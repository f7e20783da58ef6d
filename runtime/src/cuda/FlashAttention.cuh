//===- FlashAttention.cuh - Tiled causal attention for the CUDA backend ---===//
//
// Causal attention and its gradient as FlashAttention-2 computes them
// (Dao, 2023), in fp32 on the CUDA cores: no s x s matrix is stored, keys
// and values (queries and output gradients for the key pass) are staged in
// shared memory one tile at a time, and every score is recomputed where it
// is needed.
//
// A row (a query, or a key in the key pass) belongs to L consecutive lanes
// of a warp, L = ceil(headDim / 32), each holding 32 of its dimensions in
// registers; their partial dot products meet through warp shuffles. A
// block of 128 threads holds R = 128 / L rows, and a tile holds R rows of
// the other side, each of its 32-dimension chunks padded to 33 floats so
// that the L lanes of a row read L different banks.
//
// The operands' rows are where `layout` says (mtrt/HeadLayout.h), so the
// fused QKV tensor of qkv_attention is read in place. Dropout on the
// probabilities draws the CPU backend's Philox mask (AttentionDropout).
//
// Numerics: float dot products and exponentials, in another order than
// the CPU backend's GEMMs; the CPU-vs-CUDA check in scripts/gpu-check.sh
// and CudaKernelsTest bound the difference.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_FLASHATTENTION_CUH
#define MTRT_CUDA_FLASHATTENTION_CUH

#include "cuda/DeviceKernels.h"

#include <cuda_runtime_api.h>

#include <type_traits>

namespace mtrt::gpu::flash {

constexpr int kThreads = 128;
constexpr int kChunk = 32;  // dimensions per lane
constexpr int kPadded = 33; // a chunk's floats in shared memory
constexpr int kTileFloats = kThreads * kPadded; // R rows x L chunks

/// The sum of `x` over the L lanes of a row (every lane of the warp must
/// call it).
template <int L> __device__ __forceinline__ float rowSum(float x) {
#pragma unroll
  for (int offset = L / 2; offset > 0; offset /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

/// This lane's 32 dimensions of a row of `base` (zeros past headDim).
__device__ __forceinline__ void loadChunk(float (&dst)[kChunk],
                                          const float *row, int lane,
                                          int64_t headDim, bool valid) {
#pragma unroll
  for (int e = 0; e < kChunk; ++e) {
    int64_t d = int64_t(lane) * kChunk + e;
    dst[e] = valid && d < headDim ? row[d] : 0.0f;
  }
}

__device__ __forceinline__ float dotChunk(const float (&a)[kChunk],
                                          const float *b) {
  float sum = 0.0f;
#pragma unroll
  for (int e = 0; e < kChunk; ++e)
    sum = __fmaf_rn(a[e], b[e], sum);
  return sum;
}

/// This block's first row: the query passes take the last rows (the most
/// keys) first, so that the longest blocks do not start last.
__device__ __forceinline__ int64_t lastBlocksFirst(int rows) {
  return int64_t(gridDim.y - 1 - blockIdx.y) * rows;
}

/// Stages rows [first, first + R) of the pair (zeros past seq) into `tile`,
/// padded: row t's chunk c at tile[(t * L + c) * kPadded].
template <int L>
__device__ __forceinline__ void stageTile(float *tile, const float *pair,
                                          int64_t rowStride, int64_t first,
                                          int64_t seq, int64_t headDim) {
  constexpr int R = kThreads / L;
  for (int index = threadIdx.x; index < R * L * kChunk; index += kThreads) {
    int t = index / (L * kChunk), d = index % (L * kChunk);
    int64_t row = first + t;
    float x = row < seq && d < headDim ? pair[row * rowStride + d] : 0.0f;
    tile[(t * L + d / kChunk) * kPadded + d % kChunk] = x;
  }
}

/// Stages the same rows of two operands of the pair (keys and values, or
/// queries and output gradients) into `first` and `second`.
template <int L>
__device__ __forceinline__ void
stageTiles(float *first, const float *firstPair, int64_t firstStride,
           float *second, const float *secondPair, int64_t secondStride,
           int64_t tileStart, int64_t seq, int64_t headDim) {
  stageTile<L>(first, firstPair, firstStride, tileStart, seq, headDim);
  stageTile<L>(second, secondPair, secondStride, tileStart, seq, headDim);
}

/// Whether query i sees key j: causal (j <= i) and, with a sliding window
/// (> 0), fewer than `window` positions before it.
__device__ __forceinline__ bool sees(int64_t i, int64_t j, int64_t window) {
  return j <= i && (window <= 0 || i - j < window);
}

/// The first key that a query from `first` on can see: 0 without a window;
/// the key tiles before it are all masked, and the loops skip them. Each
/// row still takes its keys in order, so the results are the same bits.
__device__ __forceinline__ int64_t firstVisibleKey(int64_t first,
                                                   int64_t window) {
  return window > 0 ? max(int64_t(0), first - window + 1) : 0;
}

/// One past the last query that sees a key before `keyEnd`: the sequence's
/// end without a window.
__device__ __forceinline__ int64_t queryEnd(int64_t keyEnd, int64_t seq,
                                            int64_t window) {
  return window > 0 ? min(seq, keyEnd - 1 + window) : seq;
}

/// This lane's chunk of row t of a staged tile.
template <int L>
__device__ __forceinline__ const float *chunkAt(const float *tile, int t,
                                                int lane) {
  return tile + (t * L + lane) * kPadded;
}

/// Gemma 2's soft cap of a scaled score, softcap * tanh(score / softcap),
/// in float as the CPU backend's blocked attention caps it (softcap 0:
/// the score as it is); with `slope`, the cap's derivative 1 - tanh^2
/// there, by which the backward scales dS.
__device__ __forceinline__ float capScore(float score, float softcap,
                                          float *slope = nullptr) {
  if (softcap <= 0.0f)
    return score;
  const float t = tanhf(score / softcap);
  if (slope)
    *slope = 1.0f - t * t;
  return softcap * t;
}

/// Forward: block (bh, y) computes R output rows of pair bh
/// with an online softmax over key tiles, and, if `lse` is not null, each
/// row's log-sum-exp of its scaled scores to lse[bh * seq + i].
template <int L>
__global__ void __launch_bounds__(kThreads)
    forward(const float *q, const float *k, const float *v, float *out,
            float *lse, int64_t seq, int64_t headDim, float scale,
            AttentionLayout layout, AttentionDropout dropout, int64_t window,
            float softcap) {
  constexpr int R = kThreads / L;
  __shared__ float keys[kTileFloats], values[kTileFloats];
  const int64_t bh = blockIdx.x, first = lastBlocksFirst(R);
  const int lane = threadIdx.x % L;
  const int64_t i = first + threadIdx.x / L;
  const bool valid = i < seq;
  const int heads = int(layout.heads);
  float query[kChunk], acc[kChunk];
  loadChunk(query, q + layout.query.row(bh, heads, valid ? i : 0), lane,
            headDim, valid);
#pragma unroll
  for (int e = 0; e < kChunk; ++e)
    acc[e] = 0.0f;
  float maximum = -INFINITY, sum = 0.0f;
  const int64_t last = min(first + R, seq); // keys [0, last)
  const float *kPair = k + layout.key.pair(bh, heads);
  const float *vPair = v + layout.value.pair(bh, heads);
  for (int64_t tileStart = firstVisibleKey(first, window); tileStart < last;
       tileStart += R) {
    __syncthreads();
    stageTiles<L>(keys, kPair, layout.key.rowStride, values, vPair,
                  layout.value.rowStride, tileStart, seq, headDim);
    __syncthreads();
    const int count = int(min(int64_t(R), last - tileStart));
    for (int t = 0; t < count; ++t) {
      const int64_t j = tileStart + t;
      float score = capScore(
          rowSum<L>(dotChunk(query, chunkAt<L>(keys, t, lane))) * scale,
          softcap);
      if (!valid || !sees(i, j, window))
        continue;
      if (score > maximum) { // rescale what was summed against the old max
        float rescale = expf(maximum - score);
        sum *= rescale;
#pragma unroll
        for (int e = 0; e < kChunk; ++e)
          acc[e] *= rescale;
        maximum = score;
      }
      float p = expf(score - maximum);
      sum += p;
      float weight = p * float(dropout.factor(bh, i, j, seq));
      const float *value = chunkAt<L>(values, t, lane);
#pragma unroll
      for (int e = 0; e < kChunk; ++e)
        acc[e] = __fmaf_rn(weight, value[e], acc[e]);
    }
  }
  if (!valid)
    return;
  float *row = out + layout.output.row(bh, heads, i);
#pragma unroll
  for (int e = 0; e < kChunk; ++e) {
    int64_t d = int64_t(lane) * kChunk + e;
    if (d < headDim)
      row[d] = acc[e] / sum;
  }
  if (lse && lane == 0)
    lse[bh * seq + i] = maximum + logf(sum);
}

/// The query pass of the backward: for R query rows of pair bh, the softmax
/// statistics (largest score, sum of exponentials) and D_i = sum_j P_ij dP_ij
/// in one online sweep, then dQ_i = scale sum_j P_ij (dP_ij - D_i) K_j in a
/// second. The statistics go to stats[3 row]. Given the forward's output
/// and log-sum-exp (`out`, `lse`: both or neither), the first sweep is not
/// needed: the largest score is the log-sum-exp with a sum of 1, and
/// D_i = dO_i . O_i (Dao 2023).
template <int L>
__global__ void __launch_bounds__(kThreads)
    queryPass(const float *dOut, const float *q, const float *k, const float *v,
              const float *out, const float *lse, float *dQ, double *stats,
              int64_t seq, int64_t headDim, float scale, AttentionLayout layout,
              AttentionDropout dropout, int64_t window, float softcap) {
  constexpr int R = kThreads / L;
  __shared__ float keys[kTileFloats], values[kTileFloats];
  const int64_t bh = blockIdx.x, first = lastBlocksFirst(R);
  const int lane = threadIdx.x % L;
  const int64_t i = first + threadIdx.x / L;
  const bool valid = i < seq;
  const int heads = int(layout.heads);
  float query[kChunk], dOutRow[kChunk], acc[kChunk];
  loadChunk(query, q + layout.query.row(bh, heads, valid ? i : 0), lane,
            headDim, valid);
  loadChunk(dOutRow, dOut + layout.output.row(bh, heads, valid ? i : 0), lane,
            headDim, valid);
  const int64_t last = min(first + R, seq);
  const float *kPair = k + layout.key.pair(bh, heads);
  const float *vPair = v + layout.value.pair(bh, heads);
  float maximum = -INFINITY, sum = 0.0f, weighted = 0.0f;
  const bool given = lse != nullptr; // the same for the whole grid
  if (given) {
    float outRow[kChunk];
    loadChunk(outRow, out + layout.output.row(bh, heads, valid ? i : 0), lane,
              headDim, valid);
    weighted = rowSum<L>(dotChunk(dOutRow, outRow));
    maximum = valid ? lse[bh * seq + i] : 0.0f;
    sum = 1.0f;
  }
  for (int sweep = given ? 1 : 0; sweep < 2; ++sweep) {
    float rowDot = 0.0f;
    if (sweep == 1) {
      rowDot = weighted / sum;
#pragma unroll
      for (int e = 0; e < kChunk; ++e)
        acc[e] = 0.0f;
    }
    for (int64_t tileStart = firstVisibleKey(first, window); tileStart < last;
         tileStart += R) {
      __syncthreads();
      stageTiles<L>(keys, kPair, layout.key.rowStride, values, vPair,
                    layout.value.rowStride, tileStart, seq, headDim);
      __syncthreads();
      const int count = int(min(int64_t(R), last - tileStart));
      for (int t = 0; t < count; ++t) {
        const int64_t j = tileStart + t;
        const float *key = chunkAt<L>(keys, t, lane);
        float capSlope = 1.0f;
        float score = capScore(rowSum<L>(dotChunk(query, key)) * scale, softcap,
                               &capSlope);
        float dP = rowSum<L>(dotChunk(dOutRow, chunkAt<L>(values, t, lane)));
        if (!valid || !sees(i, j, window))
          continue;
        dP *= float(dropout.factor(bh, i, j, seq));
        if (sweep == 0) {
          if (score > maximum) {
            float rescale = expf(maximum - score);
            sum *= rescale;
            weighted *= rescale;
            maximum = score;
          }
          float p = expf(score - maximum);
          sum += p;
          weighted = __fmaf_rn(p, dP, weighted);
        } else {
          float dS =
              expf(score - maximum) / sum * (dP - rowDot) * scale * capSlope;
#pragma unroll
          for (int e = 0; e < kChunk; ++e)
            acc[e] = __fmaf_rn(dS, key[e], acc[e]);
        }
      }
    }
    if (sweep == 1 && valid) {
      float *row = dQ + layout.query.row(bh, heads, i);
#pragma unroll
      for (int e = 0; e < kChunk; ++e) {
        int64_t d = int64_t(lane) * kChunk + e;
        if (d < headDim)
          row[d] = acc[e];
      }
      if (lane == 0) {
        double *st = stats + 3 * (bh * seq + i);
        st[0] = maximum;
        st[1] = sum;
        st[2] = rowDot;
      }
    }
  }
}

/// The key pass: for key rows [y R, (y + 1) R) of key and value pair x,
/// dV_j = sum_i P_ij Z_ij dO_i and dK_j = scale sum_i P_ij (dP_ij - D_i)
/// Q_i over the queries i >= j (Z the dropout factor) of every query pair
/// the key head serves (one, or a grouped-query attention's group), from
/// the query pass's statistics; queries and output gradients staged a
/// tile at a time.
template <int L>
__global__ void __launch_bounds__(kThreads)
    keyPass(const float *dOut, const float *q, const float *k, const float *v,
            const double *stats, float *dK, float *dV, int64_t seq,
            int64_t headDim, float scale, AttentionLayout layout,
            AttentionDropout dropout, int64_t window, float softcap) {
  constexpr int R = kThreads / L;
  __shared__ float queries[kTileFloats], dOuts[kTileFloats];
  __shared__ float rowMax[R], rowSumExp[R], rowDots[R];
  // Block x is a key and value head's pair: with grouped-query attention
  // it serves `groups` query pairs (bh0 ...), whose sums it adds in order.
  const int64_t groups = layout.key.groups;
  const int64_t bh0 = int64_t(blockIdx.x) * groups;
  const int64_t first = int64_t(blockIdx.y) * R;
  const int lane = threadIdx.x % L;
  const int64_t j = first + threadIdx.x / L;
  const bool valid = j < seq;
  const int heads = int(layout.heads);
  float key[kChunk], value[kChunk], accK[kChunk], accV[kChunk];
  loadChunk(key, k + layout.key.row(bh0, heads, valid ? j : 0), lane, headDim,
            valid);
  loadChunk(value, v + layout.value.row(bh0, heads, valid ? j : 0), lane,
            headDim, valid);
#pragma unroll
  for (int e = 0; e < kChunk; ++e)
    accK[e] = accV[e] = 0.0f;
  const int64_t end = queryEnd(min(first + R, seq), seq, window);
  for (int64_t bh = bh0; bh < bh0 + groups; ++bh) {
    const float *qPair = q + layout.query.pair(bh, heads);
    const float *dOPair = dOut + layout.output.pair(bh, heads);
    for (int64_t tileStart = first; tileStart < end; tileStart += R) {
      __syncthreads();
      stageTiles<L>(queries, qPair, layout.query.rowStride, dOuts, dOPair,
                    layout.output.rowStride, tileStart, seq, headDim);
      for (int t = threadIdx.x; t < R; t += kThreads) {
        int64_t row = bh * seq + min(tileStart + t, seq - 1);
        rowMax[t] = float(stats[3 * row]);
        rowSumExp[t] = float(stats[3 * row + 1]);
        rowDots[t] = float(stats[3 * row + 2]);
      }
      __syncthreads();
      const int count = int(min(int64_t(R), seq - tileStart));
      for (int t = 0; t < count; ++t) {
        const int64_t i = tileStart + t;
        const float *query = chunkAt<L>(queries, t, lane);
        const float *dO = chunkAt<L>(dOuts, t, lane);
        float capSlope = 1.0f;
        float score = capScore(rowSum<L>(dotChunk(key, query)) * scale, softcap,
                               &capSlope);
        float dP = rowSum<L>(dotChunk(value, dO));
        if (!valid || !sees(i, j, window))
          continue;
        float keep = float(dropout.factor(bh, i, j, seq));
        float p = expf(score - rowMax[t]) / rowSumExp[t];
        float dS = p * (keep * dP - rowDots[t]) * scale * capSlope;
        float pKeep = p * keep;
#pragma unroll
        for (int e = 0; e < kChunk; ++e) {
          accV[e] = __fmaf_rn(pKeep, dO[e], accV[e]);
          accK[e] = __fmaf_rn(dS, query[e], accK[e]);
        }
      }
    }
  }
  if (!valid)
    return;
  float *dKRow = dK + layout.key.row(bh0, heads, j);
  float *dVRow = dV + layout.value.row(bh0, heads, j);
#pragma unroll
  for (int e = 0; e < kChunk; ++e) {
    int64_t d = int64_t(lane) * kChunk + e;
    if (d < headDim) {
      dKRow[d] = accK[e];
      dVRow[d] = accV[e];
    }
  }
}

/// Calls f(std::integral_constant<int, L>) for the lanes per row headDim
/// needs (headDim <= kMaxHeadDim = 256).
template <typename F> cudaError_t withLanes(int64_t headDim, F f) {
  if (headDim <= 32)
    return f(std::integral_constant<int, 1>());
  if (headDim <= 64)
    return f(std::integral_constant<int, 2>());
  if (headDim <= 128)
    return f(std::integral_constant<int, 4>());
  if (headDim <= 256)
    return f(std::integral_constant<int, 8>());
  return cudaErrorInvalidValue;
}

/// The grid for `pairs` (batch x heads) pairs of `seq` rows, R rows a
/// block: x the pair, y the block of rows (the forward and query passes
/// take the last rows first, lastBlocksFirst; the key pass's longest
/// blocks, the first keys, come first as they are).
template <int L> dim3 gridFor(int64_t pairs, int64_t seq) {
  constexpr int R = kThreads / L;
  return dim3(unsigned(pairs), unsigned((seq + R - 1) / R));
}

} // namespace mtrt::gpu::flash

#endif // MTRT_CUDA_FLASHATTENTION_CUH
