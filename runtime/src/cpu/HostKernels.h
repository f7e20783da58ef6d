//===- HostKernels.h - Reference CPU kernels of the mt ops ------*- C++ -*-===//
//
// The host kernels of the thin training runtime: one function per forward or
// gradient op of the mt dialect (see dialects/MT/IR/MTOps.td for the exact
// semantics). Every kernel is a template over the element type so that the
// runtime instantiates it with float and the unit tests with double, where a
// finite-difference check can be tight.
//
// Conventions:
//  - Tensors are row-major and contiguous; sizes are element counts.
//  - Kernels named *Grad overwrite their outputs (they never accumulate into
//    what the caller left there).
//  - Reductions (means, variances, softmax sums, dot products, gradient sums
//    over rows) accumulate in double whatever T is: the runtime runs in f32
//    and these sums run over up to tens of thousands of terms.
//  - Single-threaded plain loops: these are the reference kernels that the
//    compiled backends are checked against, so they favour being obviously
//    correct, with loop orders that walk memory contiguously.
//
// This header must build without LLVM or MLIR: it uses only the standard
// library.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CPU_HOSTKERNELS_H
#define MTRT_CPU_HOSTKERNELS_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace mtrt {
namespace cpu {

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

/// What keys the dropout masks of one run of the program: the user's seed and
/// the training step, so that every step draws fresh masks and a rerun with
/// the same seed reproduces them.
struct RngKey {
  uint64_t seed;
  uint64_t step;
};

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
/// 3", SC 2011), bit-exact with Random123's philox4x32_10 and therefore with
/// cuRAND's and PyTorch's Philox: returns all four output words of one block.
inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter,
                                             std::array<uint32_t, 2> key) {
  constexpr uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    // The key schedule bumps the key before every round but the first.
    if (round > 0) {
      key[0] += w0;
      key[1] += w1;
    }
    uint64_t p0 = uint64_t(m0) * counter[0];
    uint64_t p1 = uint64_t(m1) * counter[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    counter = {hi1 ^ counter[1] ^ key[0], lo1, hi0 ^ counter[3] ^ key[1], lo0};
  }
  return counter;
}

/// Word 0 of the Philox block of counter (index low 32, index high 32,
/// stream, step low 32) and key (seed low 32, seed high 32): how our
/// arguments map onto Random123's, which its test vectors check. Dropout
/// draws with dropoutWord.
inline uint32_t philox4x32(uint64_t seed, uint64_t index, uint32_t stream,
                           uint32_t step) {
  return philox4x32_10({uint32_t(index), uint32_t(index >> 32), stream, step},
                       {uint32_t(seed), uint32_t(seed >> 32)})[0];
}

/// The random word of dropout element `index`: word index % 4 of the
/// Philox block whose counter is (index / 4 low 32, index / 4 high 32,
/// stream, step), so that one block serves four consecutive elements (as
/// cuRAND's curand4 does). Counter-based: an element's word depends only on
/// its global index, never on how the tensor is split or on its size.
inline uint32_t dropoutWord(uint64_t seed, uint64_t index, uint32_t stream,
                            uint32_t step) {
  uint64_t block = index >> 2;
  return philox4x32_10({uint32_t(block), uint32_t(block >> 32), stream, step},
                       {uint32_t(seed), uint32_t(seed >> 32)})[index & 3];
}

/// dropoutWord(seed, first + l, stream, step) for l in [0, count), into
/// words[l]: one Philox block per four elements.
inline void philoxWords(uint64_t seed, uint64_t first, uint32_t stream,
                        uint32_t step, int64_t count, uint32_t *words) {
  uint64_t end = first + uint64_t(count);
  for (uint64_t block = first >> 2; block << 2 < end; ++block) {
    std::array<uint32_t, 4> out =
        philox4x32_10({uint32_t(block), uint32_t(block >> 32), stream, step},
                      {uint32_t(seed), uint32_t(seed >> 32)});
    for (uint64_t w = 0; w < 4; ++w) {
      uint64_t index = (block << 2) + w;
      if (index >= first && index < end)
        words[index - first] = out[w];
    }
  }
}

/// Whether a random word keeps its element under dropout probability p.
inline bool keepsWord(uint32_t word, double p) {
  return double(word) * (1.0 / 4294967296.0) >= p;
}

/// Whether dropout keeps element `index` of stream `stream`: with probability
/// 1-p. The uniform is word * 2^-32 in [0, 1), so p = 0 keeps everything and
/// p = 1 drops everything.
inline bool dropoutKeep(RngKey key, uint32_t stream, uint64_t index, double p) {
  return keepsWord(dropoutWord(key.seed, index, stream, uint32_t(key.step)), p);
}

namespace detail {

/// The single-device random index of element (i, 0) of attention's
/// probabilities for local batch-head `bh`: a rank holding heads
/// headOffset .. of headsTotal, and batch rows after `indexOffset`
/// elements, draws the masks one device would.
inline uint64_t maskRowIndex(uint64_t indexOffset, int64_t bh, int64_t heads,
                             int64_t headsTotal, int64_t headOffset,
                             int64_t seq, int64_t i) {
  int64_t batch = bh / heads, head = headOffset + bh % heads;
  return indexOffset + uint64_t(((batch * headsTotal + head) * seq + i) * seq);
}
/// The factor kept elements are multiplied by: 1/(1-p), or 0 when p >= 1
/// (nothing is kept then, and this avoids dividing by zero).
inline double dropoutScale(double p) { return p < 1.0 ? 1.0 / (1.0 - p) : 0.0; }
} // namespace detail

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

/// out[t, :] = table[ids[t], :] for `tokens` ids. An id outside [0, vocab) is
/// undefined behaviour in the op; here it yields a zero row rather than a read
/// outside the table.
template <typename T>
void embedding(const T *table, const int32_t *ids, T *out, int64_t tokens,
               int64_t vocab, int64_t hidden, int64_t vocabOffset = 0) {
  // A vocabulary-parallel table holds rows vocabOffset .. vocabOffset +
  // vocab - 1: other ids look up zeros, summed over the ranks later.
  for (int64_t t = 0; t < tokens; ++t) {
    T *row = out + t * hidden;
    int64_t id = ids[t] - vocabOffset;
    if (id < 0 || id >= vocab) {
      std::fill(row, row + hidden, T(0));
      continue;
    }
    std::copy(table + id * hidden, table + (id + 1) * hidden, row);
  }
}

/// dTable[v, :] = sum of dOut[t, :] over the tokens t with ids[t] = v. Zeroes
/// dTable first, so rows never looked up are zero. Out-of-range ids are
/// skipped, as the forward gave them a constant row.
template <typename T>
void embeddingGrad(const T *dOut, const int32_t *ids, T *dTable, int64_t tokens,
                   int64_t vocab, int64_t hidden, int64_t vocabOffset = 0) {
  std::fill(dTable, dTable + vocab * hidden, T(0));
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t id = ids[t] - vocabOffset;
    if (id < 0 || id >= vocab)
      continue;
    T *row = dTable + id * hidden;
    const T *src = dOut + t * hidden;
    for (int64_t c = 0; c < hidden; ++c)
      row[c] += src[c];
  }
}

