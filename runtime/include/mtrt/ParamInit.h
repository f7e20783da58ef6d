//===- ParamInit.h - Parameters initialized as the model states -*- C++ -*-===//

#ifndef MTRT_PARAMINIT_H
#define MTRT_PARAMINIT_H

#include "mtrt/Artifact.h"

#include <cstdint>

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
/// `begin` draws before it, which costs a few percent of drawing them
/// (mt19937_64 skips by regenerating its state, 312 draws at a time).
void initParameterRange(const ParamDesc &param, uint64_t seed, float *values,
                        int64_t begin, int64_t end);

/// The elements of `param`'s full tensor.
int64_t parameterElements(const ParamDesc &param);

} // namespace mtrt

#endif // MTRT_PARAMINIT_H
