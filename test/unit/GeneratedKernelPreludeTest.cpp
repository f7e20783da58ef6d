//===- GeneratedKernelPreludeTest.cpp - The generated kernels' math -------===//
//
// The prelude every generated kernel is built on
// (mtrt/GeneratedKernelPrelude.h), compiled as the CPU backend compiles it
// (GeneratedKernelLibrary: the system compiler at load) and checked
// against double-precision libm: exp, tanh, GeLU and its gradient, SiLU,
// the bf16/fp16 rounding, and the row reductions of row kernels.
//
//===----------------------------------------------------------------------===//

#include "cpu/HostKernels.h"
#include "mtrt/GeneratedKernelLibrary.h"
#include "mtrt/HalfFloat.h"

#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace mtrt;

namespace {

// One kernel per helper, each y[i] = f(x[i]) (or f(dy, x) for gradients,
// dy = 1), written against the prelude's macros as the emitter writes them.
const char *kProbeKernels = R"probe(
#define MT_PROBE(name, expr)                                                   \
  MT_KERNEL(name) {                                                            \
    const float *x = (const float *)MT_ARG(0);                                 \
    float *y = (float *)MT_ARG(1);                                             \
    MT_ELEMENT_LOOP(i, c, 1000000LL)                                           \
    y[i] = (expr);                                                             \
    MT_ELEMENT_LOOP_END                                                        \
  }
MT_PROBE(probe_exp, mt_exp(x[i]))
MT_PROBE(probe_tanh, mt_tanh(x[i]))
MT_PROBE(probe_gelu, mt_gelu(x[i]))
MT_PROBE(probe_gelu_grad, mt_gelu_grad(1.0f, x[i]))
MT_PROBE(probe_silu_grad, mt_silu_grad(1.0f, x[i]))
MT_PROBE(probe_bf16, mt_round_bf16(x[i]))
MT_PROBE(probe_f16, mt_round_f16(x[i]))
// Row reductions as a row kernel uses them: each row's max and sum.
#define MT_ROW_PROBE(name, cols)                                               \
  MT_KERNEL(name) {                                                            \
    const float *x = (const float *)MT_ARG(0);                                 \
    float *row_max = (float *)MT_ARG(1);                                       \
    float *row_sum = (float *)MT_ARG(2);                                       \
    double *row_sum_f64 = (double *)MT_ARG(3);                                 \
    MT_ROW_LOOP(r)                                                             \
    const float m = mt_row_max<MT_ROW_THREADS>(cols, [&](int64_t c) { return x[r * cols + c]; }); \
    const float s = mt_row_sum<MT_ROW_THREADS>(cols, [&](int64_t c) { return x[r * cols + c]; }); \
    const double d = mt_row_sum_f64<MT_ROW_THREADS>(cols, [&](int64_t c) { return x[r * cols + c]; }); \
    MT_ROW_LEADER row_max[r] = m;                                              \
    MT_ROW_LEADER row_sum_f64[r] = d;                                          \
    MT_ROW_LEADER row_sum[r] = s;                                              \
    MT_ROW_LOOP_END                                                            \
  }
MT_ROW_PROBE(probe_rows_37, 37LL)
MT_ROW_PROBE(probe_rows_5, 5LL)
// Several sums in one reduction (a norm's statistics): each row's sums of
// x and x^2 by mt_row_sums_f64, then each by mt_row_sum_f64.
#define MT_SUMS_PROBE(name, cols)                                              \
  MT_KERNEL(name) {                                                            \
    const float *x = (const float *)MT_ARG(0);                                 \
    double *together = (double *)MT_ARG(1);                                    \
    double *apart = (double *)MT_ARG(2);                                       \
    MT_ROW_LOOP(r)                                                             \
    const mt_f64x<2> s = mt_row_sums_f64<2, MT_ROW_THREADS>(cols, [&](int64_t c) { \
      const double v = x[r * cols + c];                                        \
      return mt_f64x<2>{{v, v * v}};                                           \
    });                                                                        \
    const double s0 = mt_row_sum_f64<MT_ROW_THREADS>(cols, [&](int64_t c) { return (double)x[r * cols + c]; }); \
    const double s1 = mt_row_sum_f64<MT_ROW_THREADS>(cols, [&](int64_t c) { const double v = x[r * cols + c]; return v * v; }); \
    MT_ROW_LEADER together[2 * r] = s.v[0];                                    \
    MT_ROW_LEADER together[2 * r + 1] = s.v[1];                                \
    MT_ROW_LEADER apart[2 * r] = s0;                                           \
    MT_ROW_LEADER apart[2 * r + 1] = s1;                                       \
    MT_ROW_LOOP_END                                                            \
  }
MT_SUMS_PROBE(probe_sums_37, 37LL)
MT_SUMS_PROBE(probe_sums_768, 768LL)
// A softmax's row statistics in one pass: shape = {cols, threads}, with
// threads 0 the host's mt_row_softmax_stats and otherwise CUDA's partials
// (mt_softmax_partial per thread of a row's group) merged in thread order.
MT_KERNEL(probe_softmax) {
  const float *x = (const float *)MT_ARG(0);
  const long long *shape = (const long long *)MT_ARG(1);
  float *row_max = (float *)MT_ARG(2);
  double *row_sum = (double *)MT_ARG(3);
  const int64_t cols = shape[0], threads = shape[1];
  MT_ROW_LOOP(r)
    const float *row = x + r * cols;
    auto f = [&](int64_t c) { return row[c]; };
    mt_softmax_stats st = {-INFINITY, 0.0};
    if (threads == 0)
      st = mt_row_softmax_stats<MT_ROW_THREADS>(cols, f);
    else
      for (int64_t t = 0; t < threads; ++t)
        st = mt_softmax_merge(st, mt_softmax_partial(cols, t, threads, f));
    row_max[r] = st.m;
    row_sum[r] = st.s;
  MT_ROW_LOOP_END
}
// A fused dropout: its parameter block after the operands.
MT_KERNEL(probe_dropout) {
  const float *x = (const float *)MT_ARG(0);
  float *y = (float *)MT_ARG(1);
  const uint64_t *MT_RESTRICT mt_rng = (const uint64_t *)MT_ARG(2);
  mt_dropout_cache blocks[1];
  MT_ELEMENT_LOOP(i, c, 1000000LL)
  y[i] = mt_dropout(mt_rng, i, x[i], blocks[0]);
  MT_ELEMENT_LOOP_END
}
)probe";

