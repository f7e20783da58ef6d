//===- MemoryPlan.h - Static placement of buffers in an arena ---*- C++ -*-===//
//
// Places buffers with known sizes and lifetimes at byte offsets in one arena
// so that buffers alive at the same time never overlap. The arena size is
// then the program's exact peak memory: the runtime allocates it once.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_ANALYSIS_MEMORYPLAN_H
#define MEGATRON_ANALYSIS_MEMORYPLAN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace mlir::mt {

/// A buffer alive from step `firstUse` to step `lastUse`, both inclusive.
struct BufferLifetime {
  int64_t bytes = 0;
  int64_t firstUse = 0;
  int64_t lastUse = 0;
};

struct ArenaPlacement {
  /// Offset of each buffer, in request order.
  llvm::SmallVector<int64_t> offsets;
  /// One past the highest byte any buffer occupies (not counting the
  /// alignment padding after it).
  int64_t endBytes = 0;
};

/// Rounds `bytes` up to a multiple of `alignment`.
int64_t alignTo(int64_t bytes, int64_t alignment);

/// Places `buffers` at or above `baseOffset`, each aligned to `alignment`,
/// with no two whose lifetimes intersect sharing a byte. Greedy by size:
/// the largest buffers are placed first, each at the lowest offset where it
/// fits among the already placed buffers it is alive with (the "greedy by
/// size" strategy of TFLite's arena planner).
ArenaPlacement placeBuffers(llvm::ArrayRef<BufferLifetime> buffers,
                            int64_t baseOffset, int64_t alignment);

} // namespace mlir::mt

#endif // MEGATRON_ANALYSIS_MEMORYPLAN_H
