//===- ModelSummary.h - Size and cost of an mt model ------------*- C++ -*-===//
//
// Counts what a training run of an mt model costs: parameters, layers, and
// training FLOPs per token. Shared by the summary pass and by tools that
// report throughput (MFU needs the FLOPs per token).
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_ANALYSIS_MODELSUMMARY_H
#define MEGATRON_ANALYSIS_MODELSUMMARY_H

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <cstdint>

namespace mlir::mt {

struct ModelSummary {
  /// Distinct `mt.layer` values on the function's ops.
  int64_t numLayers = 0;
  /// Elements of all `mt.param` arguments.
  int64_t numParameters = 0;
  /// Those a token multiplies: all but a mixture of experts' weights, and
  /// of those the k experts each token is routed to.
  int64_t activeParameters = 0;
  /// Elements of the token-id argument: tokens per micro-batch.
  int64_t tokensPerMicroBatch = 0;
  /// `6 N`: forward and backward FLOPs of the parameters' multiply-adds,
  /// `N` the parameters a token uses: of a mixture of experts' weights,
  /// only its k experts' (Megatron-LM's MoE FLOPs count them so).
  int64_t parameterFlopsPerToken = 0;
  /// `12 L S D`: forward and backward FLOPs of attention scores and sums
  /// (`S` the keys per query: the sequence, or a sliding window under it).
  int64_t attentionFlopsPerToken = 0;

  /// Their sum.
  int64_t trainingFlopsPerToken = 0;
  /// `trainingFlopsPerToken` times the tokens of a micro-batch.
  int64_t trainingFlopsPerMicroBatch = 0;
};

/// Summarizes `function`. Fails, with a diagnostic, when it has parameters
/// but no integer tensor argument holding token ids, or when a count does
/// not fit in int64 (hand-written shapes, or sizes at the importer's
/// limits); counts are computed with checked arithmetic.
FailureOr<ModelSummary> summarizeModel(FunctionOpInterface function);

/// True when `function` has at least one `mt.param` argument.
bool hasModelParameters(FunctionOpInterface function);

/// True when `function` has an argument whose `mt.input` role is "tokens"
/// (what summarizeModel needs of an imported model).
bool hasTokenInput(FunctionOpInterface function);

} // namespace mlir::mt

#endif // MEGATRON_ANALYSIS_MODELSUMMARY_H
