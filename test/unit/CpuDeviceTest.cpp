//===- CpuDeviceTest.cpp - The CPU backend through the device seam --------===//
//
// What the trainer relies on, through mtrt::Device only: a device created
// by name, a program prepared once, bytes moved in and out of buffers and
// checked against them, a step executed, non-finite values found where
// they lie, and the peak the step touched.
//
//===----------------------------------------------------------------------===//

#include "mtrt/Communicator.h"
#include "mtrt/Device.h"
#include "mtrt/KernelSignatures.h"
#include "train/Devices.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace mtrt;

namespace {

/// c = a + b over four f32 elements, in an arena of 48 bytes.
RankProgram addProgram() {
  RankProgram program;
  program.arenaBytes = 48;
  program.persistentBytes = 32;
  const char *names[] = {"a", "b", "c"};
  for (int64_t id = 0; id < 3; ++id) {
    BufferDesc buffer;
    buffer.id = id;
    buffer.offset = 16 * id;
    buffer.shape = {4};
    buffer.kind = id < 2 ? "param" : "activation";
    buffer.name = names[id];
    program.buffers.push_back(buffer);
  }
  Command add;
  add.kernel = "add";
  add.ins = {0, 1};
  add.outs = {2};
  program.commands.push_back(add);
  return program;
}

std::unique_ptr<Device> cpuDevice() {
  std::unique_ptr<Device> device;
  Status status = createDevice("cpu", DeviceOptions{}, device);
  EXPECT_TRUE(status) << status.message();
  return device;
}

TEST(CpuDevice, RunsAStepThroughTheSeam) {
  RankProgram program = addProgram();
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  EXPECT_STREQ(device->backendName(), "cpu");
  ASSERT_TRUE(device->prepare(program));
  ASSERT_TRUE(device->uploadValues<float>(0, {1, 2, 3, 4}));
  ASSERT_TRUE(device->uploadValues<float>(1, {10, 20, 30, 40}));
  ASSERT_TRUE(device->executeStep(0, 0));
  std::vector<float> c;
  ASSERT_TRUE(device->downloadValues(2, c, 4));
  EXPECT_EQ(c, (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(device->measuredPeakBytes(), 48);
  // A part of a buffer, at an offset.
  float second = 0;
  ASSERT_TRUE(device->download(2, &second, 4, 4));
  EXPECT_EQ(second, 22);
}

// An evaluation runs the commands its slice marks, with dropout off: here
// c = a + b, then d = dropout(c, 0.5), then b = d + c (a command the
// slice leaves out, which would change a parameter).
TEST(CpuDevice, EvaluatesTheSliceWithoutDropout) {
  RankProgram program = addProgram();
  program.arenaBytes = 64;
  BufferDesc d = program.buffers[2];
  d.id = 3;
  d.offset = 48;
  d.name = "d";
  program.buffers.push_back(d);
  Command dropout;
  dropout.kernel = "dropout";
  dropout.ins = {2};
  dropout.outs = {3};
  dropout.params["probability"] = 0.5;
  program.commands.push_back(dropout);
  Command update;
  update.kernel = "add";
  update.ins = {3, 2};
  update.outs = {1};
  program.commands.push_back(update);
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  EXPECT_TRUE(device->evaluates());
  ASSERT_TRUE(device->prepare(program));
  ASSERT_TRUE(device->uploadValues<float>(0, {1, 2, 3, 4}));
  ASSERT_TRUE(device->uploadValues<float>(1, {10, 20, 30, 40}));
  ASSERT_TRUE(device->executeEvaluation({true, true, false}));
  std::vector<float> out, b;
  ASSERT_TRUE(device->downloadValues(3, out, 4));
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44}));
  ASSERT_TRUE(device->downloadValues(1, b, 4));
  EXPECT_EQ(b, (std::vector<float>{10, 20, 30, 40}));
  // A step drops some elements (and doubles the rest) and runs them all.
  ASSERT_TRUE(device->executeStep(1234, 1));
  ASSERT_TRUE(device->downloadValues(3, out, 4));
  EXPECT_NE(out, (std::vector<float>{11, 22, 33, 44}));
  ASSERT_TRUE(device->downloadValues(1, b, 4));
  EXPECT_NE(b, (std::vector<float>{10, 20, 30, 40}));
  // A slice of another program's length.
  Status mismatched = device->executeEvaluation({true});
  ASSERT_FALSE(mismatched);
  EXPECT_EQ(mismatched.message(),
            "an evaluation slice of 1 commands for a program of 3");
}

