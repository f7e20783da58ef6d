//===- DeviceKernels.cu - The CUDA backend's kernels, launched ------------===//
//
// Each launcher runs one item function of DeviceKernels.h over a
// grid-stride loop (device lambdas: nvcc --extended-lambda).
//
//===----------------------------------------------------------------------===//

#include "cuda/DeviceLaunch.h"
#include "cuda/FlashAttention.cuh"
#include "cuda/GridLaunch.cuh"
#include "cuda/Reductions.cuh"

namespace mtrt::gpu {
namespace {

/// Calls thread(t, threads) for every thread t of the grid.
template <typename F> __global__ void forEachThread(F thread) {
  thread(int64_t(blockIdx.x) * blockDim.x + threadIdx.x,
         int64_t(gridDim.x) * blockDim.x);
}

/// Runs `thread` over n items on `stream`, with threads that each take
/// many items: enough of them to keep every SM's loads in flight (an H100
/// holds 132 x 2048), few enough that each spreads a setup of its own
/// (AdamStep) over hundreds of elements of a large model.
template <typename F>
cudaError_t launchThreads(cudaStream_t stream, int64_t n, F thread) {
  if (n <= 0)
    return cudaSuccess;
  constexpr int kBlock = 256;
  constexpr int64_t kMaxBlocks = 2048;
  int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks > kMaxBlocks)
    blocks = kMaxBlocks;
  forEachThread<<<unsigned(blocks), kBlock, 0, stream>>>(thread);
  return cudaGetLastError();
}

/// meanOfRows in one block: its threads stage the values in shared memory,
/// from which one thread adds them in index order (one thread reading
/// global memory serially took 0.33 ms for 8192 losses on an H100).
template <typename T>
__global__ void meanInOrder(const T *x, int64_t n, float *out) {
  constexpr int64_t kChunk = 4096;
  __shared__ T chunk[kChunk];
  double total = 0;
  for (int64_t base = 0; base < n; base += kChunk) {
    const int64_t m = n - base < kChunk ? n - base : kChunk;
    __syncthreads(); // the previous chunk is added
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x)
      chunk[i] = x[base + i];
    __syncthreads();
    if (threadIdx.x == 0)
      addInOrder(chunk, m, total);
  }
  if (threadIdx.x == 0)
    out[0] = meanOfSum(total, n);
}

} // namespace

template <typename T>
cudaError_t launchEmbedding(cudaStream_t stream, const T *table,
                            const int32_t *ids, T *out, int64_t tokens,
                            int64_t vocab, int64_t hidden,
                            int64_t vocabOffset) {
  return launch(stream, tokens * hidden, [=] __device__(int64_t i) {
    embeddingItem(i, table, ids, out, vocab, hidden, vocabOffset);
  });
}
template cudaError_t launchEmbedding(cudaStream_t, const float *,
                                     const int32_t *, float *, int64_t, int64_t,
                                     int64_t, int64_t);
template cudaError_t launchEmbedding(cudaStream_t, const uint16_t *,
                                     const int32_t *, uint16_t *, int64_t,
                                     int64_t, int64_t, int64_t);

cudaError_t launchEmbeddingGrad(cudaStream_t stream, const float *dOut,
                                const int32_t *ids, float *dTable,
                                int64_t tokens, int64_t vocab, int64_t hidden,
                                int64_t vocabOffset, int32_t *scratch,
                                bool accumulate) {
  if (!accumulate)
    if (cudaError_t error = cudaMemsetAsync(
            dTable, 0, size_t(vocab * hidden) * sizeof(float), stream);
        error != cudaSuccess)
      return error;
  int32_t *order = scratch, *count = scratch + tokens;
  // Each place item reads every id (8192 at 8 x 1024 tokens): warps of
  // their own blocks, 256 blocks over every SM, where blocks of 128 threads
  // kept 64 SMs busy and the rest idle.
  if (cudaError_t error =
          launch<32>(stream, tokens,
                     [=] __device__(int64_t t) {
                       embeddingGradPlaceItem(t, ids, tokens, vocab,
                                              vocabOffset, order, count);
                     });
      error != cudaSuccess)
    return error;
  return launch(stream, tokens * hidden, [=] __device__(int64_t item) {
    embeddingGradSumItem(item, dOut, ids, order, count, dTable, hidden,
                         vocabOffset, accumulate);
  });
}

