//===- DeviceKernels.h - CUDA kernels, single source ------------*- C++ -*-===//
//
// Every hand-written kernel of the CUDA backend (generated kernels and
// cuBLAS GEMMs aside) as a function of one work item: an element, a row, a
// column or one query or key row of a (batch, head). nvcc builds each as a
// grid-stride __global__ kernel (DeviceKernels.cu); the host compiler
// builds the same functions for DeviceKernelsTest, which runs every item
// on the CPU and compares with the CPU backend's kernels (HostKernels.h).
// So the index arithmetic and the numerics that the GPU runs are tested in
// CI without a GPU; what only a GPU can show (launch, cuBLAS, streams) is
// left to scripts/gpu-check.sh.
//
// The kernels mirror HostKernels.h: reductions in double, in the same order
// where the CPU backend's order is defined (the embedding gradient, layer
// norm), so most results are bit-identical; the bias gradient's and the
// gradient norm's block reductions (Reductions.cuh) and attention
// (FlashAttention.cuh) add in their own order, in shared memory.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_DEVICEKERNELS_H
#define MTRT_CUDA_DEVICEKERNELS_H

#include "mtrt/HalfFloat.h"
#include "mtrt/HeadLayout.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define MTK_HD __host__ __device__ inline
#else
#define MTK_HD inline
#endif

namespace mtrt::gpu {

/// The most chunks split_heads and merge_heads take (q, k, v).
constexpr int kMaxHeadChunks = 4;
/// The largest head dimension attention takes (its accumulator lives in
/// each thread).
constexpr int kMaxHeadDim = 256;

MTK_HD bool finite(double x) { return x == x && x - x == 0.0; }

//===----------------------------------------------------------------------===//
// 16-bit storage: mtrt/HalfFloat.h's rounding (toHalfBits, fromHalfBits),
// compiled for the device too
//===----------------------------------------------------------------------===//

/// Element i of a 16-bit buffer widened into f32 (narrow: the other way).
MTK_HD void convertItem(int64_t i, uint16_t *half, float *wide, bool bf16,
                        bool narrow) {
  if (narrow)
    half[i] = toHalfBits(wide[i], bf16);
  else
    wide[i] = fromHalfBits(half[i], bf16);
}

//===----------------------------------------------------------------------===//
// Dropout: Philox4x32-10 masks, bit-identical with the CPU backend's
//===----------------------------------------------------------------------===//

/// The random word of dropout element `index`: word index % 4 of the Philox
/// block with counter (index / 4, stream, step) and key `seed`, as
/// HostKernels.h's dropoutWord (cuRAND's curand4 layout).
MTK_HD uint32_t dropoutWord(uint64_t seed, uint64_t index, uint32_t stream,
                            uint32_t step) {
  uint64_t block = index >> 2;
  uint32_t c[4] = {uint32_t(block), uint32_t(block >> 32), stream, step};
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = uint64_t(0xD2511F53u) * c[0];
    uint64_t p1 = uint64_t(0xCD9E8D57u) * c[2];
    uint32_t next[4] = {uint32_t(p1 >> 32) ^ c[1] ^ k0, uint32_t(p1),
                        uint32_t(p0 >> 32) ^ c[3] ^ k1, uint32_t(p0)};
    for (int w = 0; w < 4; ++w)
      c[w] = next[w];
  }
  return c[index & 3];
}

/// What keys a dropout mask: the run's seed, the step, the op's stream, the
/// probability, and where this rank's part starts in the one-device mask.
/// With `live`, the seed and the step are read from those two words when
/// the kernel runs instead: the runtime writes them before each step, so
/// that a step captured as a CUDA graph draws each replay's own mask.
struct DropoutKey {
  uint64_t seed = 0;
  uint32_t step = 0, stream = 0;
  double p = 0;
  uint64_t offset = 0;
  const uint64_t *live = nullptr; // {seed, step}, or null: the fields
};

/// 1/(1-p) for a kept element (0 when p >= 1), or 0 for a dropped one.
MTK_HD double keepFactor(const DropoutKey &key, uint64_t index) {
  uint64_t seed = key.live ? key.live[0] : key.seed;
  uint32_t step = key.live ? uint32_t(key.live[1]) : key.step;
  uint32_t word = dropoutWord(seed, index, key.stream, step);
  bool keep = double(word) * (1.0 / 4294967296.0) >= key.p;
  return keep && key.p < 1.0 ? 1.0 / (1.0 - key.p) : 0.0;
}

/// Element i of y = dropout(x). A tensor split along the sequence
/// ([batch, seqLocal, inner] of [batch, seqTotal, inner] from seqOffset;
/// seqTotal 0: not split) draws its stretch of the one-device mask.
MTK_HD void dropoutItem(int64_t i, const float *x, float *y, DropoutKey key,
                        int64_t seqLocal, int64_t seqTotal, int64_t seqOffset,
                        int64_t inner) {
  uint64_t index = key.offset + uint64_t(i);
  if (seqTotal > 0) {
    int64_t b = i / (seqLocal * inner), t = (i / inner) % seqLocal;
    index = key.offset +
            uint64_t((b * seqTotal + seqOffset + t) * inner + i % inner);
  }
  // A dropped element is 0 whatever its value (inf and NaN included), as
  // the CPU backend's and the generated kernels' dropouts write it.
  double factor = key.p <= 0.0 ? 1.0 : keepFactor(key, index);
  y[i] = key.p <= 0.0    ? x[i]
         : factor == 0.0 ? 0.0f
                         : float(double(x[i]) * factor);
}