TEST(CpuDevice, TransfersAreCheckedAgainstTheBuffer) {
  RankProgram program = addProgram();
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  float values[8] = {};
  Status early = device->upload(0, values, 16);
  EXPECT_EQ(early.message(), "upload before the program was prepared");
  ASSERT_TRUE(device->prepare(program));
  Status tooBig = device->upload(0, values, 32);
  EXPECT_EQ(tooBig.message(), "upload of 32 bytes at offset 0 does not fit "
                              "buffer 0 ('a', 16 bytes)");
  Status past = device->download(1, values, 8, 12);
  EXPECT_EQ(past.message(), "download of 8 bytes at offset 12 does not fit "
                            "buffer 1 ('b', 16 bytes)");
  Status missing = device->download(3, values, 4);
  EXPECT_EQ(missing.message(), "download: no buffer 3 in a program of 3 "
                               "buffers");
}

TEST(CpuDevice, FindsNonFiniteValues) {
  RankProgram program = addProgram();
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  ASSERT_TRUE(device->prepare(program));
  ASSERT_TRUE(device->uploadValues<float>(0, {1, 2, 3, 4}));
  ASSERT_TRUE(device->uploadValues<float>(
      1, {0, std::numeric_limits<float>::infinity(), 0, 0}));
  int64_t first = 7;
  ASSERT_TRUE(device->findNonFinite({0}, first));
  EXPECT_EQ(first, -1);
  ASSERT_TRUE(device->findNonFinite({0, 1, 2}, first));
  EXPECT_EQ(first, 1);
  ASSERT_TRUE(device->uploadValues<float>(1, {0, 0, 0, NAN}));
  ASSERT_TRUE(device->findNonFinite({1}, first));
  EXPECT_EQ(first, 1);
  // The largest finite floats are finite; -inf is not.
  ASSERT_TRUE(
      device->uploadValues<float>(1, {FLT_MAX, -FLT_MAX, FLT_MIN, -0.0f}));
  ASSERT_TRUE(device->findNonFinite({1}, first));
  EXPECT_EQ(first, -1);
  ASSERT_TRUE(device->uploadValues<float>(1, {1, -INFINITY, 1, 1}));
  ASSERT_TRUE(device->findNonFinite({1}, first));
  EXPECT_EQ(first, 1);
}

// A buffer scanned in many pieces on the pool, with one NaN at its end.
TEST(CpuDevice, FindsANonFiniteValueInALargeBuffer) {
  RankProgram program;
  const int64_t n = 300001;
  program.arenaBytes = program.persistentBytes = n * 4;
  BufferDesc big;
  big.shape = {n};
  big.kind = "param";
  big.name = "big";
  program.buffers.push_back(big);
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  ASSERT_TRUE(device->prepare(program));
  std::vector<float> values(size_t(n), 0.5f);
  ASSERT_TRUE(device->uploadValues(0, values));
  int64_t first = 7;
  ASSERT_TRUE(device->findNonFinite({0}, first));
  EXPECT_EQ(first, -1);
  values.back() = NAN;
  ASSERT_TRUE(device->uploadValues(0, values));
  ASSERT_TRUE(device->findNonFinite({0}, first));
  EXPECT_EQ(first, 0);
}

// A program that fails to prepare leaves the device unprepared.
TEST(CpuDevice, AFailedPrepareLeavesNothingToRun) {
  RankProgram program = addProgram();
  program.commands[0].kernel = "no_such_kernel";
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  Status prepared = device->prepare(program);
  EXPECT_EQ(prepared.message(),
            "command 0 ('no_such_kernel'): no CPU kernel of that name");
  float values[4] = {};
  EXPECT_EQ(device->upload(0, values, 16).message(),
            "upload before the program was prepared");
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "a step before the program was prepared");
  std::vector<float> none;
  EXPECT_EQ(device->downloadValues(0, none, -1).message(),
            "download of -1 elements");
}

// Only f32 buffers are scanned for non-finite values: token ids are not.
TEST(CpuDevice, ScansOnlyFloatBuffers) {
  RankProgram program = addProgram();
  program.buffers[0].dtype = DType::I32;
  program.buffers[0].name = "tokens";
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  ASSERT_TRUE(device->prepare(program));
  int64_t first = 0;
  EXPECT_EQ(device->findNonFinite({1, 0}, first).message(),
            "findNonFinite: buffer 0 ('tokens') is not f32");
}

struct BufferSpec {
  std::vector<int64_t> shape;
  DType dtype;
};

