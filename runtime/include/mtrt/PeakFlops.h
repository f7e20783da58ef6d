//===- PeakFlops.h - A device's dense peak, for MFU -------------*- C++ -*-===//
//
// Model FLOPs utilization (MFU, Chowdhery et al. 2022, as Megatron-LM and
// nanoGPT report it) divides the model's FLOPs per second by the device's
// dense peak for the arithmetic the step runs in. The peak is NVIDIA's data
// sheet figure for the GPU, looked up by the name CUDA reports, or the
// user's (--peak-tflops).
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_PEAKFLOPS_H
#define MTRT_PEAKFLOPS_H

#include <optional>
#include <string>

namespace mtrt {

/// The arithmetic a step's GEMMs run in.
enum class MathMode { Fp32, Tf32, Bf16, Fp16 };

/// "fp32", "tf32", "bf16", "fp16".
const char *mathModeName(MathMode mode);

/// The dense (not 2:4 sparse) peak in TFLOP/s of the GPU whose CUDA device
/// name is `deviceName` ("NVIDIA H100 80GB HBM3"), from NVIDIA's data
/// sheets (H100 SXM, PCIe and NVL, H200 and H200 NVL, GH200, A100), or
/// nullopt for a GPU this table lacks.
std::optional<double> dataSheetPeakTeraflops(const std::string &deviceName,
                                             MathMode mode);

} // namespace mtrt

#endif // MTRT_PEAKFLOPS_H
