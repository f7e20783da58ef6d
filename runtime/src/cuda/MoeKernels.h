//===- MoeKernels.h - A mixture of experts' CUDA kernels --------*- C++ -*-===//
//
// The CUDA backend's kernels for a mixture of experts (mt.top_k_gating,
// mt.moe_route and its permutations, the grouped GEMMs, the router's
// statistics, load-balancing loss and z-loss, Qwen2-MoE's sigmoid gate), as
// functions of one work item, like DeviceKernels.h's: nvcc builds each as a
// grid-stride kernel (MoeKernels.cu), and MoeDeviceKernelsTest runs every
// item on the CPU against the CPU backend's kernels (HostKernels.h), so
// their index arithmetic and numerics are tested without a GPU.
//
// Sums run in double in the CPU backend's order, so the results are its
// bits but for the device's exp (within an ulp of glibc's) and the grouped
// GEMMs, which sum in double where OpenBLAS sums in float.
//
// The device reads a routing as it finds it: a choice naming no expert, or
// a position outside the rows, counts as dropped (it writes and adds
// nothing), where the CPU backend stops with an error. Only a program
// whose commands corrupt each other has one: mt.top_k_gating writes
// experts in range and mt.moe_route positions within the rows.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_MOEKERNELS_H
#define MTRT_CUDA_MOEKERNELS_H

#include "cuda/DeviceKernels.h"

namespace mtrt::gpu {

//===----------------------------------------------------------------------===//
// Gating: each token's k largest logits and their softmax
//===----------------------------------------------------------------------===//

/// A logit as the gating ranks it: a NaN below every number.
MTK_HD double gatingKey(float logit) {
  double value = double(logit);
  return value == value ? value : -double(INFINITY);
}

/// Token t of topKGating: its k largest logits' experts (the lower expert
/// first among equal ones), found by k passes over the row, and the
/// softmax of those k (unnormalized: their probabilities among every
/// expert, the chosen summed first and the others in expert order).
MTK_HD void topKGatingItem(int64_t t, const float *logits, float *weights,
                           int32_t *experts, int64_t numExperts, int64_t k,
                           bool unnormalized) {
  const float *row = logits + t * numExperts;
  int32_t *chosen = experts + t * k;
  auto taken = [&](int64_t e, int64_t before) {
    for (int64_t j = 0; j < before; ++j)
      if (chosen[j] == e)
        return true;
    return false;
  };
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t e = 0; e < numExperts; ++e)
      if (!taken(e, j) &&
          (best < 0 || gatingKey(row[e]) > gatingKey(row[best])))
        best = e;
    chosen[j] = int32_t(best);
  }
  const double top = double(row[chosen[0]]);
  double sum = 0;
  for (int64_t j = 0; j < k; ++j)
    sum += exp(double(row[chosen[j]]) - top);
  if (unnormalized)
    for (int64_t e = 0; e < numExperts; ++e)
      if (!taken(e, k))
        sum += exp(double(row[e]) - top);
  for (int64_t j = 0; j < k; ++j)
    weights[t * k + j] = float(exp(double(row[chosen[j]]) - top) / sum);
}

/// The largest of a row's logits and the sum of their exponentials after
/// it: the softmax as HostKernels.h's softmaxInDouble computes it.
struct SoftmaxRow {
  double top = 0, total = 0;
};

MTK_HD SoftmaxRow softmaxRowOf(const float *row, int64_t n) {
  SoftmaxRow s;
  s.top = double(row[0]);
  for (int64_t e = 1; e < n; ++e)
    s.top = double(row[e]) > s.top ? double(row[e]) : s.top;
  for (int64_t e = 0; e < n; ++e)
    s.total += exp(double(row[e]) - s.top);
  return s;
}

/// Token t of topKGatingGrad: its row of the logits' gradient.
/// `logits` null: renormalized weights, into the chosen experts' logits.
MTK_HD void topKGatingGradItem(int64_t t, const float *dWeights,
                               const float *weights, const int32_t *experts,
                               const float *logits, float *dLogits,
                               int64_t numExperts, int64_t k) {
  const float *w = weights + t * k, *dw = dWeights + t * k;
  const int32_t *chosen = experts + t * k;
  double dot = 0;
  for (int64_t j = 0; j < k; ++j)
    dot += double(w[j]) * double(dw[j]);
  float *row = dLogits + t * numExperts;
  if (!logits) {
    for (int64_t e = 0; e < numExperts; ++e)
      row[e] = 0.0f;
    for (int64_t j = 0; j < k; ++j)
      if (chosen[j] >= 0 && chosen[j] < numExperts)
        row[chosen[j]] = float(double(w[j]) * (double(dw[j]) - dot));
    return;
  }
  const float *x = logits + t * numExperts;
  const SoftmaxRow s = softmaxRowOf(x, numExperts);
  for (int64_t e = 0; e < numExperts; ++e) {
    double p = exp(double(x[e]) - s.top) / s.total;
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j)
      if (chosen[j] == e)
        sum += double(dw[j]);
    row[e] = float(p * (sum - dot));
  }
}

