//===- QuietOpDiagnostics.h - Errors without the op's IR --------*- C++ -*-===//
//
// megatron-opt and megatron-translate report a compile error on the op it
// is about, often the whole step function or module: MLIR's tools print
// that op after the message (--mlir-print-op-on-diagnostic, on by default),
// thousands of lines of IR under the one line that says what is wrong. The
// megatron tools turn it off unless the command line names it: megatron-opt
// through its arguments, megatron-translate's exports on their context.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_TOOLS_QUIETOPDIAGNOSTICS_H
#define MEGATRON_TOOLS_QUIETOPDIAGNOSTICS_H

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <vector>

namespace mlir::mt {

/// The arguments of `main` with --mlir-print-op-on-diagnostic=false added
/// after the program's name, unless the option is already there. The
/// vector ends in a null pointer (argv[argc]); pass size() - 1 as argc.
inline std::vector<char *> withQuietOpDiagnostics(int argc, char **argv) {
  static char quiet[] = "--mlir-print-op-on-diagnostic=false";
  std::vector<char *> args(argv, argv + argc);
  bool named = false;
  for (char *arg : args)
    named |= llvm::StringRef(arg).contains("mlir-print-op-on-diagnostic");
  if (!named && !args.empty())
    args.insert(args.begin() + 1, quiet);
  args.push_back(nullptr);
  return args;
}

/// For mlir-translate's translations, whose context mlirTranslateMain sets
/// to print ops on diagnostics whatever the command line says: off, or as
/// --mlir-print-op-on-diagnostic says where it is given (MLIRContext
/// registers it as a cl::opt<bool>).
inline void quietOpDiagnosticsUnlessAsked(MLIRContext *context) {
  auto &options = llvm::cl::getRegisteredOptions();
  auto option = options.find("mlir-print-op-on-diagnostic");
  bool print = option != options.end() &&
               option->second->getNumOccurrences() > 0 &&
               static_cast<llvm::cl::opt<bool> *>(option->second)->getValue();
  context->printOpOnDiagnostic(print);
}

} // namespace mlir::mt

#endif // MEGATRON_TOOLS_QUIETOPDIAGNOSTICS_H
