//===- HFConfigImportFuzzer.cpp - Fuzz the Hugging Face config importer ---===//
//
// Feeds arbitrary bytes to the config importer the way
// `megatron-translate --import-hf-config` does: the model_type picks the
// LLaMA-family or the GPT-2 parser, and a config it accepts is built into
// the mt forward graph for a micro-batch shape derived from the input (the
// config's own positions, a shorter sequence, or one that must be refused).
// A reported error is a correct answer; a crash, a sanitizer report, or a
// built module that fails the verifier is a finding.
//
// Building cost grows with the layer count (up to 1024 accepted), so the
// harness builds at most kMaxLayers layers of an accepted config; every
// other field is built as given. Two mutations in three are edits of the
// parsed JSON document (JsonMutator.h), the rest libFuzzer's bytewise ones.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"
#include "JsonMutator.h"
#include "MlirFuzzContext.h"

#include "megatron/Import/HFConfigImport.h"
#include "megatron/Import/LlamaConfigImport.h"

#include "dialects/MT/IR/MTDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

using namespace mlir;
using namespace mlir::mt;
using megatron::fuzz::CollectedDiagnostics;
using megatron::fuzz::MlirFuzzContext;
using megatron::fuzz::verbose;

namespace {

constexpr int64_t kMaxLayers = 3;
/// Inputs per MLIR context (MlirFuzzContext.h).
constexpr unsigned kInputsPerContext = 4096;

void registerDialects(DialectRegistry &registry) {
  registry.insert<MTDialect, func::FuncDialect>();
}

/// A micro-batch shape for the config's `positions`, chosen by the input's
/// bytes: mostly one that fits, sometimes one the builder must refuse.
MicroBatchShape shapeFor(llvm::StringRef bytes, int64_t positions) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : bytes)
    hash = (hash ^ c) * 1099511628211ull;
  MicroBatchShape shape;
  shape.batchSize = 1 + int64_t(hash & 1);
  switch ((hash >> 1) % 8) {
  case 0:
    shape.seqLength = positions <= 64 ? positions : 64;
    break;
  case 1:
    shape.seqLength = positions + 1; // longer than the config allows
    break;
  case 2:
    shape.seqLength = int64_t((hash >> 8) % 3) - 1; // -1, 0 or 1
    break;
  case 3:
    shape.batchSize = int64_t((hash >> 8) % 2) - 1; // -1 or 0
    shape.seqLength = 1;
    break;
  default:
    shape.seqLength = std::min<int64_t>(positions, 1 + (hash >> 8) % 8);
    break;
  }
  return shape;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static MlirFuzzContext contexts(kInputsPerContext, registerDialects);
  MLIRContext &context = contexts.next();
  CollectedDiagnostics diagnostics(context);

  llvm::StringRef json(reinterpret_cast<const char *>(data), size);
  Location loc = FileLineColLoc::get(&context, "config.json", 1, 1);

  // As the translation does: the model family decides the importer.
  std::string modelType = configModelType(json);

  FailureOr<OwningOpRef<ModuleOp>> module = failure();
  MicroBatchShape shape;
  if (isLlamaFamily(modelType)) {
    FailureOr<LlamaConfig> config = parseLlamaConfig(json, loc);
    if (succeeded(config)) {
      config->numLayers = std::min(config->numLayers, kMaxLayers);
      shape = shapeFor(json, config->maxPositions);
      module = buildLlamaModule(*config, shape, loc);
    }
  } else {
    FailureOr<GPT2Config> config = parseGPT2Config(json, loc);
    if (succeeded(config)) {
      config->numLayers = std::min(config->numLayers, kMaxLayers);
      shape = shapeFor(json, config->numPositions);
      module = buildGPT2Module(*config, shape, loc);
    }
  }
  if (verbose())
    std::fprintf(stderr, "model_type '%s', micro-batch %lldx%lld: %s\n%s",
                 modelType.c_str(), (long long)shape.batchSize,
                 (long long)shape.seqLength,
                 succeeded(module) ? "built" : "refused",
                 diagnostics.text().c_str());
  if (failed(module))
    return 0;
  if (failed(verify(**module))) {
    std::fprintf(stderr,
                 "==FUZZ PROPERTY VIOLATED== the importer built a module "
                 "that does not verify (micro-batch %lldx%lld)\n%s\n",
                 (long long)shape.batchSize, (long long)shape.seqLength,
                 diagnostics.text().c_str());
    std::abort();
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  return megatron::fuzz::mutateJsonInput(data, size, maxSize, seed);
}
