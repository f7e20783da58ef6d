//===- Artifact.h - The compiled artifact megatron-run loads ----*- C++ -*-===//
//
// The artifact is one JSON document written by
// `megatron-translate --export-artifact`:
//
//   {"format": "megatron-mlir-artifact", "version": 1, "world_size": W,
//    "grid": {"shape": [dp, tp]},                   empty shape: no grid
//    "params": [{"name", "dtype", "shape"}],          full, unsharded shapes
//    "ranks": [{"rank", "coords"?, "flops_per_token"?, "arena_bytes",
//               "persistent_bytes",
//               "buffers": [{"id", "offset", "dtype", "shape", "kind",
//                            "name"?, "alias"?,
//                            "shard"?: {"index", "count", "full_shape",
//                                       "dim"?, "chunks"?, "piece_index"?,
//                                       "piece_count"?, "valid_rows"?}}],
//               "commands": [{"kernel", "ins": [id], "outs": [id],
//                             "params": {name: number or bool}}],
//               "outputs": {"loss": id, "grad_norm": id}}]}
//
// Buffer kinds: param, exp_avg, exp_avg_sq (named by the parameter), input
// (named by its role: tokens, labels, step, lr, adam_beta1, adam_beta2,
// adam_eps, weight_decay, clip_grad), activation, gradient, constant.
// Commands run in order; a command's sizes come from its buffers' shapes.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_ARTIFACT_H
#define MTRT_ARTIFACT_H

#include "mtrt/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mtrt {

/// The artifact version this runtime reads.
constexpr int64_t kArtifactVersion = 1;

enum class DType { F32, F16, BF16, I32, I64 };

/// Bytes per element.
int64_t dtypeSize(DType dtype);
/// "f32", "i32", ...
const char *dtypeName(DType dtype);

struct BufferDesc {
  int64_t id = 0;
  int64_t offset = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::string kind;
  std::string name;
  bool alias = false;
  /// A ZeRO piece: piece `shardIndex` of `shardCount` equal contiguous pieces
  /// of the flattened tensor of `fullShape` (empty when not sharded).
  std::vector<int64_t> fullShape;
  int64_t shardIndex = 0;
  int64_t shardCount = 1;
  /// A tensor-parallel split instead: piece `shardIndex` of dimension
  /// `shardDim` within each of `shardChunks` chunks (-1: a ZeRO piece).
  int64_t shardDim = -1;
  int64_t shardChunks = 1;
  /// ZeRO on tensor-parallel ranks: only piece `pieceIndex` of
  /// `pieceCount` of that split, flattened.
  int64_t pieceIndex = 0;
  int64_t pieceCount = 1;
  /// A vocabulary padded to a multiple of tp: rows of the full tensor from
  /// `validRows` on are padding, absent from checkpoints (-1: none).
  int64_t validRows = -1;

  bool sharded() const { return !fullShape.empty(); }
  int64_t numElements() const;
  int64_t bytes() const { return numElements() * dtypeSize(dtype); }
};

struct Command {
  std::string kernel;
  std::vector<int64_t> ins, outs;
  /// Numeric and boolean parameters (booleans as 0 or 1).
  std::map<std::string, double> params;

  bool has(const std::string &name) const { return params.count(name) != 0; }
  double get(const std::string &name, double fallback) const {
    auto it = params.find(name);
    return it == params.end() ? fallback : it->second;
  }
};

struct RankProgram {
  int64_t rank = 0;
  /// Coordinates on the device grid (empty without one).
  std::vector<int64_t> coords;
  int64_t arenaBytes = 0;
  int64_t persistentBytes = 0;
  /// Training FLOPs per token of the model (0 when unknown).
  int64_t flopsPerToken = 0;
  std::vector<BufferDesc> buffers; // indexed by id
  std::vector<Command> commands;
  std::map<std::string, int64_t> outputs;

  /// The first buffer of `kind` named `name`, or nullptr.
  const BufferDesc *find(const std::string &kind,
                         const std::string &name) const;
};

struct ParamDesc {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

struct Artifact {
  int64_t version = 0;
  int64_t worldSize = 0;
  /// The device grid: axis 0 data-parallel, axis 1 tensor-parallel ranks.
  std::vector<int64_t> gridShape;
  std::vector<ParamDesc> params;
  std::vector<RankProgram> ranks;
};

/// Reads and validates the artifact at `path`: the format and version, that
/// every buffer lies inside its arena, every command names existing buffers,
/// and every parameter buffer matches the parameter table. Errors name the
/// file and the offending rank, buffer or command.
Status loadArtifact(const std::string &path, Artifact &artifact);

} // namespace mtrt

#endif // MTRT_ARTIFACT_H
