//===- Sharding.cpp - Where a rank's piece lies in the full tensor --------===//

#include "mtrt/Sharding.h"

using namespace mtrt;

const std::vector<int64_t> &mtrt::fullShapeOf(const BufferDesc &buffer) {
  return buffer.sharded() ? buffer.fullShape : buffer.shape;
}

std::vector<ElementRun> mtrt::shardRuns(const BufferDesc &buffer,
                                        int64_t shardIndex) {
  int64_t count = buffer.numElements();
  if (!buffer.sharded())
    return {{0, count}};
  if (buffer.shardDim < 0) // a ZeRO piece of the flattened tensor
    return {{shardIndex * count, count}};
  const std::vector<int64_t> &full = buffer.fullShape;
  int64_t dim = buffer.shardDim;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= full[d];
  for (size_t d = size_t(dim) + 1; d < full.size(); ++d)
    inner *= full[d];
  int64_t chunk = full[dim] / buffer.shardChunks;
  int64_t piece = chunk / buffer.shardCount;
  std::vector<ElementRun> runs;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < buffer.shardChunks; ++k)
      runs.push_back({(o * full[dim] + k * chunk + shardIndex * piece) * inner,
                      piece * inner});
  return runs;
}
