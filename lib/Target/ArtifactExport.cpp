//===- ArtifactExport.cpp - mtrt programs to a runtime artifact -----------===//

#include "megatron/Target/ArtifactExport.h"
#include "megatron/Target/KernelEmitter.h"
#include "megatron/Tools/QuietOpDiagnostics.h"

#include "dialects/MT/IR/MTDialect.h"
#include "dialects/MTRT/IR/MTRTDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "mtrt/Artifact.h"
#include "mtrt/Kernels.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <map>
#include <sstream>

static_assert(mlir::mtrt::kMaxArenaBytes == ::mtrt::kMaxArenaBytes,
              "the compiler plans arenas the runtime loads");

using namespace mlir;
using namespace mlir::mt;

/// The artifact's element type; `mtrt.buffer`'s verifier admits exactly
/// these.
static ::mtrt::DType dtypeOf(Type type) {
  if (type.isF32())
    return ::mtrt::DType::F32;
  if (type.isF16())
    return ::mtrt::DType::F16;
  if (type.isBF16())
    return ::mtrt::DType::BF16;
  if (type.isSignlessInteger(32))
    return ::mtrt::DType::I32;
  assert(type.isSignlessInteger(64) && "mtrt.buffer verifier admits it");
  return ::mtrt::DType::I64;
}

