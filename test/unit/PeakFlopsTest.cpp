//===- PeakFlopsTest.cpp - The data-sheet peaks MFU divides by ------------===//

#include "mtrt/PeakFlops.h"

#include <gtest/gtest.h>

using namespace mtrt;

// The names CUDA reports for these GPUs, and their data sheets' dense
// peaks (sparse figures halved).
TEST(PeakFlops, DataSheetPeaksByCudaName) {
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA H100 80GB HBM3", MathMode::Bf16),
            989.4);
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA H100 80GB HBM3", MathMode::Fp16),
            989.4);
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA H100 80GB HBM3", MathMode::Tf32),
            494.7);
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA H100 80GB HBM3", MathMode::Fp32),
            67.0);
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA H200", MathMode::Bf16), 989.4);
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA GH200 480GB", MathMode::Bf16),
            989.4);
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA A100-SXM4-80GB", MathMode::Bf16),
            312.0);
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA A100 80GB PCIe", MathMode::Tf32),
            156.0);
}

// The more specific names win: an H100 PCIe or NVL is not an SXM part, an
// H200 NVL not an H200 SXM.
TEST(PeakFlops, VariantsBeforeTheirFamily) {
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA H100 PCIe", MathMode::Bf16), 756.0);
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA H100 NVL", MathMode::Bf16), 835.5);
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA H200 NVL", MathMode::Bf16), 835.5);
  EXPECT_EQ(dataSheetPeakTeraflops("NVIDIA H100 PCIe", MathMode::Fp32), 51.0);
}

// A GPU the table lacks has no peak: MFU is then not reported, not guessed.
TEST(PeakFlops, UnknownHardwareHasNone) {
  EXPECT_FALSE(dataSheetPeakTeraflops("NVIDIA GeForce RTX 4090",
                                      MathMode::Bf16));
  EXPECT_FALSE(dataSheetPeakTeraflops("", MathMode::Fp32));
  EXPECT_STREQ(mathModeName(MathMode::Tf32), "tf32");
}
