//===- MTRTOps.td - The runtime-program dialect -------------*- tablegen -*-===//
//
// `mtrt`: what the thin runtime executes. A program per rank is a straight
// line of kernel launches over buffers at static offsets in one arena.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_DIALECTS_MTRT_IR_MTRTOPS_TD
#define MEGATRON_DIALECTS_MTRT_IR_MTRTOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

def MTRT_Dialect : Dialect {
  let name = "mtrt";
  let cppNamespace = "::mlir::mtrt";
  let summary = "Straight-line per-rank programs over a planned arena.";
  let description = [{
    The lowest layer before the artifact. Every value is a `memref` view of
    one arena at a static byte offset chosen by the memory planner, so the
    arena size of a program is its exact peak memory. Kernels are named by
    the `mt` op they implement; the runtime binds each name to a host kernel
    (CPU backend) or a CUDA kernel, BLAS or cuBLAS call.
  }];
}

class MTRT_Op<string mnemonic, list<Trait> traits = []>
    : Op<MTRT_Dialect, mnemonic, traits>;

/// What an arena buffer can hold: the element types the runtime binds.
def MTRT_Buffer : StaticShapeMemRefOf<[F32, F16, BF16, I32, I64]>;

def MTRT_ProgramOp : MTRT_Op<"program",
    [Symbol, SingleBlock, NoTerminator, IsolatedFromAbove]> {
  let summary = "The program one rank executes per training step.";
  let description = [{
    Holds the rank's buffers and commands in execution order. On a device
    grid (`shard.grid` in the module), `coords` are the rank's coordinates.
    `flops_per_token` is the model's training FLOPs per token (6N plus the
    attention term, see `mt-print-model-summary`), for throughput reports.
    `arena_bytes` is the size of the arena: the planned peak memory.
    `persistent_bytes` is its prefix holding what lives across steps
    (parameters, optimizer state, inputs); the rest is reused by
    activations and gradients as their lifetimes allow.

    ```mlir
    mtrt.program @rank0 attributes {rank = 0 : i64, arena_bytes = 4096 : i64,
                                    persistent_bytes = 1024 : i64} {
      %w = mtrt.buffer {offset = 0 : i64, kind = "param", name = "w"} : memref<8x8xf32>
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$rank,
                       I64Attr:$arena_bytes, I64Attr:$persistent_bytes,
                       OptionalAttr<DenseI64ArrayAttr>:$coords,
                       OptionalAttr<I64Attr>:$flops_per_token);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def MTRT_BufferOp : MTRT_Op<"buffer", [HasParent<"ProgramOp">]> {
  let summary = "A view of the arena at a static byte offset.";
  let description = [{
    `kind` says what the buffer holds, for binding and for the memory
    report: `param`, `exp_avg`, `exp_avg_sq` (named by `name`, the
    parameter), `input` (named by its role: `tokens`, `lr`, ...),
    `activation`, `gradient` or `constant`. Two buffers may share bytes
    when their lifetimes do not overlap, or when one is a reshaped view of
    the other (`alias`). A ZeRO-sharded parameter or state holds piece
    `shard_index` of `shard_count` equal contiguous pieces of the flattened
    tensor of `full_shape`; a tensor-parallel split (`shard_dim` set) holds
    piece `shard_index` of `shard_count` of dimension `shard_dim` within each
    of its `shard_chunks` equal chunks, and with `piece_count` only piece
    `piece_index` of that split, flattened (ZeRO on tensor-parallel ranks).
    `valid_rows` marks a vocabulary padded to a multiple of tp: rows of the
    full tensor from `valid_rows` on are padding.

    ```mlir
    %x = mtrt.buffer {offset = 4096 : i64, kind = "activation"} : memref<2x8x16xf32>
    ```
  }];
  let arguments = (ins I64Attr:$offset, StrAttr:$kind,
                       OptionalAttr<StrAttr>:$name, UnitAttr:$alias,
                       OptionalAttr<DenseI64ArrayAttr>:$full_shape,
                       OptionalAttr<I64Attr>:$shard_index,
                       OptionalAttr<I64Attr>:$shard_count,
                       OptionalAttr<I64Attr>:$shard_dim,
                       OptionalAttr<I64Attr>:$shard_chunks,
                       OptionalAttr<I64Attr>:$piece_index,
                       OptionalAttr<I64Attr>:$piece_count,
                       OptionalAttr<I64Attr>:$valid_rows);
  let results = (outs MTRT_Buffer:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def MTRT_KernelOp : MTRT_Op<"kernel",
    [HasParent<"ProgramOp">, AttrSizedOperandSegments]> {
  let summary = "Launches the kernel of an mt op on arena buffers.";
  let description = [{
    Reads `ins` and writes `outs`. `name` is the `mt` op's name without the
    dialect prefix; `attrs` holds the op's attributes (epsilon, dropout
    probability and stream, transposes, ...). Sizes come from the buffers'
    shapes. An output may be one of the inputs only for in-place kernels
    (`adamw`).

    ```mlir
    mtrt.kernel "layer_norm" ins(%x, %w, %b : memref<16x8xf32>, memref<8xf32>, memref<8xf32>)
        outs(%y : memref<16x8xf32>) {epsilon = 1.0e-05 : f64}
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<MTRT_Buffer>:$ins,
                       Variadic<MTRT_Buffer>:$outs,
                       DictionaryAttr:$params);
  let assemblyFormat = [{
    $kernel (`ins` `(` $ins^ `:` type($ins) `)`)?
    (`outs` `(` $outs^ `:` type($outs) `)`)? $params attr-dict
  }];
}

def MTRT_FillOp : MTRT_Op<"fill", [HasParent<"ProgramOp">]> {
  let summary = "Fills a buffer with one value.";
  let description = [{
    ```mlir
    mtrt.fill %one, 1.0 : memref<f32>
    ```
  }];
  let arguments = (ins MTRT_Buffer:$buffer, F64Attr:$value);
  let assemblyFormat = "$buffer `,` $value attr-dict `:` type($buffer)";
}

def MTRT_OutputOp : MTRT_Op<"output", [HasParent<"ProgramOp">]> {
  let summary = "Names a buffer the runtime reads after the step.";
  let description = [{
    `role` is `loss` or `grad_norm`.

    ```mlir
    mtrt.output "loss", %loss : memref<f32>
    ```
  }];
  let arguments = (ins StrAttr:$role, MTRT_Buffer:$buffer);
  let assemblyFormat = "$role `,` $buffer attr-dict `:` type($buffer)";
}

#endif // MEGATRON_DIALECTS_MTRT_IR_MTRTOPS_TD
