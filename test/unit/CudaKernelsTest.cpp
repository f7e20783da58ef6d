//===- CudaKernelsTest.cpp - The CUDA backend's block kernels, on a GPU ---===//
//
// The kernels DeviceKernelsTest cannot run item by item on the host, run
// on the GPU and compared with the CPU backend's (runtime/src/cpu/
// HostKernels.h): the tiled causal attention and its gradient
// (FlashAttention.cuh: every head dimension class of 1, 2, 4 and 8 lanes
// per row, sequences that end inside a tile and span several, both operand
// layouts, dropout on the probabilities; the fused layout's log-sum-exp
// and its gradient from that and the output) and the block reductions
// (Reductions.cuh: the gradient norm, bias gradients), the embedding
// gradient's sort and the loss mean. Skips without a GPU
// (CI); scripts/gpu-check.sh runs it on one.
//
//===----------------------------------------------------------------------===//

#include "TensorParallelDropout.h"
#include "cpu/HostKernels.h"
#include "cuda/CudnnAttention.h"
#include "cuda/DeviceLaunch.h"
#include "cuda/LtGemm.h"
#include "cuda/MoeLaunch.h"
#include "mtrt/HalfFloat.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

using namespace mtrt;

namespace {

bool haveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

/// A device copy of a host vector, copied back by `read`.
template <typename T> class DeviceVector {
public:
  explicit DeviceVector(const std::vector<T> &host) : size(host.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void **>(&data), size * sizeof(T)),
              cudaSuccess);
    EXPECT_EQ(
        cudaMemcpy(data, host.data(), size * sizeof(T), cudaMemcpyHostToDevice),
        cudaSuccess);
  }
  ~DeviceVector() { cudaFree(data); }
  DeviceVector(const DeviceVector &) = delete;
  DeviceVector &operator=(const DeviceVector &) = delete;
  std::vector<T> read() const {
    std::vector<T> host(size);
    EXPECT_EQ(
        cudaMemcpy(host.data(), data, size * sizeof(T), cudaMemcpyDeviceToHost),
        cudaSuccess);
    return host;
  }
  T *data = nullptr;
  size_t size;
};

/// The largest |got - want| over a tensor, against its largest |want|.
void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 const char *what, int64_t seq, int64_t headDim) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0, largest = 1;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << what << " " << i;
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
    largest = std::max(largest, std::fabs(want[i]));
  }
  // fp32 dot products and exponentials against double: an index or a
  // mask wrong anywhere is off by the tensor's own size.
  EXPECT_LE(worst, 1e-4 * largest)
      << what << ": seq " << seq << ", head dimension " << headDim;
}

/// Each query row's log sum_{j <= i} exp(scale q_i . k_j), in double, for
/// head-major q and k of `rows` rows (pairs of `seq`).
std::vector<double> referenceLse(const std::vector<double> &q,
                                 const std::vector<double> &k, int64_t rows,
                                 int64_t seq, int64_t headDim, double scale,
                                 int64_t window = 0) {
  std::vector<double> lse(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t i = r % seq, first = r - i;
    std::vector<double> scores;
    for (int64_t j = cpu::detail::firstVisibleKey(i, window); j <= i; ++j) {
      double score = 0;
      for (int64_t d = 0; d < headDim; ++d)
        score +=
            q[size_t(r * headDim + d)] * k[size_t((first + j) * headDim + d)];
      scores.push_back(score * scale);
    }
    double largest = *std::max_element(scores.begin(), scores.end()), sum = 0;
    for (double score : scores)
      sum += std::exp(score - largest);
    lse[size_t(r)] = largest + std::log(sum);
  }
  return lse;
}

/// Grouped-query attention's references: the [batch, kvHeads, rowSize]
/// key or value pair (b, h / groups) of query pair (b, h), and the summing
/// of a repeated gradient back over each group.
int64_t kvPairOf(int64_t bh, int64_t heads, int64_t kvHeads) {
  return bh / heads * kvHeads + bh % heads / (heads / kvHeads);
}
std::vector<double> repeatHeads(const std::vector<double> &kv, int64_t batch,
                                int64_t heads, int64_t kvHeads,
                                int64_t rowSize) {
  std::vector<double> repeated(size_t(batch * heads * rowSize));
  for (int64_t bh = 0; bh < batch * heads; ++bh)
    std::copy_n(kv.begin() + kvPairOf(bh, heads, kvHeads) * rowSize, rowSize,
                repeated.begin() + bh * rowSize);
  return repeated;
}
std::vector<double> sumGroups(const std::vector<double> &repeated,
                              int64_t batch, int64_t heads, int64_t kvHeads,
                              int64_t rowSize) {
  std::vector<double> summed(size_t(batch * kvHeads * rowSize), 0.0);
  for (int64_t bh = 0; bh < batch * heads; ++bh)
    for (int64_t e = 0; e < rowSize; ++e)
      summed[size_t(kvPairOf(bh, heads, kvHeads) * rowSize + e)] +=
          repeated[size_t(bh * rowSize + e)];
  return summed;
}

/// Attention over [batch, heads, seq, headDim] operands, laid out head-major
/// or (fused) as qkv_attention's [batch, seq, 3 * heads * headDim] with a
/// merged [batch, seq, heads * headDim] output, against the reference.
void checkAttention(std::mt19937_64 &gen, int64_t batch, int64_t heads,
                    int64_t seq, int64_t headDim, bool fused,
                    const gpu::AttentionDropout &dropout, int64_t window = 0,
                    bool merged = false) {
  const int64_t rows = batch * heads * seq;
  const size_t n = size_t(rows * headDim);
  std::uniform_real_distribution<double> dist(-2, 2);
  std::vector<double> q(n), k(n), v(n), dO(n);
  for (auto *t : {&q, &k, &v, &dO})
    for (double &x : *t)
      x = float(dist(gen)); // representable in fp32
  const double scale = 1.0 / std::sqrt(double(headDim));
  std::vector<double> out(n), dQ(n), dK(n), dV(n);
  cpu::RngKey key{dropout.key.seed, dropout.key.step};
  cpu::attention(q.data(), k.data(), v.data(), out.data(), batch, heads, seq,
                 headDim, scale, dropout.key.p, dropout.key.stream, key,
                 dropout.key.offset, dropout.headOffset, dropout.headsTotal, 0,
                 -1, window);
  cpu::attentionGrad(dO.data(), q.data(), k.data(), v.data(), dQ.data(),
                     dK.data(), dV.data(), batch, heads, seq, headDim, scale,
                     dropout.key.p, dropout.key.stream, key, dropout.key.offset,
                     dropout.headOffset, dropout.headsTotal, 0, -1, window);

  // merged_attention's: head-major operands, the output (and dOut) merged.
  AttentionLayout layout =
      fused ? AttentionLayout::fusedQKV(heads, seq, headDim)
            : AttentionLayout::headMajor(heads, seq, headDim);
  if (merged)
    layout.output = HeadLayout::chunkOf(0, 1, heads, seq, headDim);
  const bool stated = fused || merged; // the log-sum-exp written and read
  const size_t inSize = fused ? 3 * n : n;
  // Where element d of row r (= (b * heads + h) * seq + i) lies.
  auto at = [&](const HeadLayout &where, int64_t r, int64_t d) {
    return size_t(where.row(r / seq, heads, r % seq) + d);
  };
  std::vector<float> qIn(inSize), kIn(inSize), vIn(inSize), dOIn(n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t d = 0; d < headDim; ++d) {
      size_t own = size_t(r * headDim + d);
      qIn[at(layout.query, r, d)] = float(q[own]);
      kIn[at(layout.key, r, d)] = float(k[own]);
      vIn[at(layout.value, r, d)] = float(v[own]);
      dOIn[at(layout.output, r, d)] = float(dO[own]);
    }
  if (fused) // one tensor holds all three
    for (size_t i = 0; i < inSize; ++i)
      qIn[i] = qIn[i] + kIn[i] + vIn[i];
  std::vector<float> unused(1); // a layout's absent operand
  DeviceVector<float> qDev{qIn}, kDev{fused ? unused : kIn},
      vDev{fused ? unused : vIn}, dODev{dOIn}, outDev{std::vector<float>(n)},
      gradDev{std::vector<float>(inSize)},
      dKDev{fused ? unused : std::vector<float>(n)},
      dVDev{fused ? unused : std::vector<float>(n)};
  DeviceVector<double> stats{std::vector<double>(size_t(3 * rows))};
  // The fused form also writes each row's log-sum-exp, which its gradient
  // reads with the output (instead of a first sweep over the keys).
  DeviceVector<float> lseDev{std::vector<float>(size_t(rows))};
  float *lse = stated ? lseDev.data : nullptr;
  const float *kPtr = fused ? qDev.data : kDev.data;
  const float *vPtr = fused ? qDev.data : vDev.data;
  float *dKPtr = fused ? gradDev.data : dKDev.data;
  float *dVPtr = fused ? gradDev.data : dVDev.data;
  ASSERT_EQ(gpu::launchAttention(nullptr, qDev.data, kPtr, vPtr, outDev.data,
                                 lse, rows, seq, headDim, scale, layout,
                                 dropout, window),
            cudaSuccess);
  ASSERT_EQ(gpu::launchAttentionGrad(
                nullptr, dODev.data, qDev.data, kPtr, vPtr,
                stated ? outDev.data : nullptr, lse, gradDev.data, dKPtr, dVPtr,
                stats.data, rows, seq, headDim, scale, layout, dropout, window),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> outGot = outDev.read(), dQGot = gradDev.read();
  std::vector<float> dKGot = fused ? dQGot : dKDev.read();
  std::vector<float> dVGot = fused ? dQGot : dVDev.read();
  std::vector<float> outOwn(n), dQOwn(n), dKOwn(n), dVOwn(n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t d = 0; d < headDim; ++d) {
      size_t own = size_t(r * headDim + d);
      outOwn[own] = outGot[at(layout.output, r, d)];
      dQOwn[own] = dQGot[at(layout.query, r, d)];
      dKOwn[own] = dKGot[at(layout.key, r, d)];
      dVOwn[own] = dVGot[at(layout.value, r, d)];
    }
  expectClose(outOwn, out, "out", seq, headDim);
  if (stated)
    expectClose(lseDev.read(),
                referenceLse(q, k, rows, seq, headDim, scale, window), "lse",
                seq, headDim);
  expectClose(dQOwn, dQ, "dQ", seq, headDim);
  expectClose(dKOwn, dK, "dK", seq, headDim);
  expectClose(dVOwn, dV, "dV", seq, headDim);
}

/// A head-major attention's inputs and the reference's results for them
/// (in double; K and V of the key heads).
struct HeadMajorCase {
  std::vector<double> q, k, v, dO, out, dQ, dK, dV;
};

/// Runs head-major attention forward and backward on the GPU (`cap` > 0:
/// soft-capped scores; `stated`: the forward writes each row's
/// log-sum-exp and the backward reads it with the output) and compares
/// out, dQ, dK and dV with the reference's.
void checkHeadMajorOnGpu(const HeadMajorCase &c, int64_t rows, int64_t seq,
                         int64_t headDim, double scale,
                         const AttentionLayout &layout,
                         const gpu::AttentionDropout &dropout, int64_t window,
                         double cap, bool stated) {
  auto narrow = [](const std::vector<double> &x) {
    return std::vector<float>(x.begin(), x.end());
  };
  DeviceVector<float> qDev{narrow(c.q)}, kDev{narrow(c.k)}, vDev{narrow(c.v)},
      dODev{narrow(c.dO)}, outDev{std::vector<float>(c.q.size())},
      dQDev{std::vector<float>(c.q.size())},
      dKDev{std::vector<float>(c.k.size())},
      dVDev{std::vector<float>(c.v.size())},
      lseDev{std::vector<float>(size_t(rows))};
  DeviceVector<double> stats{std::vector<double>(size_t(3 * rows))};
  float *lse = stated ? lseDev.data : nullptr;
  ASSERT_EQ(gpu::launchAttention(nullptr, qDev.data, kDev.data, vDev.data,
                                 outDev.data, lse, rows, seq, headDim, scale,
                                 layout, dropout, window, cap),
            cudaSuccess);
  ASSERT_EQ(gpu::launchAttentionGrad(nullptr, dODev.data, qDev.data, kDev.data,
                                     vDev.data, stated ? outDev.data : nullptr,
                                     lse, dQDev.data, dKDev.data, dVDev.data,
                                     stats.data, rows, seq, headDim, scale,
                                     layout, dropout, window, cap),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expectClose(outDev.read(), c.out, "out", seq, headDim);
  expectClose(dQDev.read(), c.dQ, "dQ", seq, headDim);
  expectClose(dKDev.read(), c.dK, "dK", seq, headDim);
  expectClose(dVDev.read(), c.dV, "dV", seq, headDim);
}

gpu::AttentionDropout noDropout(int64_t heads) {
  gpu::AttentionDropout none;
  none.heads = none.headsTotal = heads;
  return none;
}

TEST(CudaAttention, EveryLaneCountAndSequenceAgainstTheReference) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(11);
  for (int64_t headDim : {8, 48, 64, 100, 128, 256})
    for (int64_t seq : {1, 37, 300})
      checkAttention(gen, 2, 3, seq, headDim, /*fused=*/false, noDropout(3));
}

TEST(CudaAttention, FusedQKVLayout) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(12);
  for (int64_t headDim : {16, 64})
    for (int64_t seq : {5, 129})
      checkAttention(gen, 2, 2, seq, headDim, /*fused=*/true, noDropout(2));
}

