//===- FuzzFile.h - Fuzz input as a file for path-taking readers -*- C++ -*-=//
//
// The runtime's readers take a path. A FuzzFile holds the current input in
// an anonymous in-memory file (memfd_create) reachable as
// /proc/self/fd/<N>, rewritten for every input, so fuzzing touches no disk.
// Where memfd_create is unavailable it falls back to a mkstemp file under
// $TMPDIR (or /tmp), removed at exit.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_FUZZ_FUZZFILE_H
#define MEGATRON_FUZZ_FUZZFILE_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace megatron::fuzz {

class FuzzFile {
public:
  explicit FuzzFile(const char *name) {
    fd = ::memfd_create(name, MFD_CLOEXEC);
    if (fd >= 0) {
      filePath = "/proc/self/fd/" + std::to_string(fd);
      return;
    }
    const char *dir = std::getenv("TMPDIR");
    std::string pattern =
        std::string(dir && *dir ? dir : "/tmp") + "/" + name + "-fuzz-XXXXXX";
    fd = ::mkstemp(&pattern[0]);
    if (fd < 0) {
      std::perror("FuzzFile: memfd_create and mkstemp failed");
      std::abort();
    }
    filePath = pattern;
    unlinkAtExit = true;
  }
  ~FuzzFile() {
    ::close(fd);
    if (unlinkAtExit)
      ::unlink(filePath.c_str());
  }
  FuzzFile(const FuzzFile &) = delete;
  FuzzFile &operator=(const FuzzFile &) = delete;

  /// Replaces the file's contents with `size` bytes at `data`.
  void write(const void *data, size_t size) {
    if (::ftruncate(fd, 0) != 0) {
      std::perror("FuzzFile: ftruncate");
      std::abort();
    }
    const char *bytes = static_cast<const char *>(data);
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::pwrite(fd, bytes + done, size - done, off_t(done));
      if (n <= 0) {
        std::perror("FuzzFile: pwrite");
        std::abort();
      }
      done += size_t(n);
    }
  }
  void write(const std::string &text) { write(text.data(), text.size()); }

  const std::string &path() const { return filePath; }

private:
  int fd = -1;
  std::string filePath;
  bool unlinkAtExit = false;
};

/// Whether FUZZ_VERBOSE is set: harnesses then print what the reader said,
/// which shows how far a seed gets (`./fuzzer seed` with FUZZ_VERBOSE=1).
inline bool verbose() {
  static const bool on = [] {
    const char *value = std::getenv("FUZZ_VERBOSE");
    return value && *value && *value != '0';
  }();
  return on;
}

/// Stops the run as a crash: a property of the reader does not hold.
[[noreturn]] inline void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "==FUZZ PROPERTY VIOLATED== %s\n%s\n", what,
               detail.c_str());
  std::fflush(stderr);
  std::abort();
}

} // namespace megatron::fuzz

#endif // MEGATRON_FUZZ_FUZZFILE_H
