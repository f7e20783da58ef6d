//===- AtomicFile.h - Write a file so it is whole or absent -----*- C++ -*-===//
//
// Checkpoints and token files are written next to their destination as
// `path + ".tmp"` and renamed into place only once every byte is on disk, so
// a crash, a full disk or a bad argument never leaves a half-written file at
// `path`, and never destroys the file that stood there before. POSIX
// rename(2) replaces the destination atomically.
//
// Header-only so that every runtime component can use it without another
// source file in the build.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_ATOMICFILE_H
#define MTRT_ATOMICFILE_H

#include "mtrt/Status.h"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace mtrt {

/// One piece of a file's contents: `size` bytes at `data`.
struct FileChunk {
  const void *data = nullptr;
  size_t size = 0;
};

/// Writes the concatenation of `chunks` to `path` through `path + ".tmp"`:
/// write, fsync, close, rename. On any failure the temporary file is removed
/// and whatever stood at `path` before is left untouched. Chunks are written
/// one after another so that a large checkpoint is never copied into one
/// contiguous buffer.
inline Status writeFileAtomically(const std::string &path,
                                  const std::vector<FileChunk> &chunks) {
  std::string tmpPath = path + ".tmp";
  auto failure = [&](const char *what, int err) {
    return Status::error(path + ": cannot " + what + " temporary file '" +
                         tmpPath + "': " + std::strerror(err));
  };

  int fd =
      ::open(tmpPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return failure("create", errno);

  for (const FileChunk &chunk : chunks) {
    const char *p = static_cast<const char *>(chunk.data);
    size_t left = chunk.size;
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        // A zero-byte write without an error would loop forever; treat it
        // as a full device.
        int err = n < 0 ? errno : ENOSPC;
        ::close(fd);
        ::unlink(tmpPath.c_str());
        return failure("write", err);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }

  // Without fsync the rename could reach the disk before the data, and a
  // crash would then leave an empty or partial file under the final name.
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmpPath.c_str());
    return failure("sync", err);
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmpPath.c_str());
    return failure("close", err);
  }
  if (std::rename(tmpPath.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmpPath.c_str());
    return Status::error(path + ": cannot rename temporary file '" + tmpPath +
                         "' into place: " + std::strerror(err));
  }
  return Status::ok();
}

} // namespace mtrt

#endif // MTRT_ATOMICFILE_H