// merged_attention's layout (LLaMA's: the rotary embedding keeps the
// split apart): head-major q, k and v, the output and dOut merged, the
// rows' log-sum-exp written by the forward and read by the gradient.
TEST(CudaAttention, MergedOutputLayout) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(16);
  for (int64_t headDim : {16, 64, 128})
    for (int64_t seq : {5, 129})
      checkAttention(gen, 2, 2, seq, headDim, /*fused=*/false, noDropout(2),
                     /*window=*/0, /*merged=*/true);
  checkAttention(gen, 2, 2, 70, 32, /*fused=*/false, tensorParallelDropout(),
                 /*window=*/9, /*merged=*/true);
}

TEST(CudaAttention, DropoutDrawsTheCpuBackendsMask) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(13);
  gpu::AttentionDropout dropout = tensorParallelDropout();
  for (bool fused : {false, true})
    checkAttention(gen, 2, 2, 70, 32, fused, dropout);
}

// Grouped-query attention: keys and values of 2 heads serving 8 query
// heads (groups of 4) against the reference on repeated keys and values,
// their gradients summed over each group (the key pass's blocks each take
// a whole group); with and without dropout and a window, for every lane
// count.
TEST(CudaAttention, GroupedKeysAgainstTheRepeatedReference) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(15);
  const int64_t batch = 2, heads = 8, kvHeads = 2; // groups of 4
  for (int64_t headDim : {16, 64, 128, 256})
    for (int64_t seq : {37, 200})
      for (bool drop : {false, true}) {
        SCOPED_TRACE("headDim " + std::to_string(headDim) + " seq " +
                     std::to_string(seq) + (drop ? " dropout" : ""));
        gpu::AttentionDropout dropout = noDropout(heads);
        if (drop) {
          dropout.key.seed = 5;
          dropout.key.step = 9;
          dropout.key.stream = 7;
          dropout.key.p = 0.25;
          dropout.key.offset = 40;
        }
        const int64_t window = drop ? 0 : 50;
        const int64_t rowSize = seq * headDim;
        const size_t n = size_t(batch * heads * rowSize);
        const size_t nKv = size_t(batch * kvHeads * rowSize);
        std::uniform_real_distribution<double> dist(-2, 2);
        auto draw = [&](size_t count) {
          std::vector<double> x(count);
          for (double &e : x)
            e = float(dist(gen));
          return x;
        };
        std::vector<double> q = draw(n), dO = draw(n), k = draw(nKv),
                            v = draw(nKv);
        std::vector<double> kRep =
                                repeatHeads(k, batch, heads, kvHeads, rowSize),
                            vRep =
                                repeatHeads(v, batch, heads, kvHeads, rowSize);
        const double scale = 1.0 / std::sqrt(double(headDim));
        cpu::RngKey key{dropout.key.seed, dropout.key.step};
        std::vector<double> out(n), dQ(n), dKRep(n), dVRep(n);
        cpu::attention(q.data(), kRep.data(), vRep.data(), out.data(), batch,
                       heads, seq, headDim, scale, dropout.key.p,
                       dropout.key.stream, key, dropout.key.offset,
                       dropout.headOffset, dropout.headsTotal, 0, -1, window);
        cpu::attentionGrad(
            dO.data(), q.data(), kRep.data(), vRep.data(), dQ.data(),
            dKRep.data(), dVRep.data(), batch, heads, seq, headDim, scale,
            dropout.key.p, dropout.key.stream, key, dropout.key.offset,
            dropout.headOffset, dropout.headsTotal, 0, -1, window);
        std::vector<double> dK = sumGroups(dKRep, batch, heads, kvHeads,
                                           rowSize),
                            dV = sumGroups(dVRep, batch, heads, kvHeads,
                                           rowSize);
        checkHeadMajorOnGpu(
            {q, k, v, dO, out, dQ, dK, dV}, batch * heads * seq, seq, headDim,
            scale, AttentionLayout::headMajor(heads, seq, headDim, kvHeads),
            dropout, window, /*cap=*/0.0, /*stated=*/false);
      }
}

// Mistral's sliding window: the kernels skip the key tiles (forward, query
// pass) and query tiles (key pass) wholly outside it. Windows of 1, under
// a tile, across tiles and past the sequence; sequences of several tiles
// for every lane count; with dropout, whose mask keeps its indices.
TEST(CudaAttention, SlidingWindowAgainstTheReference) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(14);
  for (int64_t headDim : {8, 64, 128})
    for (int64_t window : {1, 5, 70, 400})
      for (bool fused : {false, true})
        checkAttention(gen, 2, 2, 300, headDim, fused, noDropout(2), window);
  gpu::AttentionDropout dropout = tensorParallelDropout();
  for (bool fused : {false, true})
    checkAttention(gen, 2, 2, 150, 32, fused, dropout, 33);
}

/// Gemma 2's soft-capped attention in double, head-major: scores
/// z = scale q.k capped to cap tanh(z / cap), the causal softmax P, out =
/// P V, and the gradients through the cap's slope 1 - tanh^2.
void softcapReference(const std::vector<double> &q,
                      const std::vector<double> &k,
                      const std::vector<double> &v,
                      const std::vector<double> &dO, int64_t rows, int64_t seq,
                      int64_t headDim, double scale, double cap,
                      std::vector<double> &out, std::vector<double> &dQ,
                      std::vector<double> &dK, std::vector<double> &dV) {
  const size_t n = size_t(rows * headDim);
  out.assign(n, 0.0);
  dQ.assign(n, 0.0);
  dK.assign(n, 0.0);
  dV.assign(n, 0.0);
  auto dot = [&](const std::vector<double> &a, int64_t ra,
                 const std::vector<double> &b, int64_t rb) {
    double sum = 0;
    for (int64_t d = 0; d < headDim; ++d)
      sum += a[size_t(ra * headDim + d)] * b[size_t(rb * headDim + d)];
    return sum;
  };
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % seq, first = r - i;
    std::vector<double> p(size_t(i + 1)), t(size_t(i + 1));
    double largest = -1e300, sum = 0;
    for (int64_t j = 0; j <= i; ++j) {
      t[size_t(j)] = std::tanh(scale * dot(q, r, k, first + j) / cap);
      p[size_t(j)] = cap * t[size_t(j)];
      largest = std::max(largest, p[size_t(j)]);
    }
    for (double &x : p)
      sum += x = std::exp(x - largest);
    double rowDot = 0;
    for (int64_t j = 0; j <= i; ++j) {
      p[size_t(j)] /= sum;
      rowDot += p[size_t(j)] * dot(dO, r, v, first + j);
    }
    for (int64_t j = 0; j <= i; ++j) {
      const double dS = p[size_t(j)] * (dot(dO, r, v, first + j) - rowDot) *
                        (1.0 - t[size_t(j)] * t[size_t(j)]) * scale;
      for (int64_t d = 0; d < headDim; ++d) {
        const size_t at = size_t(r * headDim + d),
                     key = size_t((first + j) * headDim + d);
        out[at] += p[size_t(j)] * v[key];
        dV[key] += p[size_t(j)] * dO[at];
        dQ[at] += dS * k[key];
        dK[key] += dS * q[at];
      }
    }
  }
}

