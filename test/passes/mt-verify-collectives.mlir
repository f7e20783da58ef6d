// RUN: megatron-opt %s --mt-verify-collectives --split-input-file --verify-diagnostics | FileCheck %s

// mt-verify-collectives checks, before anything runs, that the programs'
// communication cannot hang. Programs are SPMD: the ranks of one pipeline
// stage share one program, so collectives within a stage (over dp or tp)
// match by construction; what remains is that every collective names an axis
// of the grid and, on a pipeline (a pp x dp x tp grid with one program per
// stage), that the stages' sends, receives and pipeline-axis collectives
// meet: the pass simulates the stages, a send never waiting, a receive
// waiting for the send of its tag, a pipeline-axis collective waiting for
// every stage. The IR is never changed.
//
// The pipeline modules below have a 2x1x1 grid: stages @stage0 and @stage1
// of one rank each.

//===----------------------------------------------------------------------===//
// Schedules that complete
//===----------------------------------------------------------------------===//

// A forward and backward exchange: stage 0 sends its activation (tag 0) and
// waits for the gradient (tag 1); stage 1 receives, computes and sends the
// gradient back. Both then all-reduce a tied weight's gradient over the
// pipeline axis (grid axis 0), and stage 1 alone all-reduces over tp (grid
// axis 2), which stays within its stage. The pass succeeds and prints the
// module unchanged.

// CHECK:       shard.grid @grid(shape = 2x1x1)
// CHECK-LABEL: mtrt.program @stage0 attributes {arena_bytes = 128 : i64, persistent_bytes = 0 : i64, stage = 0 : i64}
// CHECK-NEXT:    %[[A0:.+]] = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
// CHECK-NEXT:    %[[G0:.+]] = mtrt.buffer {kind = "gradient", offset = 64 : i64} : memref<4xf32>
// CHECK-NEXT:    mtrt.send %[[A0]] to 1 {microbatch = 0 : i64, tag = 0 : i64} : memref<4xf32>
// CHECK-NEXT:    mtrt.recv %[[G0]] from 1 {microbatch = 0 : i64, tag = 1 : i64} : memref<4xf32>
// CHECK-NEXT:    mtrt.kernel "all_reduce" ins(%[[G0]] : memref<4xf32>) outs(%[[G0]] : memref<4xf32>) {average = false, grid_axis = 0 : i64}
// CHECK-NEXT:  {{^  [}]$}}
// CHECK-LABEL: mtrt.program @stage1 attributes {arena_bytes = 128 : i64, persistent_bytes = 0 : i64, stage = 1 : i64}
// CHECK-COUNT-2: mtrt.buffer
// CHECK-NEXT:    mtrt.recv
// CHECK-NEXT:    mtrt.kernel "gelu"
// CHECK-NEXT:    mtrt.kernel "all_reduce" {{.*}} {average = false, grid_axis = 2 : i64}
// CHECK-NEXT:    mtrt.send
// CHECK-NEXT:    mtrt.kernel "all_reduce" {{.*}} {average = false, grid_axis = 0 : i64}
// CHECK-NEXT:  {{^  [}]$}}
module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %g = mtrt.buffer {kind = "gradient", offset = 64 : i64} : memref<4xf32>
    mtrt.send %a to 1 {tag = 0 : i64, microbatch = 0 : i64} : memref<4xf32>
    mtrt.recv %g from 1 {tag = 1 : i64, microbatch = 0 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%g : memref<4xf32>) outs(%g : memref<4xf32>) {grid_axis = 0 : i64, average = false}
  }
  mtrt.program @stage1 attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %g = mtrt.buffer {kind = "gradient", offset = 64 : i64} : memref<4xf32>
    mtrt.recv %a from 0 {tag = 0 : i64, microbatch = 0 : i64} : memref<4xf32>
    mtrt.kernel "gelu" ins(%a : memref<4xf32>) outs(%g : memref<4xf32>) {}
    mtrt.kernel "all_reduce" ins(%g : memref<4xf32>) outs(%g : memref<4xf32>) {grid_axis = 2 : i64, average = false}
    mtrt.send %g to 0 {tag = 1 : i64, microbatch = 0 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%g : memref<4xf32>) outs(%g : memref<4xf32>) {grid_axis = 0 : i64, average = false}
  }
}

// -----

