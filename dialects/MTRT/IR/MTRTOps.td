//===- MTRTOps.td - The runtime-program dialect -------------*- tablegen -*-===//
//
// `mtrt`: what the thin runtime executes. A program per role (every rank
// without pipelining, every rank of one pipeline stage with it) is a straight
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
  let summary = "Straight-line SPMD programs over a planned arena.";
  let description = [{
    The lowest layer before the artifact. Every value is a `memref` view of
    one arena at a static byte offset chosen by the memory planner, so the
    arena size of a program is its exact peak memory. Kernels are named by
    the `mt` op they implement; the runtime binds each name to a host kernel
    (CPU backend) or a CUDA kernel, BLAS or cuBLAS call.

    Programs are SPMD: one program is shared by every rank of its role, so
    compile time and artifact size do not grow with the data- or
    tensor-parallel degree. What differs between ranks is stated in terms of
    the rank's coordinates on the module's `shard.grid` and computed by the
    runtime when it loads the program: a buffer's piece index is the
    coordinate on `shard_axis` (`piece_axis`), and a kernel parameter given
    as a dictionary `{grid_axis = a, stride = s, base = b}` is
    `b + s * coordinate(a)`.
  }];
}

class MTRT_Op<string mnemonic, list<Trait> traits = []>
    : Op<MTRT_Dialect, mnemonic, traits>;

/// What an arena buffer can hold: the element types the runtime binds.
def MTRT_Buffer : StaticShapeMemRefOf<[F32, F16, BF16, I32, I64]>;

