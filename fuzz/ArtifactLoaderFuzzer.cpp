//===- ArtifactLoaderFuzzer.cpp - Fuzz mtrt::loadArtifact -----------------===//
//
// Feeds arbitrary bytes to the artifact loader, then does with an artifact
// it accepts what megatron-run does: every rank's program
// (specializeProgram) and the element runs of its sharded buffers. A Status
// error is a correct answer; a crash, a sanitizer report, an exception
// escaping the loader or a broken property below is a finding.
//
// Properties checked on accepted artifacts:
//  - the runs of a sharded buffer's piece lie inside the full tensor and
//    add up to the buffer's elements;
//  - writeArtifact's output loads again and writes the same bytes.
//
// The loader rejects a file whose "fnv1a64:" checksum does not match its
// bytes, which would stop almost every mutation at the first check. When
// the input states one well-formed checksum, the harness recomputes it
// before the loader sees the bytes (as edit_artifact.py does for the
// tests), so mutations reach the checks behind it; inputs without one still
// exercise the checksum's own errors. Two mutations in three are edits of
// the parsed JSON document (JsonMutator.h), the rest libFuzzer's bytewise
// ones.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"
#include "JsonMutator.h"

#include "mtrt/Artifact.h"
#include "mtrt/Hash.h"
#include "mtrt/Sharding.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

using namespace megatron::fuzz;

namespace {

constexpr const char kPrefix[] = "fnv1a64:";
constexpr size_t kPrefixLength = sizeof(kPrefix) - 1;

bool isHexDigits(const std::string &text, size_t at) {
  if (at + 16 > text.size())
    return false;
  for (size_t i = at; i < at + 16; ++i)
    if (!std::strchr("0123456789abcdef", text[i]) || text[i] == '\0')
      return false;
  return true;
}

/// Rewrites the one well-formed checksum of `bytes`, if it states exactly
/// one, to the FNV-1a of the bytes with its digits zeroed.
void fixChecksum(std::string &bytes) {
  size_t found = std::string::npos;
  for (size_t at = bytes.find(kPrefix); at != std::string::npos;
       at = bytes.find(kPrefix, at + 1)) {
    if (!isHexDigits(bytes, at + kPrefixLength))
      continue;
    if (found != std::string::npos)
      return; // two candidates: leave the input as it is
    found = at;
  }
  if (found == std::string::npos)
    return;
  size_t digits = found + kPrefixLength;
  bytes.replace(digits, 16, "0000000000000000");
  char hex[17];
  std::snprintf(
      hex, sizeof(hex), "%016llx",
      static_cast<unsigned long long>(mtrt::fnv1a(bytes.data(), bytes.size())));
  bytes.replace(digits, 16, hex);
}

std::string written(const mtrt::Artifact &artifact) {
  std::ostringstream os;
  mtrt::writeArtifact(artifact, os);
  return os.str();
}

/// The most elements of a full tensor whose runs the harness enumerates.
constexpr int64_t kMaxRunElements = int64_t(1) << 16;

void checkRuns(const mtrt::RankProgram &program) {
  for (const mtrt::BufferDesc &buffer : program.buffers) {
    if (!buffer.sharded())
      continue;
    int64_t full = 1;
    for (int64_t dim : mtrt::fullShapeOf(buffer))
      full *= dim; // the loader bounds the product by 2^56
    if (full > kMaxRunElements)
      continue;
    (void)mtrt::checkpointShapeOf(buffer);
    (void)mtrt::validElementsOf(buffer);
    int64_t total = 0;
    for (const mtrt::ElementRun &run : mtrt::shardRuns(buffer)) {
      if (run.offset < 0 || run.count < 0 || run.offset > full ||
          run.count > full - run.offset)
        fail("shard run outside the full tensor",
             "buffer " + std::to_string(buffer.id) + " of rank " +
                 std::to_string(program.rank) + ": run [" +
                 std::to_string(run.offset) + ", +" +
                 std::to_string(run.count) + ") of a tensor of " +
                 std::to_string(full) + " elements");
      total += run.count;
    }
    if (total != buffer.numElements())
      fail("shard runs do not cover the buffer",
           "buffer " + std::to_string(buffer.id) + " of rank " +
               std::to_string(program.rank) + ": runs hold " +
               std::to_string(total) + " elements, the buffer " +
               std::to_string(buffer.numElements()));
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FuzzFile file("artifact");
  std::string bytes(reinterpret_cast<const char *>(data), size);
  fixChecksum(bytes);
  file.write(bytes);

  mtrt::Artifact artifact;
  mtrt::Status status = mtrt::loadArtifact(file.path(), artifact);
  if (verbose())
    std::fprintf(stderr, "loadArtifact: %s\n",
                 status ? "ok" : status.message().c_str());
  if (!status)
    return 0;

  // Each rank's program, as megatron-run specializes it: the first ranks,
  // and the last (world_size may be far larger than is worth walking).
  int64_t ranks = std::min<int64_t>(artifact.worldSize, 16);
  for (int64_t rank = 0; rank <= ranks; ++rank) {
    int64_t r = rank < ranks ? rank : artifact.worldSize - 1;
    mtrt::RankProgram program = mtrt::specializeProgram(artifact, r);
    checkRuns(program);
  }

  // What the writer makes of an accepted artifact loads again, the same.
  std::string first = written(artifact);
  file.write(first);
  mtrt::Artifact again;
  if (mtrt::Status reread = mtrt::loadArtifact(file.path(), again); !reread)
    fail("writeArtifact's output does not load", reread.message());
  std::string second = written(again);
  if (first != second)
    fail("writeArtifact(loadArtifact(writeArtifact(a))) differs",
         "first:\n" + first + "\nsecond:\n" + second);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  return mutateJsonInput(data, size, maxSize, seed);
}
