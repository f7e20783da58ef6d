// RUN: megatron-opt %s --mt-verify-collectives --split-input-file --verify-diagnostics | FileCheck %s

// mt-verify-collectives checks, before anything runs, that every rank of a
// group of the device grid issues the same collectives on the group's axis,
// in the same order: same kernel, same params, same buffer types. The IR is
// never changed.
//
// Every module below has a 2x1 grid: ranks @rank0 (coords 0, 0) and @rank1
// (coords 1, 0) form the one group of axis 0; axis 1 has one rank per group.

//===----------------------------------------------------------------------===//
// Matching ranks
//===----------------------------------------------------------------------===//

// Both ranks issue the same all_reduce, reduce_scatter, all_slice and
// all_gather, with other kernels in between: the pass succeeds and prints the
// module unchanged.

// CHECK:       shard.grid @grid(shape = 2x1)
// CHECK-LABEL: mtrt.program @rank0 attributes {{{.*}}coords = array<i64: 0, 0>
// CHECK:         %[[G0:.+]] = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<8xf32>
// CHECK-NEXT:    %[[R0:.+]] = mtrt.buffer {kind = "gradient", offset = 64 : i64} : memref<8xf32>
// CHECK-NEXT:    %[[P0:.+]] = mtrt.buffer {kind = "activation", offset = 128 : i64} : memref<4xf32>
// CHECK-NEXT:    mtrt.kernel "all_reduce" ins(%[[G0]] : memref<8xf32>) outs(%[[R0]] : memref<8xf32>) {average = true, grid_axis = 0 : i64}
// CHECK-NEXT:    mtrt.kernel "gelu" ins(%[[R0]] : memref<8xf32>) outs(%[[G0]] : memref<8xf32>) {}
// CHECK-NEXT:    mtrt.kernel "reduce_scatter" ins(%[[G0]] : memref<8xf32>) outs(%[[P0]] : memref<4xf32>) {average = true, axis = 0 : i64, grid_axis = 0 : i64}
// CHECK-NEXT:    mtrt.kernel "all_slice" ins(%[[G0]] : memref<8xf32>) outs(%[[P0]] : memref<4xf32>) {axis = 0 : i64, grid_axis = 0 : i64}
// CHECK-NEXT:    mtrt.kernel "all_gather" ins(%[[P0]] : memref<4xf32>) outs(%[[G0]] : memref<8xf32>) {axis = 0 : i64, grid_axis = 0 : i64}
// CHECK-NEXT:  {{^  [}]$}}
// CHECK-LABEL: mtrt.program @rank1 attributes {{{.*}}coords = array<i64: 1, 0>
// CHECK-COUNT-3: mtrt.buffer
// CHECK-NEXT:    mtrt.kernel "all_reduce"
// CHECK-NEXT:    mtrt.kernel "gelu"
// CHECK-NEXT:    mtrt.kernel "reduce_scatter"
// CHECK-NEXT:    mtrt.kernel "all_slice"
// CHECK-NEXT:    mtrt.kernel "all_gather"
// CHECK-NEXT:  {{^  [}]$}}
module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 192 : i64, persistent_bytes = 0 : i64} {
    %g = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<8xf32>
    %r = mtrt.buffer {kind = "gradient", offset = 64 : i64} : memref<8xf32>
    %p = mtrt.buffer {kind = "activation", offset = 128 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%g : memref<8xf32>) outs(%r : memref<8xf32>) {average = true, grid_axis = 0 : i64}
    mtrt.kernel "gelu" ins(%r : memref<8xf32>) outs(%g : memref<8xf32>) {}
    mtrt.kernel "reduce_scatter" ins(%g : memref<8xf32>) outs(%p : memref<4xf32>) {average = true, axis = 0 : i64, grid_axis = 0 : i64}
    mtrt.kernel "all_slice" ins(%g : memref<8xf32>) outs(%p : memref<4xf32>) {axis = 0 : i64, grid_axis = 0 : i64}
    mtrt.kernel "all_gather" ins(%p : memref<4xf32>) outs(%g : memref<8xf32>) {axis = 0 : i64, grid_axis = 0 : i64}
  }
  mtrt.program @rank1 attributes {rank = 1 : i64, coords = array<i64: 1, 0>, arena_bytes = 192 : i64, persistent_bytes = 0 : i64} {
    %g = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<8xf32>
    %r = mtrt.buffer {kind = "gradient", offset = 64 : i64} : memref<8xf32>
    %p = mtrt.buffer {kind = "activation", offset = 128 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%g : memref<8xf32>) outs(%r : memref<8xf32>) {average = true, grid_axis = 0 : i64}
    mtrt.kernel "gelu" ins(%r : memref<8xf32>) outs(%g : memref<8xf32>) {}
    mtrt.kernel "reduce_scatter" ins(%g : memref<8xf32>) outs(%p : memref<4xf32>) {average = true, axis = 0 : i64, grid_axis = 0 : i64}
    mtrt.kernel "all_slice" ins(%g : memref<8xf32>) outs(%p : memref<4xf32>) {axis = 0 : i64, grid_axis = 0 : i64}
    mtrt.kernel "all_gather" ins(%p : memref<4xf32>) outs(%g : memref<8xf32>) {axis = 0 : i64, grid_axis = 0 : i64}
  }
}