// Gemma 2's soft cap of the scores in the backend's own kernels (cuDNN's
// path refuses it): forward, query and key passes, against the double
// reference, with caps that bend most scores (0.5) and few (30), for
// every lane count (Gemma 2's heads are 256 wide), the backward
// rebuilding the softmax or reading the forward's output and
// log-sum-exp (the merged and fused forms').
TEST(CudaAttention, SoftCappedScoresAgainstTheReference) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(15);
  const int64_t batch = 2, heads = 2, seq = 150;
  for (int64_t headDim : {16, 64, 128, 256})
    for (double cap : {0.5, 30.0})
      for (bool stated : {false, true}) {
        const int64_t rows = batch * heads * seq;
        const size_t n = size_t(rows * headDim);
        std::uniform_real_distribution<double> dist(-2, 2);
        std::vector<double> q(n), k(n), v(n), dO(n);
        for (auto *t : {&q, &k, &v, &dO})
          for (double &x : *t)
            x = float(dist(gen));
        const double scale = 1.0 / std::sqrt(double(headDim));
        std::vector<double> out, dQ, dK, dV;
        softcapReference(q, k, v, dO, rows, seq, headDim, scale, cap, out, dQ,
                         dK, dV);
        SCOPED_TRACE("cap " + std::to_string(cap) + ", head dimension " +
                     std::to_string(headDim) +
                     (stated ? ", the forward's lse given" : ""));
        checkHeadMajorOnGpu({q, k, v, dO, out, dQ, dK, dV}, rows, seq, headDim,
                            scale,
                            AttentionLayout::headMajor(heads, seq, headDim),
                            noDropout(heads), /*window=*/0, cap, stated);
      }
}