class Prelude : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    // A private cache, so the test compiles what it reads.
    std::string dir = ::testing::TempDir() + "prelude-kernel-cache";
    setenv("MEGATRON_KERNEL_CACHE", dir.c_str(), 1);
    program = new RankProgram;
    program->kernelSource =
        std::string(generatedKernelPrelude()) + kProbeKernels;
    for (const char *name :
         {"probe_exp", "probe_tanh", "probe_gelu", "probe_gelu_grad",
          "probe_silu_grad", "probe_bf16", "probe_f16", "probe_rows_37",
          "probe_rows_5", "probe_dropout", "probe_sums_37", "probe_sums_768",
          "probe_softmax"}) {
      GeneratedKernel kernel;
      kernel.name = name;
      program->generatedKernels.push_back(kernel);
    }
    library = new GeneratedKernelLibrary;
    loaded = new Status(library->load(*program));
  }
  static void TearDownTestSuite() {
    delete loaded;
    delete library;
    delete program;
  }

  /// Runs probe `index` over `x`.
  static std::vector<float> apply(size_t index, std::vector<float> x) {
    std::vector<float> y(x.size());
    GeneratedKernelArgs args{};
    args.p[0] = x.data();
    args.p[1] = y.data();
    library->function(index)(&args, 0, static_cast<long long>(x.size()));
    return y;
  }

  static std::vector<float> grid(float from, float to, float step) {
    std::vector<float> x;
    for (float v = from; v <= to; v += step)
      x.push_back(v);
    return x;
  }

  static RankProgram *program;
  static GeneratedKernelLibrary *library;
  static Status *loaded;
};

RankProgram *Prelude::program = nullptr;
GeneratedKernelLibrary *Prelude::library = nullptr;
Status *Prelude::loaded = nullptr;

double geluExact(double x) {
  return 0.5 * x *
         (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

TEST_F(Prelude, Compiles) { ASSERT_TRUE(*loaded) << loaded->message(); }

// A backend's own kernels compiled with a program's (the CPU backend's
// GeLU epilogues): numbered after the program's, and, where the program
// has no generated kernels, headed by the prelude themselves.
TEST(PreludeExtraKernels, FollowTheProgramsAndNeedNoProgramSource) {
  std::string dir = ::testing::TempDir() + "prelude-extra-cache";
  setenv("MEGATRON_KERNEL_CACHE", dir.c_str(), 1);
  const char *extra = R"extra(
MT_KERNEL(extra_double) {
  const float *x = (const float *)MT_ARG(0);
  float *y = (float *)MT_ARG(1);
  MT_ELEMENT_LOOP(i, c, 1000000LL)
  y[i] = 2.0f * x[i];
  MT_ELEMENT_LOOP_END
}
)extra";
  std::vector<float> x = {1.5f, -2.0f, 0.25f}, y(3);
  GeneratedKernelArgs args{};
  args.p[0] = x.data();
  args.p[1] = y.data();
  RankProgram empty;
  GeneratedKernelLibrary alone;
  Status loaded =
      alone.load(empty, KernelToolchain::host(), extra, {"extra_double"});
  ASSERT_TRUE(loaded) << loaded.message();
  alone.function(0)(&args, 0, 3);
  EXPECT_EQ(y, (std::vector<float>{3.0f, -4.0f, 0.5f}));
  RankProgram program;
  program.kernelSource = std::string(generatedKernelPrelude()) + kProbeKernels;
  GeneratedKernel probe;
  probe.name = "probe_exp";
  program.generatedKernels.push_back(probe);
  GeneratedKernelLibrary after;
  loaded =
      after.load(program, KernelToolchain::host(), extra, {"extra_double"});
  ASSERT_TRUE(loaded) << loaded.message();
  std::fill(y.begin(), y.end(), 0.0f);
  after.function(1)(&args, 0, 3);
  EXPECT_EQ(y, (std::vector<float>{3.0f, -4.0f, 0.5f}));
}

// mt_row_sums_f64's components are mt_row_sum_f64's sums, to the bit, and
// the sums in double of the row (rows of 37: a tail past the lanes; 768:
// GPT-2's width).
TEST_F(Prelude, SeveralRowSumsAtOnceEqualEachAlone) {
  ASSERT_TRUE(*loaded) << loaded->message();
  std::mt19937_64 gen(23);
  std::uniform_real_distribution<float> dist(-3, 5);
  for (auto [index, cols] : {std::pair<size_t, int64_t>{10, 37}, {11, 768}}) {
    const int64_t rows = 5;
    std::vector<float> x(size_t(rows * cols));
    for (float &v : x)
      v = dist(gen);
    std::vector<double> together(size_t(2 * rows)), apart(size_t(2 * rows));
    GeneratedKernelArgs args{};
    args.p[0] = x.data();
    args.p[1] = together.data();
    args.p[2] = apart.data();
    library->function(index)(&args, 0, rows);
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(together[size_t(2 * r)], apart[size_t(2 * r)]) << cols;
      EXPECT_EQ(together[size_t(2 * r + 1)], apart[size_t(2 * r + 1)]) << cols;
      double sum = 0, squares = 0;
      for (int64_t c = 0; c < cols; ++c) {
        double v = x[size_t(r * cols + c)];
        sum += v;
        squares += v * v;
      }
      EXPECT_NEAR(together[size_t(2 * r)], sum, 1e-12 * squares);
      EXPECT_NEAR(together[size_t(2 * r + 1)], squares, 1e-12 * squares);
    }
  }
}

