// RUN: megatron-opt %s --split-input-file | megatron-opt --split-input-file | FileCheck %s
// RUN: megatron-opt %s --split-input-file --mlir-print-op-generic | megatron-opt --split-input-file | FileCheck %s

// Every mtrt op prints in its custom form and parses back unchanged, from
// the custom form and from the generic form.

// mtrt.program: a symbol with its rank, arena and persistent sizes; an empty
// body needs no terminator.

// CHECK-LABEL: mtrt.program @empty attributes {arena_bytes = 0 : i64, persistent_bytes = 0 : i64, stage = 0 : i64} {
// CHECK-NEXT:  }
mtrt.program @empty attributes {stage = 0 : i64, arena_bytes = 0 : i64, persistent_bytes = 0 : i64} {
}

// -----

// mtrt.buffer: offset and kind, an optional name, an optional alias flag;
// any statically shaped memref, scalars included.

// CHECK-LABEL: mtrt.program @buffers attributes {arena_bytes = 256 : i64, persistent_bytes = 128 : i64, stage = 3 : i64}
// CHECK-NEXT:    %{{.+}} = mtrt.buffer {kind = "param", name = "h.0.attn.c_attn.weight", offset = 0 : i64} : memref<4x6xf32>
// CHECK-NEXT:    %{{.+}} = mtrt.buffer {kind = "input", name = "tokens", offset = 96 : i64} : memref<2x4xi32>
// CHECK-NEXT:    %{{.+}} = mtrt.buffer {kind = "activation", offset = 128 : i64} : memref<2x8xbf16>
// CHECK-NEXT:    %{{.+}} = mtrt.buffer {alias, kind = "activation", offset = 128 : i64} : memref<16xbf16>
// CHECK-NEXT:    %{{.+}} = mtrt.buffer {kind = "constant", offset = 192 : i64} : memref<f32>
mtrt.program @buffers attributes {stage = 3 : i64, arena_bytes = 256 : i64, persistent_bytes = 128 : i64} {
  %w = mtrt.buffer {offset = 0 : i64, kind = "param", name = "h.0.attn.c_attn.weight"} : memref<4x6xf32>
  %ids = mtrt.buffer {offset = 96 : i64, kind = "input", name = "tokens"} : memref<2x4xi32>
  %x = mtrt.buffer {offset = 128 : i64, kind = "activation"} : memref<2x8xbf16>
  %v = mtrt.buffer {offset = 128 : i64, kind = "activation", alias} : memref<16xbf16>
  %c = mtrt.buffer {offset = 192 : i64, kind = "constant"} : memref<f32>
}

// -----

// A buffer may end exactly at the end of the arena.

// CHECK-LABEL: mtrt.program @buffer_at_end
// CHECK-NEXT:    mtrt.buffer {kind = "activation", offset = 48 : i64} : memref<4xf32>
mtrt.program @buffer_at_end attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 0 : i64} {
  %x = mtrt.buffer {offset = 48 : i64, kind = "activation"} : memref<4xf32>
}

// -----

// mtrt.kernel: the kernel name, optional ins and outs, and the params
// dictionary (printed even when empty).