// A mixture of experts' launchers (MoeKernels.cu) on the GPU against the
// CPU backend's kernels: the gating, the route with a capacity that drops
// (passes and scratch), the permutation (zeroed rows), the grouped GEMM
// through its table of weights, and the router's statistics. Their items
// are tested on the host to the bit (MoeDeviceKernelsTest); this checks
// what only a launch shows.
TEST(CudaMoe, LaunchersAgainstTheCpuBackend) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(16);
  const int64_t tokens = 300, experts = 8, k = 2, hidden = 24, n = 40;
  const int64_t choices = tokens * k, capacity = 60;
  std::uniform_real_distribution<float> dist(-2, 2);
  auto randoms = [&](int64_t count) {
    std::vector<float> v(static_cast<size_t>(count));
    for (float &x : v)
      x = dist(gen);
    return v;
  };
  std::vector<float> logits = randoms(tokens * experts),
                     x = randoms(tokens * hidden);
  std::vector<float> weights(choices);
  std::vector<int32_t> chosen(choices);
  cpu::topKGating(logits.data(), weights.data(), chosen.data(), tokens, experts,
                  k, false);
  DeviceVector<float> logitsDev{logits},
      weightsDev{std::vector<float>(choices)};
  DeviceVector<int32_t> chosenDev{std::vector<int32_t>(choices)};
  ASSERT_EQ(gpu::launchTopKGating(nullptr, logitsDev.data, weightsDev.data,
                                  chosenDev.data, tokens, experts, k, false),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(chosenDev.read(), chosen);
  std::vector<float> weightsGot = weightsDev.read();
  for (int64_t i = 0; i < choices; ++i)
    EXPECT_NEAR(weightsGot[i], weights[i], 1e-6f);

  std::vector<int32_t> positions(choices), offsets(experts + 1);
  ASSERT_EQ(cpu::moeRoute(chosen.data(), positions.data(), offsets.data(),
                          choices, experts, capacity, weights.data()),
            -1);
  DeviceVector<int32_t> positionsDev{std::vector<int32_t>(choices)},
      offsetsDev{std::vector<int32_t>(experts + 1)},
      scratch{std::vector<int32_t>(
          size_t(gpu::moeRouteScratchBytes(choices, experts) / 4))};
  DeviceVector<float> cpuWeightsDev{weights};
  ASSERT_EQ(gpu::launchMoeRoute(nullptr, chosenDev.data, cpuWeightsDev.data,
                                positionsDev.data, offsetsDev.data, choices,
                                experts, capacity, scratch.data),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(positionsDev.read(), positions);
  EXPECT_EQ(offsetsDev.read(), offsets);

  const int64_t rows = experts * capacity;
  std::vector<float> permuted(rows * hidden, 0.0f);
  cpu::moePermute(x.data(), positions.data(), weights.data(), permuted.data(),
                  tokens, k, hidden);
  DeviceVector<float> xDev{x},
      permutedDev{std::vector<float>(rows * hidden, -1.0f)};
  ASSERT_EQ(gpu::launchMoePermute(nullptr, xDev.data, positionsDev.data,
                                  cpuWeightsDev.data, permutedDev.data, choices,
                                  k, hidden, rows, true),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(permutedDev.read(), permuted);

  // The grouped GEMM, its weights through a device table of pointers.
  std::vector<std::vector<float>> expertWeights;
  std::vector<std::unique_ptr<DeviceVector<float>>> expertDevs;
  std::vector<const float *> table;
  for (int64_t e = 0; e < experts; ++e) {
    expertWeights.push_back(randoms(hidden * n));
    expertDevs.push_back(
        std::make_unique<DeviceVector<float>>(expertWeights.back()));
    table.push_back(expertDevs.back()->data);
  }
  DeviceVector<const float *> tableDev{table};
  DeviceVector<float> productDev{std::vector<float>(rows * n, -1.0f)};
  ASSERT_EQ(gpu::launchGroupedMatmul(nullptr, permutedDev.data, offsetsDev.data,
                                     tableDev.data, productDev.data, rows,
                                     experts, hidden, n, false),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> product = productDev.read();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t e = -1;
    for (int64_t at = 0; at < experts; ++at)
      if (offsets[at] <= r && r < offsets[at + 1])
        e = at;
    for (int64_t c = 0; c < n; ++c) {
      double sum = 0;
      for (int64_t j = 0; e >= 0 && j < hidden; ++j)
        sum += double(permuted[r * hidden + j]) *
               double(expertWeights[size_t(e)][j * n + c]);
      ASSERT_NEAR(product[r * n + c], sum, 1e-5) << "row " << r;
    }
  }

  // The experts' rows back into tokens, the weights' gradient, and each
  // expert's weight gradient through a device table of output pointers.
  std::vector<float> combined(tokens * hidden), dWeights(choices);
  cpu::moeUnpermute(permuted.data(), positions.data(), weights.data(),
                    combined.data(), tokens, k, hidden);
  cpu::moeWeightsGrad(x.data(), permuted.data(), positions.data(),
                      dWeights.data(), tokens, k, hidden);
  DeviceVector<float> combinedDev{std::vector<float>(tokens * hidden)},
      dWeightsDev{std::vector<float>(choices)};
  ASSERT_EQ(gpu::launchMoeUnpermute(nullptr, permutedDev.data,
                                    positionsDev.data, cpuWeightsDev.data,
                                    combinedDev.data, tokens, k, hidden, rows),
            cudaSuccess);
  ASSERT_EQ(gpu::launchMoeWeightsGrad(nullptr, xDev.data, permutedDev.data,
                                      positionsDev.data, dWeightsDev.data,
                                      choices, k, hidden, rows),
            cudaSuccess);
  std::vector<float> dProduct = randoms(rows * n);
  DeviceVector<float> dProductDev{dProduct};
  std::vector<std::unique_ptr<DeviceVector<float>>> gradDevs;
  std::vector<float *> gradTable;
  for (int64_t e = 0; e < experts; ++e) {
    gradDevs.push_back(std::make_unique<DeviceVector<float>>(
        std::vector<float>(hidden * n, -1.0f)));
    gradTable.push_back(gradDevs.back()->data);
  }
  DeviceVector<float *> gradTableDev{gradTable};
  ASSERT_EQ(gpu::launchGroupedMatmulWeightGrad(
                nullptr, dProductDev.data, permutedDev.data, offsetsDev.data,
                gradTableDev.data, rows, experts, hidden, n, false),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(combinedDev.read(), combined);
  std::vector<float> dWeightsGot = dWeightsDev.read();
  for (int64_t c = 0; c < choices; ++c)
    EXPECT_NEAR(dWeightsGot[c], dWeights[c], 1e-5f) << "choice " << c;
  for (int64_t e = 0; e < experts; ++e) {
    std::vector<float> grad = gradDevs[size_t(e)]->read();
    for (int64_t j = 0; j < hidden; ++j)
      for (int64_t c = 0; c < n; ++c) {
        double sum = 0;
        for (int64_t r = offsets[e]; r < offsets[e + 1]; ++r)
          sum += double(permuted[r * hidden + j]) * double(dProduct[r * n + c]);
        ASSERT_NEAR(grad[j * n + c], sum, 1e-4) << "expert " << e;
      }
  }

  std::vector<float> load(experts), probability(experts);
  cpu::routerStatistics(logits.data(), chosen.data(), load.data(),
                        probability.data(), tokens, experts, k);
  DeviceVector<float> loadDev{std::vector<float>(experts)},
      probabilityDev{std::vector<float>(experts)};
  DeviceVector<double> stats{std::vector<double>(size_t(2 * tokens))};
  ASSERT_EQ(gpu::launchRouterStatistics(nullptr, logitsDev.data, chosenDev.data,
                                        loadDev.data, probabilityDev.data,
                                        tokens, experts, k, stats.data),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(loadDev.read(), load);
  std::vector<float> probabilityGot = probabilityDev.read();
  for (int64_t e = 0; e < experts; ++e)
    EXPECT_NEAR(probabilityGot[e], probability[e], 1e-6f);

  // The load-balancing loss of two routers (this one twice) and its
  // gradient, through a device table of the routers' statistics.
  const float *loads[2] = {load.data(), load.data()};
  const float *probabilities[2] = {probability.data(), probability.data()};
  const double coefficient = 0.02;
  const float lossWant = float(
      cpu::loadBalancingLoss(loads, probabilities, 2, experts, coefficient));
  std::vector<float> dProbability(experts);
  cpu::loadBalancingLossGrad(0.5, loads, dProbability.data(), 2, experts,
                             coefficient);
  DeviceVector<const float *> statsTable{std::vector<const float *>{
      loadDev.data, loadDev.data, probabilityDev.data, probabilityDev.data}};
  DeviceVector<float> lossDev{std::vector<float>(1)},
      gradIn{std::vector<float>{0.5f}},
      dProbabilityDev{std::vector<float>(experts)};
  ASSERT_EQ(gpu::launchLoadBalancingLoss(nullptr, statsTable.data,
                                         statsTable.data + 2, 2, experts,
                                         coefficient, lossDev.data),
            cudaSuccess);
  ASSERT_EQ(gpu::launchLoadBalancingLossGrad(
                nullptr, gradIn.data, statsTable.data, dProbabilityDev.data, 2,
                experts, coefficient),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_NEAR(lossDev.read()[0], lossWant, 1e-6f * std::fabs(lossWant));
  std::vector<float> dProbabilityGot = dProbabilityDev.read();
  for (int64_t e = 0; e < experts; ++e)
    EXPECT_NEAR(dProbabilityGot[e], dProbability[e], 1e-7f);

  // The router z-loss (its per-token pass into scratch, then one item) and
  // its gradient.
  const float zWant =
      float(cpu::routerZLoss(logits.data(), tokens, experts, coefficient));
  std::vector<float> dZ(tokens * experts);
  cpu::routerZLossGrad(0.5, logits.data(), dZ.data(), tokens, tokens, experts,
                       coefficient);
  DeviceVector<float> zDev{std::vector<float>(1)},
      dZDev{std::vector<float>(tokens * experts)};
  DeviceVector<double> zScratch{
      std::vector<double>(size_t(gpu::routerZLossScratchBytes(tokens) / 8))};
  ASSERT_EQ(gpu::launchRouterZLoss(nullptr, logitsDev.data, zDev.data, tokens,
                                   experts, coefficient, zScratch.data),
            cudaSuccess);
  ASSERT_EQ(gpu::launchRouterZLossGrad(nullptr, gradIn.data, logitsDev.data,
                                       dZDev.data, tokens, experts,
                                       coefficient),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_NEAR(zDev.read()[0], zWant, 1e-6f * std::fabs(zWant));
  std::vector<float> dZGot = dZDev.read();
  for (int64_t i = 0; i < tokens * experts; ++i)
    EXPECT_NEAR(dZGot[i], dZ[i], 1e-6f * std::fabs(dZ[i]) + 1e-12f)
        << "logit " << i;
}

/// cuDNN's fused attention opened, or the test skipped where there is no
/// GPU or cuDNN cannot be loaded (gpu-check.sh points
/// MEGATRON_CUDNN_LIBRARY at the GPU machine's copy).
class CudnnAttentionTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!haveGpu())
      GTEST_SKIP() << "no CUDA device";
    if (!cudnn.open(nullptr, why))
      GTEST_SKIP() << "cuDNN unavailable: " << why;
  }
  gpu::CudnnAttention cudnn;
  std::string why;
};

// cuDNN's fused attention (CudnnAttention.h) on bf16 operands in the
// artifact's layout: the QKV tensor read in place, the merged output, the
// rows' log-sum-exp, and the gradient from the output and those stats,
// against the double reference on the same bf16-rounded inputs.
TEST_F(CudnnAttentionTest, MatchesTheReferenceInBf16) {
  const int64_t batch = 2, heads = 3, headDim = 64;
  // From 2 positions: the cuDNN frontend refuses a backward of one query
  // and one key ("s_q = s_kv = 1 is not supported"), which the backend
  // then runs on its own kernels.
  for (int64_t seq : {2, 37, 256}) {
    SCOPED_TRACE("seq " + std::to_string(seq));
    const int64_t rows = batch * heads * seq, width = heads * headDim;
    const size_t n = size_t(rows * headDim);
    std::mt19937_64 gen(21 + seq);
    std::uniform_real_distribution<double> dist(-2, 2);
    auto bf16 = [](double x) {
      return double(bfloat16ToFloat(floatToBFloat16(float(x))));
    };
    std::vector<double> q(n), k(n), v(n), dO(n);
    for (auto *t : {&q, &k, &v, &dO})
      for (double &x : *t)
        x = bf16(dist(gen));
    const double scale = 1.0 / std::sqrt(double(headDim));
    std::vector<double> out(n), dQ(n), dK(n), dV(n);
    cpu::RngKey key{1, 1};
    cpu::attention(q.data(), k.data(), v.data(), out.data(), batch, heads, seq,
                   headDim, scale, 0.0, 0, key, 0, 0, heads);
    cpu::attentionGrad(dO.data(), q.data(), k.data(), v.data(), dQ.data(),
                       dK.data(), dV.data(), batch, heads, seq, headDim, scale,
                       0.0, 0, key, 0, 0, heads);
    // The artifact's layouts, in bf16 bits.
    std::vector<uint16_t> qkvBits(size_t(3 * rows * headDim)), dOBits(n);
    auto fused = [&](int64_t chunk, int64_t r, int64_t d) {
      int64_t bh = r / seq, i = r % seq, b = bh / heads, h = bh % heads;
      return size_t((b * seq + i) * 3 * width + chunk * width + h * headDim +
                    d);
    };
    auto merged = [&](int64_t r, int64_t d) {
      int64_t bh = r / seq, i = r % seq, b = bh / heads, h = bh % heads;
      return size_t((b * seq + i) * width + h * headDim + d);
    };
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t d = 0; d < headDim; ++d) {
        size_t own = size_t(r * headDim + d);
        qkvBits[fused(0, r, d)] = floatToBFloat16(float(q[own]));
        qkvBits[fused(1, r, d)] = floatToBFloat16(float(k[own]));
        qkvBits[fused(2, r, d)] = floatToBFloat16(float(v[own]));
        dOBits[merged(r, d)] = floatToBFloat16(float(dO[own]));
      }
    gpu::CudnnAttentionShape shape;
    shape.batch = batch;
    shape.heads = heads;
    shape.seq = seq;
    shape.headDim = headDim;
    shape.scale = scale;
    shape.dtype = DType::BF16;
    gpu::CudnnAttentionShape backward = shape;
    backward.forward = false;
    ASSERT_TRUE(cudnn.supports(shape, why)) << why;
    ASSERT_TRUE(cudnn.supports(backward, why)) << why;
    DeviceVector<uint16_t> qkvDev{qkvBits}, dODev{dOBits},
        outDev{std::vector<uint16_t>(n)},
        dQKVDev{std::vector<uint16_t>(qkvBits.size())};
    DeviceVector<float> lseDev{std::vector<float>(size_t(rows))};
    DeviceVector<uint8_t> workspace{std::vector<uint8_t>(
        size_t(std::max<int64_t>(1, cudnn.workspaceBytes())))};
    // q, k and v are the chunks of each QKV row, a chunk's width apart.
    const int64_t chunk = heads * headDim; // elements
    uint16_t *qkvAt = qkvDev.data, *dQKVAt = dQKVDev.data;
    ASSERT_TRUE(cudnn.forward(shape, qkvAt, qkvAt + chunk, qkvAt + 2 * chunk,
                              outDev.data, lseDev.data, workspace.data));
    ASSERT_TRUE(cudnn.backward(backward, dODev.data, qkvAt, qkvAt + chunk,
                               qkvAt + 2 * chunk, outDev.data, lseDev.data,
                               dQKVAt, dQKVAt + chunk, dQKVAt + 2 * chunk,
                               workspace.data));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint16_t> outGot = outDev.read(), dQKVGot = dQKVDev.read();
    std::vector<float> outOwn(n), dQOwn(n), dKOwn(n), dVOwn(n);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t d = 0; d < headDim; ++d) {
        size_t own = size_t(r * headDim + d);
        outOwn[own] = bfloat16ToFloat(outGot[merged(r, d)]);
        dQOwn[own] = bfloat16ToFloat(dQKVGot[fused(0, r, d)]);
        dKOwn[own] = bfloat16ToFloat(dQKVGot[fused(1, r, d)]);
        dVOwn[own] = bfloat16ToFloat(dQKVGot[fused(2, r, d)]);
      }
    // bf16 results of fp32 arithmetic against double: a few bf16 roundings
    // (2^-8 each) of the tensor's scale; a wrong stride or mask is off by
    // the scale itself.
    auto close = [&](const std::vector<float> &got,
                     const std::vector<double> &want, const char *what) {
      double worst = 0, largest = 1e-30;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(std::isfinite(got[i])) << what << " " << i;
        worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
        largest = std::max(largest, std::fabs(want[i]));
      }
      EXPECT_LE(worst, 3e-2 * largest) << what;
    };
    close(outOwn, out, "out");
    close(dQOwn, dQ, "dQ");
    close(dKOwn, dK, "dK");
    close(dVOwn, dV, "dV");
    // The stats are fp32.
    std::vector<float> lse = lseDev.read();
    std::vector<double> lseWant = referenceLse(q, k, rows, seq, headDim, scale);
    for (int64_t r = 0; r < rows; ++r)
      ASSERT_NEAR(lse[size_t(r)], lseWant[size_t(r)], 1e-3) << "row " << r;
  }
  // fp32 attention stays on the backend's own kernels.
  gpu::CudnnAttentionShape fp32;
  fp32.batch = 1;
  fp32.heads = 1;
  fp32.seq = 8;
  fp32.headDim = 64;
  fp32.dtype = DType::F32;
  EXPECT_FALSE(cudnn.supports(fp32, why));
}