// The softmax statistics in one pass (the host's and CUDA's per-thread
// partials): the row's max exactly and the sum of exponentials below it
// within 1e-6, for rows shorter than a chunk, across chunk boundaries,
// with the max rising in every chunk (each partial rescaled as it goes) or
// only at the end, with -infinity columns (a masked logit), a row all
// -infinity but one, and a NaN (the sum NaN).
TEST_F(Prelude, SoftmaxStatisticsInOnePass) {
  ASSERT_TRUE(*loaded) << loaded->message();
  std::mt19937_64 gen(29);
  std::uniform_real_distribution<float> dist(-8, 8);
  for (int64_t cols : {1, 5, 127, 128, 129, 300, 2048, 50304}) {
    const int64_t rows = 6;
    std::vector<float> x(size_t(rows * cols));
    for (float &v : x)
      v = dist(gen);
    float *rising = x.data() + cols, *lateMax = x.data() + 2 * cols,
          *masked = x.data() + 3 * cols, *single = x.data() + 4 * cols,
          *nan = x.data() + 5 * cols;
    for (int64_t c = 0; c < cols; ++c) {
      rising[c] = 0.01f * float(c) - 30.0f;
      single[c] = c == cols / 2 ? 3.0f : -INFINITY;
      if (c % 3 == 1)
        masked[c] = -INFINITY;
    }
    lateMax[cols - 1] = 60.0f;
    nan[cols / 3] = NAN;
    for (long long threads : {0LL, 32LL, 256LL}) {
      long long shape[2] = {cols, threads};
      std::vector<float> rowMax(rows);
      std::vector<double> rowSum(rows);
      GeneratedKernelArgs args{};
      args.p[0] = x.data();
      args.p[1] = shape;
      args.p[2] = rowMax.data();
      args.p[3] = rowSum.data();
      library->function(12)(&args, 0, rows);
      for (int64_t r = 0; r + 1 < rows; ++r) {
        const float *row = x.data() + r * cols;
        const float max = *std::max_element(row, row + cols);
        double exact = 0;
        for (int64_t c = 0; c < cols; ++c)
          exact += std::exp(double(row[c]) - double(max));
        EXPECT_EQ(rowMax[size_t(r)], max)
            << "row " << r << " of " << cols << ", threads " << threads;
        EXPECT_NEAR(rowSum[size_t(r)], exact, 1e-6 * exact)
            << "row " << r << " of " << cols << ", threads " << threads;
      }
      EXPECT_TRUE(std::isnan(rowSum[size_t(rows - 1)]))
          << cols << ", threads " << threads;
    }
  }
}

// The host entry point passes GeneratedKernelArgs where the prelude reads
// mt_args: the two must have the same operand count.
TEST_F(Prelude, ArgumentBlockMatchesTheRuntime) {
  std::string expected =
      "void *p[" + std::to_string(kGeneratedKernelMaxOperands) + "];";
  EXPECT_NE(std::string(generatedKernelPrelude()).find(expected),
            std::string::npos);
}

TEST_F(Prelude, ExpWithinTwoUlp) {
  ASSERT_TRUE(*loaded);
  std::vector<float> x = grid(-87.0f, 88.0f, 0.0137f);
  std::vector<float> y = apply(0, x);
  for (size_t i = 0; i < x.size(); ++i) {
    double exact = std::exp(double(x[i]));
    EXPECT_NEAR(y[i], exact, 2.4e-7 * exact) << "x " << x[i];
  }
  std::vector<float> nan = apply(0, {NAN});
  EXPECT_TRUE(std::isnan(nan[0]));
}

TEST_F(Prelude, TanhIsExactlyOneFarOut) {
  ASSERT_TRUE(*loaded);
  std::vector<float> x = grid(-30.0f, 30.0f, 0.00731f);
  std::vector<float> y = apply(1, x);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y[i], std::tanh(double(x[i])), 2.4e-7) << "x " << x[i];
  // Beyond |x| = 9 the float tanh is +-1, so 1 - tanh^2 is 0.
  std::vector<float> far = apply(1, {9.5f, -9.5f, 40.0f, -1e30f, NAN});
  EXPECT_EQ(far[0], 1.0f);
  EXPECT_EQ(far[1], -1.0f);
  EXPECT_EQ(far[2], 1.0f);
  EXPECT_EQ(far[3], -1.0f);
  EXPECT_TRUE(std::isnan(far[4]));
}

TEST_F(Prelude, GeluAndItsGradient) {
  ASSERT_TRUE(*loaded);
  std::vector<float> x = grid(-40.0f, 40.0f, 0.0191f);
  std::vector<float> gelu = apply(2, x), grad = apply(3, x);
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i], h = 1e-4 * std::max(1.0, std::fabs(v));
    double exactGrad = (geluExact(v + h) - geluExact(v - h)) / (2 * h);
    EXPECT_NEAR(gelu[i], geluExact(v), 1e-6 * std::max(1.0, std::fabs(v)))
        << "x " << v;
    EXPECT_NEAR(grad[i], exactGrad, 2e-6) << "x " << v;
  }
  // Far left the gradient vanishes exactly (the tanh saturates to -1).
  EXPECT_EQ(apply(3, {-20.0f})[0], 0.0f);
}

