//===- HalfFloat.h - bf16 and f16 storage, rounded as PyTorch does -*- C++
//-*-===//
//
// Mixed precision stores activations in 16 bits and computes in fp32. These
// are the two conversions every backend agrees on: narrowing rounds to
// nearest even (overflow to infinity, NaN stays NaN), widening is exact. They
// match `torch.Tensor.to(torch.bfloat16 / torch.float16)` bit for bit, so
// the CPU backend rounds exactly where a GPU storing 16-bit results would.
//
// Header-only and plain C++17; the CUDA backend's device code uses the same
// functions (MTRT_HOST_DEVICE).
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_HALFFLOAT_H
#define MTRT_HALFFLOAT_H

#include "mtrt/HostDevice.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mtrt {

MTRT_HOST_DEVICE uint32_t floatBits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return bits;
}

MTRT_HOST_DEVICE float bitsFloat(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

/// f32 -> bf16, round to nearest even; a NaN stays a (quiet) NaN.
MTRT_HOST_DEVICE uint16_t floatToBFloat16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

MTRT_HOST_DEVICE float bfloat16ToFloat(uint16_t value) {
  return bitsFloat(uint32_t(value) << 16);
}

/// f32 -> IEEE half, round to nearest even: magnitudes from 65520 on become
/// infinity, those below 2^-14 subnormals.
MTRT_HOST_DEVICE uint16_t floatToHalf(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) // infinity or NaN
    return sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (magnitude >= 0x477ff000u) // 65520: halfway above the largest half
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) // below 2^-14: a multiple of 2^-24
    return sign | uint16_t(nearbyintf(bitsFloat(magnitude) * 16777216.0f));
  // Rebias the exponent (127 -> 15) and round 23 mantissa bits to 10.
  magnitude += 0xc8000fffu + ((magnitude >> 13) & 1u);
  return sign | uint16_t(magnitude >> 13);
}

MTRT_HOST_DEVICE float halfToFloat(uint16_t value) {
  uint32_t sign = uint32_t(value & 0x8000u) << 16;
  uint32_t exponent = (value >> 10) & 0x1fu, mantissa = value & 0x3ffu;
  if (exponent == 0) {
    float magnitude = ldexpf(float(mantissa), -24);
    return bitsFloat(sign | floatBits(magnitude));
  }
  if (exponent == 31)
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// An f32 value rounded to bf16 bits (when `bf16`) or IEEE half bits, and
/// such bits widened.
MTRT_HOST_DEVICE uint16_t toHalfBits(float value, bool bf16) {
  return bf16 ? floatToBFloat16(value) : floatToHalf(value);
}
MTRT_HOST_DEVICE float fromHalfBits(uint16_t bits, bool bf16) {
  return bf16 ? bfloat16ToFloat(bits) : halfToFloat(bits);
}

/// `count` 16-bit values (bf16 when `bf16`, else IEEE half) widened into
/// floats, and floats rounded into them: how 16-bit buffers are staged
/// through fp32 (the CPU backend, the MPI collectives).
inline void widenHalves(const uint16_t *from, float *to, int64_t count,
                        bool bf16) {
  for (int64_t i = 0; i < count; ++i)
    to[i] = fromHalfBits(from[i], bf16);
}

inline void narrowToHalves(const float *from, uint16_t *to, int64_t count,
                           bool bf16) {
  for (int64_t i = 0; i < count; ++i)
    to[i] = toHalfBits(from[i], bf16);
}

} // namespace mtrt

#endif // MTRT_HALFFLOAT_H
