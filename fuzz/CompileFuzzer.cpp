//===- CompileFuzzer.cpp - Fuzz the compiler from IR to artifact
//-----------===//
//
// Feeds arbitrary bytes to the compiler as a user's IR file reaches it: parsed
// as MLIR with the project's dialects, then
//  - a module of mt functions (a forward graph) through --mt-train-pipeline
//    with options chosen by the input's bytes among a fixed set (data,
//    tensor, sequence and pipeline parallelism with GPipe, 1F1B and
//    interleaved schedules, ZeRO 1 and 3, mixed precision,
//    rematerialization, the memory budget), then --export-artifact;
//  - a module of mtrt programs (an edited lowered file) through
//    --export-artifact alone.
// A reported diagnostic is a correct answer. A finding is a crash, a
// sanitizer report, or a broken property:
//  - a module the pipeline compiles exports as an artifact;
//  - an artifact the exporter writes loads in the runtime (mtrt::loadArtifact)
//    and holds what the module does: its programs by stage, each with the
//    module's buffers, commands, outputs and generated kernels, and a
//    parameter for each parameter name. (The export itself reads back what
//    it writes with the loader's checks, so an mtrt module it refuses is a
//    correct answer; what this compares is what a writer and reader agreeing
//    with each other could still lose.)
// Found by a first mutation probe: a string attribute holding a byte that is
// not UTF-8 aborted the export in the JSON writer.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"
#include "MlirFuzzContext.h"

#include "megatron/InitAll.h"
#include "megatron/Pipelines/TrainPipeline.h"
#include "megatron/Target/ArtifactExport.h"

#include "dialects/MTRT/IR/MTRTDialect.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include "mtrt/Artifact.h"

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <set>
#include <string>

using namespace mlir;
using megatron::fuzz::CollectedDiagnostics;
using megatron::fuzz::MlirFuzzContext;
using megatron::fuzz::verbose;

namespace {

/// Inputs per MLIR context (MlirFuzzContext.h).
constexpr unsigned kInputsPerContext = 512;

/// The option sets a forward graph is compiled with, one per input (by a
/// hash of its bytes): each part of the pipeline is reached by some.
constexpr const char *kPipelineOptions[] = {
    "",
    "dp=2 tp=2",
    "tp=2 sp=true remat=full",
    "dp=2 zero=3 precision=bf16",
    "pp=2 microbatches=2",
    "pp=2 microbatches=4 schedule=1f1b tp=2",
    "remat=selective precision=fp16",
    "dp=2 zero=1 fuse=false",
    "pp=2 microbatches=2 schedule=interleaved virtual-stages=2",
    "remat=budget remat-budget=16000",
};

void registerDialects(DialectRegistry &registry) {
  mt::registerAllMegatronDialects(registry);
  registry.insert<shard::ShardDialect>();
}

[[noreturn]] void violated(const std::string &what, const std::string &options,
                           const std::string &diagnostics);

/// What the module says the artifact holds, against what the runtime read.
void checkHoldsTheModule(ModuleOp module, const ::mtrt::Artifact &artifact,
                         const std::string &options) {
  auto programs = llvm::to_vector(module.getOps<mlir::mtrt::ProgramOp>());
  auto mismatch = [&](const std::string &what, size_t inModule,
                      size_t inArtifact) {
    if (inModule != inArtifact)
      violated("the artifact holds " + std::to_string(inArtifact) + " " + what +
                   ", the module " + std::to_string(inModule),
               options, "");
  };
  mismatch("programs", programs.size(), artifact.programs.size());
  std::set<std::string> paramNames;
  for (auto program : programs) {
    size_t stage = size_t(program.getStage());
    if (stage >= artifact.programs.size())
      violated("no program for stage " + std::to_string(stage), options, "");
    const ::mtrt::RankProgram &loaded = artifact.programs[stage];
    size_t buffers = 0, commands = 0, outputs = 0, generated = 0;
    for (Operation &op : program.getBody().front()) {
      if (auto buffer = dyn_cast<mlir::mtrt::BufferOp>(op)) {
        ++buffers;
        if (buffer.getKind() == "param" && buffer.getName())
          paramNames.insert(buffer.getName()->str());
        // Under expert parallelism a buffer holds another expert on each
        // coordinate: every one is a parameter of the artifact.
        if (ArrayAttr experts = buffer.getExpertNamesAttr();
            experts && buffer.getKind() == "param")
          for (Attribute name : experts)
            paramNames.insert(cast<StringAttr>(name).str());
      } else if (isa<mlir::mtrt::OutputOp>(op)) {
        ++outputs;
      } else if (isa<mlir::mtrt::GeneratedKernelOp>(op)) {
        ++generated;
      } else {
        ++commands;
      }
    }
    std::string of = " of stage " + std::to_string(stage);
    mismatch("buffers" + of, buffers, loaded.buffers.size());
    mismatch("commands" + of, commands, loaded.commands.size());
    mismatch("outputs" + of, outputs, loaded.outputs.size());
    mismatch("generated kernels" + of, generated,
             loaded.generatedKernels.size());
  }
  std::set<std::string> loadedNames;
  for (const ::mtrt::ParamDesc &param : artifact.params)
    loadedNames.insert(param.name);
  if (loadedNames != paramNames)
    violated("the artifact's parameter table names other parameters than "
             "the module's param buffers",
             options, "");
}

[[noreturn]] void violated(const std::string &what, const std::string &options,
                           const std::string &diagnostics) {
  std::fprintf(stderr,
               "==FUZZ PROPERTY VIOLATED== %s (pipeline options '%s')\n%s\n",
               what.c_str(), options.c_str(), diagnostics.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static MlirFuzzContext contexts(kInputsPerContext, registerDialects);
  static megatron::fuzz::FuzzFile file("artifact");
  MLIRContext &context = contexts.next();
  CollectedDiagnostics diagnostics(context);

  // MLIR's lexer reads up to a terminating NUL, which every file the tools
  // read has (llvm::MemoryBuffer adds it) and libFuzzer's bytes have not:
  // parsed from a copy that has it, as megatron-opt parses a file.
  const std::string copy(reinterpret_cast<const char *>(data), size);
  llvm::StringRef text(copy);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&context));
  if (!module) {
    if (verbose())
      std::fprintf(stderr, "not parsed:\n%s", diagnostics.text().c_str());
    return 0;
  }

