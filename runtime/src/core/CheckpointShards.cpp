//===- CheckpointShards.cpp - Training checkpoints written per rank -------===//

#include "mtrt/CheckpointShards.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

using namespace mtrt;

namespace {

const char *const kRunsSuffix = "#runs";
const char *const kShapePrefix = "shape:";
const char *const kShardsKey = "shards";
const char *const kSaveIdKey = "save_id";
/// Each stored tensor's checksums are metadata "crc32:<tensor>", the
/// CRC-32s of its consecutive chunks of "crc32_chunk_bytes" bytes; the
/// metadata's own (over every other entry) is "metadata_crc32". A flipped
/// bit in a moment, or an edited consumed_samples, would otherwise load and
/// train on: a bit of an exponent made a loss of 4e34, an edited count
/// shifted the data the run reads. CRC-32 (zlib's, as zip and PNG use it)
/// finds every burst of errors up to 32 bits, and zlib computes it at
/// about 2.2 GB/s where FNV-1a (mtrt/Hash.h) managed 0.7 on this machine's
/// Xeon, over freshly written memory (4.4 GB/s over a checkpoint in the page
/// cache, bench/checkpoint_io.py). Chunks let a rank check only the bytes it
/// reads, as it reads them: one checksum per piece made every rank read every
/// piece it touched whole, and twice (the whole checkpoint per rank where fewer
/// ranks saved it).
const char *const kTensorChecksumPrefix = "crc32:";
const char *const kMetadataChecksumKey = "metadata_crc32";
const char *const kChunkBytesKey = "crc32_chunk_bytes";
const int64_t kChecksumChunkBytes = int64_t(1) << 20;
/// A chunk size read from a file is at most this (a reader's buffer).
const int64_t kMaxChecksumChunkBytes = int64_t(1) << 30;

/// Open files kept for what else the process holds (MPI, the artifact, the
/// data) beside a checkpoint's shards.
const rlim_t kOtherOpenFiles = 256;

/// Raises this process's soft limit of open files, up to its hard limit, so
/// that the `shards` files of a checkpoint can be open at once: every rank
/// reads pieces from any shard, and keeps each open while it loads (a file
/// renamed by a concurrent save cannot change under it). A job of 1,024
/// ranks would otherwise pass the usual soft limit of 1,024.
void reserveOpenFiles(long long shards) {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return;
  rlim_t needed = rlim_t(shards) + kOtherOpenFiles;
  if (limit.rlim_cur >= needed) // RLIM_INFINITY is the largest value
    return;
  limit.rlim_cur = std::min(needed, limit.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

/// The errno of opening another file now: EMFILE when this process has
/// reached its limit of open files, ENFILE when the system has, 0 when a
/// file can be opened (a shard was absent or unreadable instead).
int openFileShortage() {
  int probe = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (probe >= 0) {
    ::close(probe);
    return 0;
  }
  return errno == EMFILE || errno == ENFILE ? errno : 0;
}

std::string joinShape(const std::vector<int64_t> &shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(shape[i]);
  return text;
}

/// "d0,d1,..." as a shape of non-negative dimensions, false otherwise.
bool parseShape(const std::string &text, std::vector<int64_t> &shape) {
  shape.clear();
  size_t at = 0;
  while (at <= text.size() && !text.empty()) {
    size_t comma = text.find(',', at);
    std::string field =
        text.substr(at, comma == std::string::npos ? comma : comma - at);
    char *end = nullptr;
    long long dim = std::strtoll(field.c_str(), &end, 10);
    if (field.empty() || *end != '\0' || dim < 0)
      return false;
    shape.push_back(dim);
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return true;
}

/// product(shape), or -1 if it overflows.
int64_t elementsOf(const std::vector<int64_t> &shape) {
  int64_t total = 1;
  for (int64_t dim : shape)
    if (__builtin_mul_overflow(total, dim, &total))
      return -1;
  return total;
}

std::string elementRange(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

std::string hex8(uint32_t crc) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", static_cast<unsigned>(crc));
  return text;
}

/// CRC-32 of `size` bytes at `data`, continuing from `crc` (zlib's crc32
/// takes at most 4 GiB a call).
uint32_t crc32Of(const void *data, size_t size, uint32_t crc = 0) {
  const Bytef *bytes = static_cast<const Bytef *>(data);
  while (size > 0) {
    uInt take = uInt(std::min<size_t>(size, size_t(1) << 30));
    crc = uint32_t(::crc32(crc, bytes, take));
    bytes += take;
    size -= take;
  }
  return crc;
}

/// CRC-32 of every metadata entry but the metadata's checksum, as
/// "key\0value\0" in key order.
uint32_t metadataCrc(const std::map<std::string, std::string> &metadata) {
  uint32_t crc = 0;
  for (const auto &[key, value] : metadata) {
    if (key == kMetadataChecksumKey)
      continue;
    crc = crc32Of(key.c_str(), key.size() + 1, crc);
    crc = crc32Of(value.c_str(), value.size() + 1, crc);
  }
  return crc;
}

/// What an error about a checksum ends with.
const char *const kChangedAfterSave =
    ": the shard was changed or damaged after it was saved";

/// The CRC-32s of `size` bytes at `data`, `chunk` at a time.
std::vector<uint32_t> chunkCrcs(const uint8_t *data, int64_t size,
                                int64_t chunk) {
  std::vector<uint32_t> crcs;
  for (int64_t at = 0; at < size; at += chunk)
    crcs.push_back(crc32Of(data + at, size_t(std::min(chunk, size - at))));
  return crcs;
}

/// "c0,c1,...": the metadata's spelling of `crcs`.
std::string joinCrcs(const std::vector<uint32_t> &crcs) {
  std::string text;
  for (size_t k = 0; k < crcs.size(); ++k)
    text += (k ? "," : "") + hex8(crcs[k]);
  return text;
}

/// The CRC-32s "c0,c1,..." of a piece of `bytes` bytes in chunks of
/// `chunk`: one per chunk, each 8 hex digits.
bool parseChunkChecksums(const std::string &text, int64_t bytes, int64_t chunk,
                         std::vector<uint32_t> &crcs) {
  crcs.clear();
  // n checksums are 9n - 1 characters: no trailing comma.
  if (!text.empty() && (text.size() + 1) % 9 != 0)
    return false;
  for (size_t at = 0; at < text.size(); at += 9) {
    std::string field = text.substr(at, 8);
    if (field.size() != 8 ||
        field.find_first_not_of("0123456789abcdef") != std::string::npos ||
        (at + 8 < text.size() && text[at + 8] != ','))
      return false;
    crcs.push_back(uint32_t(std::strtoul(field.c_str(), nullptr, 16)));
  }
  return int64_t(crcs.size()) == (bytes + chunk - 1) / chunk;
}

/// Checks `file`'s metadata against its checksum, before anything in it is
/// trusted, and reads its chunk size into `chunkBytes`: 0 for a shard saved
/// before checkpoints carried checksums (no checksum key at all), which is
/// read unchecked.
Status verifyMetadataChecksum(const SafetensorsFile &file,
                              int64_t &chunkBytes) {
  chunkBytes = 0;
  const auto &metadata = file.metadata();
  auto stored = metadata.find(kMetadataChecksumKey);
  if (stored == metadata.end()) {
    bool anyChecksum =
        metadata.count(kChunkBytesKey) ||
        std::any_of(metadata.begin(), metadata.end(), [](const auto &entry) {
          return entry.first.rfind(kTensorChecksumPrefix, 0) == 0;
        });
    if (anyChecksum)
      return Status::error(file.path() +
                           ": has tensor checksums but no "
                           "metadata checksum ('" +
                           kMetadataChecksumKey + "')" + kChangedAfterSave);
    return Status::ok();
  }
  std::string computed = hex8(metadataCrc(metadata));
  if (stored->second != computed)
    return Status::error(file.path() +
                         ": metadata checksum mismatch (the "
                         "shard says '" +
                         stored->second + "', its metadata gives " + computed +
                         ")" + kChangedAfterSave);
  auto chunk = metadata.find(kChunkBytesKey);
  char *end = nullptr;
  long long parsed = chunk == metadata.end()
                         ? 0
                         : std::strtoll(chunk->second.c_str(), &end, 10);
  if (chunk == metadata.end() || chunk->second.empty() ||
      !std::isdigit(static_cast<unsigned char>(chunk->second[0])) ||
      *end != '\0' || parsed < 1 || parsed > kMaxChecksumChunkBytes)
    return Status::error(
        file.path() + ": metadata '" + kChunkBytesKey + "' is '" +
        (chunk == metadata.end() ? std::string() : chunk->second) +
        "', not a chunk size from 1 to 2^30 bytes");
  chunkBytes = parsed;
  return Status::ok();
}

} // namespace

std::string mtrt::checkpointShardPath(const std::string &dir, int64_t rank) {
  char name[40];
  std::snprintf(name, sizeof(name), "shard_%05lld.safetensors",
                static_cast<long long>(rank));
  return dir + "/" + name;
}

Status
mtrt::writeCheckpointShard(const std::string &dir, int64_t rank, int64_t shards,
                           uint64_t saveId,
                           const std::vector<TensorPiece> &pieces,
                           const std::map<std::string, std::string> &metadata) {
  std::string path = checkpointShardPath(dir, rank);
  std::map<std::string, std::string> fileMetadata = metadata;
  fileMetadata[kShardsKey] = std::to_string(shards);
  fileMetadata[kSaveIdKey] = std::to_string(saveId);
  std::vector<std::pair<std::string, HostTensor>> tensors;
  for (const TensorPiece &piece : pieces) {
    // Adjacent runs merge: a replicated tensor is one run, a split one as
    // many as its rows.
    std::vector<int64_t> runs;
    int64_t elements = 0;
    for (const ElementRun &run : piece.runs) {
      if (run.count == 0)
        continue;
      if (!runs.empty() && runs[runs.size() - 2] + runs.back() == run.offset)
        runs.back() += run.count;
      else
        runs.insert(runs.end(), {run.offset, run.count});
      elements += run.count;
    }
    HostTensor values;
    values.dtype = "F32";
    values.shape = {elements};
    values.bytes.resize(size_t(elements) * sizeof(float));
    if (elements)
      std::memcpy(values.bytes.data(), piece.values, values.bytes.size());
    HostTensor where;
    where.dtype = "I64";
    where.shape = {int64_t(runs.size() / 2), 2};
    where.bytes.resize(runs.size() * sizeof(int64_t));
    if (!runs.empty())
      std::memcpy(where.bytes.data(), runs.data(), where.bytes.size());
    fileMetadata[kShapePrefix + piece.name] = joinShape(piece.shape);
    fileMetadata[kTensorChecksumPrefix + piece.name] =
        joinCrcs(chunkCrcs(values.bytes.data(), int64_t(values.bytes.size()),
                           kChecksumChunkBytes));
    fileMetadata[kTensorChecksumPrefix + piece.name + kRunsSuffix] =
        joinCrcs(chunkCrcs(where.bytes.data(), int64_t(where.bytes.size()),
                           kChecksumChunkBytes));
    tensors.emplace_back(piece.name, std::move(values));
    tensors.emplace_back(piece.name + kRunsSuffix, std::move(where));
  }
  fileMetadata[kChunkBytesKey] = std::to_string(kChecksumChunkBytes);
  fileMetadata[kMetadataChecksumKey] = hex8(metadataCrc(fileMetadata));
  return writeSafetensors(path, tensors, fileMetadata);
}

Status CheckpointShards::open(const std::string &dir, const std::string &format,
                              CheckpointShards &source) {
  CheckpointShards opened;
  opened.directory = dir;
  SafetensorsFile first;
  MTRT_RETURN_IF_ERROR(
      SafetensorsFile::open(checkpointShardPath(dir, 0), first));
  auto field = [](const SafetensorsFile &file, const char *key) {
    auto it = file.metadata().find(key);
    return it == file.metadata().end() ? std::string() : it->second;
  };
  if (field(first, "format") != format)
    return Status::error(first.path() +
                         ": not a megatron-mlir training checkpoint (its "
                         "metadata names format '" +
                         field(first, "format") + "')");
  int64_t chunkBytes = 0;
  MTRT_RETURN_IF_ERROR(verifyMetadataChecksum(first, chunkBytes));
  opened.chunkBytes.push_back(chunkBytes);
  char *end = nullptr;
  std::string shardsText = field(first, kShardsKey);
  long long shards = std::strtoll(shardsText.c_str(), &end, 10);
  if (shardsText.empty() || *end != '\0' || shards < 1 || shards > (1 << 24))
    return Status::error(first.path() + ": metadata 'shards' is '" +
                         shardsText + "', not a shard count");
  std::string saveId = field(first, kSaveIdKey);
  opened.files.push_back(first);
  reserveOpenFiles(shards);
  for (long long rank = 1; rank < shards; ++rank) {
    SafetensorsFile file;
    std::string path = checkpointShardPath(dir, rank);
    if (Status status = SafetensorsFile::open(path, file); !status) {
      int shortage = openFileShortage();
      if (shortage == ENFILE)
        return Status::error(dir + ": its " + shardsText +
                             " shards are open at once while it loads, but "
                             "the system's table of open files is full "
                             "(fs.file-max)");
      if (shortage == EMFILE) {
        struct rlimit limit = {0, 0};
        ::getrlimit(RLIMIT_NOFILE, &limit);
        return Status::error(
            dir + ": its " + shardsText +
            " shards are open at once while it loads, but this process may "
            "open at most " +
            std::to_string(static_cast<unsigned long long>(limit.rlim_cur)) +
            " files (hard limit " +
            std::to_string(static_cast<unsigned long long>(limit.rlim_max)) +
            "; raise it with ulimit -Hn, or the launcher's limit)");
      }
      return Status::error(status.message() + " (shard " +
                           std::to_string(rank) + " of " + shardsText +
                           "; the checkpoint is incomplete)");
    }
    MTRT_RETURN_IF_ERROR(verifyMetadataChecksum(file, chunkBytes));
    opened.chunkBytes.push_back(chunkBytes);
    if (field(file, kShardsKey) != shardsText ||
        field(file, kSaveIdKey) != saveId || field(file, "format") != format)
      return Status::error(
          path + ": belongs to another save than " + first.path() +
          " (shards '" + field(file, kShardsKey) + "' vs '" + shardsText +
          "', save id '" + field(file, kSaveIdKey) + "' vs '" + saveId + "')");
    opened.files.push_back(file);
  }
  for (const auto &[key, value] : first.metadata())
    if (key.rfind(kShapePrefix, 0) != 0 &&
        key.rfind(kTensorChecksumPrefix, 0) != 0 && key != kShardsKey &&
        key != kSaveIdKey && key != kMetadataChecksumKey &&
        key != kChunkBytesKey)
      opened.runMetadata[key] = value;
  opened.checksums.resize(opened.files.size());
  // The shards of one save are written by one version: some without
  // checksums beside some with them were stripped, or written by two
  // builds at once, and cannot be trusted as "saved before checksums".
  auto unchecked =
      std::find(opened.chunkBytes.begin(), opened.chunkBytes.end(), int64_t(0));
  auto checked =
      std::find_if(opened.chunkBytes.begin(), opened.chunkBytes.end(),
                   [](int64_t chunk) { return chunk != 0; });
  if (unchecked != opened.chunkBytes.end() &&
      checked != opened.chunkBytes.end())
    return Status::error(
        opened.files[size_t(unchecked - opened.chunkBytes.begin())].path() +
        ": carries no checksums, but " +
        opened.files[size_t(checked - opened.chunkBytes.begin())].path() +
        " of the same save does" + kChangedAfterSave);

  // The index: every stored run of every tensor, checked against its shape.
  for (size_t f = 0; f < opened.files.size(); ++f) {
    const SafetensorsFile &file = opened.files[f];
    for (const std::string &name : file.names()) {
      if (name.size() > std::strlen(kRunsSuffix) &&
          name.compare(name.size() - std::strlen(kRunsSuffix),
                       std::string::npos, kRunsSuffix) == 0)
        continue;
      auto bad = [&](const std::string &what) {
        return Status::error(file.path() + ": tensor '" + name + "': " + what);
      };
      std::vector<int64_t> shape;
      auto shapeEntry = file.metadata().find(kShapePrefix + name);
      if (shapeEntry == file.metadata().end() ||
          !parseShape(shapeEntry->second, shape) || elementsOf(shape) < 0)
        return bad("no valid 'shape:" + name + "' metadata");
      int64_t full = elementsOf(shape);
      std::string dtype, runsDtype;
      std::vector<int64_t> pieceShape, runsShape;
      MTRT_RETURN_IF_ERROR(file.info(name, dtype, pieceShape));
      if (!file.contains(name + kRunsSuffix))
        return bad("has no '" + name + kRunsSuffix + "' saying where it lies");
      MTRT_RETURN_IF_ERROR(file.info(name + kRunsSuffix, runsDtype, runsShape));
      if (dtype != "F32" || pieceShape.size() != 1)
        return bad("a piece must be F32 and one-dimensional");
      if (runsDtype != "I64" || runsShape.size() != 2 || runsShape[1] != 2)
        return bad("its runs must be I64 of shape [k, 2]");
      std::vector<uint8_t> bytes;
      MTRT_RETURN_IF_ERROR(file.read(name + kRunsSuffix, bytes));
      // Where the pieces lie is checked now; their values as they are read.
      if (int64_t chunk = opened.chunkBytes[f]) {
        auto listed = [&](const std::string &stored, int64_t size,
                          std::vector<uint32_t> &crcs) {
          auto entry = file.metadata().find(kTensorChecksumPrefix + stored);
          if (entry == file.metadata().end())
            return bad("has no '" + std::string(kTensorChecksumPrefix) +
                       stored + "' checksums");
          if (!parseChunkChecksums(entry->second, size, chunk, crcs))
            return bad("'" + std::string(kTensorChecksumPrefix) + stored +
                       "' is not the checksums of the " +
                       std::to_string((size + chunk - 1) / chunk) +
                       " chunk(s) of its " + std::to_string(size) + " bytes" +
                       kChangedAfterSave);
          return Status::ok();
        };
        std::vector<uint32_t> runsCrcs;
        MTRT_RETURN_IF_ERROR(
            listed(name + kRunsSuffix, int64_t(bytes.size()), runsCrcs));
        if (chunkCrcs(bytes.data(), int64_t(bytes.size()), chunk) != runsCrcs)
          return bad("where its piece lies ('" + name + kRunsSuffix +
                     "'): checksum mismatch" + kChangedAfterSave);
        PieceChecksums &sums = opened.checksums[f][name];
        MTRT_RETURN_IF_ERROR(
            listed(name, pieceShape[0] * int64_t(sizeof(float)), sums.chunks));
        sums.verified.assign(sums.chunks.size(), false);
      }
      std::vector<int64_t> runs(bytes.size() / sizeof(int64_t));
      std::memcpy(runs.data(), bytes.data(), bytes.size());
      Tensor &tensor = opened.tensors[name];
      if (tensor.shape.empty() && tensor.runs.empty())
        tensor.shape = shape;
      else if (tensor.shape != shape)
        return bad("shape [" + joinShape(shape) + "] differs from [" +
                   joinShape(tensor.shape) + "] in another shard");
      int64_t pieceOffset = 0;
      for (size_t r = 0; r + 1 < runs.size(); r += 2) {
        int64_t offset = runs[r], count = runs[r + 1], stop = 0;
        bool overflow = __builtin_add_overflow(offset, count, &stop);
        if (offset < 0 || count <= 0 || overflow || stop > full)
          return bad("run " +
                     (overflow ? "of " + std::to_string(count) +
                                     " elements from element " +
                                     std::to_string(offset)
                               : elementRange(offset, stop)) +
                     " lies outside its " + std::to_string(full) + " elements");
        tensor.runs.push_back({offset, count, f, pieceOffset});
        // Runs that add up past the piece (each within the tensor) are
        // refused below; their sum must not overflow first.
        if (__builtin_add_overflow(pieceOffset, count, &pieceOffset))
          return bad("its runs add up to more than 2^63 elements");
      }
      if (pieceOffset != pieceShape[0])
        return bad("its runs cover " + std::to_string(pieceOffset) +
                   " elements, but the piece has " +
                   std::to_string(pieceShape[0]));
    }
  }
  for (auto &[name, tensor] : opened.tensors) {
    std::sort(tensor.runs.begin(), tensor.runs.end(),
              [](const StoredRun &a, const StoredRun &b) {
                return a.offset < b.offset;
              });
    for (size_t r = 1; r < tensor.runs.size(); ++r) {
      const StoredRun &prev = tensor.runs[r - 1], &run = tensor.runs[r];
      if (prev.offset + prev.count > run.offset)
        return Status::error(
            dir + ": tensor '" + name + "': elements " +
            elementRange(run.offset, std::min(prev.offset + prev.count,
                                              run.offset + run.count)) +
            " are in two shards (" + opened.files[prev.file].path() + " and " +
            opened.files[run.file].path() + ")");
    }
  }
  source = std::move(opened);
  return Status::ok();
}

std::vector<std::string> CheckpointShards::names() const {
  std::vector<std::string> all;
  for (const auto &entry : tensors)
    all.push_back(entry.first);
  return all;
}

Status CheckpointShards::info(const std::string &name, std::string &dtype,
                              std::vector<int64_t> &shape) const {
  auto it = tensors.find(name);
  if (it == tensors.end())
    return Status::error(directory + ": no tensor '" + name + "'");
  dtype = "F32";
  shape = it->second.shape;
  return Status::ok();
}

Status CheckpointShards::readRuns(const std::string &name,
                                  const std::vector<ElementRun> &runs,
                                  float *dst) const {
  auto it = tensors.find(name);
  if (it == tensors.end())
    return Status::error(directory + ": no tensor '" + name + "'");
  const std::vector<StoredRun> &stored = it->second.runs;
  for (const ElementRun &want : runs) {
    int64_t at = want.offset, stop = want.offset + want.count;
    // The first stored run ending after `at`.
    auto next = std::upper_bound(stored.begin(), stored.end(), at,
                                 [](int64_t offset, const StoredRun &run) {
                                   return offset < run.offset + run.count;
                                 });
    while (at < stop) {
      if (next == stored.end() || next->offset > at)
        return Status::error(
            directory + ": tensor '" + name + "': elements " +
            elementRange(at, next == stored.end()
                                 ? stop
                                 : std::min(stop, next->offset)) +
            " are in no shard (the checkpoint is incomplete)");
      int64_t take = std::min(stop, next->offset + next->count) - at;
      int64_t within = next->pieceOffset + (at - next->offset);
      MTRT_RETURN_IF_ERROR(readChecked(next->file, name,
                                       within * int64_t(sizeof(float)),
                                       take * int64_t(sizeof(float)), dst));
      dst += take;
      at += take;
      ++next;
    }
  }
  return Status::ok();
}

Status CheckpointShards::readChecked(size_t file, const std::string &name,
                                     int64_t offsetBytes, int64_t sizeBytes,
                                     void *dst) const {
  const SafetensorsFile &shard = files[file];
  int64_t chunk = chunkBytes[file];
  if (chunk == 0)
    return shard.readSlice(name, offsetBytes, sizeBytes, dst);
  PieceChecksums &sums = checksums[file].at(name);
  int64_t pieceBytes = 0;
  MTRT_RETURN_IF_ERROR(shard.byteSize(name, pieceBytes));
  auto *out = static_cast<uint8_t *>(dst);
  std::vector<uint8_t> buffer;
  for (int64_t at = offsetBytes, stop = offsetBytes + sizeBytes; at < stop;) {
    size_t k = size_t(at / chunk);
    int64_t chunkBegin = int64_t(k) * chunk;
    int64_t chunkEnd = std::min(chunkBegin + chunk, pieceBytes);
    int64_t take = std::min(stop, chunkEnd) - at;
    if (k >= sums.verified.size())
      return shard.readSlice(name, at, take, out); // refused, as outside
    if (sums.verified[k]) {
      MTRT_RETURN_IF_ERROR(shard.readSlice(name, at, take, out));
    } else {
      // The chunk is read whole once, checked, and what was asked of it
      // copied out: the bytes a rank reads are read once.
      buffer.resize(size_t(chunkEnd - chunkBegin));
      MTRT_RETURN_IF_ERROR(shard.readSlice(
          name, chunkBegin, chunkEnd - chunkBegin, buffer.data()));
      uint32_t crc = crc32Of(buffer.data(), buffer.size());
      if (crc != sums.chunks[k])
        return Status::error(shard.path() + ": tensor '" + name +
                             "': checksum mismatch in bytes [" +
                             std::to_string(chunkBegin) + ", " +
                             std::to_string(chunkEnd) + ") (the shard says '" +
                             hex8(sums.chunks[k]) + "', its bytes give " +
                             hex8(crc) + ")" + kChangedAfterSave);
      sums.verified[k] = true;
      std::memcpy(out, buffer.data() + (at - chunkBegin), size_t(take));
    }
    out += take;
    at += take;
  }
  return Status::ok();
}
