//===- Artifact.h - The compiled artifact megatron-run loads ----*- C++ -*-===//
//
// The artifact is one JSON document. Its schema is defined once, here and in
// Artifact.cpp, which both reads it (megatron-run) and writes it
// (`megatron-translate --export-artifact` builds an `Artifact` and calls
// `writeArtifact`), so the two sides cannot drift apart:
//
//   {"format": "megatron-mlir-artifact", "version": 5, "world_size": W,
//    "grid": {"shape": [pp?, dp, tp], "axes": ["pp"?, "dp", "tp"]},
//    "params": [{"name", "dtype", "shape",            full, unsharded shapes
//                "init"?: {"kind": "normal" | "zeros" | "ones", "std"?},
//                "fused_in"?: {"tensor", "row"}}],
//    "programs": [{"stage", "flops_per_token"?, "arena_bytes",
//                  "persistent_bytes",
//                  "buffers": [{"id", "offset", "dtype", "shape", "kind",
//                               "name"?, "alias"?, "microbatch"?,
//                               "valid_rows"?,
//                               "experts"?: {"axis", "names"},
//                               "shard"?: {"axis", "count", "full_shape",
//                                          "dim"?, "chunks"?, "piece_axis"?,
//                                          "piece_count"?}}],
//                  "commands": [{"kernel", "ins": [id], "outs": [id],
//                                "phase"?, "microbatch"?, "chunk"?, "layer"?,
//                                "params": {name: number, bool, or
//                                  {"grid_axis", "stride", "base"}}}],
//                  "outputs": {"loss": id, "grad_norm": id}}]}
//
// Programs are SPMD: one per role, shared by its ranks. Without a "pp" axis
// one program serves every rank; with one, rank r runs the program whose
// "stage" is r's coordinate on it. Whatever differs between the ranks of a
// program is given relative to their grid coordinates (a buffer's piece is
// the coordinate on its shard "axis"; a per-rank parameter is
// base + stride * coordinate(grid_axis)) and resolved by
// `specializeProgram` when a rank loads its program, so the artifact's size
// does not grow with dp or tp. Rank r's coordinates are row-major on the
// grid: tensor-parallel ranks fastest, then data, then pipeline (Megatron).
//
// Buffer kinds: param, param_copy (its 16-bit copy, which the runtime fills
// from it and checkpoints leave out), exp_avg, exp_avg_sq (named by the
// parameter), input
// (named by its role: tokens, labels, step, lr, adam_beta1, adam_beta2,
// adam_eps, weight_decay, clip_grad; tokens and labels carry their
// microbatch), activation, gradient, constant. Commands run in order; a
// command's sizes come from its buffers' shapes. `send` and `recv` move a
// buffer to or from the same-coordinate rank of stage "peer_stage".
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_ARTIFACT_H
#define MTRT_ARTIFACT_H