// cuDNN's fused attention for merged_attention: head-major bf16 q and
// grouped k and v of their own (4 query heads on 2 key heads, which cuDNN
// reads without repeating them), the merged output, and the gradient from
// the output and the stats, against the reference on repeated keys and
// values with their gradients summed per group.
TEST_F(CudnnAttentionTest, GroupedHeadMajorInBf16) {
  const int64_t batch = 2, heads = 4, kvHeads = 2, headDim = 64, seq = 100;
  const int64_t rowSize = seq * headDim;
  const size_t n = size_t(batch * heads * rowSize),
               nKv = size_t(batch * kvHeads * rowSize);
  std::mt19937_64 gen(31);
  std::uniform_real_distribution<double> dist(-2, 2);
  auto draw = [&](size_t count) {
    std::vector<double> x(count);
    for (double &e : x)
      e = double(bfloat16ToFloat(floatToBFloat16(float(dist(gen)))));
    return x;
  };
  std::vector<double> q = draw(n), dO = draw(n), k = draw(nKv), v = draw(nKv);
  std::vector<double> kRep = repeatHeads(k, batch, heads, kvHeads, rowSize),
                      vRep = repeatHeads(v, batch, heads, kvHeads, rowSize);
  const double scale = 1.0 / std::sqrt(double(headDim));
  std::vector<double> out(n), dQ(n), dKRep(n), dVRep(n);
  cpu::RngKey key{1, 1};
  cpu::attention(q.data(), kRep.data(), vRep.data(), out.data(), batch, heads,
                 seq, headDim, scale, 0.0, 0, key, 0, 0, heads);
  cpu::attentionGrad(dO.data(), q.data(), kRep.data(), vRep.data(), dQ.data(),
                     dKRep.data(), dVRep.data(), batch, heads, seq, headDim,
                     scale, 0.0, 0, key, 0, 0, heads);
  std::vector<double> dK = sumGroups(dKRep, batch, heads, kvHeads, rowSize),
                      dV = sumGroups(dVRep, batch, heads, kvHeads, rowSize);
  // The output and dOut merged: row (b, i), columns h * headDim + d.
  auto merged = [&](size_t own) {
    int64_t r = int64_t(own) / headDim, d = int64_t(own) % headDim;
    int64_t bh = r / seq, i = r % seq;
    return size_t(((bh / heads) * seq + i) * heads * headDim +
                  (bh % heads) * headDim + d);
  };
  auto bits = [](const std::vector<double> &x) {
    std::vector<uint16_t> b(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      b[i] = floatToBFloat16(float(x[i]));
    return b;
  };
  std::vector<uint16_t> dOBits(n);
  for (size_t i = 0; i < n; ++i)
    dOBits[merged(i)] = floatToBFloat16(float(dO[i]));
  DeviceVector<uint16_t> qDev{bits(q)}, kDev{bits(k)}, vDev{bits(v)},
      dODev{dOBits}, outDev{std::vector<uint16_t>(n)},
      dQDev{std::vector<uint16_t>(n)}, dKDev{std::vector<uint16_t>(nKv)},
      dVDev{std::vector<uint16_t>(nKv)};
  DeviceVector<float> lseDev{std::vector<float>(n / size_t(headDim))};
  gpu::CudnnAttentionShape shape;
  shape.batch = batch;
  shape.heads = heads;
  shape.seq = seq;
  shape.headDim = headDim;
  shape.scale = scale;
  shape.dtype = DType::BF16;
  shape.headMajor = true;
  shape.kvHeads = kvHeads;
  gpu::CudnnAttentionShape backward = shape;
  backward.forward = false;
  ASSERT_TRUE(cudnn.supports(shape, why)) << why;
  ASSERT_TRUE(cudnn.supports(backward, why)) << why;
  DeviceVector<uint8_t> workspace{std::vector<uint8_t>(
      size_t(std::max<int64_t>(1, cudnn.workspaceBytes())))};
  ASSERT_TRUE(cudnn.forward(shape, qDev.data, kDev.data, vDev.data, outDev.data,
                            lseDev.data, workspace.data));
  ASSERT_TRUE(cudnn.backward(backward, dODev.data, qDev.data, kDev.data,
                             vDev.data, outDev.data, lseDev.data, dQDev.data,
                             dKDev.data, dVDev.data, workspace.data));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto close = [&](const std::vector<uint16_t> &got,
                   const std::vector<double> &want, bool isMerged,
                   const char *what) {
    double worst = 0, largest = 1e-30;
    for (size_t i = 0; i < want.size(); ++i) {
      double x = double(bfloat16ToFloat(got[isMerged ? merged(i) : i]));
      ASSERT_TRUE(std::isfinite(x)) << what << " " << i;
      worst = std::max(worst, std::fabs(x - want[i]));
      largest = std::max(largest, std::fabs(want[i]));
    }
    EXPECT_LE(worst, 3e-2 * largest) << what;
  };
  close(outDev.read(), out, true, "out");
  close(dQDev.read(), dQ, false, "dQ");
  close(dKDev.read(), dK, false, "dK");
  close(dVDev.read(), dV, false, "dV");
}

// mt.matmul_bias through cuBLASLt's bias epilogue (LtGemm.h): the
// linear layer's [batch, seq, k] x [k, n] + bias, a transposed B, and a
// batched A x B, in fp32 (pedantic, no TF32) and bf16, against the CPU
// backend's double-free reference (a sum per element in double).
TEST(LtGemm, BiasMatchesTheReference) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  cublasLtHandle_t lt = nullptr;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  std::mt19937_64 gen(31);
  std::uniform_real_distribution<float> dist(-1, 1);
  struct Case {
    int64_t batch, m, n, k;
    bool tb, shared;
  };
  DeviceVector<uint8_t> workspace{std::vector<uint8_t>(size_t(32) << 20)};
  for (Case c :
       {Case{4, 16, 40, 24, false, true}, Case{2, 8, 64, 32, true, true},
        Case{3, 5, 7, 9, false, false}})
    for (DType dtype : {DType::F32, DType::BF16}) {
      SCOPED_TRACE(std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" +
                   std::to_string(c.n) + "x" + std::to_string(c.k) +
                   (dtype == DType::F32 ? " f32" : " bf16"));
      const int64_t aSize = c.batch * c.m * c.k,
                    bSize = (c.shared ? 1 : c.batch) * c.k * c.n,
                    cSize = c.batch * c.m * c.n;
      auto values = [&](int64_t n) {
        std::vector<float> v(static_cast<size_t>(n));
        for (float &x : v)
          x = dtype == DType::F32 ? dist(gen)
                                  : bfloat16ToFloat(floatToBFloat16(dist(gen)));
        return v;
      };
      std::vector<float> a = values(aSize), b = values(bSize),
                         bias = values(c.n);
      std::vector<double> want(static_cast<size_t>(cSize));
      for (int64_t t = 0; t < c.batch; ++t)
        for (int64_t i = 0; i < c.m; ++i)
          for (int64_t j = 0; j < c.n; ++j) {
            double sum = bias[size_t(j)];
            const float *bt = b.data() + (c.shared ? 0 : t * c.k * c.n);
            for (int64_t p = 0; p < c.k; ++p)
              sum += double(a[size_t((t * c.m + i) * c.k + p)]) *
                     double(c.tb ? bt[j * c.k + p] : bt[p * c.n + j]);
            want[size_t((t * c.m + i) * c.n + j)] = sum;
          }
      MatmulShape shape{/*transposeA=*/false,
                        c.tb,
                        c.shared,
                        c.m,
                        c.n,
                        c.k,
                        c.batch};
      std::vector<float> got(static_cast<size_t>(cSize));
      auto runIt = [&](auto &aDev, auto &bDev, auto &biasDev, auto &cDev) {
        gpu::LtGemm gemm;
        gpu::LtGemm::Operands operands{aDev.data, bDev.data, biasDev.data,
                                       cDev.data};
        std::string why;
        ASSERT_TRUE(gemm.plan(lt, shape, dtype, dtype, /*tf32=*/false,
                              gpu::LtEpilogue::Bias, operands, workspace.size,
                              why))
            << why;
        ASSERT_TRUE(
            gemm.run(lt, operands, workspace.data, workspace.size, nullptr));
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        // The bias is part of the plan: another one, or no plan, is refused.
        gpu::LtGemm::Operands otherBias = operands;
        otherBias.bias = cDev.data;
        Status refused =
            gemm.run(lt, otherBias, workspace.data, workspace.size, nullptr);
        EXPECT_FALSE(refused);
        EXPECT_NE(refused.message().find("the bias is not the one the GEMM "
                                         "was planned with"),
                  std::string::npos)
            << refused.message();
        Status unplanned = gpu::LtGemm().run(lt, operands, workspace.data,
                                             workspace.size, nullptr);
        EXPECT_FALSE(unplanned);
        EXPECT_NE(unplanned.message().find("the GEMM was not planned"),
                  std::string::npos)
            << unplanned.message();
      };
      if (dtype == DType::F32) {
        DeviceVector<float> aDev{a}, bDev{b}, biasDev{bias},
            cDev{std::vector<float>(got.size())};
        runIt(aDev, bDev, biasDev, cDev);
        got = cDev.read();
      } else {
        auto bits = [](const std::vector<float> &v) {
          std::vector<uint16_t> out(v.size());
          for (size_t i = 0; i < v.size(); ++i)
            out[i] = floatToBFloat16(v[i]);
          return out;
        };
        DeviceVector<uint16_t> aDev{bits(a)}, bDev{bits(b)},
            biasDev{bits(bias)}, cDev{std::vector<uint16_t>(got.size())};
        runIt(aDev, bDev, biasDev, cDev);
        std::vector<uint16_t> out = cDev.read();
        for (size_t i = 0; i < out.size(); ++i)
          got[i] = bfloat16ToFloat(out[i]);
      }
      // fp32 sums against double; bf16 results rounded once (2^-8).
      double tolerance = dtype == DType::F32 ? 1e-5 : 8e-3;
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i],
                    tolerance * std::max(1.0, std::fabs(want[i])))
            << "element " << i;
    }
  cublasLtDestroy(lt);
}