// Sends do not wait: both stages may send before they receive (here two
// microbatches in flight from stage 0, tags 0 and 1, received in the order
// they were sent, as NCCL needs: see @negative_out_of_order), and a tag may
// be reused once its transfer is received.

// CHECK-LABEL: mtrt.program @stage0
// CHECK-LABEL: mtrt.program @stage1
module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.send %a to 1 {tag = 0 : i64} : memref<4xf32>
    mtrt.send %b to 1 {tag = 1 : i64} : memref<4xf32>
    mtrt.recv %a from 1 {tag = 2 : i64} : memref<4xf32>
    mtrt.send %a to 1 {tag = 0 : i64} : memref<4xf32>
  }
  mtrt.program @stage1 attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    mtrt.send %a to 0 {tag = 2 : i64} : memref<4xf32>
    mtrt.recv %a from 0 {tag = 0 : i64} : memref<4xf32>
    mtrt.recv %b from 0 {tag = 1 : i64} : memref<4xf32>
    mtrt.recv %a from 0 {tag = 0 : i64} : memref<4xf32>
  }
}

// -----

// Without pipelining one program serves every rank of a dp x tp grid: its
// collectives over either axis are issued by every rank alike, so there is
// nothing to compare.

// CHECK-LABEL: mtrt.program @stage0
// CHECK:         mtrt.kernel "all_reduce" {{.*}} {average = true, grid_axis = 0 : i64}
// CHECK-NEXT:    mtrt.kernel "all_gather" {{.*}} {axis = 0 : i64, grid_axis = 1 : i64}
module {
  shard.grid @grid(shape = 2x2)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<8xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, grid_axis = 0 : i64}
    mtrt.kernel "all_gather" ins(%a : memref<4xf32>) outs(%b : memref<8xf32>) {axis = 0 : i64, grid_axis = 1 : i64}
  }
}

// -----

// Without a shard.grid there is nothing to check, not even the axis a
// collective names.

// CHECK-NOT:   shard.grid
// CHECK-LABEL: mtrt.program @stage0
// CHECK:         mtrt.kernel "all_reduce" {{.*}} {average = true, grid_axis = 5 : i64}
module {
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, grid_axis = 5 : i64}
  }
}

// -----

//===----------------------------------------------------------------------===//
// Errors: collectives on axes the grid does not have
//===----------------------------------------------------------------------===//

// A 2x2 grid has axes 0 and 1.

module {
  shard.grid @grid(shape = 2x2)
  mtrt.program @negative_axis_past_grid attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, grid_axis = 1 : i64}
    // expected-error @below {{'mtrt.kernel' op runs on grid axis 2, not an axis of the 2-axis grid}}
    mtrt.kernel "reduce_scatter" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {average = true, axis = 0 : i64, grid_axis = 2 : i64}
  }
}

// -----

// Nor a negative axis, on a pipeline grid.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
  mtrt.program @negative_axis_below_grid attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.kernel' op runs on grid axis -1, not an axis of the 3-axis grid}}
    mtrt.kernel "all_gather" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {axis = 0 : i64, grid_axis = -1 : i64}
  }
}

// -----

//===----------------------------------------------------------------------===//
// Errors: transfers between stages
//===----------------------------------------------------------------------===//

// A receive whose buffer differs from the sent one (8 floats received, 4
// sent): the error is at the receive, the note at the send.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    // expected-note @below {{stage 0's send is here}}
    mtrt.send %a to 1 {tag = 0 : i64, microbatch = 1 : i64} : memref<4xf32>
  }
  mtrt.program @negative_type_mismatch attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<8xf32>
    // expected-error @below {{'mtrt.recv' op stage 1's receive from stage 0 (tag 0, microbatch 1) of memref<8xf32> does not match stage 0's send to stage 1 (tag 0, microbatch 1) of memref<4xf32>}}
    mtrt.recv %a from 0 {tag = 0 : i64, microbatch = 1 : i64} : memref<8xf32>
  }
}

// -----

// Same element count, different element type.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    // expected-note @below {{stage 0's send is here}}
    mtrt.send %a to 1 {tag = 0 : i64} : memref<4xf32>
  }
  mtrt.program @negative_dtype_mismatch attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xbf16>
    // expected-error @below {{'mtrt.recv' op stage 1's receive from stage 0 (tag 0) of memref<4xbf16> does not match stage 0's send to stage 1 (tag 0) of memref<4xf32>}}
    mtrt.recv %a from 0 {tag = 0 : i64} : memref<4xbf16>
  }
}