/// A program of activation buffers `b<i>` of these shapes and types, one
/// after the other in its arena, and no commands yet.
RankProgram packedProgram(const std::vector<BufferSpec> &buffers) {
  RankProgram program;
  int64_t offset = 0;
  for (const BufferSpec &spec : buffers) {
    BufferDesc buffer;
    buffer.id = int64_t(program.buffers.size());
    buffer.offset = offset;
    buffer.shape = spec.shape;
    buffer.dtype = spec.dtype;
    buffer.kind = "activation";
    buffer.name = "b" + std::to_string(buffer.id);
    offset += buffer.bytes();
    program.buffers.push_back(buffer);
  }
  program.arenaBytes = offset;
  return program;
}

/// A mixture of experts' forward over 3 tokens of width 2, 3 experts, 2
/// per token: the router's choice, the rows in expert order, each
/// expert's [1, 2] weight (transpose_b), and the weighted sum back.
RankProgram mixtureProgram() {
  RankProgram program = packedProgram({
      {{3, 3}, DType::F32}, // 0 logits
      {{3, 2}, DType::F32}, // 1 gate weights
      {{3, 2}, DType::I32}, // 2 experts
      {{3, 2}, DType::I32}, // 3 positions
      {{4}, DType::I32},    // 4 offsets
      {{3, 2}, DType::F32}, // 5 tokens
      {{6, 2}, DType::F32}, // 6 rows
      {{1, 2}, DType::F32}, // 7 expert 0's weight
      {{1, 2}, DType::F32}, // 8 expert 1's
      {{1, 2}, DType::F32}, // 9 expert 2's
      {{6, 1}, DType::F32}, // 10 products
      {{3, 1}, DType::F32}, // 11 result
  });
  auto command = [&](const char *kernel, std::vector<int64_t> ins,
                     std::vector<int64_t> outs,
                     std::map<std::string, double> params = {}) {
    Command c;
    c.kernel = kernel;
    c.ins = std::move(ins);
    c.outs = std::move(outs);
    c.params = std::move(params);
    program.commands.push_back(c);
  };
  command("top_k_gating", {0}, {1, 2}, {{"k", 2}});
  command("moe_route", {2}, {3, 4}, {{"num_experts", 3}});
  command("moe_permute", {5, 3}, {6});
  command("grouped_matmul", {6, 4, 7, 8, 9}, {10}, {{"transpose_b", 1}});
  command("moe_unpermute", {10, 3, 1}, {11});
  return program;
}

TEST(CpuDevice, RoutesTokensToTheirExperts) {
  RankProgram program = mixtureProgram();
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  ASSERT_TRUE(device->prepare(program));
  // Token 0 prefers experts 2 then 0, token 1 experts 0 then 1 (a tie
  // with 2, which the lower expert wins), token 2 experts 1 then 2.
  ASSERT_TRUE(device->uploadValues<float>(
      0, {1, 0, 1 + std::log(3.0f), 2, 1, 1, 0, 5, 4}));
  ASSERT_TRUE(device->uploadValues<float>(5, {1, 2, 3, 4, 5, 6}));
  ASSERT_TRUE(device->uploadValues<float>(7, {1, 0})); // x0
  ASSERT_TRUE(device->uploadValues<float>(8, {0, 1})); // x1
  ASSERT_TRUE(device->uploadValues<float>(9, {1, 1})); // x0 + x1
  ASSERT_TRUE(device->executeStep(0, 0));
  std::vector<int32_t> experts, positions, offsets;
  ASSERT_TRUE(device->downloadValues(2, experts, 6));
  EXPECT_EQ(experts, (std::vector<int32_t>{2, 0, 0, 1, 1, 2}));
  // Expert 0's rows (token 0, token 1), expert 1's (1, 2), expert 2's
  // (0, 2).
  ASSERT_TRUE(device->downloadValues(4, offsets, 4));
  EXPECT_EQ(offsets, (std::vector<int32_t>{0, 2, 4, 6}));
  ASSERT_TRUE(device->downloadValues(3, positions, 6));
  EXPECT_EQ(positions, (std::vector<int32_t>{4, 0, 1, 2, 3, 5}));
  std::vector<float> weights, result;
  ASSERT_TRUE(device->downloadValues(1, weights, 6));
  EXPECT_NEAR(weights[0], 0.75f, 1e-6f);
  EXPECT_NEAR(weights[1], 0.25f, 1e-6f);
  EXPECT_NEAR(weights[4], 1 / (1 + std::exp(-1.0f)), 1e-6f);
  ASSERT_TRUE(device->downloadValues(11, result, 3));
  // Token 0: 0.75 * (1 + 2) + 0.25 * 1; token 2: w * 6 + (1 - w) * 11.
  EXPECT_NEAR(result[0], 2.5f, 1e-5f);
  EXPECT_NEAR(result[1], weights[2] * 3 + weights[3] * 4, 1e-5f);
  EXPECT_NEAR(result[2], weights[4] * 6 + weights[5] * 11, 1e-5f);
}