cudaError_t launchPositionEmbeddingGrad(cudaStream_t stream, const float *dOut,
                                        float *dTable, int64_t seq,
                                        int64_t positions, int64_t hidden) {
  return launch(stream, positions * hidden, [=] __device__(int64_t i) {
    positionEmbeddingGradItem(i, dOut, dTable, seq, hidden);
  });
}

cudaError_t launchLayerNorm(cudaStream_t stream, const float *x,
                            const float *weight, const float *bias, float *y,
                            int64_t rows, int64_t cols, double eps) {
  return launch(stream, rows, [=] __device__(int64_t r) {
    layerNormRow(r, x, weight, bias, y, cols, eps);
  });
}

cudaError_t launchLayerNormGrad(cudaStream_t stream, const float *dY,
                                const float *x, const float *weight, float *dX,
                                float *dWeight, float *dBias, double *stats,
                                int64_t rows, int64_t cols, double eps) {
  cudaError_t error = launch(stream, rows, [=] __device__(int64_t r) {
    layerNormGradRow(r, dY, x, weight, dX, stats, cols, eps);
  });
  if (error != cudaSuccess)
    return error;
  return launch(stream, cols, [=] __device__(int64_t c) {
    layerNormGradColumn(c, dY, x, stats, dWeight, dBias, rows, cols);
  });
}

cudaError_t launchBiasAddGrad(cudaStream_t stream, const void *dY,
                              Storage dYStorage, void *dBias,
                              Storage dBiasStorage, double *partial,
                              int64_t rows, int64_t cols) {
  if (cols <= 0)
    return cudaSuccess;
  const int64_t chunks = columnSumChunks(rows, cols);
  const int64_t chunkRows = (rows + chunks - 1) / chunks;
  dim3 grid(unsigned((cols + reduce::kColumns - 1) / reduce::kColumns),
            unsigned(chunks));
  constexpr int threads = reduce::kColumns * reduce::kRowGroups;
  switch (dYStorage) {
  case Storage::F32:
    reduce::columnPartials<Storage::F32>
        <<<grid, threads, 0, stream>>>(dY, partial, rows, cols, chunkRows);
    break;
  case Storage::BF16:
    reduce::columnPartials<Storage::BF16>
        <<<grid, threads, 0, stream>>>(dY, partial, rows, cols, chunkRows);
    break;
  case Storage::F16:
    reduce::columnPartials<Storage::F16>
        <<<grid, threads, 0, stream>>>(dY, partial, rows, cols, chunkRows);
    break;
  }
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess)
    return error;
  unsigned blocks = unsigned((cols + reduce::kThreads - 1) / reduce::kThreads);
  switch (dBiasStorage) {
  case Storage::F32:
    reduce::columnTotals<Storage::F32>
        <<<blocks, reduce::kThreads, 0, stream>>>(partial, dBias, chunks, cols);
    break;
  case Storage::BF16:
    reduce::columnTotals<Storage::BF16>
        <<<blocks, reduce::kThreads, 0, stream>>>(partial, dBias, chunks, cols);
    break;
  case Storage::F16:
    reduce::columnTotals<Storage::F16>
        <<<blocks, reduce::kThreads, 0, stream>>>(partial, dBias, chunks, cols);
    break;
  }
  return cudaGetLastError();
}

cudaError_t launchHeads(cudaStream_t stream, float *x, HeadChunks chunks,
                        int64_t numChunks, int64_t elements, int64_t seq,
                        int64_t heads, int64_t headDim, bool merge) {
  return launch(stream, elements, [=] __device__(int64_t i) {
    headsItem(i, x, chunks, numChunks, seq, heads, headDim, merge);
  });
}

cudaError_t launchAttention(cudaStream_t stream, const float *q, const float *k,
                            const float *v, float *out, float *lse,
                            int64_t rows, int64_t seq, int64_t headDim,
                            double scale, AttentionLayout layout,
                            AttentionDropout dropout, int64_t window,
                            double softcap) {
  if (rows <= 0)
    return cudaSuccess;
  return flash::withLanes(headDim, [&](auto lanes) {
    constexpr int L = decltype(lanes)::value;
    flash::forward<L>
        <<<flash::gridFor<L>(rows / seq, seq), flash::kThreads, 0, stream>>>(
            q, k, v, out, lse, seq, headDim, float(scale), layout, dropout,
            window, float(softcap));
    return cudaGetLastError();
  });
}