/// dTable[v, :] += the sum of dOut[t, :] over the tokens t with ids[t] = v,
/// summed first in token order from zero, then added once: the bits of
/// embeddingGrad followed by an add (mt.embedding_grad with accumulate).
/// Rows never looked up keep their values. The tokens are ordered by row
/// (stably) so that each row's sum is one pass over its run.
template <typename T, typename U>
void embeddingGradAccumulate(const T *dOut, const int32_t *ids, U *dTable,
                             int64_t tokens, int64_t vocab, int64_t hidden,
                             int64_t vocabOffset = 0) {
  std::vector<int64_t> order;
  order.reserve(size_t(tokens));
  for (int64_t t = 0; t < tokens; ++t)
    if (int64_t id = ids[t] - vocabOffset; id >= 0 && id < vocab)
      order.push_back(t);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return ids[a] < ids[b]; });
  std::vector<U> sum(static_cast<size_t>(hidden));
  for (size_t begin = 0; begin < order.size();) {
    const int32_t id = ids[order[begin]];
    std::fill(sum.begin(), sum.end(), U(0));
    size_t end = begin;
    for (; end < order.size() && ids[order[end]] == id; ++end) {
      const T *src = dOut + order[end] * hidden;
      for (int64_t c = 0; c < hidden; ++c)
        sum[size_t(c)] += src[c];
    }
    U *row = dTable + (int64_t(id) - vocabOffset) * hidden;
    for (int64_t c = 0; c < hidden; ++c)
      row[c] += sum[size_t(c)];
    begin = end;
  }
}

/// out[s, :] = table[s, :] for s < seq: the first `seq` rows of the table.
template <typename T>
void positionEmbedding(const T *table, T *out, int64_t seq, int64_t hidden) {
  std::copy(table, table + seq * hidden, out);
}

/// dTable[s, :] = dOut[s, :] for s < seq and zero for the rows up to
/// `positions` that the forward did not read.
template <typename T>
void positionEmbeddingGrad(const T *dOut, T *dTable, int64_t seq,
                           int64_t positions, int64_t hidden) {
  std::copy(dOut, dOut + seq * hidden, dTable);
  std::fill(dTable + seq * hidden, dTable + positions * hidden, T(0));
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

namespace detail {
/// Mean and 1/sqrt(biased variance + eps) of one row, in double. Two passes
/// rather than E[x^2] - E[x]^2, which cancels badly when |mean| >> stddev.
template <typename T>
void rowStats(const T *x, int64_t cols, double eps, double &mean,
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
  rstd = 1.0 / std::sqrt(sq / double(cols) + eps);
}
} // namespace detail

/// y = (x - mean) / sqrt(var + eps) * weight + bias over each row of `cols`
/// elements, with the biased variance, as torch.nn.LayerNorm.
template <typename T>
void layerNorm(const T *x, const T *weight, const T *bias, T *y, int64_t rows,
               int64_t cols, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * cols;
    T *yr = y + r * cols;
    double mean, rstd;
    detail::rowStats(xr, cols, eps, mean, rstd);
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = T((double(xr[c]) - mean) * rstd * double(weight[c]) +
                double(bias[c]));
  }
}

/// The gradients of layerNorm w.r.t. x, weight and bias, given dY. With
/// xhat = (x - mean) * rstd and g = dY * weight:
///   dX = rstd * (g - mean(g) - xhat * mean(g * xhat))
///   dWeight = sum over rows of dY * xhat,  dBias = sum over rows of dY.
/// The row statistics are recomputed from x (the op stashes nothing).
template <typename T>
void layerNormGrad(const T *dY, const T *x, const T *weight, T *dX, T *dWeight,
                   T *dBias, int64_t rows, int64_t cols, double eps) {
  std::vector<double> accWeight(cols, 0.0), accBias(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * cols;
    const T *dyr = dY + r * cols;
    T *dxr = dX + r * cols;
    double mean, rstd;
    detail::rowStats(xr, cols, eps, mean, rstd);
    double sumG = 0, sumGXhat = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double xhat = (double(xr[c]) - mean) * rstd;
      double dy = double(dyr[c]);
      double g = dy * double(weight[c]);
      sumG += g;
      sumGXhat += g * xhat;
      accWeight[c] += dy * xhat;
      accBias[c] += dy;
    }
    double meanG = sumG / double(cols), meanGXhat = sumGXhat / double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      double xhat = (double(xr[c]) - mean) * rstd;
      double g = double(dyr[c]) * double(weight[c]);
      dxr[c] = T(rstd * (g - meanG - xhat * meanGXhat));
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    dWeight[c] = T(accWeight[c]);
    dBias[c] = T(accBias[c]);
  }
}

namespace detail {
/// 1 / sqrt(mean(x^2) + eps) of one row, in double.
template <typename T>
double rowInverseRms(const T *x, int64_t cols, double eps) {
  double sq = 0;
  for (int64_t c = 0; c < cols; ++c)
    sq += double(x[c]) * double(x[c]);
  return 1.0 / std::sqrt(sq / double(cols) + eps);
}
} // namespace detail

/// y = x / sqrt(mean(x^2) + eps) * (weightOffset + weight) over each row of
/// `cols` elements, as Hugging Face's LlamaRMSNorm (offset 0) or
/// GemmaRMSNorm (offset 1) (in double here; the reference computes in
/// float32).
template <typename T>
void rmsNorm(const T *x, const T *weight, T *y, int64_t rows, int64_t cols,
             double eps, double weightOffset) {
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * cols;
    T *yr = y + r * cols;
    double rstd = detail::rowInverseRms(xr, cols, eps);
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = T(double(xr[c]) * rstd * (weightOffset + double(weight[c])));
  }
}

/// The gradients of rmsNorm w.r.t. x and weight, given dY. With
/// xhat = x * rstd and g = dY * (weightOffset + weight):
///   dX = rstd * (g - xhat * mean(g * xhat)),  dWeight = sum of dY * xhat.
template <typename T>
void rmsNormGrad(const T *dY, const T *x, const T *weight, T *dX, T *dWeight,
                 int64_t rows, int64_t cols, double eps, double weightOffset) {
  std::vector<double> accWeight(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * cols;
    const T *dyr = dY + r * cols;
    T *dxr = dX + r * cols;
    double rstd = detail::rowInverseRms(xr, cols, eps);
    double sumGXhat = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double xhat = double(xr[c]) * rstd;
      double dy = double(dyr[c]);
      sumGXhat += dy * (weightOffset + double(weight[c])) * xhat;
      accWeight[c] += dy * xhat;
    }
    double meanGXhat = sumGXhat / double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      double xhat = double(xr[c]) * rstd;
      double g = double(dyr[c]) * (weightOffset + double(weight[c]));
      dxr[c] = T(rstd * (g - xhat * meanGXhat));
    }
  }
  for (int64_t c = 0; c < cols; ++c)
    dWeight[c] = T(accWeight[c]);
}

