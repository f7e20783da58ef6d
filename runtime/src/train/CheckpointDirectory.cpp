//===- CheckpointDirectory.cpp - Saving an iteration so it is whole -------===//

#include "train/CheckpointDirectory.h"

#include "mtrt/AtomicFile.h"
#include "mtrt/RegularFile.h"
#include "mtrt/Strings.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace mtrt::train {

namespace {
const char *const kStagingSuffix = ".saving";
const char *const kReplacedSuffix = ".replaced";

bool isDirectory(const std::string &path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::string systemError(const std::string &what, const std::string &path) {
  return path + ": cannot " + what + " (" + std::strerror(errno) + ")";
}

/// The entries of directory `dir` (without . and ..), empty if unreadable.
std::vector<std::string> entriesOf(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *listing = ::opendir(dir.c_str())) {
    while (const dirent *entry = ::readdir(listing)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    ::closedir(listing);
  }
  return names;
}

/// Removes `dir` and the files in it (a checkpoint directory holds files
/// only). Nothing to remove is success.
Status removeDirectory(const std::string &dir) {
  if (!isDirectory(dir))
    return Status::ok();
  for (const std::string &name : entriesOf(dir)) {
    std::string path = dir + "/" + name;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return Status::error(systemError("remove", path));
  }
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT)
    return Status::error(systemError("remove", dir));
  return Status::ok();
}

/// Removes the temporary files (*.tmp) a killed write left in `dir`.
void removeTemporaryFiles(const std::string &dir) {
  for (const std::string &name : entriesOf(dir)) {
    std::string path = dir + "/" + name;
    struct stat info;
    if (::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        endsWith(name, ".tmp"))
      ::unlink(path.c_str());
  }
}

} // namespace

Status readMarkedIteration(const std::string &dir, int64_t &iteration) {
  std::string marker = dir + "/" + kLatestFile;
  MTRT_RETURN_IF_ERROR(refuseIrregularFile(
      marker, "the file naming the iteration to resume from",
      "it names the iteration to resume from"));
  std::ifstream in(marker);
  if (!in) {
    // A save killed after publishing its directory, before marking it,
    // leaves the directory unmarked: it is whole, but only the user can
    // say to resume from it.
    std::string newest;
    for (const std::string &name : entriesOf(dir))
      if (name.rfind("iter_", 0) == 0 && name.find('.') == std::string::npos &&
          isDirectory(dir + "/" + name))
        newest = std::max(newest, name);
    if (!newest.empty())
      return Status::error(
          dir + ": holds " + newest + " but no " + kLatestFile +
          " (a save killed before marking it?); write the iteration to "
          "resume from into that file");
    return Status::error(dir + ": no " + kLatestFile +
                         " (not a directory --save wrote)");
  }
  // The whole file is the number, whitespace around it (an editor's CRLF,
  // blank lines, a space) no part of it, as Megatron-LM reads it
  // (int(f.read().strip()); Python's int and strip take a little more:
  // "4_0", Unicode spaces, which are refused here). A tracker is a few bytes:
  // more than kMaxTrackerBytes is no tracker, and is not read whole.
  constexpr std::streamsize kMaxTrackerBytes = 4096;
  std::string text(size_t(kMaxTrackerBytes) + 1, '\0');
  in.read(text.data(), kMaxTrackerBytes + 1);
  text.resize(size_t(in.gcount()));
  if (in.gcount() > kMaxTrackerBytes)
    return Status::error(marker + ": longer than " +
                         std::to_string(kMaxTrackerBytes) +
                         " bytes, not an iteration number");
  const char *kSpace = " \t\r\n\v\f";
  size_t first = text.find_first_not_of(kSpace);
  text = first == std::string::npos
             ? std::string()
             : text.substr(first, text.find_last_not_of(kSpace) - first + 1);
  char *end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  // Beyond 2^40 (--steps' bound) it is no iteration of a run: 2^64 read
  // as iter_9223372036854775807.
  // (The whole text: a NUL inside it ends strtoll's reading, not the
  // number.)
  if (text.empty() || end != text.c_str() + text.size() || errno ||
      parsed <= 0 || parsed > (int64_t(1) << 40))
    return Status::error(marker + ": " + quoted(text) +
                         " is not an iteration number (1 to 2^40)");
  iteration = parsed;
  return Status::ok();
}