//===----------------------------------------------------------------------===//
// The router's statistics and the load-balancing loss
//===----------------------------------------------------------------------===//

/// Pass 1 of routerStatistics, token t: its row's softmax constants into
/// stats[2t] (the largest logit) and stats[2t + 1] (the sum).
MTK_HD void routerRowItem(int64_t t, const float *logits, double *stats,
                          int64_t numExperts) {
  const SoftmaxRow s = softmaxRowOf(logits + t * numExperts, numExperts);
  stats[2 * t] = s.top;
  stats[2 * t + 1] = s.total;
}

/// Pass 2, expert e: load[e], its share of the `tokens * k` choices per
/// token, and probability[e], its mean softmax, summed in token order.
MTK_HD void routerStatisticsItem(int64_t e, const float *logits,
                                 const int32_t *experts, const double *stats,
                                 float *load, float *probability,
                                 int64_t tokens, int64_t numExperts,
                                 int64_t k) {
  double count = 0, sum = 0;
  for (int64_t i = 0; i < tokens * k; ++i)
    count += experts[i] == e ? 1.0 : 0.0;
  for (int64_t t = 0; t < tokens; ++t)
    sum += exp(double(logits[t * numExperts + e]) - stats[2 * t]) /
           stats[2 * t + 1];
  load[e] = float(count / double(tokens));
  probability[e] = float(sum / double(tokens));
}

/// Token t of routerProbabilityGrad (of `tokens` averaged).
MTK_HD void routerProbabilityGradItem(int64_t t, const float *dProbability,
                                      const float *logits, float *dLogits,
                                      int64_t tokens, int64_t numExperts) {
  const float *x = logits + t * numExperts;
  const SoftmaxRow s = softmaxRowOf(x, numExperts);
  double dot = 0;
  for (int64_t e = 0; e < numExperts; ++e)
    dot += double(dProbability[e]) * (exp(double(x[e]) - s.top) / s.total);
  for (int64_t e = 0; e < numExperts; ++e) {
    double p = exp(double(x[e]) - s.top) / s.total;
    dLogits[t * numExperts + e] =
        float(p * (double(dProbability[e]) - dot) / double(tokens));
  }
}

/// loadBalancingLoss of `routers` routers, one item: into *loss.
MTK_HD void loadBalancingLossItem(const float *const *loads,
                                  const float *const *probabilities,
                                  int64_t routers, int64_t numExperts,
                                  double coefficient, float *loss) {
  double dot = 0;
  for (int64_t e = 0; e < numExperts; ++e) {
    double load = 0, probability = 0;
    for (int64_t l = 0; l < routers; ++l) {
      load += double(loads[l][e]);
      probability += double(probabilities[l][e]);
    }
    dot += (load / double(routers)) * (probability / double(routers));
  }
  *loss = float(coefficient * double(numExperts) * dot);
}

/// Expert e of loadBalancingLossGrad, the loss's gradient read from
/// *grad (a device scalar).
MTK_HD void loadBalancingLossGradItem(int64_t e, const float *grad,
                                      const float *const *loads,
                                      float *dProbability, int64_t routers,
                                      int64_t numExperts, double coefficient) {
  double load = 0;
  for (int64_t l = 0; l < routers; ++l)
    load += double(loads[l][e]);
  dProbability[e] = float(double(*grad) * coefficient * double(numExperts) *
                          load / (double(routers) * double(routers)));
}

/// Pass 1 of routerZLoss, token t: z[t], its logits' log-sum-exp.
MTK_HD void routerZRowItem(int64_t t, const float *logits, double *z,
                           int64_t numExperts) {
  const SoftmaxRow s = softmaxRowOf(logits + t * numExperts, numExperts);
  z[t] = s.top + log(s.total);
}

/// Pass 2, one item: *loss = coefficient * mean_t z[t]^2, summed in token
/// order.
MTK_HD void routerZLossItem(const double *z, int64_t tokens, double coefficient,
                            float *loss) {
  double sum = 0;
  for (int64_t t = 0; t < tokens; ++t)
    sum += z[t] * z[t];
  *loss = float(coefficient * sum / double(tokens));
}

/// Token t of routerZLossGrad, the loss's gradient read from *grad (a
/// device scalar).
MTK_HD void routerZLossGradItem(int64_t t, const float *grad,
                                const float *logits, float *dLogits,
                                int64_t tokens, int64_t numExperts,
                                double coefficient) {
  const float *x = logits + t * numExperts;
  const SoftmaxRow s = softmaxRowOf(x, numExperts);
  const double z = s.top + log(s.total);
  for (int64_t e = 0; e < numExperts; ++e)
    dLogits[t * numExperts + e] =
        float(double(*grad) * coefficient * 2.0 * z *
              (exp(double(x[e]) - s.top) / s.total) / double(tokens));
}

