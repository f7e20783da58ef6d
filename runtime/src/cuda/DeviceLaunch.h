//===- DeviceLaunch.h - Launching the CUDA kernels --------------*- C++ -*-===//
//
// Host entry points of the kernels in DeviceKernels.h, compiled by nvcc in
// DeviceKernels.cu: each runs one item function over a grid on `stream`
// and returns the launch's error. Pointers are device addresses.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_DEVICELAUNCH_H
#define MTRT_CUDA_DEVICELAUNCH_H

#include "cuda/DeviceKernels.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mtrt::gpu {

/// How a tensor's elements are stored (a kernel reading or writing 16-bit
/// storage itself rather than through fp32 copies).
enum class Storage : int { F32, BF16, F16 };

/// The chunks of rows a bias gradient's column sums are split into, so
/// that the grid has a few blocks per multiprocessor whatever the width:
/// their partial sums take chunks x cols doubles of scratch.
inline int64_t columnSumChunks(int64_t rows, int64_t cols) {
  const int64_t tiles = (cols + 31) / 32, wanted = 512; // blocks
  int64_t chunks = (wanted + tiles - 1) / tiles;
  const int64_t most = (rows + 255) / 256; // no more chunks than 256-row blocks
  chunks = chunks < most ? chunks : most;
  return chunks > 0 ? chunks : 1;
}

/// T: float, or uint16_t for a 16-bit table and output of one type,
/// copied as bits (both instantiated in DeviceKernels.cu).
template <typename T>
cudaError_t launchEmbedding(cudaStream_t stream, const T *table,
                            const int32_t *ids, T *out, int64_t tokens,
                            int64_t vocab, int64_t hidden, int64_t vocabOffset);
/// `scratch` holds 2 * tokens int32 (CudaDevice::scratchBytes).
/// The table gradient of an embedding (zeroed first), or with `accumulate`
/// its rows' sums added to dTable's values (mt.embedding_grad's
/// accumulate).
cudaError_t launchEmbeddingGrad(cudaStream_t stream, const float *dOut,
                                const int32_t *ids, float *dTable,
                                int64_t tokens, int64_t vocab, int64_t hidden,
                                int64_t vocabOffset, int32_t *scratch,
                                bool accumulate = false);
cudaError_t launchPositionEmbeddingGrad(cudaStream_t stream, const float *dOut,
                                        float *dTable, int64_t seq,
                                        int64_t positions, int64_t hidden);
cudaError_t launchLayerNorm(cudaStream_t stream, const float *x,
                            const float *weight, const float *bias, float *y,
                            int64_t rows, int64_t cols, double eps);
/// `stats`: 2 * rows doubles of scratch.
cudaError_t launchLayerNormGrad(cudaStream_t stream, const float *dY,
                                const float *x, const float *weight, float *dX,
                                float *dWeight, float *dBias, double *stats,
                                int64_t rows, int64_t cols, double eps);
/// dBias[c] = the sum over rows of dY[r, c], each in its own storage;
/// `partial`: columnSumChunks(rows, cols) x cols doubles of scratch.
cudaError_t launchBiasAddGrad(cudaStream_t stream, const void *dY,
                              Storage dYStorage, void *dBias,
                              Storage dBiasStorage, double *partial,
                              int64_t rows, int64_t cols);
cudaError_t launchHeads(cudaStream_t stream, float *x, HeadChunks chunks,
                        int64_t numChunks, int64_t elements, int64_t seq,
                        int64_t heads, int64_t headDim, bool merge);
/// `lse`: null, or `rows` floats for the rows' log-sum-exp. `window` > 0:
/// a sliding window (query i sees keys i - window < j <= i). `softcap` >
/// 0: Gemma 2's soft cap of the scaled scores (softcap * tanh(s /
/// softcap)) before the softmax.
cudaError_t launchAttention(cudaStream_t stream, const float *q, const float *k,
                            const float *v, float *out, float *lse,
                            int64_t rows, int64_t seq, int64_t headDim,
                            double scale, AttentionLayout layout,
                            AttentionDropout dropout, int64_t window = 0,
                            double softcap = 0.0);
