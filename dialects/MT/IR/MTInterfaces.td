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

#endif // MEGATRON_DIALECTS_MT_IR_MTINTERFACES_TD