#include "mtrt/Status.h"

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace mtrt {

/// The artifact version this runtime reads and the exporter writes (3: the
/// file carries a checksum; 4: qkv_attention writes its rows' log-sum-exp
/// and qkv_attention_grad reads it with the output; 5: a padded
/// vocabulary's `valid_rows` is the buffer's, split or not, not its
/// shard's).
constexpr int64_t kArtifactVersion = 5;

/// The most bytes one program's arena may hold: far beyond any device, and
/// small enough that offsets, alignment and sums of buffers stay in int64.
/// mt-lower-to-runtime plans within it and the loader refuses more.
constexpr int64_t kMaxArenaBytes = int64_t(1) << 60;

/// Element types. F64 is the runtime's own (reductions in double between
/// ranks); no artifact buffer has it.
enum class DType { F32, F16, BF16, I32, I64, F64 };

/// Bytes per element.
int64_t dtypeSize(DType dtype);
/// "[2, 8, 64]": a shape as errors print it.
std::string shapeString(const std::vector<int64_t> &shape);
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
  /// A data input of one microbatch of the step (-1: not one).
  int64_t microbatch = -1;
  /// A ZeRO piece: piece `shardIndex` of `shardCount` equal contiguous pieces
  /// of the flattened tensor of `fullShape` (empty when not sharded), padded
  /// with zeros at its end to a multiple of `shardCount` where that does
  /// not divide it (as Megatron-LM's distributed optimizer pads). The index
  /// is the rank's coordinate on grid axis `shardAxis`, set by
  /// `specializeProgram`.
  std::vector<int64_t> fullShape;
  int64_t shardAxis = -1;
  int64_t shardIndex = 0;
  int64_t shardCount = 1;
  /// A tensor-parallel split instead: piece `shardIndex` of dimension
  /// `shardDim` within each of `shardChunks` chunks (-1: a ZeRO piece).
  int64_t shardDim = -1;
  int64_t shardChunks = 1;
  /// ZeRO on tensor-parallel ranks: only piece `pieceIndex` of
  /// `pieceCount` of that split, flattened (and padded as a ZeRO piece is);
  /// the index is the coordinate on grid axis `pieceAxis`.
  int64_t pieceAxis = -1;
  int64_t pieceIndex = 0;
  int64_t pieceCount = 1;
  /// A padded vocabulary (to a multiple of tp, or of Megatron-LM's
  /// --make-vocab-size-divisible-by): rows of the full tensor from
  /// `validRows` on are padding, absent from checkpoints (-1: none).
  int64_t validRows = -1;
  /// Expert parallelism: a parameter (or its state) that holds a different
  /// expert on each of `expertRanks` consecutive coordinates of grid axis
  /// `expertAxis` (-1: none), the one `expertNames` names there: coordinate
  /// c holds expertNames[c % expertRanks], so the axis is groups of
  /// `expertRanks` ranks each holding every expert once.
  /// `specializeProgram` sets `name` to the rank's and clears the list.
  /// Its ZeRO pieces over that axis (`shardAxis` or `pieceAxis`) are over
  /// the expert's replicas, the coordinates equal modulo `expertRanks`:
  /// axis size / `expertRanks` of them, coordinate c holding piece
  /// c / `expertRanks`.
  int64_t expertAxis = -1;
  int64_t expertRanks = 0;
  std::vector<std::string> expertNames;

  bool sharded() const { return !fullShape.empty(); }
  /// How many consecutive coordinates of grid axis `axis` share one ZeRO
  /// piece index: an expert's group size on its expert axis (its pieces
  /// are over its replicas, coordinate c holding piece c / expertRanks),
  /// else 1.
  int64_t pieceStride(int64_t axis) const {
    return axis == expertAxis && expertRanks > 0 ? expertRanks : 1;
  }
  int64_t numElements() const;
  int64_t bytes() const { return numElements() * dtypeSize(dtype); }
};

/// A kernel parameter that differs between the ranks sharing a program:
/// `base + stride * coordinate(gridAxis)`.
struct RankParam {
  int64_t gridAxis = 0;
  int64_t stride = 0;
  int64_t base = 0;
};

/// The part of the training step a command belongs to, as the compiler's
/// schedule states it (None where it states none). It changes nothing the
/// command computes: `megatron-run --trace` groups commands by it.
enum class Phase { None, Forward, Backward, Optimizer };

/// "forward", "backward", "optimizer" (and "" for None).
const char *phaseName(Phase phase);

struct Command {
  std::string kernel;
  std::vector<int64_t> ins, outs;
  Phase phase = Phase::None;
  /// The microbatch of the schedule's action the command belongs to (-1:
  /// none, as for the optimizer).
  int64_t microbatch = -1;
  /// Under the interleaved schedule, the model chunk of its rank the
  /// action runs (-1: none).
  int64_t chunk = -1;
  /// The transformer layer of the op the command runs (-1: none stated).
  int64_t layer = -1;
  /// Numeric and boolean parameters (booleans as 0 or 1); after
  /// `specializeProgram`, the per-rank ones too.
  std::map<std::string, double> params;
  /// Per-rank parameters, as the artifact states them.
  std::map<std::string, RankParam> rankParams;

  bool has(const std::string &name) const { return params.count(name) != 0; }
  double get(const std::string &name, double fallback) const {
    auto it = params.find(name);
    return it == params.end() ? fallback : it->second;
  }
};

/// A kernel the compiler generated for one mt.fusion region
/// (`mtrt.generated_kernel`), launched by a `fused` command whose
/// `generated` parameter is its index. Operand k (inputs first, then
/// `numOutputs` outputs) holds `operandTypes[k]` and has
/// `operandExtents[k]` elements: `elements`, or for row-broadcast inputs
/// one row length that divides it. Its code is in the program's
/// `kernelSource`, which the backend compiles and runs in its own process:
/// an artifact is trusted code, as a shared library is.
struct GeneratedKernel {
  std::string name;
  int64_t elements = 0;
  int64_t numOutputs = 0;
  std::vector<DType> operandTypes;
  std::vector<int64_t> operandExtents;
  /// Per element of the domain, or per element of a row (a row kernel).
  int64_t flopsPerElement = 0;
  /// A row kernel's row length: `elements` rows of it. 0: elementwise.
  int64_t rowLength = 0;
  /// A row-block kernel's rows per block (0: none): it runs whole blocks
  /// of rows, so the rows are split on block boundaries, and its partial
  /// outputs hold one row per block (ceil(elements / rowBlock) rows).
  int64_t rowBlock = 0;
  /// An elementwise kernel's dropouts: it takes their parameter blocks
  /// (mtrt::FusedDropoutWord) after its operands, filled from its
  /// command's `dropout<k>_*` parameters.
  int64_t dropouts = 0;
  int64_t numRowBlocks() const {
    return rowBlock > 0 ? (elements + rowBlock - 1) / rowBlock : 0;
  }
};

