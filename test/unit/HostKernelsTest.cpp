//===- HostKernelsTest.cpp - Tests of the CPU host kernels ----------------===//
//
// Checks every gradient kernel against central finite differences of its
// forward kernel in double, plus known values, the dropout generator's
// properties and Random123's known-answer vectors for Philox4x32-10.
//
//===----------------------------------------------------------------------===//

#include "cpu/HostKernels.h"
#include "cpu/BlockedAttention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <tuple>
#include <vector>

using namespace mtrt::cpu;
using mtrt::AttentionLayout;

namespace {

using Vec = std::vector<double>;

/// Uniform values in [lo, hi) from a fixed-seed generator.
Vec randomVec(std::mt19937_64 &gen, size_t n, double lo = -1.0,
              double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (double &x : v)
    x = dist(gen);
  return v;
}

double dotVec(const Vec &a, const Vec &b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += a[i] * b[i];
  return sum;
}

/// Compares `analytic`, the gradient of the scalar `loss` w.r.t. `x`, with
/// central differences (L(x + h) - L(x - h)) / 2h, h = 1e-6. The tolerance is
/// relative to the largest gradient entry, so entries that are exactly zero
/// (masked keys, unused rows) are checked too.
void checkGradient(const char *what, Vec &x, const Vec &analytic,
                   const std::function<double()> &loss) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  const double h = 1e-6;
  double maxAbs = 0;
  for (double g : analytic)
    maxAbs = std::max(maxAbs, std::abs(g));
  ASSERT_GT(maxAbs, 0.0) << what << ": the gradient is identically zero";
  for (size_t i = 0; i < x.size(); ++i) {
    double saved = x[i];
    x[i] = saved + h;
    double plus = loss();
    x[i] = saved - h;
    double minus = loss();
    x[i] = saved;
    double numeric = (plus - minus) / (2 * h);
    EXPECT_NEAR(analytic[i], numeric, 1e-6 * maxAbs)
        << what << " element " << i;
  }
}

//===----------------------------------------------------------------------===//
// Philox and dropout masks
//===----------------------------------------------------------------------===//

// Random123's kat_vectors, the three philox4x32 10 lines: counter, key, out.
TEST(Philox, KnownAnswersAllWords) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                     0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                     0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420,
                                     0x24126ea1}));
}

// The same vectors through the (seed, index, stream, step) mapping.
TEST(Philox, KnownAnswersThroughArgumentMapping) {
  EXPECT_EQ(philox4x32(0, 0, 0, 0), 0x6627e8d5u);
  EXPECT_EQ(philox4x32(UINT64_MAX, UINT64_MAX, 0xffffffffu, 0xffffffffu),
            0x408f276du);
  EXPECT_EQ(philox4x32(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull,
                       0x13198a2eu, 0x03707344u),
            0xd16cfe09u);
}

TEST(Dropout, ZeroProbabilityIsIdentity) {
  std::mt19937_64 gen(1);
  Vec x = randomVec(gen, 1000), y(1000);
  dropout(x.data(), y.data(), 1000, 0.0, 7, RngKey{42, 3});
  EXPECT_EQ(x, y);
  for (uint64_t i = 0; i < 1000; ++i)
    EXPECT_TRUE(dropoutKeep(RngKey{42, 3}, 7, i, 0.0));
}

TEST(Dropout, KeptFractionAndScale) {
  const int64_t n = 100000;
  for (double p : {0.1, 0.5}) {
    Vec x(n, 1.0), y(n);
    dropout(x.data(), y.data(), n, p, 2, RngKey{1234, 5});
    int64_t kept = 0;
    for (double v : y) {
      if (v != 0.0) {
        ++kept;
        EXPECT_DOUBLE_EQ(v, 1.0 / (1.0 - p));
      }
    }
    EXPECT_NEAR(double(kept) / n, 1.0 - p, 0.01) << "p = " << p;
  }
}

TEST(Dropout, MaskIsDeterministicAndKeyed) {
  const int64_t n = 10000;
  const double p = 0.3;
  Vec x(n, 1.0), a(n), b(n), otherStream(n), otherStep(n), otherSeed(n);
  dropout(x.data(), a.data(), n, p, 4, RngKey{99, 10});
  dropout(x.data(), b.data(), n, p, 4, RngKey{99, 10});
  dropout(x.data(), otherStream.data(), n, p, 5, RngKey{99, 10});
  dropout(x.data(), otherStep.data(), n, p, 4, RngKey{99, 11});
  dropout(x.data(), otherSeed.data(), n, p, 4, RngKey{100, 10});
  EXPECT_EQ(a, b);
  // Independent masks agree on a fraction p^2 + (1-p)^2 = 0.58 of elements.
  auto differing = [&](const Vec &other) {
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i)
      count += (a[i] == 0.0) != (other[i] == 0.0);
    return count;
  };
  EXPECT_GT(differing(otherStream), n / 3);
  EXPECT_GT(differing(otherStep), n / 3);
  EXPECT_GT(differing(otherSeed), n / 3);
}

TEST(Dropout, MaskDoesNotDependOnSize) {
  const int64_t n = 100000, prefix = 777;
  std::mt19937_64 gen(2);
  Vec x = randomVec(gen, n), full(n), part(prefix);
  dropout(x.data(), full.data(), n, 0.2, 1, RngKey{5, 6});
  dropout(x.data(), part.data(), prefix, 0.2, 1, RngKey{5, 6});
  for (int64_t i = 0; i < prefix; ++i)
    EXPECT_EQ(part[i], full[i]) << i;
}

TEST(Dropout, GradientIsDropoutOfTheOutputGradient) {
  std::mt19937_64 gen(3);
  const int64_t n = 200;
  const double p = 0.25;
  const RngKey key{77, 2};
  Vec x = randomVec(gen, n), r = randomVec(gen, n), y(n), dx(n);
  dropout(r.data(), dx.data(), n, p, 9, key);
  checkGradient("dropout x", x, dx, [&] {
    dropout(x.data(), y.data(), n, p, 9, key);
    return dotVec(r, y);
  });
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

TEST(Embedding, LooksUpRows) {
  Vec table = {0, 1, 10, 11, 20, 21};
  std::vector<int32_t> ids = {2, 0, 2};
  Vec out(6);
  embedding(table.data(), ids.data(), out.data(), 3, 3, 2);
  EXPECT_EQ(out, (Vec{20, 21, 0, 1, 20, 21}));
}

TEST(Embedding, GradientOfTable) {
  std::mt19937_64 gen(4);
  const int64_t vocab = 7, hidden = 5, tokens = 9;
  // Repeated ids exercise the scatter-add; id 6 is never used.
  std::vector<int32_t> ids = {3, 1, 3, 0, 5, 3, 2, 4, 1};
  Vec table = randomVec(gen, vocab * hidden);
  Vec r = randomVec(gen, tokens * hidden), out(tokens * hidden);
  Vec dTable(vocab * hidden, 123.0); // Garbage: the kernel must overwrite.
  embeddingGrad(r.data(), ids.data(), dTable.data(), tokens, vocab, hidden);
  for (int64_t c = 0; c < hidden; ++c)
    EXPECT_EQ(dTable[6 * hidden + c], 0.0);
  checkGradient("embedding table", table, dTable, [&] {
    embedding(table.data(), ids.data(), out.data(), tokens, vocab, hidden);
    return dotVec(r, out);
  });
}

TEST(PositionEmbedding, GradientOfTable) {
  std::mt19937_64 gen(5);
  const int64_t positions = 8, seq = 5, hidden = 3;
  Vec table = randomVec(gen, positions * hidden);
  Vec r = randomVec(gen, seq * hidden), out(seq * hidden);
  Vec dTable(positions * hidden, -5.0);
  positionEmbedding(table.data(), out.data(), seq, hidden);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), table.begin()));
  positionEmbeddingGrad(r.data(), dTable.data(), seq, positions, hidden);
  for (int64_t e = seq * hidden; e < positions * hidden; ++e)
    EXPECT_EQ(dTable[e], 0.0);
  checkGradient("position_embedding table", table, dTable, [&] {
    positionEmbedding(table.data(), out.data(), seq, hidden);
    return dotVec(r, out);
  });
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

