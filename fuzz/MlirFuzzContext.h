//===- MlirFuzzContext.h - An MLIR context and diagnostics per input ----===//
//
// What the harnesses that build or parse IR (hf-config-import, compile)
// share: the context each input is handled in, and the diagnostics it
// reported, which are a correct answer and are shown with FUZZ_VERBOSE or
// when a property is violated.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_FUZZ_MLIRFUZZCONTEXT_H
#define MEGATRON_FUZZ_MLIRFUZZCONTEXT_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace megatron::fuzz {

/// The context for each input, with the dialects `fill` registers. A
/// context uniques every location and attribute it sees, so a fresh one is
/// made every `inputsPerContext` inputs: a long run's memory stays flat.
class MlirFuzzContext {
public:
  MlirFuzzContext(unsigned inputsPerContext,
                  void (*fill)(mlir::DialectRegistry &))
      : inputsPerContext(inputsPerContext), fill(fill) {}

  /// The context for the next input.
  mlir::MLIRContext &next() {
    if (!context || ++inputs % inputsPerContext == 0) {
      mlir::DialectRegistry registry;
      fill(registry);
      context = std::make_unique<mlir::MLIRContext>(
          registry, mlir::MLIRContext::Threading::DISABLED);
      context->loadAllAvailableDialects();
    }
    return *context;
  }

private:
  unsigned inputsPerContext;
  void (*fill)(mlir::DialectRegistry &);
  unsigned inputs = 0;
  std::unique_ptr<mlir::MLIRContext> context;
};

/// The diagnostics `context` reports while this lives, one per line.
class CollectedDiagnostics {
public:
  explicit CollectedDiagnostics(mlir::MLIRContext &context)
      : handler(&context, [this](mlir::Diagnostic &diag) {
          llvm::raw_string_ostream os(collected);
          os << diag << "\n";
          return mlir::success();
        }) {}

  const std::string &text() const { return collected; }

private:
  std::string collected;
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace megatron::fuzz

#endif // MEGATRON_FUZZ_MLIRFUZZCONTEXT_H
