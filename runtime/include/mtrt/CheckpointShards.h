//===- CheckpointShards.h - Training checkpoints written per rank -*- C++ -*-=//
//
// A training checkpoint is written by every rank at once, each its own file,
// and read back under any layout. As in PyTorch's distributed checkpoints
// (and Megatron-LM's `torch_dist` format), a file holds pieces of full
// tensors together with where each piece lies in its full tensor, so no rank
// ever gathers a whole model:
//
//   iter_NNNNNNN/shard_RRRRR.safetensors, one per rank of the saving run:
//     "T"        F32 [n]      the piece's elements, in full-tensor order
//     "T#runs"   I64 [k, 2]   (offset, count) runs of T's full, row-major
//                              tensor that, concatenated, make the piece
//     __metadata__            the same on every shard: the format, the
//                              number of shards, a save id, and the run's
//                              own metadata (iteration, seed, schedule);
//                              "shape:T" = "d0,d1,..." per tensor held;
//                              "crc32:T" and "crc32:T#runs", the CRC-32s
//                              (zlib's) of each stored tensor's bytes in
//                              chunks of "crc32_chunk_bytes" (1 MiB), as
//                              "c0,c1,..."; and "metadata_crc32", that of
//                              every other entry as "key\0value\0" in key
//                              order
//
// Replicas (data-parallel copies, a tied embedding on two stages) are
// written once. Padding rows of a vocabulary are not part of any piece, so a
// piece's offsets do not depend on the layout that padded it. A reader sees
// the union of the shards as full tensors and reads any runs of them; a run
// that no shard covers is an error naming the tensor and the elements.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CHECKPOINTSHARDS_H
#define MTRT_CHECKPOINTSHARDS_H

#include "mtrt/Safetensors.h"
#include "mtrt/Sharding.h"
#include "mtrt/Status.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mtrt {

/// One tensor's piece as a rank writes it: `runs` of the full tensor of
/// `shape`, their elements concatenated at `values`.
struct TensorPiece {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<ElementRun> runs;
  const float *values = nullptr;
};

/// The file rank `rank` writes in checkpoint directory `dir`.
std::string checkpointShardPath(const std::string &dir, int64_t rank);

/// Writes `pieces` as rank `rank`'s shard of a checkpoint of `shards` files
/// in `dir` (atomically: the file is whole or absent). `metadata` goes into
/// the file, with the shard count and `saveId` (equal on every shard of one
/// save, so a reader never mixes files of two saves).
Status writeCheckpointShard(const std::string &dir, int64_t rank,
                            int64_t shards, uint64_t saveId,
                            const std::vector<TensorPiece> &pieces,
                            const std::map<std::string, std::string> &metadata);

/// Full tensors read by runs: a model's weights as Hugging Face ships them
/// (HuggingFaceWeights.h, --load-params) or the shards of a checkpoint
/// directory.
class TensorSource {
public:
  virtual ~TensorSource() = default;
  /// What errors name: the file or the directory.
  virtual const std::string &location() const = 0;
  virtual std::vector<std::string> names() const = 0;
  virtual bool contains(const std::string &name) const = 0;
  /// The dtype (a safetensors name) and full shape of tensor `name`.
  virtual Status info(const std::string &name, std::string &dtype,
                      std::vector<int64_t> &shape) const = 0;
  /// Reads tensor `name`'s elements at `runs` (offsets into the full,
  /// row-major tensor) into `dst` as F32, concatenated.
  virtual Status readRuns(const std::string &name,
                          const std::vector<ElementRun> &runs,
                          float *dst) const = 0;
};

/// The shards of a checkpoint directory as one TensorSource.
class CheckpointShards final : public TensorSource {
public:
  /// Opens every shard of `dir` and checks that they belong together (one
  /// format, shard count and save id) and that every piece lies inside its
  /// tensor without overlapping another. Each shard's metadata and runs are
  /// checked against their checksums now, a piece's values chunk by chunk
  /// as readRuns reads them.
  static Status open(const std::string &dir, const std::string &format,
                     CheckpointShards &source);

  const std::string &location() const override { return directory; }
  std::vector<std::string> names() const override;
  bool contains(const std::string &name) const override {
    return tensors.count(name) != 0;
  }
  Status info(const std::string &name, std::string &dtype,
              std::vector<int64_t> &shape) const override;
  Status readRuns(const std::string &name, const std::vector<ElementRun> &runs,
                  float *dst) const override;

  /// The saving run's metadata (the first shard's, which every shard
  /// repeats).
  const std::map<std::string, std::string> &metadata() const {
    return runMetadata;
  }
  int64_t shardCount() const { return int64_t(files.size()); }
  /// How many shards were saved without checksums (before they were kept):
  /// read unchecked.
  int64_t uncheckedShardCount() const {
    return std::count(chunkBytes.begin(), chunkBytes.end(), 0);
  }

private:
  /// A run of a full tensor held by shard `file`, at element `pieceOffset`
  /// of that shard's piece of the tensor.
  struct StoredRun {
    int64_t offset, count;
    size_t file;
    int64_t pieceOffset;
  };
  struct Tensor {
    std::vector<int64_t> shape;
    /// Sorted by offset, not overlapping.
    std::vector<StoredRun> runs;
  };

  std::string directory;
  std::vector<SafetensorsFile> files;
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> runMetadata;
  /// A piece's CRC-32 per chunk, and which chunks readRuns has checked.
  struct PieceChecksums {
    std::vector<uint32_t> chunks;
    std::vector<bool> verified;
  };
  /// Reads `sizeBytes` bytes at `offsetBytes` of piece `name` of shard
  /// `file`, checking each chunk they touch the first time it is read.
  Status readChecked(size_t file, const std::string &name, int64_t offsetBytes,
                     int64_t sizeBytes, void *dst) const;

  /// Per shard: its checksums' chunk size (0: saved without checksums,
  /// read unchecked), and each piece's checksums.
  std::vector<int64_t> chunkBytes;
  mutable std::vector<std::map<std::string, PieceChecksums>> checksums;
};

} // namespace mtrt

#endif // MTRT_CHECKPOINTSHARDS_H
