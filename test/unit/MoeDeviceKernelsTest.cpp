//===- MoeDeviceKernelsTest.cpp - A mixture of experts' CUDA kernels, on the CPU
//-===//
//
// Runs every work item of the CUDA backend's mixture-of-experts kernels
// (runtime/src/cuda/MoeKernels.h) on the host, pass after pass as
// MoeKernels.cu launches them, and compares with the CPU backend's kernels
// (runtime/src/cpu/HostKernels.h): to the bit, as both sum in double in one
// order with the host's exp, but for the grouped GEMMs, which the CPU
// backend runs on BLAS (compared here with a double reference).
//
//===----------------------------------------------------------------------===//

#include "HostGrid.h"
#include "cpu/HostKernels.h"
#include "cuda/MoeKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace mtrt;
using mtrt::testing::grid;
using mtrt::testing::randomFloats;

namespace {

/// Bitwise equality of float vectors (NaN equal to NaN).
void expectSameBits(const std::vector<float> &got,
                    const std::vector<float> &expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(expected[i]))
      continue;
    EXPECT_EQ(got[i], expected[i]) << "element " << i;
  }
}

/// moeRoute as launchMoeRoute runs it: count, keep (with a capacity),
/// place and offsets.
void routeAsLaunched(const std::vector<int32_t> &experts, const float *weights,
                     std::vector<int32_t> &positions,
                     std::vector<int32_t> &offsets, int64_t numExperts,
                     int64_t capacity) {
  const int64_t choices = int64_t(experts.size());
  // (kept starts false: a place pass that read it without a capacity
  // would drop every choice.)
  std::vector<int32_t> count(size_t(numExperts), -7), kept(size_t(choices), 0);
  positions.assign(size_t(choices), -7);
  offsets.assign(size_t(numExperts) + 1, -7);
  grid(numExperts, [&](int64_t e) {
    gpu::moeRouteCountItem(e, experts.data(), choices, count.data());
  });
  if (capacity > 0)
    grid(choices, [&](int64_t i) {
      gpu::moeRouteKeepItem(i, experts.data(), weights, count.data(), choices,
                            numExperts, capacity, kept.data());
    });
  grid(choices, [&](int64_t i) {
    gpu::moeRoutePlaceItem(i, experts.data(), count.data(), kept.data(),
                           choices, numExperts, capacity, positions.data());
  });
  grid(numExperts + 1, [&](int64_t e) {
    gpu::moeRouteOffsetItem(e, count.data(), capacity, offsets.data());
  });
}

TEST(MoeDeviceKernels, TopKGatingAndItsGradient) {
  std::mt19937_64 gen(21);
  const int64_t tokens = 12, experts = 8, k = 3;
  std::vector<float> logits = randomFloats(gen, tokens * experts, -2, 2);
  // Ties (the lower expert first): token 1's two largest; token 2's third
  // and fourth, at the edge of the k chosen. A NaN (ranked last; its
  // token's weights NaN only if chosen) at expert 0, which a first-found
  // maximum would keep.
  logits[1 * experts + 2] = logits[1 * experts + 5] = 3.0f;
  logits[2 * experts + 1] = 5.0f;
  logits[2 * experts + 3] = 4.0f;
  logits[2 * experts + 0] = logits[2 * experts + 7] = 3.5f;
  logits[3 * experts + 0] = std::numeric_limits<float>::quiet_NaN();
  for (bool unnormalized : {false, true}) {
    SCOPED_TRACE(unnormalized ? "unnormalized" : "renormalized");
    std::vector<float> weights(tokens * k), weightsGot(tokens * k, -1);
    std::vector<int32_t> chosen(tokens * k), chosenGot(tokens * k, -1);
    cpu::topKGating(logits.data(), weights.data(), chosen.data(), tokens,
                    experts, k, unnormalized);
    grid(tokens, [&](int64_t t) {
      gpu::topKGatingItem(t, logits.data(), weightsGot.data(), chosenGot.data(),
                          experts, k, unnormalized);
    });
    EXPECT_EQ(chosenGot, chosen);
    expectSameBits(weightsGot, weights);
    // The ties' lower expert first; the NaN's expert never chosen.
    EXPECT_EQ(chosenGot[1 * k], 2);
    EXPECT_EQ(chosenGot[1 * k + 1], 5);
    EXPECT_EQ(chosenGot[2 * k + 2], 0);
    for (int64_t j = 0; j < k; ++j)
      EXPECT_NE(chosenGot[3 * k + j], 0);

    std::vector<float> dWeights = randomFloats(gen, tokens * k, -1, 1);
    std::vector<float> dLogits(tokens * experts),
        dLogitsGot(tokens * experts, -1);
    // Renormalized: into the chosen logits; unnormalized: every logit's,
    // through the softmax over all experts.
    const float *all = unnormalized ? logits.data() : nullptr;
    cpu::topKGatingGrad(dWeights.data(), weights.data(), chosen.data(), all,
                        dLogits.data(), tokens, experts, k);
    grid(tokens, [&](int64_t t) {
      gpu::topKGatingGradItem(t, dWeights.data(), weights.data(), chosen.data(),
                              all, dLogitsGot.data(), experts, k);
    });
    expectSameBits(dLogitsGot, dLogits);
  }
}

