//===- PrintModelSummary.cpp - Print an mt model's size and cost ----------===//

#include "passes/Analysis/Passes.h"

#include "dialects/MT/IR/MTDialect.h"
#include "megatron/Analysis/ModelSummary.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "mt-print-model-summary"

namespace mlir::mt {
#define GEN_PASS_DEF_PRINTMODELSUMMARYPASS
#include "passes/Analysis/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {
struct PrintModelSummaryPass
    : public mt::impl::PrintModelSummaryPassBase<PrintModelSummaryPass> {
  void runOnOperation() override {
    // Standard error, as upstream's reports (--mlir-timing, print-op-stats)
    // and mt-pipeline's: the IR on standard output stays parseable when the
    // pass runs in a pipe.
    llvm::raw_ostream &os = llvm::errs();
    for (auto function : getOperation().getOps<FunctionOpInterface>()) {
      if (!hasModelParameters(function))
        continue;
      FailureOr<ModelSummary> summary = summarizeModel(function);
      if (failed(summary))
        return signalPassFailure();
      os << "model @" << function.getName() << "\n"
         << "  layers: " << summary->numLayers << "\n"
         << "  parameters: " << summary->numParameters << "\n";
      if (summary->activeParameters != summary->numParameters)
        os << "  parameters a token uses: " << summary->activeParameters
           << " (its experts of each mixture)\n";
      os << "  tokens per micro-batch: " << summary->tokensPerMicroBatch << "\n"
         << "  training FLOPs per token: " << summary->trainingFlopsPerToken
         << " (6N = " << summary->parameterFlopsPerToken
         << ", attention = " << summary->attentionFlopsPerToken << ")\n"
         << "  training FLOPs per micro-batch: "
         << summary->trainingFlopsPerMicroBatch << "\n";
    }
    os.flush();
    markAllAnalysesPreserved();
  }
};
} // namespace