/// `stats`: 3 * rows doubles of scratch. `out` and `lse`: the forward's
/// output and log-sum-exp, or both null (then recomputed).
cudaError_t launchAttentionGrad(cudaStream_t stream, const float *dOut,
                                const float *q, const float *k, const float *v,
                                const float *out, const float *lse, float *dQ,
                                float *dK, float *dV, double *stats,
                                int64_t rows, int64_t seq, int64_t headDim,
                                double scale, AttentionLayout layout,
                                AttentionDropout dropout, int64_t window = 0,
                                double softcap = 0.0);
/// `losses`: `rows` doubles of scratch. Of each row's `vocab` columns the
/// first `valid` are real (a padded vocabulary).
cudaError_t launchCrossEntropy(cudaStream_t stream, const float *logits,
                               const int32_t *labels, double *losses,
                               float *out, int64_t rows, int64_t vocab,
                               int64_t valid);
cudaError_t launchCrossEntropyGrad(cudaStream_t stream, const float *dLoss,
                                   const float *logits, const int32_t *labels,
                                   float *dLogits, int64_t rows, int64_t vocab,
                                   int64_t valid);
/// The vocab-parallel cross-entropy's passes (DeviceKernels.h): row maxima,
/// then (after their maximum across ranks) sums and targets, then (after
/// their sums across ranks) the mean loss or the gradient.
cudaError_t launchVocabRowMax(cudaStream_t stream, const float *logits,
                              int64_t rows, int64_t vocab, int64_t valid,
                              double *maxima);
cudaError_t launchVocabRowSums(cudaStream_t stream, const float *logits,
                               const int32_t *labels, const double *maxima,
                               int64_t rows, int64_t vocab, int64_t valid,
                               int64_t offset, double *sums, double *targets);
cudaError_t launchVocabLossMean(cudaStream_t stream, const double *maxima,
                                const double *sums, const double *targets,
                                int64_t rows, float *out);
cudaError_t launchVocabGrad(cudaStream_t stream, const float *dLoss,
                            const float *logits, const int32_t *labels,
                            const double *maxima, const double *sums,
                            int64_t rows, int64_t vocab, int64_t valid,
                            int64_t offset, float *dLogits);
/// The pieces of x's sum of squares into partial[0, pieces(n)).
cudaError_t launchSumOfSquares(cudaStream_t stream, const float *x, int64_t n,
                               double *partial);
/// pointwiseStoredItem over n elements of 16-bit storage (bf16 or f16).
cudaError_t launchPointwiseStored(cudaStream_t stream, Pointwise op,
                                  const uint16_t *a, const uint16_t *b,
                                  uint16_t *y, int64_t n, bool bf16);
/// launchSumOfSquares for each of `count` tensors (a device table, each
/// non-empty, ascending start) in one launch: the same partials, in
/// the same places, as one launch per tensor.
cudaError_t launchSumOfSquaresSegments(cudaStream_t stream,
                                       const NormSegment *segments,
                                       int64_t count, int64_t pieces,
                                       double *partial);
/// out[0] = sqrt (or, with `root` false, the plain sum) of the partials.
cudaError_t launchSumOfPartials(cudaStream_t stream, const double *partial,
                                int64_t count, float *out, bool root);
/// convertItem over the concatenation of `count` segments (a device table)
/// of `total` elements, in one launch: f32 to bf16 or f16 (`narrow`), or
/// back.
cudaError_t launchMultiConvert(cudaStream_t stream, const CastSegment *segments,
                               int64_t count, int64_t total, bool bf16,
                               bool narrow);
/// AdamW over the concatenation of `count` segments (a device table) of
/// `total` elements, in one launch; segments with a copy also write the
/// updated parameter's bf16 (`copyBf16`) or f16 cast there.
cudaError_t launchMultiAdamW(cudaStream_t stream, const AdamSegment *segments,
                             int64_t count, int64_t total, AdamScalars scalars,
                             bool applyDecay, bool copyBf16);