// CHECK-LABEL: mtrt.program @kernels
// CHECK:         %[[X:.+]] = mtrt.buffer {kind = "activation", offset = 0 : i64} : memref<2x4xf32>
// CHECK-NEXT:    %[[W:.+]] = mtrt.buffer {kind = "param", name = "w", offset = 64 : i64} : memref<4xf32>
// CHECK-NEXT:    %[[Y:.+]] = mtrt.buffer {kind = "activation", offset = 128 : i64} : memref<2x4xf32>
// CHECK-NEXT:    mtrt.kernel "bias_add" ins(%[[X]], %[[W]] : memref<2x4xf32>, memref<4xf32>) outs(%[[Y]] : memref<2x4xf32>) {mt.layer = 1 : i64}
// CHECK-NEXT:    mtrt.kernel "gelu" ins(%[[X]] : memref<2x4xf32>) outs(%[[Y]] : memref<2x4xf32>) {}
// CHECK-NEXT:    mtrt.kernel "zero" outs(%[[Y]] : memref<2x4xf32>) {}
// CHECK-NEXT:    mtrt.kernel "sink" ins(%[[Y]] : memref<2x4xf32>) {}
// CHECK-NEXT:    mtrt.kernel "barrier" {}
// CHECK-NEXT:    mtrt.kernel "matmul" ins(%[[X]], %[[X]] : memref<2x4xf32>, memref<2x4xf32>) outs(%[[Y]] : memref<2x4xf32>) {rng_stream = 2 : i64, scale = 5.000000e-01 : f64, transpose_b}
mtrt.program @kernels attributes {stage = 0 : i64, arena_bytes = 160 : i64, persistent_bytes = 128 : i64} {
  %x = mtrt.buffer {offset = 0 : i64, kind = "activation"} : memref<2x4xf32>
  %w = mtrt.buffer {offset = 64 : i64, kind = "param", name = "w"} : memref<4xf32>
  %y = mtrt.buffer {offset = 128 : i64, kind = "activation"} : memref<2x4xf32>
  mtrt.kernel "bias_add" ins(%x, %w : memref<2x4xf32>, memref<4xf32>) outs(%y : memref<2x4xf32>) {mt.layer = 1 : i64}
  mtrt.kernel "gelu" ins(%x : memref<2x4xf32>) outs(%y : memref<2x4xf32>) {}
  mtrt.kernel "zero" outs(%y : memref<2x4xf32>) {}
  mtrt.kernel "sink" ins(%y : memref<2x4xf32>) {}
  mtrt.kernel "barrier" {}
  mtrt.kernel "matmul" ins(%x, %x : memref<2x4xf32>, memref<2x4xf32>) outs(%y : memref<2x4xf32>) {transpose_b, rng_stream = 2 : i64, scale = 0.5 : f64}
}

// -----

// mtrt.fill and mtrt.output.

// CHECK-LABEL: mtrt.program @fill_and_output
// CHECK-NEXT:    %[[LOSS:.+]] = mtrt.buffer {kind = "constant", offset = 0 : i64} : memref<f32>
// CHECK-NEXT:    mtrt.fill %[[LOSS]], 1.000000e+00 : memref<f32>
// CHECK-NEXT:    %[[NORM:.+]] = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<f32>
// CHECK-NEXT:    mtrt.fill %[[NORM]], -2.500000e-01 : memref<f32>
// CHECK-NEXT:    mtrt.output "loss", %[[LOSS]] : memref<f32>
// CHECK-NEXT:    mtrt.output "grad_norm", %[[NORM]] : memref<f32>
mtrt.program @fill_and_output attributes {stage = 0 : i64, arena_bytes = 68 : i64, persistent_bytes = 0 : i64} {
  %loss = mtrt.buffer {offset = 0 : i64, kind = "constant"} : memref<f32>
  mtrt.fill %loss, 1.0 : memref<f32>
  %norm = mtrt.buffer {offset = 64 : i64, kind = "activation"} : memref<f32>
  mtrt.fill %norm, -0.25 : memref<f32>
  mtrt.output "loss", %loss : memref<f32>
  mtrt.output "grad_norm", %norm : memref<f32>
}

// -----

// A module holds one program per rank.

// CHECK-LABEL: mtrt.program @rank0 attributes {arena_bytes = 64 : i64, persistent_bytes = 64 : i64, stage = 0 : i64}
// CHECK:       mtrt.program @rank1 attributes {arena_bytes = 64 : i64, persistent_bytes = 64 : i64, stage = 1 : i64}
mtrt.program @rank0 attributes {stage = 0 : i64, arena_bytes = 64 : i64, persistent_bytes = 64 : i64} {
  %w = mtrt.buffer {offset = 0 : i64, kind = "param", name = "w"} : memref<4xf32>
}
mtrt.program @rank1 attributes {stage = 1 : i64, arena_bytes = 64 : i64, persistent_bytes = 64 : i64} {
  %w = mtrt.buffer {offset = 0 : i64, kind = "param", name = "w"} : memref<4xf32>
}
