//===- Artifact.cpp - The compiled artifact megatron-run loads ------------===//

#include "mtrt/Artifact.h"
#include "mtrt/GeneratedKernelPrelude.h"

#include "mtrt/ArenaLifetimes.h"
#include "mtrt/Hash.h"
#include "mtrt/KernelSignatures.h"
#include "mtrt/RegularFile.h"

#include "mtrt/Sharding.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>

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
  case DType::F64:
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
  case DType::F64:
    return "f64";
  }
  return "?";
}

const char *mtrt::phaseName(Phase phase) {
  switch (phase) {
  case Phase::Forward:
    return "forward";
  case Phase::Backward:
    return "backward";
  case Phase::Optimizer:
    return "optimizer";
  case Phase::None:
    break;
  }
  return "";
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
    if (buffer.kind == kind &&
        (buffer.name == name ||
         std::find(buffer.expertNames.begin(), buffer.expertNames.end(),
                   name) != buffer.expertNames.end()))
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
    return dtypeNamed(string(object, "dtype", where), where + ".dtype");
  }

  DType dtypeNamed(const std::string &name, const std::string &where) {
    static const std::map<std::string, DType> names = {{"f32", DType::F32},
                                                       {"f16", DType::F16},
                                                       {"bf16", DType::BF16},
                                                       {"i32", DType::I32},
                                                       {"i64", DType::I64}};
    auto it = names.find(name);
    if (ok() && it == names.end())
      fail(where, "unknown dtype '" + name + "'");
    return it == names.end() ? DType::F32 : it->second;
  }

  std::vector<int64_t> shape(const json &object, const std::string &where) {
    std::vector<int64_t> dims;
    int64_t elements = 1;
    for (const json &dim : array(object, "shape", where)) {
      if (!dim.is_number_integer() || dim.get<int64_t>() <= 0) {
        fail(where + ".shape",
             "dimensions must be positive integers, got " + dim.dump());
        break;
      }
      // Every size computed from a shape (bytes of an 8-byte dtype, a
      // buffer's end) must fit in int64: at most 2^56 elements.
      if (__builtin_mul_overflow(elements, dim.get<int64_t>(), &elements) ||
          elements > kMaxElements) {
        fail(where + ".shape", "has more than 2^56 elements");
        break;
      }
      dims.push_back(dim.get<int64_t>());
    }
    return dims;
  }

  /// The most elements a shape may have: bytes and offsets derived from it
  /// then stay far from int64's limit.
  static constexpr int64_t kMaxElements = int64_t(1) << 56;

private:
  std::string file;
  std::string error;
};

/// The artifact's checksum: "fnv1a64:" and 16 hex digits, FNV-1a of the
/// file's bytes with those digits as zeros. It finds a file changed after
/// the compiler wrote it (a flipped bit, an edit), before anything in it is
/// trusted.
constexpr const char *kChecksumPrefix = "fnv1a64:";
constexpr const char *kChecksumZeros = "0000000000000000";

Status verifyChecksum(const std::string &path, const json &document,
                      const std::string &bytes) {
  auto stored = document.find("checksum");
  if (!document.is_object() || stored == document.end() || !stored->is_string())
    return Status::error(path + ": the artifact has no checksum (written by "
                                "an older compiler? recompile the model)");
  std::string value = stored->get<std::string>();
  size_t prefix = std::strlen(kChecksumPrefix);
  bool wellFormed =
      value.size() == prefix + 16 &&
      value.compare(0, prefix, kChecksumPrefix) == 0 &&
      value.find_first_not_of("0123456789abcdef", prefix) == std::string::npos;
  size_t at = wellFormed ? bytes.find(value) : std::string::npos;
  if (!wellFormed)
    return Status::error(path + ": checksum '" + value +
                         "' is not 'fnv1a64:' and 16 lowercase hex digits");
  // The value is found again in the file's bytes to be zeroed there: it
  // must occur once.
  if (at == std::string::npos || bytes.find(value, at + 1) != std::string::npos)
    return Status::error(path + ": checksum '" + value +
                         "' does not occur exactly once in the file's text");
  std::string zeroed = bytes;
  zeroed.replace(at + prefix, 16, kChecksumZeros);
  char hex[17];
  std::snprintf(
      hex, sizeof(hex), "%016llx",
      static_cast<unsigned long long>(fnv1a(zeroed.data(), zeroed.size())));
  if (value.compare(prefix, 16, hex) != 0)
    return Status::error(path + ": checksum mismatch (the file says " +
                         value.substr(prefix) + ", its bytes give " + hex +
                         "): it was changed or damaged after it was written");
  return Status::ok();
}

/// Whether the double `value` is an integer int64 holds (converting a
/// larger one is undefined).
bool isInt64(double value) {
  return std::fabs(value) < 0x1p63 && value == std::trunc(value);
}

/// `value` as the artifact states it: an integer when it is one.
std::string numberString(double value) {
  if (isInt64(value))
    return std::to_string(int64_t(value));
  char shown[32];
  std::snprintf(shown, sizeof(shown), "%g", value);
  return shown;
}

/// Whether `value` equals the product of `factors`, which may overflow.
bool equalsProduct(int64_t value, std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t factor : factors)
    if (__builtin_mul_overflow(product, factor, &product))
      return false;
  return product == value;
}

} // namespace