/// Rotary position embedding on [batch, heads, seq, headDim] in Hugging
/// Face's rotate_half convention: the pair (x[i], x[i + headDim/2]) at
/// position p turns by p * invFreq[i] (by minus that angle if `inverse`).
template <typename T>
void rope(const T *x, T *y, int64_t batchHeads, int64_t seq, int64_t headDim,
          const std::vector<double> &invFreq, bool inverse) {
  int64_t half = headDim / 2;
  double sign = inverse ? -1.0 : 1.0;
  for (int64_t bh = 0; bh < batchHeads; ++bh)
    for (int64_t p = 0; p < seq; ++p) {
      const T *xr = x + (bh * seq + p) * headDim;
      T *yr = y + (bh * seq + p) * headDim;
      for (int64_t i = 0; i < half; ++i) {
        double angle = double(p) * invFreq[size_t(i)];
        double c = std::cos(angle), s = sign * std::sin(angle);
        double a = double(xr[i]), b = double(xr[i + half]);
        yr[i] = T(a * c - b * s);
        yr[i + half] = T(b * c + a * s);
      }
    }
}

/// The inverse frequencies of rotary embedding: theta^(-2i/headDim), then,
/// when `factor` > 0, Llama 3.1's "llama3" rope scaling (Hugging Face's
/// _compute_llama3_parameters), or when `linearFactor` > 0, "linear"
/// scaling (each divided by it).
inline std::vector<double>
ropeInverseFrequencies(int64_t headDim, double theta, double factor,
                       double lowFreqFactor, double highFreqFactor,
                       double originalMax, double linearFactor = 0) {
  std::vector<double> inv(size_t(headDim / 2));
  for (int64_t i = 0; i < headDim / 2; ++i)
    inv[size_t(i)] = 1.0 / std::pow(theta, double(2 * i) / double(headDim));
  if (linearFactor > 0)
    for (double &f : inv)
      f /= linearFactor;
  if (!(factor > 0))
    return inv;
  double lowWavelen = originalMax / lowFreqFactor;
  double highWavelen = originalMax / highFreqFactor;
  for (double &f : inv) {
    double wavelen = 2.0 * M_PI / f;
    if (wavelen > lowWavelen) {
      f = f / factor;
    } else if (wavelen >= highWavelen) {
      double smooth = (originalMax / wavelen - lowFreqFactor) /
                      (highFreqFactor - lowFreqFactor);
      f = (1.0 - smooth) * f / factor + smooth * f;
    }
  }
  return inv;
}

/// The softmax of `x[0, n)` in double, into `s`.
template <typename T> void softmaxInDouble(const T *x, double *s, int64_t n) {
  double top = double(x[0]), total = 0;
  for (int64_t e = 1; e < n; ++e)
    top = std::max(top, double(x[e]));
  for (int64_t e = 0; e < n; ++e)
    total += s[e] = std::exp(double(x[e]) - top);
  for (int64_t e = 0; e < n; ++e)
    s[e] /= total;
}

/// A mixture of experts' routing: the `k` largest of each token's
/// `numExperts` logits (the lower expert first among equal ones), in
/// decreasing order, and the softmax of those k. A NaN logit sorts last
/// (the order stays a strict one) and makes its token's weights NaN if
/// chosen, which the step's non-finite checks report.
template <typename T>
void topKGating(const T *logits, T *weights, int32_t *experts, int64_t tokens,
                int64_t numExperts, int64_t k, bool unnormalized) {
  std::vector<int32_t> order(size_t(numExperts), 0);
  for (int64_t t = 0; t < tokens; ++t) {
    const T *row = logits + t * numExperts;
    auto key = [&](int32_t e) {
      double value = double(row[e]);
      return std::isnan(value) ? -std::numeric_limits<double>::infinity()
                               : value;
    };
    for (int64_t e = 0; e < numExperts; ++e)
      order[size_t(e)] = int32_t(e);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) {
                        return key(a) > key(b) || (key(a) == key(b) && a < b);
                      });
    // Renormalized, the softmax of the k chosen logits; unnormalized, their
    // probabilities among all experts: the chosen summed first, then the
    // others in expert order (partial_sort leaves those in no set order;
    // the CUDA backend's topKGatingItem sums in this one).
    double top = double(row[order[0]]), sum = 0;
    for (int64_t j = 0; j < k; ++j)
      sum += std::exp(double(row[order[size_t(j)]]) - top);
    if (unnormalized)
      for (int64_t e = 0; e < numExperts; ++e)
        if (std::find(order.begin(), order.begin() + k, int32_t(e)) ==
            order.begin() + k)
          sum += std::exp(double(row[e]) - top);
    for (int64_t j = 0; j < k; ++j) {
      experts[t * k + j] = order[size_t(j)];
      weights[t * k + j] =
          T(std::exp(double(row[order[size_t(j)]]) - top) / sum);
    }
  }
}

/// The gradient of topKGating's weights through their softmax, into the
/// chosen experts' logits (the others' are zero). With `logits`
/// (unnormalized weights, probabilities `p` over all experts), into every
/// expert's: `p[e] * (dw of e where chosen, else 0, - dot(w, dw))`.
template <typename T>
void topKGatingGrad(const T *dWeights, const T *weights, const int32_t *experts,
                    const T *logits, T *dLogits, int64_t tokens,
                    int64_t numExperts, int64_t k) {
  std::vector<double> p(logits ? size_t(numExperts) : 0);
  std::vector<double> chosen(p.size());
  for (int64_t t = 0; t < tokens; ++t) {
    const T *w = weights + t * k, *dw = dWeights + t * k;
    double dot = 0;
    for (int64_t j = 0; j < k; ++j)
      dot += double(w[j]) * double(dw[j]);
    T *row = dLogits + t * numExperts;
    if (!logits) {
      std::fill(row, row + numExperts, T(0));
      for (int64_t j = 0; j < k; ++j)
        row[experts[t * k + j]] = T(double(w[j]) * (double(dw[j]) - dot));
      continue;
    }
    softmaxInDouble(logits + t * numExperts, p.data(), numExperts);
    std::fill(chosen.begin(), chosen.end(), 0.0);
    for (int64_t j = 0; j < k; ++j)
      chosen[size_t(experts[t * k + j])] += double(dw[j]);
    for (int64_t e = 0; e < numExperts; ++e)
      row[e] = T(p[size_t(e)] * (chosen[size_t(e)] - dot));
  }
}

