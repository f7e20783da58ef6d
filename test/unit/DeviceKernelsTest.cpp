//===- DeviceKernelsTest.cpp - The CUDA backend's kernels, on the CPU -----===//
//
// Runs every work item of the CUDA backend's single-source kernels
// (runtime/src/cuda/DeviceKernels.h) on the host, as a grid would, and
// compares with the CPU backend's kernels (runtime/src/cpu/HostKernels.h):
// the index arithmetic and numerics the GPU runs, checked without a GPU.
//
//===----------------------------------------------------------------------===//

#include "cuda/DeviceKernels.h"
#include "HostGrid.h"
#include "TensorParallelDropout.h"
#include "cpu/HostKernels.h"
#include "mtrt/HalfFloat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace mtrt;
using mtrt::testing::grid;
using mtrt::testing::randomFloats;

namespace {

std::vector<double> widen(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

/// Every thread of a grid of `threads`, as launchThreads runs them: f(t,
/// threads) for each t.
template <typename F> void threadsOf(int64_t threads, F f) {
  for (int64_t t = 0; t < threads; ++t)
    f(t, threads);
}

/// launchEmbeddingGrad's passes: the table zeroed, the tokens placed in
/// row order, each row's run summed.
/// With `accumulateInto`, the table starts as it (not zeroed) and each
/// row's sum is added (launchEmbeddingGrad's accumulate).
std::vector<float>
embeddingGradAsLaunched(const std::vector<float> &dOut,
                        const std::vector<int32_t> &ids, int64_t vocab,
                        int64_t hidden, int64_t offset,
                        const std::vector<float> *accumulateInto = nullptr) {
  const int64_t tokens = int64_t(ids.size());
  std::vector<float> dTable = accumulateInto
                                  ? *accumulateInto
                                  : std::vector<float>(size_t(vocab * hidden));
  std::vector<int32_t> order(size_t(tokens), -1), count(size_t(tokens), -1);
  grid(tokens, [&](int64_t t) {
    gpu::embeddingGradPlaceItem(t, ids.data(), tokens, vocab, offset,
                                order.data(), count.data());
  });
  // Every place written once: the order is a permutation.
  std::vector<int32_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t t = 0; t < tokens; ++t)
    EXPECT_EQ(sorted[size_t(t)], t);
  grid(tokens * hidden, [&](int64_t item) {
    gpu::embeddingGradSumItem(item, dOut.data(), ids.data(), order.data(),
                              count.data(), dTable.data(), hidden, offset,
                              accumulateInto != nullptr);
  });
  return dTable;
}

TEST(DeviceKernels, EmbeddingAndItsGradient) {
  std::mt19937_64 gen(1);
  const int64_t vocab = 7, hidden = 5, tokens = 9, offset = 2;
  std::vector<float> table = randomFloats(gen, vocab * hidden, -1, 1);
  std::vector<int32_t> ids = {0, 2, 8, 3, 3, 9, 4, 2, 1};
  std::vector<float> expected(tokens * hidden), got(tokens * hidden);
  cpu::embedding(table.data(), ids.data(), expected.data(), tokens, vocab,
                 hidden, offset);
  grid(tokens * hidden, [&](int64_t i) {
    gpu::embeddingItem(i, table.data(), ids.data(), got.data(), vocab, hidden,
                       offset);
  });
  EXPECT_EQ(got, expected);

  // A 16-bit table and output (bf16, then fp16) gathered as bits: what the
  // CPU backend's widening, gathering and rounding give.
  for (bool bf16 : {true, false}) {
    std::vector<uint16_t> halfTable(table.size()), halfGot(tokens * hidden, 7);
    narrowToHalves(table.data(), halfTable.data(), int64_t(table.size()), bf16);
    std::vector<float> wide(table.size()), gathered(tokens * hidden);
    widenHalves(halfTable.data(), wide.data(), int64_t(wide.size()), bf16);
    cpu::embedding(wide.data(), ids.data(), gathered.data(), tokens, vocab,
                   hidden, offset);
    std::vector<uint16_t> halfExpected(gathered.size());
    narrowToHalves(gathered.data(), halfExpected.data(),
                   int64_t(gathered.size()), bf16);
    grid(tokens * hidden, [&](int64_t i) {
      gpu::embeddingItem(i, halfTable.data(), ids.data(), halfGot.data(), vocab,
                         hidden, offset);
    });
    EXPECT_EQ(halfGot, halfExpected) << (bf16 ? "bf16" : "fp16");
  }

  std::vector<float> dOut = randomFloats(gen, tokens * hidden, -1, 1);
  std::vector<float> dExpected(vocab * hidden), dGot(vocab * hidden, 7.0f);
  cpu::embeddingGrad(dOut.data(), ids.data(), dExpected.data(), tokens, vocab,
                     hidden, offset);
  EXPECT_EQ(embeddingGradAsLaunched(dOut, ids, vocab, hidden, offset),
            dExpected);

  const int64_t seq = 3, positions = 6;
  std::vector<float> pExpected(positions * hidden), pGot(positions * hidden);
  cpu::positionEmbeddingGrad(dOut.data(), pExpected.data(), seq, positions,
                             hidden);
  grid(positions * hidden, [&](int64_t i) {
    gpu::positionEmbeddingGradItem(i, dOut.data(), pGot.data(), seq, hidden);
  });
  EXPECT_EQ(pGot, pExpected);
}

// The sums are the CPU's bits whatever the ids: many tokens on few rows
// (long runs, added in token order), every token on one row, ids of
// other shards' rows (a vocabulary-parallel table's offset) and no token
// in range at all.
TEST(DeviceKernels, EmbeddingGradientRuns) {
  std::mt19937_64 gen(11);
  const int64_t hidden = 3, vocab = 5;
  std::vector<std::vector<int32_t>> cases = {
      std::vector<int32_t>(40, 3), {9, 9, 9}, {}};
  std::vector<int32_t> mixed(300);
  for (int32_t &id : mixed)
    id = int32_t(gen() % 12); // rows 0..4 in range at offset 4, the rest not
  cases.push_back(mixed);
  for (int64_t offset : {int64_t(0), int64_t(4)})
    for (const std::vector<int32_t> &ids : cases) {
      const int64_t tokens = int64_t(ids.size());
      std::vector<float> dOut = randomFloats(gen, tokens * hidden, -1, 1);
      std::vector<float> expected(size_t(vocab * hidden));
      cpu::embeddingGrad(dOut.data(), ids.data(), expected.data(), tokens,
                         vocab, hidden, offset);
      EXPECT_EQ(embeddingGradAsLaunched(dOut, ids, vocab, hidden, offset),
                expected)
          << tokens << " tokens, offset " << offset;
      // Accumulating into a table (a tied head's gradient): the rows' sums
      // added once, as an add after the gradient; the CPU backend's
      // accumulating kernel gives the same bits, and rows no token reads
      // keep their values.
      std::vector<float> head = randomFloats(gen, vocab * hidden, -1, 1);
      std::vector<float> added = head, accumulated = head;
      for (size_t i = 0; i < added.size(); ++i)
        added[i] += expected[i];
      cpu::embeddingGradAccumulate(dOut.data(), ids.data(), accumulated.data(),
                                   tokens, vocab, hidden, offset);
      EXPECT_EQ(accumulated, added) << tokens << " tokens at offset " << offset;
      EXPECT_EQ(
          embeddingGradAsLaunched(dOut, ids, vocab, hidden, offset, &head),
          added)
          << tokens << " tokens at offset " << offset << ", accumulating";
    }
}

TEST(DeviceKernels, LayerNormAndBiasGradients) {
  std::mt19937_64 gen(2);
  const int64_t rows = 6, cols = 11;
  const double eps = 1e-5;
  std::vector<float> x = randomFloats(gen, rows * cols, -3, 5);
  std::vector<float> w = randomFloats(gen, cols, 0.5, 1.5);
  std::vector<float> b = randomFloats(gen, cols, -1, 1);
  std::vector<float> dY = randomFloats(gen, rows * cols, -1, 1);
  std::vector<float> y(rows * cols), yGot(rows * cols);
  cpu::layerNorm(x.data(), w.data(), b.data(), y.data(), rows, cols, eps);
  grid(rows, [&](int64_t r) {
    gpu::layerNormRow(r, x.data(), w.data(), b.data(), yGot.data(), cols, eps);
  });
  EXPECT_EQ(yGot, y);

  std::vector<float> dX(rows * cols), dW(cols), dB(cols);
  cpu::layerNormGrad(dY.data(), x.data(), w.data(), dX.data(), dW.data(),
                     dB.data(), rows, cols, eps);
  std::vector<float> dXGot(rows * cols), dWGot(cols), dBGot(cols);
  std::vector<double> stats(2 * rows);
  grid(rows, [&](int64_t r) {
    gpu::layerNormGradRow(r, dY.data(), x.data(), w.data(), dXGot.data(),
                          stats.data(), cols, eps);
  });
  grid(cols, [&](int64_t c) {
    gpu::layerNormGradColumn(c, dY.data(), x.data(), stats.data(), dWGot.data(),
                             dBGot.data(), rows, cols);
  });
  EXPECT_EQ(dXGot, dX);
  EXPECT_EQ(dWGot, dW);
  EXPECT_EQ(dBGot, dB);
}

TEST(DeviceKernels, SplitAndMergeHeads) {
  std::mt19937_64 gen(3);
  const int64_t batch = 2, seq = 3, heads = 4, headDim = 5, chunks = 3;
  const int64_t n = batch * seq * chunks * heads * headDim;
  std::vector<float> x = randomFloats(gen, static_cast<size_t>(n), -1, 1);
  std::vector<std::vector<float>> expected(chunks), got(chunks);
  std::vector<float *> outs;
  gpu::HeadChunks views{};
  for (int64_t c = 0; c < chunks; ++c) {
    expected[c].resize(size_t(n / chunks));
    got[c].resize(size_t(n / chunks));
    outs.push_back(expected[c].data());
    views.p[c] = got[c].data();
  }
  cpu::splitHeads(x.data(), outs.data(), chunks, batch, seq, heads, headDim);
  grid(n, [&](int64_t i) {
    gpu::headsItem(i, x.data(), views, chunks, seq, heads, headDim, false);
  });
  EXPECT_EQ(got, expected);
  std::vector<float> merged(static_cast<size_t>(n), 0.0f);
  grid(n, [&](int64_t i) {
    gpu::headsItem(i, merged.data(), views, chunks, seq, heads, headDim, true);
  });
  EXPECT_EQ(merged, x);
}

TEST(DeviceKernels, CrossEntropyAndItsGradient) {
  std::mt19937_64 gen(5);
  const int64_t rows = 5, vocab = 13;
  std::vector<float> logits = randomFloats(gen, rows * vocab, -4, 6);
  std::vector<int32_t> labels = {0, 12, 5, 99, 7}; // 99: out of range
  std::vector<double> logitsd = widen(logits);
  double expected =
      cpu::crossEntropy(logitsd.data(), labels.data(), rows, vocab);
  std::vector<double> losses(rows);
  grid(rows, [&](int64_t r) {
    gpu::crossEntropyRow(r, logits.data(), labels.data(), losses.data(), vocab);
  });
  float loss = 0;
  gpu::meanOfRows(losses.data(), rows, &loss);
  EXPECT_EQ(loss, float(expected));

  float dLoss = 1.7f;
  std::vector<double> dExpected(rows * vocab);
  cpu::crossEntropyGrad(double(dLoss), logitsd.data(), labels.data(),
                        dExpected.data(), rows, vocab);
  std::vector<float> dGot(rows * vocab);
  grid(rows, [&](int64_t r) {
    gpu::crossEntropyGradRow(r, &dLoss, logits.data(), labels.data(),
                             dGot.data(), rows, vocab);
  });
  for (int64_t i = 0; i < rows * vocab; ++i)
    EXPECT_NEAR(dGot[i], dExpected[i], 1e-7) << i;
}

// A padded vocabulary on one rank: rows of 16 columns of which 13 are real,
// the padding garbage the kernels must mask; the same loss and gradient as
// the host kernels' of the padded rows, and a zero gradient on the padding.
TEST(DeviceKernels, PaddedCrossEntropyMasksThePadding) {
  std::mt19937_64 gen(6);
  const int64_t rows = 5, vocab = 16, valid = 13;
  std::vector<float> logits = randomFloats(gen, rows * vocab, -4, 6);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = valid; c < vocab; ++c)
      logits[r * vocab + c] = 80.0f;
  std::vector<int32_t> labels = {0, 12, 5, 14, 7}; // 14: padding
  std::vector<double> logitsd = widen(logits);
  double expected =
      cpu::crossEntropy(logitsd.data(), labels.data(), rows, vocab, valid);
  std::vector<double> losses(rows);
  grid(rows, [&](int64_t r) {
    gpu::crossEntropyRow(r, logits.data(), labels.data(), losses.data(), vocab,
                         valid);
  });
  float loss = 0;
  gpu::meanOfRows(losses.data(), rows, &loss);
  EXPECT_EQ(loss, float(expected));
  EXPECT_LT(loss, 20.0f); // the padding's 80s are not in the sum

