//===- PipelineScheduleTest.cpp - Tests of the pipeline schedules ---------===//
//
// Builds GPipe, 1F1B and interleaved schedules over a grid of (p, m, v),
// checks that each rank runs every pass exactly once, and simulates them:
// the bubble must equal the papers' closed forms exactly and the activation
// high-water mark the warmup depth. Also checks the size errors, deadlock
// detection and the SVG and Chrome trace renderings.
//
//===----------------------------------------------------------------------===//

#include "megatron/Analysis/PipelineSchedule.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace mlir::mt;

namespace {

struct Config {
  ScheduleKind kind;
  int64_t p, m, v;
};

std::string describe(const Config &c) {
  return std::string(scheduleKindName(c.kind)) + " p=" + std::to_string(c.p) +
         " m=" + std::to_string(c.m) + " v=" + std::to_string(c.v);
}

/// Every valid (kind, p, m, v) with p in {1, 2, 3, 4, 8}, m in {p, 2p, 4p,
/// 1..8} and v in {1, 2, 3, 4}.
std::vector<Config> validConfigs() {
  std::vector<Config> configs;
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved})
    for (int64_t p : {1, 2, 3, 4, 8}) {
      std::set<int64_t> ms = {p, 2 * p, 4 * p};
      for (int64_t m = 1; m <= 8; ++m)
        ms.insert(m);
      for (int64_t m : ms)
        for (int64_t v : {1, 2, 3, 4})
          if (!checkSchedule(kind, p, m, v))
            configs.push_back({kind, p, m, v});
    }
  return configs;
}

/// Megatron-LM's warmup depth of `rank` in (microbatch, chunk) passes.
int64_t expectedWarmup(const Config &c, int64_t rank) {
  switch (c.kind) {
  case ScheduleKind::GPipe:
    return c.m;
  case ScheduleKind::OneFOneB:
    return std::min(c.p - rank - 1, c.m);
  case ScheduleKind::Interleaved:
    if (c.m == c.p)
      return c.m * c.v;
    return std::min((c.p - rank - 1) * 2 + (c.v - 1) * c.p, c.m * c.v);
  }
  return -1;
}

TEST(PipelineSchedule, ParseAndName) {
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved})
    EXPECT_EQ(parseScheduleKind(scheduleKindName(kind)), kind);
  EXPECT_FALSE(parseScheduleKind("1F1B"));
  EXPECT_FALSE(parseScheduleKind(""));
}

TEST(PipelineSchedule, CheckRejectsBadSizes) {
  using K = ScheduleKind;
  for (K kind : {K::GPipe, K::OneFOneB, K::Interleaved}) {
    EXPECT_TRUE(checkSchedule(kind, 0, 4, 2));
    EXPECT_TRUE(checkSchedule(kind, 2, 0, 2));
    EXPECT_TRUE(checkSchedule(kind, 2, 4, 0));
    EXPECT_TRUE(checkSchedule(kind, -1, 4, 2));
  }
  // Fewer microbatches than stages: 1F1B as Megatron-LM runs it.
  EXPECT_FALSE(checkSchedule(K::OneFOneB, 4, 3, 1));
  EXPECT_FALSE(checkSchedule(K::OneFOneB, 4, 4, 1));
  EXPECT_FALSE(checkSchedule(K::GPipe, 4, 3, 1));
  // Interleaving needs stages to interleave across (as Megatron-LM).
  std::optional<std::string> oneStage = checkSchedule(K::Interleaved, 1, 2, 2);
  ASSERT_TRUE(oneStage);
  EXPECT_NE(oneStage->find("needs pipeline stages (p = 1)"), std::string::npos)
      << *oneStage;

  EXPECT_TRUE(checkSchedule(K::GPipe, 2, 4, 2));
  EXPECT_TRUE(checkSchedule(K::OneFOneB, 2, 4, 2));

  std::optional<std::string> notMultiple =
      checkSchedule(K::Interleaved, 4, 6, 2);
  ASSERT_TRUE(notMultiple);
  EXPECT_NE(notMultiple->find("not a multiple"), std::string::npos)
      << *notMultiple;
  EXPECT_TRUE(checkSchedule(K::Interleaved, 4, 2, 2));
  EXPECT_TRUE(checkSchedule(K::Interleaved, 4, 8, 1));
  EXPECT_FALSE(checkSchedule(K::Interleaved, 4, 8, 2));
}