// mt.matmul_bias_gelu and mt.matmul_gelu_grad through cuBLASLt's GeLU
// epilogues (LtGemm.h) in bf16, as GPT-2's MLP has them: [batch, seq, k] x
// [k, n] + bias with the sum stored and its GeLU as C, and the GeLU's
// input gradient from the second layer's [batch, seq, n2] x [n, n2]^T at
// the stored sum. Against a reference in double from the same bf16
// operands: the sum within bf16's rounding, GeLU (cuBLASLt's tanh
// approximation, taken of the unrounded sum) and its gradient within
// 2^-7 of the largest value.
TEST(LtGemm, GeluEpiloguesMatchTheReference) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  cublasLtHandle_t lt = nullptr;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  DeviceVector<uint8_t> workspace{std::vector<uint8_t>(size_t(32) << 20)};
  std::mt19937_64 gen(37);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t batch = 2, m = 24, k = 40, n = 64, n2 = 48, rows = batch * m;
  auto values = [&](int64_t count, float scale) {
    std::vector<float> v(static_cast<size_t>(count));
    for (float &x : v)
      x = bfloat16ToFloat(floatToBFloat16(scale * dist(gen)));
    return v;
  };
  auto bits = [](const std::vector<float> &v) {
    std::vector<uint16_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      out[i] = floatToBFloat16(v[i]);
    return out;
  };
  auto floats = [](const std::vector<uint16_t> &v) {
    std::vector<float> out(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      out[i] = bfloat16ToFloat(v[i]);
    return out;
  };
  auto gelu = [](double x) {
    return 0.5 * x *
           (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  };
  auto geluGrad = [](double dy, double x) {
    double t = std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
    double du = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x);
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du);
  };
  auto closeTo = [](const std::vector<float> &got,
                    const std::vector<double> &want, double relative,
                    const char *what) {
    double largest = 0;
    for (double w : want)
      largest = std::max(largest, std::fabs(w));
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], relative * std::max(1.0, largest))
          << what << " element " << i;
  };
  std::vector<float> x = values(rows * k, 2), w = values(k * n, 1),
                     bias = values(n, 1), dh = values(rows * n2, 1),
                     w2 = values(n * n2, 1);
  // Forward: sum = x w + bias, h = GeLU(sum).
  std::vector<double> sum(size_t(rows * n)), h(sum.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias[size_t(j)];
      for (int64_t p = 0; p < k; ++p)
        acc += double(x[size_t(r * k + p)]) * double(w[size_t(p * n + j)]);
      sum[size_t(r * n + j)] = acc;
      h[size_t(r * n + j)] = gelu(acc);
    }
  DeviceVector<uint16_t> xDev{bits(x)}, wDev{bits(w)}, biasDev{bits(bias)},
      sumDev{std::vector<uint16_t>(sum.size())},
      hDev{std::vector<uint16_t>(sum.size())};
  std::string why;
  gpu::LtGemm forward;
  gpu::LtGemm::Operands f{xDev.data, wDev.data, biasDev.data, hDev.data,
                          sumDev.data};
  ASSERT_TRUE(forward.plan(
      lt, MatmulShape{false, false, true, m, n, k, batch}, DType::BF16,
      DType::BF16, false, gpu::LtEpilogue::GeluAuxBias, f, workspace.size, why))
      << why;
  ASSERT_TRUE(forward.run(lt, f, workspace.data, workspace.size, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> storedSum = floats(sumDev.read());
  closeTo(storedSum, sum, 8e-3, "sum");
  closeTo(floats(hDev.read()), h, 8e-3, "GeLU");
  // Backward: dSum = (dh w2^T) * GeLU'(stored sum).
  std::vector<double> dSum(sum.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < n2; ++p)
        acc += double(dh[size_t(r * n2 + p)]) * double(w2[size_t(j * n2 + p)]);
      dSum[size_t(r * n + j)] = geluGrad(acc, storedSum[size_t(r * n + j)]);
    }
  DeviceVector<uint16_t> dhDev{bits(dh)}, w2Dev{bits(w2)},
      dSumDev{std::vector<uint16_t>(sum.size())};
  gpu::LtGemm backward;
  gpu::LtGemm::Operands b{dhDev.data, w2Dev.data, nullptr, dSumDev.data,
                          sumDev.data};
  ASSERT_TRUE(backward.plan(lt, MatmulShape{false, true, true, m, n, n2, batch},
                            DType::BF16, DType::BF16, false,
                            gpu::LtEpilogue::DGelu, b, workspace.size, why))
      << why;
  ASSERT_TRUE(backward.run(lt, b, workspace.data, workspace.size, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  closeTo(floats(dSumDev.read()), dSum, 8e-3, "GeLU's input gradient");
  // The GeLU's input is part of the plan.
  gpu::LtGemm::Operands otherInput = b;
  otherInput.aux = hDev.data;
  Status refused =
      backward.run(lt, otherInput, workspace.data, workspace.size, nullptr);
  EXPECT_FALSE(refused);
  EXPECT_NE(refused.message().find("the GeLU's input is not the one"),
            std::string::npos)
      << refused.message();
  // A batched GEMM (no shared B) is refused with its reason.
  gpu::LtGemm batched;
  EXPECT_FALSE(
      batched.plan(lt, MatmulShape{false, false, false, m, n, k, batch},
                   DType::BF16, DType::BF16, false,
                   gpu::LtEpilogue::GeluAuxBias, f, workspace.size, why));
  EXPECT_NE(why.find("a batched GEMM with a GeLU epilogue"), std::string::npos)
      << why;
  // Rows of the auxiliary matrix not a multiple of 8, and a bias gradient
  // of a transposed B, are refused with their reasons.
  why.clear();
  EXPECT_FALSE(
      gpu::LtGemm().plan(lt, MatmulShape{false, false, true, m, 60, k, batch},
                         DType::BF16, DType::BF16, false,
                         gpu::LtEpilogue::GeluAuxBias, f, workspace.size, why));
  EXPECT_NE(why.find("a GeLU epilogue over rows of 60 (cuBLASLt needs a "
                     "multiple of 8)"),
            std::string::npos)
      << why;
  why.clear();
  EXPECT_FALSE(gpu::LtGemm().plan(
      lt, MatmulShape{true, true, false, k, n, rows, 1}, DType::BF16,
      DType::F32, false, gpu::LtEpilogue::BiasGradA, f, workspace.size, why));
  EXPECT_NE(why.find("a bias gradient of a transposed or batched B"),
            std::string::npos)
      << why;
  // The first layer's weight gradient x^T dSum in f32 (widened) and its
  // bias gradient, dSum's column sums, in f32 (mt.matmul_bias_grad).
  std::vector<float> dSumBf16 = floats(dSumDev.read());
  std::vector<double> dW(size_t(k * n), 0.0), dB(size_t(n), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double g = dSumBf16[size_t(r * n + j)];
      dB[size_t(j)] += g;
      for (int64_t p = 0; p < k; ++p)
        dW[size_t(p * n + j)] += double(x[size_t(r * k + p)]) * g;
    }
  DeviceVector<float> dWDev{std::vector<float>(dW.size())},
      dBDev{std::vector<float>(dB.size())};
  gpu::LtGemm weightGrad;
  gpu::LtGemm::Operands g{xDev.data, dSumDev.data, nullptr, dWDev.data};
  g.biasGrad = dBDev.data;
  ASSERT_TRUE(weightGrad.plan(
      lt, MatmulShape{true, false, false, k, n, rows, 1}, DType::BF16,
      DType::F32, false, gpu::LtEpilogue::BiasGradA, g, workspace.size, why))
      << why;
  ASSERT_TRUE(weightGrad.run(lt, g, workspace.data, workspace.size, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  closeTo(dWDev.read(), dW, 1e-5, "weight gradient");
  closeTo(dBDev.read(), dB, 1e-5, "bias gradient");
  // Accumulating (a later microbatch's mt.matmul_bias_grad with
  // accumulate): the weight gradient is added to C, which holds the
  // accumulator (here the gradient just computed, so C doubles); the bias
  // gradient is this GEMM's alone.
  gpu::LtGemm accumulating;
  ASSERT_TRUE(accumulating.plan(
      lt, MatmulShape{true, false, false, k, n, rows, 1}, DType::BF16,
      DType::F32, false, gpu::LtEpilogue::BiasGradA, g, workspace.size, why,
      /*accumulate=*/true))
      << why;
  ASSERT_TRUE(accumulating.run(lt, g, workspace.data, workspace.size, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> twice(dW.size());
  for (size_t i = 0; i < dW.size(); ++i)
    twice[i] = 2 * dW[i];
  closeTo(dWDev.read(), twice, 1e-5, "accumulated weight gradient");
  closeTo(dBDev.read(), dB, 1e-5, "bias gradient of the accumulating GEMM");
  cublasLtDestroy(lt);
}

// The vocab-parallel cross-entropy's launches on one rank holding the
// whole vocabulary of 50257 padded to 50304 (the padding masked): the
// loss and gradient of cpu::crossEntropy over the real columns.
TEST(CudaCrossEntropy, VocabParallelPassesOnOneRank) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(15);
  std::uniform_real_distribution<float> dist(-4, 6);
  const int64_t rows = 37, vocab = 50257, padded = 50304;
  std::vector<float> logits(size_t(rows * padded));
  for (float &v : logits)
    v = dist(gen);
  std::vector<int32_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r)
    labels[size_t(r)] = int32_t((r * 7919) % vocab);
  std::vector<double> whole(size_t(rows * vocab));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < vocab; ++c)
      whole[size_t(r * vocab + c)] = logits[size_t(r * padded + c)];
  DeviceVector<float> logitsDev{logits}, loss{std::vector<float>(1)},
      dLoss{std::vector<float>{1.5f}},
      dLogits{std::vector<float>(logits.size(), 9.0f)};
  DeviceVector<int32_t> labelsDev{labels};
  DeviceVector<double> stats{std::vector<double>(size_t(3 * rows))};
  double *maxima = stats.data, *sums = maxima + rows, *targets = sums + rows;
  ASSERT_EQ(gpu::launchVocabRowMax(nullptr, logitsDev.data, rows, padded, vocab,
                                   maxima),
            cudaSuccess);
  ASSERT_EQ(gpu::launchVocabRowSums(nullptr, logitsDev.data, labelsDev.data,
                                    maxima, rows, padded, vocab, 0, sums,
                                    targets),
            cudaSuccess);
  ASSERT_EQ(
      gpu::launchVocabLossMean(nullptr, maxima, sums, targets, rows, loss.data),
      cudaSuccess);
  ASSERT_EQ(gpu::launchVocabGrad(nullptr, dLoss.data, logitsDev.data,
                                 labelsDev.data, maxima, sums, rows, padded,
                                 vocab, 0, dLogits.data),
            cudaSuccess);
  double want = cpu::crossEntropy(whole.data(), labels.data(), rows, vocab);
  EXPECT_NEAR(loss.read()[0], want, 1e-6 * want);
  std::vector<double> dWant(whole.size());
  cpu::crossEntropyGrad(1.5, whole.data(), labels.data(), dWant.data(), rows,
                        vocab);
  std::vector<float> got = dLogits.read();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < padded; ++c) {
      double want = c < vocab ? dWant[size_t(r * vocab + c)] : 0.0;
      ASSERT_NEAR(got[size_t(r * padded + c)], want,
                  1e-6 * std::fabs(want) + 1e-12)
          << "row " << r << ", column " << c;
    }
}

TEST(CudaReductions, GradientNormAndBiasGradient) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(14);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t n : {int64_t(1), int64_t(4095), 3 * gpu::kNormPiece + 17,
                    int64_t(1) << 22}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float &v : x)
      v = dist(gen);
    DeviceVector<float> xDev{x}, norm{std::vector<float>(2)};
    DeviceVector<double> partial{
        std::vector<double>(size_t(gpu::normPieces(n)))};
    ASSERT_EQ(gpu::launchSumOfSquares(nullptr, xDev.data, n, partial.data),
              cudaSuccess);
    ASSERT_EQ(gpu::launchSumOfPartials(nullptr, partial.data,
                                       gpu::normPieces(n), norm.data, true),
              cudaSuccess);
    ASSERT_EQ(gpu::launchSumOfPartials(nullptr, partial.data,
                                       gpu::normPieces(n), norm.data + 1,
                                       false),
              cudaSuccess);
    std::vector<float> got = norm.read();
    double want = cpu::sumOfSquares(x.data(), n);
    EXPECT_NEAR(got[0], std::sqrt(want), 1e-6 * std::sqrt(want)) << n;
    EXPECT_NEAR(got[1], want, 1e-6 * want) << n;
  }
  // Several tensors' pieces in one launch (the gradient norm's table;
  // empty tensors are left out of it): the partials, bit for bit, of one
  // launch per tensor.
  {
    const std::vector<int64_t> sizes = {
        1, 4095, 0, 3 * gpu::kNormPiece + 17, int64_t(1) << 20, 768};
    std::vector<std::unique_ptr<DeviceVector<float>>> tensors;
    std::vector<gpu::NormSegment> segments;
    int64_t pieces = 0;
    for (int64_t n : sizes) {
      std::vector<float> x(static_cast<size_t>(std::max<int64_t>(n, 1)));
      for (float &v : x)
        v = dist(gen);
      tensors.push_back(std::make_unique<DeviceVector<float>>(x));
      if (n > 0)
        segments.push_back({tensors.back()->data, n, pieces});
      pieces += gpu::normPieces(n);
    }
    DeviceVector<double> one{std::vector<double>(size_t(pieces))},
        each{std::vector<double>(size_t(pieces))};
    std::vector<uint8_t> bytes(segments.size() * sizeof(gpu::NormSegment));
    std::memcpy(bytes.data(), segments.data(), bytes.size());
    DeviceVector<uint8_t> table{bytes};
    ASSERT_EQ(gpu::launchSumOfSquaresSegments(
                  nullptr,
                  reinterpret_cast<const gpu::NormSegment *>(table.data),
                  int64_t(segments.size()), pieces, one.data),
              cudaSuccess);
    for (size_t t = 0, at = 0; t < sizes.size(); ++t) {
      ASSERT_EQ(gpu::launchSumOfSquares(nullptr, tensors[t]->data, sizes[t],
                                        each.data + at),
                cudaSuccess);
      at += size_t(gpu::normPieces(sizes[t]));
    }
    std::vector<double> got = one.read(), want = each.read();
    for (size_t p = 0; p < got.size(); ++p)
      ASSERT_EQ(got[p], want[p]) << "piece " << p;
  }
  // Bias gradients in chunks of rows (columnSumChunks: 1, several, and the
  // most), fp32, and bf16 read and written as it is stored.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1},
                            {33, 31},
                            {8192, 768},
                            {8192, 3072},
                            {100, 2305}}) {
    std::vector<float> dY(static_cast<size_t>(rows * cols)), want(cols);
    for (float &v : dY)
      v = dist(gen);
    cpu::biasAddGrad(dY.data(), want.data(), rows, cols);
    DeviceVector<float> dYDev{dY}, dBias{std::vector<float>(cols)};
    DeviceVector<double> partial{
        std::vector<double>(size_t(gpu::columnSumChunks(rows, cols) * cols))};
    ASSERT_EQ(gpu::launchBiasAddGrad(nullptr, dYDev.data, gpu::Storage::F32,
                                     dBias.data, gpu::Storage::F32,
                                     partial.data, rows, cols),
              cudaSuccess);
    std::vector<float> got = dBias.read();
    for (int64_t c = 0; c < cols; ++c) // double sums in another order
      ASSERT_NEAR(got[c], want[c], 1e-6 * std::max(1.0f, std::fabs(want[c])))
          << rows << " x " << cols << ", column " << c;

    // bf16: the CPU backend widens, sums and rounds the sum to bf16.
    std::vector<uint16_t> dYBits(dY.size());
    std::vector<float> widened(dY.size());
    for (size_t i = 0; i < dY.size(); ++i) {
      dYBits[i] = floatToBFloat16(dY[i]);
      widened[i] = bfloat16ToFloat(dYBits[i]);
    }
    cpu::biasAddGrad(widened.data(), want.data(), rows, cols);
    DeviceVector<uint16_t> dYHalf{dYBits},
        dBiasHalf{std::vector<uint16_t>(size_t(cols))};
    ASSERT_EQ(gpu::launchBiasAddGrad(nullptr, dYHalf.data, gpu::Storage::BF16,
                                     dBiasHalf.data, gpu::Storage::BF16,
                                     partial.data, rows, cols),
              cudaSuccess);
    std::vector<uint16_t> gotHalf = dBiasHalf.read();
    for (int64_t c = 0; c < cols; ++c) // one bf16 rounding of the same sum
      ASSERT_NEAR(bfloat16ToFloat(gotHalf[c]), want[c],
                  4e-3 * std::max(1.0f, std::fabs(want[c])))
          << "bf16 " << rows << " x " << cols << ", column " << c;
  }
}