  float dLoss = 1.7f;
  std::vector<double> dExpected(rows * vocab);
  cpu::crossEntropyGrad(double(dLoss), logitsd.data(), labels.data(),
                        dExpected.data(), rows, vocab, 0, -1, valid);
  std::vector<float> dGot(rows * vocab, -1.0f);
  grid(rows, [&](int64_t r) {
    gpu::crossEntropyGradRow(r, &dLoss, logits.data(), labels.data(),
                             dGot.data(), rows, vocab, valid);
  });
  for (int64_t i = 0; i < rows * vocab; ++i) {
    EXPECT_NEAR(dGot[i], dExpected[i], 1e-7) << i;
    if (i % vocab >= valid) {
      EXPECT_EQ(dGot[i], 0.0f) << i;
    }
  }
}

// Two ranks of a vocab-parallel cross-entropy, each holding 7 columns of a
// vocabulary of 11 padded to 14 (the padding holds garbage the kernels must
// mask), reduced across the ranks as the CUDA backend's collectives do:
// the loss and gradient of the whole vocabulary.
TEST(DeviceKernels, VocabParallelCrossEntropyEqualsTheWholeVocabularys) {
  std::mt19937_64 gen(6);
  const int64_t rows = 5, vocab = 11, ranks = 2, local = 7;
  std::vector<float> padded = randomFloats(gen, rows * ranks * local, -4, 6);
  std::vector<int32_t> labels = {0, 10, 6, 99, 7}; // 99: out of range
  std::vector<double> whole(rows * vocab);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < vocab; ++c)
      whole[r * vocab + c] = padded[r * ranks * local + c];
  std::vector<std::vector<float>> pieces(ranks);
  for (int64_t k = 0; k < ranks; ++k)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < local; ++c)
        pieces[k].push_back(padded[r * ranks * local + k * local + c]);
  auto validOf = [&](int64_t k) {
    return std::clamp<int64_t>(vocab - k * local, 0, local);
  };
  // Maxima, then their maximum over the ranks.
  std::vector<double> maxima(rows, -INFINITY), sums(rows, 0.0),
      targets(rows, 0.0);
  for (int64_t k = 0; k < ranks; ++k) {
    std::vector<double> mine(rows);
    grid(rows, [&](int64_t r) {
      gpu::vocabRowMax(r, pieces[k].data(), local, validOf(k), mine.data());
    });
    for (int64_t r = 0; r < rows; ++r)
      maxima[r] = std::max(maxima[r], mine[r]);
  }
  for (int64_t k = 0; k < ranks; ++k) {
    std::vector<double> mySums(rows), myTargets(rows);
    grid(rows, [&](int64_t r) {
      gpu::vocabRowSums(r, pieces[k].data(), labels.data(), maxima.data(),
                        local, validOf(k), k * local, mySums.data(),
                        myTargets.data());
    });
    for (int64_t r = 0; r < rows; ++r) {
      sums[r] += mySums[r];
      targets[r] += myTargets[r];
    }
  }
  float loss = 0;
  gpu::vocabLossMean(maxima.data(), sums.data(), targets.data(), rows, &loss);
  double expected = cpu::crossEntropy(whole.data(), labels.data(), rows, vocab);
  EXPECT_NEAR(loss, expected, 1e-6 * std::abs(expected));

  float dLoss = 1.7f;
  std::vector<double> dExpected(rows * vocab);
  cpu::crossEntropyGrad(double(dLoss), whole.data(), labels.data(),
                        dExpected.data(), rows, vocab);
  for (int64_t k = 0; k < ranks; ++k) {
    std::vector<float> dGot(rows * local, 7.0f);
    grid(rows, [&](int64_t r) {
      gpu::vocabGradRow(r, &dLoss, pieces[k].data(), labels.data(),
                        maxima.data(), sums.data(), local, validOf(k),
                        k * local, rows, dGot.data());
    });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < local; ++c) {
        int64_t column = k * local + c;
        double want = column < vocab ? dExpected[r * vocab + column] : 0.0;
        EXPECT_NEAR(dGot[r * local + c], want, 1e-7) << r << " " << column;
      }
  }
}