TEST(PipelineSchedule, EveryPassOnceAndBackwardAfterForward) {
  for (const Config &c : validConfigs()) {
    SCOPED_TRACE(describe(c));
    PipelineSchedule s = buildSchedule(c.kind, c.p, c.m, c.v);
    ASSERT_EQ(static_cast<int64_t>(s.actions.size()), c.p);
    for (int64_t rank = 0; rank < c.p; ++rank) {
      const std::vector<PipelineAction> &actions = s.actions[rank];
      ASSERT_EQ(static_cast<int64_t>(actions.size()), 2 * c.m * c.v);
      // Position of each pass, checked independently of verifySchedule.
      std::vector<int64_t> fwd(c.m * c.v, -1), bwd(c.m * c.v, -1);
      for (int64_t i = 0; i < static_cast<int64_t>(actions.size()); ++i) {
        const PipelineAction &a = actions[i];
        ASSERT_GE(a.microbatch, 0);
        ASSERT_LT(a.microbatch, c.m);
        ASSERT_GE(a.chunk, 0);
        ASSERT_LT(a.chunk, c.v);
        std::vector<int64_t> &pos =
            a.kind == PipelineAction::Forward ? fwd : bwd;
        EXPECT_EQ(pos[a.microbatch * c.v + a.chunk], -1) << "repeated";
        pos[a.microbatch * c.v + a.chunk] = i;
      }
      for (int64_t j = 0; j < c.m * c.v; ++j) {
        EXPECT_GE(fwd[j], 0);
        EXPECT_GT(bwd[j], fwd[j]);
      }
      // The warmup is Megatron-LM's: that many forwards before the first
      // backward, then strict alternation until the forwards run out.
      int64_t warmup = expectedWarmup(c, rank);
      for (int64_t i = 0; i < static_cast<int64_t>(actions.size()); ++i) {
        bool isForward = actions[i].kind == PipelineAction::Forward;
        int64_t steadyEnd = warmup + 2 * (c.m * c.v - warmup);
        if (i < warmup)
          EXPECT_TRUE(isForward) << i;
        else if (i < steadyEnd)
          EXPECT_EQ(isForward, (i - warmup) % 2 == 0) << i;
        else
          EXPECT_FALSE(isForward) << i;
      }
    }
    EXPECT_FALSE(verifySchedule(s));
  }
}

TEST(PipelineSchedule, InterleavedOrderMatchesMegatron) {
  // p = 2, m = 4, v = 2, rank 0: warmup (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4.
  // Forwards: mb 0, 1 through chunk 0, the same through chunk 1, then 2, 3.
  PipelineSchedule s = buildSchedule(ScheduleKind::Interleaved, 2, 4, 2);
  std::ostringstream os;
  for (const PipelineAction &a : s.actions[0])
    os << formatAction(a, true) << " ";
  EXPECT_EQ(os.str(), "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 "
                      "F3.1 B1.0 B2.1 B3.1 B2.0 B3.0 ");
}

TEST(PipelineSchedule, BubbleMatchesTheory) {
  for (const Config &c : validConfigs()) {
    SCOPED_TRACE(describe(c));
    PipelineSchedule s = buildSchedule(c.kind, c.p, c.m, c.v);
    Timeline t = simulateSchedule(s);
    ASSERT_FALSE(t.error) << *t.error;
    // Under the default costs a rank is busy 3m; the pipeline fills and
    // drains in (p - 1) stage times of one chunk, 3 (p - 1) / v.
    double p = c.p, m = c.m, v = c.v;
    EXPECT_NEAR(t.makespan, 3 * m + 3 * (p - 1) / v, 1e-9);
    EXPECT_NEAR(t.bubbleFraction, (p - 1) / (v * m), 1e-9);
    for (const auto &rank : t.ranks) {
      ASSERT_EQ(static_cast<int64_t>(rank.size()), 2 * c.m * c.v);
      for (size_t i = 1; i < rank.size(); ++i)
        EXPECT_GE(rank[i].start, rank[i - 1].end - 1e-12);
    }
  }
}

