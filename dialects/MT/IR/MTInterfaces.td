//===- MTInterfaces.td - Interfaces of the mt ops -----------*- tablegen -*-===//
//
// What the passes need to know of an op lives on the op: how its result
// types follow its operand types (for retyping after parallelization), and
// its reverse-mode derivative (for mt-autodiff). Adding an op means
// implementing these beside it, not editing the passes.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_DIALECTS_MT_IR_MTINTERFACES_TD
#define MEGATRON_DIALECTS_MT_IR_MTINTERFACES_TD

include "mlir/IR/OpBase.td"

def MT_ShapeRuleOpInterface : OpInterface<"ShapeRuleOpInterface"> {
  let description = [{
    The op's result types for its operands' current types. Passes that
    change operand types (a tensor-parallel split, a batch split, a
    microbatch) retype every op through this rule. Every mt op implements
    it (MTOps.cpp, beside its verifier).
  }];
  let cppNamespace = "::mlir::mt";
  let methods = [
    InterfaceMethod<
      "The result types that follow from the current operand types",
      "::llvm::FailureOr<::llvm::SmallVector<::mlir::Type>>",
      "inferResultTypesFromOperands", (ins)>
  ];
}

def MT_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let description = [{
    An op mt-autodiff can differentiate: given the gradients of its results
    (through the emitter), it creates the ops computing the gradients of its
    operands and accumulates each into its operand's gradient. The rules
    live beside the ops, in MTDerivatives.cpp.
  }];
  let cppNamespace = "::mlir::mt";
  let methods = [
    InterfaceMethod<
      "Builds the gradients of the operands the loss depends on",
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::mt::GradientEmitter &":$emitter)>
  ];
}

def MT_ElementwiseOpInterface : OpInterface<"ElementwiseOpInterface"> {
  let description = [{
    An op whose every result element is a function of the same-index
    elements of its operands, or, for a row-broadcast operand (a bias), of
    the element at the index modulo that operand's size. `mt-fuse` groups
    such ops into `mt.fusion` regions, and the kernel emitter
    (megatron/Target/KernelEmitter.h) writes each op's scalar expression
    into the region's generated kernel. The expressions live beside the ops
    (MTElementwise.cpp) and are the one statement of their arithmetic in
    generated code: operands and the result are `float`, narrowed to the
    result's element type by the emitter.
  }];
  let cppNamespace = "::mlir::mt";
  let methods = [
    InterfaceMethod<
      "The C expression of one result element, given the C expressions of "
      "the operands' elements (as float)",
      "std::string", "scalarExpression",
      (ins "::llvm::ArrayRef<std::string>":$operands)>,
    InterfaceMethod<
      "Whether operand `index` is broadcast over rows: its elements are the "
      "trailing dimensions of the result",
      "bool", "isRowBroadcastOperand", (ins "unsigned":$index), [{}],
      [{ return false; }]>,
    InterfaceMethod<
      "Floating-point operations per result element (for profiles and "
      "traces)",
      "int64_t", "flopsPerElement", (ins)>
  ];
}

#endif // MEGATRON_DIALECTS_MT_IR_MTINTERFACES_TD
