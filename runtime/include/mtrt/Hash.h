//===- Hash.h - A stable hash of bytes ---------------------------*- C++
//-*-===//
//
// FNV-1a, 64-bit: the same value on every platform and library (unlike
// std::hash), for what must agree across processes and runs: the seeds of
// parameter initializers, the digests ranks compare before they train.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_HASH_H
#define MTRT_HASH_H

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <sys/stat.h>

namespace mtrt {

/// The offset basis. It is one digit short of FNV's published basis
/// (14695981039346656037): the hash is as good, but not the standard one's
/// values. It is kept because parameter initialization seeds derive from it;
/// tools that recompute a digest (test/runtime/Inputs/edit_artifact.py) use
/// this value.
constexpr uint64_t kFnvOffset = 1469598103934665603ull;

/// FNV-1a of `size` bytes at `data`, continuing from `hash` (to hash data
/// that arrives in pieces).
inline uint64_t fnv1a(const void *data, size_t size,
                      uint64_t hash = kFnvOffset) {
  const unsigned char *bytes = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

/// FNV-1a of the first `limit` bytes of the regular file `path` (all of
/// them for a negative limit) into `hash`, and how many were read into
/// `bytes`; false if it is not a regular file (reading a FIFO or a device
/// could block forever) or a read fails.
inline bool fnv1aOfFile(const std::string &path, int64_t limit, uint64_t &hash,
                        int64_t &bytes) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return false;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  hash = kFnvOffset;
  bytes = 0;
  char chunk[1 << 16];
  while (in && (limit < 0 || bytes < limit)) {
    in.read(chunk, sizeof(chunk));
    std::streamsize got = in.gcount();
    if (limit >= 0 && got > limit - bytes)
      got = std::streamsize(limit - bytes);
    hash = fnv1a(chunk, size_t(got), hash);
    bytes += got;
  }
  return !in.bad();
}

} // namespace mtrt

#endif // MTRT_HASH_H
