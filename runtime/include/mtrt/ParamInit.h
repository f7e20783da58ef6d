//===- ParamInit.h - GPT-2's parameter initialization -----------*- C++ -*-===//

#ifndef MTRT_PARAMINIT_H
#define MTRT_PARAMINIT_H

#include <cstdint>
#include <string>
#include <vector>

namespace mtrt {

/// Fills `values` (the full tensor `name` of `shape`) as Hugging Face's
/// GPT2PreTrainedModel._init_weights does: biases 0, layer-norm weights 1,
/// residual output projections (`*.c_proj.weight`) normal with standard
/// deviation 0.02 / sqrt(2 * numLayers), every other weight and embedding
/// normal with 0.02. Each tensor draws from its own generator seeded by
/// `seed` and the tensor's name, so the values do not depend on the order
/// of parameters or on how a rank shards them.
void initGPT2Parameter(const std::string &name,
                       const std::vector<int64_t> &shape, int64_t numLayers,
                       uint64_t seed, float *values);

/// The number of transformer layers named in `names` (`h.<i>.` prefixes).
int64_t countGPT2Layers(const std::vector<std::string> &names);

} // namespace mtrt

#endif // MTRT_PARAMINIT_H