TEST(LayerNorm, NormalizesRows) {
  std::mt19937_64 gen(6);
  const int64_t rows = 4, cols = 64;
  Vec x = randomVec(gen, rows * cols, -3.0, 5.0), y(rows * cols);
  Vec weight(cols, 1.0), bias(cols, 0.0);
  layerNorm(x.data(), weight.data(), bias.data(), y.data(), rows, cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c)
      mean += y[r * cols + c] / cols;
    for (int64_t c = 0; c < cols; ++c)
      var += (y[r * cols + c] - mean) * (y[r * cols + c] - mean) / cols;
    EXPECT_NEAR(mean, 0.0, 1e-12);
    EXPECT_NEAR(var, 1.0, 1e-12);
  }
}

TEST(LayerNorm, EpsilonAndAffine) {
  // x = {1, 3}: mean 2, biased variance 1, so xhat = {-1, 1} / sqrt(1 + eps).
  Vec x = {1, 3}, weight = {2, 3}, bias = {0.5, -0.5}, y(2);
  const double eps = 0.25;
  layerNorm(x.data(), weight.data(), bias.data(), y.data(), 1, 2, eps);
  EXPECT_NEAR(y[0], -2 / std::sqrt(1.25) + 0.5, 1e-15);
  EXPECT_NEAR(y[1], 3 / std::sqrt(1.25) - 0.5, 1e-15);
}

TEST(LayerNorm, Gradients) {
  std::mt19937_64 gen(7);
  const int64_t rows = 3, cols = 6;
  const double eps = 1e-5;
  Vec x = randomVec(gen, rows * cols, -2.0, 2.0);
  Vec weight = randomVec(gen, cols, 0.5, 1.5), bias = randomVec(gen, cols);
  Vec r = randomVec(gen, rows * cols), y(rows * cols);
  Vec dX(rows * cols), dWeight(cols, 9.0), dBias(cols, 9.0);
  layerNormGrad(r.data(), x.data(), weight.data(), dX.data(), dWeight.data(),
                dBias.data(), rows, cols, eps);
  auto loss = [&] {
    layerNorm(x.data(), weight.data(), bias.data(), y.data(), rows, cols, eps);
    return dotVec(r, y);
  };
  checkGradient("layer_norm x", x, dX, loss);
  checkGradient("layer_norm weight", weight, dWeight, loss);
  checkGradient("layer_norm bias", bias, dBias, loss);
}

//===----------------------------------------------------------------------===//
// Pointwise ops
//===----------------------------------------------------------------------===//

TEST(Add, Elementwise) {
  Vec a = {1, 2, 3}, b = {10, 20, 30}, y(3);
  add(a.data(), b.data(), y.data(), 3);
  EXPECT_EQ(y, (Vec{11, 22, 33}));
}

TEST(BiasAdd, Gradients) {
  std::mt19937_64 gen(8);
  const int64_t rows = 5, cols = 4;
  Vec x = randomVec(gen, rows * cols), bias = randomVec(gen, cols);
  Vec r = randomVec(gen, rows * cols), y(rows * cols), dBias(cols, 7.0);
  biasAdd(x.data(), bias.data(), y.data(), rows, cols);
  EXPECT_EQ(y[2 * cols + 3], x[2 * cols + 3] + bias[3]);
  biasAddGrad(r.data(), dBias.data(), rows, cols);
  auto loss = [&] {
    biasAdd(x.data(), bias.data(), y.data(), rows, cols);
    return dotVec(r, y);
  };
  // The gradient w.r.t. x is dY itself.
  checkGradient("bias_add x", x, r, loss);
  checkGradient("bias_add bias", bias, dBias, loss);
}

TEST(Gelu, KnownValues) {
  Vec x = {1.0, 0.0, -1.0}, y(3);
  gelu(x.data(), y.data(), 3);
  EXPECT_NEAR(y[0], 0.8411919906082768, 1e-15);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_NEAR(y[2], 0.8411919906082768 - 1.0, 1e-15); // gelu(-x) = gelu(x) - x
}

TEST(Gelu, Gradient) {
  std::mt19937_64 gen(9);
  const int64_t n = 50;
  Vec x = randomVec(gen, n, -4.0, 4.0), r = randomVec(gen, n), y(n), dX(n);
  geluGrad(r.data(), x.data(), dX.data(), n);
  checkGradient("gelu x", x, dX, [&] {
    gelu(x.data(), y.data(), n);
    return dotVec(r, y);
  });
}

//===----------------------------------------------------------------------===//
// Heads
//===----------------------------------------------------------------------===//

TEST(Heads, SplitLayoutAndRoundTrip) {
  const int64_t chunks = 3, batch = 2, seq = 4, heads = 2, headDim = 3;
  const int64_t n = batch * seq * chunks * heads * headDim;
  Vec in(n);
  for (int64_t e = 0; e < n; ++e)
    in[e] = double(e);
  std::vector<Vec> parts(chunks, Vec(n / chunks));
  std::vector<double *> outs = {parts[0].data(), parts[1].data(),
                                parts[2].data()};
  splitHeads(in.data(), outs.data(), chunks, batch, seq, heads, headDim);
  // parts[c][b, h, s, d] = in[b, s, c, h, d].
  int64_t b = 1, s = 2, c = 2, h = 1, d = 2;
  EXPECT_EQ(parts[c][((b * heads + h) * seq + s) * headDim + d],
            in[(((b * seq + s) * chunks + c) * heads + h) * headDim + d]);
  Vec back(n, -1.0);
  std::vector<const double *> ins = {parts[0].data(), parts[1].data(),
                                     parts[2].data()};
  mergeHeads(ins.data(), back.data(), chunks, batch, seq, heads, headDim);
  EXPECT_EQ(back, in);
}

