//===- CommunicatorTest.cpp - Launcher and collectives over MPI -----------===//
//
// Run under mpirun with any number of ranks (and alone: a world of one).
// As nccl-tests does, every input is built so that the reduced result is
// exactly predictable: rank r's element i is (r + 1) * (i + 1), small
// integers every dtype holds exactly, so sums, averages and maxima are
// compared for equality, in every dtype the Communicator takes.
//
//===----------------------------------------------------------------------===//

#include "mtrt/Communicator.h"
#include "mtrt/HalfFloat.h"
#include "mtrt/Launcher.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace mtrt;

namespace {

Launcher &launcher() {
  static Launcher *process = [] {
    int argc = 0;
    char **argv = nullptr;
    Launcher *started = nullptr;
    Status status = startLauncher(argc, argv, started);
    EXPECT_TRUE(status) << status.message();
    return started;
  }();
  return *process;
}

/// A grid of two axes when the world splits in two, else one axis.
std::vector<int64_t> gridShape() {
  int size = launcher().size();
  if (size % 2 == 0 && size > 2)
    return {2, size / 2};
  return {size};
}

std::unique_ptr<Communicator> grid() {
  std::unique_ptr<Communicator> communicator;
  Status status = launcher().createCommunicator(gridShape(), communicator);
  EXPECT_TRUE(status) << status.message();
  return communicator;
}

/// Stores `value` (a small integer) as element i of `dtype` at `data`.
void store(DType dtype, void *data, size_t i, double value) {
  switch (dtype) {
  case DType::F32:
    static_cast<float *>(data)[i] = float(value);
    break;
  case DType::F64:
    static_cast<double *>(data)[i] = value;
    break;
  case DType::I32:
    static_cast<int32_t *>(data)[i] = int32_t(value);
    break;
  case DType::I64:
    static_cast<int64_t *>(data)[i] = int64_t(value);
    break;
  case DType::BF16:
    static_cast<uint16_t *>(data)[i] = floatToBFloat16(float(value));
    break;
  case DType::F16:
    static_cast<uint16_t *>(data)[i] = floatToHalf(float(value));
    break;
  }
}

double load(DType dtype, const void *data, size_t i) {
  switch (dtype) {
  case DType::F32:
    return static_cast<const float *>(data)[i];
  case DType::F64:
    return static_cast<const double *>(data)[i];
  case DType::I32:
    return static_cast<const int32_t *>(data)[i];
  case DType::I64:
    return double(static_cast<const int64_t *>(data)[i]);
  case DType::BF16:
    return bfloat16ToFloat(static_cast<const uint16_t *>(data)[i]);
  case DType::F16:
    return halfToFloat(static_cast<const uint16_t *>(data)[i]);
  }
  return 0;
}

const DType kAllTypes[] = {DType::F32, DType::F64,  DType::I32,
                           DType::I64, DType::BF16, DType::F16};

TEST(Launcher, AgreesGathersAndBroadcasts) {
  Launcher &world = launcher();
  EXPECT_TRUE(world.allAgree(true));
  EXPECT_FALSE(world.allAgree(world.rank() != world.size() - 1));
  double value = world.rank() == 0 ? 42.5 : -1.0;
  ASSERT_TRUE(world.broadcast(0, value));
  EXPECT_EQ(value, 42.5);
  int32_t mine = 7 * world.rank();
  std::vector<uint8_t> all;
  ASSERT_TRUE(world.gatherToRoot(&mine, sizeof(mine), all));
  std::vector<std::string> texts;
  ASSERT_TRUE(world.gatherStringsToRoot(
      std::string(size_t(world.rank()) + 1, 'x'), texts));
  if (world.rank() == 0) {
    ASSERT_EQ(all.size(), sizeof(mine) * size_t(world.size()));
    ASSERT_EQ(texts.size(), size_t(world.size()));
    for (int r = 0; r < world.size(); ++r) {
      int32_t theirs;
      std::memcpy(&theirs, all.data() + sizeof(theirs) * size_t(r),
                  sizeof(theirs));
      EXPECT_EQ(theirs, 7 * r);
      EXPECT_EQ(texts[size_t(r)], std::string(size_t(r) + 1, 'x'));
    }
  }
}

TEST(Communicator, AllReduceEveryDtypeAndOp) {
  std::unique_ptr<Communicator> comm = grid();
  ASSERT_TRUE(comm);
  const size_t count = 5;
  for (int64_t axis = 0; axis < int64_t(gridShape().size()); ++axis) {
    int64_t n = comm->groupSize(axis), r = comm->groupIndex(axis);
    for (DType dtype : kAllTypes)
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Max}) {
        bool integer = dtype == DType::I32 || dtype == DType::I64;
        std::vector<uint8_t> data(count * size_t(dtypeSize(dtype)));
        for (size_t i = 0; i < count; ++i)
          store(dtype, data.data(), i, double((r + 1) * int64_t(i + 1)));
        Status status =
            comm->allReduce(axis, data.data(), int64_t(count), dtype, op);
        if (integer && op == ReduceOp::Average) {
          EXPECT_EQ(status.message(), std::string("an average of ") +
                                          dtypeName(dtype) + " values");
          continue;
        }
        ASSERT_TRUE(status) << status.message();
        for (size_t i = 0; i < count; ++i) {
          double sum = double(i + 1) * double(n * (n + 1) / 2);
          double expected = op == ReduceOp::Sum       ? sum
                            : op == ReduceOp::Average ? sum / double(n)
                                                      : double(n) * (i + 1);
          if (op == ReduceOp::Average && dtype != DType::F64)
            expected = double(float(sum) / float(n));
          if (dtype == DType::BF16)
            expected = bfloat16ToFloat(floatToBFloat16(float(expected)));
          if (dtype == DType::F16)
            expected = halfToFloat(floatToHalf(float(expected)));
          EXPECT_EQ(load(dtype, data.data(), i), expected)
              << dtypeName(dtype) << " axis " << axis << " element " << i;
        }
      }
  }
}