/// Attention dropout: probability (bh, i, j) of a rank holding heads
/// headOffset .. of headsTotal draws one-device mask element
/// offset + ((batch * headsTotal + head) * seq + i) * seq + j.
struct AttentionDropout {
  DropoutKey key; // key.p == 0: none
  int64_t heads = 1, headsTotal = 1, headOffset = 0;

  MTK_HD double factor(int64_t bh, int64_t i, int64_t j, int64_t seq) const {
    if (key.p <= 0.0)
      return 1.0;
    int64_t batch = bh / heads, head = headOffset + bh % heads;
    return keepFactor(
        key, key.offset +
                 uint64_t(((batch * headsTotal + head) * seq + i) * seq + j));
  }
};

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

/// Element i of out [tokens, hidden] = table[ids[t] - offset, c], or 0 for
/// an id outside this table's rows. T is float, or uint16_t for a 16-bit
/// table and output of one type, copied as bits (and 0 as +0): what
/// widening the table, gathering and rounding the rows gives (but for a
/// NaN's payload, which the round trip would quiet), without an fp32 copy
/// of the whole table.
template <typename T>
MTK_HD void embeddingItem(int64_t i, const T *table, const int32_t *ids, T *out,
                          int64_t vocab, int64_t hidden, int64_t vocabOffset) {
  int64_t t = i / hidden, c = i % hidden;
  int64_t id = int64_t(ids[t]) - vocabOffset;
  out[i] = id < 0 || id >= vocab ? T(0) : table[id * hidden + c];
}

/// The embedding gradient sums each row's tokens in token order, as the CPU
/// backend adds them, so that the sums are the same bits. It runs in two
/// passes over a stable counting sort of the tokens by row, which needs no
/// atomics: a table of GPT-2's 50304 x 768 would otherwise be read once per
/// token or swept once per slice of rows (a loop over every token in each
/// of 64 x 768 threads took 3.8 ms a step at 8 x 1024 tokens on an H100).
///
/// Pass 1, item t (one per token): the token's place in the order sorted by
/// row, ties in token order (tokens of another shard's rows sort last, row
/// `vocab`): order[place] = t; count[place] = how many tokens share t's row
/// where t is its row's first token, else 0 (and 0 for other shards' rows).
/// Each item reads every id: O(tokens^2) compares, 67M at 8192 tokens
/// (tens of microseconds, estimated, spread over every SM; not yet timed
/// alone), where a warp reads each id once for its 32 threads.
MTK_HD void embeddingGradPlaceItem(int64_t t, const int32_t *ids,
                                   int64_t tokens, int64_t vocab,
                                   int64_t vocabOffset, int32_t *order,
                                   int32_t *count) {
  auto rowOf = [&](int64_t token) {
    int64_t id = int64_t(ids[token]) - vocabOffset;
    return id < 0 || id >= vocab ? vocab : id;
  };
  const int64_t row = rowOf(t);
  int64_t smaller = 0, sameBefore = 0, same = 0;
  for (int64_t u = 0; u < tokens; ++u) {
    int64_t other = rowOf(u);
    smaller += other < row;
    same += other == row;
    sameBefore += other == row && u < t;
  }
  const int64_t place = smaller + sameBefore;
  order[place] = int32_t(t);
  count[place] = int32_t(sameBefore == 0 && row < vocab ? same : 0);
}

/// Tokens of a row whose output gradients pass 2 loads before it adds them.
constexpr int64_t kEmbeddingGradBatch = 8;

/// Pass 2, item place * hidden + c (one per token and column), over a table
/// zeroed before it: where `place` starts a row's run of count[place]
/// tokens, column c of that row = their output gradients added in token
/// order (with `accumulate`, over a table not zeroed: that sum added to the
/// row's value, as an add after the table's gradient would). Every other
/// item does nothing. The gradients are loaded
/// kEmbeddingGradBatch at a time and then added in order: a frequent
/// token's run (hundreds in 8 x 1024 tokens of text; 128 on average in
/// the synthetic corpus's 64 tokens) took a memory round trip per token.
MTK_HD void embeddingGradSumItem(int64_t item, const float *dOut,
                                 const int32_t *ids, const int32_t *order,
                                 const int32_t *count, float *dTable,
                                 int64_t hidden, int64_t vocabOffset,
                                 bool accumulate = false) {
  const int64_t place = item / hidden, c = item % hidden;
  const int64_t n = count[place];
  if (n == 0)
    return;
  const int64_t row = int64_t(ids[order[place]]) - vocabOffset;
  float sum = 0.0f;
  int64_t k = 0;
  for (; k + kEmbeddingGradBatch <= n; k += kEmbeddingGradBatch) {
    float batch[kEmbeddingGradBatch];
    for (int64_t j = 0; j < kEmbeddingGradBatch; ++j)
      batch[j] = dOut[int64_t(order[place + k + j]) * hidden + c];
    for (int64_t j = 0; j < kEmbeddingGradBatch; ++j)
      sum += batch[j];
  }
  for (; k < n; ++k)
    sum += dOut[int64_t(order[place + k]) * hidden + c];
  float &cell = dTable[row * hidden + c];
  cell = accumulate ? cell + sum : sum;
}

/// Element i of dTable [positions, hidden]: the output gradient for the
/// first `seq` rows, zero after.
MTK_HD void positionEmbeddingGradItem(int64_t i, const float *dOut,
                                      float *dTable, int64_t seq,
                                      int64_t hidden) {
  dTable[i] = i < seq * hidden ? dOut[i] : 0.0f;
}