/// The same update by chunks (multiAdamwChunkThread): `chunks` is the sum
/// of adamChunksOf over the segments, whose firstChunk and vectorized the
/// table holds.
cudaError_t launchMultiAdamWChunks(cudaStream_t stream,
                                   const AdamSegment *segments, int64_t count,
                                   int64_t total, int64_t chunks,
                                   AdamScalars scalars, bool applyDecay,
                                   bool copyBf16);
/// out[0] = the mean of x[0, n), in double, in index order.
cudaError_t launchMean(cudaStream_t stream, const float *x, int64_t n,
                       float *out);
cudaError_t launchClipScale(cudaStream_t stream, const float *norm,
                            const float *maxNorm, float *out);
cudaError_t launchAdamW(cudaStream_t stream, float *param, const float *grad,
                        float *expAvg, float *expAvgSq, int64_t n,
                        AdamScalars scalars, bool applyDecay);
cudaError_t launchNonFinite(cudaStream_t stream, const float *x, int64_t n,
                            int *flag);
/// y = dropout(x) over n elements (seqTotal > 0: split along the sequence,
/// as dropoutItem says).
cudaError_t launchDropout(cudaStream_t stream, const float *x, float *y,
                          int64_t n, DropoutKey key, int64_t seqLocal,
                          int64_t seqTotal, int64_t seqOffset, int64_t inner);
/// Widens n 16-bit values into f32 (narrow: rounds f32 into 16 bits).
cudaError_t launchConvert(cudaStream_t stream, uint16_t *half, float *wide,
                          int64_t n, bool bf16, bool narrow);
/// y = op(a, b) over n elements (BiasAdd: b is a row of `cols`).
cudaError_t launchPointwise(cudaStream_t stream, Pointwise op, const float *a,
                            const float *b, float *y, int64_t n, int64_t cols);
/// `weightOffset`: 0, or 1 for a zero-centered weight (the scale 1 + w).
cudaError_t launchRmsNorm(cudaStream_t stream, const float *x,
                          const float *weight, float *y, int64_t rows,
                          int64_t cols, double eps, double weightOffset);
/// `stats`: `rows` doubles of scratch.
cudaError_t launchRmsNormGrad(cudaStream_t stream, const float *dY,
                              const float *x, const float *weight, float *dX,
                              float *dWeight, double *stats, int64_t rows,
                              int64_t cols, double eps, double weightOffset);
/// `invFreq`: headDim / 2 doubles in device memory.
cudaError_t launchRope(cudaStream_t stream, const float *x, float *y,
                       const double *invFreq, int64_t rows, int64_t seq,
                       int64_t headDim, bool inverse);
/// n: the elements of the output (y, or dX for the gradient).
cudaError_t launchRepeatKV(cudaStream_t stream, const float *in, float *out,
                           int64_t n, int64_t groups, int64_t inner, bool grad);
cudaError_t launchFill(cudaStream_t stream, float *x, int64_t n, float value);
/// y = cap * tanh(x / cap) over n elements; with dY, its gradient
/// dY * (1 - tanh(x / cap)^2) into y.
cudaError_t launchSoftcap(cudaStream_t stream, const float *dY, const float *x,
                          float *y, int64_t n, double cap);
/// y = factor * x over n elements.
cudaError_t launchScale(cudaStream_t stream, const float *x, float *y,
                        int64_t n, float factor);
/// out[0] = a[0] / b[0], or sqrt(a[0]) with b null (one thread).
cudaError_t launchScalar(cudaStream_t stream, const float *a, const float *b,
                         float *out);

/// The pieces launchSumOfSquares writes for n elements.
inline int64_t normPieces(int64_t n) {
  return (n + kNormPiece - 1) / kNormPiece;
}

} // namespace mtrt::gpu

#endif // MTRT_CUDA_DEVICELAUNCH_H