/// A router's statistics over its tokens: `load[e]`, the choices of expert
/// e per token, and `probability[e]`, the mean softmax of the logits over
/// all experts; summed in double, in token order. Returns the index of a
/// choice outside [0, numExperts) (nothing written), or -1.
template <typename T>
int64_t routerStatistics(const T *logits, const int32_t *experts, T *load,
                         T *probability, int64_t tokens, int64_t numExperts,
                         int64_t k) {
  for (int64_t i = 0; i < tokens * k; ++i)
    if (experts[i] < 0 || experts[i] >= numExperts)
      return i;
  std::vector<double> count(size_t(numExperts), 0.0);
  std::vector<double> sum(size_t(numExperts), 0.0);
  std::vector<double> row(static_cast<size_t>(numExperts));
  for (int64_t i = 0; i < tokens * k; ++i)
    count[size_t(experts[i])] += 1.0;
  for (int64_t t = 0; t < tokens; ++t) {
    softmaxInDouble(logits + t * numExperts, row.data(), numExperts);
    for (int64_t e = 0; e < numExperts; ++e)
      sum[size_t(e)] += row[size_t(e)];
  }
  for (int64_t e = 0; e < numExperts; ++e) {
    load[e] = T(count[size_t(e)] / double(tokens));
    probability[e] = T(sum[size_t(e)] / double(tokens));
  }
  return -1;
}

/// The logits' gradient of routerStatistics's probability, for rows
/// `[0, rows)` of the `tokens` it averaged: each row's softmax `s`,
/// `dLogits[j] = s[j] * (dProbability[j] - dot(dProbability, s)) / tokens`.
template <typename T>
void routerProbabilityGrad(const T *dProbability, const T *logits, T *dLogits,
                           int64_t rows, int64_t tokens, int64_t numExperts) {
  std::vector<double> s(static_cast<size_t>(numExperts));
  for (int64_t t = 0; t < rows; ++t) {
    softmaxInDouble(logits + t * numExperts, s.data(), numExperts);
    double dot = 0;
    for (int64_t e = 0; e < numExperts; ++e)
      dot += double(dProbability[e]) * s[size_t(e)];
    for (int64_t e = 0; e < numExperts; ++e)
      dLogits[t * numExperts + e] =
          T(s[size_t(e)] * (double(dProbability[e]) - dot) / double(tokens));
  }
}

/// The load-balancing loss of `routers` routers:
/// `coefficient * numExperts * dot(mean load, mean probability)`.
template <typename T>
double loadBalancingLoss(const T *const *loads, const T *const *probabilities,
                         int64_t routers, int64_t numExperts,
                         double coefficient) {
  double dot = 0;
  for (int64_t e = 0; e < numExperts; ++e) {
    double load = 0, probability = 0;
    for (int64_t l = 0; l < routers; ++l) {
      load += double(loads[l][e]);
      probability += double(probabilities[l][e]);
    }
    dot += (load / double(routers)) * (probability / double(routers));
  }
  return coefficient * double(numExperts) * dot;
}

/// A row's largest logit and the sum of the exponentials after it, in
/// expert order (softmaxInDouble's constants; the CUDA backend's
/// softmaxRowOf): its log-sum-exp is top + log(total).
template <typename T>
void softmaxConstants(const T *row, int64_t n, double &top, double &total) {
  top = double(row[0]);
  total = 0;
  for (int64_t e = 1; e < n; ++e)
    top = std::max(top, double(row[e]));
  for (int64_t e = 0; e < n; ++e)
    total += std::exp(double(row[e]) - top);
}

/// The router z-loss of `tokens` rows of `numExperts` logits:
/// `coefficient * mean_t z[t]^2`, z[t] the log-sum-exp of row t, summed in
/// token order.
template <typename T>
double routerZLoss(const T *logits, int64_t tokens, int64_t numExperts,
                   double coefficient) {
  double sum = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    double top, total;
    softmaxConstants(logits + t * numExperts, numExperts, top, total);
    const double z = top + std::log(total);
    sum += z * z;
  }
  return coefficient * sum / double(tokens);
}

/// The logits' gradient of routerZLoss for rows `[0, rows)` of the
/// `tokens` it averaged: `grad * coefficient * 2 * z[t] * softmax[t, e] /
/// tokens`.
template <typename T>
void routerZLossGrad(double grad, const T *logits, T *dLogits, int64_t rows,
                     int64_t tokens, int64_t numExperts, double coefficient) {
  for (int64_t t = 0; t < rows; ++t) {
    const T *row = logits + t * numExperts;
    double top, total;
    softmaxConstants(row, numExperts, top, total);
    const double z = top + std::log(total);
    for (int64_t e = 0; e < numExperts; ++e)
      dLogits[t * numExperts + e] =
          T(grad * coefficient * 2.0 * z *
            (std::exp(double(row[e]) - top) / total) / double(tokens));
  }
}

/// Every router's probability gradient of loadBalancingLoss:
/// `grad * coefficient * numExperts * mean load / routers`.
template <typename T>
void loadBalancingLossGrad(double grad, const T *const *loads, T *dProbability,
                           int64_t routers, int64_t numExperts,
                           double coefficient) {
  for (int64_t e = 0; e < numExperts; ++e) {
    double load = 0;
    for (int64_t l = 0; l < routers; ++l)
      load += double(loads[l][e]);
    dProbability[e] = T(grad * coefficient * double(numExperts) * load /
                        (double(routers) * double(routers)));
  }
}

/// Numbers the experts' rows: `positions[i]` for choice i (token i / k),
/// sorted by expert, then token and choice; `offsets[e]` where expert e's
/// rows begin. With a `capacity` (> 0), each expert keeps at most that many
/// of its choices, packed in the same order: those of largest `weights`
/// (the earlier choice first among equal ones; a NaN weight ranks last),
/// or without weights its first; the others' positions are -1. Returns the
/// index of a choice outside [0, numExperts), or -1.
inline int64_t moeRoute(const int32_t *experts, int32_t *positions,
                        int32_t *offsets, int64_t choices, int64_t numExperts,
                        int64_t capacity = 0, const float *weights = nullptr) {
  std::vector<int64_t> next(size_t(numExperts) + 1, 0);
  for (int64_t i = 0; i < choices; ++i) {
    if (experts[i] < 0 || experts[i] >= numExperts)
      return i;
    ++next[size_t(experts[i]) + 1];
  }
  for (int64_t e = 0; e < numExperts; ++e)
    next[size_t(e) + 1] += next[size_t(e)];
  if (capacity <= 0) {
    for (int64_t e = 0; e <= numExperts; ++e)
      offsets[e] = int32_t(next[size_t(e)]);
    for (int64_t i = 0; i < choices; ++i)
      positions[i] = int32_t(next[size_t(experts[i])]++);
    return -1;
  }
  // Each expert's choices in order, then the ones it keeps.
  std::vector<int64_t> order(static_cast<size_t>(choices));
  std::vector<int64_t> fill(next.begin(), next.end() - 1);
  for (int64_t i = 0; i < choices; ++i)
    order[size_t(fill[size_t(experts[i])]++)] = i;
  auto rank = [&](int64_t i) {
    float w = weights[i];
    return std::isnan(w) ? -std::numeric_limits<float>::infinity() : w;
  };
  std::fill(positions, positions + choices, -1);
  int64_t row = 0;
  for (int64_t e = 0; e < numExperts; ++e) {
    offsets[e] = int32_t(row);
    auto begin = order.begin() + next[size_t(e)];
    auto end = order.begin() + next[size_t(e) + 1];
    if (end - begin > capacity) {
      if (weights) {
        std::nth_element(begin, begin + capacity - 1, end,
                         [&](int64_t a, int64_t b) {
                           float ra = rank(a), rb = rank(b);
                           return ra > rb || (ra == rb && a < b);
                         });
        std::sort(begin, begin + capacity);
      }
      end = begin + capacity;
    }
    for (auto it = begin; it != end; ++it)
      positions[*it] = int32_t(row++);
  }
  offsets[numExperts] = int32_t(row);
  return -1;
}

