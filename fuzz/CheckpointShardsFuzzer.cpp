//===- CheckpointShardsFuzzer.cpp - Fuzz the checkpoint shard reader ------===//
//
// Feeds arbitrary bytes as the one shard of a training checkpoint to
// CheckpointShards::open, then reads every tensor it accepts whole, in two
// runs and out of range. A Status error is a correct answer; a crash or a
// sanitizer report is a finding, and so is a broken property:
//  - a tensor read whole equals the same elements read in two runs;
//  - a run outside a tensor is refused;
//  - after the harness reseals the input (every stored tensor's chunk
//    checksums and the metadata's computed again, as writeCheckpointShard
//    computes them, at the chunk size the input states), no read fails
//    with a checksum mismatch: writer and reader agree on the chunks.
// The resealed file is read too, so that mutations get past the checksums
// to the rest of the reader (as the artifact harness recomputes its
// checksum).
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "mtrt/CheckpointShards.h"
#include "mtrt/Safetensors.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>
#include <zlib.h>

using namespace megatron::fuzz;

namespace {

const char *const kFormat = "megatron-mlir-training-checkpoint";
/// Tensors past this many elements are not read whole (memory).
const int64_t kMaxReadElements = int64_t(1) << 22;

/// A directory of its own for the shard (CheckpointShards opens
/// DIR/shard_00000.safetensors), in memory where /dev/shm exists. Never
/// destroyed: the exit handler that removes it runs after static
/// destructors.
const std::string &checkpointDir() {
  static const std::string *dir = new std::string([] {
    const char *tmp = std::getenv("TMPDIR");
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                       : tmp && *tmp                 ? tmp
                                                     : "/tmp";
    std::string pattern = base + "/checkpoint-fuzz-XXXXXX";
    if (!::mkdtemp(&pattern[0])) {
      std::perror("checkpoint-shards-fuzzer: mkdtemp");
      std::abort();
    }
    std::atexit([] {
      ::unlink(mtrt::checkpointShardPath(checkpointDir(), 0).c_str());
      ::rmdir(checkpointDir().c_str());
    });
    return pattern;
  }());
  return *dir;
}

void writeShard(const uint8_t *data, size_t size) {
  std::string path = mtrt::checkpointShardPath(checkpointDir(), 0);
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file || (size && std::fwrite(data, 1, size, file) != size) ||
      std::fclose(file) != 0) {
    std::perror("checkpoint-shards-fuzzer: writing the shard");
    std::abort();
  }
}

std::string hex8(uLong crc) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08lx", crc & 0xffffffffUL);
  return text;
}

/// Whether `message` is the reader's checksum error: recognized by how it
/// begins (the path, then the metadata or one of the file's tensors), not
/// by words an input's names or values could hold.
bool isChecksumError(const std::string &message) {
  std::string path = mtrt::checkpointShardPath(checkpointDir(), 0);
  auto startsWith = [&](const std::string &prefix) {
    return message.compare(0, prefix.size(), prefix) == 0;
  };
  if (startsWith(path + ": metadata checksum mismatch ("))
    return true;
  mtrt::SafetensorsFile file;
  if (!mtrt::SafetensorsFile::open(path, file))
    return false;
  for (const std::string &name : file.names()) {
    std::string tensor = path + ": tensor '" + name + "': ";
    if (startsWith(tensor + "checksum mismatch in bytes [") ||
        startsWith(tensor + "where its piece lies ('"))
      return true;
  }
  return false;
}

/// Opens the checkpoint and reads every tensor; `resealed` says whether
/// its checksums were computed again (no mismatch may then be found).
void readAll(bool resealed) {
  mtrt::CheckpointShards shards;
  mtrt::Status opened =
      mtrt::CheckpointShards::open(checkpointDir(), kFormat, shards);
  if (verbose())
    std::fprintf(stderr, "%s open: %s\n", resealed ? "resealed" : "as given",
                 opened ? "ok" : opened.message().c_str());
  auto noMismatch = [&](const mtrt::Status &status) {
    if (resealed && !status && isChecksumError(status.message()))
      fail("a resealed shard fails its checksums", status.message());
  };
  noMismatch(opened);
  if (!opened)
    return;
  for (const std::string &name : shards.names()) {
    std::string dtype;
    std::vector<int64_t> shape;
    if (!shards.info(name, dtype, shape))
      fail("info fails for a listed tensor", name);
    int64_t elements = 1;
    for (int64_t dim : shape)
      if (__builtin_mul_overflow(elements, dim, &elements))
        elements = -1;
    if (elements < 0 || elements > kMaxReadElements)
      continue;
    std::vector<float> whole(size_t(elements) + 1, 0.0f);
    mtrt::Status read = shards.readRuns(name, {{0, elements}}, whole.data());
    noMismatch(read);
    if (read && elements > 1) {
      int64_t half = elements / 2;
      std::vector<float> parts(size_t(elements) + 1, 0.0f);
      mtrt::Status split = shards.readRuns(
          name, {{0, half}, {half, elements - half}}, parts.data());
      noMismatch(split);
      if (split && std::memcmp(whole.data(), parts.data(),
                               size_t(elements) * sizeof(float)) != 0)
        fail("a tensor read in two runs differs from it read whole", name);
    }
    float sink[2];
    if (shards.readRuns(name, {{elements, 1}}, sink))
      fail("a run past the tensor is read", name);
  }
}

/// Rewrites the shard with its checksums computed again, at the chunk
/// size the input states where it is one from 1 to 2^20 (else 1 MiB);
/// false if the input is no safetensors file.
bool reseal() {
  std::string path = mtrt::checkpointShardPath(checkpointDir(), 0);
  mtrt::SafetensorsFile file;
  if (!mtrt::SafetensorsFile::open(path, file))
    return false;
  std::map<std::string, std::string> metadata = file.metadata();
  long long chunk = 0;
  if (auto stated = metadata.find("crc32_chunk_bytes");
      stated != metadata.end())
    chunk = std::strtoll(stated->second.c_str(), nullptr, 10);
  if (chunk < 1 || chunk > (1 << 20))
    chunk = 1 << 20;
  metadata["crc32_chunk_bytes"] = std::to_string(chunk);
  std::vector<std::pair<std::string, mtrt::HostTensor>> tensors;
  for (const std::string &name : file.names()) {
    mtrt::HostTensor tensor;
    if (!file.info(name, tensor.dtype, tensor.shape) ||
        !file.read(name, tensor.bytes))
      return false;
    std::string crcs;
    for (size_t at = 0; at < tensor.bytes.size(); at += size_t(chunk)) {
      size_t take = std::min(size_t(chunk), tensor.bytes.size() - at);
      crcs += (at ? "," : "") +
              hex8(::crc32(0, tensor.bytes.data() + at, uInt(take)));
    }
    metadata["crc32:" + name] = crcs;
    tensors.emplace_back(name, std::move(tensor));
  }
  metadata.erase("metadata_crc32");
  uLong crc = 0;
  for (const auto &[key, value] : metadata) {
    crc = ::crc32(crc, reinterpret_cast<const Bytef *>(key.c_str()),
                  uInt(key.size() + 1));
    crc = ::crc32(crc, reinterpret_cast<const Bytef *>(value.c_str()),
                  uInt(value.size() + 1));
  }
  metadata["metadata_crc32"] = hex8(crc);
  return bool(mtrt::writeSafetensors(path, tensors, metadata));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  writeShard(data, size);
  readAll(/*resealed=*/false);
  if (reseal())
    readAll(/*resealed=*/true);
  return 0;
}
