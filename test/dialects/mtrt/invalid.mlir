// RUN: megatron-opt %s --split-input-file --verify-diagnostics

// Every verifier message of the mtrt ops, one per split, plus the parent and
// type constraints that ODS generates.

//===----------------------------------------------------------------------===//
// mtrt.program
//===----------------------------------------------------------------------===//

// The persistent prefix cannot be larger than the arena.

// expected-error @below {{'mtrt.program' op persistent_bytes 128 must be between 0 and arena_bytes 64}}
mtrt.program @negative_persistent_past_arena attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 128 : i64} {
}

// -----

// Nor negative. (Only the message's fixed part is checked: the value prints
// as an unsigned 64-bit number.)

// expected-error @below {{must be between 0 and arena_bytes 64}}
mtrt.program @negative_persistent_below_zero attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = -1 : i64} {
}

// -----

// An arena of at most 2^60 bytes, as the runtime's loader accepts
// (mt-lower-to-runtime plans within it); negative sizes are refused too.

// expected-error @below {{'mtrt.program' op arena_bytes must be between 0 and 2^60, got 1152921504606846977}}
mtrt.program @negative_arena_past_bound attributes {stage = 0 : i64, arena_bytes = 1152921504606846977 : i64, persistent_bytes = 0 : i64} {
}

// -----

// expected-error @below {{'mtrt.program' op arena_bytes must be between 0 and 2^60, got -64}}
mtrt.program @negative_arena_below_zero attributes {stage = 0 : i64, arena_bytes = -64 : i64, persistent_bytes = 0 : i64} {
}

// -----

// The arena size is required.

// expected-error @below {{'mtrt.program' op requires attribute 'arena_bytes'}}
mtrt.program @negative_no_arena attributes {stage = 0 : i64, persistent_bytes = 0 : i64} {
}

// -----

// A program is a symbol of a module, not nested in a function.

func.func @negative_program_in_function() {
  // expected-error @below {{'mtrt.program' op symbol's parent must have the SymbolTable trait}}
  mtrt.program @rank0 attributes {stage = 0 : i64, arena_bytes = 0 : i64, persistent_bytes = 0 : i64} {
  }
  return
}

// -----

// Two programs cannot share a name.

// expected-note @below {{see existing symbol definition here}}
mtrt.program @negative_same_name attributes {stage = 0 : i64, arena_bytes = 0 : i64, persistent_bytes = 0 : i64} {
}
// expected-error @below {{redefinition of symbol named 'negative_same_name'}}
mtrt.program @negative_same_name attributes {stage = 1 : i64, arena_bytes = 0 : i64, persistent_bytes = 0 : i64} {
}

// -----

//===----------------------------------------------------------------------===//
// mtrt.buffer
//===----------------------------------------------------------------------===//

// A buffer must lie inside its program's arena.

mtrt.program @negative_buffer_past_arena attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op bytes [32, 32 + 64) lie outside the arena of 64 bytes}}
  %x = mtrt.buffer {offset = 32 : i64, kind = "activation"} : memref<4x4xf32>
}

// -----

// One byte past the end is outside too.

mtrt.program @negative_buffer_one_byte_past attributes {stage = 0 : i64, arena_bytes = 63 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op bytes [0, 0 + 64) lie outside the arena of 63 bytes}}
  %x = mtrt.buffer {offset = 0 : i64, kind = "param", name = "w"} : memref<16xf32>
}

// -----

// A negative offset is outside the arena. (Only the message's fixed part is
// checked: the offset prints as an unsigned 64-bit number.)

mtrt.program @negative_buffer_offset attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{lie outside the arena of 64 bytes}}
  %x = mtrt.buffer {offset = -64 : i64, kind = "activation"} : memref<4xf32>
}

// -----

// Buffers exist only inside a program, where the arena is.

func.func @negative_buffer_outside_program() {
  // expected-error @below {{'mtrt.buffer' op expects parent op 'mtrt.program'}}
  %x = mtrt.buffer {offset = 0 : i64, kind = "activation"} : memref<4xf32>
  return
}

// -----

// A buffer has a static shape.