/// rows[positions[t, j]] = x[t] (times weights[t, j] when given); a
/// position of -1 (dropped) writes nothing.
template <typename T>
void moePermute(const T *x, const int32_t *positions, const T *weights, T *rows,
                int64_t tokens, int64_t k, int64_t hidden) {
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) {
      if (positions[t * k + j] < 0)
        continue; // Dropped by a capacity.
      T *row = rows + int64_t(positions[t * k + j]) * hidden;
      const T *in = x + t * hidden;
      if (!weights) {
        std::copy_n(in, hidden, row);
        continue;
      }
      T w = weights[t * k + j];
      for (int64_t h = 0; h < hidden; ++h)
        row[h] = in[h] * w;
    }
}

/// y[t] = sum over j of rows[positions[t, j]] (times weights[t, j] when
/// given), added in choice order.
/// A position of -1 (dropped) adds nothing.
template <typename T>
void moeUnpermute(const T *rows, const int32_t *positions, const T *weights,
                  T *y, int64_t tokens, int64_t k, int64_t hidden) {
  for (int64_t t = 0; t < tokens; ++t) {
    T *out = y + t * hidden;
    std::fill(out, out + hidden, T(0));
    for (int64_t j = 0; j < k; ++j) {
      if (positions[t * k + j] < 0)
        continue; // Dropped by a capacity: adds nothing.
      const T *row = rows + int64_t(positions[t * k + j]) * hidden;
      T w = weights ? weights[t * k + j] : T(1);
      for (int64_t h = 0; h < hidden; ++h)
        out[h] += row[h] * w;
    }
  }
}

/// dWeights[t, j] = dot(dY[t], rows[positions[t, j]]).
/// A position of -1 (dropped) has a gradient of 0.
template <typename T>
void moeWeightsGrad(const T *dY, const T *rows, const int32_t *positions,
                    T *dWeights, int64_t tokens, int64_t k, int64_t hidden) {
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) {
      if (positions[t * k + j] < 0) {
        dWeights[t * k + j] = T(0); // Dropped: no gradient.
        continue;
      }
      const T *row = rows + int64_t(positions[t * k + j]) * hidden;
      double dot = 0;
      for (int64_t h = 0; h < hidden; ++h)
        dot += double(dY[t * hidden + h]) * double(row[h]);
      dWeights[t * k + j] = T(dot);
    }
}

/// y[t] = sigmoid(gate[t]) * x[t] for rows x [tokens, hidden] and one
/// gate per token (a shared expert's output, Qwen2-MoE).
template <typename T>
void sigmoidGate(const T *x, const T *gate, T *y, int64_t tokens,
                 int64_t hidden) {
  for (int64_t t = 0; t < tokens; ++t) {
    T s = T(1.0 / (1.0 + std::exp(-double(gate[t]))));
    for (int64_t h = 0; h < hidden; ++h)
      y[t * hidden + h] = s * x[t * hidden + h];
  }
}

/// The gradient of sigmoidGate: dX[t] = s * dY[t] and
/// dGate[t] = s * (1 - s) * dot(dY[t], x[t]), s = sigmoid(gate[t]).
template <typename T>
void sigmoidGateGrad(const T *dY, const T *x, const T *gate, T *dX, T *dGate,
                     int64_t tokens, int64_t hidden) {
  for (int64_t t = 0; t < tokens; ++t) {
    double s = 1.0 / (1.0 + std::exp(-double(gate[t])));
    double dot = 0;
    for (int64_t h = 0; h < hidden; ++h) {
      dot += double(dY[t * hidden + h]) * double(x[t * hidden + h]);
      dX[t * hidden + h] = T(s) * dY[t * hidden + h];
    }
    dGate[t] = T(s * (1.0 - s) * dot);
  }
}

/// Grouped-query attention: head h of `y` [batch, kvHeads * groups, seq,
/// headDim] is head h / groups of `x`.
template <typename T>
void repeatKV(const T *x, T *y, int64_t batch, int64_t kvHeads, int64_t groups,
              int64_t inner) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k = 0; k < kvHeads; ++k)
      for (int64_t g = 0; g < groups; ++g)
        std::copy_n(x + (b * kvHeads + k) * inner, inner,
                    y + ((b * kvHeads + k) * groups + g) * inner);
}

/// The gradient of repeatKV: each kv head sums its group's heads.
template <typename T>
void repeatKVGrad(const T *dY, T *dX, int64_t batch, int64_t kvHeads,
                  int64_t groups, int64_t inner) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k = 0; k < kvHeads; ++k) {
      T *out = dX + (b * kvHeads + k) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        for (int64_t g = 0; g < groups; ++g)
          sum += double(dY[((b * kvHeads + k) * groups + g) * inner + i]);
        out[i] = T(sum);
      }
    }
}

//===----------------------------------------------------------------------===//
// Pointwise ops
//===----------------------------------------------------------------------===//

/// y = a * b elementwise (SwiGLU's gating).
template <typename T> void mul(const T *a, const T *b, T *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = a[i] * b[i];
}

/// y = x * sigmoid(x).
template <typename T> void silu(const T *x, T *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double v = double(x[i]);
    y[i] = T(v / (1.0 + std::exp(-v)));
  }
}

/// dX = dY * s * (1 + x * (1 - s)), s = sigmoid(x).
template <typename T> void siluGrad(const T *dY, const T *x, T *dX, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double v = double(x[i]);
    double s = 1.0 / (1.0 + std::exp(-v));
    dX[i] = T(double(dY[i]) * s * (1.0 + v * (1.0 - s)));
  }
}

/// y = cap * tanh(x / cap) (Gemma 2's soft cap of its logits).
template <typename T> void softcap(const T *x, T *y, int64_t n, double cap) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = T(cap * std::tanh(double(x[i]) / cap));
}

/// dX = dY * (1 - t^2), t = tanh(x / cap).
template <typename T>
void softcapGrad(const T *dY, const T *x, T *dX, int64_t n, double cap) {
  for (int64_t i = 0; i < n; ++i) {
    double t = std::tanh(double(x[i]) / cap);
    dX[i] = T(double(dY[i]) * (1.0 - t * t));
  }
}

/// y = a + b elementwise (the residual connection).
template <typename T> void add(const T *a, const T *b, T *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = a[i] + b[i];
}