bool holdsNoCheckpoint(const std::string &dir) {
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0)
    return errno == ENOENT;
  if (!S_ISDIR(info.st_mode))
    return false;
  // A staging directory (iter_N.saving) is a first save that was killed:
  // no checkpoint, and the next save sweeps it.
  for (const std::string &name : entriesOf(dir))
    if (name == kLatestFile ||
        (name.rfind("iter_", 0) == 0 && !endsWith(name, kStagingSuffix)))
      return false;
  return true;
}

std::string iterationDir(const std::string &dir, int64_t iteration) {
  char name[32];
  std::snprintf(name, sizeof(name), "iter_%07lld",
                static_cast<long long>(iteration));
  return dir + "/" + name;
}

std::string stagingDirOf(const std::string &dir, int64_t iteration) {
  return iterationDir(dir, iteration) + kStagingSuffix;
}

std::string readableIterationDir(const std::string &dir, int64_t iteration) {
  std::string published = iterationDir(dir, iteration);
  std::string staging = stagingDirOf(dir, iteration);
  if (!isDirectory(published) && isDirectory(staging))
    return staging;
  return published;
}

Status recoverCheckpointDirectory(const std::string &dir) {
  // A crash between steps 1 and 2 of a publish: the marked iteration's
  // staging directory is whole, and its old directory is replaced.
  if (int64_t marked = 0; readMarkedIteration(dir, marked)) {
    std::string published = iterationDir(dir, marked);
    std::string staging = stagingDirOf(dir, marked);
    if (!isDirectory(published) && isDirectory(staging) &&
        std::rename(staging.c_str(), published.c_str()) != 0)
      return Status::error(systemError("rename " + staging + " to", published));
  }
  removeTemporaryFiles(dir);
  for (const std::string &name : entriesOf(dir)) {
    std::string path = dir + "/" + name;
    if (name.rfind("iter_", 0) != 0 || !isDirectory(path))
      continue;
    if (endsWith(name, kStagingSuffix) || endsWith(name, kReplacedSuffix))
      MTRT_RETURN_IF_ERROR(removeDirectory(path));
    else
      removeTemporaryFiles(path);
  }
  return Status::ok();
}

Status beginCheckpointSave(const std::string &dir, int64_t iteration) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Status::error(systemError("create the checkpoint directory", dir));
  std::string staging = stagingDirOf(dir, iteration);
  MTRT_RETURN_IF_ERROR(removeDirectory(staging));
  if (::mkdir(staging.c_str(), 0755) != 0)
    return Status::error(
        systemError("create the checkpoint directory", staging));
  return Status::ok();
}

Status publishCheckpoint(const std::string &dir, int64_t iteration) {
  std::string published = iterationDir(dir, iteration);
  std::string staging = stagingDirOf(dir, iteration);
  std::string replaced = published + kReplacedSuffix;
  bool replacing = isDirectory(published);
  if (replacing) {
    MTRT_RETURN_IF_ERROR(removeDirectory(replaced));
    if (std::rename(published.c_str(), replaced.c_str()) != 0)
      return Status::error(
          systemError("rename " + published + " to", replaced));
  }
  if (std::rename(staging.c_str(), published.c_str()) != 0)
    return Status::error(systemError("rename " + staging + " to", published));
  std::string text = std::to_string(iteration) + "\n";
  MTRT_RETURN_IF_ERROR(writeFileAtomically(dir + "/" + kLatestFile,
                                           {{text.data(), text.size()}}));
  if (replacing)
    if (Status removed = removeDirectory(replaced); !removed)
      std::fprintf(stderr,
                   "megatron-run: warning: %s (the checkpoint is saved; the "
                   "next run's first save removes it)\n",
                   removed.message().c_str());
  return Status::ok();
}

void abandonCheckpointSave(const std::string &dir, int64_t iteration) {
  if (Status removed = removeDirectory(stagingDirOf(dir, iteration)); !removed)
    std::fprintf(stderr, "megatron-run: warning: %s\n",
                 removed.message().c_str());
}

} // namespace mtrt::train