mtrt.program @negative_dynamic_buffer attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op result #0 must be statically shaped memref of 32-bit float or 16-bit float or bfloat16 type or 32-bit signless integer or 64-bit signless integer values, but got 'memref<?xf32>'}}
  %x = mtrt.buffer {offset = 0 : i64, kind = "activation"} : memref<?xf32>
}

// -----

// A buffer says what it holds.

mtrt.program @negative_buffer_without_kind attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op requires attribute 'kind'}}
  %x = mtrt.buffer {offset = 0 : i64} : memref<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mtrt.kernel, mtrt.fill, mtrt.output
//===----------------------------------------------------------------------===//

// Commands exist only inside a program.

func.func @negative_kernel_outside_program(%x: memref<4xf32>) {
  // expected-error @below {{'mtrt.kernel' op expects parent op 'mtrt.program'}}
  mtrt.kernel "gelu" ins(%x : memref<4xf32>) {}
  return
}

// -----

func.func @negative_fill_outside_program(%x: memref<4xf32>) {
  // expected-error @below {{'mtrt.fill' op expects parent op 'mtrt.program'}}
  mtrt.fill %x, 1.0 : memref<4xf32>
  return
}

// -----

func.func @negative_output_outside_program(%x: memref<f32>) {
  // expected-error @below {{'mtrt.output' op expects parent op 'mtrt.program'}}
  mtrt.output "loss", %x : memref<f32>
  return
}

// -----

// A padded vocabulary's true rows lie within the (full) table.

mtrt.program @valid_rows_past_the_table attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op valid_rows 5 must be between 1 and the tensor's 4 rows}}
  %x = mtrt.buffer {offset = 0 : i64, kind = "param", name = "wte.weight", valid_rows = 5 : i64} : memref<4x4xf32>
}

// -----

// Nor fewer than one (the attribute is read signed, as the artifact has it).

mtrt.program @valid_rows_negative attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op valid_rows -1 must be between 1 and the tensor's 4 rows}}
  %x = mtrt.buffer {offset = 0 : i64, kind = "param", name = "wte.weight", valid_rows = -1 : i64} : memref<4x4xf32>
}

// -----

// Expert parallelism: a buffer holding one expert per rank of a group names
// them all, the first its own name, beside the axis.

mtrt.program @expert_names_without_axis attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op expert_names and expert_axis go together}}
  %x = mtrt.buffer {offset = 0 : i64, kind = "param", name = "e0", expert_names = ["e0", "e1"]} : memref<4x4xf32>
}

// -----

mtrt.program @expert_names_not_first attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op expert_names must start with the buffer's name}}
  %x = mtrt.buffer {offset = 0 : i64, kind = "param", name = "e0", expert_axis = 0 : i64, expert_names = ["e1", "e0"]} : memref<4x4xf32>
}

// -----

// A parameter's rows in a published fused tensor (Phi-3's qkv_proj): a
// tensor's name and a row that is not negative, on a param buffer.

mtrt.program @fused_in_negative_row attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op fused_in must be {tensor = "name", row = R} with a non-negative row, on a param buffer with rows, got {row = -2 : i64, tensor = "qkv"} on a 'param' buffer}}
  %x = mtrt.buffer {offset = 0 : i64, kind = "param", name = "k", fused_in = {tensor = "qkv", row = -2 : i64}} : memref<4x4xf32>
}

// -----

mtrt.program @fused_in_not_param attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op fused_in must be {tensor = "name", row = R} with a non-negative row, on a param buffer with rows, got {row = 0 : i64, tensor = "qkv"} on a 'exp_avg' buffer}}
  %x = mtrt.buffer {offset = 0 : i64, kind = "exp_avg", name = "k", fused_in = {tensor = "qkv", row = 0 : i64}} : memref<4x4xf32>
}

// -----

mtrt.program @fused_in_no_tensor attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  // expected-error @below {{'mtrt.buffer' op fused_in must be {tensor = "name", row = R} with a non-negative row, on a param buffer with rows, got {row = 0 : i64} on a 'param' buffer}}
  %x = mtrt.buffer {offset = 0 : i64, kind = "param", name = "k", fused_in = {row = 0 : i64}} : memref<4x4xf32>
}