// -----

// Only collectives are compared: the ranks may run different compute kernels
// (here gelu on one rank, add on the other) and different numbers of them.

// CHECK-LABEL: mtrt.program @rank0
// CHECK:         mtrt.kernel "gelu"
// CHECK-NEXT:    mtrt.kernel "all_reduce"
// CHECK-LABEL: mtrt.program @rank1
// CHECK:         mtrt.kernel "add"
// CHECK-NEXT:    mtrt.kernel "add"
// CHECK-NEXT:    mtrt.kernel "all_reduce"
module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "gelu" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {}
    mtrt.kernel "all_reduce" ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {average = false, grid_axis = 0 : i64}
  }
  mtrt.program @rank1 attributes {rank = 1 : i64, coords = array<i64: 1, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%a, %a : memref<4xf32>, memref<4xf32>) outs(%b : memref<4xf32>) {}
    mtrt.kernel "add" ins(%b, %b : memref<4xf32>, memref<4xf32>) outs(%b : memref<4xf32>) {}
    mtrt.kernel "all_reduce" ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {average = false, grid_axis = 0 : i64}
  }
}

// -----

// Collectives are compared per grid axis: on a 2x2 grid, @rank1 (0, 1) issues
// an all_reduce on axis 1 that @rank0 (0, 0), the first rank of its axis-1
// group, matches; the axis-0 collectives of @rank0 and @rank2 (1, 0) and of
// @rank1 and @rank3 (1, 1) are compared separately and match too, although
// every rank interleaves the two axes differently.

// CHECK-LABEL: mtrt.program @rank0
// CHECK-LABEL: mtrt.program @rank1
// CHECK-LABEL: mtrt.program @rank2
// CHECK-LABEL: mtrt.program @rank3
module {
  shard.grid @grid(shape = 2x2)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = false, grid_axis = 1 : i64}
    mtrt.kernel "all_reduce" ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, grid_axis = 0 : i64}
  }
  mtrt.program @rank1 attributes {rank = 1 : i64, coords = array<i64: 0, 1>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = false, grid_axis = 1 : i64}
    mtrt.kernel "all_reduce" ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, grid_axis = 0 : i64}
  }
  mtrt.program @rank2 attributes {rank = 2 : i64, coords = array<i64: 1, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, grid_axis = 0 : i64}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = false, grid_axis = 1 : i64}
  }
  mtrt.program @rank3 attributes {rank = 3 : i64, coords = array<i64: 1, 1>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, grid_axis = 0 : i64}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = false, grid_axis = 1 : i64}
  }
}

// -----

// Without a shard.grid there is nothing to check: programs without
// coordinates and with different collectives are left alone.

// CHECK-NOT:   shard.grid
// CHECK-LABEL: mtrt.program @rank0 attributes {arena_bytes = 128 : i64, persistent_bytes = 0 : i64, rank = 0 : i64}
// CHECK:         mtrt.kernel "all_reduce"
// CHECK-LABEL: mtrt.program @rank1 attributes {arena_bytes = 128 : i64, persistent_bytes = 0 : i64, rank = 1 : i64}
// CHECK:         mtrt.kernel "all_gather"
module {
  mtrt.program @rank0 attributes {rank = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = true, grid_axis = 0 : i64}
  }
  mtrt.program @rank1 attributes {rank = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<8xf32>
    mtrt.kernel "all_gather" ins(%a : memref<4xf32>) outs(%b : memref<8xf32>) {axis = 0 : i64, grid_axis = 0 : i64}
  }
}