// The embedding gradient's sort and runs on the GPU, bit for bit the CPU
// backend's: GPT-2's table at 8 x 1024 tokens drawn from 64 ids (runs of
// about 128 tokens), every token on one row, and a vocabulary-parallel
// shard's offset (tokens of other shards skipped); and the mean of the
// losses, in index order in double, over one chunk of shared memory and
// several.
TEST(CudaEmbedding, GradientAndLossMeanAgainstTheCpuBackend) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(16);
  std::uniform_real_distribution<float> dist(-1, 1);
  struct Case {
    int64_t tokens, vocab, hidden, distinct, offset;
  };
  for (Case c : {Case{8192, 50304, 768, 64, 0}, Case{1000, 17, 5, 1, 0},
                 Case{3000, 40, 33, 80, 20}}) {
    std::vector<int32_t> ids(size_t(c.tokens));
    for (int32_t &id : ids)
      id = int32_t(gen() % uint64_t(c.distinct));
    std::vector<float> dOut(size_t(c.tokens * c.hidden));
    for (float &v : dOut)
      v = dist(gen);
    std::vector<float> want(size_t(c.vocab * c.hidden));
    cpu::embeddingGrad(dOut.data(), ids.data(), want.data(), c.tokens, c.vocab,
                       c.hidden, c.offset);
    DeviceVector<float> dOutDev{dOut},
        dTable{std::vector<float>(want.size(), 7.0f)};
    DeviceVector<int32_t> idsDev{ids},
        scratch{std::vector<int32_t>(size_t(2 * c.tokens))};
    ASSERT_EQ(gpu::launchEmbeddingGrad(nullptr, dOutDev.data, idsDev.data,
                                       dTable.data, c.tokens, c.vocab, c.hidden,
                                       c.offset, scratch.data),
              cudaSuccess);
    EXPECT_EQ(dTable.read(), want) << c.tokens << " tokens";
    // Accumulating into the table just computed (a tied head's gradient):
    // each row's sum added once, rows no token reads kept.
    std::vector<float> twice = want;
    cpu::embeddingGradAccumulate(dOut.data(), ids.data(), twice.data(),
                                 c.tokens, c.vocab, c.hidden, c.offset);
    ASSERT_EQ(gpu::launchEmbeddingGrad(nullptr, dOutDev.data, idsDev.data,
                                       dTable.data, c.tokens, c.vocab, c.hidden,
                                       c.offset, scratch.data,
                                       /*accumulate=*/true),
              cudaSuccess);
    EXPECT_EQ(dTable.read(), twice) << c.tokens << " tokens, accumulating";
  }
  // The forward over a 16-bit table (GPT-2's at 8 x 1024 tokens, and a
  // vocabulary shard's offset): rows copied as bits, as the CPU backend's
  // widening, gathering and rounding give them.
  for (Case c : {Case{8192, 50304, 768, 50304, 0}, Case{300, 40, 33, 80, 20}}) {
    std::vector<int32_t> ids(size_t(c.tokens));
    for (int32_t &id : ids)
      id = int32_t(gen() % uint64_t(c.distinct));
    std::vector<uint16_t> table(size_t(c.vocab * c.hidden));
    std::vector<float> wide(table.size());
    for (size_t i = 0; i < table.size(); ++i) {
      table[i] = floatToBFloat16(dist(gen));
      wide[i] = bfloat16ToFloat(table[i]);
    }
    std::vector<float> rows(size_t(c.tokens * c.hidden));
    cpu::embedding(wide.data(), ids.data(), rows.data(), c.tokens, c.vocab,
                   c.hidden, c.offset);
    std::vector<uint16_t> want(rows.size());
    for (size_t i = 0; i < rows.size(); ++i)
      want[i] = floatToBFloat16(rows[i]);
    DeviceVector<uint16_t> tableDev{table},
        out{std::vector<uint16_t>(want.size(), 7)};
    DeviceVector<int32_t> idsDev{ids};
    ASSERT_EQ(gpu::launchEmbedding(nullptr, tableDev.data, idsDev.data,
                                   out.data, c.tokens, c.vocab, c.hidden,
                                   c.offset),
              cudaSuccess);
    EXPECT_EQ(out.read(), want) << c.tokens << " tokens of a bf16 table";
  }
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(8192), int64_t(10000)}) {
    std::vector<float> losses(static_cast<size_t>(n));
    for (float &v : losses)
      v = 10.0f + dist(gen);
    double total = 0;
    for (float v : losses)
      total += double(v);
    const float want = n > 0 ? float(total / double(n)) : 0.0f;
    DeviceVector<float> lossesDev{n > 0 ? losses : std::vector<float>(1)},
        mean{std::vector<float>(1, 7.0f)};
    ASSERT_EQ(gpu::launchMean(nullptr, lossesDev.data, n, mean.data),
              cudaSuccess);
    EXPECT_EQ(mean.read()[0], want) << n << " losses";
  }
}