TEST(PipelineSchedule, PeakInFlight) {
  for (const Config &c : validConfigs()) {
    SCOPED_TRACE(describe(c));
    Timeline t = simulateSchedule(buildSchedule(c.kind, c.p, c.m, c.v));
    ASSERT_FALSE(t.error) << *t.error;
    ASSERT_EQ(static_cast<int64_t>(t.peakInFlight.size()), c.p);
    // Every rank holds its warmup plus the one forward that opens the
    // steady state; nothing more, since each later forward follows a
    // backward.
    for (int64_t rank = 0; rank < c.p; ++rank)
      EXPECT_EQ(t.peakInFlight[rank],
                std::min(expectedWarmup(c, rank) + 1, c.m * c.v));
    // The closed forms on stage 0, in (microbatch, chunk) passes.
    switch (c.kind) {
    case ScheduleKind::GPipe:
      EXPECT_EQ(t.peakInFlight[0], c.m);
      break;
    case ScheduleKind::OneFOneB:
      EXPECT_EQ(t.peakInFlight[0], std::min(c.p, c.m));
      break;
    case ScheduleKind::Interleaved:
      // (v + 1) p - 1 chunk activations, i.e. about p (1 + 1/v) stages'
      // worth: interleaving costs memory on the first stage.
      EXPECT_EQ(t.peakInFlight[0],
                c.m == c.p ? c.m * c.v : (c.v + 1) * c.p - 1);
      break;
    }
  }
}

TEST(PipelineSchedule, CustomCosts) {
  // One microbatch through two stages: the passes run back to back.
  PipelineSchedule s = buildSchedule(ScheduleKind::GPipe, 2, 1, 1);
  Timeline t = simulateSchedule(
      s, [](int64_t vs) { return 1.0 + static_cast<double>(vs); },
      [](int64_t vs) { return 10.0 * (1.0 + static_cast<double>(vs)); });
  ASSERT_FALSE(t.error);
  EXPECT_DOUBLE_EQ(t.makespan, 1 + 2 + 20 + 10);
  EXPECT_DOUBLE_EQ(t.ranks[1][1].start, 3);
  EXPECT_DOUBLE_EQ(t.ranks[0][1].start, 23);
  // Rank 0 is busy 11 of 33, rank 1 22 of 33.
  EXPECT_DOUBLE_EQ(t.bubbleFraction, 2.0);
}

TEST(PipelineSchedule, DetectsDeadlock) {
  // Rank 0 waits for B0 before sending F1, rank 1 for F1 before running B0.
  using A = PipelineAction;
  PipelineSchedule s = buildSchedule(ScheduleKind::GPipe, 2, 2, 1);
  s.actions[0] = {{A::Forward, 0, 0},
                  {A::Backward, 0, 0},
                  {A::Forward, 1, 0},
                  {A::Backward, 1, 0}};
  s.actions[1] = {{A::Forward, 1, 0},
                  {A::Forward, 0, 0},
                  {A::Backward, 0, 0},
                  {A::Backward, 1, 0}};
  EXPECT_FALSE(verifySchedule(s));
  Timeline t = simulateSchedule(s);
  ASSERT_TRUE(t.error);
  EXPECT_NE(t.error->find("deadlock"), std::string::npos) << *t.error;
}

TEST(PipelineSchedule, VerifyRejectsMalformed) {
  using A = PipelineAction;
  PipelineSchedule s = buildSchedule(ScheduleKind::OneFOneB, 2, 2, 1);
  PipelineSchedule missing = s;
  missing.actions[1].pop_back();
  EXPECT_TRUE(verifySchedule(missing));
  EXPECT_TRUE(simulateSchedule(missing).error);
  PipelineSchedule reversed = s;
  reversed.actions[1] = {{A::Backward, 0, 0},
                         {A::Forward, 0, 0},
                         {A::Forward, 1, 0},
                         {A::Backward, 1, 0}};
  EXPECT_TRUE(verifySchedule(reversed));
  PipelineSchedule badChunk = s;
  badChunk.actions[0][0].chunk = 1;
  EXPECT_TRUE(verifySchedule(badChunk));
}