// Expert parallelism over part of the data-parallel ranks: an all-reduce
// among the ranks of an axis whose coordinates agree modulo a stride, on a
// one-axis grid of the whole world (4 ranks: stride 2 pairs 0 with 2 and 1
// with 3), for every stride that divides it.
TEST(Communicator, AllReduceOverEveryStrideThRank) {
  std::unique_ptr<Communicator> comm;
  int64_t n = launcher().size();
  ASSERT_TRUE(launcher().createCommunicator({n}, comm));
  int64_t r = comm->groupIndex(0);
  const size_t count = 3;
  for (int64_t stride = 1; stride <= n; ++stride) {
    if (n % stride != 0)
      continue;
    for (DType dtype : {DType::F32, DType::BF16, DType::I64}) {
      std::vector<uint8_t> data(count * size_t(dtypeSize(dtype)));
      for (size_t i = 0; i < count; ++i)
        store(dtype, data.data(), i, double((r + 1) * int64_t(i + 1)));
      Status status = comm->allReduceStrided(
          0, stride, data.data(), int64_t(count), dtype, ReduceOp::Sum);
      ASSERT_TRUE(status) << status.message();
      // The members r' = r mod stride, r mod stride + stride, ...
      double members = 0;
      for (int64_t other = r % stride; other < n; other += stride)
        members += double(other + 1);
      for (size_t i = 0; i < count; ++i)
        EXPECT_EQ(load(dtype, data.data(), i), members * double(i + 1))
            << dtypeName(dtype) << " stride " << stride << " element " << i;
    }
  }
  std::vector<float> one(1, 1.0f);
  if (n > 1 && n % 3 != 0)
    EXPECT_EQ(
        comm->allReduceStrided(0, 3, one.data(), 1, DType::F32, ReduceOp::Sum)
            .message(),
        "stride 3 does not divide the " + std::to_string(n) +
            " ranks of grid axis 0");
}

// ZeRO's pieces of an expert over its replicas: a reduce-scatter and an
// all-gather over the same strided groups, whose member r holds piece
// r / stride (4 ranks, stride 2: ranks 0 and 2 hold pieces 0 and 1 of
// their sum, as do ranks 1 and 3 of theirs).
TEST(Communicator, ReduceScatterAndAllGatherOverEveryStrideThRank) {
  std::unique_ptr<Communicator> comm;
  int64_t n = launcher().size();
  ASSERT_TRUE(launcher().createCommunicator({n}, comm));
  int64_t r = comm->groupIndex(0);
  const size_t count = 2;
  for (int64_t stride = 1; stride <= n; ++stride) {
    if (n % stride != 0)
      continue;
    int64_t members = n / stride;
    for (DType dtype : {DType::F32, DType::BF16}) {
      size_t size = size_t(dtypeSize(dtype));
      // Element j of rank r's whole is (r + 1) * (j + 1).
      std::vector<uint8_t> whole(count * size_t(members) * size),
          piece(count * size);
      for (size_t j = 0; j < count * size_t(members); ++j)
        store(dtype, whole.data(), j, double((r + 1) * int64_t(j + 1)));
      Status status =
          comm->reduceScatterStrided(0, stride, whole.data(), piece.data(),
                                     int64_t(count), dtype, ReduceOp::Sum);
      ASSERT_TRUE(status) << status.message();
      double sum = 0;
      for (int64_t other = r % stride; other < n; other += stride)
        sum += double(other + 1);
      int64_t mine = r / stride;
      for (size_t i = 0; i < count; ++i)
        EXPECT_EQ(load(dtype, piece.data(), i),
                  sum * double(mine * int64_t(count) + int64_t(i) + 1))
            << dtypeName(dtype) << " stride " << stride << " element " << i;
      // All-gather: member m's piece holds 10 * m + i.
      std::vector<uint8_t> gathered(count * size_t(members) * size);
      for (size_t i = 0; i < count; ++i)
        store(dtype, piece.data(), i, double(10 * mine + int64_t(i)));
      status = comm->allGatherStrided(0, stride, piece.data(), gathered.data(),
                                      int64_t(count), dtype);
      ASSERT_TRUE(status) << status.message();
      for (int64_t m = 0; m < members; ++m)
        for (size_t i = 0; i < count; ++i)
          EXPECT_EQ(load(dtype, gathered.data(), size_t(m) * count + i),
                    double(10 * m + int64_t(i)))
              << dtypeName(dtype) << " stride " << stride << " member " << m;
    }
  }
  std::vector<float> one(2, 1.0f), out(2);
  if (n > 1 && n % 3 != 0)
    EXPECT_EQ(
        comm->allGatherStrided(0, 3, one.data(), out.data(), 1, DType::F32)
            .message(),
        "stride 3 does not divide the " + std::to_string(n) +
            " ranks of grid axis 0");
}