//===----------------------------------------------------------------------===//
// Layer norm and bias gradient
//===----------------------------------------------------------------------===//

/// Mean and 1/sqrt(biased variance + eps) of one row, in double, two passes.
MTK_HD void rowStats(const float *x, int64_t cols, double eps, double &mean,
                     double &rstd) {
  double sum = 0;
  for (int64_t c = 0; c < cols; ++c)
    sum += double(x[c]);
  mean = sum / double(cols);
  double sq = 0;
  for (int64_t c = 0; c < cols; ++c) {
    double d = double(x[c]) - mean;
    sq += d * d;
  }
  rstd = 1.0 / sqrt(sq / double(cols) + eps);
}

MTK_HD void layerNormRow(int64_t r, const float *x, const float *weight,
                         const float *bias, float *y, int64_t cols,
                         double eps) {
  const float *xr = x + r * cols;
  float *yr = y + r * cols;
  double mean, rstd;
  rowStats(xr, cols, eps, mean, rstd);
  for (int64_t c = 0; c < cols; ++c)
    yr[c] = float((double(xr[c]) - mean) * rstd * double(weight[c]) +
                  double(bias[c]));
}

/// dX of row r; its mean and rstd go to `stats` [rows, 2] for the column
/// pass.
MTK_HD void layerNormGradRow(int64_t r, const float *dY, const float *x,
                             const float *weight, float *dX, double *stats,
                             int64_t cols, double eps) {
  const float *xr = x + r * cols;
  const float *dyr = dY + r * cols;
  float *dxr = dX + r * cols;
  double mean, rstd;
  rowStats(xr, cols, eps, mean, rstd);
  stats[2 * r] = mean;
  stats[2 * r + 1] = rstd;
  double sumG = 0, sumGXhat = 0;
  for (int64_t c = 0; c < cols; ++c) {
    double xhat = (double(xr[c]) - mean) * rstd;
    double g = double(dyr[c]) * double(weight[c]);
    sumG += g;
    sumGXhat += g * xhat;
  }
  double meanG = sumG / double(cols), meanGXhat = sumGXhat / double(cols);
  for (int64_t c = 0; c < cols; ++c) {
    double xhat = (double(xr[c]) - mean) * rstd;
    double g = double(dyr[c]) * double(weight[c]);
    dxr[c] = float(rstd * (g - meanG - xhat * meanGXhat));
  }
}

/// dWeight[c] and dBias[c], summed over the rows in row order.
MTK_HD void layerNormGradColumn(int64_t c, const float *dY, const float *x,
                                const double *stats, float *dWeight,
                                float *dBias, int64_t rows, int64_t cols) {
  double accWeight = 0, accBias = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double xhat = (double(x[r * cols + c]) - stats[2 * r]) * stats[2 * r + 1];
    double dy = double(dY[r * cols + c]);
    accWeight += dy * xhat;
    accBias += dy;
  }
  dWeight[c] = float(accWeight);
  dBias[c] = float(accBias);
}

//===----------------------------------------------------------------------===//
// Unfused pointwise ops (a program compiled with fuse=false) and LLaMA's
//===----------------------------------------------------------------------===//

enum class Pointwise { Add, Mul, BiasAdd, Gelu, GeluGrad, Silu, SiluGrad };

/// Element i of y = op(a, b) (gradients: a is dY, b is x; BiasAdd: b is a
/// row of `cols`), in double as HostKernels.h computes them.
MTK_HD void pointwiseItem(int64_t i, Pointwise op, const float *a,
                          const float *b, float *y, int64_t cols) {
  const double geluK = 0.7978845608028654, geluC = 0.044715;
  switch (op) {
  case Pointwise::Add:
    y[i] = a[i] + b[i];
    return;
  case Pointwise::Mul:
    y[i] = a[i] * b[i];
    return;
  case Pointwise::BiasAdd:
    y[i] = a[i] + b[i % cols];
    return;
  case Pointwise::Gelu: {
    double v = a[i], t = tanh(geluK * (v + geluC * v * v * v));
    y[i] = float(0.5 * v * (1.0 + t));
    return;
  }
  case Pointwise::GeluGrad: {
    double v = b[i], t = tanh(geluK * (v + geluC * v * v * v));
    double du = geluK * (1.0 + 3.0 * geluC * v * v);
    y[i] =
        float(double(a[i]) * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du));
    return;
  }
  case Pointwise::Silu: {
    double v = a[i];
    y[i] = float(v / (1.0 + exp(-v)));
    return;
  }
  case Pointwise::SiluGrad: {
    double v = b[i], s = 1.0 / (1.0 + exp(-v));
    y[i] = float(double(a[i]) * s * (1.0 + v * (1.0 - s)));
    return;
  }
  }
}

/// pointwiseItem over 16-bit storage (a 16-bit GEMM's product, where a
/// GeLU epilogue falls back): the operands widened, the result narrowed as
/// HalfFloat.h rounds; y may be a (in place).
MTK_HD void pointwiseStoredItem(int64_t i, Pointwise op, const uint16_t *a,
                                const uint16_t *b, uint16_t *y, bool bf16) {
  const float x = fromHalfBits(a[i], bf16),
              other = b ? fromHalfBits(b[i], bf16) : 0.0f;
  float result = 0.0f;
  pointwiseItem(0, op, &x, &other, &result, 1);
  y[i] = toHalfBits(result, bf16);
}