// -----

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

// A different kernel at the same position: the error is at rank 1's
// command, the note at rank 0's.

module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = true, grid_axis = 0 : i64}
    // expected-note @below {{rank 0's collective #1 is here}}
    mtrt.kernel "all_reduce" ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, grid_axis = 0 : i64}
  }
  mtrt.program @negative_rank1 attributes {rank = 1 : i64, coords = array<i64: 1, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = true, grid_axis = 0 : i64}
    // expected-error @below {{'mtrt.kernel' op collective #1 of rank 1 (reduce_scatter on grid axis 0 of memref<4xf32> -> memref<4xf32> with {average = true, axis = 0 : i64, grid_axis = 0 : i64}) does not match collective #1 of rank 0 (all_reduce on grid axis 0 of memref<4xf32> -> memref<4xf32> with {average = true, grid_axis = 0 : i64}): the ranks would hang}}
    mtrt.kernel "reduce_scatter" ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, axis = 0 : i64, grid_axis = 0 : i64}
  }
}

// -----

// Same kernel and types but a different reduction (a sum on rank 1, an
// average on rank 0): the params differ. The message does not show params,
// so both sides read the same.

module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    // expected-note @below {{rank 0's collective #0 is here}}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = true, grid_axis = 0 : i64}
  }
  mtrt.program @negative_rank1 attributes {rank = 1 : i64, coords = array<i64: 1, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.kernel' op collective #0 of rank 1 (all_reduce on grid axis 0 of memref<4xf32> -> memref<4xf32> with {average = false, grid_axis = 0 : i64}) does not match collective #0 of rank 0 (all_reduce on grid axis 0 of memref<4xf32> -> memref<4xf32> with {average = true, grid_axis = 0 : i64}): the ranks would hang}}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = false, grid_axis = 0 : i64}
  }
}

// -----

// Same kernel, different tensor axis of an all_gather.

module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<2x2xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4x4xf32>
    // expected-note @below {{rank 0's collective #0 is here}}
    mtrt.kernel "all_gather" ins(%a : memref<2x2xf32>) outs(%b : memref<4x4xf32>) {axis = 0 : i64, grid_axis = 0 : i64}
  }
  mtrt.program @negative_rank1 attributes {rank = 1 : i64, coords = array<i64: 1, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<2x2xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4x4xf32>
    // expected-error @below {{'mtrt.kernel' op collective #0 of rank 1 (all_gather on grid axis 0 of memref<2x2xf32> -> memref<4x4xf32> with {axis = 1 : i64, grid_axis = 0 : i64}) does not match collective #0 of rank 0 (all_gather on grid axis 0 of memref<2x2xf32> -> memref<4x4xf32> with {axis = 0 : i64, grid_axis = 0 : i64}): the ranks would hang}}
    mtrt.kernel "all_gather" ins(%a : memref<2x2xf32>) outs(%b : memref<4x4xf32>) {axis = 1 : i64, grid_axis = 0 : i64}
  }
}

// -----

// Same kernel and params, different buffer types (rank 1 reduces 8 elements,
// rank 0 four).

module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    // expected-note @below {{rank 0's collective #0 is here}}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = true, grid_axis = 0 : i64}
  }
  mtrt.program @negative_rank1 attributes {rank = 1 : i64, coords = array<i64: 1, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<8xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<8xf32>
    // expected-error @below {{'mtrt.kernel' op collective #0 of rank 1 (all_reduce on grid axis 0 of memref<8xf32> -> memref<8xf32> with {average = true, grid_axis = 0 : i64}) does not match collective #0 of rank 0 (all_reduce on grid axis 0 of memref<4xf32> -> memref<4xf32> with {average = true, grid_axis = 0 : i64}): the ranks would hang}}
    mtrt.kernel "all_reduce" ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) {average = true, grid_axis = 0 : i64}
  }
}

// -----

// Same element count, different element type.