// split_heads and merge_heads differentiate into each other.
TEST(Heads, GradientsAsLinearMaps) {
  std::mt19937_64 gen(10);
  const int64_t chunks = 2, batch = 2, seq = 3, heads = 2, headDim = 2;
  const int64_t n = batch * seq * chunks * heads * headDim, m = n / chunks;
  Vec x = randomVec(gen, n);
  std::vector<Vec> parts(chunks, Vec(m)), rParts(chunks);
  for (Vec &rp : rParts)
    rp = randomVec(gen, m);
  std::vector<double *> outs = {parts[0].data(), parts[1].data()};
  std::vector<const double *> rIns = {rParts[0].data(), rParts[1].data()};
  Vec dX(n);
  mergeHeads(rIns.data(), dX.data(), chunks, batch, seq, heads, headDim);
  checkGradient("split_heads input", x, dX, [&] {
    splitHeads(x.data(), outs.data(), chunks, batch, seq, heads, headDim);
    return dotVec(rParts[0], parts[0]) + dotVec(rParts[1], parts[1]);
  });

  Vec r = randomVec(gen, n), merged(n);
  std::vector<Vec> dParts(chunks, Vec(m));
  std::vector<double *> dOuts = {dParts[0].data(), dParts[1].data()};
  splitHeads(r.data(), dOuts.data(), chunks, batch, seq, heads, headDim);
  std::vector<const double *> ins = {parts[0].data(), parts[1].data()};
  for (int64_t c = 0; c < chunks; ++c)
    checkGradient(c == 0 ? "merge_heads input 0" : "merge_heads input 1",
                  parts[c], dParts[c], [&] {
                    mergeHeads(ins.data(), merged.data(), chunks, batch, seq,
                               heads, headDim);
                    return dotVec(r, merged);
                  });
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

TEST(Attention, SeqOneReturnsValue) {
  std::mt19937_64 gen(11);
  const int64_t batch = 2, heads = 3, seq = 1, headDim = 4;
  const int64_t n = batch * heads * seq * headDim;
  Vec q = randomVec(gen, n), k = randomVec(gen, n), v = randomVec(gen, n);
  Vec out(n);
  attention(q.data(), k.data(), v.data(), out.data(), batch, heads, seq,
            headDim, 0.5, 0.0, 0, RngKey{1, 1});
  for (int64_t e = 0; e < n; ++e)
    EXPECT_NEAR(out[e], v[e], 1e-15);
}

TEST(Attention, MatchesNaiveSoftmax) {
  // One head, seq 2, headDim 1: row 1 mixes v0 and v1 by softmax(q1 k * s).
  Vec q = {0.3, 0.7}, k = {1.5, -0.5}, v = {2.0, 5.0}, out(2);
  attention(q.data(), k.data(), v.data(), out.data(), 1, 1, 2, 1, 0.8, 0.0, 0,
            RngKey{0, 0});
  double s0 = 0.7 * 1.5 * 0.8, s1 = 0.7 * -0.5 * 0.8;
  double p0 = std::exp(s0) / (std::exp(s0) + std::exp(s1));
  EXPECT_NEAR(out[0], 2.0, 1e-15);
  EXPECT_NEAR(out[1], p0 * 2.0 + (1 - p0) * 5.0, 1e-14);
}

TEST(Attention, CausalMask) {
  std::mt19937_64 gen(12);
  const int64_t batch = 1, heads = 2, seq = 6, headDim = 3;
  const int64_t n = batch * heads * seq * headDim;
  for (double p : {0.0, 0.3}) {
    Vec q = randomVec(gen, n), k = randomVec(gen, n), v = randomVec(gen, n);
    Vec before(n), after(n);
    RngKey key{3, 4};
    attention(q.data(), k.data(), v.data(), before.data(), batch, heads, seq,
              headDim, 0.6, p, 1, key);
    // Change keys and values at positions j > i = 2 in every head.
    const int64_t i = 2;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = i + 1; j < seq; ++j)
        for (int64_t d = 0; d < headDim; ++d) {
          k[(h * seq + j) * headDim + d] += 10.0;
          v[(h * seq + j) * headDim + d] -= 7.0;
        }
    attention(q.data(), k.data(), v.data(), after.data(), batch, heads, seq,
              headDim, 0.6, p, 1, key);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t row = 0; row <= i; ++row)
        for (int64_t d = 0; d < headDim; ++d) {
          int64_t e = (h * seq + row) * headDim + d;
          EXPECT_EQ(before[e], after[e]) << "p " << p << " head " << h;
        }
    // Rows after i see the change.
    EXPECT_NE(before[(i + 1) * headDim], after[(i + 1) * headDim]);
  }
}

// Against a naive reference that materialises P for each (b, h) and drops
// P[b, h, i, j] by dropoutKeep at ((b * heads + h) * seq + i) * seq + j.
TEST(Attention, DropoutMatchesNaiveReference) {
  std::mt19937_64 gen(17);
  const int64_t batch = 2, heads = 3, seq = 5, headDim = 2;
  const int64_t n = batch * heads * seq * headDim;
  const double scale = 0.9, p = 0.4;
  const RngKey key{11, 12};
  const uint32_t stream = 6;
  Vec q = randomVec(gen, n), k = randomVec(gen, n), v = randomVec(gen, n);
  Vec out(n);
  attention(q.data(), k.data(), v.data(), out.data(), batch, heads, seq,
            headDim, scale, p, stream, key);
  int64_t kept = 0, total = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < seq; ++i) {
        const int64_t bh = b * heads + h;
        auto at = [&](const Vec &t, int64_t s, int64_t d) {
          return t[(bh * seq + s) * headDim + d];
        };
        Vec scores(seq);
        double sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          for (int64_t d = 0; d < headDim; ++d)
            scores[j] += at(q, i, d) * at(k, j, d) * scale;
          sum += std::exp(scores[j]);
        }
        for (int64_t d = 0; d < headDim; ++d) {
          double expected = 0;
          for (int64_t j = 0; j <= i; ++j) {
            uint64_t index = uint64_t(((b * heads + h) * seq + i) * seq + j);
            bool keep = dropoutKeep(key, stream, index, p);
            if (d == 0) {
              kept += keep;
              ++total;
            }
            if (keep)
              expected += std::exp(scores[j]) / sum / (1 - p) * at(v, j, d);
          }
          EXPECT_NEAR(out[(bh * seq + i) * headDim + d], expected, 1e-14)
              << "b " << b << " h " << h << " i " << i;
        }
      }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, total);
}

TEST(Attention, Gradients) {
  const int64_t batch = 2, heads = 2, seq = 5, headDim = 3;
  const int64_t n = batch * heads * seq * headDim;
  const double scale = 1.0 / std::sqrt(double(headDim));
  const RngKey key{2024, 17};
  const uint32_t stream = 3;
  // Without and with a sliding window of 3 keys.
  for (int64_t window : {int64_t(0), int64_t(3)})
    for (double p : {0.0, 0.2}) {
      SCOPED_TRACE((p == 0.0 ? "p = 0" : "p = 0.2") +
                   std::string(window ? ", window 3" : ""));
      std::mt19937_64 gen(13);
      Vec q = randomVec(gen, n, -1.5, 1.5), k = randomVec(gen, n, -1.5, 1.5);
      Vec v = randomVec(gen, n), r = randomVec(gen, n), out(n);
      Vec dQ(n, 5.0), dK(n, 5.0), dV(n, 5.0);
      attentionGrad(r.data(), q.data(), k.data(), v.data(), dQ.data(),
                    dK.data(), dV.data(), batch, heads, seq, headDim, scale, p,
                    stream, key, 0, 0, 0, 0, -1, window);
      auto loss = [&] {
        attention(q.data(), k.data(), v.data(), out.data(), batch, heads, seq,
                  headDim, scale, p, stream, key, 0, 0, 0, 0, -1, window);
        return dotVec(r, out);
      };
      checkGradient("attention q", q, dQ, loss);
      checkGradient("attention k", k, dK, loss);
      checkGradient("attention v", v, dV, loss);
    }
}