TEST_F(Prelude, SiluGradient) {
  ASSERT_TRUE(*loaded);
  std::vector<float> x = grid(-80.0f, 80.0f, 0.0377f);
  std::vector<float> grad = apply(4, x);
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i], s = 1.0 / (1.0 + std::exp(-v));
    EXPECT_NEAR(grad[i], s * (1.0 + v * (1.0 - s)), 1e-6) << "x " << v;
  }
}

// The kernels round to 16 bits exactly as the runtime's HalfFloat.h does.
TEST_F(Prelude, HalfRoundingMatchesTheRuntime) {
  ASSERT_TRUE(*loaded);
  std::vector<float> x = grid(-70000.0f, 70000.0f, 13.37f);
  for (float v : {0.0f, -0.0f, 1e-8f, -3e-5f, 6.1e-5f, 65504.0f, 65520.0f,
                  1e30f, INFINITY, -INFINITY})
    x.push_back(v);
  std::vector<float> bf16 = apply(5, x), f16 = apply(6, x);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(bf16[i], bfloat16ToFloat(floatToBFloat16(x[i]))) << "x " << x[i];
    EXPECT_EQ(f16[i], halfToFloat(floatToHalf(x[i]))) << "x " << x[i];
  }
}

/// The host's row sum: 16 partial sums, one per column modulo 16, added
/// pairwise in a fixed tree (the prelude's order).
float laneOrderSum(const float *x, int64_t n) {
  float lanes[16] = {};
  for (int64_t c = 0; c < n; ++c)
    lanes[c % 16] += x[c];
  for (int width = 8; width > 0; width /= 2)
    for (int j = 0; j < width; ++j)
      lanes[j] += lanes[j + width];
  return lanes[0];
}

// Row reductions: the max exactly, the float sum in the documented lane order
// (bit for bit, whatever the vector width) and close to the double sum;
// rows shorter than the lanes and with a tail; NaN propagates through the
// sum, and the max of a row of -inf is -inf.
TEST_F(Prelude, RowReductions) {
  ASSERT_TRUE(*loaded);
  for (auto [index, cols] : {std::pair<size_t, int64_t>{7, 37}, {8, 5}}) {
    const int64_t rows = 4;
    std::vector<float> x(size_t(rows * cols));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = std::sin(0.37f * float(i)) * (1.0f + float(i % 11));
    x[size_t(cols) + 2] = 1e7f; // one large value among small ones
    for (int64_t c = 0; c < cols; ++c)
      x[size_t(2 * cols + c)] = -INFINITY;
    x[size_t(3 * cols + cols - 1)] = NAN;
    std::vector<float> rowMax(rows), rowSum(rows);
    std::vector<double> rowSumF64(rows);
    GeneratedKernelArgs args{};
    args.p[0] = x.data();
    args.p[1] = rowMax.data();
    args.p[2] = rowSum.data();
    args.p[3] = rowSumF64.data();
    library->function(index)(&args, 0, rows);
    for (int64_t r = 0; r < 2; ++r) {
      const float *row = x.data() + r * cols;
      double exact = 0;
      for (int64_t c = 0; c < cols; ++c)
        exact += row[c];
      EXPECT_EQ(rowMax[size_t(r)], *std::max_element(row, row + cols))
          << "row " << r << " of " << cols;
      EXPECT_EQ(rowSum[size_t(r)], laneOrderSum(row, cols))
          << "row " << r << " of " << cols;
      EXPECT_NEAR(rowSum[size_t(r)], exact, 1e-6 * std::fabs(exact) + 1e-5);
      // The double sum of floats is exact here (few, moderate terms).
      EXPECT_EQ(rowSumF64[size_t(r)], exact) << "row " << r;
    }
    EXPECT_EQ(rowMax[2], -INFINITY);
    EXPECT_TRUE(std::isnan(rowSum[3]));
  }
}

// A dropout in a fused kernel draws the unfused dropout kernel's mask at
// the same index, from the parameter block the runtime fills from the
// command: whole tensors with a rank's offset, and tensors split along the
// sequence (the one-device [batch, seq, inner] index).
TEST_F(Prelude, FusedDropoutDrawsTheUnfusedMask) {
  ASSERT_TRUE(*loaded);
  const int64_t batch = 3, seqLocal = 4, inner = 5, seqTotal = 12;
  const int64_t n = batch * seqLocal * inner;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    x[size_t(i)] = 0.25f + 0.01f * float(i);
  const uint64_t seed = 1234, step = 7;
  const uint32_t stream = 5;
  const double p = 0.3;
  cpu::RngKey key{seed, step};
  // From the stream's first index (block 0, where an empty block cache
  // must not look like a hit), and from a rank's offset that does not
  // start a block.
  for (uint64_t offset : {uint64_t(0), uint64_t(4097)})
    for (bool split : {false, true}) {
      // A program of one fused command: a fill before it has no blocks.
      RankProgram dropoutProgram;
      dropoutProgram.generatedKernels.resize(1);
      dropoutProgram.generatedKernels[0].dropouts = 1;
      dropoutProgram.commands.resize(2);
      dropoutProgram.commands[0].kernel = "fill";
      Command &command = dropoutProgram.commands[1];
      command.kernel = "fused";
      command.params["generated"] = 0;
      command.params["dropout0_probability"] = p;
      command.params["dropout0_rng_stream"] = stream;
      command.params["dropout0_rng_offset"] = double(offset);
      command.params["dropout0_seq_local"] = double(seqLocal);
      command.params["dropout0_inner"] = double(inner);
      if (split) {
        command.params["dropout0_rng_seq_total"] = double(seqTotal);
        command.params["dropout0_rng_seq_offset"] = 4;
      }
      FusedDropoutBlocks blocks;
      blocks.prepare(dropoutProgram);
      blocks.setStep(seed, step);
      ASSERT_EQ(blocks.all().size(), size_t(kFusedDropoutWords));
      ASSERT_EQ(blocks.offset(0), -1);
      ASSERT_EQ(blocks.offset(1), 0);
      std::vector<float> got(x.size()), want(x.size());
      GeneratedKernelArgs args{};
      args.p[0] = x.data();
      args.p[1] = got.data();
      args.p[2] = const_cast<uint64_t *>(blocks.all().data());
      library->function(9)(&args, 0, n);
      // The CPU backend's unfused dropout (CpuDevice), row by row when split.
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < seqLocal; ++t) {
          int64_t row = (b * seqLocal + t) * inner;
          uint64_t index =
              split ? offset + uint64_t((b * seqTotal + 4 + t) * inner)
                    : offset + uint64_t(row);
          cpu::dropout(x.data() + row, want.data() + row, inner, p, stream, key,
                       index);
        }
      EXPECT_EQ(got, want) << (split ? "split along the sequence" : "whole")
                           << ", offset " << offset;
      EXPECT_GT(std::count(got.begin(), got.end(), 0.0f), 0);
      // In chunks that start and end inside Philox blocks (the thread pool's
      // ranges): each call's block cache starts empty, and the mask is the
      // same.
      std::vector<float> chunked(x.size(), -1.0f);
      args.p[1] = chunked.data();
      for (int64_t lo = 0, hi = 7; lo < n; lo = hi, hi = std::min(n, hi + 9))
        library->function(9)(&args, lo, hi);
      EXPECT_EQ(chunked, want) << (split ? "split, in chunks" : "in chunks")
                               << ", offset " << offset;
    }
}