TEST(Communicator, ReduceScatterAndAllGather) {
  std::unique_ptr<Communicator> comm = grid();
  ASSERT_TRUE(comm);
  const size_t count = 3;
  for (int64_t axis = 0; axis < int64_t(gridShape().size()); ++axis) {
    int64_t n = comm->groupSize(axis), r = comm->groupIndex(axis);
    for (DType dtype : kAllTypes) {
      size_t size = size_t(dtypeSize(dtype));
      // Reduce-scatter: element j of the whole is (r + 1) * (j + 1).
      std::vector<uint8_t> whole(count * size_t(n) * size), piece(count * size);
      for (size_t j = 0; j < count * size_t(n); ++j)
        store(dtype, whole.data(), j, double((r + 1) * int64_t(j + 1)));
      ASSERT_TRUE(comm->reduceScatter(axis, whole.data(), piece.data(),
                                      int64_t(count), dtype, ReduceOp::Sum));
      for (size_t i = 0; i < count; ++i)
        EXPECT_EQ(load(dtype, piece.data(), i),
                  double(size_t(r) * count + i + 1) * double(n * (n + 1) / 2))
            << dtypeName(dtype) << " axis " << axis;
      // All-gather: rank t's piece holds t * 100 + i.
      for (size_t i = 0; i < count; ++i)
        store(dtype, piece.data(), i, double(r * 100 + int64_t(i)));
      ASSERT_TRUE(comm->allGather(axis, piece.data(), whole.data(),
                                  int64_t(count), dtype));
      for (int64_t t = 0; t < n; ++t)
        for (size_t i = 0; i < count; ++i)
          EXPECT_EQ(load(dtype, whole.data(), size_t(t) * count + i),
                    double(t * 100 + int64_t(i)))
              << dtypeName(dtype) << " axis " << axis;
    }
    Status max = comm->reduceScatter(axis, nullptr, nullptr, 0, DType::F32,
                                     ReduceOp::Max);
    EXPECT_EQ(max.message(), "a reduce-scatter takes a sum or an average");
  }
}

TEST(Communicator, SendAndReceiveAlongAnAxis) {
  std::unique_ptr<Communicator> comm = grid();
  ASSERT_TRUE(comm);
  int64_t axis = int64_t(gridShape().size()) - 1;
  int64_t n = comm->groupSize(axis), r = comm->groupIndex(axis);
  if (n == 1) {
    Status alone = comm->send(axis, 0, 1, "x", 1);
    EXPECT_EQ(alone.message(), "a send needs a second rank (run under mpirun)");
    return;
  }
  // A ring: each sends its index to the next and receives the previous's.
  int64_t value = 1000 + r, received = -1;
  ASSERT_TRUE(comm->send(axis, (r + 1) % n, 5, &value, sizeof(value)));
  ASSERT_TRUE(
      comm->recv(axis, (r + n - 1) % n, 5, &received, sizeof(received)));
  ASSERT_TRUE(comm->finishSends());
  EXPECT_EQ(received, 1000 + (r + n - 1) % n);
}

TEST(Communicator, ErrorsNameTheAxisAndTheGrid) {
  std::unique_ptr<Communicator> comm = grid();
  ASSERT_TRUE(comm);
  float x = 1;
  Status axis = comm->allReduce(7, &x, 1, DType::F32, ReduceOp::Sum);
  EXPECT_EQ(axis.message(),
            "grid axis 7 is not an axis of the device grid (it has " +
                std::to_string(gridShape().size()) + ")");
  std::unique_ptr<Communicator> wrong;
  Status shape = launcher().createCommunicator({launcher().size() + 1}, wrong);
  EXPECT_EQ(shape.message(),
            "the device grid has " + std::to_string(launcher().size() + 1) +
                " ranks but the run has " + std::to_string(launcher().size()));
}

} // namespace
