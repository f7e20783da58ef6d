//===- Passes.td - Lowering mt to runtime programs ----------*- tablegen -*-===//

#ifndef MEGATRON_PASSES_CONVERSION_MTTOMTRT_PASSES_TD
#define MEGATRON_PASSES_CONVERSION_MTTOMTRT_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToRuntimePass : Pass<"mt-lower-to-runtime", "ModuleOp"> {
  let summary = "Lowers mt functions to mtrt programs with a memory plan.";
  let description = [{
    Replaces every defined function by an `mtrt.program` (the i-th function
    becomes rank i's program): one
    `mtrt.buffer` per tensor value at a static arena offset, one
    `mtrt.kernel` per op in the function's order, `mtrt.fill` for splat
    constants, and `mtrt.output` for the `loss` and `grad_norm` results.

    The memory plan: parameters, optimizer state and run-time inputs are
    persistent and placed first; every other value lives from the op that
    defines it to its last use (results that are returned, to the end) and
    is placed by `placeBuffers` (largest first, lowest non-overlapping
    offset). Reshapes (`tensor.collapse_shape`, `tensor.expand_shape`) are
    views of their source and extend its lifetime; `mt.adamw` updates its
    parameter and moments in place. The arena size is the planned peak.

    Preconditions: every dropout and attention with a non-zero dropout
    probability has an `rng_stream` (run `mt-autodiff` first); constants are
    float splats. Errors name the op.

    ```mlir
    %y = mt.gelu %x : tensor<4x8xf32>
    ```

    becomes

    ```mlir
    %x = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4x8xf32>
    %y = mtrt.buffer {kind = "activation", offset = 192 : i64} : memref<4x8xf32>
    mtrt.kernel "gelu" ins(%x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {}
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Byte alignment of every buffer in the arena">,
    Option<"printMemoryPlan", "print-memory-plan", "bool", /*default=*/"false",
           "Print each program's memory plan to standard error (standard "
           "output carries the IR)">
  ];
  let statistics = [
    Statistic<"arenaBytes", "arena-bytes", "Planned peak bytes of the arena">,
    Statistic<"numKernels", "kernels", "Number of kernel launches">
  ];
  let dependentDialects = ["::mlir::mtrt::MTRTDialect"];
}

#endif // MEGATRON_PASSES_CONVERSION_MTTOMTRT_PASSES_TD