/// The prelude's CUDA text from `first` up to `last`, after declarations
/// that let the host compile it: CUDA's block and thread indices as
/// globals the probe sets. False where the prelude lacks either.
bool cudaTextEmulated(const char *first, const char *last,
                      std::string &source) {
  const std::string prelude = generatedKernelPrelude();
  size_t from = prelude.find(first), to = prelude.find(last);
  if (from == std::string::npos || to == std::string::npos || to < from)
    return false;
  source = R"emulation(
#include <stdint.h>
struct mt_args { void *p[32]; };
struct mt_dim { unsigned x; };
static mt_dim blockIdx, blockDim, gridDim, threadIdx;
)emulation" +
           prelude.substr(from, to - from);
  return true;
}

// The CUDA element loops (MT_ELEMENT_LOOP, and MT_ELEMENT_GROUPS with its
// body twice, under __CUDACC__), their text from the prelude, run on the
// host by emulating CUDA's block and thread indices: every element of
// [begin, end) is visited exactly once, by grids of several sizes (fewer
// threads than elements, more, one block), and c is the element's index
// modulo the row length, for rows shorter than a block, longer, and of one
// element; the groups' two bodies share the domain between them.
TEST(PreludeCudaLoop, VisitsEveryElementOnceWithItsColumn) {
  std::string source;
  ASSERT_TRUE(cudaTextEmulated("#define MT_UNROLL", "#define MT_LAUNCHER(name)",
                               source));
  source +=
      R"emulation(
// Each probe: the grid (blocks, threads, row length) from operand 0, then
// every emulated thread of it runs the loop.
#define PROBE_ELEMENTS(name, loop)                                             \
  extern "C" void name(const mt_args *mt_a, long long mt_begin,                \
                       long long mt_end) {                                     \
    const long long *grid = (const long long *)mt_a->p[0];                     \
    long long *visits = (long long *)mt_a->p[1];                               \
    long long *columns = (long long *)mt_a->p[2];                              \
    long long *tails = (long long *)mt_a->p[3];                                \
    const long long cols = grid[2];                                            \
    (void)tails;                                                               \
    gridDim.x = (unsigned)grid[0];                                             \
    blockDim.x = (unsigned)grid[1];                                            \
    for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)                 \
      for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x) {         \
        loop                                                                   \
      }                                                                        \
  }
PROBE_ELEMENTS(probe_cuda_element_loop,
  MT_ELEMENT_LOOP(i, c, cols)
  visits[i - mt_begin] += 1;
  columns[i - mt_begin] = c;
  MT_ELEMENT_LOOP_END)
PROBE_ELEMENTS(probe_cuda_element_groups,
  MT_ELEMENT_GROUPS(i, c, cols)
  visits[i - mt_begin] += 1;
  columns[i - mt_begin] = c;
  MT_ELEMENT_GROUPS_TAIL(i, c, cols)
  visits[i - mt_begin] += 1;
  columns[i - mt_begin] = c;
  tails[0] += 1;
  MT_ELEMENT_GROUPS_END)
)emulation";
  std::string dir = ::testing::TempDir() + "prelude-cuda-loop-cache";
  setenv("MEGATRON_KERNEL_CACHE", dir.c_str(), 1);
  RankProgram program;
  program.kernelSource = source;
  for (const char *name :
       {"probe_cuda_element_loop", "probe_cuda_element_groups"}) {
    GeneratedKernel kernel;
    kernel.name = name;
    program.generatedKernels.push_back(kernel);
  }
  GeneratedKernelLibrary library;
  Status loaded = library.load(program);
  ASSERT_TRUE(loaded) << loaded.message();
  struct Case {
    long long begin, end, cols, blocks, threads;
  };
  for (Case k : {Case{0, 1000, 7, 3, 32}, Case{5, 6300, 768, 4, 256},
                 Case{0, 100, 100, 2, 32}, Case{0, 99999, 50257, 13, 64},
                 Case{3, 4, 1, 5, 32}, Case{0, 4096, 3072, 1, 256},
                 Case{17, 40000, 33, 65, 128}, Case{0, 8192, 768, 8, 256}})
    for (size_t probe = 0; probe < 2; ++probe) {
      long long n = k.end - k.begin, tails = 0;
      std::vector<long long> visits(size_t(n), 0), columns(size_t(n), -1);
      long long grid[3] = {k.blocks, k.threads, k.cols};
      GeneratedKernelArgs args{};
      args.p[0] = grid;
      args.p[1] = visits.data();
      args.p[2] = columns.data();
      args.p[3] = &tails;
      library.function(probe)(&args, k.begin, k.end);
      const char *what = probe == 0 ? "element loop" : "element groups";
      for (long long j = 0; j < n; ++j) {
        ASSERT_EQ(visits[size_t(j)], 1)
            << what << ": element " << k.begin + j << " of [" << k.begin << ", "
            << k.end << ")";
        ASSERT_EQ(columns[size_t(j)], (k.begin + j) % k.cols)
            << what << ": element " << k.begin + j << ", rows of " << k.cols;
      }
      // 8192 elements in 8 blocks of 256 threads: every group full, so
      // the guarded copy never runs.
      if (probe == 1 && k.end == 8192 && k.blocks == 8) {
        EXPECT_EQ(tails, 0);
      }
      if (probe == 1 && k.end == 1000) {
        EXPECT_GT(tails, 0) << "the last group is partial";
      }
    }
}