cudaError_t launchAttentionGrad(cudaStream_t stream, const float *dOut,
                                const float *q, const float *k, const float *v,
                                const float *out, const float *lse, float *dQ,
                                float *dK, float *dV, double *stats,
                                int64_t rows, int64_t seq, int64_t headDim,
                                double scale, AttentionLayout layout,
                                AttentionDropout dropout, int64_t window,
                                double softcap) {
  if (rows <= 0)
    return cudaSuccess;
  return flash::withLanes(headDim, [&](auto lanes) {
    constexpr int L = decltype(lanes)::value;
    dim3 grid = flash::gridFor<L>(rows / seq, seq);
    flash::queryPass<L><<<grid, flash::kThreads, 0, stream>>>(
        dOut, q, k, v, out, lse, dQ, stats, seq, headDim, float(scale), layout,
        dropout, window, float(softcap));
    if (cudaError_t error = cudaGetLastError(); error != cudaSuccess)
      return error;
    // One block per key and value pair and block of keys: a grouped key
    // head sums its query heads' contributions in one block.
    dim3 keyGrid = flash::gridFor<L>(rows / seq / layout.groups(), seq);
    flash::keyPass<L><<<keyGrid, flash::kThreads, 0, stream>>>(
        dOut, q, k, v, stats, dK, dV, seq, headDim, float(scale), layout,
        dropout, window, float(softcap));
    return cudaGetLastError();
  });
}

cudaError_t launchCrossEntropy(cudaStream_t stream, const float *logits,
                               const int32_t *labels, double *losses,
                               float *out, int64_t rows, int64_t vocab,
                               int64_t valid) {
  cudaError_t error = launch(stream, rows, [=] __device__(int64_t r) {
    crossEntropyRow(r, logits, labels, losses, vocab, valid);
  });
  if (error != cudaSuccess)
    return error;
  meanInOrder<<<1, 256, 0, stream>>>(losses, rows, out);
  return cudaGetLastError();
}

cudaError_t launchCrossEntropyGrad(cudaStream_t stream, const float *dLoss,
                                   const float *logits, const int32_t *labels,
                                   float *dLogits, int64_t rows, int64_t vocab,
                                   int64_t valid) {
  return launch(stream, rows, [=] __device__(int64_t r) {
    crossEntropyGradRow(r, dLoss, logits, labels, dLogits, rows, vocab, valid);
  });
}

cudaError_t launchVocabRowMax(cudaStream_t stream, const float *logits,
                              int64_t rows, int64_t vocab, int64_t valid,
                              double *maxima) {
  return launch(stream, rows, [=] __device__(int64_t r) {
    vocabRowMax(r, logits, vocab, valid, maxima);
  });
}

cudaError_t launchVocabRowSums(cudaStream_t stream, const float *logits,
                               const int32_t *labels, const double *maxima,
                               int64_t rows, int64_t vocab, int64_t valid,
                               int64_t offset, double *sums, double *targets) {
  return launch(stream, rows, [=] __device__(int64_t r) {
    vocabRowSums(r, logits, labels, maxima, vocab, valid, offset, sums,
                 targets);
  });
}

cudaError_t launchVocabLossMean(cudaStream_t stream, const double *maxima,
                                const double *sums, const double *targets,
                                int64_t rows, float *out) {
  return launch(stream, 1, [=] __device__(int64_t) {
    vocabLossMean(maxima, sums, targets, rows, out);
  });
}

cudaError_t launchVocabGrad(cudaStream_t stream, const float *dLoss,
                            const float *logits, const int32_t *labels,
                            const double *maxima, const double *sums,
                            int64_t rows, int64_t vocab, int64_t valid,
                            int64_t offset, float *dLogits) {
  return launch(stream, rows, [=] __device__(int64_t r) {
    vocabGradRow(r, dLoss, logits, labels, maxima, sums, vocab, valid, offset,
                 rows, dLogits);
  });
}

cudaError_t launchSumOfSquares(cudaStream_t stream, const float *x, int64_t n,
                               double *partial) {
  if (n <= 0)
    return cudaSuccess;
  reduce::sumOfSquaresPieces<<<unsigned(normPieces(n)), reduce::kThreads, 0,
                               stream>>>(x, n, partial);
  return cudaGetLastError();
}

