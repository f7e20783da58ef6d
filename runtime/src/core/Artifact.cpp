//===- Artifact.cpp - The compiled artifact megatron-run loads ------------===//

#include "mtrt/Artifact.h"

#include "mtrt/Sharding.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <sys/stat.h>

using namespace mtrt;
using json = nlohmann::json;

int64_t mtrt::dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  }
  return 0;
}

const char *mtrt::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

int64_t BufferDesc::numElements() const {
  int64_t n = 1;
  for (int64_t dim : shape)
    n *= dim;
  return n;
}

const BufferDesc *RankProgram::find(const std::string &kind,
                                    const std::string &name) const {
  for (const BufferDesc &buffer : buffers)
    if (buffer.kind == kind && buffer.name == name)
      return &buffer;
  return nullptr;
}

namespace {
/// Reads typed fields of JSON objects; the first error is kept with the
/// path of the field ("ranks[0].buffers[3].offset").
class Reader {
public:
  explicit Reader(std::string file) : file(std::move(file)) {}

  bool ok() const { return error.empty(); }
  Status status() const {
    return ok() ? Status::ok() : Status::error(file + ": " + error);
  }
  void fail(const std::string &where, const std::string &what) {
    if (ok())
      error = where + ": " + what;
  }

  const json *field(const json &object, const char *key,
                    const std::string &where, json::value_t type) {
    if (!ok())
      return nullptr;
    if (!object.is_object()) {
      fail(where, "expected an object");
      return nullptr;
    }
    auto it = object.find(key);
    if (it == object.end()) {
      fail(where, std::string("missing key '") + key + "'");
      return nullptr;
    }
    bool matches =
        it->type() == type ||
        (type == json::value_t::number_integer && it->is_number_unsigned());
    if (!matches) {
      fail(where + "." + key, std::string("expected ") +
                                  json(type).type_name() + ", got " +
                                  it->type_name());
      return nullptr;
    }
    return &*it;
  }

  int64_t integer(const json &object, const char *key,
                  const std::string &where) {
    const json *value =
        field(object, key, where, json::value_t::number_integer);
    return value ? value->get<int64_t>() : 0;
  }
  std::string string(const json &object, const char *key,
                     const std::string &where) {
    const json *value = field(object, key, where, json::value_t::string);
    return value ? value->get<std::string>() : std::string();
  }
  const json &array(const json &object, const char *key,
                    const std::string &where) {
    static const json empty = json::array();
    const json *value = field(object, key, where, json::value_t::array);
    return value ? *value : empty;
  }

  DType dtype(const json &object, const std::string &where) {
    std::string name = string(object, "dtype", where);
    static const std::map<std::string, DType> names = {{"f32", DType::F32},
                                                       {"f16", DType::F16},
                                                       {"bf16", DType::BF16},
                                                       {"i32", DType::I32},
                                                       {"i64", DType::I64}};
    auto it = names.find(name);
    if (ok() && it == names.end())
      fail(where + ".dtype", "unknown dtype '" + name + "'");
    return it == names.end() ? DType::F32 : it->second;
  }

  std::vector<int64_t> shape(const json &object, const std::string &where) {
    std::vector<int64_t> dims;
    for (const json &dim : array(object, "shape", where)) {
      if (!dim.is_number_integer() || dim.get<int64_t>() <= 0) {
        fail(where + ".shape",
             "dimensions must be positive integers, got " + dim.dump());
        break;
      }
      dims.push_back(dim.get<int64_t>());
    }
    return dims;
  }

private:
  std::string file;
  std::string error;
};

std::string shapeString(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}
} // namespace