TEST(MoeDeviceKernels, RouterStatisticsAndLoadBalancingLoss) {
  std::mt19937_64 gen(22);
  const int64_t tokens = 10, experts = 6, k = 2, routers = 3;
  std::vector<std::vector<float>> loads, probabilities;
  for (int64_t l = 0; l < routers; ++l) {
    std::vector<float> logits = randomFloats(gen, tokens * experts, -3, 3);
    std::vector<float> weights(tokens * k);
    std::vector<int32_t> chosen(tokens * k);
    cpu::topKGating(logits.data(), weights.data(), chosen.data(), tokens,
                    experts, k, false);
    std::vector<float> load(experts), probability(experts);
    ASSERT_EQ(cpu::routerStatistics(logits.data(), chosen.data(), load.data(),
                                    probability.data(), tokens, experts, k),
              -1);
    std::vector<double> stats(2 * tokens);
    std::vector<float> loadGot(experts, -1), probabilityGot(experts, -1);
    grid(tokens, [&](int64_t t) {
      gpu::routerRowItem(t, logits.data(), stats.data(), experts);
    });
    grid(experts, [&](int64_t e) {
      gpu::routerStatisticsItem(e, logits.data(), chosen.data(), stats.data(),
                                loadGot.data(), probabilityGot.data(), tokens,
                                experts, k);
    });
    expectSameBits(loadGot, load);
    expectSameBits(probabilityGot, probability);

    std::vector<float> dProbability = randomFloats(gen, experts, -1, 1);
    std::vector<float> dLogits(tokens * experts),
        dLogitsGot(tokens * experts, -1);
    cpu::routerProbabilityGrad(dProbability.data(), logits.data(),
                               dLogits.data(), tokens, tokens, experts);
    grid(tokens, [&](int64_t t) {
      gpu::routerProbabilityGradItem(t, dProbability.data(), logits.data(),
                                     dLogitsGot.data(), tokens, experts);
    });
    expectSameBits(dLogitsGot, dLogits);
    loads.push_back(load);
    probabilities.push_back(probability);
  }
  std::vector<const float *> loadPointers, probabilityPointers;
  for (int64_t l = 0; l < routers; ++l) {
    loadPointers.push_back(loads[size_t(l)].data());
    probabilityPointers.push_back(probabilities[size_t(l)].data());
  }
  const double coefficient = 0.01;
  float loss = -1;
  gpu::loadBalancingLossItem(loadPointers.data(), probabilityPointers.data(),
                             routers, experts, coefficient, &loss);
  EXPECT_EQ(loss, float(cpu::loadBalancingLoss(loadPointers.data(),
                                               probabilityPointers.data(),
                                               routers, experts, coefficient)));
  const float grad = 0.75f;
  std::vector<float> dProbability(experts), dProbabilityGot(experts, -1);
  cpu::loadBalancingLossGrad(double(grad), loadPointers.data(),
                             dProbability.data(), routers, experts,
                             coefficient);
  grid(experts, [&](int64_t e) {
    gpu::loadBalancingLossGradItem(e, &grad, loadPointers.data(),
                                   dProbabilityGot.data(), routers, experts,
                                   coefficient);
  });
  expectSameBits(dProbabilityGot, dProbability);
}

