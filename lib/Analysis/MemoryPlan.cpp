//===- MemoryPlan.cpp - Static placement of buffers in an arena -----------===//

#include "megatron/Analysis/MemoryPlan.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>
#include <vector>

using namespace mlir::mt;

int64_t mlir::mt::alignTo(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

ArenaPlacement mlir::mt::placeBuffers(llvm::ArrayRef<BufferLifetime> buffers,
                                      int64_t baseOffset, int64_t alignment) {
  ArenaPlacement placement;
  placement.offsets.assign(buffers.size(), 0);
  placement.endBytes = baseOffset;

  llvm::SmallVector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by first use, so the result does not depend on the
  // sort's stability.
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].firstUse < buffers[b].firstUse;
  });

  // Placed buffers kept sorted by offset, so the ones alive beside a new
  // buffer come out in address order without sorting them per buffer (the
  // 175B pipeline's stage programs place thousands of buffers).
  struct Placed {
    int64_t begin, end, firstUse, lastUse;
  };
  std::vector<Placed> placed;
  placed.reserve(buffers.size());
  for (size_t index : order) {
    const BufferLifetime &buffer = buffers[index];
    int64_t size = alignTo(std::max<int64_t>(buffer.bytes, 1), alignment);
    // Lowest gap that fits among the placed buffers alive at the same time.
    int64_t offset = baseOffset;
    for (const Placed &p : placed) {
      if (p.lastUse < buffer.firstUse || buffer.lastUse < p.firstUse)
        continue;
      if (offset + size <= p.begin)
        break;
      offset = std::max(offset, p.end);
    }
    placement.offsets[index] = offset;
    // The arena ends at the last byte a buffer really occupies: alignment
    // padding after the highest buffer is not memory anyone touches.
    placement.endBytes = std::max(placement.endBytes, offset + buffer.bytes);
    Placed entry{offset, offset + size, buffer.firstUse, buffer.lastUse};
    placed.insert(llvm::upper_bound(placed, offset,
                                    [](int64_t begin, const Placed &p) {
                                      return begin < p.begin;
                                    }),
                  entry);
  }
  return placement;
}