// The norm's sum of squares and the bias gradient are block reductions
// (Reductions.cuh), checked on a GPU by CudaKernelsTest.
TEST(DeviceKernels, ClipAndAdamW) {
  std::mt19937_64 gen(6);
  float one = 1.0f, big = 1e9f, nan = NAN, zero = 0.0f, clip = 0;
  gpu::clipScale(&big, &one, &clip);
  EXPECT_FLOAT_EQ(clip, float(1.0 / (1e9 + 1e-6)));
  gpu::clipScale(&one, &big, &clip);
  EXPECT_EQ(clip, 1.0f);
  gpu::clipScale(&nan, &one, &clip);
  EXPECT_TRUE(std::isnan(clip));
  gpu::clipScale(&big, &zero, &clip);
  EXPECT_EQ(clip, 1.0f);

  const int64_t m = 37;
  std::vector<float> param = randomFloats(gen, m, -1, 1),
                     grad = randomFloats(gen, m, -1, 1),
                     avg = randomFloats(gen, m, -0.1f, 0.1f),
                     avgSq = randomFloats(gen, m, 0, 0.01f);
  float step = 3, lr = 6e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f,
        wd = 0.1f, scale = 0.5f;
  for (bool decay : {false, true}) {
    std::vector<float> p1 = param, m1 = avg, v1 = avgSq;
    cpu::adamw(p1.data(), grad.data(), m1.data(), v1.data(), m, lr, beta1,
               beta2, eps, wd, int64_t(step), scale, decay);
    gpu::AdamScalars s{&step, &lr, &beta1, &beta2, &eps, &wd, &scale};
    // Threads of one element each, several, and more threads than elements.
    for (int64_t threads : {m, int64_t(4), int64_t(1), int64_t(100)}) {
      std::vector<float> p2 = param, m2 = avg, v2 = avgSq;
      threadsOf(threads, [&](int64_t t, int64_t all) {
        gpu::adamwThread(t, all, m, p2.data(), grad.data(), m2.data(),
                         v2.data(), s, decay);
      });
      EXPECT_EQ(p2, p1) << threads << " threads";
      EXPECT_EQ(m2, m1) << threads << " threads";
      EXPECT_EQ(v2, v1) << threads << " threads";
    }
  }
  // A non-finite gradient scale applies nothing.
  std::vector<float> p3 = param, m3 = avg, v3 = avgSq;
  gpu::AdamScalars skip{&step, &lr, &beta1, &beta2, &eps, &wd, &nan};
  threadsOf(3, [&](int64_t t, int64_t all) {
    gpu::adamwThread(t, all, m, p3.data(), grad.data(), m3.data(), v3.data(),
                     skip, true);
  });
  EXPECT_EQ(p3, param);
  EXPECT_EQ(m3, avg);
  EXPECT_EQ(v3, avgSq);

  // Multi-tensor AdamW: one pass over tensors of 5, 0, 1 and 31 elements
  // (an empty one among them), or over many small ones, is bit for bit the
  // per-tensor update, however many threads share it (a thread's elements
  // then cross segments, one at a time or several at once, and its
  // kAdamUnroll elements end inside a round or past the last).
  const std::vector<int64_t> fewTensors = {5, 0, 1, 31};
  const std::vector<int64_t> manyTensors = {2, 1, 3, 0, 0, 1, 2, 2, 1, 3,
                                            1, 1, 2, 0, 3, 1, 2, 1, 1, 9};
  for (auto [threads, sizes] :
       {std::pair{int64_t(37), fewTensors}, std::pair{int64_t(1), fewTensors},
        std::pair{int64_t(3), fewTensors}, std::pair{int64_t(6), fewTensors},
        std::pair{int64_t(64), fewTensors}, std::pair{int64_t(1), manyTensors},
        std::pair{int64_t(2), manyTensors}, std::pair{int64_t(5), manyTensors},
        std::pair{int64_t(11), manyTensors}}) {
    std::vector<std::vector<float>> ps, gs, ms, vs;
    // Every third tensor has an f16 copy of its parameter (the others a
    // null one), which must end as the updated parameter's cast.
    std::vector<std::vector<uint16_t>> copies;
    std::vector<gpu::AdamSegment> segments;
    int64_t total = 0;
    for (int64_t n : sizes) {
      ps.push_back(randomFloats(gen, n, -1, 1));
      gs.push_back(randomFloats(gen, n, -1, 1));
      ms.push_back(randomFloats(gen, n, -0.1f, 0.1f));
      vs.push_back(randomFloats(gen, n, 0, 0.01f));
      copies.emplace_back(size_t(n), uint16_t(0xFFFF));
    }
    auto ps1 = ps, ms1 = ms, vs1 = vs;
    for (size_t k = 0; k < sizes.size(); ++k) {
      segments.push_back({ps[k].data(), gs[k].data(), ms[k].data(),
                          vs[k].data(), k % 3 == 0 ? copies[k].data() : nullptr,
                          total});
      total += sizes[k];
      cpu::adamw(ps1[k].data(), gs[k].data(), ms1[k].data(), vs1[k].data(),
                 sizes[k], lr, beta1, beta2, eps, wd, int64_t(step), scale,
                 true);
    }
    gpu::AdamScalars s{&step, &lr, &beta1, &beta2, &eps, &wd, &scale};
    threadsOf(threads, [&](int64_t t, int64_t all) {
      gpu::multiAdamwThread(t, all, segments.data(), int64_t(segments.size()),
                            total, s, true, /*copyBf16=*/false);
    });
    EXPECT_EQ(ps, ps1) << threads << " threads";
    EXPECT_EQ(ms, ms1) << threads << " threads";
    EXPECT_EQ(vs, vs1) << threads << " threads";
    for (size_t k = 0; k < sizes.size(); ++k)
      for (size_t i = 0; i < copies[k].size(); ++i)
        EXPECT_EQ(copies[k][i],
                  k % 3 == 0 ? toHalfBits(ps1[k][i], false) : uint16_t(0xFFFF))
            << threads << " threads, tensor " << k << " element " << i;
  }

  // By chunks (multiAdamwChunkThread): tensors of several chunks, an
  // empty one, one not 16-byte aligned (element by element) and tails of
  // 1 to 3 elements after the groups of 4, for any number of blocks and
  // threads: the per-tensor update, bit for bit, and each copy its
  // parameter's bf16 cast.
  {
    const std::vector<int64_t> sizes = {
        5, 0, 2 * gpu::kAdamChunk + 7, 3, gpu::kAdamChunk, gpu::kAdamChunk + 3};
    for (auto [blocks, threads] :
         {std::pair{int64_t(1), int64_t(1)}, std::pair{int64_t(3), int64_t(7)},
          std::pair{int64_t(2), int64_t(64)},
          std::pair{int64_t(9), int64_t(256)}}) {
      std::vector<std::vector<float>> ps, gs, ms, vs;
      std::vector<std::vector<uint16_t>> copies;
      // Room for each array to start at a 16-byte boundary (std::vector
      // promises no more than the element's alignment), and tensor 4's one
      // element past it.
      const int64_t room = 9;
      for (int64_t n : sizes) {
        ps.push_back(randomFloats(gen, n + room, -1, 1));
        gs.push_back(randomFloats(gen, n + room, -1, 1));
        ms.push_back(randomFloats(gen, n + room, -0.1f, 0.1f));
        vs.push_back(randomFloats(gen, n + room, 0, 0.01f));
        copies.emplace_back(size_t(n + room), uint16_t(0xFFFF));
      }
      // The index of the first element at a 16-byte boundary.
      auto aligned = [](const auto &array) {
        const uintptr_t address = reinterpret_cast<uintptr_t>(array.data());
        return int64_t((16 - address % 16) % 16 / sizeof(array[0]));
      };
      auto ps1 = ps, ms1 = ms, vs1 = vs;
      std::vector<gpu::AdamSegment> segments;
      // Where each tensor's parameter, gradient, moments and copy start.
      std::vector<std::array<int64_t, 5>> at(sizes.size());
      int64_t total = 0, chunks = 0, vectorized = 0;
      for (size_t k = 0; k < sizes.size(); ++k) {
        const int64_t off = k == 4 ? 1 : 0;
        at[k] = {aligned(ps[k]) + off, aligned(gs[k]) + off,
                 aligned(ms[k]) + off, aligned(vs[k]) + off,
                 aligned(copies[k]) + off};
        segments.push_back({ps[k].data() + at[k][0], gs[k].data() + at[k][1],
                            ms[k].data() + at[k][2], vs[k].data() + at[k][3],
                            k % 2 == 0 ? copies[k].data() + at[k][4] : nullptr,
                            total, chunks, 0});
        segments.back().vectorized = gpu::adamVectorizable(segments.back());
        vectorized += segments.back().vectorized;
        total += sizes[k];
        chunks += gpu::adamChunksOf(sizes[k]);
        cpu::adamw(ps1[k].data() + at[k][0], gs[k].data() + at[k][1],
                   ms1[k].data() + at[k][2], vs1[k].data() + at[k][3], sizes[k],
                   lr, beta1, beta2, eps, wd, int64_t(step), scale, true);
      }
      EXPECT_EQ(chunks, 1 + 0 + 3 + 1 + 1 + 2);
      EXPECT_EQ(vectorized, 5); // all but tensor 4
      gpu::AdamScalars s{&step, &lr, &beta1, &beta2, &eps, &wd, &scale};
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t t = 0; t < threads; ++t)
          gpu::multiAdamwChunkThread(b, blocks, t, threads, segments.data(),
                                     int64_t(segments.size()), chunks, total, s,
                                     true, /*copyBf16=*/true);
      std::string where = std::to_string(blocks) + " blocks of " +
                          std::to_string(threads) + " threads";
      EXPECT_EQ(ps, ps1) << where;
      EXPECT_EQ(ms, ms1) << where;
      EXPECT_EQ(vs, vs1) << where;
      for (size_t k = 0; k < sizes.size(); ++k)
        for (int64_t i = 0; i < sizes[k] + room; ++i) {
          const int64_t j = i - at[k][4]; // the tensor's element
          const bool written = k % 2 == 0 && j >= 0 && j < sizes[k];
          ASSERT_EQ(copies[k][size_t(i)],
                    written ? toHalfBits(ps1[k][size_t(at[k][0] + j)], true)
                            : uint16_t(0xFFFF))
              << where << ", tensor " << k << " element " << i;
        }
    }
  }

  int flag = 0;
  std::vector<float> finite = {1, 2, 3}, inf = {1, INFINITY, 3};
  grid(3, [&](int64_t i) { gpu::nonFiniteItem(i, finite.data(), &flag); });
  EXPECT_EQ(flag, 0);
  grid(3, [&](int64_t i) { gpu::nonFiniteItem(i, inf.data(), &flag); });
  EXPECT_EQ(flag, 1);
}