  // A lowered module is exported as it is; a forward graph compiled first.
  bool lowered = !module->getOps<mlir::mtrt::ProgramOp>().empty();
  std::string options;
  if (!lowered) {
    uint64_t hash = 1469598103934665603ull;
    for (unsigned char c : text)
      hash = (hash ^ c) * 1099511628211ull;
    options = kPipelineOptions[hash % std::size(kPipelineOptions)];
    auto parsed = mt::TrainPipelineOptions::createFromString(options);
    if (!parsed)
      violated("the harness's options do not parse", options,
               diagnostics.text());
    PassManager pm(&context, ModuleOp::getOperationName());
    mt::buildTrainPipeline(pm, *parsed);
    if (failed(pm.run(*module))) {
      if (verbose())
        std::fprintf(stderr, "refused by the pipeline ('%s'):\n%s",
                     options.c_str(), diagnostics.text().c_str());
      return 0;
    }
  }

  std::string artifactText;
  llvm::raw_string_ostream os(artifactText);
  if (failed(mt::exportArtifact(*module, os))) {
    if (!lowered)
      violated("a module the pipeline compiled does not export", options,
               diagnostics.text());
    if (verbose())
      std::fprintf(stderr, "refused by the export:\n%s",
                   diagnostics.text().c_str());
    return 0;
  }
  os.flush();

  file.write(artifactText.data(), artifactText.size());
  ::mtrt::Artifact artifact;
  if (::mtrt::Status status = ::mtrt::loadArtifact(file.path(), artifact);
      !status)
    violated("the runtime refuses an artifact the exporter wrote: " +
                 status.message(),
             options, diagnostics.text());
  checkHoldsTheModule(*module, artifact, options);
  if (verbose())
    std::fprintf(stderr, "compiled ('%s') and loaded: %zu program(s)\n",
                 lowered ? "lowered input" : options.c_str(),
                 artifact.programs.size());
  return 0;
}