/// Element i of y = cap * tanh(x / cap) (Gemma 2's soft cap of its
/// logits), as HostKernels.h's softcap.
MTK_HD void softcapItem(int64_t i, const float *x, float *y, double cap) {
  y[i] = float(cap * tanh(double(x[i]) / cap));
}

/// Element i of dX = dY * (1 - t^2), t = tanh(x / cap).
MTK_HD void softcapGradItem(int64_t i, const float *dY, const float *x,
                            float *dX, double cap) {
  const double t = tanh(double(x[i]) / cap);
  dX[i] = float(double(dY[i]) * (1.0 - t * t));
}

MTK_HD double rowInverseRms(const float *x, int64_t cols, double eps) {
  double sq = 0;
  for (int64_t c = 0; c < cols; ++c)
    sq += double(x[c]) * double(x[c]);
  return 1.0 / sqrt(sq / double(cols) + eps);
}

/// `weightOffset`: 0, or 1 for a zero-centered weight (the scale 1 + w).
MTK_HD void rmsNormRow(int64_t r, const float *x, const float *weight, float *y,
                       int64_t cols, double eps, double weightOffset) {
  const float *xr = x + r * cols;
  double rstd = rowInverseRms(xr, cols, eps);
  for (int64_t c = 0; c < cols; ++c)
    y[r * cols + c] =
        float(double(xr[c]) * rstd * (weightOffset + double(weight[c])));
}

/// dX of row r; its rstd goes to stats[r] for the column pass.
MTK_HD void rmsNormGradRow(int64_t r, const float *dY, const float *x,
                           const float *weight, float *dX, double *stats,
                           int64_t cols, double eps, double weightOffset) {
  const float *xr = x + r * cols, *dyr = dY + r * cols;
  double rstd = rowInverseRms(xr, cols, eps);
  stats[r] = rstd;
  double sumGXhat = 0;
  for (int64_t c = 0; c < cols; ++c)
    sumGXhat += double(dyr[c]) * (weightOffset + double(weight[c])) *
                (double(xr[c]) * rstd);
  double meanGXhat = sumGXhat / double(cols);
  for (int64_t c = 0; c < cols; ++c) {
    double xhat = double(xr[c]) * rstd;
    double g = double(dyr[c]) * (weightOffset + double(weight[c]));
    dX[r * cols + c] = float(rstd * (g - xhat * meanGXhat));
  }
}

MTK_HD void rmsNormGradColumn(int64_t c, const float *dY, const float *x,
                              const double *stats, float *dWeight, int64_t rows,
                              int64_t cols) {
  double acc = 0;
  for (int64_t r = 0; r < rows; ++r)
    acc += double(dY[r * cols + c]) * (double(x[r * cols + c]) * stats[r]);
  dWeight[c] = float(acc);
}

/// Pair i of rotary embedding on [batch * heads, seq, headDim]: element
/// (row, i) and (row, i + headDim/2) at position row % seq turn by
/// position * invFreq[i] (minus that when `inverse`).
MTK_HD void ropeItem(int64_t item, const float *x, float *y,
                     const double *invFreq, int64_t seq, int64_t headDim,
                     bool inverse) {
  int64_t half = headDim / 2;
  int64_t row = item / half, i = item % half, p = row % seq;
  double angle = double(p) * invFreq[i];
  double c = cos(angle), s = (inverse ? -1.0 : 1.0) * sin(angle);
  double a = x[row * headDim + i], b = x[row * headDim + i + half];
  y[row * headDim + i] = float(a * c - b * s);
  y[row * headDim + i + half] = float(b * c + a * s);
}

/// Element i of y [batch, kvHeads * groups, inner]: kv head h / groups.
MTK_HD void repeatKVItem(int64_t i, const float *x, float *y, int64_t groups,
                         int64_t inner) {
  int64_t head = i / inner; // b * kvHeads * groups + k * groups + g
  y[i] = x[(head / groups) * inner + i % inner];
}

/// Element i of dX [batch, kvHeads, inner]: the sum of its group's heads.
MTK_HD void repeatKVGradItem(int64_t i, const float *dY, float *dX,
                             int64_t groups, int64_t inner) {
  int64_t kvHead = i / inner, e = i % inner;
  double sum = 0;
  for (int64_t g = 0; g < groups; ++g)
    sum += double(dY[(kvHead * groups + g) * inner + e]);
  dX[i] = float(sum);
}

//===----------------------------------------------------------------------===//
// Heads
//===----------------------------------------------------------------------===//

struct HeadChunks {
  float *p[kMaxHeadChunks];
};