TEST(MoeDeviceKernels, RouterZLossAndItsGradient) {
  std::mt19937_64 gen(27);
  const int64_t tokens = 11, experts = 6;
  std::vector<float> logits = randomFloats(gen, tokens * experts, -4, 4);
  const double coefficient = 0.003;
  std::vector<double> z(tokens, -1);
  grid(tokens, [&](int64_t t) {
    gpu::routerZRowItem(t, logits.data(), z.data(), experts);
  });
  float loss = -1;
  gpu::routerZLossItem(z.data(), tokens, coefficient, &loss);
  EXPECT_EQ(loss, float(cpu::routerZLoss(logits.data(), tokens, experts,
                                         coefficient)));
  // Against the definition: coefficient * mean_t logsumexp(row t)^2.
  double sum = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    double total = 0;
    for (int64_t e = 0; e < experts; ++e)
      total += std::exp(double(logits[t * experts + e]));
    sum += std::log(total) * std::log(total);
  }
  EXPECT_NEAR(loss, coefficient * sum / double(tokens), 1e-6 * loss);

  const float grad = 1.5f;
  std::vector<float> dLogits(tokens * experts),
      dLogitsGot(tokens * experts, -1);
  cpu::routerZLossGrad(double(grad), logits.data(), dLogits.data(), tokens,
                       tokens, experts, coefficient);
  grid(tokens, [&](int64_t t) {
    gpu::routerZLossGradItem(t, &grad, logits.data(), dLogitsGot.data(), tokens,
                             experts, coefficient);
  });
  expectSameBits(dLogitsGot, dLogits);

  // The gradient is the loss's: central differences of the double
  // instantiation, each logit moved by 1e-4.
  std::vector<double> wide(logits.begin(), logits.end());
  std::vector<double> dWide(wide.size());
  cpu::routerZLossGrad(1.0, wide.data(), dWide.data(), tokens, tokens, experts,
                       coefficient);
  for (size_t i = 0; i < wide.size(); ++i) {
    std::vector<double> up = wide, down = wide;
    up[i] += 1e-4;
    down[i] -= 1e-4;
    double numeric =
        (cpu::routerZLoss(up.data(), tokens, experts, coefficient) -
         cpu::routerZLoss(down.data(), tokens, experts, coefficient)) /
        2e-4;
    EXPECT_NEAR(dWide[i], numeric, 1e-9) << "logit " << i;
  }
  // Rows [3, tokens) of the tokens it averages, as a thread of the CPU
  // backend's pool computes them: the whole call's rows.
  std::vector<float> part((tokens - 3) * experts);
  cpu::routerZLossGrad(double(grad), logits.data() + 3 * experts, part.data(),
                       tokens - 3, tokens, experts, coefficient);
  expectSameBits(
      part, std::vector<float>(dLogits.begin() + 3 * experts, dLogits.end()));
}

TEST(MoeDeviceKernels, RouteEqualsTheCpuBackendsWithAndWithoutCapacity) {
  std::mt19937_64 gen(23);
  const int64_t tokens = 40, k = 2, experts = 5, choices = tokens * k;
  // Skewed toward expert 1, so that it overflows a capacity; expert 4
  // gets none.
  std::vector<int32_t> chosen(choices);
  std::uniform_int_distribution<int> pick(0, 5);
  for (int32_t &e : chosen) {
    int p = pick(gen);
    e = p >= 4 ? 1 : p;
  }
  std::vector<float> weights = randomFloats(gen, choices, 0, 1);
  // Expert 1's choices (more than 16) of equal weights but two, so that
  // a capacity keeps the earlier of them, and a NaN (ranked last).
  int64_t seen = 0;
  for (int64_t i = 0; i < choices; ++i)
    if (chosen[i] == 1)
      weights[i] = ++seen == 3 ? 0.9f
                   : seen == 1 ? std::numeric_limits<float>::quiet_NaN()
                               : 0.5f;
  ASSERT_GT(seen, 16);
  for (int64_t capacity : {int64_t(0), int64_t(4), int64_t(16), choices}) {
    for (const float *w : {static_cast<const float *>(nullptr),
                           static_cast<const float *>(weights.data())}) {
      if (capacity == 0 && w)
        continue; // without a capacity the weights are not read
      SCOPED_TRACE("capacity " + std::to_string(capacity) +
                   (w ? ", by weight" : ", by position"));
      std::vector<int32_t> positions(choices), offsets(experts + 1);
      ASSERT_EQ(cpu::moeRoute(chosen.data(), positions.data(), offsets.data(),
                              choices, experts, capacity, w),
                -1);
      std::vector<int32_t> positionsGot, offsetsGot;
      routeAsLaunched(chosen, w, positionsGot, offsetsGot, experts, capacity);
      EXPECT_EQ(positionsGot, positions);
      EXPECT_EQ(offsetsGot, offsets);
      if (capacity == 4) { // expert 1 overflows: some choices dropped
        EXPECT_NE(std::count(positionsGot.begin(), positionsGot.end(), -1), 0);
      }
    }
  }
  // A choice naming no expert: the CPU backend's error, the device's
  // dropped choice (it writes and adds nothing); the others keep their
  // rows.
  std::vector<int32_t> corrupt = chosen;
  corrupt[7] = int32_t(experts);
  std::vector<int32_t> positions, offsets;
  routeAsLaunched(corrupt, nullptr, positions, offsets, experts, 0);
  EXPECT_EQ(positions[7], -1);
  EXPECT_EQ(offsets[experts], choices - 1);
  std::vector<int32_t> sorted;
  for (int32_t p : positions)
    if (p >= 0)
      sorted.push_back(p);
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    EXPECT_EQ(sorted[i], int32_t(i));
}