//===----------------------------------------------------------------------===//
// The route: a stable counting sort of the choices by expert
//===----------------------------------------------------------------------===//
//
// Four passes, no atomics, as the embedding gradient's sort
// (DeviceKernels.h): each choice's item reads every choice, O(choices^2)
// compares (4.3e9 at 8192 tokens of 8 choices; not yet timed on a GPU).

/// Pass 1, expert e: count[e], how many choices name it.
MTK_HD void moeRouteCountItem(int64_t e, const int32_t *experts,
                              int64_t choices, int32_t *count) {
  int64_t n = 0;
  for (int64_t i = 0; i < choices; ++i)
    n += experts[i] == e;
  count[e] = int32_t(n);
}

/// How many of expert e's `count` choices it keeps under `capacity` (at
/// most 0: every one).
MTK_HD int64_t keptOf(int64_t count, int64_t capacity) {
  return capacity > 0 && count > capacity ? capacity : count;
}

/// Pass 2 (with a capacity), choice i: kept[i], whether its expert keeps
/// it: every choice of an expert within its capacity, else those of
/// largest `weights` (the earlier among equal ones; a NaN ranks last), or
/// without weights the first.
MTK_HD void moeRouteKeepItem(int64_t i, const int32_t *experts,
                             const float *weights, const int32_t *count,
                             int64_t choices, int64_t numExperts,
                             int64_t capacity, int32_t *kept) {
  const int64_t e = experts[i];
  if (e < 0 || e >= numExperts) {
    kept[i] = 0;
    return;
  }
  if (count[e] <= capacity) {
    kept[i] = 1;
    return;
  }
  auto rank = [&](int64_t u) {
    float w = weights[u];
    return w == w ? double(w) : -double(INFINITY);
  };
  int64_t ahead = 0;
  for (int64_t u = 0; u < choices; ++u) {
    if (experts[u] != e || u == i)
      continue;
    if (!weights)
      ahead += u < i;
    else
      ahead += rank(u) > rank(i) || (rank(u) == rank(i) && u < i);
  }
  kept[i] = ahead < capacity;
}

/// Pass 3, choice i: positions[i], its row: the rows of the experts
/// before its own, then its expert's kept choices before it; -1 where it
/// is dropped (`kept` is read only with a capacity).
MTK_HD void moeRoutePlaceItem(int64_t i, const int32_t *experts,
                              const int32_t *count, const int32_t *kept,
                              int64_t choices, int64_t numExperts,
                              int64_t capacity, int32_t *positions) {
  const int64_t e = experts[i];
  if (e < 0 || e >= numExperts || (capacity > 0 && !kept[i])) {
    positions[i] = -1;
    return;
  }
  int64_t place = 0;
  for (int64_t other = 0; other < e; ++other)
    place += keptOf(count[other], capacity);
  for (int64_t u = 0; u < i; ++u)
    place += experts[u] == e && (capacity <= 0 || kept[u]);
  positions[i] = int32_t(place);
}

/// Pass 3 too, e in [0, numExperts]: offsets[e], where expert e's rows
/// begin (offsets[numExperts]: the rows any expert has).
MTK_HD void moeRouteOffsetItem(int64_t e, const int32_t *count,
                               int64_t capacity, int32_t *offsets) {
  int64_t at = 0;
  for (int64_t other = 0; other < e; ++other)
    at += keptOf(count[other], capacity);
  offsets[e] = int32_t(at);
}

//===----------------------------------------------------------------------===//
// Permutations between tokens and the experts' rows
//===----------------------------------------------------------------------===//

/// Element i of choice i / hidden's row: rows[positions[c]] = x[c / k]
/// (times weights[c] when given); nothing for a dropped choice.
MTK_HD void moePermuteItem(int64_t i, const float *x, const int32_t *positions,
                           const float *weights, float *rows, int64_t k,
                           int64_t hidden, int64_t rowCount) {
  const int64_t c = i / hidden, h = i % hidden;
  const int64_t at = positions[c];
  if (at < 0 || at >= rowCount)
    return;
  const float in = x[(c / k) * hidden + h];
  rows[at * hidden + h] = weights ? in * weights[c] : in;
}

/// Element i of y [tokens, hidden]: its token's rows added in choice
/// order (times their weights when given), in float as the CPU adds them.
MTK_HD void moeUnpermuteItem(int64_t i, const float *rows,
                             const int32_t *positions, const float *weights,
                             float *y, int64_t k, int64_t hidden,
                             int64_t rowCount) {
  const int64_t t = i / hidden, h = i % hidden;
  float sum = 0.0f;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t at = positions[t * k + j];
    if (at < 0 || at >= rowCount)
      continue;
    sum += rows[at * hidden + h] * (weights ? weights[t * k + j] : 1.0f);
  }
  y[i] = sum;
}

