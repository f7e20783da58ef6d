//===- HFConfigImport.h - Hugging Face config.json to mt --------*- C++ -*-===//
//
// Reads a Hugging Face GPT-2 `config.json` and builds the model's forward
// graph in the mt dialect, with parameters named and laid out as in the
// Hugging Face checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_IMPORT_HFCONFIGIMPORT_H
#define MEGATRON_IMPORT_HFCONFIGIMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>

#include <string>

namespace mlir::mt {

/// The fields of a GPT-2 `config.json` that shape the training graph.
struct GPT2Config {
  int64_t vocabSize = 0;
  int64_t numPositions = 0;
  int64_t hiddenSize = 0; // n_embd
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t innerSize = 0; // n_inner, 4 * n_embd when null or absent
  double layerNormEpsilon = 1e-5;
  double embeddingDropout = 0.1;
  double attentionDropout = 0.1;
  double residualDropout = 0.1;
  bool tieWordEmbeddings = true;
  /// The initializer's standard deviation (initializer_range).
  double initializerRange = 0.02;
};

/// Parses and validates a GPT-2 config. Errors are reported at `loc` and
/// name the offending key and its value.
FailureOr<GPT2Config> parseGPT2Config(llvm::StringRef json, Location loc);

/// The config's "model_type", which picks the importer; empty when it has
/// none, or is not JSON a parser would accept (the importer then reports
/// why). Safe on any bytes: nesting too deep is not handed to the parser.
std::string configModelType(llvm::StringRef json);

/// Shape of one micro-batch.
struct MicroBatchShape {
  int64_t batchSize = 1;
  int64_t seqLength = 0;
};

/// Builds `func.func @gpt2(%input_ids, %labels, params...) -> tensor<f32>`
/// computing the mean cross-entropy loss. Fails, reporting at `loc`, when the
/// micro-batch does not fit the config (non-positive sizes, sequence longer
/// than `n_positions`).
FailureOr<OwningOpRef<ModuleOp>>
buildGPT2Module(const GPT2Config &config, MicroBatchShape shape, Location loc);

/// Registers `--import-hf-config` (with `--micro-batch-size` and
/// `--seq-length`) with mlir-translate's registry.
void registerHFConfigImportTranslation();

} // namespace mlir::mt

#endif // MEGATRON_IMPORT_HFCONFIGIMPORT_H