// Multi-tensor AdamW as it launches: threads that each take many elements
// (about 6 here), crossing from one tensor into the next, one of them
// empty; or by chunks, with 16-byte loads where a tensor is aligned (all
// but the one of 777 elements, placed one float off) and their tails
// element by element; against the CPU backend's per-tensor update. The
// GPU's pow may differ from the host's in the last bit of a double, which
// can move a stored float by one unit in the last place.
class CudaAdamW : public ::testing::TestWithParam<bool> {};

TEST_P(CudaAdamW, MultiTensorAgainstTheCpuBackend) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  const bool byChunks = GetParam();
  std::mt19937_64 gen(15);
  std::uniform_real_distribution<float> dist(-1, 1), small(0, 0.01f);
  const std::vector<int64_t> sizes = {3, int64_t(1) << 20, 0, 777,
                                      (int64_t(1) << 21) + 5};
  // Each tensor at a multiple of 4 floats, the one of 777 a float after.
  int64_t total = 0, end = 0;
  std::vector<int64_t> places;
  for (int64_t n : sizes) {
    places.push_back((end + 3) / 4 * 4 + (n == 777));
    end = places.back() + n;
    total += n;
  }
  const size_t count = static_cast<size_t>(end);
  std::vector<float> param(count), grad(count), avg(count), avgSq(count);
  for (size_t i = 0; i < count; ++i) {
    param[i] = dist(gen);
    grad[i] = dist(gen);
    avg[i] = 0.1f * dist(gen);
    avgSq[i] = small(gen);
  }
  // step, lr, beta1, beta2, eps, weight decay, gradient scale
  std::vector<float> scalarValues = {7, 6e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f};
  DeviceVector<float> paramDev{param}, gradDev{grad}, avgDev{avg},
      avgSqDev{avgSq}, scalarsDev{scalarValues};
  // The even segments also write a bf16 copy of the updated parameter;
  // the odd ones leave theirs (0xFFFF) alone.
  DeviceVector<uint16_t> copyDev{std::vector<uint16_t>(count, 0xFFFF)};
  std::vector<gpu::AdamSegment> table;
  std::vector<float> wantParam = param, wantAvg = avg, wantAvgSq = avgSq;
  int64_t start = 0, chunks = 0, vectorized = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int64_t n = sizes[k], at = places[k];
    uint16_t *copy = k % 2 == 0 ? copyDev.data + at : nullptr;
    table.push_back({paramDev.data + at, gradDev.data + at, avgDev.data + at,
                     avgSqDev.data + at, copy, start, chunks, 0});
    table.back().vectorized = gpu::adamVectorizable(table.back());
    vectorized += table.back().vectorized;
    chunks += gpu::adamChunksOf(n);
    cpu::adamw(wantParam.data() + at, grad.data() + at, wantAvg.data() + at,
               wantAvgSq.data() + at, n, 6e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 7,
               0.5f, true);
    start += n;
  }
  EXPECT_EQ(vectorized, 4); // all but the tensor of 777
  std::vector<uint8_t> tableBytes(table.size() * sizeof(gpu::AdamSegment));
  std::memcpy(tableBytes.data(), table.data(), tableBytes.size());
  DeviceVector<uint8_t> tableDev{tableBytes};
  const float *sc = scalarsDev.data;
  gpu::AdamScalars scalars{sc, sc + 1, sc + 2, sc + 3, sc + 4, sc + 5, sc + 6};
  auto *tableOnDevice = reinterpret_cast<gpu::AdamSegment *>(tableDev.data);
  ASSERT_EQ(byChunks ? gpu::launchMultiAdamWChunks(nullptr, tableOnDevice,
                                                   int64_t(table.size()), total,
                                                   chunks, scalars, true,
                                                   /*copyBf16=*/true)
                     : gpu::launchMultiAdamW(nullptr, tableOnDevice,
                                             int64_t(table.size()), total,
                                             scalars, true, /*copyBf16=*/true),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // Each copy is the cast of the parameter the kernel wrote, to the bit.
  const std::vector<float> gotParam = paramDev.read();
  const std::vector<uint16_t> gotCopy = copyDev.read();
  for (size_t k = 0; k < table.size(); ++k) {
    const int64_t begin = places[k], end = begin + sizes[k];
    for (int64_t i = begin; i < end; ++i)
      ASSERT_EQ(gotCopy[size_t(i)], table[k].copy
                                        ? toHalfBits(gotParam[size_t(i)], true)
                                        : uint16_t(0xFFFF))
          << "segment " << k << " element " << i;
  }
  auto expectClose = [](const std::vector<float> &got,
                        const std::vector<float> &want, const char *what) {
    int64_t differ = 0;
    for (size_t i = 0; i < want.size(); ++i)
      if (got[i] != want[i]) {
        ++differ;
        ASSERT_LE(std::fabs(got[i] - want[i]),
                  std::fabs(want[i]) * 1.2e-7f + 1e-30f)
            << what << " " << i;
      }
    EXPECT_LE(differ, int64_t(want.size()) / 100) << what;
  };
  expectClose(paramDev.read(), wantParam, "param");
  expectClose(avgDev.read(), wantAvg, "exp_avg");
  expectClose(avgSqDev.read(), wantAvgSq, "exp_avg_sq");
}

INSTANTIATE_TEST_SUITE_P(Traversals, CudaAdamW, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "ByChunks" : "ByElements";
                         });

} // namespace

// mt.multi_cast: one launch over a table of tensors casts each to bf16 (and
// back to f32) as HalfFloat.h rounds, so as the CPU backend's casts, to the
// bit; an empty tensor in the table takes no elements.
TEST(CudaCast, MultiTensorAgainstTheCpuBackend) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 gen(16);
  std::uniform_real_distribution<float> dist(-3, 3);
  const std::vector<int64_t> sizes = {768, 0, (int64_t(1) << 20) + 3, 1};
  std::vector<std::unique_ptr<DeviceVector<float>>> wide, back;
  std::vector<std::unique_ptr<DeviceVector<uint16_t>>> half;
  std::vector<std::vector<float>> values;
  std::vector<gpu::CastSegment> narrow, widen;
  int64_t total = 0;
  for (int64_t n : sizes) {
    std::vector<float> x(static_cast<size_t>(std::max<int64_t>(n, 1)));
    for (float &v : x)
      v = dist(gen);
    values.push_back(x);
    wide.push_back(std::make_unique<DeviceVector<float>>(x));
    back.push_back(
        std::make_unique<DeviceVector<float>>(std::vector<float>(x.size())));
    half.push_back(std::make_unique<DeviceVector<uint16_t>>(
        std::vector<uint16_t>(x.size())));
    narrow.push_back({half.back()->data, wide.back()->data, total});
    widen.push_back({half.back()->data, back.back()->data, total});
    total += n;
  }
  auto table = [](const std::vector<gpu::CastSegment> &segments) {
    std::vector<uint8_t> bytes(segments.size() * sizeof(gpu::CastSegment));
    std::memcpy(bytes.data(), segments.data(), bytes.size());
    return bytes;
  };
  DeviceVector<uint8_t> narrowTable{table(narrow)}, widenTable{table(widen)};
  const auto count = int64_t(sizes.size());
  ASSERT_EQ(gpu::launchMultiConvert(
                nullptr,
                reinterpret_cast<const gpu::CastSegment *>(narrowTable.data),
                count, total, /*bf16=*/true, /*narrow=*/true),
            cudaSuccess);
  ASSERT_EQ(gpu::launchMultiConvert(
                nullptr,
                reinterpret_cast<const gpu::CastSegment *>(widenTable.data),
                count, total, /*bf16=*/true, /*narrow=*/false),
            cudaSuccess);
  for (size_t t = 0; t < sizes.size(); ++t) {
    std::vector<uint16_t> got = half[t]->read();
    std::vector<float> wideBack = back[t]->read();
    for (int64_t i = 0; i < sizes[t]; ++i) {
      uint16_t want = floatToBFloat16(values[t][size_t(i)]);
      ASSERT_EQ(got[size_t(i)], want) << "tensor " << t << " element " << i;
      ASSERT_EQ(wideBack[size_t(i)], bfloat16ToFloat(want))
          << "tensor " << t << " element " << i;
    }
  }
}