// The CUDA row loops (MT_ROW_LOOP, and MT_ROW_BLOCK_LOOP with its two
// phases, MT_BLOCK_ROWS and MT_BLOCK_FOR, under __CUDACC__), their text
// from the prelude, run on the host over emulated blocks, for a warp per
// row (MT_ROW_THREADS 32, eight rows a block of 256) and the block of 256
// per row, and for row-block kernels with a warp or the block per row in
// blocks of 256 and of 128 threads (a build's MT_ROW_BLOCK_THREADS):
// every element of every row visited exactly once, each row's leader
// once, in a row-block kernel every row by the block that owns it, and
// each of that block's columns once in its second phase.
TEST(PreludeCudaLoop, RowGroupsVisitEveryElementOnce) {
  std::string source;
  ASSERT_TRUE(cudaTextEmulated("#define MT_ROW_GROUPS",
                               "#define MT_COLUMN_SUMS", source));
  struct Probe {
    const char *name;
    int rowThreads, blockThreads;
    bool rowBlocks;
  };
  const Probe probes[] = {{"probe_rows_32", 32, 256, false},
                          {"probe_rows_256", 256, 256, true},
                          {"probe_row_blocks_128", 128, 128, true},
                          {"probe_row_blocks_warps_256", 32, 256, true},
                          {"probe_row_blocks_warps_128", 32, 128, true}};
  for (const Probe &probe : probes) {
    source += "#undef MT_ROW_THREADS\n#define MT_ROW_THREADS " +
              std::to_string(probe.rowThreads) +
              "\n#undef MT_ROW_BLOCK_THREADS\n#define MT_ROW_BLOCK_THREADS " +
              std::to_string(probe.blockThreads) + "\nextern \"C\" void " +
              probe.name + "(const mt_args *mt_a, long long mt_begin, " +
              "long long mt_end) {\n" + "  const long long blockThreads = " +
              std::to_string(probe.blockThreads) + ";\n" +
              R"emulation(
  const long long *grid = (const long long *)mt_a->p[0];
  long long *visits = (long long *)mt_a->p[1];
  long long *leaders = (long long *)mt_a->p[2];
  long long *owners = (long long *)mt_a->p[3];
  long long *columns = (long long *)mt_a->p[4];
  const long long cols = grid[1], rowBlock = grid[2];
  gridDim.x = (unsigned)grid[0];
  blockDim.x = (unsigned)blockThreads;
  for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)
    for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x) {
)emulation";
    if (probe.blockThreads == 256) // MT_ROW_LOOP's blocks have 256
      source += R"emulation(
      if (rowBlock == 0) {
        MT_ROW_LOOP(r)
          MT_ROW_FOR(c, cols)
            visits[r * cols + c] += 1;
          MT_ROW_FOR_END
          MT_ROW_LEADER leaders[r] += 1;
        MT_ROW_LOOP_END
      }
)emulation";
    // As emitNormGradKernel writes a row-block kernel.
    if (probe.rowBlocks)
      source += R"emulation(
      if (rowBlock > 0) {
        MT_ROW_BLOCK_LOOP(blk, r0, r1, rowBlock)
          MT_BLOCK_ROWS(r, r0, r1)
            MT_ROW_FOR(c, cols)
              visits[r * cols + c] += 1;
              owners[r] = blk;
            MT_ROW_FOR_END
            MT_ROW_LEADER leaders[r] += 1;
          MT_BLOCK_ROWS_END
          MT_BLOCK_FOR(c, cols)
            columns[blk * cols + c] += 1;
          MT_BLOCK_FOR_END
        MT_ROW_BLOCK_LOOP_END
      }
)emulation";
    source += "    }\n}\n";
  }
  std::string dir = ::testing::TempDir() + "prelude-cuda-rows-cache";
  setenv("MEGATRON_KERNEL_CACHE", dir.c_str(), 1);
  RankProgram program;
  program.kernelSource = source;
  for (const Probe &probe : probes) {
    GeneratedKernel kernel;
    kernel.name = probe.name;
    program.generatedKernels.push_back(kernel);
  }
  GeneratedKernelLibrary library;
  Status loaded = library.load(program);
  ASSERT_TRUE(loaded) << loaded.message();
  struct Case {
    long long rows, cols, blocks, rowBlock;
  };
  for (size_t k = 0; k < std::size(probes); ++k)
    for (Case c :
         {Case{20, 8, 3, 0}, Case{100, 768, 13, 0}, Case{9, 1100, 2, 0},
          Case{37, 5, 1, 0}, Case{20, 8, 2, 16}, Case{100, 768, 3, 16},
          Case{45, 33, 1, 4}, Case{7, 300, 4, 16}, Case{40, 2048, 2, 16}}) {
      if ((c.rowBlock > 0 && !probes[k].rowBlocks) ||
          (c.rowBlock == 0 && probes[k].blockThreads != 256))
        continue;
      const long long rowBlocks =
          c.rowBlock ? (c.rows + c.rowBlock - 1) / c.rowBlock : 0;
      std::vector<long long> visits(size_t(c.rows * c.cols), 0),
          leaders(size_t(c.rows), 0), owners(size_t(c.rows), -1),
          columns(size_t(rowBlocks * c.cols), 0);
      long long grid[3] = {c.blocks, c.cols, c.rowBlock};
      GeneratedKernelArgs args{};
      args.p[0] = grid;
      args.p[1] = visits.data();
      args.p[2] = leaders.data();
      args.p[3] = owners.data();
      args.p[4] = columns.data();
      library.function(k)(&args, 0, c.rows);
      std::string what = std::string(probes[k].name) + ": " +
                         std::to_string(c.rows) + " rows of " +
                         std::to_string(c.cols) + ", block of rows " +
                         std::to_string(c.rowBlock);
      for (long long j = 0; j < c.rows * c.cols; ++j)
        ASSERT_EQ(visits[size_t(j)], 1) << what << ": element " << j;
      for (long long r = 0; r < c.rows; ++r) {
        ASSERT_EQ(leaders[size_t(r)], 1) << what << ": row " << r;
        if (c.rowBlock > 0) {
          ASSERT_EQ(owners[size_t(r)], r / c.rowBlock) << what << ": row " << r;
        }
      }
      // A row-block kernel's second phase: each of its blocks' columns once.
      for (long long j = 0; j < rowBlocks * c.cols; ++j)
        ASSERT_EQ(columns[size_t(j)], 1)
            << what << ": block " << j / c.cols << ", column " << j % c.cols;
    }
}