// mt.multi_cast's threads (launchMultiConvert) over several tensors, an
// empty one among them: each element narrowed to bf16 or f16 and widened
// back as the CPU backend casts it, for any number of threads.
TEST(DeviceKernels, MultiTensorCastEqualsTheHostCasts) {
  std::mt19937_64 gen(17);
  const std::vector<int64_t> sizes = {5, 0, 1000, 1, 37};
  int64_t total = 0;
  std::vector<std::vector<float>> wide;
  for (int64_t n : sizes) {
    wide.push_back(randomFloats(gen, std::max<int64_t>(n, 1), -70000, 70000));
    total += n;
  }
  for (bool bf16 : {true, false})
    for (int64_t threads : {int64_t(1), int64_t(3), int64_t(64), total + 5}) {
      std::vector<std::vector<uint16_t>> half;
      std::vector<std::vector<float>> back;
      std::vector<gpu::CastSegment> narrow, widen;
      int64_t start = 0;
      for (size_t k = 0; k < sizes.size(); ++k) {
        half.emplace_back(wide[k].size());
        back.emplace_back(wide[k].size());
      }
      for (size_t k = 0; k < sizes.size(); ++k) {
        narrow.push_back({half[k].data(), wide[k].data(), start});
        widen.push_back({half[k].data(), back[k].data(), start});
        start += sizes[k];
      }
      threadsOf(threads, [&](int64_t t, int64_t all) {
        gpu::multiConvertThread(t, all, narrow.data(), int64_t(narrow.size()),
                                total, bf16, /*narrow=*/true);
      });
      threadsOf(threads, [&](int64_t t, int64_t all) {
        gpu::multiConvertThread(t, all, widen.data(), int64_t(widen.size()),
                                total, bf16, /*narrow=*/false);
      });
      for (size_t k = 0; k < sizes.size(); ++k)
        for (int64_t i = 0; i < sizes[k]; ++i) {
          float x = wide[k][size_t(i)];
          uint16_t want = bf16 ? floatToBFloat16(x) : floatToHalf(x);
          ASSERT_EQ(half[k][size_t(i)], want)
              << "tensor " << k << " element " << i << ", " << threads
              << " threads";
          ASSERT_EQ(back[k][size_t(i)],
                    bf16 ? bfloat16ToFloat(want) : halfToFloat(want));
        }
    }
}