/// y[r, c] = x[r, c] + bias[c]: the bias is broadcast over the leading
/// dimensions, which the caller folds into `rows`.
template <typename T>
void biasAdd(const T *x, const T *bias, T *y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = x[r * cols + c] + bias[c];
}

/// dBias[c] = sum over rows of dY[r, c]. Overwrites dBias.
template <typename T>
void biasAddGrad(const T *dY, T *dBias, int64_t rows, int64_t cols) {
  // Row-outer so that dY is read contiguously; a double accumulator per
  // column keeps the long sums accurate in f32.
  std::vector<double> acc(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      acc[c] += double(dY[r * cols + c]);
  for (int64_t c = 0; c < cols; ++c)
    dBias[c] = T(acc[c]);
}

namespace detail {
/// sqrt(2 / pi) and the cubic coefficient of the tanh GELU.
constexpr double geluK = 0.7978845608028654;
constexpr double geluC = 0.044715;
} // namespace detail

/// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), GPT-2's gelu_new.
template <typename T> void gelu(const T *x, T *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double v = double(x[i]);
    double t = std::tanh(detail::geluK * (v + detail::geluC * v * v * v));
    y[i] = T(0.5 * v * (1.0 + t));
  }
}

/// dX = dY * gelu'(x), the exact derivative of the tanh approximation:
/// 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
template <typename T> void geluGrad(const T *dY, const T *x, T *dX, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double v = double(x[i]);
    double t = std::tanh(detail::geluK * (v + detail::geluC * v * v * v));
    double du = detail::geluK * (1.0 + 3.0 * detail::geluC * v * v);
    double d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du;
    dX[i] = T(double(dY[i]) * d);
  }
}

/// Inverted dropout: y = x / (1 - p) where dropoutKeep says so, else 0. The
/// element index is `indexOffset` plus the position in the flat tensor, so a
/// prefix of the tensor draws the same mask as the whole, and a rank holding
/// a later part of the batch (offset by the elements before it) draws its
/// part of the single-device mask. p == 0 copies (bit-exactly).
/// Dropout is linear, so its gradient is this same kernel applied to dY with
/// the forward's stream and key.
template <typename T>
void dropout(const T *x, T *y, int64_t n, double p, uint32_t stream, RngKey key,
             uint64_t indexOffset = 0) {
  if (p <= 0.0) {
    std::copy(x, x + n, y);
    return;
  }
  double scale = detail::dropoutScale(p);
  uint32_t words[256];
  for (int64_t i0 = 0; i0 < n; i0 += 256) {
    int64_t count = std::min<int64_t>(256, n - i0);
    philoxWords(key.seed, indexOffset + uint64_t(i0), stream,
                uint32_t(key.step), count, words);
    for (int64_t j = 0; j < count; ++j)
      y[i0 + j] = keepsWord(words[j], p) ? T(double(x[i0 + j]) * scale) : T(0);
  }
}

//===----------------------------------------------------------------------===//
// Heads
//===----------------------------------------------------------------------===//

/// Views `in` [batch, seq, chunks * heads * headDim] as [batch, seq, chunks,
/// heads, headDim] and writes chunk c to outs[c] as [batch, heads, seq,
/// headDim]. Each copy moves one contiguous headDim run.
template <typename T>
void splitHeads(const T *in, T *const *outs, int64_t chunks, int64_t batch,
                int64_t seq, int64_t heads, int64_t headDim) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s) {
      const T *row = in + (b * seq + s) * chunks * heads * headDim;
      for (int64_t c = 0; c < chunks; ++c)
        for (int64_t h = 0; h < heads; ++h) {
          const T *src = row + (c * heads + h) * headDim;
          T *dst = outs[c] + ((b * heads + h) * seq + s) * headDim;
          std::copy(src, src + headDim, dst);
        }
    }
}

/// The exact inverse of splitHeads: ins[c] [batch, heads, seq, headDim] go to
/// chunk c of `out` [batch, seq, chunks * heads * headDim].
template <typename T>
void mergeHeads(const T *const *ins, T *out, int64_t chunks, int64_t batch,
                int64_t seq, int64_t heads, int64_t headDim) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s) {
      T *row = out + (b * seq + s) * chunks * heads * headDim;
      for (int64_t c = 0; c < chunks; ++c)
        for (int64_t h = 0; h < heads; ++h) {
          const T *src = ins[c] + ((b * heads + h) * seq + s) * headDim;
          std::copy(src, src + headDim, row + (c * heads + h) * headDim);
        }
    }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace detail {
/// Dot product of two rows of `n` elements, in double.
template <typename T> double dot(const T *a, const T *b, int64_t n) {
  double sum = 0;
  for (int64_t d = 0; d < n; ++d)
    sum += double(a[d]) * double(b[d]);
  return sum;
}

/// The causal softmax row of query i: probs[j] for j <= i, from the scores
/// scale * q_i . k_j, max-subtracted so exp never overflows. Keys j > i are
/// masked (minus infinity before the softmax), i.e. probability exactly 0,
/// so only the first i + 1 entries are written.
/// The first key query i sees: 0, or with a sliding `window` (> 0) the
/// first of the `window` keys up to its own.
inline int64_t firstVisibleKey(int64_t i, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
}

/// With a sliding `window` (> 0) the keys before firstVisibleKey are
/// masked too (probability 0).
template <typename T>
void softmaxRow(const T *qi, const T *k, int64_t i, int64_t headDim,
                double scale, double *probs, int64_t window = 0) {
  int64_t first = firstVisibleKey(i, window);
  std::fill(probs, probs + first, 0.0);
  double maxScore = -std::numeric_limits<double>::infinity();
  for (int64_t j = first; j <= i; ++j) {
    probs[j] = scale * dot(qi, k + j * headDim, headDim);
    maxScore = std::max(maxScore, probs[j]);
  }
  double sum = 0;
  for (int64_t j = first; j <= i; ++j) {
    probs[j] = std::exp(probs[j] - maxScore);
    sum += probs[j];
  }
  for (int64_t j = first; j <= i; ++j)
    probs[j] /= sum;
}
} // namespace detail

