//===- ParamInit.h - Parameter initialization as the model states it -*- C++ -*-===//

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

} // namespace mtrt

#endif // MTRT_PARAMINIT_H