// A program of many kernels compiles as several translation units at once
// (MEGATRON_KERNEL_JOBS), each the prelude and a run of kernels, each
// kernel with the heading and the MT_ROW_THREADS the emitter sets right
// above it; the backend's own kernels (and their helpers) go last. The
// library equals the one built whole, and the units leave nothing behind.
struct KernelUnits : ::testing::Test {
  void SetUp() override {
    dir = ::testing::TempDir() + "kernel-units-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir);
    setenv("MEGATRON_KERNEL_CACHE", dir.c_str(), 1);
    setenv("MEGATRON_KERNEL_JOBS", "3", 1);
  }
  void TearDown() override { unsetenv("MEGATRON_KERNEL_JOBS"); }

  /// 15 kernels k0..k14 (5 to a unit with 3 jobs: the cuts fall before
  /// k5 and k10), y = N x, plus MT_ROW_THREADS where N is odd, which
  /// the line above the kernel sets to 100 + N. `between` goes after k2.
  static RankProgram program(const std::string &between = "") {
    RankProgram program;
    std::string source = generatedKernelPrelude();
    for (int k = 0; k < 15; ++k) {
      std::string name = "k" + std::to_string(k);
      source += "\n// " + name + ": scales by " + std::to_string(k) + "\n";
      if (k % 2)
        source += "#undef MT_ROW_THREADS\n#define MT_ROW_THREADS " +
                  std::to_string(100 + k) + "\n";
      source += "MT_KERNEL(" + name + ") {\n" +
                "  const float *x = (const float *)MT_ARG(0);\n"
                "  float *y = (float *)MT_ARG(1);\n"
                "  MT_ELEMENT_LOOP(i, c, 1000000LL)\n"
                "  y[i] = x[i] * " +
                std::to_string(k) +
                (k % 2 ? ".0f + MT_ROW_THREADS;\n" : ".0f;\n") +
                "  MT_ELEMENT_LOOP_END\n}\nMT_LAUNCHER(" + name + ")\n";
      if (k == 2)
        source += between;
      GeneratedKernel kernel;
      kernel.name = name;
      program.generatedKernels.push_back(kernel);
    }
    program.kernelSource = source;
    return program;
  }

  static std::vector<std::string> files(const std::string &dir) {
    std::vector<std::string> names;
    for (const auto &entry : std::filesystem::directory_iterator(dir))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir;
};

TEST_F(KernelUnits, CompileAtOnceAndRunAsOneLibrary) {
  // A backend's own kernel with a helper above it: in the last unit.
  const char *extra = R"extra(
MT_DEVICE float extra_triple_of(float v) { return 3.0f * v; }
MT_KERNEL(extra_triple) {
  const float *x = (const float *)MT_ARG(0);
  float *y = (float *)MT_ARG(1);
  MT_ELEMENT_LOOP(i, c, 1000000LL)
  y[i] = extra_triple_of(x[i]);
  MT_ELEMENT_LOOP_END
}
)extra";
  GeneratedKernelLibrary library;
  Status loaded =
      library.load(program(), KernelToolchain::host(), extra, {"extra_triple"});
  ASSERT_TRUE(loaded) << loaded.message();
  EXPECT_GT(library.buildSeconds(), 0.0);
  std::vector<float> x = {1.0f, -2.0f}, y(2);
  GeneratedKernelArgs args{};
  args.p[0] = x.data();
  args.p[1] = y.data();
  for (int k = 0; k < 15; ++k) {
    library.function(size_t(k))(&args, 0, 2);
    float add = k % 2 ? float(100 + k) : 0.0f;
    EXPECT_EQ(y, (std::vector<float>{float(k) + add, -2.0f * k + add}))
        << "k" << k;
  }
  library.function(15)(&args, 0, 2);
  EXPECT_EQ(y, (std::vector<float>{3.0f, -6.0f}));
  // The whole source, the library, its size and hash, its log and lock: no
  // unit's files.
  for (const std::string &name : files(dir))
    EXPECT_EQ(name.find(".unit"), std::string::npos) << name;
  EXPECT_EQ(files(dir).size(), 5u);
  // Found in the cache the second time: nothing compiled.
  GeneratedKernelLibrary cached;
  ASSERT_TRUE(
      cached.load(program(), KernelToolchain::host(), extra, {"extra_triple"}));
  EXPECT_EQ(cached.buildSeconds(), 0.0);
}