// The GeLU epilogues' in-place fallback: GeLU and its gradient over a
// 16-bit product as stored (pointwiseStoredItem), each the fp32 kernel's
// value on the widened operands, rounded once; the gradient in place.
TEST(DeviceKernels, GeluOverSixteenBitStorage) {
  std::mt19937_64 gen(19);
  const int64_t n = 301;
  std::vector<float> x = randomFloats(gen, n, -6, 6),
                     dy = randomFloats(gen, n, -2, 2);
  for (bool bf16 : {true, false}) {
    auto narrow = [bf16](float v) {
      return bf16 ? floatToBFloat16(v) : floatToHalf(v);
    };
    auto widen = [bf16](uint16_t h) {
      return bf16 ? bfloat16ToFloat(h) : halfToFloat(h);
    };
    std::vector<uint16_t> xs(n), dys(n), y(n);
    for (int64_t i = 0; i < n; ++i) {
      xs[size_t(i)] = narrow(x[size_t(i)]);
      dys[size_t(i)] = narrow(dy[size_t(i)]);
    }
    grid(n, [&](int64_t i) {
      gpu::pointwiseStoredItem(i, gpu::Pointwise::Gelu, xs.data(), nullptr,
                               y.data(), bf16);
    });
    std::vector<uint16_t> dx = dys; // in place, as the fallback runs it
    grid(n, [&](int64_t i) {
      gpu::pointwiseStoredItem(i, gpu::Pointwise::GeluGrad, dx.data(),
                               xs.data(), dx.data(), bf16);
    });
    for (int64_t i = 0; i < n; ++i) {
      float wideX = widen(xs[size_t(i)]), wideDy = widen(dys[size_t(i)]);
      float want = 0, wantGrad = 0;
      gpu::pointwiseItem(0, gpu::Pointwise::Gelu, &wideX, nullptr, &want, 1);
      gpu::pointwiseItem(0, gpu::Pointwise::GeluGrad, &wideDy, &wideX,
                         &wantGrad, 1);
      ASSERT_EQ(y[size_t(i)], narrow(want)) << i << (bf16 ? " bf16" : " f16");
      ASSERT_EQ(dx[size_t(i)], narrow(wantGrad))
          << i << (bf16 ? " bf16" : " f16");
    }
  }
}

