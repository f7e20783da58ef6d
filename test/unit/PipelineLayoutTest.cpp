//===- PipelineLayoutTest.cpp - Megatron-style pipeline layouts -----------===//

#include "megatron/Analysis/PipelineLayout.h"

#include <gtest/gtest.h>

using namespace mlir::mt;

namespace {

std::vector<int64_t> layersOf(const std::string &layout, int64_t stages,
                              int64_t layers) {
  auto result = parsePipelineLayout(layout, stages, layers);
  if (auto *error = std::get_if<std::string>(&result)) {
    ADD_FAILURE() << *error;
    return {};
  }
  return std::get<std::vector<int64_t>>(result);
}

std::string errorOf(const std::string &layout, int64_t stages, int64_t layers) {
  auto result = parsePipelineLayout(layout, stages, layers);
  if (auto *error = std::get_if<std::string>(&result))
    return *error;
  ADD_FAILURE() << "layout '" << layout << "' was accepted";
  return "";
}

TEST(PipelineLayout, PlainStages) {
  EXPECT_EQ(layersOf("Ett|ttL", 2, 4), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(layersOf("Et|tttL", 2, 4), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(layersOf("tttt", 1, 4), (std::vector<int64_t>{4}));
}

TEST(PipelineLayout, Repetitions) {
  EXPECT_EQ(layersOf("Et*3|(t*4|)*2t*3L", 4, 14),
            (std::vector<int64_t>{3, 4, 4, 3}));
  // Megatron's example style: one layer beside E, 29 stages of two, one
  // beside L.
  std::vector<int64_t> expected(31, 2);
  expected.front() = expected.back() = 1;
  EXPECT_EQ(layersOf("Et|(tt|)*29tL", 31, 60), expected);
  EXPECT_EQ(layersOf("((t|)*2)*2t", 5, 5), (std::vector<int64_t>(5, 1)));
  EXPECT_EQ(layersOf("Et*10|t*12L", 2, 22), (std::vector<int64_t>{10, 12}));
}

TEST(PipelineLayout, ErrorsNameTheProblem) {
  EXPECT_NE(errorOf("Ett|ttL", 4, 4)
                .find("has 2 stages, but pp x "
                      "virtual-stages is 4"),
            std::string::npos);
  EXPECT_NE(errorOf("Ett|tttL", 2, 4)
                .find("places 5 transformer layers, "
                      "but the model has 4"),
            std::string::npos);
  EXPECT_NE(errorOf("tEt|ttL", 2, 4).find("embedding (E) must open"),
            std::string::npos);
  EXPECT_NE(errorOf("EttL|tt", 2, 4)
                .find("loss (L) must close the last "
                      "stage, found on stage 0"),
            std::string::npos);
  EXPECT_NE(errorOf("E|ttttL", 2, 4)
                .find("stage 0 holds no transformer "
                      "layer"),
            std::string::npos);
  EXPECT_NE(errorOf("Ett|txL", 2, 4).find("unexpected 'x'"), std::string::npos);
  EXPECT_NE(errorOf("Ett|txL", 2, 4).find("at position 5"), std::string::npos);
  EXPECT_NE(errorOf("E(tt|ttL", 2, 4).find("unmatched '('"), std::string::npos);
  EXPECT_NE(errorOf("Ett)|ttL", 2, 4).find("unmatched ')'"), std::string::npos);
  EXPECT_NE(errorOf("Et*|ttL", 2, 3).find("'*' needs a repeat count"),
            std::string::npos);
}

} // namespace