// A sliding window (Mistral's): query i sees keys i - window < j <= i
// (its gradients: Attention.Gradients). A key `window` or more positions
// back changes nothing, a key inside the window does.
TEST(Attention, SlidingWindow) {
  const int64_t batch = 1, heads = 2, seq = 7, headDim = 3, window = 3;
  const int64_t n = batch * heads * seq * headDim;
  const double scale = 1.0 / std::sqrt(double(headDim));
  const RngKey key{2024, 17};
  // Query 6 of head 0 sees keys 4, 5, 6: key 3 is out of its window.
  std::mt19937_64 gen(22);
  Vec q = randomVec(gen, n), k = randomVec(gen, n), v = randomVec(gen, n);
  Vec before(n), after(n);
  attention(q.data(), k.data(), v.data(), before.data(), batch, heads, seq,
            headDim, scale, 0.0, 3, key, 0, 0, 0, 0, -1, window);
  for (int64_t d = 0; d < headDim; ++d)
    v[3 * headDim + d] += 10.0;
  attention(q.data(), k.data(), v.data(), after.data(), batch, heads, seq,
            headDim, scale, 0.0, 3, key, 0, 0, 0, 0, -1, window);
  for (int64_t d = 0; d < headDim; ++d) {
    EXPECT_EQ(after[6 * headDim + d], before[6 * headDim + d]);
    EXPECT_NE(after[5 * headDim + d], before[5 * headDim + d]);
  }
}

// The CPU backend's blocked float attention (BlockedAttention.h) against the
// double row-at-a-time reference above: forward and all three gradients,
// with and without dropout, for sequences shorter than, equal to and not a
// multiple of the 64-row block, and a pair range that is not all pairs.
TEST(BlockedAttention, MatchesReference) {
  const int64_t batch = 2, heads = 3, headDim = 16;
  for (int64_t seq : {5, 64, 100, 130})
    for (double p : {0.0, 0.25})
      for (int64_t window : {int64_t(0), int64_t(3), int64_t(70)}) {
        SCOPED_TRACE("seq " + std::to_string(seq) + " p " + std::to_string(p) +
                     " window " + std::to_string(window));
        const int64_t n = batch * heads * seq * headDim;
        std::mt19937_64 gen(seq);
        Vec q = randomVec(gen, n, -2, 2), k = randomVec(gen, n, -2, 2);
        Vec v = randomVec(gen, n), dO = randomVec(gen, n);
        AttentionShape a{batch,
                         heads,
                         seq,
                         headDim,
                         1.0 / std::sqrt(16.0),
                         p,
                         7,
                         RngKey{5, 9},
                         40,
                         1,
                         4,
                         AttentionLayout::headMajor(heads, seq, headDim)};
        a.window = window;
        Vec out(n), dQ(n), dK(n), dV(n);
        attention(q.data(), k.data(), v.data(), out.data(), batch, heads, seq,
                  headDim, a.scale, p, a.stream, a.key, a.indexOffset,
                  a.headOffset, a.headsTotal, 0, -1, window);
        attentionGrad(dO.data(), q.data(), k.data(), v.data(), dQ.data(),
                      dK.data(), dV.data(), batch, heads, seq, headDim, a.scale,
                      p, a.stream, a.key, a.indexOffset, a.headOffset,
                      a.headsTotal, 0, -1, window);
        auto f = [](const Vec &x) {
          return std::vector<float>(x.begin(), x.end());
        };
        std::vector<float> qf = f(q), kf = f(k), vf = f(v), dOf = f(dO);
        std::vector<float> outF(n, 9.0f), dQF(n, 9.0f), dKF(n, 9.0f),
            dVF(n, 9.0f);
        // Two ranges of pairs, as two threads would run them.
        for (auto [begin, end] :
             {std::pair<int64_t, int64_t>{0, 2},
              std::pair<int64_t, int64_t>{2, batch * heads}}) {
          blockedAttention(qf.data(), kf.data(), vf.data(), outF.data(),
                           /*lse=*/nullptr, a, begin, end);
          blockedAttentionGrad(dOf.data(), qf.data(), kf.data(), vf.data(),
                               AttentionForward{}, dQF.data(), dKF.data(),
                               dVF.data(), a, begin, end);
        }
        for (int64_t i = 0; i < n; ++i) {
          EXPECT_NEAR(outF[i], out[i], 2e-5) << "out " << i;
          EXPECT_NEAR(dQF[i], dQ[i], 2e-5) << "dQ " << i;
          EXPECT_NEAR(dKF[i], dK[i], 2e-5) << "dK " << i;
          EXPECT_NEAR(dVF[i], dV[i], 2e-5) << "dV " << i;
        }

        // qkv_attention's layout: q, k and v read in place from one fused
        // [batch, seq, 3 * heads * headDim] tensor, the output and its
        // gradient merged [batch, seq, heads * headDim]. The same numbers as
        // the head-major run, moved.
        const int64_t width = heads * headDim;
        std::vector<float> qkv(3 * n), dOMerged(n), merged(n, 9.0f),
            dQKV(3 * n, 9.0f);
        auto fusedAt = [&](int64_t chunk, int64_t b, int64_t h, int64_t i) {
          return (b * seq + i) * 3 * width + chunk * width + h * headDim;
        };
        auto mergedAt = [&](int64_t b, int64_t h, int64_t i) {
          return (b * seq + i) * width + h * headDim;
        };
        auto headAt = [&](int64_t b, int64_t h, int64_t i) {
          return ((b * heads + h) * seq + i) * headDim;
        };
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < seq; ++i)
              for (int64_t d = 0; d < headDim; ++d) {
                qkv[fusedAt(0, b, h, i) + d] = qf[headAt(b, h, i) + d];
                qkv[fusedAt(1, b, h, i) + d] = kf[headAt(b, h, i) + d];
                qkv[fusedAt(2, b, h, i) + d] = vf[headAt(b, h, i) + d];
                dOMerged[mergedAt(b, h, i) + d] = dOf[headAt(b, h, i) + d];
              }
        // The fused form also states each row's log-sum-exp, which its
        // gradient reads with the output instead of rebuilding the softmax:
        // the gradients then differ from the head-major run's by rounding,
        // so both are held to the double reference.
        AttentionShape fused = a;
        fused.layout = AttentionLayout::fusedQKV(heads, seq, headDim);
        std::vector<float> lse(size_t(batch * heads * seq), 9.0f);
        for (auto [begin, end] :
             {std::pair<int64_t, int64_t>{0, 2},
              std::pair<int64_t, int64_t>{2, batch * heads}}) {
          blockedAttention(qkv.data(), qkv.data(), qkv.data(), merged.data(),
                           lse.data(), fused, begin, end);
          blockedAttentionGrad(dOMerged.data(), qkv.data(), qkv.data(),
                               qkv.data(), {merged.data(), lse.data()},
                               dQKV.data(), dQKV.data(), dQKV.data(), fused,
                               begin, end);
        }
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < seq; ++i) {
              // log sum_{j <= i} exp(scale q_i . k_j), in double, over the
              // keys in the window.
              const double *qi = q.data() + headAt(b, h, i);
              double maxScore = -1e300;
              std::vector<double> scores;
              for (int64_t j = window > 0 ? std::max<int64_t>(0, i - window + 1)
                                          : 0;
                   j <= i; ++j) {
                double score = 0;
                for (int64_t d = 0; d < headDim; ++d)
                  score += qi[d] * k[headAt(b, h, j) + d];
                scores.push_back(score * a.scale);
                maxScore = std::max(maxScore, scores.back());
              }
              double sum = 0;
              for (double score : scores)
                sum += std::exp(score - maxScore);
              EXPECT_NEAR(lse[size_t((b * heads + h) * seq + i)],
                          maxScore + std::log(sum), 1e-5)
                  << "lse " << b << " " << h << " " << i;
              for (int64_t d = 0; d < headDim; ++d) {
                int64_t at = headAt(b, h, i) + d;
                ASSERT_FLOAT_EQ(merged[mergedAt(b, h, i) + d], outF[at]);
                EXPECT_NEAR(dQKV[fusedAt(0, b, h, i) + d], dQ[at], 2e-5);
                EXPECT_NEAR(dQKV[fusedAt(1, b, h, i) + d], dK[at], 2e-5);
                EXPECT_NEAR(dQKV[fusedAt(2, b, h, i) + d], dV[at], 2e-5);
              }
            }
      }
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

