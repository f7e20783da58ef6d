//===- ArtifactExport.cpp - mtrt programs to a runtime artifact -----------===//

#include "megatron/Target/ArtifactExport.h"

#include "dialects/MT/IR/MTDialect.h"
#include "dialects/MTRT/IR/MTRTDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::mt;

/// The artifact's name for an element type; `mtrt.buffer`'s verifier admits
/// exactly these.
static StringRef dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isSignlessInteger(32))
    return "i32";
  assert(type.isSignlessInteger(64) && "mtrt.buffer verifier admits it");
  return "i64";
}

/// Kernel parameters as JSON: numbers, integers, strings, flags.
static FailureOr<llvm::json::Object> paramsToJson(mtrt::KernelOp kernel) {
  llvm::json::Object params;
  for (NamedAttribute attr : kernel.getParams()) {
    StringRef name = attr.getName().getValue();
    Attribute value = attr.getValue();
    // BoolAttr is an IntegerAttr: test it first.
    if (auto b = dyn_cast<BoolAttr>(value))
      params[name] = b.getValue();
    else if (auto f = dyn_cast<FloatAttr>(value))
      params[name] = f.getValueAsDouble();
    else if (auto i = dyn_cast<IntegerAttr>(value))
      params[name] = i.getInt();
    else if (isa<UnitAttr>(value))
      params[name] = true;
    else if (auto s = dyn_cast<StringAttr>(value))
      params[name] = s.getValue();
    else
      return kernel.emitOpError() << "parameter '" << name
                                  << "' has no artifact encoding: " << value;
  }
  return params;
}

static FailureOr<llvm::json::Object> programToJson(mtrt::ProgramOp program) {
  llvm::json::Array buffers, commands;
  llvm::json::Object outputs;
  DenseMap<Value, int64_t> ids;
  for (Operation &op : program.getBody().front()) {
    if (auto buffer = dyn_cast<mtrt::BufferOp>(op)) {
      MemRefType type = buffer.getType();
      int64_t id = buffers.size();
      ids[buffer.getResult()] = id;
      llvm::json::Object entry{
          {"id", id},
          {"offset", buffer.getOffset()},
          {"dtype", dtypeName(type.getElementType())},
          {"shape", llvm::json::Array(type.getShape())},
          {"kind", buffer.getKind()},
      };
      if (buffer.getName())
        entry["name"] = *buffer.getName();
      if (buffer.getAlias())
        entry["alias"] = true;
      if (auto fullShape = buffer.getFullShapeAttr()) {
        llvm::json::Object shard{
            {"index", static_cast<int64_t>(*buffer.getShardIndex())},
            {"count", static_cast<int64_t>(*buffer.getShardCount())},
            {"full_shape", llvm::json::Array(fullShape.asArrayRef())}};
        if (std::optional<uint64_t> dim = buffer.getShardDim()) {
          shard["dim"] = static_cast<int64_t>(*dim);
          shard["chunks"] =
              static_cast<int64_t>(buffer.getShardChunks().value_or(1));
        }
        if (std::optional<uint64_t> valid = buffer.getValidRows())
          shard["valid_rows"] = static_cast<int64_t>(*valid);
        if (std::optional<uint64_t> piece = buffer.getPieceIndex()) {
          shard["piece_index"] = static_cast<int64_t>(*piece);
          shard["piece_count"] =
              static_cast<int64_t>(buffer.getPieceCount().value_or(1));
        }
        entry["shard"] = std::move(shard);
      }
      buffers.push_back(std::move(entry));
      continue;
    }
    auto idsOf = [&](ValueRange values) {
      llvm::json::Array array;
      for (Value value : values)
        array.push_back(ids.lookup(value));
      return array;
    };
    if (auto kernel = dyn_cast<mtrt::KernelOp>(op)) {
      FailureOr<llvm::json::Object> params = paramsToJson(kernel);
      if (failed(params))
        return failure();
      commands.push_back(llvm::json::Object{{"kernel", kernel.getKernel()},
                                            {"ins", idsOf(kernel.getIns())},
                                            {"outs", idsOf(kernel.getOuts())},
                                            {"params", std::move(*params)}});
    } else if (auto fill = dyn_cast<mtrt::FillOp>(op)) {
      commands.push_back(llvm::json::Object{
          {"kernel", "fill"},
          {"ins", llvm::json::Array()},
          {"outs", idsOf(fill.getBuffer())},
          {"params",
           llvm::json::Object{{"value", fill.getValue().convertToDouble()}}}});
    } else if (auto output = dyn_cast<mtrt::OutputOp>(op)) {
      outputs[output.getRole()] = ids.lookup(output.getBuffer());
    } else {
      return op.emitOpError() << "has no artifact encoding";
    }
  }
  llvm::json::Object json{
      {"rank", program.getRank()},
      {"arena_bytes", program.getArenaBytes()},
      {"persistent_bytes", program.getPersistentBytes()},
      {"buffers", std::move(buffers)},
      {"commands", std::move(commands)},
      {"outputs", std::move(outputs)},
  };
  // Only ranks of a device grid have coordinates.
  if (auto coords = program.getCoordsAttr())
    json["coords"] = llvm::json::Array(coords.asArrayRef());
  if (std::optional<uint64_t> flops = program.getFlopsPerToken())
    json["flops_per_token"] = static_cast<int64_t>(*flops);
  return json;
}