/// A program as the artifact holds it (shared by the ranks of its stage),
/// or, after `specializeProgram`, one rank's copy with its coordinates and
/// every per-rank value resolved.
struct RankProgram {
  /// The pipeline stage whose ranks run it (0 without pipelining).
  int64_t stage = 0;
  /// Set by `specializeProgram`: the rank and its grid coordinates.
  int64_t rank = -1;
  std::vector<int64_t> coords;
  int64_t arenaBytes = 0;
  int64_t persistentBytes = 0;
  /// Training FLOPs per token of the model (0 when unknown).
  int64_t flopsPerToken = 0;
  std::vector<BufferDesc> buffers; // indexed by id
  std::vector<Command> commands;
  std::map<std::string, int64_t> outputs;
  std::vector<GeneratedKernel> generatedKernels;
  /// One translation unit holding every generated kernel (single-source
  /// host C++ / CUDA, mtrt/GeneratedKernelPrelude.h); empty without any.
  std::string kernelSource;

  /// The first buffer of `kind` named `name` (or holding expert `name` on
  /// some rank, before `specializeProgram`), or nullptr.
  const BufferDesc *find(const std::string &kind,
                         const std::string &name) const;
};

/// How a parameter is initialized, as the model states it (`mt.init`).
struct ParamInitSpec {
  enum class Kind { None, Normal, Zeros, Ones };
  Kind kind = Kind::None;
  /// Standard deviation of a normal initializer.
  double std = 0.0;
};

struct ParamDesc {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// None: the artifact states no initializer (the run must load the
  /// parameter from a checkpoint).
  ParamInitSpec init;
  /// Where published weights store the parameter, when not under its own
  /// name: rows `fusedRow` to `fusedRow + shape[0]` of tensor `fusedIn`
  /// (Phi-3's qkv_proj and gate_up_proj hold the q, k and v projections
  /// and the gate and up projections one after another). Empty: none.
  std::string fusedIn;
  int64_t fusedRow = 0;
};

struct Artifact {
  int64_t version = kArtifactVersion;
  /// FNV-1a of the artifact's bytes, set by `loadArtifact`: ranks compare
  /// it to know they run the same artifact.
  uint64_t contentDigest = 0;
  int64_t worldSize = 1;
  /// The device grid and its axes' names ("pp", "dp", "tp"); both empty for
  /// a single rank.
  std::vector<int64_t> gridShape;
  std::vector<std::string> gridAxes;
  std::vector<ParamDesc> params;
  /// One program per pipeline stage, in stage order.
  std::vector<RankProgram> programs;

  /// The grid axis named `name`, or -1.
  int64_t axis(const std::string &name) const;
  /// Row-major grid coordinates of `rank`.
  std::vector<int64_t> coordsOf(int64_t rank) const;
  /// The program rank `rank` runs.
  const RankProgram &programOf(int64_t rank) const;
};

/// Reads and validates the artifact at `path`: the format and version, the
/// grid, that every buffer lies inside its arena, every command names
/// existing buffers, every per-rank value names a grid axis, and every
/// parameter buffer matches the parameter table. Errors name the file and
/// the offending program, buffer or command.
Status loadArtifact(const std::string &path, Artifact &artifact);

/// What `loadArtifact` does once the file is read: `bytes` are an artifact's
/// text, `name` says where they come from in errors. The compiler's export
/// reads back what it wrote with it, so that it never writes an artifact
/// the runtime refuses.
Status parseArtifact(const std::string &bytes, const std::string &name,
                     Artifact &artifact);

/// Writes `artifact` as JSON, the format `loadArtifact` reads.
void writeArtifact(const Artifact &artifact, std::ostream &os);

/// `text`, an artifact's JSON with its one "fnv1a64:..." checksum, with the
/// checksum recomputed over its bytes. The writer seals what it writes; tests
/// and tools that edit an artifact on purpose seal it again.
std::string sealArtifactText(std::string text);

/// Rank `rank`'s copy of its program: its coordinates, the pieces its
/// sharded buffers hold, and every per-rank kernel parameter resolved.
RankProgram specializeProgram(const Artifact &artifact, int64_t rank);

} // namespace mtrt

#endif // MTRT_ARTIFACT_H