def MTRT_ProgramOp : MTRT_Op<"program",
    [Symbol, SymbolTable, SingleBlock, NoTerminator, IsolatedFromAbove]> {
  let summary = "The program the ranks of one role execute per training step.";
  let description = [{
    Holds the role's buffers and commands in execution order. `stage` is the
    pipeline stage whose ranks run it (0 without pipeline parallelism, where
    one program serves every rank); on a grid with a pipeline axis, rank r
    runs the program whose `stage` is r's coordinate on that axis.
    `flops_per_token` is the model's training FLOPs per token (6N plus the
    attention term, see `mt-print-model-summary`), for throughput reports.
    `arena_bytes` is the size of the arena: the planned peak memory.
    `persistent_bytes` is its prefix holding what lives across steps
    (parameters, optimizer state, inputs); the rest is reused by
    activations and gradients as their lifetimes allow.

    ```mlir
    mtrt.program @stage0 attributes {stage = 0 : i64, arena_bytes = 4096 : i64,
                                     persistent_bytes = 1024 : i64} {
      %w = mtrt.buffer {offset = 0 : i64, kind = "param", name = "w"} : memref<8x8xf32>
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$stage,
                       I64Attr:$arena_bytes, I64Attr:$persistent_bytes,
                       OptionalAttr<I64Attr>:$flops_per_token);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def MTRT_BufferOp : MTRT_Op<"buffer", [HasParent<"ProgramOp">]> {
  let summary = "A view of the arena at a static byte offset.";
  let description = [{
    `kind` says what the buffer holds, for binding and for the memory
    report: `param`, `param_copy` (its persistent 16-bit copy, which the
    runtime fills from it and `multi_adamw` rewrites), `exp_avg`,
    `exp_avg_sq` (named by `name`, the parameter), `input` (named by its role: `tokens`, `lr`, ...),
    `activation`, `gradient` or `constant`. Two buffers may share bytes
    when their lifetimes do not overlap, or when one is a reshaped view of
    the other (`alias`). A ZeRO-sharded parameter or state holds piece
    `shard_index` of `shard_count` equal contiguous pieces of the flattened
    tensor of `full_shape`; a tensor-parallel split (`shard_dim` set) holds
    piece `shard_index` of `shard_count` of dimension `shard_dim` within each
    of its `shard_chunks` equal chunks, and with `piece_count` only piece
    `piece_index` of that split, flattened (ZeRO on tensor-parallel ranks).
    The indices are the rank's coordinates on grid axes `shard_axis` and
    `piece_axis`, known only at run time: the program is shared by all of
    them. `microbatch` marks a data input of one microbatch (`tokens` and
    `labels` of microbatch i of the step).
    `valid_rows` marks a vocabulary padded to a multiple of tp: rows of the
    full tensor from `valid_rows` on are padding. `init` is a parameter's
    initializer, as its `mt.init` states it. Under expert parallelism a
    parameter or state holds a different expert on each coordinate of grid
    axis `expert_axis`: the one `expert_names` names at that coordinate
    (`name` is coordinate 0's). `fused_in`, `{tensor = "name", row = R}`,
    states that published weights store a parameter as rows from R on of
    another tensor (the parameter's `mt.fused_in`).

    ```mlir
    %x = mtrt.buffer {offset = 4096 : i64, kind = "activation"} : memref<2x8x16xf32>
    ```
  }];
  let arguments = (ins I64Attr:$offset, StrAttr:$kind,
                       OptionalAttr<StrAttr>:$name, UnitAttr:$alias,
                       OptionalAttr<DenseI64ArrayAttr>:$full_shape,
                       OptionalAttr<I64Attr>:$shard_axis,
                       OptionalAttr<I64Attr>:$shard_count,
                       OptionalAttr<I64Attr>:$shard_dim,
                       OptionalAttr<I64Attr>:$shard_chunks,
                       OptionalAttr<I64Attr>:$piece_axis,
                       OptionalAttr<I64Attr>:$piece_count,
                       OptionalAttr<I64Attr>:$valid_rows,
                       OptionalAttr<I64Attr>:$microbatch,
                       OptionalAttr<DictionaryAttr>:$init,
                       OptionalAttr<StrArrayAttr>:$expert_names,
                       OptionalAttr<I64Attr>:$expert_axis,
                       OptionalAttr<DictionaryAttr>:$fused_in);
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

    `phase` (forward, backward or optimizer), `microbatch` and, under the
    interleaved schedule, `chunk` say which action of the pipeline schedule
    the kernel belongs to, and `layer`
    which transformer layer its op belongs to (`mt.layer`); they change
    nothing it computes: the runtime's measured trace groups kernels by
    them, and the memory report splits the stash by layer. A `fused`
    kernel runs the `mtrt.generated_kernel` that `generated` names, with
    its operands in the generated kernel's order.

    ```mlir
    mtrt.kernel "layer_norm" ins(%x, %w, %b : memref<16x8xf32>, memref<8xf32>, memref<8xf32>)
        outs(%y : memref<16x8xf32>) {epsilon = 1.0e-05 : f64}
        {phase = "forward", microbatch = 2 : i64}
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<MTRT_Buffer>:$ins,
                       Variadic<MTRT_Buffer>:$outs,
                       DictionaryAttr:$params,
                       OptionalAttr<StrAttr>:$phase,
                       OptionalAttr<I64Attr>:$microbatch,
                       OptionalAttr<I64Attr>:$chunk,
                       OptionalAttr<I64Attr>:$layer,
                       OptionalAttr<FlatSymbolRefAttr>:$generated);
  let assemblyFormat = [{
    $kernel (`ins` `(` $ins^ `:` type($ins) `)`)?
    (`outs` `(` $outs^ `:` type($outs) `)`)? $params attr-dict
  }];
}