// The float exp of the CPU backend's cross-entropy against libm's.
// Grouped-query attention: keys and values of 2 heads serving 6 query
// heads (groups of 3) give the reference's results on keys and values
// repeated per query head, their gradients summed over each group; with
// dropout and a window, over pair ranges of whole groups (as the CPU
// backend hands them to threads).
TEST(BlockedAttention, GroupedKeysMatchRepeatedReference) {
  const int64_t batch = 2, heads = 6, kvHeads = 2, groups = 3, headDim = 8;
  for (int64_t seq : {7, 100})
    for (double p : {0.0, 0.25})
      for (int64_t window : {int64_t(0), int64_t(5)}) {
        SCOPED_TRACE("seq " + std::to_string(seq) + " p " + std::to_string(p) +
                     " window " + std::to_string(window));
        const int64_t n = batch * heads * seq * headDim;
        const int64_t nKv = batch * kvHeads * seq * headDim;
        const int64_t rowSize = seq * headDim;
        std::mt19937_64 gen(seq + 1);
        Vec q = randomVec(gen, n, -2, 2), dO = randomVec(gen, n);
        Vec k = randomVec(gen, nKv, -2, 2), v = randomVec(gen, nKv);
        // Query pair (b, h) reads key pair (b, h / groups).
        Vec kRep(n), vRep(n);
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t e = 0; e < rowSize; ++e) {
              int64_t from = (b * kvHeads + h / groups) * rowSize + e;
              kRep[(b * heads + h) * rowSize + e] = k[from];
              vRep[(b * heads + h) * rowSize + e] = v[from];
            }
        AttentionShape a{
            batch,
            heads,
            seq,
            headDim,
            1.0 / std::sqrt(8.0),
            p,
            7,
            RngKey{5, 9},
            40,
            0,
            heads,
            AttentionLayout::headMajor(heads, seq, headDim, kvHeads)};
        a.window = window;
        ASSERT_EQ(a.layout.groups(), groups);
        Vec out(n), dQ(n), dKRep(n), dVRep(n);
        attention(q.data(), kRep.data(), vRep.data(), out.data(), batch, heads,
                  seq, headDim, a.scale, p, a.stream, a.key, a.indexOffset,
                  a.headOffset, a.headsTotal, 0, -1, window);
        attentionGrad(dO.data(), q.data(), kRep.data(), vRep.data(), dQ.data(),
                      dKRep.data(), dVRep.data(), batch, heads, seq, headDim,
                      a.scale, p, a.stream, a.key, a.indexOffset, a.headOffset,
                      a.headsTotal, 0, -1, window);
        Vec dK(nKv, 0.0), dV(nKv, 0.0);
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t e = 0; e < rowSize; ++e) {
              int64_t to = (b * kvHeads + h / groups) * rowSize + e;
              dK[to] += dKRep[(b * heads + h) * rowSize + e];
              dV[to] += dVRep[(b * heads + h) * rowSize + e];
            }
        auto f = [](const Vec &x) {
          return std::vector<float>(x.begin(), x.end());
        };
        std::vector<float> qf = f(q), kf = f(k), vf = f(v), dOf = f(dO);
        std::vector<float> outF(n, 9.0f), dQF(n, 9.0f), dKF(nKv, 9.0f),
            dVF(nKv, 9.0f);
        // The forward by any pairs; the gradient by whole groups.
        for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 4},
                                  std::pair<int64_t, int64_t>{4, 12}})
          blockedAttention(qf.data(), kf.data(), vf.data(), outF.data(),
                           /*lse=*/nullptr, a, begin, end);
        for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 3},
                                  std::pair<int64_t, int64_t>{3, 12}})
          blockedAttentionGrad(dOf.data(), qf.data(), kf.data(), vf.data(),
                               AttentionForward{}, dQF.data(), dKF.data(),
                               dVF.data(), a, begin, end);
        for (int64_t i = 0; i < n; ++i) {
          EXPECT_NEAR(outF[i], out[i], 2e-5) << "out " << i;
          EXPECT_NEAR(dQF[i], dQ[i], 2e-5) << "dQ " << i;
        }
        for (int64_t i = 0; i < nKv; ++i) {
          EXPECT_NEAR(dKF[i], dK[i], 5e-5) << "dK " << i;
          EXPECT_NEAR(dVF[i], dV[i], 5e-5) << "dV " << i;
        }
      }
}