Status mtrt::loadArtifact(const std::string &path, Artifact &artifact) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path + ": cannot open the artifact");
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    return Status::error(path + ": is a directory, not an artifact");
  std::stringstream text;
  text << in.rdbuf();
  json document = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded())
    return Status::error(path +
                         ": not a megatron-mlir artifact: the file is not "
                         "valid JSON (truncated or corrupt?)");

  Reader reader(path);
  if (reader.string(document, "format", "artifact") !=
      "megatron-mlir-artifact") {
    MTRT_RETURN_IF_ERROR(reader.status());
    return Status::error(path + ": not a megatron-mlir artifact (format is '" +
                         document["format"].get<std::string>() + "')");
  }
  artifact.version = reader.integer(document, "version", "artifact");
  MTRT_RETURN_IF_ERROR(reader.status());
  if (artifact.version != kArtifactVersion)
    return Status::error(path + ": artifact version " +
                         std::to_string(artifact.version) +
                         " is not supported; this runtime reads version " +
                         std::to_string(kArtifactVersion) +
                         " (recompile the model with this release)");
  artifact.worldSize = reader.integer(document, "world_size", "artifact");
  if (document.contains("grid")) {
    const json *grid =
        reader.field(document, "grid", "artifact", json::value_t::object);
    if (grid && grid->contains("shape"))
      for (const json &dim : reader.array(*grid, "shape", "artifact.grid")) {
        if (!dim.is_number_integer() || dim.get<int64_t>() <= 0) {
          reader.fail("artifact.grid.shape",
                      "dimensions must be positive integers, got " +
                          dim.dump());
          break;
        }
        artifact.gridShape.push_back(dim.get<int64_t>());
      }
  }

  const json &params = reader.array(document, "params", "artifact");
  for (size_t i = 0; i < params.size() && reader.ok(); ++i) {
    std::string where = "params[" + std::to_string(i) + "]";
    ParamDesc param;
    param.name = reader.string(params[i], "name", where);
    param.dtype = reader.dtype(params[i], where);
    param.shape = reader.shape(params[i], where);
    artifact.params.push_back(std::move(param));
  }

  const json &ranks = reader.array(document, "ranks", "artifact");
  for (size_t r = 0; r < ranks.size() && reader.ok(); ++r) {
    std::string where = "ranks[" + std::to_string(r) + "]";
    const json &rank = ranks[r];
    RankProgram program;
    program.rank = reader.integer(rank, "rank", where);
    if (rank.contains("coords"))
      for (const json &coord : reader.array(rank, "coords", where)) {
        if (!coord.is_number_integer() || coord.get<int64_t>() < 0) {
          reader.fail(where + ".coords",
                      "coordinates must be non-negative integers, got " +
                          coord.dump());
          break;
        }
        program.coords.push_back(coord.get<int64_t>());
      }
    program.arenaBytes = reader.integer(rank, "arena_bytes", where);
    if (rank.contains("flops_per_token"))
      program.flopsPerToken = reader.integer(rank, "flops_per_token", where);
    program.persistentBytes = reader.integer(rank, "persistent_bytes", where);

    const json &buffers = reader.array(rank, "buffers", where);
    for (size_t b = 0; b < buffers.size() && reader.ok(); ++b) {
      std::string at = where + ".buffers[" + std::to_string(b) + "]";
      BufferDesc buffer;
      buffer.id = reader.integer(buffers[b], "id", at);
      buffer.offset = reader.integer(buffers[b], "offset", at);
      buffer.dtype = reader.dtype(buffers[b], at);
      buffer.shape = reader.shape(buffers[b], at);
      buffer.kind = reader.string(buffers[b], "kind", at);
      if (buffers[b].contains("name"))
        buffer.name = reader.string(buffers[b], "name", at);
      buffer.alias = buffers[b].value("alias", false);
      if (buffers[b].contains("shard")) {
        const json *shard =
            reader.field(buffers[b], "shard", at, json::value_t::object);
        if (shard) {
          buffer.shardIndex = reader.integer(*shard, "index", at + ".shard");
          buffer.shardCount = reader.integer(*shard, "count", at + ".shard");
          if (shard->contains("dim")) {
            buffer.shardDim = reader.integer(*shard, "dim", at + ".shard");
            buffer.shardChunks =
                reader.integer(*shard, "chunks", at + ".shard");
          }
          if (shard->contains("valid_rows"))
            buffer.validRows =
                reader.integer(*shard, "valid_rows", at + ".shard");
          if (shard->contains("piece_index")) {
            buffer.pieceIndex =
                reader.integer(*shard, "piece_index", at + ".shard");
            buffer.pieceCount =
                reader.integer(*shard, "piece_count", at + ".shard");
            if (reader.ok() && (buffer.shardDim < 0 || buffer.pieceCount <= 0 ||
                                buffer.pieceIndex < 0 ||
                                buffer.pieceIndex >= buffer.pieceCount))
              reader.fail(at + ".shard",
                          "piece " + std::to_string(buffer.pieceIndex) +
                              " of " + std::to_string(buffer.pieceCount) +
                              " needs a split dimension and an index below "
                              "the count");
          }
          buffer.fullShape =
              reader.shape(json{{"shape", reader.array(*shard, "full_shape",
                                                       at + ".shard")}},
                           at + ".shard.full_shape");
          int64_t full = 1;
          for (int64_t dim : buffer.fullShape)
            full *= dim;
          bool badDim = buffer.shardDim >= int64_t(buffer.fullShape.size()) ||
                        buffer.shardChunks <= 0 || buffer.shardCount <= 0 ||
                        (buffer.shardDim >= 0 &&
                         buffer.fullShape[buffer.shardDim] %
                                 (buffer.shardChunks * buffer.shardCount) !=
                             0);
          if (reader.ok() && badDim)
            reader.fail(at + ".shard",
                        "dimension " + std::to_string(buffer.shardDim) +
                            " in " + std::to_string(buffer.shardChunks) +
                            " chunks does not split the full shape " +
                            shapeString(buffer.fullShape) + " into " +
                            std::to_string(buffer.shardCount) + " pieces");
          if (reader.ok() && (buffer.shardCount <= 0 || buffer.shardIndex < 0 ||
                              buffer.shardIndex >= buffer.shardCount ||
                              full != buffer.numElements() * buffer.shardCount *
                                          buffer.pieceCount))
            reader.fail(at + ".shard",
                        "piece " + std::to_string(buffer.shardIndex) + " of " +
                            std::to_string(buffer.shardCount) + " of " +
                            std::to_string(full) +
                            " elements does not match the buffer's " +
                            std::to_string(buffer.numElements()));
        }
      }
      if (!reader.ok())
        break;
      if (buffer.id != static_cast<int64_t>(b))
        reader.fail(at, "id " + std::to_string(buffer.id) +
                            " out of sequence (expected " + std::to_string(b) +
                            ")");
      else if (buffer.offset < 0 ||
               buffer.offset + buffer.bytes() > program.arenaBytes)
        reader.fail(at, "bytes [" + std::to_string(buffer.offset) + ", " +
                            std::to_string(buffer.offset + buffer.bytes()) +
                            ") lie outside the arena of " +
                            std::to_string(program.arenaBytes) + " bytes");
      program.buffers.push_back(std::move(buffer));
    }

    const json &commands = reader.array(rank, "commands", where);
    for (size_t c = 0; c < commands.size() && reader.ok(); ++c) {
      std::string at = where + ".commands[" + std::to_string(c) + "]";
      Command command;
      command.kernel = reader.string(commands[c], "kernel", at);
      for (const char *list : {"ins", "outs"}) {
        for (const json &id : reader.array(commands[c], list, at)) {
          if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
              id.get<int64_t>() >=
                  static_cast<int64_t>(program.buffers.size())) {
            reader.fail(at + "." + list, "no buffer " + id.dump());
            break;
          }
          (std::string(list) == "ins" ? command.ins : command.outs)
              .push_back(id.get<int64_t>());
        }
      }
      const json *params =
          reader.field(commands[c], "params", at, json::value_t::object);
      if (params)
        for (auto &[key, value] : params->items()) {
          if (value.is_boolean())
            command.params[key] = value.get<bool>() ? 1.0 : 0.0;
          else if (value.is_number())
            command.params[key] = value.get<double>();
        }
      program.commands.push_back(std::move(command));
    }

    const json *outputs =
        reader.field(rank, "outputs", where, json::value_t::object);
    if (outputs)
      for (auto &[role, id] : outputs->items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() >= static_cast<int64_t>(program.buffers.size()))
          reader.fail(where + ".outputs." + role, "no buffer " + id.dump());
        else
          program.outputs[role] = id.get<int64_t>();
      }

    // Parameter buffers must match the parameter table.
    // (Aliases are reshaped views of a parameter's bytes: not checked.)
    for (const BufferDesc &buffer : program.buffers) {
      if (!reader.ok() || buffer.kind != "param" || buffer.alias)
        continue;
      bool found = false;
      for (const ParamDesc &param : artifact.params)
        if (param.name == buffer.name) {
          found = true;
          if (param.shape != checkpointShapeOf(buffer))
            reader.fail(where + ".buffers[" + std::to_string(buffer.id) + "]",
                        "parameter '" + buffer.name + "' has shape " +
                            shapeString(checkpointShapeOf(buffer)) +
                            " but the parameter table says " +
                            shapeString(param.shape));
        }
      if (!found)
        reader.fail(where + ".buffers[" + std::to_string(buffer.id) + "]",
                    "parameter '" + buffer.name +
                        "' is missing from the parameter table");
    }
    artifact.ranks.push_back(std::move(program));
  }
  MTRT_RETURN_IF_ERROR(reader.status());
  for (size_t i = 0; i < artifact.params.size(); ++i) {
    bool held = false;
    for (const RankProgram &program : artifact.ranks)
      held |= program.find("param", artifact.params[i].name) != nullptr;
    if (!held)
      return Status::error(path + ": params[" + std::to_string(i) +
                           "]: parameter '" + artifact.params[i].name +
                           "' is held by no rank's program");
  }
  int64_t gridSize = 1;
  for (int64_t dim : artifact.gridShape)
    gridSize *= dim;
  if (!artifact.gridShape.empty() && gridSize != artifact.worldSize)
    return Status::error(path + ": the grid has " + std::to_string(gridSize) +
                         " ranks but world_size is " +
                         std::to_string(artifact.worldSize));
  for (const RankProgram &program : artifact.ranks)
    if (program.coords.size() != artifact.gridShape.size())
      return Status::error(path + ": rank " + std::to_string(program.rank) +
                           " has " + std::to_string(program.coords.size()) +
                           " coordinates for a grid of " +
                           std::to_string(artifact.gridShape.size()) + " axes");
  if (static_cast<int64_t>(artifact.ranks.size()) != artifact.worldSize)
    return Status::error(path + ": world_size is " +
                         std::to_string(artifact.worldSize) + " but " +
                         std::to_string(artifact.ranks.size()) +
                         " rank programs are present");
  return Status::ok();
}