cudaError_t launchSumOfSquaresSegments(cudaStream_t stream,
                                       const NormSegment *segments,
                                       int64_t count, int64_t pieces,
                                       double *partial) {
  if (count <= 0 || pieces <= 0)
    return cudaSuccess;
  reduce::
      sumOfSquaresSegments<<<unsigned(pieces), reduce::kThreads, 0, stream>>>(
          segments, count, partial);
  return cudaGetLastError();
}

cudaError_t launchSumOfPartials(cudaStream_t stream, const double *partial,
                                int64_t count, float *out, bool root) {
  reduce::sumOfPartials<<<1, reduce::kThreads, 0, stream>>>(partial, count, out,
                                                            root);
  return cudaGetLastError();
}

cudaError_t launchMean(cudaStream_t stream, const float *x, int64_t n,
                       float *out) {
  meanInOrder<<<1, 256, 0, stream>>>(x, n, out);
  return cudaGetLastError();
}

cudaError_t launchClipScale(cudaStream_t stream, const float *norm,
                            const float *maxNorm, float *out) {
  return launch(stream, 1,
                [=] __device__(int64_t) { clipScale(norm, maxNorm, out); });
}

cudaError_t launchAdamW(cudaStream_t stream, float *param, const float *grad,
                        float *expAvg, float *expAvgSq, int64_t n,
                        AdamScalars scalars, bool applyDecay) {
  return launchThreads(stream, n, [=] __device__(int64_t t, int64_t threads) {
    adamwThread(t, threads, n, param, grad, expAvg, expAvgSq, scalars,
                applyDecay);
  });
}

cudaError_t launchMultiAdamW(cudaStream_t stream, const AdamSegment *segments,
                             int64_t count, int64_t total, AdamScalars scalars,
                             bool applyDecay, bool copyBf16) {
  return launchThreads(stream, total,
                       [=] __device__(int64_t t, int64_t threads) {
                         multiAdamwThread(t, threads, segments, count, total,
                                          scalars, applyDecay, copyBf16);
                       });
}

/// Calls thread(block, blocks, t, threads) for every thread t of every
/// block of the grid.
template <typename F> __global__ void forEachBlockThread(F thread) {
  thread(int64_t(blockIdx.x), int64_t(gridDim.x), int64_t(threadIdx.x),
         int64_t(blockDim.x));
}

cudaError_t launchMultiAdamWChunks(cudaStream_t stream,
                                   const AdamSegment *segments, int64_t count,
                                   int64_t total, int64_t chunks,
                                   AdamScalars scalars, bool applyDecay,
                                   bool copyBf16) {
  if (chunks <= 0)
    return cudaSuccess;
  auto body = [=] __device__(int64_t block, int64_t blocks, int64_t t,
                             int64_t threads) {
    multiAdamwChunkThread(block, blocks, t, threads, segments, count, chunks,
                          total, scalars, applyDecay, copyBf16);
  };
  constexpr int kBlock = 256;
  // As many blocks as the GPU holds at once (its SMs times the blocks of
  // this kernel one SM holds, asked once: a rank uses one GPU), each
  // taking chunks b, b + blocks, ...: one wave, where more blocks than fit
  // would leave the last wave partly empty, and AdamStep's setup once per
  // block thread, not per chunk.
  static const int64_t resident = [] {
    int device = 0, multiprocessors = 0, perMultiprocessor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount,
                               device) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &perMultiprocessor, forEachBlockThread<decltype(body)>, kBlock,
            0) != cudaSuccess ||
        multiprocessors <= 0 || perMultiprocessor <= 0) {
      (void)cudaGetLastError(); // not the launch's error
      return int64_t(132) * 3;  // an H100's, where the queries fail
    }
    return int64_t(multiprocessors) * perMultiprocessor;
  }();
  const int64_t blocks = chunks < resident ? chunks : resident;
  forEachBlockThread<<<unsigned(blocks), kBlock, 0, stream>>>(body);
  return cudaGetLastError();
}

cudaError_t launchMultiConvert(cudaStream_t stream, const CastSegment *segments,
                               int64_t count, int64_t total, bool bf16,
                               bool narrow) {
  return launchThreads(
      stream, total, [=] __device__(int64_t t, int64_t threads) {
        multiConvertThread(t, threads, segments, count, total, bf16, narrow);
      });
}