TEST(MoeDeviceKernels, PermutationsWithAndWithoutDroppedChoices) {
  std::mt19937_64 gen(24);
  const int64_t tokens = 9, k = 2, experts = 3, hidden = 5;
  const int64_t choices = tokens * k;
  std::vector<int32_t> chosen(choices);
  for (int64_t i = 0; i < choices; ++i)
    chosen[i] = int32_t((i * 7 + i / 3) % experts);
  std::vector<float> x = randomFloats(gen, tokens * hidden, -2, 2);
  std::vector<float> weights = randomFloats(gen, choices, 0, 1);
  std::vector<float> dY = randomFloats(gen, tokens * hidden, -1, 1);
  for (int64_t capacity : {int64_t(0), int64_t(4)}) {
    SCOPED_TRACE("capacity " + std::to_string(capacity));
    const int64_t rows = capacity > 0 ? experts * capacity : choices;
    std::vector<int32_t> positions(choices), offsets(experts + 1);
    cpu::moeRoute(chosen.data(), positions.data(), offsets.data(), choices,
                  experts, capacity, weights.data());
    for (const float *w : {static_cast<const float *>(nullptr),
                           static_cast<const float *>(weights.data())}) {
      // The rows as the CPU backend fills them (zeros first with a
      // capacity), then as the device does: launchMoePermute zeroes every
      // row with a capacity before its items.
      std::vector<float> permuted(rows * hidden, 0.0f),
          permutedGot(rows * hidden, capacity > 0 ? 0.0f : -1.0f);
      cpu::moePermute(x.data(), positions.data(), w, permuted.data(), tokens, k,
                      hidden);
      grid(choices * hidden, [&](int64_t i) {
        gpu::moePermuteItem(i, x.data(), positions.data(), w,
                            permutedGot.data(), k, hidden, rows);
      });
      expectSameBits(permutedGot, permuted);

      std::vector<float> y(tokens * hidden), yGot(tokens * hidden, -1);
      cpu::moeUnpermute(permuted.data(), positions.data(), w, y.data(), tokens,
                        k, hidden);
      grid(tokens * hidden, [&](int64_t i) {
        gpu::moeUnpermuteItem(i, permuted.data(), positions.data(), w,
                              yGot.data(), k, hidden, rows);
      });
      expectSameBits(yGot, y);
    }
    std::vector<float> dWeights(choices), dWeightsGot(choices, -1);
    std::vector<float> permuted(rows * hidden, 0.0f);
    cpu::moePermute<float>(x.data(), positions.data(), nullptr, permuted.data(),
                           tokens, k, hidden);
    cpu::moeWeightsGrad(dY.data(), permuted.data(), positions.data(),
                        dWeights.data(), tokens, k, hidden);
    grid(choices, [&](int64_t c) {
      gpu::moeWeightsGradItem(c, dY.data(), permuted.data(), positions.data(),
                              dWeightsGot.data(), k, hidden, rows);
    });
    expectSameBits(dWeightsGot, dWeights);
  }
}

TEST(MoeDeviceKernels, SigmoidGateAndSoftcap) {
  std::mt19937_64 gen(25);
  const int64_t tokens = 7, hidden = 6, n = tokens * hidden;
  std::vector<float> x = randomFloats(gen, n, -3, 3),
                     gate = randomFloats(gen, tokens, -4, 4),
                     dY = randomFloats(gen, n, -1, 1);
  std::vector<float> y(n), yGot(n, -1);
  cpu::sigmoidGate(x.data(), gate.data(), y.data(), tokens, hidden);
  grid(n, [&](int64_t i) {
    gpu::sigmoidGateItem(i, x.data(), gate.data(), yGot.data(), hidden);
  });
  expectSameBits(yGot, y);
  std::vector<float> dX(n), dXGot(n, -1), dGate(tokens), dGateGot(tokens, -1);
  cpu::sigmoidGateGrad(dY.data(), x.data(), gate.data(), dX.data(),
                       dGate.data(), tokens, hidden);
  grid(tokens, [&](int64_t t) {
    gpu::sigmoidGateGradItem(t, dY.data(), x.data(), gate.data(), dXGot.data(),
                             dGateGot.data(), hidden);
  });
  expectSameBits(dXGot, dX);
  expectSameBits(dGateGot, dGate);

  // Gemma 2's soft cap (DeviceKernels.h's items, launched by
  // launchSoftcap).
  const double cap = 2.5;
  cpu::softcap(x.data(), y.data(), n, cap);
  grid(n, [&](int64_t i) { gpu::softcapItem(i, x.data(), yGot.data(), cap); });
  expectSameBits(yGot, y);
  cpu::softcapGrad(dY.data(), x.data(), dX.data(), n, cap);
  grid(n, [&](int64_t i) {
    gpu::softcapGradItem(i, dY.data(), x.data(), dXGot.data(), cap);
  });
  expectSameBits(dXGot, dX);
}