/// Causal scaled-dot-product attention per (batch, head), all operands
/// [batch, heads, seq, headDim]:
///   P = softmax(mask(Q K^T * scale)),  out = dropout(P) V,
/// where mask hides the keys after the query (and, with a sliding `window`,
/// those window or more before it), and dropout keeps P[b, h, i, j] by
/// dropoutKeep at the global index
/// ((b * heads + h) * seq + i) * seq + j and scales kept values by 1/(1-p).
/// One query row at a time, so nothing seq x seq is materialised. Only the
/// (batch, head) pairs [bhBegin, bhEnd) are computed (bhEnd < 0: all), so
/// that threads can share the pairs.
template <typename T>
void attention(const T *q, const T *k, const T *v, T *out, int64_t batch,
               int64_t heads, int64_t seq, int64_t headDim, double scale,
               double p, uint32_t stream, RngKey key, uint64_t indexOffset = 0,
               int64_t headOffset = 0, int64_t headsTotal = 0,
               int64_t bhBegin = 0, int64_t bhEnd = -1, int64_t window = 0) {
  // Heads split across ranks: head h here is head headOffset + h of
  // headsTotal on one device, whose mask index it uses.
  if (headsTotal == 0)
    headsTotal = heads;
  std::vector<double> probs(seq), acc(headDim);
  double keepScale = detail::dropoutScale(p);
  if (bhEnd < 0)
    bhEnd = batch * heads;
  for (int64_t bh = bhBegin; bh < bhEnd; ++bh) {
    const T *qh = q + bh * seq * headDim;
    const T *kh = k + bh * seq * headDim;
    const T *vh = v + bh * seq * headDim;
    for (int64_t i = 0; i < seq; ++i) {
      detail::softmaxRow(qh + i * headDim, kh, i, headDim, scale, probs.data(),
                         window);
      if (p > 0.0) {
        uint64_t rowIndex = detail::maskRowIndex(
            indexOffset, bh, heads, headsTotal, headOffset, seq, i);
        for (int64_t j = 0; j <= i; ++j)
          probs[j] = dropoutKeep(key, stream, rowIndex + uint64_t(j), p)
                         ? probs[j] * keepScale
                         : 0.0;
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j <= i; ++j) {
        const T *vj = vh + j * headDim;
        for (int64_t d = 0; d < headDim; ++d)
          acc[d] += probs[j] * double(vj[d]);
      }
      T *oi = out + (bh * seq + i) * headDim;
      for (int64_t d = 0; d < headDim; ++d)
        oi[d] = T(acc[d]);
    }
  }
}

/// The gradients of attention w.r.t. q, k and v, given dOut. Recomputes P and
/// redraws the same dropout mask (same key, stream and indices), then per
/// query row i, with Pd = dropout(P):
///   dV_j += Pd_ij dO_i
///   dPd_ij = dO_i . v_j,  dP_ij = keep_ij ? dPd_ij / (1-p) : 0
///   dS_ij = P_ij (dP_ij - sum_j' P_ij' dP_ij')
///   dQ_i = scale sum_j dS_ij k_j,  dK_j += scale dS_ij q_i.
/// dK and dV gather contributions from every query row, so they accumulate
/// in double scratch per (batch, head). Overwrites dQ, dK and dV of the
/// pairs [bhBegin, bhEnd) (bhEnd < 0: all).
template <typename T>
void attentionGrad(const T *dOut, const T *q, const T *k, const T *v, T *dQ,
                   T *dK, T *dV, int64_t batch, int64_t heads, int64_t seq,
                   int64_t headDim, double scale, double p, uint32_t stream,
                   RngKey key, uint64_t indexOffset = 0, int64_t headOffset = 0,
                   int64_t headsTotal = 0, int64_t bhBegin = 0,
                   int64_t bhEnd = -1, int64_t window = 0) {
  if (headsTotal == 0)
    headsTotal = heads;
  std::vector<double> probs(seq), dProbs(seq), accQ(headDim);
  std::vector<double> accK(seq * headDim), accV(seq * headDim);
  double keepScale = detail::dropoutScale(p);
  if (bhEnd < 0)
    bhEnd = batch * heads;
  for (int64_t bh = bhBegin; bh < bhEnd; ++bh) {
    const int64_t base = bh * seq * headDim;
    const T *qh = q + base, *kh = k + base, *vh = v + base;
    const T *dOh = dOut + base;
    std::fill(accK.begin(), accK.end(), 0.0);
    std::fill(accV.begin(), accV.end(), 0.0);
    for (int64_t i = 0; i < seq; ++i) {
      const T *qi = qh + i * headDim;
      const T *dOi = dOh + i * headDim;
      detail::softmaxRow(qi, kh, i, headDim, scale, probs.data(), window);
      uint64_t rowIndex = detail::maskRowIndex(indexOffset, bh, heads,
                                               headsTotal, headOffset, seq, i);
      // dP = the gradient w.r.t. the softmax output, through the dropout;
      // dV takes the dropped-out probabilities.
      double rowDot = 0;
      for (int64_t j = 0; j <= i; ++j) {
        double keep = p > 0.0
                          ? (dropoutKeep(key, stream, rowIndex + uint64_t(j), p)
                                 ? keepScale
                                 : 0.0)
                          : 1.0;
        const T *vj = vh + j * headDim;
        double *dvj = accV.data() + j * headDim;
        double pd = probs[j] * keep;
        for (int64_t d = 0; d < headDim; ++d)
          dvj[d] += pd * double(dOi[d]);
        dProbs[j] = keep * detail::dot(dOi, vj, headDim);
        rowDot += probs[j] * dProbs[j];
      }
      // Softmax backward, then the two matmuls of the scores.
      std::fill(accQ.begin(), accQ.end(), 0.0);
      for (int64_t j = 0; j <= i; ++j) {
        double dS = probs[j] * (dProbs[j] - rowDot) * scale;
        const T *kj = kh + j * headDim;
        double *dkj = accK.data() + j * headDim;
        for (int64_t d = 0; d < headDim; ++d) {
          accQ[d] += dS * double(kj[d]);
          dkj[d] += dS * double(qi[d]);
        }
      }
      T *dQi = dQ + base + i * headDim;
      for (int64_t d = 0; d < headDim; ++d)
        dQi[d] = T(accQ[d]);
    }
    for (int64_t e = 0; e < seq * headDim; ++e) {
      dK[base + e] = T(accK[e]);
      dV[base + e] = T(accV[e]);
    }
  }
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

namespace detail {
/// e^x in float for x in [-87, 88] (clamped outside; the max-subtracted
/// logits are at most 0), within 2 ulp: Cephes' polynomial, branch-free so
/// that the loops over a row vectorize (libm's expf is a call per element).
/// Rounds x log2(e) to the nearest integer by adding and subtracting
/// 1.5 * 2^23.
inline float expClamped(float input) {
  // NaN would reach the int conversion below (undefined): compute e^0 and
  // return the NaN.
  float x = input != input ? 0.0f : std::min(std::max(input, -87.0f), 88.0f);
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float z = r * r;
  float p =
      (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) *
             r +
         4.1665795894e-2f) *
            r +
        1.6666665459e-1f) *
           r +
       5.0000001201e-1f) *
          z +
      r + 1.0f;
  int32_t e = int32_t(n) + 127;
  uint32_t bits = uint32_t(e) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return input != input ? input : p * scale;
}

/// log(sum_v exp(row[v])), max-subtracted, in double (the double
/// instantiation the unit tests check against finite differences).
template <typename T> double logSumExp(const T *row, int64_t vocab) {
  double maxLogit = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < vocab; ++c)
    maxLogit = std::max(maxLogit, double(row[c]));
  double sum = 0;
  for (int64_t c = 0; c < vocab; ++c)
    sum += std::exp(double(row[c]) - maxLogit);
  return maxLogit + std::log(sum);
}

