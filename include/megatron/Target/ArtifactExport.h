//===- ArtifactExport.h - mtrt programs to a runtime artifact ---*- C++ -*-===//
//
// Writes the artifact `megatron-run` loads: a JSON document holding every
// role's program, buffer plan and parameter table. The schema (and its
// version) is defined once, in runtime/include/mtrt/Artifact.h: this builds
// an `mtrt::Artifact` and calls the runtime's own writer.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_TARGET_ARTIFACTEXPORT_H
#define MEGATRON_TARGET_ARTIFACTEXPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::mt {

/// Writes the artifact of `module`, which must hold `mtrt.program` ops only
/// (the output of `--mt-train-pipeline`). Fails with a diagnostic otherwise.
LogicalResult exportArtifact(ModuleOp module, llvm::raw_ostream &os);

/// Writes every generated kernel of `module`'s programs as one translation
/// unit (the prelude, then each kernel): what the CPU backend compiles at
/// load, and what nvcc compiles as CUDA. Fails when there is none.
LogicalResult exportGeneratedKernels(ModuleOp module, llvm::raw_ostream &os);

/// Registers `--export-artifact` and `--export-kernels` with
/// mlir-translate's registry.
void registerArtifactExportTranslation();

} // namespace mlir::mt

#endif // MEGATRON_TARGET_ARTIFACTEXPORT_H