TEST_F(KernelUnits, AStrayDirectiveBetweenKernelsKeepsTheSourceWhole) {
  // SCALE, defined after k2 apart from any kernel, is read by k3 and by
  // k5..k14 in the units after it: cut, they would not compile.
  RankProgram scaled = program("\n#define SCALE 1.0f\nstruct mt_unused {};\n");
  for (int k = 3; k < 15; ++k) {
    std::string from = "y[i] = x[i] * " + std::to_string(k) + ".0f";
    size_t at = scaled.kernelSource.find(from);
    ASSERT_NE(at, std::string::npos);
    scaled.kernelSource.insert(at + from.size(), " * SCALE");
  }
  GeneratedKernelLibrary library;
  Status loaded = library.load(scaled);
  ASSERT_TRUE(loaded) << loaded.message();
}

TEST_F(KernelUnits, KernelsAreCompiledApart) {
  // A helper defined after k2, outside any kernel's lines, and called by
  // k14: one job compiles it whole; three cut it, and k14's unit lacks the
  // helper (the emitter writes no such code: this shows the cut).
  RankProgram crossing =
      program("\nMT_DEVICE float mt_helper_after_k2(float v) { return v; }\n");
  size_t at = crossing.kernelSource.find("y[i] = x[i] * 14.0f");
  ASSERT_NE(at, std::string::npos);
  crossing.kernelSource.insert(at, "(void)mt_helper_after_k2(0.0f);\n");
  setenv("MEGATRON_KERNEL_JOBS", "1", 1);
  GeneratedKernelLibrary whole;
  Status loaded = whole.load(crossing);
  ASSERT_TRUE(loaded) << loaded.message();
  std::filesystem::remove_all(dir);
  setenv("MEGATRON_KERNEL_JOBS", "3", 1);
  GeneratedKernelLibrary cut;
  loaded = cut.load(crossing);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.message().find("mt_helper_after_k2"), std::string::npos)
      << loaded.message();
}

TEST_F(KernelUnits, ABadJobCountIsRefused) {
  for (const char *bad : {"0", "-2", "three", "4x", "99999999999999999999"}) {
    setenv("MEGATRON_KERNEL_JOBS", bad, 1);
    GeneratedKernelLibrary library;
    Status loaded = library.load(program());
    ASSERT_FALSE(loaded) << bad;
    EXPECT_EQ(loaded.message(), std::string("MEGATRON_KERNEL_JOBS must be a "
                                            "number of compilers from 1 to "
                                            "4096, got '") +
                                    bad + "'");
  }
}

TEST_F(KernelUnits, ACompilerKilledBySignalIsSaidSo) {
  // As the OOM killer ends a compiler: no exit status, no log.
  std::string killer = dir + "-killed-compiler";
  std::ofstream(killer) << "#!/bin/sh\nkill -9 $$\n";
  ASSERT_EQ(chmod(killer.c_str(), 0755), 0);
  KernelToolchain toolchain = KernelToolchain::host();
  toolchain.compiler = killer;
  for (const char *jobs : {"1", "3"}) {
    setenv("MEGATRON_KERNEL_JOBS", jobs, 1);
    GeneratedKernelLibrary library;
    Status loaded = library.load(program(), toolchain);
    ASSERT_FALSE(loaded) << jobs;
    EXPECT_NE(loaded.message().find("killed by signal 9"), std::string::npos)
        << jobs << " jobs: " << loaded.message();
    for (const std::string &name : files(dir))
      EXPECT_EQ(name.find(".unit"), std::string::npos) << name;
  }
}

TEST_F(KernelUnits, AUnitsErrorIsReportedWithItsLog) {
  RankProgram broken = program();
  size_t at = broken.kernelSource.find("y[i] = x[i] * 7.0f");
  ASSERT_NE(at, std::string::npos);
  broken.kernelSource.insert(at, "undeclared_thing = 1;\n");
  GeneratedKernelLibrary library;
  Status loaded = library.load(broken);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.message().find("failed on the generated kernels (log " +
                                  dir + "/"),
            std::string::npos)
      << loaded.message();
  EXPECT_NE(loaded.message().find("undeclared_thing"), std::string::npos)
      << loaded.message();
  for (const std::string &name : files(dir))
    EXPECT_EQ(name.find(".unit"), std::string::npos) << name;
}

TEST_F(KernelUnits, NvccBuildsTheUnitsIntoOneLibrary) {
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  if (const char *path = std::getenv("MEGATRON_NVCC"))
    nvcc = path;
  if (access(nvcc.c_str(), X_OK) != 0)
    GTEST_SKIP() << "no nvcc at " << nvcc;
  // As the CUDA backend builds them (CudaDevice.cpp), for an H100.
  KernelToolchain toolchain;
  toolchain.compiler = nvcc;
  toolchain.flags = {"-std=c++17", "-O3",        "--fmad=false", "-arch=sm_90",
                     "-shared",    "-Xcompiler", "-fPIC",        "-w",
                     "-x",         "cu"};
  toolchain.symbolSuffix = "_launch";
  toolchain.targetIdentity = "a test's sm_90";
  toolchain.what = "CUDA compiler";
  GeneratedKernelLibrary library;
  Status loaded = library.load(program(), toolchain);
  ASSERT_TRUE(loaded) << loaded.message();
  for (size_t k = 0; k < 15; ++k)
    EXPECT_NE(library.symbol(k), nullptr);
}

} // namespace
