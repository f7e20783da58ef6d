//===- megatron-translate.cpp - Into and out of the mt dialect ------------===//
//
// mlir-translate with megatron's translations: `--import-hf-config` reads a
// Hugging Face config.json and emits the model's forward graph;
// `--export-artifact` writes the artifact megatron-run loads.
//
//===----------------------------------------------------------------------===//

#include "megatron/Import/HFConfigImport.h"
#include "megatron/Target/ArtifactExport.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::mt::registerHFConfigImportTranslation();
  mlir::mt::registerArtifactExportTranslation();
  return mlir::failed(mlir::mlirTranslateMain(
      argc, argv, "megatron-translate: import models, export artifacts\n"));
}
