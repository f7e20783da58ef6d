//===- Sharding.cpp - Where a rank's piece lies in the full tensor --------===//

#include "mtrt/Sharding.h"

#include <algorithm>

using namespace mtrt;

const std::vector<int64_t> &mtrt::fullShapeOf(const BufferDesc &buffer) {
  return buffer.sharded() ? buffer.fullShape : buffer.shape;
}

std::vector<int64_t> mtrt::checkpointShapeOf(const BufferDesc &buffer) {
  std::vector<int64_t> shape = fullShapeOf(buffer);
  if (buffer.validRows >= 0)
    shape[0] = buffer.validRows;
  return shape;
}

int64_t mtrt::validElementsOf(const BufferDesc &buffer) {
  int64_t elements = 1;
  for (int64_t dim : checkpointShapeOf(buffer))
    elements *= dim;
  return elements;
}

std::vector<ElementRun> mtrt::shardRuns(const BufferDesc &buffer,
                                        int64_t shardIndex,
                                        int64_t pieceIndex) {
  // A ZeRO piece of a tensor-parallel split: the piece's range of the
  // concatenated runs of the split.
  // The split's runs cover only its real elements: for the last pieces of
  // a padded split, `take` is more than the runs hold, and the loop ends
  // when they run out (the rest of the piece is padding).
  if (buffer.pieceCount > 1) {
    BufferDesc split = buffer;
    split.pieceCount = 1;
    split.shape = {buffer.numElements() * buffer.pieceCount};
    int64_t skip = pieceIndex * buffer.numElements();
    int64_t take = buffer.numElements();
    std::vector<ElementRun> runs;
    for (const ElementRun &run : shardRuns(split, shardIndex, 0)) {
      if (take == 0)
        break;
      if (skip >= run.count) {
        skip -= run.count;
        continue;
      }
      int64_t count = std::min(run.count - skip, take);
      runs.push_back({run.offset + skip, count});
      take -= count;
      skip = 0;
    }
    return runs;
  }
  int64_t count = buffer.numElements();
  if (!buffer.sharded())
    return {{0, count}};
  if (buffer.shardDim < 0) { // a ZeRO piece of the flattened tensor
    int64_t full = 1;
    for (int64_t dim : buffer.fullShape)
      full *= dim;
    int64_t first = shardIndex * count;
    int64_t real = std::min(count, full - first);
    if (real <= 0)
      return {};
    return {{first, real}};
  }
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
