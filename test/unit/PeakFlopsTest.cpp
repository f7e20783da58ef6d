//===- PeakFlopsTest.cpp - The data-sheet peaks MFU divides by ------------===//

#include "mtrt/PeakFlops.h"

#include <gtest/gtest.h>

using namespace mtrt;

namespace {
struct Expected {
  const char *name;
  MathMode mode;
  double peak;
};
} // namespace

// The names CUDA reports for these GPUs, and their data sheets' dense
// peaks (sparse figures halved). The more specific names win: an H100
// PCIe or NVL is not an SXM part, an H200 NVL not an H200 SXM.
TEST(PeakFlops, DataSheetPeaksByCudaName) {
  const Expected table[] = {
      {"NVIDIA H100 80GB HBM3", MathMode::Bf16, 989.4},
      {"NVIDIA H100 80GB HBM3", MathMode::Fp16, 989.4},
      {"NVIDIA H100 80GB HBM3", MathMode::Tf32, 494.7},
      {"NVIDIA H100 80GB HBM3", MathMode::Fp32, 67.0},
      {"NVIDIA H200", MathMode::Bf16, 989.4},
      {"NVIDIA GH200 480GB", MathMode::Bf16, 989.4},
      {"NVIDIA A100-SXM4-80GB", MathMode::Bf16, 312.0},
      {"NVIDIA A100 80GB PCIe", MathMode::Tf32, 156.0},
      {"NVIDIA H100 PCIe", MathMode::Bf16, 756.0},
      {"NVIDIA H100 PCIe", MathMode::Fp32, 51.0},
      {"NVIDIA H100 NVL", MathMode::Bf16, 835.5},
      {"NVIDIA H200 NVL", MathMode::Bf16, 835.5},
  };
  for (const Expected &expected : table)
    EXPECT_EQ(dataSheetPeakTeraflops(expected.name, expected.mode),
              expected.peak)
        << expected.name << " " << mathModeName(expected.mode);
}

// A GPU the table lacks has no peak: MFU is then not reported, not guessed.
TEST(PeakFlops, UnknownHardwareHasNone) {
  EXPECT_FALSE(
      dataSheetPeakTeraflops("NVIDIA GeForce RTX 4090", MathMode::Bf16));
  EXPECT_FALSE(dataSheetPeakTeraflops("", MathMode::Fp32));
  EXPECT_STREQ(mathModeName(MathMode::Tf32), "tf32");
}
