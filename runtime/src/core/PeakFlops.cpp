//===- PeakFlops.cpp - A device's dense peak, for MFU ---------------------===//

#include "mtrt/PeakFlops.h"

using namespace mtrt;

const char *mtrt::mathModeName(MathMode mode) {
  switch (mode) {
  case MathMode::Fp32:
    return "fp32";
  case MathMode::Tf32:
    return "tf32";
  case MathMode::Bf16:
    return "bf16";
  case MathMode::Fp16:
    return "fp16";
  }
  return "?";
}

namespace {

/// A data sheet's dense peaks, TFLOP/s.
struct DataSheet {
  const char *const *words; // every one in the device name, null-ended
  double fp32, tf32, half;  // half: bf16 and fp16 alike
};

bool contains(const std::string &name, const char *word) {
  return name.find(word) != std::string::npos;
}

} // namespace

std::optional<double> mtrt::dataSheetPeakTeraflops(const std::string &name,
                                                   MathMode mode) {
  // The first entry whose words are all in the name; the more specific
  // names first (an H100 NVL is an H100 too). Sparse figures halved.
  static const char *const gh200[] = {"GH200", nullptr};
  static const char *const h200Nvl[] = {"H200", "NVL", nullptr};
  static const char *const h200[] = {"H200", nullptr};
  static const char *const h100Nvl[] = {"H100", "NVL", nullptr};
  static const char *const h100Pcie[] = {"H100", "PCIe", nullptr};
  static const char *const h100[] = {"H100", nullptr}; // SXM: "80GB HBM3"
  static const char *const a100[] = {"A100", nullptr};
  static const DataSheet sheets[] = {
      {gh200, 67.0, 494.7, 989.4},    {h200Nvl, 60.0, 417.5, 835.5},
      {h200, 67.0, 494.7, 989.4},     {h100Nvl, 60.0, 417.5, 835.5},
      {h100Pcie, 51.0, 378.0, 756.0}, {h100, 67.0, 494.7, 989.4},
      {a100, 19.5, 156.0, 312.0},
  };
  for (const DataSheet &sheet : sheets) {
    bool matches = true;
    for (const char *const *word = sheet.words; *word && matches; ++word)
      matches = contains(name, *word);
    if (!matches)
      continue;
    switch (mode) {
    case MathMode::Fp32:
      return sheet.fp32;
    case MathMode::Tf32:
      return sheet.tf32;
    case MathMode::Bf16:
    case MathMode::Fp16:
      return sheet.half;
    }
  }
  return std::nullopt;
}