// The key read when the kernel runs (DropoutKey::live: what a CUDA graph
// replays with each step's seed and step written to the device) draws the
// mask the key by value draws, for the dropout and for attention's.
TEST(DeviceKernels, LiveKeyDrawsTheStepsMask) {
  std::mt19937_64 gen(8);
  const int64_t n = 515;
  std::vector<float> x = randomFloats(gen, n, -2, 2);
  gpu::DropoutKey byValue;
  byValue.stream = 3;
  byValue.p = 0.3;
  byValue.offset = 77;
  gpu::DropoutKey live = byValue;
  uint64_t words[2] = {0, 0};
  live.live = words;
  for (uint64_t step : {1u, 2u, 1000u}) {
    byValue.seed = 0xfeedULL + step;
    byValue.step = uint32_t(step);
    words[0] = byValue.seed; // written before each step, as the runtime does
    words[1] = step;
    std::vector<float> expected(n), got(n);
    grid(n, [&](int64_t i) {
      gpu::dropoutItem(i, x.data(), expected.data(), byValue, 0, 0, 0, 0);
      gpu::dropoutItem(i, x.data(), got.data(), live, 0, 0, 0, 0);
    });
    EXPECT_EQ(got, expected) << "step " << step;
    gpu::AttentionDropout attention, attentionLive;
    attention.key = byValue;
    attentionLive.key = live;
    attention.heads = attentionLive.heads = 2;
    attention.headsTotal = attentionLive.headsTotal = 4;
    attention.headOffset = attentionLive.headOffset = 2;
    for (int64_t bh = 0; bh < 4; ++bh)
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j <= i; ++j)
          ASSERT_EQ(attentionLive.factor(bh, i, j, 5),
                    attention.factor(bh, i, j, 5));
  }
  // Another step's words draw another mask.
  words[1] = 999;
  std::vector<float> before(n), after(n);
  grid(n, [&](int64_t i) {
    gpu::dropoutItem(i, x.data(), before.data(), byValue, 0, 0, 0, 0);
    gpu::dropoutItem(i, x.data(), after.data(), live, 0, 0, 0, 0);
  });
  EXPECT_NE(after, before);
}