/// Choice c of moeWeightsGrad: dot(dY[c / k], rows[positions[c]]), or 0
/// for a dropped choice.
MTK_HD void moeWeightsGradItem(int64_t c, const float *dY, const float *rows,
                               const int32_t *positions, float *dWeights,
                               int64_t k, int64_t hidden, int64_t rowCount) {
  const int64_t at = positions[c];
  if (at < 0 || at >= rowCount) {
    dWeights[c] = 0.0f;
    return;
  }
  const float *dy = dY + (c / k) * hidden, *row = rows + at * hidden;
  double dot = 0;
  for (int64_t h = 0; h < hidden; ++h)
    dot += double(dy[h]) * double(row[h]);
  dWeights[c] = float(dot);
}

//===----------------------------------------------------------------------===//
// Qwen2-MoE's shared expert gate
//===----------------------------------------------------------------------===//

/// Element i of y [tokens, hidden] = sigmoid(gate[t]) * x.
MTK_HD void sigmoidGateItem(int64_t i, const float *x, const float *gate,
                            float *y, int64_t hidden) {
  const float s = float(1.0 / (1.0 + exp(-double(gate[i / hidden]))));
  y[i] = s * x[i];
}

/// Token t of sigmoidGateGrad: its row of dX and its dGate.
MTK_HD void sigmoidGateGradItem(int64_t t, const float *dY, const float *x,
                                const float *gate, float *dX, float *dGate,
                                int64_t hidden) {
  const double s = 1.0 / (1.0 + exp(-double(gate[t])));
  double dot = 0;
  for (int64_t h = 0; h < hidden; ++h) {
    const int64_t at = t * hidden + h;
    dot += double(dY[at]) * double(x[at]);
    dX[at] = float(s) * dY[at];
  }
  dGate[t] = float(s * (1.0 - s) * dot);
}

//===----------------------------------------------------------------------===//
// Grouped GEMMs: rows offsets[e] to offsets[e + 1] are expert e's
//===----------------------------------------------------------------------===//

/// The expert whose rows hold `row`, or -1 past the last expert's (a
/// binary search of the offsets; offsets out of order give some expert in
/// range, never an address outside it).
MTK_HD int64_t expertOfRow(const int32_t *offsets, int64_t numExperts,
                           int64_t row) {
  if (row < offsets[0] || row >= offsets[numExperts])
    return -1;
  int64_t lo = 0, hi = numExperts - 1; // offsets[lo] <= row
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= row)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// Element i of y [rows, n] = x [rows, k] times its row's expert's weight
/// ([k, n], or [n, k] with `transposeB`); 0 past the last expert's rows.
/// One dot product an item, summed in double.
MTK_HD void groupedMatmulItem(int64_t i, const float *x, const int32_t *offsets,
                              const float *const *weights, float *y,
                              int64_t numExperts, int64_t k, int64_t n,
                              bool transposeB) {
  const int64_t r = i / n, c = i % n;
  const int64_t e = expertOfRow(offsets, numExperts, r);
  if (e < 0) {
    y[i] = 0.0f;
    return;
  }
  const float *xr = x + r * k, *w = weights[e];
  double sum = 0;
  for (int64_t j = 0; j < k; ++j)
    sum += double(xr[j]) * double(transposeB ? w[c * k + j] : w[j * n + c]);
  y[i] = float(sum);
}

/// Element i of the experts' weight gradients, expert i / (k * n)'s:
/// [n, k] = dY_e^T x_e with `transposeB`, else [k, n] = x_e^T dY_e, over
/// its rows (0 for an expert without any; offsets past the `rows` are
/// read as `rows`).
MTK_HD void groupedMatmulWeightGradItem(int64_t i, const float *dY,
                                        const float *x, const int32_t *offsets,
                                        float *const *grads, int64_t rows,
                                        int64_t k, int64_t n, bool transposeB) {
  const int64_t e = i / (k * n), within = i % (k * n);
  const int64_t a = transposeB ? within / k : within / n;
  const int64_t b = transposeB ? within % k : within % n;
  const int64_t begin = offsets[e] < 0 ? 0 : offsets[e];
  const int64_t end = offsets[e + 1] < rows ? offsets[e + 1] : rows;
  double sum = 0;
  for (int64_t r = begin; r < end; ++r)
    sum += transposeB ? double(dY[r * n + a]) * double(x[r * k + b])
                      : double(x[r * k + a]) * double(dY[r * n + b]);
  grads[e][within] = float(sum);
}

} // namespace mtrt::gpu

#endif // MTRT_CUDA_MOEKERNELS_H