LogicalResult mlir::mt::exportArtifact(ModuleOp module, llvm::raw_ostream &os) {
  llvm::json::Array ranks;
  // The parameter table: every parameter once, with its full shape (a
  // sharded buffer knows it).
  llvm::json::Array params;
  llvm::StringSet<> seen;
  llvm::json::Array gridShape;
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto grid = dyn_cast<shard::GridOp>(op)) {
      gridShape = llvm::json::Array(grid.getShape());
      continue;
    }
    auto program = dyn_cast<mtrt::ProgramOp>(op);
    if (!program)
      return op.emitOpError()
             << "cannot be exported: an artifact holds mtrt.program ops only "
                "(run --mt-train-pipeline first)";
    FailureOr<llvm::json::Object> json = programToJson(program);
    if (failed(json))
      return failure();
    ranks.push_back(std::move(*json));
    for (auto buffer : program.getOps<mtrt::BufferOp>()) {
      if (buffer.getKind() != "param" || !buffer.getName() ||
          !seen.insert(*buffer.getName()).second)
        continue;
      MemRefType type = buffer.getType();
      SmallVector<int64_t> shape(type.getShape());
      if (auto fullShape = buffer.getFullShapeAttr())
        shape.assign(fullShape.asArrayRef().begin(),
                     fullShape.asArrayRef().end());
      // A padded vocabulary's checkpoint tensor has only the real rows.
      if (std::optional<uint64_t> valid = buffer.getValidRows())
        shape[0] = int64_t(*valid);
      params.push_back(
          llvm::json::Object{{"name", *buffer.getName()},
                             {"dtype", dtypeName(type.getElementType())},
                             {"shape", llvm::json::Array(shape)}});
    }
  }
  if (ranks.empty())
    return module.emitError()
           << "cannot export an artifact: the module holds no mtrt.program "
              "(run --mt-train-pipeline first)";
  llvm::json::Object artifact{
      {"format", "megatron-mlir-artifact"},
      {"version", kArtifactVersion},
      {"world_size", static_cast<int64_t>(ranks.size())},
      {"params", std::move(params)},
      {"ranks", std::move(ranks)},
  };
  if (!gridShape.empty())
    artifact["grid"] = llvm::json::Object{{"shape", std::move(gridShape)}};
  os << llvm::formatv("{0}", llvm::json::Value(std::move(artifact))) << "\n";
  return success();
}

void mlir::mt::registerArtifactExportTranslation() {
  TranslateFromMLIRRegistration registration(
      "export-artifact",
      "Write the runtime artifact of a module of mtrt programs",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitOpError() << "expected a builtin.module";
        return exportArtifact(module, os);
      },
      [](DialectRegistry &registry) {
        // func and mt too, so that a module not yet lowered is reported as
        // such rather than as unparsable.
        registry.insert<mtrt::MTRTDialect, func::FuncDialect, mt::MTDialect,
                        shard::ShardDialect>();
      });
}