/// Soft-capped causal attention of one (batch, head) pair in double,
/// written directly from its definition: s = scale q.k, s' = cap tanh(s /
/// cap), P = softmax over the visible keys (j <= i, and j > i - window
/// with a window), out = P v; and its gradients given dOut: dV = P^T dO,
/// dS' = P (dP - rowsum(P dP)) with dP = dO v^T, dS = scale (1 - t^2) dS'
/// with t = tanh(s / cap), dQ = dS k, dK = dS^T q.
struct SoftCappedPair {
  int64_t seq, d, window;
  double scale, cap;
  bool visible(int64_t i, int64_t j) const {
    return j <= i && (window == 0 || j > i - window);
  }
  /// P (row-major [seq x seq]) and tanh(s / cap).
  void probabilities(const Vec &q, const Vec &k, Vec &p, Vec &t) const {
    p.assign(size_t(seq * seq), 0.0);
    t.assign(size_t(seq * seq), 0.0);
    for (int64_t i = 0; i < seq; ++i) {
      double max = -1e300, sum = 0;
      for (int64_t j = 0; j < seq; ++j)
        if (visible(i, j)) {
          double sc = 0;
          for (int64_t e = 0; e < d; ++e)
            sc += q[i * d + e] * k[j * d + e];
          t[i * seq + j] = std::tanh(scale * sc / cap);
          p[i * seq + j] = cap * t[i * seq + j];
          max = std::max(max, p[i * seq + j]);
        }
      for (int64_t j = 0; j < seq; ++j)
        if (visible(i, j)) {
          p[i * seq + j] = std::exp(p[i * seq + j] - max);
          sum += p[i * seq + j];
        }
      for (int64_t j = 0; j < seq; ++j)
        p[i * seq + j] /= sum;
    }
  }
  Vec forward(const Vec &q, const Vec &k, const Vec &v) const {
    Vec p, t, out(size_t(seq * d), 0.0);
    probabilities(q, k, p, t);
    for (int64_t i = 0; i < seq; ++i)
      for (int64_t j = 0; j < seq; ++j)
        for (int64_t e = 0; e < d; ++e)
          out[i * d + e] += p[i * seq + j] * v[j * d + e];
    return out;
  }
  void backward(const Vec &dO, const Vec &q, const Vec &k, const Vec &v,
                Vec &dQ, Vec &dK, Vec &dV) const {
    Vec p, t;
    probabilities(q, k, p, t);
    dQ.assign(size_t(seq * d), 0.0);
    dK.assign(size_t(seq * d), 0.0);
    dV.assign(size_t(seq * d), 0.0);
    for (int64_t i = 0; i < seq; ++i) {
      Vec dP(size_t(seq), 0.0);
      double rowDot = 0;
      for (int64_t j = 0; j < seq; ++j) {
        for (int64_t e = 0; e < d; ++e) {
          dP[j] += dO[i * d + e] * v[j * d + e];
          dV[j * d + e] += p[i * seq + j] * dO[i * d + e];
        }
        rowDot += p[i * seq + j] * dP[j];
      }
      for (int64_t j = 0; j < seq; ++j) {
        double tt = t[i * seq + j];
        double dS = scale * (1 - tt * tt) * p[i * seq + j] * (dP[j] - rowDot);
        for (int64_t e = 0; e < d; ++e) {
          dQ[i * d + e] += dS * k[j * d + e];
          dK[j * d + e] += dS * q[i * d + e];
        }
      }
    }
  }
};

// Gemma 2's soft cap of the scores in the CPU backend's blocked attention,
// forward and backward, against the direct double computation above (whose
// gradients are first checked against central differences), across the
// 64-row block, with and without a window, with the forward's log-sum-exp
// given to the gradient and without.
TEST(BlockedAttention, SoftCapMatchesDirectComputation) {
  const int64_t heads = 2, seq = 70, headDim = 8;
  const double cap = 0.5;
  for (int64_t window : {int64_t(0), int64_t(5)}) {
    SCOPED_TRACE("window " + std::to_string(window));
    const int64_t pair = seq * headDim, n = heads * pair;
    std::mt19937_64 gen(31 + window);
    Vec q = randomVec(gen, n, -1, 1), k = randomVec(gen, n, -1, 1);
    Vec v = randomVec(gen, n), dO = randomVec(gen, n);
    SoftCappedPair direct{seq, headDim, window, 1.0 / std::sqrt(8.0), cap};
    // The direct gradients of one pair, against central differences of the
    // direct forward (a few coordinates: the loss is dO . out).
    {
      Vec q0(q.begin(), q.begin() + pair), k0(k.begin(), k.begin() + pair),
          v0(v.begin(), v.begin() + pair), dO0(dO.begin(), dO.begin() + pair);
      Vec dQ0, dK0, dV0;
      direct.backward(dO0, q0, k0, v0, dQ0, dK0, dV0);
      auto loss = [&] { return dotVec(dO0, direct.forward(q0, k0, v0)); };
      for (int64_t index : {int64_t(3), int64_t(200), int64_t(pair - 1)}) {
        for (auto [x, g] :
             {std::pair<Vec *, Vec *>{&q0, &dQ0}, {&k0, &dK0}, {&v0, &dV0}}) {
          double saved = (*x)[index], h = 1e-6;
          (*x)[index] = saved + h;
          double plus = loss();
          (*x)[index] = saved - h;
          double minus = loss();
          (*x)[index] = saved;
          EXPECT_NEAR((*g)[index], (plus - minus) / (2 * h), 1e-6);
        }
      }
    }
    AttentionShape a{1,
                     heads,
                     seq,
                     headDim,
                     1.0 / std::sqrt(8.0),
                     0.0,
                     7,
                     RngKey{5, 9},
                     0,
                     0,
                     heads,
                     AttentionLayout::headMajor(heads, seq, headDim)};
    a.window = window;
    a.softcap = cap;
    auto f = [](const Vec &x) {
      return std::vector<float>(x.begin(), x.end());
    };
    std::vector<float> qf = f(q), kf = f(k), vf = f(v), dOf = f(dO);
    std::vector<float> out(n), lse(size_t(heads * seq)), dQ(n), dK(n), dV(n),
        dQGiven(n), dKGiven(n), dVGiven(n);
    blockedAttention(qf.data(), kf.data(), vf.data(), out.data(), lse.data(), a,
                     0, heads);
    blockedAttentionGrad(dOf.data(), qf.data(), kf.data(), vf.data(),
                         AttentionForward{}, dQ.data(), dK.data(), dV.data(), a,
                         0, heads);
    blockedAttentionGrad(dOf.data(), qf.data(), kf.data(), vf.data(),
                         AttentionForward{out.data(), lse.data()},
                         dQGiven.data(), dKGiven.data(), dVGiven.data(), a, 0,
                         heads);
    for (int64_t h = 0; h < heads; ++h) {
      auto slice = [&](const Vec &x) {
        return Vec(x.begin() + h * pair, x.begin() + (h + 1) * pair);
      };
      Vec wantOut = direct.forward(slice(q), slice(k), slice(v));
      Vec wantQ, wantK, wantV;
      direct.backward(slice(dO), slice(q), slice(k), slice(v), wantQ, wantK,
                      wantV);
      for (int64_t i = 0; i < pair; ++i) {
        int64_t at = h * pair + i;
        EXPECT_NEAR(out[at], wantOut[i], 2e-6) << "out " << at;
        EXPECT_NEAR(dQ[at], wantQ[i], 2e-6) << "dQ " << at;
        EXPECT_NEAR(dK[at], wantK[i], 2e-6) << "dK " << at;
        EXPECT_NEAR(dV[at], wantV[i], 2e-6) << "dV " << at;
        EXPECT_NEAR(dQGiven[at], wantQ[i], 2e-6) << "dQ from lse " << at;
        EXPECT_NEAR(dKGiven[at], wantK[i], 2e-6) << "dK from lse " << at;
      }
    }
    // The cap matters here: without it the output differs.
    a.softcap = 0.0;
    std::vector<float> uncapped(n);
    blockedAttention(qf.data(), kf.data(), vf.data(), uncapped.data(), nullptr,
                     a, 0, heads);
    double largest = 0;
    for (int64_t i = 0; i < n; ++i)
      largest = std::max(largest, double(std::fabs(uncapped[i] - out[i])));
    EXPECT_GT(largest, 1e-3);
  }
}

TEST(CrossEntropy, FloatExpWithinTwoUlp) {
  for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
    double exact = std::exp(double(x));
    EXPECT_NEAR(detail::expClamped(x), exact, 2.4e-7 * exact) << "x " << x;
  }
  EXPECT_EQ(detail::expClamped(0.0f), 1.0f);
}

