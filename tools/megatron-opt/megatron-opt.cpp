//===- megatron-opt.cpp - The mt compiler driver --------------------------===//
//
// mlir-opt with the megatron dialects and passes added: the same command
// line, pass-pipeline syntax, --split-input-file and --verify-diagnostics.
//
//===----------------------------------------------------------------------===//

#include "megatron/InitAll.h"
#include "megatron/Tools/QuietOpDiagnostics.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  std::vector<char *> args = mlir::mt::withQuietOpDiagnostics(argc, argv);
  argc = int(args.size()) - 1;
  argv = args.data();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllPasses();
  mlir::mt::registerAllMegatronDialects(registry);
  mlir::mt::registerAllMegatronPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "megatron-opt: compile mt transformer graphs\n", registry));
}
