//===- Sharding.h - Where a rank's piece lies in the full tensor -*- C++ -*-=//
//
// A sharded buffer holds part of a full tensor: a ZeRO piece (a contiguous
// range of the flattened tensor) or a tensor-parallel split (1/count of one
// dimension within each of its equal chunks). Both are described by the
// contiguous runs of the full tensor that, concatenated, make the buffer;
// loading, initializing and saving parameters all go through them.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_SHARDING_H
#define MTRT_SHARDING_H

#include "mtrt/Artifact.h"

#include <cstdint>
#include <vector>

namespace mtrt {

/// A run of `count` elements starting at element `offset` of the full,
/// row-major tensor.
struct ElementRun {
  int64_t offset;
  int64_t count;
};

/// The runs of the full tensor that `buffer` holds, in buffer order, for
/// split `shardIndex` and ZeRO piece `pieceIndex` (by default the buffer's
/// own). A ZeRO piece's padding is in no run: the runs of the last pieces
/// can cover fewer elements than the buffer, whose rest is zero.
std::vector<ElementRun> shardRuns(const BufferDesc &buffer, int64_t shardIndex,
                                  int64_t pieceIndex);
inline std::vector<ElementRun> shardRuns(const BufferDesc &buffer) {
  return shardRuns(buffer, buffer.shardIndex, buffer.pieceIndex);
}

/// The full tensor's shape (the buffer's own when not sharded), padding
/// included.
const std::vector<int64_t> &fullShapeOf(const BufferDesc &buffer);

/// The tensor's shape in a checkpoint: the full shape without padding rows.
std::vector<int64_t> checkpointShapeOf(const BufferDesc &buffer);

/// Elements of the full tensor that are real: everything, or the rows before
/// the padding.
int64_t validElementsOf(const BufferDesc &buffer);

} // namespace mtrt

#endif // MTRT_SHARDING_H