/// mixtureProgram with a capacity of one row an expert (Megatron-LM's
/// token dropping: 3 tokens of 2 choices over 3 experts at factor 0.5),
/// the route ranking an expert's choices by the gate weights (the probs
/// policy) or by position.
RankProgram capacityProgram(bool byWeights) {
  RankProgram program = mixtureProgram();
  program.buffers[6].shape = {3, 2};  // rows: 3 experts x 1
  program.buffers[10].shape = {3, 1}; // products
  int64_t offset = 0;
  for (BufferDesc &buffer : program.buffers) {
    buffer.offset = offset;
    offset += buffer.bytes();
  }
  program.arenaBytes = offset;
  std::map<std::string, double> capacity = {{"capacity_factor", 0.5},
                                            {"num_experts", 3}};
  Command &route = program.commands[1];
  route.params["capacity"] = 1;
  route.params["capacity_factor"] = 0.5;
  if (byWeights)
    route.ins.push_back(1);
  program.commands[2].params = capacity;
  program.commands[4].params = capacity;
  return program;
}

TEST(CpuDevice, DropsTheChoicesOverAnExpertsCapacity) {
  // Token 0 chooses experts 2 (weight 0.75) and 0 (0.25), tokens 1 and 2
  // experts 0 and 1, and 1 and 2, of weights w = sigmoid(1) and 1 - w.
  // Tokens (1, 2), (3, 4), (5, 6); expert 0 reads the first coordinate,
  // expert 1 the second, expert 2 their sum.
  for (bool byWeights : {true, false}) {
    SCOPED_TRACE(byWeights ? "probs" : "position");
    RankProgram program = capacityProgram(byWeights);
    std::unique_ptr<Device> device = cpuDevice();
    ASSERT_TRUE(device);
    Status prepared = device->prepare(program);
    ASSERT_TRUE(prepared) << prepared.message();
    ASSERT_TRUE(device->uploadValues<float>(
        0, {1, 0, 1 + std::log(3.0f), 2, 1, 1, 0, 5, 4}));
    ASSERT_TRUE(device->uploadValues<float>(5, {1, 2, 3, 4, 5, 6}));
    ASSERT_TRUE(device->uploadValues<float>(7, {1, 0}));
    ASSERT_TRUE(device->uploadValues<float>(8, {0, 1}));
    ASSERT_TRUE(device->uploadValues<float>(9, {1, 1}));
    ASSERT_TRUE(device->executeStep(0, 0));
    std::vector<int32_t> positions, offsets;
    std::vector<float> weights, result;
    ASSERT_TRUE(device->downloadValues(3, positions, 6));
    ASSERT_TRUE(device->downloadValues(4, offsets, 4));
    ASSERT_TRUE(device->downloadValues(1, weights, 6));
    ASSERT_TRUE(device->downloadValues(11, result, 3));
    EXPECT_EQ(offsets, (std::vector<int32_t>{0, 1, 2, 3}));
    float w = weights[4];
    EXPECT_NEAR(weights[2], w, 1e-6f);
    if (byWeights) {
      // Each expert keeps its heavier choice: expert 0 token 1's, expert 1
      // token 2's, expert 2 token 0's.
      EXPECT_EQ(positions, (std::vector<int32_t>{2, -1, 0, -1, 1, -1}));
      EXPECT_NEAR(result[0], 0.75f * 3, 1e-5f);
      EXPECT_NEAR(result[1], w * 3, 1e-5f);
      EXPECT_NEAR(result[2], w * 6, 1e-5f);
    } else {
      // Each expert keeps its first token: expert 0 and 2 token 0's,
      // expert 1 token 1's; token 2 is dropped by both its experts.
      EXPECT_EQ(positions, (std::vector<int32_t>{2, 0, -1, 1, -1, -1}));
      EXPECT_NEAR(result[0], 0.75f * 3 + 0.25f * 1, 1e-5f);
      EXPECT_NEAR(result[1], (1 - w) * 4, 1e-5f);
      EXPECT_EQ(result[2], 0.0f);
    }
  }
}