std::string mtrt::shapeString(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

// The schema's names, written once for the reader and the writer.
namespace key {
constexpr const char *kChecksum = "checksum";
constexpr const char *kFormat = "format", *kVersion = "version",
                     *kWorldSize = "world_size", *kGrid = "grid",
                     *kShape = "shape", *kAxes = "axes", *kParams = "params",
                     *kName = "name", *kDtype = "dtype",
                     *kPrograms = "programs", *kStage = "stage",
                     *kFlops = "flops_per_token", *kArena = "arena_bytes",
                     *kPersistent = "persistent_bytes", *kBuffers = "buffers",
                     *kId = "id", *kOffset = "offset", *kKind = "kind",
                     *kAlias = "alias", *kMicrobatch = "microbatch",
                     *kLayer = "layer", *kChunk = "chunk", *kShard = "shard",
                     *kAxis = "axis", *kCount = "count",
                     *kFullShape = "full_shape", *kDim = "dim",
                     *kChunks = "chunks", *kPieceAxis = "piece_axis",
                     *kPieceCount = "piece_count", *kValidRows = "valid_rows",
                     *kExperts = "experts", *kNames = "names",
                     *kCommands = "commands", *kKernel = "kernel",
                     *kPhase = "phase", *kIns = "ins", *kOuts = "outs",
                     *kOutputs = "outputs", *kGridAxis = "grid_axis",
                     *kStride = "stride", *kBase = "base", *kInit = "init",
                     *kStd = "std", *kGenerated = "generated_kernels",
                     *kFusedIn = "fused_in", *kTensor = "tensor", *kRow = "row",
                     *kKernelSource = "kernel_source", *kElements = "elements",
                     *kNumOutputs = "num_outputs",
                     *kOperandDtypes = "operand_dtypes",
                     *kOperandExtents = "operand_extents",
                     *kFlopsPerElement = "flops_per_element",
                     *kRowLength = "row_length", *kRowBlock = "row_block",
                     *kDropouts = "dropouts";
constexpr const char *kFormatName = "megatron-mlir-artifact";
} // namespace key

int64_t Artifact::axis(const std::string &name) const {
  for (size_t i = 0; i < gridAxes.size(); ++i)
    if (gridAxes[i] == name)
      return int64_t(i);
  return -1;
}

std::vector<int64_t> Artifact::coordsOf(int64_t rank) const {
  std::vector<int64_t> coords(gridShape.size(), 0);
  for (int64_t axis = int64_t(gridShape.size()) - 1; axis >= 0; --axis) {
    coords[axis] = rank % gridShape[axis];
    rank /= gridShape[axis];
  }
  return coords;
}

const RankProgram &Artifact::programOf(int64_t rank) const {
  int64_t pipeline = axis("pp");
  if (pipeline < 0)
    return programs.front();
  return programs[size_t(coordsOf(rank)[pipeline])];
}

RankProgram mtrt::specializeProgram(const Artifact &artifact, int64_t rank) {
  RankProgram program = artifact.programOf(rank);
  program.rank = rank;
  program.coords = artifact.coordsOf(rank);
  auto coordinate = [&](int64_t axis) {
    return axis >= 0 && axis < int64_t(program.coords.size())
               ? program.coords[axis]
               : 0;
  };
  for (BufferDesc &buffer : program.buffers) {
    // An expert's ZeRO piece is indexed among its replicas.
    auto pieceIndex = [&](int64_t axis) {
      return coordinate(axis) / buffer.pieceStride(axis);
    };
    buffer.shardIndex = buffer.shardDim < 0 ? pieceIndex(buffer.shardAxis)
                                            : coordinate(buffer.shardAxis);
    buffer.pieceIndex = pieceIndex(buffer.pieceAxis);
    // The rank's expert is the buffer's only name from here on (`find`
    // matches the others' in an artifact's program, not in the rank's).
    if (buffer.expertAxis >= 0) {
      buffer.name = buffer.expertNames[size_t(coordinate(buffer.expertAxis) %
                                              buffer.expertRanks)];
      buffer.expertNames.clear();
    }
  }
  for (Command &command : program.commands)
    for (const auto &[name, value] : command.rankParams)
      command.params[name] =
          double(value.base + value.stride * coordinate(value.gridAxis));
  return program;
}

Status mtrt::loadArtifact(const std::string &path, Artifact &artifact) {
  artifact = Artifact();
  MTRT_RETURN_IF_ERROR(refuseIrregularFile(path, "an artifact",
                                           "an artifact is read from a file"));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path + ": cannot open the artifact");
  std::stringstream text;
  text << in.rdbuf();
  return parseArtifact(text.str(), path, artifact);
}