/// Element i of x [batch, seq, chunks * heads * headDim] goes to chunk c
/// [batch, heads, seq, headDim] (merge: the other way).
MTK_HD void headsItem(int64_t i, float *x, HeadChunks chunks, int64_t numChunks,
                      int64_t seq, int64_t heads, int64_t headDim, bool merge) {
  int64_t d = i % headDim, rest = i / headDim;
  int64_t h = rest % heads;
  rest /= heads;
  int64_t c = rest % numChunks;
  rest /= numChunks;
  int64_t s = rest % seq, b = rest / seq;
  float &chunk = chunks.p[c][((b * heads + h) * seq + s) * headDim + d];
  if (merge)
    x[i] = chunk;
  else
    chunk = x[i];
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

/// Row r's loss, logsumexp(logits[r]) - logits[r, labels[r]] (an
/// out-of-range label contributes its logsumexp only), into losses[r]. Of
/// the row's `vocab` columns the first `valid` (< 0: all) are real: a
/// padded vocabulary's others are masked out.
MTK_HD void crossEntropyRow(int64_t r, const float *logits,
                            const int32_t *labels, double *losses,
                            int64_t vocab, int64_t valid = -1) {
  const float *row = logits + r * vocab;
  if (valid < 0 || valid > vocab)
    valid = vocab;
  double maximum = -INFINITY;
  for (int64_t c = 0; c < valid; ++c)
    maximum = double(row[c]) > maximum ? double(row[c]) : maximum;
  double sum = 0;
  for (int64_t c = 0; c < valid; ++c)
    sum += exp(double(row[c]) - maximum);
  double loss = maximum + log(sum);
  int64_t label = labels[r];
  if (label >= 0 && label < valid)
    loss -= double(row[label]);
  losses[r] = loss;
}

/// Adds x[0, n) to `total` in index order, in double: the sum of the loss
/// mean, which meanInOrder (DeviceKernels.cu) takes a chunk at a time.
template <typename T>
MTK_HD void addInOrder(const T *x, int64_t n, double &total) {
  for (int64_t i = 0; i < n; ++i)
    total += double(x[i]);
}

/// The mean of `rows` values from their sum; 0 for no rows.
MTK_HD float meanOfSum(double total, int64_t rows) {
  return rows > 0 ? float(total / double(rows)) : 0.0f;
}

/// The mean of `rows` losses (or any values), in row order and in double,
/// into out[0] (one thread; what meanInOrder computes in one block).
template <typename T>
MTK_HD void meanOfRows(const T *losses, int64_t rows, float *out) {
  double total = 0;
  addInOrder(losses, rows, total);
  out[0] = meanOfSum(total, rows);
}

/// Row r of dLogits = dLoss * (softmax - onehot(label)) / rows; of the
/// row's `vocab` columns the first `valid` (< 0: all) are real, and the
/// padding's gradient is zero.
MTK_HD void crossEntropyGradRow(int64_t r, const float *dLoss,
                                const float *logits, const int32_t *labels,
                                float *dLogits, int64_t rows, int64_t vocab,
                                int64_t valid = -1) {
  const float *row = logits + r * vocab;
  float *drow = dLogits + r * vocab;
  if (valid < 0 || valid > vocab)
    valid = vocab;
  double factor = double(dLoss[0]) / double(rows);
  double maximum = -INFINITY;
  for (int64_t c = 0; c < valid; ++c)
    maximum = double(row[c]) > maximum ? double(row[c]) : maximum;
  double sum = 0;
  for (int64_t c = 0; c < valid; ++c)
    sum += exp(double(row[c]) - maximum);
  int64_t label = labels[r];
  for (int64_t c = 0; c < vocab; ++c)
    drow[c] = c < valid ? float(factor * (exp(double(row[c]) - maximum) / sum -
                                          (c == label ? 1.0 : 0.0)))
                        : 0.0f;
}

// Megatron's vocab-parallel cross-entropy (CpuDevice's, item by item):
// each rank holds `vocab` columns of the logits from `offset`, of which the
// first `valid` are real (the rest pad the vocabulary). Three passes around
// the reductions across the vocabulary's ranks: the row maxima (then their
// maximum over ranks), the sums of exponentials and the target logits
// (then their sums over ranks), and the loss or the gradient.

/// maxima[r] = the maximum of row r's valid logits (-inf where none is).
MTK_HD void vocabRowMax(int64_t r, const float *logits, int64_t vocab,
                        int64_t valid, double *maxima) {
  const float *row = logits + r * vocab;
  float maximum = valid > 0 ? row[0] : -INFINITY;
  for (int64_t c = 1; c < valid; ++c)
    maximum = maximum < row[c] ? row[c] : maximum;
  maxima[r] = double(maximum);
}

/// sums[r] = the sum of exp(logit - maxima[r]) over row r's valid logits;
/// targets[r] = the logit of its label where this rank holds it, else 0.
MTK_HD void vocabRowSums(int64_t r, const float *logits, const int32_t *labels,
                         const double *maxima, int64_t vocab, int64_t valid,
                         int64_t offset, double *sums, double *targets) {
  const float *row = logits + r * vocab;
  double sum = 0;
  for (int64_t c = 0; c < valid; ++c)
    sum += exp(double(row[c]) - maxima[r]);
  sums[r] = sum;
  int64_t local = int64_t(labels[r]) - offset;
  targets[r] = local >= 0 && local < vocab ? double(row[local]) : 0.0;
}

/// out[0] = the mean over rows of log(sums) + maxima - targets, in row
/// order (one thread).
MTK_HD void vocabLossMean(const double *maxima, const double *sums,
                          const double *targets, int64_t rows, float *out) {
  double loss = 0;
  for (int64_t r = 0; r < rows; ++r)
    loss += log(sums[r]) + maxima[r] - targets[r];
  out[0] = float(loss / double(rows));
}

/// Row r of dLogits = dLoss * (softmax - onehot(label)) / rows, the
/// softmax from the maxima and sums over every rank.
MTK_HD void vocabGradRow(int64_t r, const float *dLoss, const float *logits,
                         const int32_t *labels, const double *maxima,
                         const double *sums, int64_t vocab, int64_t valid,
                         int64_t offset, int64_t rows, float *dLogits) {
  const float *row = logits + r * vocab;
  float *drow = dLogits + r * vocab;
  double d = dLoss[0];
  int64_t local = int64_t(labels[r]) - offset;
  for (int64_t c = 0; c < vocab; ++c) {
    double softmax =
        c < valid ? exp(double(row[c]) - maxima[r]) / sums[r] : 0.0;
    drow[c] = float(d * (softmax - (c == local ? 1.0 : 0.0)) / double(rows));
  }
}

//===----------------------------------------------------------------------===//
// Norms, clipping and AdamW
//===----------------------------------------------------------------------===//

/// The elements per piece of the gradient norm's sum of squares.
constexpr int64_t kNormPiece = 4096;

/// min(1, maxNorm / (norm + 1e-6)), NaN for a non-finite norm (every adamw
/// then skips the step), 1 without clipping (one thread).
MTK_HD void clipScale(const float *norm, const float *maxNorm, float *out) {
  double n = norm[0], m = maxNorm[0];
  double scale = m / (n + 1e-6);
  out[0] = !finite(n) ? float(NAN)
           : m <= 0   ? 1.0f
                      : float(scale < 1.0 ? scale : 1.0);
}

/// The scalar inputs of an adamw command: step, lr, beta1, beta2, eps,
/// weight decay and the gradient's scale, each a one-element f32 buffer.
struct AdamScalars {
  const float *step, *lr, *beta1, *beta2, *eps, *weightDecay, *gradScale;
};

/// What one AdamW step applies to every element, from its scalar inputs.
/// A thread computes it once for all its elements: per element, its two
/// double pow()s made the update compute-bound on the GPU.
struct AdamStep {
  bool apply; // the gradient's scale is finite (else nothing changes)
  double gradScale, beta1, beta2, stepSize, bias2Sqrt, decay, eps;
};

MTK_HD AdamStep adamStepOf(AdamScalars s, bool applyDecay) {
  AdamStep a;
  a.gradScale = s.gradScale[0];
  a.apply = finite(a.gradScale);
  double lr = s.lr[0], step = s.step[0];
  a.beta1 = s.beta1[0];
  a.beta2 = s.beta2[0];
  a.stepSize = lr / (1.0 - pow(a.beta1, step));
  a.bias2Sqrt = sqrt(1.0 - pow(a.beta2, step));
  a.decay = applyDecay ? lr * double(s.weightDecay[0]) : 0.0;
  a.eps = s.eps[0];
  return a;
}

/// One element's AdamW step, as torch.optim.AdamW, in double: its
/// parameter and moments updated in place from its gradient.
MTK_HD void adamwUpdate(float &param, float grad, float &expAvg,
                        float &expAvgSq, const AdamStep &a) {
  double g = double(grad) * a.gradScale;
  double p = double(param);
  p -= a.decay * p;
  double m = a.beta1 * double(expAvg) + (1.0 - a.beta1) * g;
  double v = a.beta2 * double(expAvgSq) + (1.0 - a.beta2) * g * g;
  p -= a.stepSize * m / (sqrt(v) / a.bias2Sqrt + a.eps);
  expAvg = float(m);
  expAvgSq = float(v);
  param = float(p);
}

/// Thread `t` of `threads` of an AdamW step over n elements: elements t,
/// t + threads, ...
MTK_HD void adamwThread(int64_t t, int64_t threads, int64_t n, float *param,
                        const float *grad, float *expAvg, float *expAvgSq,
                        AdamScalars s, bool applyDecay) {
  const AdamStep a = adamStepOf(s, applyDecay);
  if (!a.apply)
    return;
  for (int64_t i = t; i < n; i += threads)
    adamwUpdate(param[i], grad[i], expAvg[i], expAvgSq[i], a);
}

/// One tensor of a multi-tensor sum of squares (the gradient norm): its
/// elements, and where its pieces of kNormPiece elements start among all
/// the tensors' pieces (segmentOf's key, as a cast's or AdamW's element
/// start is).
struct NormSegment {
  const float *x;
  int64_t n;
  int64_t start;
};

/// One tensor of a multi-tensor cast between f32 and 16 bits: its 16-bit
/// and f32 storage, and where its elements start in the group's
/// concatenation.
struct CastSegment {
  uint16_t *half;
  float *wide;
  int64_t start;
};

/// The last of `count` segments (starts ascending) that starts at or
/// before element `i`, searching from `low` (a segment at or before it:
/// a thread's elements ascend). A thread's next element is most often in
/// its previous element's segment or the one after, which are tried
/// first: a binary search for every element made a multi-tensor kernel
/// wait on its table rather than on its tensors.
/// Keyed by `key` (a member pointer), any ascending key: the start, or
/// AdamSegment's first chunk.
template <typename Segment>
MTK_HD int64_t segmentOf(const Segment *segments, int64_t count, int64_t i,
                         int64_t low, int64_t Segment::*key = &Segment::start) {
  if (low + 1 >= count || segments[low + 1].*key > i)
    return low;
  if (low + 2 >= count || segments[low + 2].*key > i)
    return low + 1;
  low += 2;
  int64_t high = count - 1;
  while (low < high) {
    int64_t middle = (low + high + 1) / 2;
    if (segments[middle].*key <= i)
      low = middle;
    else
      high = middle - 1;
  }
  return low;
}

/// Thread `t` of `threads` over the concatenation of `count` segments
/// (`total` elements, starts ascending): elements t, t + threads, ...,
/// `Unroll` at a time, each in the last segment that starts at or before
/// it (the elements ascend, so each search starts from the previous
/// segment): load(k, segment, j) for each element k of a round (element j
/// of its segment), then store(k) for each. A round's loads are in flight
/// together: one element at a time, its stores, which may alias the next
/// element's loads, kept those loads waiting (multi-tensor AdamW ran at
/// 2.0 TB/s on an H100 at GPT-2 124M).
template <int Unroll, typename Segment, typename Load, typename Store>
MTK_HD void forSegmentElements(int64_t t, int64_t threads,
                               const Segment *segments, int64_t count,
                               int64_t total, Load load, Store store) {
  int64_t low = 0;
  for (int64_t i0 = t; i0 < total; i0 += Unroll * threads) {
    int loaded = 0;
    for (int k = 0; k < Unroll; ++k) {
      const int64_t i = i0 + k * threads;
      if (i >= total)
        break;
      low = segmentOf(segments, count, i, low);
      load(k, segments[low], i - segments[low].start);
      loaded = k + 1;
    }
    for (int k = 0; k < loaded; ++k)
      store(k);
  }
}

/// Elements a thread of a multi-tensor cast loads before it stores any.
constexpr int kCastUnroll = 4;

/// Thread `t` of `threads` of a multi-tensor cast over the concatenation
/// of `count` segments (`total` elements, starts ascending): elements t,
/// t + threads, ..., each converted as convertItem converts it,
/// kCastUnroll loaded before any is stored.
MTK_HD void multiConvertThread(int64_t t, int64_t threads,
                               const CastSegment *segments, int64_t count,
                               int64_t total, bool bf16, bool narrow) {
  uint16_t *half[kCastUnroll];
  float *wide[kCastUnroll];
  float wideValue[kCastUnroll];
  uint16_t halfValue[kCastUnroll];
  forSegmentElements<kCastUnroll>(
      t, threads, segments, count, total,
      [&](int k, const CastSegment &segment, int64_t j) {
        half[k] = segment.half + j;
        wide[k] = segment.wide + j;
        if (narrow)
          wideValue[k] = *wide[k];
        else
          halfValue[k] = *half[k];
      },
      [&](int k) {
        if (narrow)
          *half[k] = toHalfBits(wideValue[k], bf16);
        else
          *wide[k] = fromHalfBits(halfValue[k], bf16);
      });
}

/// One tensor of a multi-tensor AdamW: its parameter, gradient and moments,
/// its 16-bit copy (or null), where its elements start in the group's
/// concatenation, and, for the traversal by chunks, its first chunk among
/// all the tensors' and whether its arrays allow 16-byte loads (its copy
/// 8-byte stores).
struct AdamSegment {
  float *param;
  const float *grad;
  float *expAvg;
  float *expAvgSq;
  uint16_t *copy;
  int64_t start;
  int64_t firstChunk;
  int32_t vectorized;
};

/// The elements of one chunk of a multi-tensor AdamW by chunks: a block's
/// unit of work, of one tensor (its last chunk shorter).
constexpr int64_t kAdamChunk = 16384;

MTK_HD int64_t adamChunksOf(int64_t n) {
  return (n + kAdamChunk - 1) / kAdamChunk;
}

/// Whether a tensor's AdamW arrays (and copy, if any) allow the traversal
/// by chunks its vector loads and stores: 16-byte aligned f32 arrays, an
/// 8-byte aligned copy (chunks start at multiples of kAdamChunk, so every
/// group of 4 elements is then aligned).
MTK_HD bool adamVectorizable(const AdamSegment &segment) {
  auto aligned = [](const void *pointer, uintptr_t bytes) {
    return reinterpret_cast<uintptr_t>(pointer) % bytes == 0;
  };
  return aligned(segment.param, 16) && aligned(segment.grad, 16) &&
         aligned(segment.expAvg, 16) && aligned(segment.expAvgSq, 16) &&
         (!segment.copy || aligned(segment.copy, 8));
}

/// Elements a thread of a multi-tensor AdamW loads before it stores any.
constexpr int kAdamUnroll = 4;

/// Thread `t` of `threads` of a multi-tensor AdamW over the concatenation
/// of `count` segments (`total` elements, starts ascending): elements t,
/// t + threads, ..., kAdamUnroll elements' four values loaded before any
/// is updated and stored. A segment with a copy also stores the updated
/// parameter's cast to bf16 (`copyBf16`) or f16 there, as convertItem
/// rounds: the forward reads it instead of casting the parameter again.
/// A skipped update (non-finite gradient scale) writes nothing, copies
/// included: each stays the unchanged parameter's cast.
MTK_HD void multiAdamwThread(int64_t t, int64_t threads,
                             const AdamSegment *segments, int64_t count,
                             int64_t total, AdamScalars s, bool applyDecay,
                             bool copyBf16) {
  const AdamStep a = adamStepOf(s, applyDecay);
  if (!a.apply)
    return;
  float *param[kAdamUnroll], *expAvg[kAdamUnroll], *expAvgSq[kAdamUnroll];
  uint16_t *copy[kAdamUnroll];
  float p[kAdamUnroll], g[kAdamUnroll], m[kAdamUnroll], v[kAdamUnroll];
  forSegmentElements<kAdamUnroll>(
      t, threads, segments, count, total,
      [&](int k, const AdamSegment &segment, int64_t j) {
        param[k] = segment.param + j;
        expAvg[k] = segment.expAvg + j;
        expAvgSq[k] = segment.expAvgSq + j;
        copy[k] = segment.copy ? segment.copy + j : nullptr;
        p[k] = *param[k];
        g[k] = segment.grad[j];
        m[k] = *expAvg[k];
        v[k] = *expAvgSq[k];
      },
      [&](int k) {
        adamwUpdate(p[k], g[k], m[k], v[k], a);
        *param[k] = p[k];
        *expAvg[k] = m[k];
        *expAvgSq[k] = v[k];
        if (copy[k])
          *copy[k] = toHalfBits(p[k], copyBf16);
      });
}

/// Four consecutive floats, or 16-bit values, moved as one vector on the
/// GPU (the caller holds the alignment) and one by one on the host
/// (copy4).
template <typename T> MTK_HD void copy4(T *to, const T *from) {
  for (int l = 0; l < 4; ++l)
    to[l] = from[l];
}
MTK_HD void load4(const float *from, float to[4]) {
#ifdef __CUDA_ARCH__
  const float4 v = __ldca(reinterpret_cast<const float4 *>(from));
  to[0] = v.x, to[1] = v.y, to[2] = v.z, to[3] = v.w;
#else
  copy4(to, from);
#endif
}
// (The GPU's loads and stores through __ldca and __stwb, global and
// vector: a float4 assigned through a cast pointer reached the PTX as four
// scalar generic stores.)
MTK_HD void store4(float *to, const float from[4]) {
#ifdef __CUDA_ARCH__
  __stwb(reinterpret_cast<float4 *>(to),
         make_float4(from[0], from[1], from[2], from[3]));
#else
  copy4(to, from);
#endif
}
MTK_HD void store4(uint16_t *to, const uint16_t from[4]) {
#ifdef __CUDA_ARCH__
  __stwb(reinterpret_cast<uint2 *>(to),
         make_uint2(uint32_t(from[0]) | uint32_t(from[1]) << 16,
                    uint32_t(from[2]) | uint32_t(from[3]) << 16));
#else
  copy4(to, from);
#endif
}

/// Thread `thread` of the `threads` of block `block` (of `blocks`) of a
/// multi-tensor AdamW by chunks, the apex and PyTorch multi-tensor layout:
/// block b takes chunks b, b + blocks, ... of the `chunks` of the `count`
/// segments (`total` elements), each chunk kAdamChunk elements of one
/// tensor; in a chunk its threads take groups of 4 elements, t, t +
/// threads, ..., each array's 4 values moved as one 16-byte vector where
/// the tensor is vectorized (adamVectorizable), else element by element.
/// The same update, element by element, as multiAdamwThread, whose
/// traversal (every element searching its segment, 4-byte loads) moved
/// 2.25 TB/s on an H100 at the 1.3B bench.
MTK_HD void multiAdamwChunkThread(int64_t block, int64_t blocks, int64_t thread,
                                  int64_t threads, const AdamSegment *segments,
                                  int64_t count, int64_t chunks, int64_t total,
                                  AdamScalars s, bool applyDecay,
                                  bool copyBf16) {
  const AdamStep a = adamStepOf(s, applyDecay);
  if (!a.apply)
    return;
  int64_t k = 0;
  for (int64_t c = block; c < chunks; c += blocks) {
    // The last segment whose first chunk is c or before (an empty one
    // shares its first chunk with the next, which this picks).
    k = segmentOf(segments, count, c, k, &AdamSegment::firstChunk);
    const AdamSegment &segment = segments[k];
    const int64_t n =
        (k + 1 < count ? segments[k + 1].start : total) - segment.start;
    const int64_t begin = (c - segment.firstChunk) * kAdamChunk;
    const int64_t end = begin + kAdamChunk < n ? begin + kAdamChunk : n;
    int64_t scalarFrom = begin;
    if (segment.vectorized) {
      const int64_t groups = (end - begin) / 4;
      for (int64_t g = thread; g < groups; g += threads) {
        const int64_t i = begin + 4 * g;
        float p[4], grad[4], m[4], v[4];
        load4(segment.param + i, p);
        load4(segment.grad + i, grad);
        load4(segment.expAvg + i, m);
        load4(segment.expAvgSq + i, v);
        for (int l = 0; l < 4; ++l)
          adamwUpdate(p[l], grad[l], m[l], v[l], a);
        store4(segment.param + i, p);
        store4(segment.expAvg + i, m);
        store4(segment.expAvgSq + i, v);
        if (segment.copy) {
          uint16_t half[4];
          for (int l = 0; l < 4; ++l)
            half[l] = toHalfBits(p[l], copyBf16);
          store4(segment.copy + i, half);
        }
      }
      scalarFrom = begin + 4 * groups;
    }
    for (int64_t i = scalarFrom + thread; i < end; i += threads) {
      float p = segment.param[i], m = segment.expAvg[i],
            v = segment.expAvgSq[i];
      adamwUpdate(p, segment.grad[i], m, v, a);
      segment.param[i] = p;
      segment.expAvg[i] = m;
      segment.expAvgSq[i] = v;
      if (segment.copy)
        segment.copy[i] = toHalfBits(p, copyBf16);
    }
  }
}

/// Sets *flag when element i of x is not finite.
MTK_HD void nonFiniteItem(int64_t i, const float *x, int *flag) {
  if (!finite(double(x[i])))
    *flag = 1;
}

MTK_HD void fillItem(int64_t i, float *x, float value) { x[i] = value; }

} // namespace mtrt::gpu

#endif // MTRT_CUDA_DEVICEKERNELS_H