/// The float logits' version (the CPU backend's): scratch[v] =
/// exp(row[v] - max) in a loop that vectorizes, summed in double; returns
/// the max and the sum, so that softmax(row)[v] = scratch[v] / sum.
inline void expRow(const float *row, int64_t vocab, float *scratch,
                   float &maxLogit, double &sum) {
  maxLogit = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < vocab; ++c)
    maxLogit = row[c] > maxLogit ? row[c] : maxLogit;
  for (int64_t c = 0; c < vocab; ++c)
    scratch[c] = expClamped(row[c] - maxLogit);
  // Four partial sums in a fixed order: the adds do not wait on each
  // other (one chain was a third of the row's time).
  double parts[4] = {0, 0, 0, 0};
  int64_t c = 0;
  for (; vocab - c >= 4; c += 4)
    for (int l = 0; l < 4; ++l)
      parts[l] += double(scratch[c + l]);
  sum = 0;
  for (; c < vocab; ++c)
    sum += double(scratch[c]);
  sum += (parts[0] + parts[1]) + (parts[2] + parts[3]);
}
} // namespace detail

/// Each row's loss, logsumexp(logits[r, :]) - logits[r, labels[r]], for
/// rows [begin, end): threads compute rows apart, and the mean is summed in
/// row order (crossEntropyMean), whatever the split. Rows are `vocab` long,
/// of which the first `valid` (< 0: all) are real: a padded vocabulary's
/// other columns are masked out.
template <typename T>
void crossEntropyRows(const T *logits, const int32_t *labels, double *losses,
                      int64_t begin, int64_t end, int64_t vocab,
                      int64_t valid = -1) {
  if (valid < 0 || valid > vocab)
    valid = vocab;
  std::vector<float> scratch(std::is_same_v<T, float> ? size_t(valid) : 0);
  for (int64_t r = begin; r < end; ++r) {
    const T *row = logits + r * vocab;
    if constexpr (std::is_same_v<T, float>) {
      float maxLogit;
      double sum;
      detail::expRow(row, valid, scratch.data(), maxLogit, sum);
      losses[r] = double(maxLogit) + std::log(sum);
    } else {
      losses[r] = detail::logSumExp(row, valid);
    }
    int64_t label = labels[r];
    if (label >= 0 && label < valid)
      losses[r] -= double(row[label]);
  }
}

template <typename T> T crossEntropyMean(const std::vector<double> &losses) {
  if (losses.empty())
    return T(0);
  double total = 0;
  for (double loss : losses)
    total += loss;
  return T(total / double(losses.size()));
}

/// mean over rows of logsumexp(logits[r, :]) - logits[r, labels[r]], as
/// torch.nn.functional.cross_entropy with mean reduction. Labels are assumed
/// in [0, vocab) (no ignore index); an out-of-range label contributes its
/// logsumexp only rather than reading outside the row. Zero rows give 0.
template <typename T>
T crossEntropy(const T *logits, const int32_t *labels, int64_t rows,
               int64_t vocab, int64_t valid = -1) {
  if (rows <= 0)
    return T(0);
  std::vector<double> losses(size_t(rows), 0.0);
  crossEntropyRows(logits, labels, losses.data(), 0, rows, vocab, valid);
  return crossEntropyMean<T>(losses);
}

/// dLogits = dLoss * (softmax(logits) - onehot(labels)) / rows, for rows
/// [begin, end) (end < 0: all). Overwrites. Of each row's `vocab` columns
/// the first `valid` (< 0: all) are real; the padding's gradient is zero.
template <typename T>
void crossEntropyGrad(T dLoss, const T *logits, const int32_t *labels,
                      T *dLogits, int64_t rows, int64_t vocab,
                      int64_t begin = 0, int64_t end = -1, int64_t valid = -1) {
  double factor = double(dLoss) / double(rows);
  if (end < 0)
    end = rows;
  if (valid < 0 || valid > vocab)
    valid = vocab;
  std::vector<float> scratch(std::is_same_v<T, float> ? size_t(valid) : 0);
  for (int64_t r = begin; r < end; ++r) {
    const T *row = logits + r * vocab;
    T *drow = dLogits + r * vocab;
    int64_t label = labels[r];
    if constexpr (std::is_same_v<T, float>) {
      // One exp per logit, shared with the sum: softmax = exp / sum.
      float maxLogit;
      double sum;
      detail::expRow(row, valid, scratch.data(), maxLogit, sum);
      float perExp = float(factor / sum);
      for (int64_t c = 0; c < valid; ++c)
        drow[c] = scratch[c] * perExp;
      if (label >= 0 && label < valid)
        drow[label] = float(factor * (double(scratch[label]) / sum - 1.0));
    } else {
      double lse = detail::logSumExp(row, valid);
      for (int64_t c = 0; c < valid; ++c) {
        double prob = std::exp(double(row[c]) - lse);
        drow[c] = T(factor * (prob - (c == label ? 1.0 : 0.0)));
      }
    }
    std::fill(drow + valid, drow + vocab, T(0));
  }
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

/// sum of x^2 in double: one operand's share of the global gradient norm.
template <typename T> double sumOfSquares(const T *x, int64_t n) {
  // Eight independent partial sums (in a fixed order), so that the adds do
  // not wait on each other.
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; n - i >= 8; i += 8)
    for (int l = 0; l < 8; ++l)
      lanes[l] += double(x[i + l]) * double(x[i + l]);
  double sum = 0;
  for (; i < n; ++i)
    sum += double(x[i]) * double(x[i]);
  for (double lane : lanes)
    sum += lane;
  return sum;
}

/// One AdamW step as torch.optim.AdamW (single tensor, no amsgrad), in place
/// on param, expAvg and expAvgSq:
///   g = grad * gradScale
///   p -= lr * weightDecay * p                       (only with applyDecay)
///   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2
///   p -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
/// `step` counts from 1 (the caller rejects smaller values). The arithmetic
/// runs in double and rounds once per stored value. A non-finite gradScale
/// (the step's gradient norm was not finite) skips the update: nothing is
/// written.
template <typename T>
void adamw(T *param, const T *grad, T *expAvg, T *expAvgSq, int64_t n,
           double lr, double beta1, double beta2, double eps,
           double weightDecay, int64_t step, double gradScale,
           bool applyDecay) {
  if (!std::isfinite(gradScale))
    return;
  double stepSize = lr / (1.0 - std::pow(beta1, double(step)));
  double bias2Sqrt = std::sqrt(1.0 - std::pow(beta2, double(step)));
  double decay = applyDecay ? lr * weightDecay : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double g = double(grad[i]) * gradScale;
    double p = double(param[i]);
    p -= decay * p;
    double m = beta1 * double(expAvg[i]) + (1.0 - beta1) * g;
    double v = beta2 * double(expAvgSq[i]) + (1.0 - beta2) * g * g;
    p -= stepSize * m / (std::sqrt(v) / bias2Sqrt + eps);
    expAvg[i] = T(m);
    expAvgSq[i] = T(v);
    param[i] = T(p);
  }
}

} // namespace cpu
} // namespace mtrt

#endif // MTRT_CPU_HOSTKERNELS_H