TEST(PipelineSchedule, PrintTimeline) {
  PipelineSchedule s = buildSchedule(ScheduleKind::OneFOneB, 2, 3, 1);
  std::ostringstream os;
  printTimeline(os, s, simulateSchedule(s));
  EXPECT_EQ(os.str(), "stage 0: F0 F1 B0 F2 B1 B2\n"
                      "stage 1: F0 B0 F1 B1 F2 B2\n"
                      "makespan: 12\n"
                      "bubble fraction: 0.333333\n"
                      "peak in-flight microbatches: 2 1\n");
}

/// Counts the non-overlapping occurrences of `needle` in `haystack`.
size_t count(const std::string &haystack, const std::string &needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size()))
    ++n;
  return n;
}

/// Whether every element of `xml` is closed in order. Enough for the SVG
/// writer's output, which has no comments, CDATA or '>' inside attributes.
bool tagsBalanced(const std::string &xml) {
  std::vector<std::string> open;
  for (size_t pos = xml.find('<'); pos != std::string::npos;
       pos = xml.find('<', pos + 1)) {
    size_t end = xml.find('>', pos);
    if (end == std::string::npos)
      return false;
    std::string tag = xml.substr(pos + 1, end - pos - 1);
    if (tag.empty() || tag[0] == '?')
      continue;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1))
        return false;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
  }
  return open.empty();
}

TEST(PipelineSchedule, Svg) {
  for (const Config &c : {Config{ScheduleKind::GPipe, 4, 8, 1},
                          Config{ScheduleKind::OneFOneB, 4, 8, 1},
                          Config{ScheduleKind::Interleaved, 4, 8, 2}}) {
    SCOPED_TRACE(describe(c));
    PipelineSchedule s = buildSchedule(c.kind, c.p, c.m, c.v);
    std::ostringstream os;
    writeSvg(os, s, simulateSchedule(s));
    std::string svg = os.str();
    EXPECT_EQ(count(svg, "<rect"), static_cast<size_t>(2 * c.m * c.v * c.p));
    EXPECT_EQ(count(svg, ">stage "), static_cast<size_t>(c.p));
    EXPECT_NE(svg.find(std::string(scheduleKindName(c.kind)) + ": p=" +
                       std::to_string(c.p) + " m=" + std::to_string(c.m) +
                       " v=" + std::to_string(c.v) + " bubble fraction="),
              std::string::npos);
    EXPECT_TRUE(tagsBalanced(svg));
  }
}

TEST(PipelineSchedule, ChromeTrace) {
  const int64_t p = 4, m = 8, v = 2;
  PipelineSchedule s = buildSchedule(ScheduleKind::Interleaved, p, m, v);
  Timeline t = simulateSchedule(s);
  std::ostringstream os;
  writeChromeTrace(os, s, t);
  std::string text = os.str();
  EXPECT_EQ(count(text, "\"ph\":\"X\""), static_cast<size_t>(2 * m * v * p));

  nlohmann::json trace = nlohmann::json::parse(text);
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  int64_t complete = 0, names = 0;
  double lastEnd = 0;
  for (const nlohmann::json &event : trace["traceEvents"]) {
    if (event["ph"] == "M") {
      EXPECT_EQ(event["name"], "thread_name");
      EXPECT_EQ(event["args"]["name"],
                "stage " + std::to_string(event["tid"].get<int64_t>()));
      ++names;
      continue;
    }
    ASSERT_EQ(event["ph"], "X");
    ++complete;
    bool isForward = event["cat"] == "forward";
    EXPECT_EQ(event["name"].get<std::string>(),
              (isForward ? "F" : "B") +
                  std::to_string(event["args"]["microbatch"].get<int64_t>()) +
                  "." + std::to_string(event["args"]["chunk"].get<int64_t>()));
    EXPECT_NEAR(event["dur"].get<double>(), (isForward ? 1000.0 : 2000.0) / v,
                1e-3);
    lastEnd = std::max(lastEnd,
                       event["ts"].get<double>() + event["dur"].get<double>());
  }
  EXPECT_EQ(complete, 2 * m * v * p);
  EXPECT_EQ(names, p);
  EXPECT_NEAR(lastEnd, t.makespan * 1000.0, 1e-3);
}

} // namespace