Status mtrt::parseArtifact(const std::string &bytes, const std::string &path,
                           Artifact &artifact) {
  artifact = Artifact();
  artifact.contentDigest = fnv1a(bytes.data(), bytes.size());
  json document = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded())
    return Status::error(path +
                         ": not a megatron-mlir artifact: the file is not "
                         "valid JSON (truncated or corrupt?)");

  Reader reader(path);
  if (reader.string(document, key::kFormat, "artifact") != key::kFormatName) {
    MTRT_RETURN_IF_ERROR(reader.status());
    return Status::error(path + ": not a megatron-mlir artifact (format is '" +
                         document[key::kFormat].get<std::string>() + "')");
  }
  MTRT_RETURN_IF_ERROR(verifyChecksum(path, document, bytes));
  artifact.version = reader.integer(document, key::kVersion, "artifact");
  MTRT_RETURN_IF_ERROR(reader.status());
  if (artifact.version != kArtifactVersion)
    return Status::error(path + ": artifact version " +
                         std::to_string(artifact.version) +
                         " is not supported; this runtime reads version " +
                         std::to_string(kArtifactVersion) +
                         " (recompile the model with this release)");
  artifact.worldSize = reader.integer(document, key::kWorldSize, "artifact");
  if (document.contains(key::kGrid)) {
    const json *grid =
        reader.field(document, key::kGrid, "artifact", json::value_t::object);
    if (grid) {
      artifact.gridShape = reader.shape(*grid, "artifact.grid");
      for (const json &name :
           reader.array(*grid, key::kAxes, "artifact.grid")) {
        if (!name.is_string()) {
          reader.fail("artifact.grid.axes",
                      "axis names must be strings, got " + name.dump());
          break;
        }
        artifact.gridAxes.push_back(name.get<std::string>());
      }
      if (reader.ok() && artifact.gridAxes.size() != artifact.gridShape.size())
        reader.fail("artifact.grid",
                    std::to_string(artifact.gridAxes.size()) +
                        " axis names for a grid of " +
                        std::to_string(artifact.gridShape.size()) + " axes");
    }
  }

  const json &params = reader.array(document, key::kParams, "artifact");
  for (size_t i = 0; i < params.size() && reader.ok(); ++i) {
    std::string where = "params[" + std::to_string(i) + "]";
    ParamDesc param;
    param.name = reader.string(params[i], key::kName, where);
    param.dtype = reader.dtype(params[i], where);
    param.shape = reader.shape(params[i], where);
    if (params[i].contains(key::kInit)) {
      const json *init =
          reader.field(params[i], key::kInit, where, json::value_t::object);
      std::string at = where + ".init";
      std::string kind = init ? reader.string(*init, key::kKind, at) : "";
      if (kind == "normal") {
        param.init.kind = ParamInitSpec::Kind::Normal;
        const json *std =
            reader.field(*init, key::kStd, at, json::value_t::number_float);
        param.init.std = std ? std->get<double>() : 0.0;
        if (reader.ok() && !(param.init.std > 0.0))
          reader.fail(at + ".std", "must be positive");
      } else if (kind == "zeros") {
        param.init.kind = ParamInitSpec::Kind::Zeros;
      } else if (kind == "ones") {
        param.init.kind = ParamInitSpec::Kind::Ones;
      } else if (reader.ok()) {
        reader.fail(at + ".kind",
                    "is '" + kind + "', not normal, zeros or ones");
      }
    }
    if (params[i].contains(key::kFusedIn)) {
      const json *fused =
          reader.field(params[i], key::kFusedIn, where, json::value_t::object);
      std::string at = where + ".fused_in";
      if (fused) {
        param.fusedIn = reader.string(*fused, key::kTensor, at);
        param.fusedRow = reader.integer(*fused, key::kRow, at);
      }
      if (reader.ok() && param.fusedIn.empty())
        reader.fail(at + ".tensor", "must name a tensor");
      if (reader.ok() && param.fusedRow < 0)
        reader.fail(at + ".row", "must not be negative");
      if (reader.ok() && param.shape.empty())
        reader.fail(at, "a scalar parameter is no rows of a tensor");
    }
    artifact.params.push_back(std::move(param));
  }

  int64_t numAxes = int64_t(artifact.gridShape.size());
  auto checkAxis = [&](int64_t axis, const std::string &where) {
    if (reader.ok() && (axis < 0 || axis >= numAxes))
      reader.fail(where, "grid axis " + std::to_string(axis) +
                             " is not an axis of the " +
                             std::to_string(numAxes) + "-axis grid");
  };
  const json &programs = reader.array(document, key::kPrograms, "artifact");
  for (size_t r = 0; r < programs.size() && reader.ok(); ++r) {
    std::string where = "programs[" + std::to_string(r) + "]";
    const json &entry = programs[r];
    RankProgram program;
    program.stage = reader.integer(entry, key::kStage, where);
    program.arenaBytes = reader.integer(entry, key::kArena, where);
    if (entry.contains(key::kFlops))
      program.flopsPerToken = reader.integer(entry, key::kFlops, where);
    program.persistentBytes = reader.integer(entry, key::kPersistent, where);
    if (reader.ok() &&
        (program.arenaBytes < 0 || program.arenaBytes > kMaxArenaBytes ||
         program.persistentBytes < 0 ||
         program.persistentBytes > program.arenaBytes))
      reader.fail(where, "arena of " + std::to_string(program.arenaBytes) +
                             " bytes with a persistent region of " +
                             std::to_string(program.persistentBytes) +
                             " is not a plan (0 <= persistent <= arena <= "
                             "2^60)");
    if (reader.ok() && program.stage != int64_t(r))
      reader.fail(where + ".stage", "stage " + std::to_string(program.stage) +
                                        " out of sequence (expected " +
                                        std::to_string(r) + ")");

    const json &buffers = reader.array(entry, key::kBuffers, where);
    for (size_t b = 0; b < buffers.size() && reader.ok(); ++b) {
      std::string at = where + ".buffers[" + std::to_string(b) + "]";
      BufferDesc buffer;
      buffer.id = reader.integer(buffers[b], key::kId, at);
      buffer.offset = reader.integer(buffers[b], key::kOffset, at);
      buffer.dtype = reader.dtype(buffers[b], at);
      buffer.shape = reader.shape(buffers[b], at);
      buffer.kind = reader.string(buffers[b], key::kKind, at);
      if (buffers[b].contains(key::kName))
        buffer.name = reader.string(buffers[b], key::kName, at);
      if (buffers[b].contains(key::kAlias))
        if (const json *alias = reader.field(buffers[b], key::kAlias, at,
                                             json::value_t::boolean))
          buffer.alias = alias->get<bool>();
      if (buffers[b].contains(key::kMicrobatch)) {
        buffer.microbatch = reader.integer(buffers[b], key::kMicrobatch, at);
        if (reader.ok() && buffer.microbatch < 0)
          reader.fail(at + ".microbatch", "must not be negative");
      }
      if (buffers[b].contains(key::kExperts)) {
        std::string in = at + ".experts";
        const json *experts =
            reader.field(buffers[b], key::kExperts, at, json::value_t::object);
        if (experts) {
          buffer.expertAxis = reader.integer(*experts, key::kAxis, in);
          checkAxis(buffer.expertAxis, in + ".axis");
          const json &names = reader.array(*experts, key::kNames, in);
          for (size_t n = 0; n < names.size() && reader.ok(); ++n) {
            if (!names[n].is_string() || names[n].get<std::string>().empty())
              reader.fail(in + ".names[" + std::to_string(n) + "]",
                          "must be a parameter name");
            else
              buffer.expertNames.push_back(names[n].get<std::string>());
          }
          bool state = buffer.kind == "param" || buffer.kind == "exp_avg" ||
                       buffer.kind == "exp_avg_sq" ||
                       buffer.kind == "param_copy";
          if (reader.ok() && !state)
            reader.fail(in, "a buffer of kind '" + buffer.kind +
                                "' holds no expert's parameter");
          // Groups of consecutive ranks, each holding every expert once.
          buffer.expertRanks = int64_t(buffer.expertNames.size());
          int64_t axisRanks =
              reader.ok() ? artifact.gridShape[size_t(buffer.expertAxis)] : 0;
          if (reader.ok() &&
              (buffer.expertRanks < 2 || axisRanks % buffer.expertRanks != 0))
            reader.fail(in + ".names",
                        std::to_string(buffer.expertNames.size()) +
                            (buffer.expertNames.size() == 1 ? " name does"
                                                            : " names do") +
                            " not split the " + std::to_string(axisRanks) +
                            " ranks of grid axis " +
                            std::to_string(buffer.expertAxis) +
                            " into groups of at least 2");
          if (reader.ok() && buffer.expertNames.front() != buffer.name)
            reader.fail(in + ".names", "must start with the buffer's name '" +
                                           buffer.name + "'");
        }
      }
      // ZeRO pieces over the axis an expert's groups lie on are the
      // expert's, over its replicas: as many as the axis holds groups.
      auto piecesOver = [&](int64_t axis) {
        return artifact.gridShape[size_t(axis)] / buffer.pieceStride(axis);
      };
      if (buffers[b].contains(key::kShard)) {
        const json *shard =
            reader.field(buffers[b], key::kShard, at, json::value_t::object);
        if (shard) {
          std::string in = at + ".shard";
          buffer.shardAxis = reader.integer(*shard, key::kAxis, in);
          checkAxis(buffer.shardAxis, in + ".axis");
          buffer.shardCount = reader.integer(*shard, key::kCount, in);
          if (shard->contains(key::kDim)) {
            buffer.shardDim = reader.integer(*shard, key::kDim, in);
            buffer.shardChunks = reader.integer(*shard, key::kChunks, in);
          }
          if (shard->contains(key::kPieceAxis)) {
            buffer.pieceAxis = reader.integer(*shard, key::kPieceAxis, in);
            checkAxis(buffer.pieceAxis, in + ".piece_axis");
            buffer.pieceCount = reader.integer(*shard, key::kPieceCount, in);
            if (reader.ok() &&
                (buffer.shardDim < 0 || buffer.pieceCount <= 0 ||
                 buffer.pieceCount != piecesOver(buffer.pieceAxis)))
              reader.fail(
                  in,
                  "pieces over grid axis " + std::to_string(buffer.pieceAxis) +
                      " need a split dimension and a count equal "
                      "to the axis' size" +
                      (buffer.pieceAxis == buffer.expertAxis
                           ? " (an expert's pieces are over its " +
                                 std::to_string(piecesOver(buffer.pieceAxis)) +
                                 " replicas on the axis)"
                           : ""));
          }
          buffer.fullShape = reader.shape(
              json{{key::kShape, reader.array(*shard, key::kFullShape, in)}},
              in + ".full_shape");
          int64_t full = 1;
          for (int64_t dim : buffer.fullShape)
            full *= dim; // bounded: reader.shape checked the product
          // The pieces' count is checked before it divides: read from the
          // file, chunks times count can overflow, and a count that does
          // overflow cannot split any dimension reader.shape accepted.
          int64_t pieces = 0;
          bool badDim = buffer.shardDim >= int64_t(buffer.fullShape.size()) ||
                        buffer.shardChunks <= 0 || buffer.shardCount <= 0 ||
                        __builtin_mul_overflow(buffer.shardChunks,
                                               buffer.shardCount, &pieces) ||
                        (buffer.shardDim >= 0 &&
                         buffer.fullShape[buffer.shardDim] % pieces != 0);
          if (reader.ok() && badDim)
            reader.fail(in, "dimension " + std::to_string(buffer.shardDim) +
                                " in " + std::to_string(buffer.shardChunks) +
                                " chunks does not split the full shape " +
                                shapeString(buffer.fullShape) + " into " +
                                std::to_string(buffer.shardCount) + " pieces");
          // A ZeRO piece (of the flattened tensor, or of a split) is padded
          // to equal pieces: ceil(whole / parts) elements. A split is exact.
          // Only a count badDim accepted divides (it is positive).
          bool zeroPiece = buffer.shardDim < 0 || buffer.pieceCount > 1;
          int64_t parts =
              buffer.shardDim < 0 ? buffer.shardCount : buffer.pieceCount;
          int64_t whole =
              buffer.shardDim < 0 || badDim ? full : full / buffer.shardCount;
          // ceil(whole / parts) without whole + parts - 1, which a count
          // read from the file can overflow.
          bool fits =
              zeroPiece ? parts > 0 && buffer.numElements() ==
                                           whole / parts + (whole % parts != 0)
                        : equalsProduct(
                              full, {buffer.numElements(), buffer.shardCount});
          if (reader.ok() &&
              (buffer.shardCount !=
                   (buffer.shardDim < 0
                        ? piecesOver(buffer.shardAxis)
                        : artifact.gridShape[buffer.shardAxis]) ||
               !fits))
            reader.fail(
                in,
                std::to_string(buffer.shardCount) + " pieces of " +
                    std::to_string(full) + " elements over grid axis " +
                    std::to_string(buffer.shardAxis) +
                    " do not match the buffer's " +
                    std::to_string(buffer.numElements()) +
                    (buffer.shardDim < 0 &&
                             buffer.shardAxis == buffer.expertAxis
                         ? " (an expert's pieces are over its " +
                               std::to_string(piecesOver(buffer.shardAxis)) +
                               " replicas on the axis)"
                         : ""));
        }
      }
      // A padded vocabulary: its true rows, at most the full tensor's.
      if (reader.ok() && buffers[b].contains(key::kValidRows)) {
        buffer.validRows = reader.integer(buffers[b], key::kValidRows, at);
        const std::vector<int64_t> &full =
            buffer.sharded() ? buffer.fullShape : buffer.shape;
        int64_t rows = full.empty() ? 0 : full[0];
        if (reader.ok() && (buffer.validRows < 1 || buffer.validRows > rows))
          reader.fail(at + ".valid_rows",
                      std::to_string(buffer.validRows) +
                          " is not between 1 and the tensor's " +
                          std::to_string(rows) + " rows");
      }
      if (!reader.ok())
        break;
      if (buffer.id != static_cast<int64_t>(b))
        reader.fail(at, "id " + std::to_string(buffer.id) +
                            " out of sequence (expected " + std::to_string(b) +
                            ")");
      else if (buffer.offset < 0 || buffer.offset > program.arenaBytes ||
               buffer.bytes() > program.arenaBytes - buffer.offset)
        reader.fail(at, std::to_string(buffer.bytes()) + " bytes at offset " +
                            std::to_string(buffer.offset) +
                            " lie outside the arena of " +
                            std::to_string(program.arenaBytes) + " bytes");
      program.buffers.push_back(std::move(buffer));
    }

    // Generated kernels: names become symbols the backend looks up in the
    // code it compiles, so each is a C identifier, once.
    if (entry.contains(key::kGenerated)) {
      const json &kernels = reader.array(entry, key::kGenerated, where);
      for (size_t k = 0; k < kernels.size() && reader.ok(); ++k) {
        std::string at =
            where + ".generated_kernels[" + std::to_string(k) + "]";
        GeneratedKernel kernel;
        kernel.name = reader.string(kernels[k], key::kName, at);
        kernel.elements = reader.integer(kernels[k], key::kElements, at);
        kernel.numOutputs = reader.integer(kernels[k], key::kNumOutputs, at);
        kernel.flopsPerElement =
            reader.integer(kernels[k], key::kFlopsPerElement, at);
        if (kernels[k].contains(key::kRowLength))
          kernel.rowLength = reader.integer(kernels[k], key::kRowLength, at);
        if (kernels[k].contains(key::kRowBlock))
          kernel.rowBlock = reader.integer(kernels[k], key::kRowBlock, at);
        if (kernels[k].contains(key::kDropouts))
          kernel.dropouts = reader.integer(kernels[k], key::kDropouts, at);
        for (const json &name :
             reader.array(kernels[k], key::kOperandDtypes, at))
          kernel.operandTypes.push_back(reader.dtypeNamed(
              name.is_string() ? name.get<std::string>() : name.dump(),
              at + ".operand_dtypes"));
        for (const json &extent :
             reader.array(kernels[k], key::kOperandExtents, at)) {
          if (!extent.is_number_integer() || extent.get<int64_t>() <= 0) {
            reader.fail(at + ".operand_extents",
                        "extents must be positive integers, got " +
                            extent.dump());
            break;
          }
          kernel.operandExtents.push_back(extent.get<int64_t>());
        }
        if (!reader.ok())
          break;
        bool identifier =
            !kernel.name.empty() && kernel.name.size() <= 128 &&
            !std::isdigit(static_cast<unsigned char>(kernel.name[0]));
        for (char ch : kernel.name)
          identifier &=
              std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
        for (const GeneratedKernel &other : program.generatedKernels)
          if (other.name == kernel.name)
            reader.fail(at + ".name", "'" + kernel.name + "' is used twice");
        size_t operands = kernel.operandTypes.size();
        if (!identifier)
          reader.fail(at + ".name",
                      "'" + kernel.name + "' is not a C identifier");
        else if (kernel.elements <= 0 || kernel.elements > Reader::kMaxElements)
          reader.fail(at + ".elements",
                      std::to_string(kernel.elements) +
                          " is not a positive element count below 2^56");
        else if (operands != kernel.operandExtents.size() ||
                 operands > size_t(kGeneratedKernelMaxOperands) ||
                 kernel.numOutputs < 1 ||
                 kernel.numOutputs >= int64_t(operands) + 1)
          reader.fail(at, std::to_string(operands) + " operand dtypes, " +
                              std::to_string(kernel.operandExtents.size()) +
                              " extents and " +
                              std::to_string(kernel.numOutputs) +
                              " outputs do not describe a kernel (at most 32 "
                              "operands, at least one output)");
        else if (kernel.flopsPerElement < 0 || kernel.flopsPerElement > 1000000)
          reader.fail(at + ".flops_per_element",
                      std::to_string(kernel.flopsPerElement) +
                          " is out of range 0 .. 1000000");
        else if (kernel.rowLength < 0 ||
                 (kernel.rowLength > 0 &&
                  kernel.elements > Reader::kMaxElements / kernel.rowLength))
          reader.fail(at + ".row_length", std::to_string(kernel.rowLength) +
                                              " is not a row length of " +
                                              std::to_string(kernel.elements) +
                                              " rows");
        else if (kernel.dropouts < 0 ||
                 kernel.dropouts > kGeneratedKernelMaxOperands ||
                 (kernel.dropouts > 0 &&
                  (kernel.rowLength > 0 ||
                   operands + 1 > size_t(kGeneratedKernelMaxOperands))))
          reader.fail(at + ".dropouts",
                      std::to_string(kernel.dropouts) +
                          " is not a count of dropouts of an elementwise "
                          "kernel with room for their parameter blocks");
        else if (kernel.rowBlock < 0 || kernel.rowBlock > (int64_t(1) << 20) ||
                 (kernel.rowBlock > 0 && kernel.rowLength == 0))
          reader.fail(at + ".row_block",
                      std::to_string(kernel.rowBlock) +
                          " is not a number of rows per block of a row "
                          "kernel");
        // A row kernel indexes whole rows, one value per row (token ids
        // among them), one row broadcast along the rows (a norm's weight)
        // or a scalar; a row-block kernel's outputs may also be one row
        // per block (partial sums).
        for (size_t o = 0; o < operands && reader.ok() && kernel.rowLength;
             ++o) {
          DType type = kernel.operandTypes[o];
          int64_t extent = kernel.operandExtents[o];
          bool output = int64_t(o) >= int64_t(operands) - kernel.numOutputs;
          bool rows = extent == kernel.elements * kernel.rowLength,
               perRow = extent == kernel.elements,
               oneRow = extent == kernel.rowLength,
               perBlock = kernel.rowBlock > 0 &&
                          extent == kernel.numRowBlocks() * kernel.rowLength;
          if (type == DType::I32 ? output || !perRow
                                 : type != DType::F32 && type != DType::BF16 &&
                                       type != DType::F16)
            reader.fail(at + ".operand_dtypes",
                        "operand " + std::to_string(o) + " is '" +
                            dtypeName(type) +
                            "': a row kernel's operands are floating point, "
                            "or i32 token ids (one per row) it reads");
          else if (!rows && !perRow && !(output && perBlock) &&
                   (output || (extent != 1 && !oneRow)))
            reader.fail(at + ".operand_extents",
                        "operand " + std::to_string(o) + " has " +
                            std::to_string(extent) +
                            " elements: a row kernel's operands are " +
                            std::to_string(kernel.elements) + " rows of " +
                            std::to_string(kernel.rowLength) +
                            ", one value per row, (inputs) one row or a "
                            "scalar, or (outputs of a row-block kernel) "
                            "one row per block");
        }
        // Extents are what the kernel indexes: outputs and full inputs by
        // the element index, row-broadcast inputs by the column of one row
        // length (the generated code reads `c = i % rowLength`).
        std::optional<int64_t> rowLength;
        for (size_t o = 0; o < operands && reader.ok() && !kernel.rowLength;
             ++o) {
          DType type = kernel.operandTypes[o];
          int64_t extent = kernel.operandExtents[o];
          bool output = int64_t(o) >= int64_t(operands) - kernel.numOutputs;
          if (type != DType::F32 && type != DType::BF16 && type != DType::F16)
            reader.fail(at + ".operand_dtypes",
                        std::string("'") + dtypeName(type) +
                            "' is not a floating-point type");
          else if (extent == kernel.elements)
            continue;
          else if (output)
            reader.fail(at + ".operand_extents",
                        "output " + std::to_string(o) + " has " +
                            std::to_string(extent) + " elements, not the " +
                            std::to_string(kernel.elements) +
                            " the kernel writes");
          else if (kernel.elements % extent != 0)
            reader.fail(at + ".operand_extents",
                        std::to_string(extent) + " does not divide the " +
                            std::to_string(kernel.elements) + " elements");
          else if (rowLength && *rowLength != extent)
            reader.fail(at + ".operand_extents",
                        "broadcast inputs of " + std::to_string(*rowLength) +
                            " and " + std::to_string(extent) +
                            " elements; a kernel has one row length");
          else
            rowLength = extent;
        }
        program.generatedKernels.push_back(std::move(kernel));
      }
      program.kernelSource = reader.string(entry, key::kKernelSource, where);
      // A row-block kernel's block is compiled into its launcher; the
      // partial outputs were sized by the artifact's: they must agree, or
      // the kernel would write past them. (Source without the launcher is
      // not the compiler's, and fails to build or to define the kernel.)
      for (size_t k = 0; k < program.generatedKernels.size() && reader.ok();
           ++k) {
        const GeneratedKernel &kernel = program.generatedKernels[k];
        // A kernel reads one parameter block per dropout it draws: as many
        // as the artifact states, or it would read past them.
        std::string opening = "MT_KERNEL(" + kernel.name + ")";
        if (size_t begin = program.kernelSource.find(opening);
            begin != std::string::npos) {
          size_t end = program.kernelSource.find("MT_KERNEL(", begin + 1);
          std::string body = program.kernelSource.substr(
              begin, end == std::string::npos ? end : end - begin);
          // The blocks its mt_dropout calls read: each names its block by
          // its first argument, `mt_rng + <k * kFusedDropoutWords>` (an
          // element kernel writes its body twice, for full groups and the
          // last, so a block is named more than once). Any other argument
          // could read anywhere.
          int64_t draws = 0;
          std::optional<std::string> unreadable; // the first bad argument
          for (size_t at = body.find("mt_dropout("); at != std::string::npos;
               at = body.find("mt_dropout(", at + 1)) {
            size_t from = at + std::strlen("mt_dropout(");
            std::string argument =
                body.substr(from, body.find(',', from) - from);
            const std::string prefix = "mt_rng + ";
            std::string digits = argument.rfind(prefix, 0) == 0
                                     ? argument.substr(prefix.size())
                                     : "";
            bool decimal =
                !digits.empty() && digits.size() <= 12 &&
                std::all_of(digits.begin(), digits.end(),
                            [](char ch) { return ch >= '0' && ch <= '9'; });
            int64_t offset = decimal ? std::stoll(digits) : -1;
            if (offset < 0 || offset % kFusedDropoutWords != 0) {
              unreadable = argument;
              break;
            }
            draws = std::max<int64_t>(draws, offset / kFusedDropoutWords + 1);
          }
          if (unreadable)
            reader.fail(where + ".generated_kernels[" + std::to_string(k) + "]",
                        "its source draws a dropout mask from '" + *unreadable +
                            "', not from one of its parameter blocks "
                            "(mt_rng + a multiple of " +
                            std::to_string(kFusedDropoutWords) + ")");
          else if (draws != kernel.dropouts)
            reader.fail(where + ".generated_kernels[" + std::to_string(k) +
                            "].dropouts",
                        std::to_string(kernel.dropouts) +
                            ", but its source draws the masks of " +
                            std::to_string(draws));
        }
        std::string launcher = "MT_ROW_BLOCK_LAUNCHER(" + kernel.name + ", ";
        size_t at = program.kernelSource.find(launcher);
        if (at == std::string::npos)
          continue;
        std::string compiled =
            at == std::string::npos
                ? ""
                : program.kernelSource.substr(
                      at + launcher.size(), program.kernelSource.find(')', at) -
                                                at - launcher.size());
        std::string stated =
            kernel.rowBlock ? std::to_string(kernel.rowBlock) + "LL" : "";
        if (compiled != stated)
          reader.fail(
              where + ".generated_kernels[" + std::to_string(k) + "].row_block",
              (kernel.rowBlock ? std::to_string(kernel.rowBlock)
                               : std::string("none")) +
                  ", but the kernel source launches blocks of " +
                  (compiled.empty() ? std::string("none")
                                    : compiled.substr(0, compiled.size() - 2)));
      }
    }

    const json &commands = reader.array(entry, key::kCommands, where);
    for (size_t c = 0; c < commands.size() && reader.ok(); ++c) {
      std::string at = where + ".commands[" + std::to_string(c) + "]";
      Command command;
      command.kernel = reader.string(commands[c], key::kKernel, at);
      if (commands[c].contains(key::kPhase)) {
        std::string phase = reader.string(commands[c], key::kPhase, at);
        if (phase == phaseName(Phase::Forward))
          command.phase = Phase::Forward;
        else if (phase == phaseName(Phase::Backward))
          command.phase = Phase::Backward;
        else if (phase == phaseName(Phase::Optimizer))
          command.phase = Phase::Optimizer;
        else if (reader.ok())
          reader.fail(at + ".phase", "is '" + phase +
                                         "', not forward, backward or "
                                         "optimizer");
      }
      if (commands[c].contains(key::kMicrobatch)) {
        command.microbatch = reader.integer(commands[c], key::kMicrobatch, at);
        if (reader.ok() && command.microbatch < 0)
          reader.fail(at + ".microbatch", "must not be negative");
      }
      if (commands[c].contains(key::kChunk)) {
        command.chunk = reader.integer(commands[c], key::kChunk, at);
        if (reader.ok() && command.chunk < 0)
          reader.fail(at + ".chunk", "must not be negative");
      }
      if (commands[c].contains(key::kLayer)) {
        command.layer = reader.integer(commands[c], key::kLayer, at);
        if (reader.ok() && command.layer < 0)
          reader.fail(at + ".layer", "must not be negative");
      }
      for (const char *list : {key::kIns, key::kOuts}) {
        for (const json &id : reader.array(commands[c], list, at)) {
          if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
              id.get<int64_t>() >=
                  static_cast<int64_t>(program.buffers.size())) {
            reader.fail(at + "." + list, "no buffer " + id.dump());
            break;
          }
          (list == key::kIns ? command.ins : command.outs)
              .push_back(id.get<int64_t>());
        }
      }
      const json *params =
          reader.field(commands[c], key::kParams, at, json::value_t::object);
      if (params)
        for (auto &[name, value] : params->items()) {
          if (value.is_boolean()) {
            command.params[name] = value.get<bool>() ? 1.0 : 0.0;
          } else if (value.is_number()) {
            command.params[name] = value.get<double>();
          } else if (value.is_object()) {
            std::string in = at + ".params." + name;
            RankParam param;
            param.gridAxis = reader.integer(value, key::kGridAxis, in);
            param.stride = reader.integer(value, key::kStride, in);
            param.base = reader.integer(value, key::kBase, in);
            checkAxis(param.gridAxis, in + ".grid_axis");
            // Every rank's value, base + stride * coordinate, is computed
            // without overflow and held exactly in a double.
            int64_t last = 0, reach = 0;
            constexpr int64_t kExact = int64_t(1) << 53;
            if (reader.ok() &&
                (__builtin_mul_overflow(param.stride,
                                        artifact.gridShape[param.gridAxis] - 1,
                                        &reach) ||
                 __builtin_add_overflow(param.base, reach, &last) ||
                 param.base < -kExact || param.base > kExact ||
                 last < -kExact || last > kExact))
              reader.fail(in, "base " + std::to_string(param.base) +
                                  " and stride " +
                                  std::to_string(param.stride) +
                                  " give values beyond 2^53 on the grid");
            command.rankParams[name] = param;
          }
        }
      program.commands.push_back(std::move(command));
    }

    const json *outputs =
        reader.field(entry, key::kOutputs, where, json::value_t::object);
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
    // Every command against its kernel's typed signature, then the plan:
    // buffers live at the same time do not share bytes.
    for (size_t c = 0; c < program.commands.size() && reader.ok(); ++c)
      if (Status typed = checkKernelSignature(
              program.commands[c], program.buffers, artifact.gridShape,
              program.generatedKernels);
          !typed)
        reader.fail(where + ".commands[" + std::to_string(c) + "] (" +
                        program.commands[c].kernel + ")",
                    typed.message());
    if (reader.ok())
      if (Status planned = checkArenaLifetimes(program); !planned)
        reader.fail(where, planned.message());
    artifact.programs.push_back(std::move(program));
  }
  MTRT_RETURN_IF_ERROR(reader.status());
  if (artifact.programs.empty())
    return Status::error(path + ": the artifact holds no program");
  for (size_t i = 0; i < artifact.params.size(); ++i) {
    bool held = false;
    for (const RankProgram &program : artifact.programs)
      held |= program.find("param", artifact.params[i].name) != nullptr;
    if (!held)
      return Status::error(path + ": params[" + std::to_string(i) +
                           "]: parameter '" + artifact.params[i].name +
                           "' is held by no program");
  }
  int64_t gridSize = 1;
  for (int64_t dim : artifact.gridShape)
    gridSize *= dim;
  if (gridSize != artifact.worldSize)
    return Status::error(path + ": the grid has " + std::to_string(gridSize) +
                         " ranks but world_size is " +
                         std::to_string(artifact.worldSize));
  int64_t pipeline = artifact.axis("pp");
  int64_t stages = pipeline < 0 ? 1 : artifact.gridShape[pipeline];
  if (int64_t(artifact.programs.size()) != stages)
    return Status::error(path + ": " + std::to_string(stages) +
                         " pipeline stage" + (stages == 1 ? "" : "s") +
                         " but " + std::to_string(artifact.programs.size()) +
                         " programs are present");
  // A transfer's peer is another stage of the pipeline.
  for (size_t p = 0; p < artifact.programs.size(); ++p)
    for (size_t c = 0; c < artifact.programs[p].commands.size(); ++c) {
      const Command &command = artifact.programs[p].commands[c];
      if (command.kernel != "send" && command.kernel != "recv")
        continue;
      std::string where = path + ": programs[" + std::to_string(p) +
                          "].commands[" + std::to_string(c) + "]: ";
      if (!command.has("peer_stage"))
        return Status::error(where + command.kernel + " has no peer_stage");
      double peer = command.get("peer_stage", -1);
      if (peer < 0 || peer >= double(stages) || peer == double(p))
        return Status::error(where + command.kernel + " names peer stage " +
                             numberString(peer) + ", not another of the " +
                             std::to_string(stages) + " pipeline stages");
    }
  return Status::ok();
}

