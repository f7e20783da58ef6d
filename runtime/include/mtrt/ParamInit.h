//===- ParamInit.h - Parameters initialized as the model states -*- C++ -*-===//

#ifndef MTRT_PARAMINIT_H
#define MTRT_PARAMINIT_H

#include "mtrt/Artifact.h"

#include <cstdint>
#include <random>

namespace mtrt {

/// Fills `values` (the full tensor of `param`) with the initializer the
/// artifact states for it (`mt.init`: normal with a standard deviation,
/// zeros or ones; the importer states Hugging Face's). A normal tensor
/// draws from its own generator seeded by `seed` and the tensor's name, so
/// its values depend neither on the order of parameters nor on how a rank
/// shards them. Precondition: `param.init.kind` is not None.
void initParameter(const ParamDesc &param, uint64_t seed, float *values);

/// Elements [begin, end) of initParameter's values, into
/// `values[begin, end)` (the full tensor's storage): the same bits for any
/// split into ranges, so threads can share one tensor. `begin` is even (a
/// normal draws its values in pairs). A range's generator first skips the
/// `begin` draws before it (ParameterDraws shares one pass of skips
/// among a tensor's ranges).
void initParameterRange(const ParamDesc &param, uint64_t seed, float *values,
                        int64_t begin, int64_t end);

/// The elements of `param`'s full tensor.
int64_t parameterElements(const ParamDesc &param);

/// initParameter's values of one tensor drawn range by range, from a
/// position in its generator's sequence that moves only forward. Threads
/// sharing a tensor each take a copy positioned at their range's start:
/// one pass of skips over the tensor (skipTo from range to range) instead
/// of each range skipping from the tensor's start, which made the skips
/// cost more than the draws once a tensor was split among 16 threads
/// (5.3 ns a skipped draw against 28 ns a value, one core of a 2-core
/// Intel Xeon).
class ParameterDraws {
public:
  /// At element 0 of `param`'s values.
  ParameterDraws(const ParamDesc &param, uint64_t seed);

  /// Moves to element `begin` (even, not before the current element).
  void skipTo(int64_t begin);

  /// Writes elements [begin, end) into `values[begin, end)` (the full
  /// tensor's storage), `begin` the current element (even); then at `end`
  /// (past it at an odd end: the last pair's draws are taken whole).
  void fill(float *values, int64_t begin, int64_t end);

  /// The current element.
  int64_t position() const { return next; }

private:
  const ParamDesc *param;
  int64_t next = 0;
  std::mt19937_64 generator;
};

} // namespace mtrt

#endif // MTRT_PARAMINIT_H