TEST(DeviceKernels, DropoutMasksEqualTheCpuBackends) {
  std::mt19937_64 gen(7);
  const int64_t n = 1003;
  std::vector<float> x = randomFloats(gen, n, -2, 2);
  // Dropped infinities and NaNs are 0, as the CPU backend writes them
  // (fp16 overflow must not survive a dropped element).
  for (int64_t i = 0; i < n; i += 3)
    x[size_t(i)] = i % 2 ? INFINITY : NAN;
  for (double p : {0.0, 0.1, 0.5, 1.0}) {
    gpu::DropoutKey key;
    key.seed = 0x123456789abcdefULL;
    key.step = 17;
    key.stream = 5;
    key.p = p;
    key.offset = 998;
    std::vector<float> expected(n), got(n);
    cpu::dropout(x.data(), expected.data(), n, p, key.stream,
                 cpu::RngKey{key.seed, key.step}, key.offset);
    grid(n, [&](int64_t i) {
      gpu::dropoutItem(i, x.data(), got.data(), key, 0, 0, 0, 0);
    });
    for (int64_t i = 0; i < n; ++i) // bitwise: NaN == NaN here
      ASSERT_EQ(std::memcmp(&got[size_t(i)], &expected[size_t(i)], 4), 0)
          << "p " << p << ", element " << i << ": " << got[size_t(i)]
          << " against " << expected[size_t(i)];
  }
  // Split along the sequence: [2, 3, 7] of a sequence of 8 from row 4.
  const int64_t batch = 2, seqLocal = 3, seqTotal = 8, seqOffset = 4, inner = 7;
  gpu::DropoutKey key;
  key.seed = 99;
  key.step = 3;
  key.stream = 2;
  key.p = 0.3;
  key.offset = 11;
  std::vector<float> expected(batch * seqLocal * inner),
      got(batch * seqLocal * inner);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seqLocal; ++t) {
      int64_t row = (b * seqLocal + t) * inner;
      cpu::dropout(x.data() + row, expected.data() + row, inner, key.p,
                   key.stream, cpu::RngKey{key.seed, key.step},
                   key.offset +
                       uint64_t((b * seqTotal + seqOffset + t) * inner));
    }
  grid(batch * seqLocal * inner, [&](int64_t i) {
    gpu::dropoutItem(i, x.data(), got.data(), key, seqLocal, seqTotal,
                     seqOffset, inner);
  });
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * 4), 0);
}

// The attention kernels (FlashAttention.cuh, checked against the CPU
// backend on a GPU by CudaKernelsTest) draw each probability's mask
// element through AttentionDropout: here, every (pair, i, j) against the
// CPU backend's draw, for a tensor-parallel rank holding two of four heads.
TEST(DeviceKernels, AttentionDropoutEqualsTheCpuBackends) {
  gpu::AttentionDropout dropout = tensorParallelDropout();
  const int64_t seq = 9, pairs = 2 * dropout.heads;
  cpu::RngKey key{dropout.key.seed, dropout.key.step};
  int dropped = 0;
  for (int64_t bh = 0; bh < pairs; ++bh)
    for (int64_t i = 0; i < seq; ++i) {
      uint64_t row = cpu::detail::maskRowIndex(
          dropout.key.offset, bh, dropout.heads, dropout.headsTotal,
          dropout.headOffset, seq, i);
      for (int64_t j = 0; j <= i; ++j) {
        bool keep = cpu::dropoutKeep(key, dropout.key.stream, row + uint64_t(j),
                                     dropout.key.p);
        double factor = dropout.factor(bh, i, j, seq);
        ASSERT_EQ(factor, keep ? 1.0 / (1.0 - dropout.key.p) : 0.0)
            << "pair " << bh << " (" << i << ", " << j << ")";
        dropped += factor == 0.0;
      }
    }
  // The mask drops something (else the test would not test it).
  EXPECT_GT(dropped, 0);
}