void mtrt::writeArtifact(const Artifact &artifact, std::ostream &os) {
  json document = {{key::kFormat, key::kFormatName},
                   {key::kVersion, artifact.version},
                   {key::kWorldSize, artifact.worldSize}};
  if (!artifact.gridShape.empty())
    document[key::kGrid] = {{key::kShape, artifact.gridShape},
                            {key::kAxes, artifact.gridAxes}};
  json params = json::array();
  for (const ParamDesc &param : artifact.params) {
    json entry = {{key::kName, param.name},
                  {key::kDtype, dtypeName(param.dtype)},
                  {key::kShape, param.shape}};
    switch (param.init.kind) {
    case ParamInitSpec::Kind::Normal:
      entry[key::kInit] = {{key::kKind, "normal"}, {key::kStd, param.init.std}};
      break;
    case ParamInitSpec::Kind::Zeros:
      entry[key::kInit] = {{key::kKind, "zeros"}};
      break;
    case ParamInitSpec::Kind::Ones:
      entry[key::kInit] = {{key::kKind, "ones"}};
      break;
    case ParamInitSpec::Kind::None:
      break;
    }
    if (!param.fusedIn.empty())
      entry[key::kFusedIn] = {{key::kTensor, param.fusedIn},
                              {key::kRow, param.fusedRow}};
    params.push_back(std::move(entry));
  }
  document[key::kParams] = std::move(params);
  json programs = json::array();
  for (const RankProgram &program : artifact.programs) {
    json buffers = json::array();
    for (const BufferDesc &buffer : program.buffers) {
      json entry = {{key::kId, buffer.id},
                    {key::kOffset, buffer.offset},
                    {key::kDtype, dtypeName(buffer.dtype)},
                    {key::kShape, buffer.shape},
                    {key::kKind, buffer.kind}};
      if (!buffer.name.empty())
        entry[key::kName] = buffer.name;
      if (buffer.alias)
        entry[key::kAlias] = true;
      if (buffer.microbatch >= 0)
        entry[key::kMicrobatch] = buffer.microbatch;
      if (buffer.validRows >= 0)
        entry[key::kValidRows] = buffer.validRows;
      if (buffer.expertAxis >= 0)
        entry[key::kExperts] = {{key::kAxis, buffer.expertAxis},
                                {key::kNames, buffer.expertNames}};
      if (buffer.sharded()) {
        json shard = {{key::kAxis, buffer.shardAxis},
                      {key::kCount, buffer.shardCount},
                      {key::kFullShape, buffer.fullShape}};
        if (buffer.shardDim >= 0) {
          shard[key::kDim] = buffer.shardDim;
          shard[key::kChunks] = buffer.shardChunks;
        }
        if (buffer.pieceAxis >= 0) {
          shard[key::kPieceAxis] = buffer.pieceAxis;
          shard[key::kPieceCount] = buffer.pieceCount;
        }
        entry[key::kShard] = std::move(shard);
      }
      buffers.push_back(std::move(entry));
    }
    json commands = json::array();
    for (const Command &command : program.commands) {
      json params = json::object();
      for (const auto &[name, value] : command.params) {
        // Integral values are written as integers, the way they were given.
        if (isInt64(value))
          params[name] = int64_t(value);
        else
          params[name] = value;
      }
      for (const auto &[name, value] : command.rankParams)
        params[name] = {{key::kGridAxis, value.gridAxis},
                        {key::kStride, value.stride},
                        {key::kBase, value.base}};
      json entry = {{key::kKernel, command.kernel},
                    {key::kIns, command.ins},
                    {key::kOuts, command.outs},
                    {key::kParams, std::move(params)}};
      if (command.phase != Phase::None)
        entry[key::kPhase] = phaseName(command.phase);
      if (command.microbatch >= 0)
        entry[key::kMicrobatch] = command.microbatch;
      if (command.chunk >= 0)
        entry[key::kChunk] = command.chunk;
      if (command.layer >= 0)
        entry[key::kLayer] = command.layer;
      commands.push_back(std::move(entry));
    }
    json entry = {{key::kStage, program.stage},
                  {key::kArena, program.arenaBytes},
                  {key::kPersistent, program.persistentBytes},
                  {key::kBuffers, std::move(buffers)},
                  {key::kCommands, std::move(commands)},
                  {key::kOutputs, program.outputs}};
    if (program.flopsPerToken > 0)
      entry[key::kFlops] = program.flopsPerToken;
    if (!program.generatedKernels.empty()) {
      json kernels = json::array();
      for (const GeneratedKernel &kernel : program.generatedKernels) {
        json dtypes = json::array();
        for (DType type : kernel.operandTypes)
          dtypes.push_back(dtypeName(type));
        kernels.push_back({{key::kName, kernel.name},
                           {key::kElements, kernel.elements},
                           {key::kNumOutputs, kernel.numOutputs},
                           {key::kOperandDtypes, std::move(dtypes)},
                           {key::kOperandExtents, kernel.operandExtents},
                           {key::kFlopsPerElement, kernel.flopsPerElement}});
        if (kernel.rowLength)
          kernels.back()[key::kRowLength] = kernel.rowLength;
        if (kernel.rowBlock)
          kernels.back()[key::kRowBlock] = kernel.rowBlock;
        if (kernel.dropouts)
          kernels.back()[key::kDropouts] = kernel.dropouts;
      }
      entry[key::kGenerated] = std::move(kernels);
      entry[key::kKernelSource] = program.kernelSource;
    }
    programs.push_back(std::move(entry));
  }
  document[key::kPrograms] = std::move(programs);
  // The checksum covers every byte of the file but its own 16 digits.
  document[key::kChecksum] = std::string(kChecksumPrefix) + kChecksumZeros;
  os << sealArtifactText(document.dump() + "\n");
}

std::string mtrt::sealArtifactText(std::string text) {
  size_t prefix = std::strlen(kChecksumPrefix);
  size_t at = text.find("\"" + std::string(kChecksumPrefix));
  if (at == std::string::npos || at + 1 + prefix + 16 > text.size())
    return text;
  size_t digits = at + 1 + prefix;
  text.replace(digits, 16, kChecksumZeros);
  uint64_t sum = fnv1a(text.data(), text.size());
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(sum));
  text.replace(digits, 16, hex);
  return text;
}