TEST(MoeDeviceKernels, GroupedMatmulsEqualEachExpertsProduct) {
  std::mt19937_64 gen(26);
  const int64_t experts = 4, rows = 13, k = 5, n = 3;
  // Expert 2 has no rows; the last two rows are no expert's (a capacity's
  // unused rows).
  const std::vector<int32_t> offsets = {0, 4, 7, 7, 11};
  std::vector<float> x = randomFloats(gen, rows * k, -1, 1);
  std::vector<float> dY = randomFloats(gen, rows * n, -1, 1);
  for (bool transposeB : {false, true}) {
    SCOPED_TRACE(transposeB ? "transpose_b" : "plain");
    std::vector<std::vector<float>> weights;
    std::vector<const float *> table;
    for (int64_t e = 0; e < experts; ++e) {
      weights.push_back(randomFloats(gen, k * n, -1, 1));
      table.push_back(weights.back().data());
    }
    auto weightAt = [&](int64_t e, int64_t j, int64_t c) {
      return double(transposeB ? weights[size_t(e)][c * k + j]
                               : weights[size_t(e)][j * n + c]);
    };
    std::vector<float> y(rows * n, -1);
    grid(rows * n, [&](int64_t i) {
      gpu::groupedMatmulItem(i, x.data(), offsets.data(), table.data(),
                             y.data(), experts, k, n, transposeB);
    });
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t r = offsets[e]; r < offsets[e + 1]; ++r)
        for (int64_t c = 0; c < n; ++c) {
          double sum = 0;
          for (int64_t j = 0; j < k; ++j)
            sum += double(x[r * k + j]) * weightAt(e, j, c);
          EXPECT_EQ(y[r * n + c], float(sum)) << "row " << r << " col " << c;
        }
    for (int64_t r = offsets[experts]; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c)
        EXPECT_EQ(y[r * n + c], 0.0f);

    std::vector<std::vector<float>> grads(size_t(experts),
                                          std::vector<float>(k * n, -1));
    std::vector<float *> gradTable;
    for (auto &grad : grads)
      gradTable.push_back(grad.data());
    grid(experts * k * n, [&](int64_t i) {
      gpu::groupedMatmulWeightGradItem(i, dY.data(), x.data(), offsets.data(),
                                       gradTable.data(), rows, k, n,
                                       transposeB);
    });
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t j = 0; j < k; ++j)
        for (int64_t c = 0; c < n; ++c) {
          double sum = 0;
          for (int64_t r = offsets[e]; r < offsets[e + 1]; ++r)
            sum += double(x[r * k + j]) * double(dY[r * n + c]);
          float got = transposeB ? grads[size_t(e)][c * k + j]
                                 : grads[size_t(e)][j * n + c];
          EXPECT_EQ(got, float(sum)) << "expert " << e;
        }
  }
  // Offsets past the rows (a routing some command corrupted) read no row
  // outside them.
  const std::vector<int32_t> past = {0, 4, 7, 7, 40};
  std::vector<float> grad(k * n, -1);
  float *only[experts] = {grad.data(), grad.data(), grad.data(), grad.data()};
  grid(k * n, [&](int64_t i) {
    gpu::groupedMatmulWeightGradItem(3 * k * n + i, dY.data(), x.data(),
                                     past.data(), only, rows, k, n, false);
  });
  for (int64_t j = 0; j < k; ++j)
    for (int64_t c = 0; c < n; ++c) {
      double sum = 0; // rows 7 to the last, not past it
      for (int64_t r = 7; r < rows; ++r)
        sum += double(x[r * k + j]) * double(dY[r * n + c]);
      EXPECT_EQ(grad[j * n + c], float(sum));
    }
}

} // namespace