TEST(CrossEntropy, UniformLogitsGiveLogVocab) {
  const int64_t rows = 3, vocab = 11;
  Vec logits(rows * vocab, 2.5);
  std::vector<int32_t> labels = {0, 5, 10};
  EXPECT_NEAR(crossEntropy(logits.data(), labels.data(), rows, vocab),
              std::log(double(vocab)), 1e-14);
}

TEST(CrossEntropy, LargeLogitsAreStable) {
  Vec logits = {1000.0, 0.0};
  std::vector<int32_t> labels = {0};
  EXPECT_NEAR(crossEntropy(logits.data(), labels.data(), 1, 2),
              std::log1p(std::exp(-1000.0)), 1e-15);
}

TEST(CrossEntropy, Gradient) {
  std::mt19937_64 gen(14);
  const int64_t rows = 4, vocab = 6;
  Vec logits = randomVec(gen, rows * vocab, -3.0, 3.0);
  std::vector<int32_t> labels = {2, 0, 5, 2};
  const double dLoss = 1.7;
  Vec dLogits(rows * vocab);
  crossEntropyGrad(dLoss, logits.data(), labels.data(), dLogits.data(), rows,
                   vocab);
  checkGradient("cross_entropy logits", logits, dLogits, [&] {
    return dLoss * crossEntropy(logits.data(), labels.data(), rows, vocab);
  });
}

// A padded vocabulary: rows of 9 columns of which the first 6 are real.
// The padding (garbage here, large enough to dominate an unmasked sum) is
// masked out of the loss and gets a zero gradient: the loss and the real
// columns' gradient equal those of the unpadded rows, float and double.
template <typename T> void checkPaddedCrossEntropy() {
  std::mt19937_64 gen(15);
  const int64_t rows = 4, vocab = 6, padded = 9;
  std::vector<T> logits(rows * vocab), paddedLogits(rows * padded, T(50));
  std::uniform_real_distribution<double> dist(-3.0, 3.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < vocab; ++c)
      logits[r * vocab + c] = paddedLogits[r * padded + c] = T(dist(gen));
  std::vector<int32_t> labels = {2, 0, 5, 7}; // 7: padding, out of range
  EXPECT_EQ(
      crossEntropy(paddedLogits.data(), labels.data(), rows, padded, vocab),
      crossEntropy(logits.data(), labels.data(), rows, vocab));
  std::vector<T> dLogits(rows * vocab), dPadded(rows * padded, T(-1));
  crossEntropyGrad(T(1.7), logits.data(), labels.data(), dLogits.data(), rows,
                   vocab);
  crossEntropyGrad(T(1.7), paddedLogits.data(), labels.data(), dPadded.data(),
                   rows, padded, 0, -1, vocab);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < padded; ++c)
      EXPECT_EQ(dPadded[r * padded + c],
                c < vocab ? dLogits[r * vocab + c] : T(0))
          << "row " << r << " column " << c;
}

TEST(CrossEntropy, PaddedVocabularyIsMasked) {
  checkPaddedCrossEntropy<float>();
  checkPaddedCrossEntropy<double>();
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

TEST(SumOfSquares, Value) {
  Vec x = {1, -2, 3};
  EXPECT_EQ(sumOfSquares(x.data(), 3), 14.0);
  std::vector<float> f(1000, 0.1f);
  EXPECT_NEAR(sumOfSquares(f.data(), 1000), 1000.0 * double(0.1f) * 0.1f,
              1e-12);
}

// Step 1 from zero moments, lr 0.1, betas (0.9, 0.999), eps 1e-8, g = 0.5:
// m = 0.05, v = 0.00025, bias corrections 0.1 and 0.001, so
// denom = sqrt(0.00025) / sqrt(0.001) + 1e-8 = 0.5 + 1e-8 and
// p = p0 - (0.1 / 0.1) * 0.05 / (0.5 + 1e-8) = p0 - 0.1 / (1 + 2e-8).
TEST(AdamW, FirstStepByHand) {
  for (bool decay : {false, true}) {
    Vec p = {1.0}, g = {0.5}, m = {0.0}, v = {0.0};
    adamw(p.data(), g.data(), m.data(), v.data(), 1, 0.1, 0.9, 0.999, 1e-8,
          0.01, 1, 1.0, decay);
    // With decay, p0 = 1 - 0.1 * 0.01 * 1 = 0.999 first.
    double p0 = decay ? 0.999 : 1.0;
    EXPECT_NEAR(p[0], p0 - 0.1 / (1 + 2e-8), 1e-15) << "decay " << decay;
    EXPECT_NEAR(m[0], 0.05, 1e-16);
    EXPECT_NEAR(v[0], 0.00025, 1e-18);
  }
}

// Step 3 with nonzero moments: m = 0.9 * 0.1 + 0.1 * 0.4 = 0.13,
// v = 0.999 * 0.02 + 0.001 * 0.16 = 0.02014,
// p = p0 - 0.01 / (1 - 0.9^3) * 0.13 / (sqrt(0.02014) / sqrt(1 - 0.999^3)
// + 1e-8) with p0 = 1.5, or 1.5 * (1 - 0.01 * 0.1) = 1.4985 with decay.
TEST(AdamW, LaterStepByHand) {
  const double expected[2] = {1.4981495056195457, 1.4966495056195457};
  for (bool decay : {false, true}) {
    Vec p = {1.5}, g = {0.4}, m = {0.1}, v = {0.02};
    adamw(p.data(), g.data(), m.data(), v.data(), 1, 0.01, 0.9, 0.999, 1e-8,
          0.1, 3, 1.0, decay);
    EXPECT_NEAR(p[0], expected[decay], 1e-14) << "decay " << decay;
    EXPECT_NEAR(m[0], 0.13, 1e-15);
    EXPECT_NEAR(v[0], 0.02014, 1e-16);
  }
}

TEST(AdamW, GradScaleScalesTheGradient) {
  std::mt19937_64 gen(15);
  const int64_t n = 20;
  Vec p0 = randomVec(gen, n), g = randomVec(gen, n);
  Vec m0 = randomVec(gen, n, -0.1, 0.1), v0 = randomVec(gen, n, 0.0, 0.1);
  Vec gScaled(n);
  for (int64_t i = 0; i < n; ++i)
    gScaled[i] = g[i] * 0.37;
  Vec pa = p0, ma = m0, va = v0, pb = p0, mb = m0, vb = v0;
  adamw(pa.data(), g.data(), ma.data(), va.data(), n, 1e-3, 0.9, 0.95, 1e-8,
        0.1, 4, 0.37, true);
  adamw(pb.data(), gScaled.data(), mb.data(), vb.data(), n, 1e-3, 0.9, 0.95,
        1e-8, 0.1, 4, 1.0, true);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(pa[i], pb[i], 1e-15);
    EXPECT_NEAR(ma[i], mb[i], 1e-15);
    EXPECT_NEAR(va[i], vb[i], 1e-15);
  }
  // And it differs from the unscaled update.
  Vec pc = p0, mc = m0, vc = v0;
  adamw(pc.data(), g.data(), mc.data(), vc.data(), n, 1e-3, 0.9, 0.95, 1e-8,
        0.1, 4, 1.0, true);
  EXPECT_NE(pa, pc);
}

//===----------------------------------------------------------------------===//
// The float instantiation the runtime uses
//===----------------------------------------------------------------------===//