// -----

// A send no stage receives.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @negative_unreceived attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    mtrt.send %a to 1 {tag = 0 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.send' op stage 0's send to stage 1 (tag 7) of memref<4xf32> is never received}}
    mtrt.send %a to 1 {tag = 7 : i64} : memref<4xf32>
  }
  mtrt.program @stage1 attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    mtrt.recv %a from 0 {tag = 0 : i64} : memref<4xf32>
  }
}

// -----

// Both stages receive before they send: neither receive can complete. The
// error is at the first waiting stage, a note at the other.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @negative_deadlock attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %g = mtrt.buffer {kind = "gradient", offset = 64 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.recv' op the pipeline schedule deadlocks: stage 0 waits here for its receive from stage 1 (tag 1) of memref<4xf32>}}
    mtrt.recv %g from 1 {tag = 1 : i64} : memref<4xf32>
    mtrt.send %a to 1 {tag = 0 : i64} : memref<4xf32>
  }
  mtrt.program @stage1 attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %g = mtrt.buffer {kind = "gradient", offset = 64 : i64} : memref<4xf32>
    // expected-note @below {{while stage 1 waits at its receive from stage 0 (tag 0) of memref<4xf32>}}
    mtrt.recv %a from 0 {tag = 0 : i64} : memref<4xf32>
    mtrt.send %g to 0 {tag = 1 : i64} : memref<4xf32>
  }
}

// -----

// A deadlock through a pipeline-axis collective: stage 0 enters it before
// sending what stage 1 waits for, and stage 1 reaches it only after.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @negative_collective_deadlock attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.kernel' op the pipeline schedule deadlocks: stage 0 waits here}}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {grid_axis = 0 : i64, average = false}
    mtrt.send %a to 1 {tag = 0 : i64} : memref<4xf32>
  }
  mtrt.program @stage1 attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    // expected-note @below {{while stage 1 waits at its receive from stage 0 (tag 0) of memref<4xf32>}}
    mtrt.recv %a from 0 {tag = 0 : i64} : memref<4xf32>
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {grid_axis = 0 : i64, average = false}
  }
}

// -----

// A stage sends the same tag twice to one peer before it is received: the
// receive could take either.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @negative_same_tag attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    // expected-note @below {{the first send is here}}
    mtrt.send %a to 1 {tag = 4 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.send' op stage 0 sends tag 4 to stage 1 twice}}
    mtrt.send %a to 1 {tag = 4 : i64} : memref<4xf32>
  }
  mtrt.program @stage1 attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    mtrt.recv %a from 0 {tag = 4 : i64} : memref<4xf32>
    mtrt.recv %a from 0 {tag = 4 : i64} : memref<4xf32>
  }
}

// -----

// A transfer names another stage of the pipeline: not its own stage.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @negative_self_send attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.send' op of stage 0 names peer stage 0, not another stage of the 2-stage pipeline}}
    mtrt.send %a to 0 {tag = 0 : i64} : memref<4xf32>
  }
  mtrt.program @stage1 attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
}

// -----

// Nor one past the last stage.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
  mtrt.program @negative_peer_past_pipeline attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.recv' op of stage 1 names peer stage 2, not another stage of the 2-stage pipeline}}
    mtrt.recv %a from 2 {tag = 0 : i64} : memref<4xf32>
  }
}

// -----

//===----------------------------------------------------------------------===//
// Errors: pipeline-axis collectives
//===----------------------------------------------------------------------===//

// Every stage's rank is in the group of a pipeline-axis collective: they
// must agree on the types (here 8 floats on stage 1, 4 on stage 0). The
// error is at stage 1's collective, the note at stage 0's.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "gradient", offset = 0 : i64} : memref<4xf32>
    // expected-note @below {{stage 0's collective is here}}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {grid_axis = 0 : i64, average = false}
  }
  mtrt.program @negative_collective_types attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "gradient", offset = 0 : i64} : memref<8xf32>
    // expected-error @below {{'mtrt.kernel' op stage 1's collective (all_reduce on grid axis 0 of memref<8xf32> -> memref<8xf32> with {average = false, grid_axis = 0 : i64}) does not match stage 0's (all_reduce on grid axis 0 of memref<4xf32> -> memref<4xf32> with {average = false, grid_axis = 0 : i64}): the ranks would hang}}
    mtrt.kernel "all_reduce" ins(%a : memref<8xf32>) outs(%a : memref<8xf32>) {grid_axis = 0 : i64, average = false}
  }
}