def MTRT_GeneratedKernelOp : MTRT_Op<"generated_kernel",
    [HasParent<"ProgramOp">, Symbol]> {
  let summary = "A kernel the compiler generated for one mt.fusion region.";
  let description = [{
    `source` is the kernel's single-source C++ (megatron/Target/
    KernelEmitter.h): with the prelude (mtrt/GeneratedKernelPrelude.h) it
    compiles as host C++ and, with nvcc, as CUDA. `mtrt.kernel "fused"`
    launches it through `generated`. The kernel computes `elements`
    elements; operand k (inputs first, then `num_outputs` outputs) has
    element type `operand_types[k]` and `operand_extents[k]` elements:
    `elements`, or the length of a row-broadcast operand (a bias), indexed
    modulo it. `flops_per_element` counts its arithmetic for profiles.

    A row kernel (from a row fusion) has a `row_length`: it iterates over
    `elements` rows, and each operand has `elements * row_length`
    elements (whole rows), `elements` (one per row), `row_length` (one
    row broadcast along the rows: a norm's weight) or one (a scalar);
    i32 operands are token ids, one per row. Its `flops_per_element` are
    per element of a row. A row-block kernel (a norm's backward) also has a
    `row_block`: it runs blocks of that many rows as its work items, and
    its outputs may hold one row per block (partial sums over the block).
    An elementwise kernel with `dropouts` takes that many dropouts'
    parameter blocks after its operands (mtrt::FusedDropoutWord), which the
    runtime fills from its command's `dropout<k>_*` parameters.

    ```mlir
    mtrt.generated_kernel @fused_0 {elements = 1024 : i64, num_outputs = 1 : i64,
        operand_types = [f32, f32, f32], operand_extents = array<i64: 1024, 32, 1024>,
        flops_per_element = 9 : i64, source = "MT_KERNEL(fused_0) {...}"}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$source,
                       I64Attr:$elements, I64Attr:$num_outputs,
                       TypeArrayAttr:$operand_types,
                       DenseI64ArrayAttr:$operand_extents,
                       I64Attr:$flops_per_element,
                       OptionalAttr<I64Attr>:$row_length,
                       OptionalAttr<I64Attr>:$row_block,
                       OptionalAttr<I64Attr>:$dropouts);
  let assemblyFormat = "$sym_name attr-dict";
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

def MTRT_SendOp : MTRT_Op<"send", [HasParent<"ProgramOp">]> {
  let summary = "Sends a buffer to the same-coordinate rank of another stage.";
  let description = [{
    Point-to-point transfer between pipeline stages: the rank whose
    coordinates equal this rank's except `peer_stage` on the pipeline axis
    receives the buffer with the `mtrt.recv` of the same `tag`. A send does
    not wait for its receive (the runtime copies the bytes out), so a
    schedule deadlocks only through receives; `mt-verify-collectives`
    proves that none does. `microbatch` and `chunk` are for traces and
    diagnostics.

    ```mlir
    mtrt.send %act to 1 {tag = 3 : i64, microbatch = 0 : i64} : memref<2x4x8xf32>
    ```
  }];
  let arguments = (ins MTRT_Buffer:$buffer, I64Attr:$peer_stage, I64Attr:$tag,
                       OptionalAttr<I64Attr>:$microbatch,
                       OptionalAttr<I64Attr>:$chunk);
  let assemblyFormat = "$buffer `to` $peer_stage attr-dict `:` type($buffer)";
}

def MTRT_RecvOp : MTRT_Op<"recv", [HasParent<"ProgramOp">]> {
  let summary = "Receives a buffer from the same-coordinate rank of another stage.";
  let description = [{
    Waits for the `mtrt.send` of the same `tag` from `peer_stage` and writes
    its bytes into the buffer; shapes and element types must match, which
    `mt-verify-collectives` checks at compile time.

    ```mlir
    mtrt.recv %act from 0 {tag = 3 : i64, microbatch = 0 : i64} : memref<2x4x8xf32>
    ```
  }];
  let arguments = (ins MTRT_Buffer:$buffer, I64Attr:$peer_stage, I64Attr:$tag,
                       OptionalAttr<I64Attr>:$microbatch,
                       OptionalAttr<I64Attr>:$chunk);
  let assemblyFormat = "$buffer `from` $peer_stage attr-dict `:` type($buffer)";
}

#endif // MEGATRON_DIALECTS_MTRT_IR_MTRTOPS_TD