// The runtime instantiates every kernel with float; check they compile and
// agree with the double reference to float precision.
TEST(Float, AgreesWithDouble) {
  std::mt19937_64 gen(16);
  const int64_t batch = 1, heads = 2, seq = 4, headDim = 8;
  const int64_t n = batch * heads * seq * headDim;
  Vec q = randomVec(gen, n), k = randomVec(gen, n), v = randomVec(gen, n);
  Vec r = randomVec(gen, n);
  std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()),
      vf(v.begin(), v.end()), rf(r.begin(), r.end());
  Vec out(n), dQ(n), dK(n), dV(n);
  std::vector<float> outF(n), dQF(n), dKF(n), dVF(n);
  RngKey key{8, 9};
  attention(q.data(), k.data(), v.data(), out.data(), batch, heads, seq,
            headDim, 0.35, 0.1, 2, key);
  attention(qf.data(), kf.data(), vf.data(), outF.data(), batch, heads, seq,
            headDim, 0.35, 0.1, 2, key);
  attentionGrad(r.data(), q.data(), k.data(), v.data(), dQ.data(), dK.data(),
                dV.data(), batch, heads, seq, headDim, 0.35, 0.1, 2, key);
  attentionGrad(rf.data(), qf.data(), kf.data(), vf.data(), dQF.data(),
                dKF.data(), dVF.data(), batch, heads, seq, headDim, 0.35, 0.1,
                2, key);
  for (int64_t e = 0; e < n; ++e) {
    EXPECT_NEAR(outF[e], out[e], 1e-5);
    EXPECT_NEAR(dQF[e], dQ[e], 1e-5);
    EXPECT_NEAR(dKF[e], dK[e], 1e-5);
    EXPECT_NEAR(dVF[e], dV[e], 1e-5);
  }

  // Every other kernel, once, with float.
  std::vector<float> a(n), b(n), y(n), w(headDim, 1.0f), bias(headDim, 0.0f),
      dw(headDim), db(headDim);
  std::vector<int32_t> ids(4, 1);
  layerNorm(qf.data(), w.data(), bias.data(), y.data(), n / headDim, headDim,
            1e-5);
  layerNormGrad(rf.data(), qf.data(), w.data(), a.data(), dw.data(), db.data(),
                n / headDim, headDim, 1e-5);
  add(qf.data(), kf.data(), y.data(), n);
  biasAdd(qf.data(), bias.data(), y.data(), n / headDim, headDim);
  biasAddGrad(rf.data(), db.data(), n / headDim, headDim);
  gelu(qf.data(), y.data(), n);
  geluGrad(rf.data(), qf.data(), y.data(), n);
  dropout(qf.data(), y.data(), n, 0.1, 1, key);
  embedding(qf.data(), ids.data(), y.data(), 4, n / headDim, headDim);
  embeddingGrad(rf.data(), ids.data(), a.data(), 4, n / headDim, headDim);
  positionEmbedding(qf.data(), y.data(), 2, headDim);
  positionEmbeddingGrad(rf.data(), a.data(), 2, 4, headDim);
  float *splitOuts[1] = {a.data()};
  const float *mergeIns[1] = {a.data()};
  splitHeads(qf.data(), splitOuts, 1, batch, seq, heads, headDim);
  mergeHeads(mergeIns, b.data(), 1, batch, seq, heads, headDim);
  EXPECT_EQ(b, qf);
  std::vector<int32_t> labels(4, 3);
  float loss = crossEntropy(qf.data(), labels.data(), 4, n / 4);
  EXPECT_TRUE(std::isfinite(loss));
  crossEntropyGrad(1.0f, qf.data(), labels.data(), y.data(), 4, n / 4);
  std::vector<float> m(n, 0.0f), vs(n, 0.0f);
  adamw(a.data(), rf.data(), m.data(), vs.data(), n, 1e-3, 0.9, 0.999, 1e-8,
        0.1, 1, 1.0, true);
  EXPECT_GT(sumOfSquares(rf.data(), n), 0.0);
}

} // namespace

//===----------------------------------------------------------------------===//
// bf16 and f16 storage (mtrt/HalfFloat.h): the roundings PyTorch applies
//===----------------------------------------------------------------------===//

#include "mtrt/HalfFloat.h"

namespace {
float fromBits(uint32_t bits) { return mtrt::bitsFloat(bits); }
} // namespace

TEST(HalfFloat, BFloat16RoundsToNearestEven) {
  using mtrt::floatToBFloat16;
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBFloat16(-2.0f), 0xc000);
  EXPECT_EQ(floatToBFloat16(1.0f / 3.0f), 0x3eab); // 0x3eaaaaab rounds up
  // Ties go to the even neighbour.
  EXPECT_EQ(floatToBFloat16(fromBits(0x3f808000)), 0x3f80);
  EXPECT_EQ(floatToBFloat16(fromBits(0x3f818000)), 0x3f82);
  EXPECT_EQ(floatToBFloat16(fromBits(0x3f808001)), 0x3f81);
  // The largest finite f32 rounds to infinity; infinities and NaN stay.
  EXPECT_EQ(floatToBFloat16(fromBits(0x7f7fffff)), 0x7f80);
  EXPECT_EQ(floatToBFloat16(INFINITY), 0x7f80);
  EXPECT_EQ(floatToBFloat16(-INFINITY), 0xff80);
  EXPECT_TRUE(std::isnan(mtrt::bfloat16ToFloat(floatToBFloat16(NAN))));
}

TEST(HalfFloat, HalfRoundsToNearestEvenWithSubnormalsAndOverflow) {
  using mtrt::floatToHalf;
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.99f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00); // halfway: to even, infinity
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);
  EXPECT_EQ(floatToHalf(-1e6f), 0xfc00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // tie to even: 0
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -26)), 0x0001); // above the tie
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002); // tie 1.5 -> 2
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(INFINITY), 0x7c00);
  EXPECT_EQ(floatToHalf(NAN) & 0x7e00, 0x7e00);
  // Ties between normals: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(HalfFloat, EveryValueRoundTrips) {
  // Widening is exact, so narrowing it back gives every non-NaN bit pattern.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t h = uint16_t(bits);
    float half = mtrt::halfToFloat(h);
    float bf = mtrt::bfloat16ToFloat(h);
    if (!std::isnan(half)) {
      ASSERT_EQ(mtrt::floatToHalf(half), h) << std::hex << bits;
    }
    if (!std::isnan(bf)) {
      ASSERT_EQ(mtrt::floatToBFloat16(bf), h) << std::hex << bits;
    }
  }
  EXPECT_EQ(mtrt::halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(mtrt::halfToFloat(0x7bff), 65504.0f);
}

TEST(AdamW, NonFiniteGradScaleSkipsTheUpdate) {
  std::vector<double> p = {1.0, -2.0}, g = {0.5, 0.5}, m = {0.1, 0.2},
                      v = {0.3, 0.4};
  auto before = std::make_tuple(p, m, v);
  for (double scale : {double(NAN), double(INFINITY)}) {
    adamw(p.data(), g.data(), m.data(), v.data(), 2, 1e-3, 0.9, 0.999, 1e-8,
          0.1, 3, scale, true);
    EXPECT_EQ(std::make_tuple(p, m, v), before);
  }
}