module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    // expected-note @below {{rank 0's collective #0 is here}}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = true, grid_axis = 0 : i64}
  }
  mtrt.program @negative_rank1 attributes {rank = 1 : i64, coords = array<i64: 1, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xbf16>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xbf16>
    // expected-error @below {{'mtrt.kernel' op collective #0 of rank 1 (all_reduce on grid axis 0 of memref<4xbf16> -> memref<4xbf16> with {average = true, grid_axis = 0 : i64}) does not match collective #0 of rank 0 (all_reduce on grid axis 0 of memref<4xf32> -> memref<4xf32> with {average = true, grid_axis = 0 : i64}): the ranks would hang}}
    mtrt.kernel "all_reduce" ins(%a : memref<4xbf16>) outs(%b : memref<4xbf16>) {average = true, grid_axis = 0 : i64}
  }
}

// -----

// Rank 1 issues one collective more than rank 0, the common prefix matching:
// the error is at rank 1's program and names both counts.

module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = true, grid_axis = 0 : i64}
  }
  // expected-error @below {{'mtrt.program' op rank 1 issues 2 collectives on grid axis 0 but rank 0 issues 1: the ranks would hang}}
  mtrt.program @negative_rank1 attributes {rank = 1 : i64, coords = array<i64: 1, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = true, grid_axis = 0 : i64}
    mtrt.kernel "all_reduce" ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, grid_axis = 0 : i64}
  }
}

// -----

// Rank 1 issues one collective fewer than rank 0.

module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = true, grid_axis = 0 : i64}
  }
  // expected-error @below {{'mtrt.program' op rank 1 issues 0 collectives on grid axis 0 but rank 0 issues 1: the ranks would hang}}
  mtrt.program @negative_rank1 attributes {rank = 1 : i64, coords = array<i64: 1, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.kernel "gelu" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {}
  }
}

// -----

// A mismatch on grid axis 1 of a 1x2 grid: ranks (0, 0) and (0, 1) form the
// axis-1 group, and the error names axis 1.

module {
  shard.grid @grid(shape = 1x2)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    // expected-note @below {{rank 0's collective #0 is here}}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {average = true, grid_axis = 1 : i64}
  }
  mtrt.program @negative_rank1 attributes {rank = 1 : i64, coords = array<i64: 0, 1>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<8xf32>
    // expected-error @below {{'mtrt.kernel' op collective #0 of rank 1 (all_gather on grid axis 1 of memref<4xf32> -> memref<8xf32> with {axis = 0 : i64, grid_axis = 1 : i64}) does not match collective #0 of rank 0 (all_reduce on grid axis 1 of memref<4xf32> -> memref<4xf32> with {average = true, grid_axis = 1 : i64}): the ranks would hang}}
    mtrt.kernel "all_gather" ins(%a : memref<4xf32>) outs(%b : memref<8xf32>) {axis = 0 : i64, grid_axis = 1 : i64}
  }
}

// -----

// On a device grid every program needs its coordinates.

module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
  // expected-error @below {{'mtrt.program' op has no coordinates on the 2-axis device grid}}
  mtrt.program @negative_no_coords attributes {rank = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
}

// -----

// Coordinates of the wrong length count as none.

module {
  shard.grid @grid(shape = 2x1)
  // expected-error @below {{'mtrt.program' op has no coordinates on the 2-axis device grid}}
  mtrt.program @negative_short_coords attributes {rank = 0 : i64, coords = array<i64: 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
}

// -----

// A coordinate outside the grid.

module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
  // expected-error @below {{'mtrt.program' op has coordinate 2 on grid axis 0, outside the grid's 2}}
  mtrt.program @negative_outside attributes {rank = 1 : i64, coords = array<i64: 2, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
}

// -----

// Two programs with the same coordinates.

module {
  shard.grid @grid(shape = 2x1)
  // expected-note @below {{the other rank is here}}
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
  // expected-error @below {{'mtrt.program' op has the same coordinates as rank 0}}
  mtrt.program @negative_same_coords attributes {rank = 1 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
}

// -----

// A rank of the grid has no program.

// expected-error @below {{mt-verify-collectives: the device grid has 2 ranks but the module holds 1 programs}}
module {
  shard.grid @grid(shape = 2x1)
  mtrt.program @rank0 attributes {rank = 0 : i64, coords = array<i64: 0, 0>, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
}