// -----

// ... and on the kernel and its parameters (a sum on stage 1, an average on
// stage 0).

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "gradient", offset = 0 : i64} : memref<4xf32>
    // expected-note @below {{stage 0's collective is here}}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {grid_axis = 0 : i64, average = true}
  }
  mtrt.program @negative_collective_params attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "gradient", offset = 0 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.kernel' op stage 1's collective (all_reduce on grid axis 0 of memref<4xf32> -> memref<4xf32> with {average = false, grid_axis = 0 : i64}) does not match stage 0's (all_reduce on grid axis 0 of memref<4xf32> -> memref<4xf32> with {average = true, grid_axis = 0 : i64}): the ranks would hang}}
    mtrt.kernel "all_reduce" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {grid_axis = 0 : i64, average = false}
  }
}

// -----

//===----------------------------------------------------------------------===//
// Errors: programs and stages
//===----------------------------------------------------------------------===//

// A program's stage is a coordinate on the pipeline axis.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
  // expected-error @below {{'mtrt.program' op is stage 2 of a 2-stage pipeline}}
  mtrt.program @negative_stage_past_pipeline attributes {stage = 2 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
}

// -----

// Every stage of the pipeline needs its program.

// expected-error @below {{mt-verify-collectives: no program for pipeline stage 2}}
module @negative_missing_stage {
  shard.grid @grid(shape = 3x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
  mtrt.program @stage1 attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
}

// -----

// Receives in another order than the sends (tags 0 then 1 sent, 1 received
// first): MPI would match them by tag, but NCCL matches each direction's
// transfers in order, so stage 1 would take the activation of tag 0 into
// its buffer for tag 1. The error names both transfers.

module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    // expected-note @below {{stage 0's earlier send is here}}
    mtrt.send %a to 1 {tag = 0 : i64, microbatch = 0 : i64} : memref<4xf32>
    mtrt.send %b to 1 {tag = 1 : i64, microbatch = 1 : i64} : memref<4xf32>
  }
  mtrt.program @negative_out_of_order attributes {stage = 1 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    %b = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.recv' op stage 1's receive from stage 0 (tag 1, microbatch 1) of memref<4xf32> is not the next transfer stage 0 sends it, its send to stage 1 (tag 0, microbatch 0) of memref<4xf32>: the receives must come in the order of the sends (NCCL matches each direction's transfers in order)}}
    mtrt.recv %b from 0 {tag = 1 : i64, microbatch = 1 : i64} : memref<4xf32>
    mtrt.recv %a from 0 {tag = 0 : i64, microbatch = 0 : i64} : memref<4xf32>
  }
}

// -----

// One program per stage: a second one for stage 0 is refused.

module {
  shard.grid @grid(shape = 2x1x1)
  // expected-note @below {{the first one is here}}
  mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
  // expected-error @below {{'mtrt.program' op is a second program for stage 0}}
  mtrt.program @negative_second_stage0 attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
  }
}

// -----

// A transfer between stages on a grid without a pipeline axis (dp x tp).

module {
  shard.grid @grid(shape = 2x2)
  mtrt.program @negative_transfer_without_pipeline attributes {stage = 0 : i64, arena_bytes = 128 : i64, persistent_bytes = 0 : i64} {
    %a = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<4xf32>
    // expected-error @below {{'mtrt.send' op is a pipeline transfer on a grid without a pipeline axis}}
    mtrt.send %a to 1 {tag = 0 : i64} : memref<4xf32>
  }
}

// -----

// A module before mt-lower-to-runtime has no programs to simulate: it
// passed, as if proven.

// expected-error @below {{mt-verify-collectives checks the programs of mt-lower-to-runtime, and the module has none: run it after --mt-lower-to-runtime (--mt-train-pipeline runs it last)}}
module @negative_not_lowered {
  func.func @step(%x: tensor<4xf32> {mt.param = "x"}) -> tensor<4xf32> {
    %y = mt.gelu %x : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