static std::vector<int64_t> toVector(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

/// Kernel parameters: numbers and flags, and per-rank values
/// `{grid_axis, stride, base}`. Strings and non-finite numbers have no
/// encoding the runtime reads.
static LogicalResult addParams(Operation *op, DictionaryAttr attrs,
                               ::mtrt::Command &command) {
  for (NamedAttribute attr : attrs) {
    std::string name = attr.getName().getValue().str();
    Attribute value = attr.getValue();
    // BoolAttr is an IntegerAttr: test it first.
    if (auto b = dyn_cast<BoolAttr>(value)) {
      command.params[name] = b.getValue() ? 1.0 : 0.0;
    } else if (auto f = dyn_cast<FloatAttr>(value)) {
      double number = f.getValueAsDouble();
      if (!std::isfinite(number))
        return op->emitOpError() << "parameter '" << name << "' is not finite ("
                                 << value << "): the artifact cannot hold it";
      command.params[name] = number;
    } else if (auto i = dyn_cast<IntegerAttr>(value)) {
      command.params[name] = double(i.getInt());
    } else if (isa<UnitAttr>(value)) {
      command.params[name] = 1.0;
    } else if (auto dict = dyn_cast<DictionaryAttr>(value)) {
      auto axis = dict.getAs<IntegerAttr>("grid_axis");
      auto stride = dict.getAs<IntegerAttr>("stride");
      auto base = dict.getAs<IntegerAttr>("base");
      if (!axis || !stride || !base || dict.size() != 3)
        return op->emitOpError()
               << "per-rank parameter '" << name
               << "' must be {grid_axis, stride, base}, got " << value;
      command.rankParams[name] = {axis.getInt(), stride.getInt(),
                                  base.getInt()};
    } else {
      return op->emitOpError() << "parameter '" << name
                               << "' has no artifact encoding: " << value;
    }
  }
  return success();
}

static FailureOr<::mtrt::RankProgram> toProgram(mlir::mtrt::ProgramOp program) {
  ::mtrt::RankProgram result;
  result.stage = program.getStage();
  result.arenaBytes = program.getArenaBytes();
  result.persistentBytes = program.getPersistentBytes();
  if (std::optional<uint64_t> flops = program.getFlopsPerToken())
    result.flopsPerToken = int64_t(*flops);
  DenseMap<Value, int64_t> ids;
  auto idsOf = [&](ValueRange values) {
    std::vector<int64_t> list;
    for (Value value : values)
      list.push_back(ids.lookup(value));
    return list;
  };
  llvm::StringMap<int64_t> generatedIndex;
  std::vector<std::string> kernelSources;
  for (Operation &op : program.getBody().front()) {
    if (auto generated = dyn_cast<mlir::mtrt::GeneratedKernelOp>(op)) {
      ::mtrt::GeneratedKernel kernel;
      kernel.name = generated.getSymName().str();
      kernel.elements = generated.getElements();
      kernel.numOutputs = generated.getNumOutputs();
      for (Attribute type : generated.getOperandTypes())
        kernel.operandTypes.push_back(dtypeOf(cast<TypeAttr>(type).getValue()));
      kernel.operandExtents =
          toVector(generated.getOperandExtentsAttr().asArrayRef());
      kernel.flopsPerElement = generated.getFlopsPerElement();
      kernel.rowLength = generated.getRowLength().value_or(0);
      kernel.rowBlock = generated.getRowBlock().value_or(0);
      kernel.dropouts = generated.getDropouts().value_or(0);
      generatedIndex[kernel.name] = int64_t(result.generatedKernels.size());
      result.generatedKernels.push_back(std::move(kernel));
      kernelSources.push_back(generated.getSource().str());
      continue;
    }
    if (auto buffer = dyn_cast<mlir::mtrt::BufferOp>(op)) {
      MemRefType type = buffer.getType();
      ::mtrt::BufferDesc desc;
      desc.id = int64_t(result.buffers.size());
      ids[buffer.getResult()] = desc.id;
      desc.offset = buffer.getOffset();
      desc.dtype = dtypeOf(type.getElementType());
      desc.shape = toVector(type.getShape());
      desc.kind = buffer.getKind().str();
      if (buffer.getName())
        desc.name = buffer.getName()->str();
      desc.alias = buffer.getAlias();
      if (std::optional<uint64_t> microbatch = buffer.getMicrobatch())
        desc.microbatch = int64_t(*microbatch);
      if (std::optional<uint64_t> valid = buffer.getValidRows())
        desc.validRows = int64_t(*valid);
      if (std::optional<uint64_t> axis = buffer.getExpertAxis()) {
        desc.expertAxis = int64_t(*axis);
        for (Attribute name : buffer.getExpertNamesAttr())
          desc.expertNames.push_back(cast<StringAttr>(name).str());
        desc.expertRanks = int64_t(desc.expertNames.size());
      }
      if (auto fullShape = buffer.getFullShapeAttr()) {
        desc.fullShape = toVector(fullShape.asArrayRef());
        desc.shardAxis = int64_t(buffer.getShardAxis().value_or(0));
        desc.shardCount = int64_t(buffer.getShardCount().value_or(1));
        if (std::optional<uint64_t> dim = buffer.getShardDim()) {
          desc.shardDim = int64_t(*dim);
          desc.shardChunks = int64_t(buffer.getShardChunks().value_or(1));
        }
        if (std::optional<uint64_t> piece = buffer.getPieceAxis()) {
          desc.pieceAxis = int64_t(*piece);
          desc.pieceCount = int64_t(buffer.getPieceCount().value_or(1));
        }
      }
      result.buffers.push_back(std::move(desc));
      continue;
    }
    ::mtrt::Command command;
    if (auto kernel = dyn_cast<mlir::mtrt::KernelOp>(op)) {
      command.kernel = kernel.getKernel().str();
      command.ins = idsOf(kernel.getIns());
      command.outs = idsOf(kernel.getOuts());
      // The runtime's one kernel table: a kernel it does not have is a
      // compile-time error here, not a failure at launch.
      const ::mtrt::KernelInfo *info = ::mtrt::findKernel(command.kernel);
      if (!info)
        return kernel.emitOpError() << "names kernel '" << command.kernel
                                    << "', which the runtime does not have";
      auto countOk = [](int expected, size_t actual) {
        return expected < 0 ? actual > 0 : actual == size_t(expected);
      };
      if (!countOk(info->ins, command.ins.size()) ||
          !countOk(info->outs, command.outs.size()))
        return kernel.emitOpError()
               << "passes " << command.ins.size() << " inputs and "
               << command.outs.size() << " outputs to kernel '"
               << command.kernel << "', which takes "
               << (info->ins < 0 ? std::string("1 or more")
                                 : std::to_string(info->ins))
               << " and "
               << (info->outs < 0 ? std::string("1 or more")
                                  : std::to_string(info->outs));
      // An optional third input is an accumulator (accumulatesInPlace).
      if (::mtrt::takesAccumulator(info->id) && command.ins.size() != 2 &&
          command.ins.size() != 3)
        return kernel.emitOpError()
               << "passes " << command.ins.size() << " inputs to kernel '"
               << command.kernel
               << "', which takes 2, or 3 with an accumulator";
      if (failed(addParams(kernel, kernel.getParams(), command)))
        return failure();
      if (auto generated = kernel.getGeneratedAttr()) {
        auto it = generatedIndex.find(generated.getValue());
        if (it == generatedIndex.end())
          return kernel.emitOpError()
                 << "launches " << generated
                 << ", which no earlier mtrt.generated_kernel of its program "
                    "defines";
        command.params["generated"] = double(it->second);
      }
      if (std::optional<StringRef> phase = kernel.getPhase()) {
        command.phase = llvm::StringSwitch<::mtrt::Phase>(*phase)
                            .Case("forward", ::mtrt::Phase::Forward)
                            .Case("backward", ::mtrt::Phase::Backward)
                            .Case("optimizer", ::mtrt::Phase::Optimizer)
                            .Default(::mtrt::Phase::None);
        if (command.phase == ::mtrt::Phase::None)
          return kernel.emitOpError()
                 << "has phase '" << *phase
                 << "', not forward, backward or optimizer";
      }
      if (std::optional<uint64_t> micro = kernel.getMicrobatch())
        command.microbatch = int64_t(*micro);
      if (std::optional<uint64_t> chunk = kernel.getChunk())
        command.chunk = int64_t(*chunk);
      if (std::optional<uint64_t> layer = kernel.getLayer())
        command.layer = int64_t(*layer);
    } else if (auto fill = dyn_cast<mlir::mtrt::FillOp>(op)) {
      double value = fill.getValue().convertToDouble();
      if (!std::isfinite(value))
        return fill.emitOpError() << "fills a non-finite value (" << value
                                  << "): the artifact cannot hold it";
      command.kernel = "fill";
      command.outs = idsOf(fill.getBuffer());
      command.params["value"] = value;
    } else if (isa<mlir::mtrt::SendOp, mlir::mtrt::RecvOp>(op)) {
      // Both carry a buffer, a peer stage, a tag and maybe a microbatch.
      bool send = isa<mlir::mtrt::SendOp>(op);
      command.kernel = send ? "send" : "recv";
      (send ? command.ins : command.outs) = idsOf(op.getOperand(0));
      for (StringRef name : {"peer_stage", "tag"})
        if (auto value = op.getAttrOfType<IntegerAttr>(name))
          command.params[name.str()] = double(value.getInt());
      if (auto micro = op.getAttrOfType<IntegerAttr>("microbatch"))
        command.microbatch = micro.getInt();
      if (auto chunk = op.getAttrOfType<IntegerAttr>("chunk"))
        command.chunk = chunk.getInt();
    } else if (auto output = dyn_cast<mlir::mtrt::OutputOp>(op)) {
      result.outputs[output.getRole().str()] = ids.lookup(output.getBuffer());
      continue;
    } else {
      return op.emitOpError() << "has no artifact encoding";
    }
    result.commands.push_back(std::move(command));
  }
  if (!kernelSources.empty())
    result.kernelSource = generatedKernelTranslationUnit(kernelSources);
  return result;
}

/// The names of the grid's axes, by the convention of mt-parallelize (dp x
/// tp) and mt-pipeline (pp x dp x tp).
static std::vector<std::string> axisNames(size_t axes) {
  if (axes == 3)
    return {"pp", "dp", "tp"};
  return {"dp", "tp"};
}

/// The artifact is JSON, whose strings are UTF-8: a name or kernel source
/// holding other bytes (a string attribute written with an escape such as
/// "\99") is refused at its op, where the JSON writer would abort.
static LogicalResult checkStringsAreUtf8(ModuleOp module) {
  // The programs are what is written (a module's own attributes are not).
  auto check = [](Operation *op) {
    StringAttr bad;
    op->getAttrDictionary().walk([&](StringAttr text) {
      if (!bad && !llvm::json::isUTF8(text.getValue()))
        bad = text;
    });
    if (!bad)
      return WalkResult::advance();
    size_t at = 0;
    llvm::json::isUTF8(bad.getValue(), &at);
    op->emitOpError() << "holds a string that is not UTF-8 (byte " << at
                      << " of " << bad.getValue().size()
                      << "), which an artifact, a JSON document, cannot hold";
    return WalkResult::interrupt();
  };
  for (auto program : module.getOps<mlir::mtrt::ProgramOp>())
    if (program->walk(check).wasInterrupted())
      return failure();
  return success();
}

LogicalResult mlir::mt::exportArtifact(ModuleOp module, llvm::raw_ostream &os) {
  if (failed(checkStringsAreUtf8(module)))
    return failure();
  ::mtrt::Artifact artifact;
  // The parameter table: every parameter once, with its full shape (a
  // sharded buffer knows it).
  llvm::StringSet<> seen;
  std::map<int64_t, ::mtrt::RankProgram> byStage;
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto grid = dyn_cast<shard::GridOp>(op)) {
      if (!artifact.gridShape.empty())
        return grid.emitOpError()
               << "is a second device grid: an artifact has one";
      artifact.gridShape = toVector(grid.getShape());
      if (artifact.gridShape.size() != 2 && artifact.gridShape.size() != 3)
        return grid.emitOpError()
               << "has " << artifact.gridShape.size()
               << " axes; the artifact knows dp x tp and pp x dp x tp grids";
      artifact.gridAxes = axisNames(artifact.gridShape.size());
      continue;
    }
    auto program = dyn_cast<mlir::mtrt::ProgramOp>(op);
    if (!program)
      return op.emitOpError()
             << "cannot be exported: an artifact holds mtrt.program ops only "
                "(run --mt-train-pipeline first)";
    FailureOr<::mtrt::RankProgram> converted = toProgram(program);
    if (failed(converted))
      return failure();
    if (!byStage.emplace(converted->stage, std::move(*converted)).second)
      return program.emitOpError()
             << "is a second program of stage " << program.getStage();
    for (auto buffer : program.getOps<mlir::mtrt::BufferOp>()) {
      if (buffer.getKind() != "param" || !buffer.getName() ||
          seen.contains(*buffer.getName()))
        continue;
      MemRefType type = buffer.getType();
      ::mtrt::ParamDesc param;
      param.name = buffer.getName()->str();
      param.dtype = dtypeOf(type.getElementType());
      param.shape = toVector(type.getShape());
      if (auto fullShape = buffer.getFullShapeAttr())
        param.shape = toVector(fullShape.asArrayRef());
      // A padded vocabulary's checkpoint tensor has only the real rows.
      if (std::optional<uint64_t> valid = buffer.getValidRows())
        param.shape[0] = int64_t(*valid);
      // Stored in published weights as rows of a fused tensor (the
      // buffer's verifier checked the form).
      if (DictionaryAttr fused = buffer.getFusedInAttr()) {
        param.fusedIn = fused.getAs<StringAttr>("tensor").str();
        param.fusedRow = fused.getAs<IntegerAttr>("row").getInt();
      }
      if (DictionaryAttr init = buffer.getInitAttr()) {
        std::optional<ParamInitializer> spec = ParamInitializer::fromAttr(init);
        if (!spec)
          return buffer.emitOpError() << "has an invalid initializer " << init;
        using Kind = ParamInitializer::Kind;
        param.init.kind =
            spec->kind == Kind::Normal  ? ::mtrt::ParamInitSpec::Kind::Normal
            : spec->kind == Kind::Zeros ? ::mtrt::ParamInitSpec::Kind::Zeros
                                        : ::mtrt::ParamInitSpec::Kind::Ones;
        param.init.std = spec->std;
      }
      // Under expert parallelism the buffer is one expert per rank: each
      // is a parameter of the model.
      SmallVector<std::string> names = {param.name};
      if (ArrayAttr experts = buffer.getExpertNamesAttr()) {
        names.clear();
        for (Attribute name : experts)
          names.push_back(cast<StringAttr>(name).str());
      }
      for (const std::string &name : names) {
        if (!seen.insert(name).second)
          continue;
        param.name = name;
        artifact.params.push_back(param);
      }
    }
  }
  if (byStage.empty())
    return module.emitError()
           << "cannot export an artifact: the module holds no mtrt.program "
              "(run --mt-train-pipeline first)";
  for (auto &[stage, program] : byStage) {
    if (stage != int64_t(artifact.programs.size()))
      return module.emitError() << "cannot export an artifact: no program for "
                                   "pipeline stage "
                                << artifact.programs.size();
    artifact.programs.push_back(std::move(program));
  }
  artifact.worldSize = 1;
  for (int64_t dim : artifact.gridShape)
    artifact.worldSize *= dim;
  int64_t stages = artifact.axis("pp") < 0
                       ? 1
                       : artifact.gridShape[size_t(artifact.axis("pp"))];
  if (int64_t(artifact.programs.size()) != stages)
    return module.emitError()
           << "cannot export an artifact: " << artifact.programs.size()
           << " programs for " << stages << " pipeline stage(s)";
  std::ostringstream text;
  ::mtrt::writeArtifact(artifact, text);
  // What the runtime checks at load (the plan's lifetimes, each command
  // against its kernel's signature, the parameter table) is checked here
  // too, by the same code: an IR file edited into a plan whose live
  // buffers overlap is refused now, not by every rank at launch.
  ::mtrt::Artifact loaded;
  if (::mtrt::Status status =
          ::mtrt::parseArtifact(text.str(), "the exported artifact", loaded);
      !status) {
    // At the program the message names ("programs[S]" is stage S's).
    std::string message = status.message();
    Operation *at = module;
    if (size_t found = message.find("programs["); found != std::string::npos)
      for (auto program : module.getOps<mlir::mtrt::ProgramOp>()) {
        std::string key =
            "programs[" + std::to_string(program.getStage()) + "]";
        if (message.compare(found, key.size(), key) == 0)
          at = program;
      }
    return at->emitError()
           << "cannot export an artifact the runtime would refuse: " << message;
  }
  os << text.str();
  return success();
}

