//===- MemoryPlan.cpp - Static placement of buffers in an arena -----------===//

#include "megatron/Analysis/MemoryPlan.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>

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

  struct Placed {
    int64_t begin, end;
  };
  llvm::SmallVector<size_t> placed;
  llvm::SmallVector<Placed> conflicts;
  for (size_t index : order) {
    const BufferLifetime &buffer = buffers[index];
    int64_t size = alignTo(std::max<int64_t>(buffer.bytes, 1), alignment);
    // Byte ranges of already placed buffers alive at the same time, sorted.
    conflicts.clear();
    for (size_t other : placed) {
      const BufferLifetime &o = buffers[other];
      if (o.lastUse < buffer.firstUse || buffer.lastUse < o.firstUse)
        continue;
      int64_t begin = placement.offsets[other];
      conflicts.push_back(
          {begin, begin + alignTo(std::max<int64_t>(o.bytes, 1), alignment)});
    }
    llvm::sort(conflicts, [](const Placed &a, const Placed &b) {
      return a.begin < b.begin;
    });
    // Lowest gap that fits.
    int64_t offset = baseOffset;
    for (const Placed &c : conflicts) {
      if (offset + size <= c.begin)
        break;
      offset = std::max(offset, c.end);
    }
    placement.offsets[index] = offset;
    // The arena ends at the last byte a buffer really occupies: alignment
    // padding after the highest buffer is not memory anyone touches.
    placement.endBytes = std::max(placement.endBytes, offset + buffer.bytes);
    placed.push_back(index);
  }
  return placement;
}