TEST(CpuDevice, RefusesACapacitysPositionsOutOfItsRows) {
  // A dropped choice is -1; anything else below 0 or past the capacity's
  // rows is a routing some command wrote wrong.
  RankProgram program = capacityProgram(true);
  program.commands = {program.commands[2]};
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  ASSERT_TRUE(device->prepare(program));
  ASSERT_TRUE(device->uploadValues<int32_t>(3, {2, -1, 0, -1, 1, -1}));
  ASSERT_TRUE(device->executeStep(0, 0));
  ASSERT_TRUE(device->uploadValues<int32_t>(3, {2, -1, 0, -2, 1, -1}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('moe_permute'): position 3 is row -2, outside [0, 3) "
            "(nor -1, dropped)");
  ASSERT_TRUE(device->uploadValues<int32_t>(3, {2, -1, 0, -1, 3, -1}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('moe_permute'): position 4 is row 3, outside [0, 3) "
            "(nor -1, dropped)");
  ASSERT_TRUE(device->uploadValues<int32_t>(3, {2, -1, 2, -1, 1, -1}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('moe_permute'): position 2 is row 2 again (each row "
            "is one token's choice)");
}

/// Rank 0 of a group of two along one axis, whose peer (rank 1) is played
/// by the test: its per-expert counts and the rows it sends are set before
/// each step, and what rank 0 sends it is kept.
class TwoRankFake final : public Communicator {
public:
  std::vector<int32_t> peerCounts;
  std::vector<float> peerRows;
  mutable std::vector<float> sentToPeer;

  const std::vector<int64_t> &coords() const override { return coordinates; }
  int64_t groupSize(int64_t) const override { return 2; }
  Status allReduce(int64_t, void *, int64_t, DType, ReduceOp) const override {
    return Status::error("unused");
  }
  Status reduceScatter(int64_t, const void *, void *, int64_t, DType,
                       ReduceOp) const override {
    return Status::error("unused");
  }
  Status allGather(int64_t, const void *in, void *out, int64_t count,
                   DType dtype) const override {
    if (dtype != DType::I32 || size_t(count) != peerCounts.size())
      return Status::error("unexpected all-gather");
    std::memcpy(out, in, size_t(count) * 4);
    std::memcpy(static_cast<int32_t *>(out) + count, peerCounts.data(),
                size_t(count) * 4);
    return Status::ok();
  }
  Status send(int64_t, int64_t peer, int64_t, const void *data,
              int64_t bytes) const override {
    if (peer != 1)
      return Status::error("sent to rank " + std::to_string(peer));
    const float *values = static_cast<const float *>(data);
    sentToPeer.assign(values, values + bytes / 4);
    return Status::ok();
  }
  Status recv(int64_t, int64_t peer, int64_t, void *data,
              int64_t bytes) const override {
    if (peer != 1 || size_t(bytes) != peerRows.size() * 4)
      return Status::error("received " + std::to_string(bytes) +
                           " bytes from rank " + std::to_string(peer));
    std::memcpy(data, peerRows.data(), size_t(bytes));
    return Status::ok();
  }
  Status finishSends() const override { return Status::ok(); }

private:
  std::vector<int64_t> coordinates = {0};
};

/// Expert parallelism over two ranks, 4 experts (2 each), `rows` rows a
/// rank of width 1, of which `received` may come: by default 3 and every
/// rank's 6 (rank 0's rows are expert 0's (10), 2's (20) and 3's (30));
/// with `capacityBounded`, a capacity's rows, as many received as held.
RankProgram exchangeProgram(int64_t rows = 3, bool capacityBounded = false) {
  int64_t received = capacityBounded ? rows : 2 * rows;
  RankProgram program = packedProgram({
      {{rows, 1}, DType::F32},     // 0 rank 0's rows
      {{5}, DType::I32},           // 1 their offsets
      {{received, 1}, DType::F32}, // 2 received
      {{3}, DType::I32},           // 3 local offsets
      {{2, 2}, DType::I32},        // 4 counts
      {{received, 1}, DType::F32}, // 5 the experts' results
      {{rows, 1}, DType::F32},     // 6 back in rank 0's rows
  });
  Command dispatch, combine;
  dispatch.kernel = "expert_dispatch";
  dispatch.ins = {0, 1};
  dispatch.outs = {2, 3, 4};
  combine.kernel = "expert_combine";
  combine.ins = {5, 4, 1};
  combine.outs = {6};
  if (capacityBounded)
    dispatch.params = combine.params = {{"capacity_bounded", 1}};
  program.commands = {dispatch, combine};
  return program;
}

TEST(CpuDevice, ExchangesRowsWithTheExpertsRanks) {
  RankProgram program = exchangeProgram();
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  ASSERT_TRUE(device->prepare(program));
  ASSERT_TRUE(device->uploadValues<float>(0, {10, 20, 30}));
  ASSERT_TRUE(device->uploadValues<int32_t>(1, {0, 1, 1, 2, 3}));
  ASSERT_TRUE(device->uploadValues<float>(5, {1, 2, 3, 4, 0, 0}));
  // Without a communicator there is no one to exchange with.
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('expert_dispatch'): an expert exchange needs the "
            "run's communicator");

  // Rank 1 has a row for expert 0 (40) and two for expert 1 (50, 51), and
  // sends back rank 0's rows of experts 2 and 3 as 200 and 300.
  TwoRankFake peer;
  peer.peerCounts = {1, 2, 0, 0};
  device->setCommunicator(&peer);
  // The dispatch receives 40, 50, 51; the combine, 200 and 300.
  peer.peerRows = {40, 50, 51};
  RankProgram dispatchOnly = program;
  dispatchOnly.commands.resize(1);
  ASSERT_TRUE(device->prepare(dispatchOnly));
  ASSERT_TRUE(device->uploadValues<float>(0, {10, 20, 30}));
  ASSERT_TRUE(device->uploadValues<int32_t>(1, {0, 1, 1, 2, 3}));
  ASSERT_TRUE(device->executeStep(0, 0));
  EXPECT_EQ(peer.sentToPeer, (std::vector<float>{20, 30}));
  std::vector<float> received;
  std::vector<int32_t> localOffsets, counts;
  ASSERT_TRUE(device->downloadValues(2, received, 6));
  // Expert 0's rows (rank 0's, rank 1's), then expert 1's; zeros after.
  EXPECT_EQ(received, (std::vector<float>{10, 40, 50, 51, 0, 0}));
  ASSERT_TRUE(device->downloadValues(3, localOffsets, 3));
  EXPECT_EQ(localOffsets, (std::vector<int32_t>{0, 2, 4}));
  ASSERT_TRUE(device->downloadValues(4, counts, 4));
  EXPECT_EQ(counts, (std::vector<int32_t>{1, 0, 1, 2}));

  RankProgram combineOnly = program;
  combineOnly.commands.erase(combineOnly.commands.begin());
  peer.peerRows = {200, 300};
  ASSERT_TRUE(device->prepare(combineOnly));
  ASSERT_TRUE(device->uploadValues<int32_t>(1, {0, 1, 1, 2, 3}));
  ASSERT_TRUE(device->uploadValues<int32_t>(4, {1, 0, 1, 2}));
  ASSERT_TRUE(device->uploadValues<float>(5, {1, 2, 3, 4, 0, 0}));
  ASSERT_TRUE(device->executeStep(0, 0));
  // Rank 1's rows go back in its expert order: expert 0's result (2),
  // expert 1's (3, 4); rank 0's own expert-0 row is 1.
  EXPECT_EQ(peer.sentToPeer, (std::vector<float>{2, 3, 4}));
  std::vector<float> back;
  ASSERT_TRUE(device->downloadValues(6, back, 3));
  EXPECT_EQ(back, (std::vector<float>{1, 200, 300}));

  // Counts are data from another rank: one that does not fit is refused
  // before it indexes anything, and so are offsets not over a rank's rows.
  peer.peerCounts = {4, 0, 0, 0};
  ASSERT_TRUE(device->prepare(dispatchOnly));
  ASSERT_TRUE(device->uploadValues<int32_t>(1, {0, 1, 1, 2, 3}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('expert_dispatch'): rank 1 has 4 rows for local "
            "expert 0, outside [0, 3]");
  peer.peerCounts = {2, 2, 0, 0};
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('expert_dispatch'): rank 1 sends 4 rows, more than "
            "its 3 rows");
  ASSERT_TRUE(device->uploadValues<int32_t>(1, {0, 1, 1, 2, 2}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('expert_dispatch'): the offsets end at row 2 of the "
            "rank's 3 rows, which are all some expert's");
  dispatchOnly.commands[0].params["grid_axis"] = 1;
  ASSERT_TRUE(device->prepare(dispatchOnly));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('expert_dispatch'): grid axis 1 is not an axis of the "
            "device grid");
}

TEST(CpuDevice, ExchangesACapacitysRows) {
  // 4 experts of capacity 1, two a rank: rank 0's rows are 4, of which its
  // routing took 2 (experts 0 and 2), and it receives at most 4 rows (a
  // capacity from each rank for each of its experts: capacity_bounded).
  RankProgram program = exchangeProgram(/*rows=*/4, /*capacityBounded=*/true);
  Command dispatch = program.commands[0], combine = program.commands[1];
  program.commands = {dispatch};
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  Status prepared = device->prepare(program);
  ASSERT_TRUE(prepared) << prepared.message();
  TwoRankFake peer;
  device->setCommunicator(&peer);
  // Rank 1 has a row for each of rank 0's experts (40, 50).
  peer.peerCounts = {1, 1, 0, 0};
  peer.peerRows = {40, 50};
  ASSERT_TRUE(device->uploadValues<float>(0, {10, 20, 0, 0}));
  ASSERT_TRUE(device->uploadValues<int32_t>(1, {0, 1, 1, 2, 2}));
  ASSERT_TRUE(device->executeStep(0, 0));
  EXPECT_EQ(peer.sentToPeer, (std::vector<float>{20}));
  std::vector<float> received;
  ASSERT_TRUE(device->downloadValues(2, received, 4));
  EXPECT_EQ(received, (std::vector<float>{10, 40, 50, 0}));
  // More rows than a capacity's can come only from a routing written
  // wrong: refused before anything is copied.
  peer.peerCounts = {2, 2, 0, 0};
  peer.peerRows = {40, 41, 50, 51};
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('expert_dispatch'): the ranks send this rank's "
            "experts 5 rows, more than the 4 rows received (a capacity's "
            "rows: an expert's capacity from each rank)");

  // A capacity's rows are every expert's capacity: 4 experts cannot share
  // 3 rows.
  std::vector<BufferDesc> uneven = program.buffers;
  uneven[0].shape = {3, 1};
  uneven[2].shape = {3, 1};
  EXPECT_EQ(checkKernelSignature(dispatch, uneven, {2}).message(),
            "the rows [3, 1] are not the experts' capacity rows "
            "(capacity_bounded)");

  // The combine fills the rows no choice took with zeros.
  program.commands = {combine};
  ASSERT_TRUE(device->prepare(program));
  peer.peerRows = {200};
  ASSERT_TRUE(device->uploadValues<int32_t>(1, {0, 1, 1, 2, 2}));
  ASSERT_TRUE(device->uploadValues<int32_t>(4, {1, 0, 1, 1}));
  ASSERT_TRUE(device->uploadValues<float>(5, {1, 2, 3, 0}));
  ASSERT_TRUE(device->uploadValues<float>(6, {9, 9, 9, 9}));
  ASSERT_TRUE(device->executeStep(0, 0));
  EXPECT_EQ(peer.sentToPeer, (std::vector<float>{2, 3}));
  std::vector<float> back;
  ASSERT_TRUE(device->downloadValues(6, back, 4));
  EXPECT_EQ(back, (std::vector<float>{1, 200, 0, 0}));
}

// A router's statistics for the load-balancing loss: each expert's choices
// per token, and its mean softmax probability over all experts; a choice
// outside the experts is refused before anything is counted.
TEST(CpuDevice, MeasuresARoutersLoad) {
  RankProgram program = mixtureProgram();
  Command statistics;
  statistics.kernel = "router_statistics";
  statistics.ins = {0, 2};
  statistics.outs = {11, 10}; // [3] load, the first 3 of 6 probabilities
  program.commands = {statistics};
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  ASSERT_TRUE(device->prepare(program));
  float ln2 = std::log(2.0f);
  ASSERT_TRUE(device->uploadValues<float>(0, {0, 0, 0, 0, 0, 0, ln2, 0, 0}));
  ASSERT_TRUE(device->uploadValues<int32_t>(2, {0, 1, 0, 2, 0, 1}));
  ASSERT_TRUE(device->executeStep(0, 0));
  std::vector<float> load, probability;
  ASSERT_TRUE(device->downloadValues(11, load, 3));
  ASSERT_TRUE(device->downloadValues(10, probability, 3));
  EXPECT_NEAR(load[0], 1.0f, 1e-6f);
  EXPECT_NEAR(load[1], 2.0f / 3, 1e-6f);
  EXPECT_NEAR(load[2], 1.0f / 3, 1e-6f);
  // Rows 0 and 1 are uniform; row 2 is {1/2, 1/4, 1/4}.
  EXPECT_NEAR(probability[0], (2.0f / 3 + 0.5f) / 3, 1e-6f);
  EXPECT_NEAR(probability[1], (2.0f / 3 + 0.25f) / 3, 1e-6f);
  EXPECT_NEAR(probability[2], (2.0f / 3 + 0.25f) / 3, 1e-6f);

  ASSERT_TRUE(device->uploadValues<int32_t>(2, {0, 1, 0, 3, 0, 1}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('router_statistics'): choice 3 is expert 3, outside "
            "[0, 3)");
}

// A NaN logit is never preferred (the sort's order stays strict): the token
// takes its other experts, here exactly as without it.
TEST(CpuDevice, RoutesAroundANaNLogit) {
  RankProgram program = mixtureProgram();
  program.commands.resize(1);
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  ASSERT_TRUE(device->prepare(program));
  float nan = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(device->uploadValues<float>(0, {nan, 1, 2, 3, nan, 1, 0, 1, 2}));
  ASSERT_TRUE(device->executeStep(0, 0));
  std::vector<int32_t> experts;
  ASSERT_TRUE(device->downloadValues(2, experts, 6));
  EXPECT_EQ(experts, (std::vector<int32_t>{2, 1, 0, 2, 2, 1}));
}

// A routing read at run time is checked before it indexes anything: an
// expert outside the experts (a routing buffer some other command wrote),
// and offsets that are not ranges of the rows.
TEST(CpuDevice, RefusesARoutingOutOfRange) {
  RankProgram program = mixtureProgram();
  program.commands.erase(program.commands.begin()); // the experts are inputs
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  ASSERT_TRUE(device->prepare(program));
  ASSERT_TRUE(device->uploadValues<int32_t>(2, {0, 1, 3, 0, 1, 2}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('moe_route'): choice 2 is expert 3, outside [0, 3)");

  // The router's gradient writes each chosen expert's logit: an expert id
  // beyond the logits is refused before anything is written.
  RankProgram gradient = mixtureProgram();
  Command grad;
  grad.kernel = "top_k_gating_grad";
  grad.ins = {1, 1, 2};
  grad.outs = {0};
  grad.params = {{"num_experts", 3}};
  gradient.commands = {grad};
  ASSERT_TRUE(device->prepare(gradient));
  ASSERT_TRUE(device->uploadValues<int32_t>(2, {0, 1, 2, 0, 1, 9}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('top_k_gating_grad'): choice 5 is expert 9, outside "
            "[0, 3)");

  RankProgram grouped = mixtureProgram();
  grouped.commands = {grouped.commands[3]};
  ASSERT_TRUE(device->prepare(grouped));
  ASSERT_TRUE(device->uploadValues<int32_t>(4, {0, 4, 2, 6}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('grouped_matmul'): expert 1's rows [4, 2) are not an "
            "ordered range");
  // Offsets may end before the last row (expert parallelism's received
  // rows are as many as could come), not after it.
  ASSERT_TRUE(device->uploadValues<int32_t>(4, {0, 2, 4, 7}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('grouped_matmul'): the offsets run from 0 to 7, not "
            "from 0 within the 6 rows");

  // Two choices on one row: the row of the other would be left unwritten.
  RankProgram permute = mixtureProgram();
  permute.commands = {permute.commands[2]};
  ASSERT_TRUE(device->prepare(permute));
  ASSERT_TRUE(device->uploadValues<int32_t>(3, {4, 0, 1, 2, 3, 4}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('moe_permute'): position 5 is row 4 again (each row "
            "is one token's choice)");
  ASSERT_TRUE(device->uploadValues<int32_t>(3, {4, 0, 1, 2, 3, 6}));
  EXPECT_EQ(device->executeStep(0, 0).message(),
            "command 0 ('moe_permute'): position 5 is row 6, outside [0, 6)");
}

TEST(Devices, UnknownAndMissingBackendsAreNamed) {
  std::vector<std::string> built = builtBackends();
  bool cudaBuilt = built.front() == "cuda";
  std::unique_ptr<Device> device;
  Status cuda = createDevice("cuda", DeviceOptions{}, device);
  if (!cudaBuilt) {
    EXPECT_EQ(cuda.message(), "--device cuda: this build of megatron-run has "
                              "no CUDA backend; the backends built are: cpu");
  } else if (!cuda) { // a machine without a GPU; with one, the device is made
    EXPECT_EQ(cuda.message().rfind("--device cuda: no CUDA device is visible "
                                   "(cudaGetDeviceCount: ",
                                   0),
              0u)
        << cuda.message();
  }
  Status tpu = createDevice("tpu", DeviceOptions{}, device);
  EXPECT_EQ(tpu.message(), std::string("--device 'tpu' is not a backend; the "
                                       "backends built are: ") +
                               (cudaBuilt ? "cuda, cpu" : "cpu"));
  if (!cudaBuilt || !cuda) {
    EXPECT_EQ(defaultBackend(), "cpu");
  }
}

} // namespace