// Every 16-bit value widens, and a sweep of floats (normal, subnormal,
// halfway, overflowing, NaN) narrows, exactly as mtrt/HalfFloat.h does.
TEST(DeviceKernels, SixteenBitConversionsEqualTheRuntimes) {
  for (bool bf16 : {true, false}) {
    std::vector<uint16_t> all(65536);
    std::vector<float> wide(65536);
    for (uint32_t v = 0; v < 65536; ++v)
      all[v] = uint16_t(v);
    grid(65536, [&](int64_t i) {
      gpu::convertItem(i, all.data(), wide.data(), bf16, false);
    });
    for (uint32_t v = 0; v < 65536; ++v) {
      float expected =
          bf16 ? bfloat16ToFloat(uint16_t(v)) : halfToFloat(uint16_t(v));
      ASSERT_EQ(floatBits(wide[v]), floatBits(expected)) << v;
    }
    std::mt19937_64 gen(9);
    std::vector<float> values = {0.0f,     -0.0f, 65504.0f,    65519.0f,
                                 65520.0f, 1e-8f, -3e-7f,      6.1035e-5f,
                                 INFINITY, NAN,   1.00390625f, 1.0029296875f};
    for (int e = -30; e <= 30; ++e)
      for (int r = 0; r < 50; ++r)
        values.push_back(
            float(std::ldexp(double(gen() % 100000) / 1e5 + 0.5, e)) *
            (r % 2 ? -1.0f : 1.0f));
    std::vector<uint16_t> narrow(values.size());
    grid(int64_t(values.size()), [&](int64_t i) {
      gpu::convertItem(i, narrow.data(), values.data(), bf16, true);
    });
    for (size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(narrow[i],
                bf16 ? floatToBFloat16(values[i]) : floatToHalf(values[i]))
          << values[i];
  }
}

TEST(DeviceKernels, PointwiseAndLlamaOps) {
  std::mt19937_64 gen(10);
  const int64_t rows = 6, cols = 8, n = rows * cols;
  std::vector<float> a = randomFloats(gen, n, -3, 3),
                     b = randomFloats(gen, n, -3, 3);
  std::vector<float> expected(n), got(n);
  auto check = [&](gpu::Pointwise op) {
    grid(n, [&](int64_t i) {
      gpu::pointwiseItem(i, op, a.data(), b.data(), got.data(), cols);
    });
    EXPECT_EQ(got, expected) << int(op);
  };
  cpu::add(a.data(), b.data(), expected.data(), n);
  check(gpu::Pointwise::Add);
  cpu::mul(a.data(), b.data(), expected.data(), n);
  check(gpu::Pointwise::Mul);
  cpu::biasAdd(a.data(), b.data(), expected.data(), rows, cols);
  check(gpu::Pointwise::BiasAdd);
  cpu::gelu(a.data(), expected.data(), n);
  check(gpu::Pointwise::Gelu);
  cpu::geluGrad(a.data(), b.data(), expected.data(), n);
  check(gpu::Pointwise::GeluGrad);
  cpu::silu(a.data(), expected.data(), n);
  check(gpu::Pointwise::Silu);
  cpu::siluGrad(a.data(), b.data(), expected.data(), n);
  check(gpu::Pointwise::SiluGrad);

  // RMSNorm and its gradient, with a plain weight (offset 0) and a
  // zero-centered one (offset 1: Gemma's scale 1 + w).
  const double eps = 1e-6;
  std::vector<float> w = randomFloats(gen, cols, 0.5, 1.5);
  std::vector<float> y(n), yGot(n), dX(n), dXGot(n), dW(cols), dWGot(cols);
  std::vector<double> stats(rows);
  for (double offset : {0.0, 1.0}) {
    SCOPED_TRACE("weight offset " + std::to_string(offset));
    cpu::rmsNorm(a.data(), w.data(), y.data(), rows, cols, eps, offset);
    grid(rows, [&](int64_t r) {
      gpu::rmsNormRow(r, a.data(), w.data(), yGot.data(), cols, eps, offset);
    });
    EXPECT_EQ(yGot, y);
    cpu::rmsNormGrad(b.data(), a.data(), w.data(), dX.data(), dW.data(), rows,
                     cols, eps, offset);
    grid(rows, [&](int64_t r) {
      gpu::rmsNormGradRow(r, b.data(), a.data(), w.data(), dXGot.data(),
                          stats.data(), cols, eps, offset);
    });
    grid(cols, [&](int64_t c) {
      gpu::rmsNormGradColumn(c, b.data(), a.data(), stats.data(), dWGot.data(),
                             rows, cols);
    });
    EXPECT_EQ(dXGot, dX);
    EXPECT_EQ(dWGot, dW);
  }
  // The offset is the scale 1 + w: the plain norm of the weight 1 + w
  // (rounded to float) agrees, and the weight's gradient does not change.
  std::vector<float> onePlusW(cols), yPlain(n), dXPlain(n), dWPlain(cols);
  for (int64_t c = 0; c < cols; ++c)
    onePlusW[c] = 1.0f + w[c];
  cpu::rmsNorm(a.data(), onePlusW.data(), yPlain.data(), rows, cols, eps, 0.0);
  cpu::rmsNormGrad(b.data(), a.data(), onePlusW.data(), dXPlain.data(),
                   dWPlain.data(), rows, cols, eps, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(y[i], yPlain[i], 1e-6 * (1 + std::fabs(yPlain[i])));
    EXPECT_NEAR(dX[i], dXPlain[i], 1e-6 * (1 + std::fabs(dXPlain[i])));
  }
  EXPECT_EQ(dW, dWPlain);

  // Rotary embedding, forward and inverse, with Llama 3.1 scaling.
  const int64_t batchHeads = 3, seq = 4, headDim = 8;
  std::vector<double> invFreq =
      cpu::ropeInverseFrequencies(headDim, 500000.0, 8.0, 1.0, 4.0, 8192.0);
  std::vector<float> x = randomFloats(gen, batchHeads * seq * headDim, -1, 1);
  for (bool inverse : {false, true}) {
    std::vector<float> r(x.size()), rGot(x.size());
    cpu::rope(x.data(), r.data(), batchHeads, seq, headDim, invFreq, inverse);
    grid(batchHeads * seq * headDim / 2, [&](int64_t i) {
      gpu::ropeItem(i, x.data(), rGot.data(), invFreq.data(), seq, headDim,
                    inverse);
    });
    EXPECT_EQ(rGot, r);
  }

  // Grouped-query heads, repeated and summed back.
  const int64_t batch = 2, kvHeads = 2, groups = 3, inner = 5;
  std::vector<float> kv = randomFloats(gen, batch * kvHeads * inner, -1, 1);
  std::vector<float> rep(batch * kvHeads * groups * inner), repGot(rep.size());
  cpu::repeatKV(kv.data(), rep.data(), batch, kvHeads, groups, inner);
  grid(int64_t(rep.size()), [&](int64_t i) {
    gpu::repeatKVItem(i, kv.data(), repGot.data(), groups, inner);
  });
  EXPECT_EQ(repGot, rep);
  std::vector<float> back(kv.size()), backGot(kv.size());
  cpu::repeatKVGrad(rep.data(), back.data(), batch, kvHeads, groups, inner);
  grid(int64_t(kv.size()), [&](int64_t i) {
    gpu::repeatKVGradItem(i, rep.data(), backGot.data(), groups, inner);
  });
  EXPECT_EQ(backGot, back);
}

} // namespace