LogicalResult mlir::mt::exportGeneratedKernels(ModuleOp module,
                                               llvm::raw_ostream &os) {
  std::vector<std::string> sources;
  for (auto program : module.getOps<mlir::mtrt::ProgramOp>())
    for (auto kernel : program.getOps<mlir::mtrt::GeneratedKernelOp>())
      sources.push_back(kernel.getSource().str());
  if (sources.empty())
    return module.emitError()
           << "no mtrt.generated_kernel to export (compile with mt-fuse, "
              "which --mt-train-pipeline runs unless fuse=false)";
  os << generatedKernelTranslationUnit(sources);
  return success();
}

void mlir::mt::registerArtifactExportTranslation() {
  TranslateFromMLIRRegistration kernels(
      "export-kernels",
      "Write the generated kernels of a module of mtrt programs as one "
      "single-source C++/CUDA translation unit",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        quietOpDiagnosticsUnlessAsked(op->getContext());
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitOpError() << "expected a builtin.module";
        return exportGeneratedKernels(module, os);
      },
      [](DialectRegistry &registry) {
        registry.insert<mlir::mtrt::MTRTDialect, func::FuncDialect,
                        mt::MTDialect, shard::ShardDialect>();
      });
  TranslateFromMLIRRegistration registration(
      "export-artifact",
      "Write the runtime artifact of a module of mtrt programs",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        quietOpDiagnosticsUnlessAsked(op->getContext());
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitOpError() << "expected a builtin.module";
        return exportArtifact(module, os);
      },
      [](DialectRegistry &registry) {
        // func, mt, arith and tensor too (what a training step holds before
        // mt-lower-to-runtime), so that a module not yet lowered is
        // reported as such rather than as unparsable.
        registry.insert<mlir::mtrt::MTRTDialect, func::FuncDialect,
                        mt::MTDialect, shard::ShardDialect, arith::ArithDialect,
                        tensor::TensorDialect>();
      });
}
