//===- DeadlineTest.cpp - A deadline for an uninterruptible wait ----------===//

#include "mtrt/Deadline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace mtrt;

namespace {

// A wait that outlasts its deadline: the function runs, once.
TEST(Deadline, ExpiresWhenTheWaitOutlastsIt) {
  std::atomic<int> expired{0};
  {
    Deadline deadline(0.05, [&] { ++expired; });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_EQ(expired, 1);
}

// A wait that ends in time: the function never runs, and the deadline
// does not hold the caller until it would have expired.
TEST(Deadline, MetInTimeItNeverRuns) {
  std::atomic<int> expired{0};
  auto start = std::chrono::steady_clock::now();
  {
    Deadline deadline(30, [&] { ++expired; });
  }
  EXPECT_EQ(expired, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// No deadline (0, as --distributed-timeout-minutes 0): never runs.
TEST(Deadline, ZeroMeansNone) {
  std::atomic<int> expired{0};
  {
    Deadline deadline(0, [&] { ++expired; });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(expired, 0);
}

// The words every wait for other ranks gives up with.
TEST(Deadline, NoAnswerSaysTheDeadlineAndItsFlag) {
  EXPECT_EQ(noAnswerWithin(600),
            "no answer within 600 s (--distributed-timeout-minutes)");
  EXPECT_EQ(noAnswerWithin(0.5),
            "no answer within 0.5 s (--distributed-timeout-minutes)");
}

} // namespace