cudaError_t launchNonFinite(cudaStream_t stream, const float *x, int64_t n,
                            int *flag) {
  return launch(stream, n,
                [=] __device__(int64_t i) { nonFiniteItem(i, x, flag); });
}

cudaError_t launchDropout(cudaStream_t stream, const float *x, float *y,
                          int64_t n, DropoutKey key, int64_t seqLocal,
                          int64_t seqTotal, int64_t seqOffset, int64_t inner) {
  return launch(stream, n, [=] __device__(int64_t i) {
    dropoutItem(i, x, y, key, seqLocal, seqTotal, seqOffset, inner);
  });
}

cudaError_t launchConvert(cudaStream_t stream, uint16_t *half, float *wide,
                          int64_t n, bool bf16, bool narrow) {
  return launch(stream, n, [=] __device__(int64_t i) {
    convertItem(i, half, wide, bf16, narrow);
  });
}

cudaError_t launchPointwise(cudaStream_t stream, Pointwise op, const float *a,
                            const float *b, float *y, int64_t n, int64_t cols) {
  return launch(stream, n, [=] __device__(int64_t i) {
    pointwiseItem(i, op, a, b, y, cols);
  });
}

cudaError_t launchPointwiseStored(cudaStream_t stream, Pointwise op,
                                  const uint16_t *a, const uint16_t *b,
                                  uint16_t *y, int64_t n, bool bf16) {
  return launch(stream, n, [=] __device__(int64_t i) {
    pointwiseStoredItem(i, op, a, b, y, bf16);
  });
}

cudaError_t launchRmsNorm(cudaStream_t stream, const float *x,
                          const float *weight, float *y, int64_t rows,
                          int64_t cols, double eps, double weightOffset) {
  return launch(stream, rows, [=] __device__(int64_t r) {
    rmsNormRow(r, x, weight, y, cols, eps, weightOffset);
  });
}

cudaError_t launchRmsNormGrad(cudaStream_t stream, const float *dY,
                              const float *x, const float *weight, float *dX,
                              float *dWeight, double *stats, int64_t rows,
                              int64_t cols, double eps, double weightOffset) {
  cudaError_t error = launch(stream, rows, [=] __device__(int64_t r) {
    rmsNormGradRow(r, dY, x, weight, dX, stats, cols, eps, weightOffset);
  });
  if (error != cudaSuccess)
    return error;
  return launch(stream, cols, [=] __device__(int64_t c) {
    rmsNormGradColumn(c, dY, x, stats, dWeight, rows, cols);
  });
}

cudaError_t launchRope(cudaStream_t stream, const float *x, float *y,
                       const double *invFreq, int64_t rows, int64_t seq,
                       int64_t headDim, bool inverse) {
  return launch(stream, rows * (headDim / 2), [=] __device__(int64_t i) {
    ropeItem(i, x, y, invFreq, seq, headDim, inverse);
  });
}

cudaError_t launchRepeatKV(cudaStream_t stream, const float *in, float *out,
                           int64_t n, int64_t groups, int64_t inner,
                           bool grad) {
  return launch(stream, n, [=] __device__(int64_t i) {
    if (grad)
      repeatKVGradItem(i, in, out, groups, inner);
    else
      repeatKVItem(i, in, out, groups, inner);
  });
}

cudaError_t launchFill(cudaStream_t stream, float *x, int64_t n, float value) {
  return launch(stream, n,
                [=] __device__(int64_t i) { fillItem(i, x, value); });
}

cudaError_t launchSoftcap(cudaStream_t stream, const float *dY, const float *x,
                          float *y, int64_t n, double cap) {
  if (!dY)
    return launch(stream, n,
                  [=] __device__(int64_t i) { softcapItem(i, x, y, cap); });
  return launch(stream, n, [=] __device__(int64_t i) {
    softcapGradItem(i, dY, x, y, cap);
  });
}

cudaError_t launchScale(cudaStream_t stream, const float *x, float *y,
                        int64_t n, float factor) {
  return launch(stream, n, [=] __device__(int64_t i) { y[i] = factor * x[i]; });
}

cudaError_t launchScalar(cudaStream_t stream, const float *a, const float *b,
                         float *out) {
  return launch(stream, 1, [=] __device__(int64_t) {
    out[0] = b ? float(double(a[0]) / double(b[0])) : sqrtf(a[0]);
  });
}

} // namespace mtrt::gpu
