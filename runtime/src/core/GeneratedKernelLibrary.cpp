//===- GeneratedKernelLibrary.cpp - Generated kernels, compiled once ------===//

#include "mtrt/GeneratedKernelLibrary.h"

#include "mtrt/AtomicFile.h"
#include "mtrt/Hash.h"
#include "mtrt/ThreadPool.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char **environ;

using namespace mtrt;

namespace {

std::string env(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// The cache without a home: a directory of this user's under $TMPDIR or
/// /tmp.
std::string sharedTmpCache() {
  std::string tmp = env("TMPDIR");
  return (tmp.empty() ? std::string("/tmp") : tmp) + "/megatron-mlir-kernels-" +
         std::to_string(getuid());
}

std::string cacheDirectory() {
  if (std::string dir = env("MEGATRON_KERNEL_CACHE"); !dir.empty())
    return dir;
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
    return xdg + "/megatron-mlir/kernels";
  if (std::string home = env("HOME"); !home.empty())
    return home + "/.cache/megatron-mlir/kernels";
  return sharedTmpCache();
}

/// The cache under /tmp is at a name anyone can predict: another user who
/// created it first could plant a library there under the name a program's
/// kernels hash to, and it would be loaded into this process. It must be
/// this user's and writable by no one else.
Status checkTmpCacheIsPrivate(const std::string &dir) {
  struct stat info;
  if (lstat(dir.c_str(), &info) != 0)
    return Status::error("cannot read the kernel cache directory " + dir +
                         ": " + std::strerror(errno));
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%o", unsigned(info.st_mode & 07777));
  if (!S_ISDIR(info.st_mode) || info.st_uid != getuid() ||
      (info.st_mode & (S_IWGRP | S_IWOTH)))
    return Status::error(
        "the kernel cache directory " + dir +
        " is not a directory of this user's that only it can write (owner "
        "uid " +
        std::to_string(info.st_uid) + ", mode " + mode +
        "): it could hold another user's libraries; set "
        "MEGATRON_KERNEL_CACHE (or HOME) to a directory of yours");
  return Status::ok();
}

/// The file beside a cached library recording its size and hash, written
/// (and synced) before the library is renamed into place: a library cut
/// short or damaged on disk (a crash before its blocks reached the disk, a
/// full disk, another tool) would otherwise be loaded and crash the run
/// with a bus error or an illegal instruction, naming nothing.
std::string checksumPathOf(const std::string &library) {
  return library + ".sum";
}

/// "<size> <fnv1a hash>" of the file at `path`, or "" if it cannot be read.
std::string fileChecksum(const std::string &path) {
  uint64_t hash = 0;
  int64_t size = 0;
  if (!fnv1aOfFile(path, -1, hash, size))
    return "";
  char text[48];
  std::snprintf(text, sizeof(text), "%llu %016llx",
                static_cast<unsigned long long>(size),
                static_cast<unsigned long long>(hash));
  return text;
}

/// Whether the library at `path` exists and matches its recorded checksum.
bool cachedLibraryIsWhole(const std::string &path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return false;
  std::ifstream in(checksumPathOf(path));
  std::string recorded;
  std::getline(in, recorded);
  return !recorded.empty() && recorded == fileChecksum(path);
}

/// Flushes the file at `path` to the disk.
Status syncFile(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0) {
    Status failed =
        Status::error("cannot sync " + path + ": " + std::strerror(errno));
    if (fd >= 0)
      close(fd);
    return failed;
  }
  close(fd);
  return Status::ok();
}

/// What an error about the cache directory ends with: where it came from
/// and how to choose another (an unset or read-only HOME failed every run
/// without saying MEGATRON_KERNEL_CACHE).
const char *const kCacheDirectoryHint =
    " (the kernel cache is $MEGATRON_KERNEL_CACHE, else "
    "$XDG_CACHE_HOME/megatron-mlir/kernels, else "
    "$HOME/.cache/megatron-mlir/kernels: set MEGATRON_KERNEL_CACHE to a "
    "directory this user can write)";

/// mkdir -p.
Status makeDirectories(const std::string &path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/')
      continue;
    std::string prefix = path.substr(0, at);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::error("cannot create the kernel cache directory " +
                           prefix + ": " + std::strerror(errno) +
                           kCacheDirectoryHint);
  }
  return Status::ok();
}

std::string readHead(const std::string &path, size_t limit) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  return text.size() > limit ? text.substr(0, limit) + "..." : text;
}

/// Starts `argv` with stdout and stderr into `log` (*pid: the child).
/// `what` names the compiler in errors ("C++ compiler"), `hint` says how
/// to choose another.
Status spawn(const std::vector<std::string> &argv, const std::string &log,
             const std::string &what, const std::string &hint, pid_t *pid) {
  // Opened here, not in the child, so that a log that cannot be written is
  // named as such (the child's failure would read as a missing compiler).
  int logFd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (logFd < 0)
    return Status::error("cannot write the kernel compiler's log " + log +
                         ": " + std::strerror(errno));
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, logFd, 1);
  posix_spawn_file_actions_adddup2(&actions, logFd, 2);
  int spawned =
      posix_spawnp(pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(logFd);
  if (spawned != 0)
    return Status::error("cannot run the " + what + " '" + argv[0] +
                         "' to build the generated kernels: " +
                         std::strerror(spawned) + " (" + hint + ")");
  return Status::ok();
}

/// Waits for a child spawn() started: whether it exited with status 0
/// (*signal: the signal that killed it, if one did).
Status waitFor(pid_t pid, const std::string &program, const std::string &what,
               bool &succeeded, int *signal) {
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0)
    return Status::error("cannot wait for the " + what + " '" + program +
                         "': " + std::strerror(errno));
  succeeded = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (WIFSIGNALED(status))
    *signal = WTERMSIG(status);
  return Status::ok();
}

/// A compiler that exited with an error or was killed by `signal` (not 0:
/// the OOM killer's, say, whose victim's log may be empty).
Status compileFailed(const std::string &program, const std::string &log,
                     const std::string &what, int signal = 0) {
  std::string killed = signal == 0
                           ? ""
                           : " (killed by signal " + std::to_string(signal) +
                                 ", " + strsignal(signal) + ")";
  return Status::error("the " + what + " '" + program +
                       "' failed on the generated kernels" + killed + " (log " +
                       log + "):\n" + readHead(log, 2000));
}

/// Runs `argv` with stdout and stderr into `log`; ok if it exits with 0.
Status run(const std::vector<std::string> &argv, const std::string &log,
           const std::string &what = "C++ compiler",
           const std::string &hint = "set MEGATRON_CXX to a C++17 compiler") {
  pid_t pid = 0;
  MTRT_RETURN_IF_ERROR(spawn(argv, log, what, hint, &pid));
  bool succeeded = false;
  int signal = 0;
  MTRT_RETURN_IF_ERROR(waitFor(pid, argv[0], what, succeeded, &signal));
  return succeeded ? Status::ok() : compileFailed(argv[0], log, what, signal);
}

/// How many compilers build one library at once: MEGATRON_KERNEL_JOBS, or
/// the cores this process may use over the node's ranks.
Status compileJobs(int64_t &jobs) {
  // Shared by the node's ranks: their kernel sources differ between
  // pipeline stages, so they compile at the same time.
  jobs = coresPerRank();
  std::string text = env("MEGATRON_KERNEL_JOBS");
  if (text.empty())
    return Status::ok();
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0 || value < 1 || value > 4096)
    return Status::error("MEGATRON_KERNEL_JOBS must be a number of compilers "
                         "from 1 to 4096, got '" +
                         text + "'");
  jobs = value;
  return Status::ok();
}

/// A kernel source cut into translation units that compile at once: each
/// the prelude (everything before the first kernel) and a run of whole
/// kernels, the last one also the source after `splittableEnd` (a
/// backend's own kernels, which may define helpers before theirs). A
/// kernel starts at the comment and preprocessor lines right above its
/// `MT_KERNEL(` line: its heading and the `#define MT_ROW_THREADS` the
/// emitter sets for it. Empty when there is nothing to cut (fewer than
/// kMinKernelsPerUnit kernels a unit, or one job) or when a preprocessor
/// line between kernels belongs to none of them: its effect on the kernels
/// after it would be lost.
constexpr int64_t kMinKernelsPerUnit = 4;
std::vector<std::string> translationUnits(const std::string &source,
                                          size_t splittableEnd, int64_t jobs) {
  std::vector<size_t> starts;
  size_t run = std::string::npos; // the comment/directive lines above
  bool runHasDirective = false;
  for (size_t line = 0; line < splittableEnd;) {
    size_t next = source.find('\n', line);
    next = next == std::string::npos ? source.size() : next + 1;
    bool comment = source.compare(line, 2, "//") == 0;
    bool directive = source.compare(line, 1, "#") == 0;
    if (source.compare(line, 10, "MT_KERNEL(") == 0) {
      starts.push_back(run == std::string::npos ? line : run);
      run = std::string::npos;
      runHasDirective = false;
    } else if (comment || directive) {
      if (run == std::string::npos)
        run = line;
      runHasDirective |= directive;
    } else {
      if (runHasDirective && !starts.empty())
        return {};
      run = std::string::npos;
      runHasDirective = false;
    }
    line = next;
  }
  if (runHasDirective && !starts.empty())
    return {};
  int64_t units =
      std::min<int64_t>(jobs, int64_t(starts.size()) / kMinKernelsPerUnit);
  if (units < 2)
    return {};
  const std::string prelude = source.substr(0, starts.front());
  std::vector<std::string> result;
  size_t perUnit = (starts.size() + size_t(units) - 1) / size_t(units);
  for (size_t first = 0; first < starts.size(); first += perUnit) {
    size_t begin = starts[first];
    size_t end = first + perUnit < starts.size() ? starts[first + perUnit]
                                                 : source.size();
    result.push_back(prelude + source.substr(begin, end - begin));
  }
  return result;
}

/// The toolchain's flags without `-x LANGUAGE` (a link's inputs are
/// objects) or, for a compile, without -shared and with -c.
std::vector<std::string> flagsFor(const std::vector<std::string> &flags,
                                  bool link) {
  std::vector<std::string> result;
  for (size_t i = 0; i < flags.size(); ++i) {
    if (link && flags[i] == "-x") {
      ++i;
      continue;
    }
    if (!link && flags[i] == "-shared")
      continue;
    result.push_back(flags[i]);
  }
  if (!link)
    result.push_back("-c");
  return result;
}

/// Builds `source` into the shared library `output` with `compiler` and
/// `flags` (which make a shared library of one source file): cut into
/// translation units compiled at once when it has enough kernels
/// (translationUnits), then linked; otherwise in one step. Logs in
/// `base`.log; on failure the failed units' logs are gathered there.
Status buildLibrary(const std::string &source, size_t splittableEnd,
                    const KernelToolchain &toolchain, const std::string &base,
                    const std::string &output) {
  const std::string &compiler = toolchain.compiler;
  const std::string log = base + ".log";
  int64_t jobs = 1;
  MTRT_RETURN_IF_ERROR(compileJobs(jobs));
  std::vector<std::string> units =
      translationUnits(source, splittableEnd, jobs);
  if (units.empty()) {
    std::vector<std::string> argv = {compiler};
    argv.insert(argv.end(), toolchain.flags.begin(), toolchain.flags.end());
    argv.insert(argv.end(), {base + ".cpp", "-o", output});
    return run(argv, log, toolchain.what, toolchain.hint);
  }
  std::string suffix = "." + std::to_string(getpid());
  std::vector<std::string> objects, logs, sources;
  std::vector<pid_t> children;
  const std::vector<std::string> compileFlags =
      flagsFor(toolchain.flags, false);
  Status status = Status::ok();
  for (size_t u = 0; u < units.size() && status; ++u) {
    std::string name = base + ".unit" + std::to_string(u) + suffix;
    sources.push_back(name + ".cpp");
    objects.push_back(name + ".o");
    logs.push_back(name + ".log");
    std::ofstream out(sources.back(), std::ios::binary | std::ios::trunc);
    out << units[u];
    if (!out.flush()) {
      status = Status::error("cannot write " + sources.back());
      break;
    }
    std::vector<std::string> argv = {compiler};
    argv.insert(argv.end(), compileFlags.begin(), compileFlags.end());
    argv.insert(argv.end(), {sources.back(), "-o", objects.back()});
    pid_t pid = 0;
    status = spawn(argv, logs.back(), toolchain.what, toolchain.hint, &pid);
    if (status)
      children.push_back(pid);
  }
  // Every started compiler is waited for, even after a failure.
  std::string failedLogs;
  bool failed = false;
  int killedBy = 0; // a failed unit's signal, if one was killed
  for (size_t u = 0; u < children.size(); ++u) {
    bool succeeded = false;
    int signal = 0;
    Status waited =
        waitFor(children[u], compiler, toolchain.what, succeeded, &signal);
    if (!waited && status)
      status = waited;
    if (succeeded)
      continue;
    failed = true;
    failedLogs += readHead(logs[u], size_t(1) << 20);
    killedBy = killedBy ? killedBy : signal;
  }
  if (status && failed) {
    std::ofstream(log, std::ios::binary | std::ios::trunc) << failedLogs;
    status = compileFailed(compiler, log, toolchain.what, killedBy);
  }
  if (status) {
    std::vector<std::string> argv = {compiler};
    std::vector<std::string> flags = flagsFor(toolchain.flags, true);
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), objects.begin(), objects.end());
    argv.insert(argv.end(), {"-o", output});
    status = run(argv, log, toolchain.what, toolchain.hint);
  }
  for (size_t u = 0; u < sources.size(); ++u) {
    std::remove(sources[u].c_str());
    std::remove(objects[u].c_str());
    std::remove(logs[u].c_str());
  }
  return status;
}

/// What else decides the compiled code besides source and flags: the
/// compiler's version (its first line of --version) and, for
/// -march=native, the CPU (model and feature flags from /proc/cpuinfo), so
/// that a cache shared between machines or kept across a compiler upgrade
/// never hands out a library built for another target.
std::string toolchainIdentity(const std::string &compiler,
                              const std::string &dir, bool host) {
  std::string identity;
  std::string log = dir + "/version." + std::to_string(getpid());
  if (run({compiler, "--version"}, log))
    identity = readHead(log, 4096);
  std::remove(log.c_str());
  if (!host)
    return identity;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  int wanted = 2; // the first processor's model name and flags
  while (wanted > 0 && std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0 ||
        line.rfind("Features", 0) == 0) {
      identity += "\n" + line;
      --wanted;
    }
  return identity;
}

} // namespace

GeneratedKernelLibrary::~GeneratedKernelLibrary() {
  if (handle)
    dlclose(handle);
}

KernelToolchain KernelToolchain::host() {
  KernelToolchain toolchain;
  toolchain.compiler = env("MEGATRON_CXX");
  if (toolchain.compiler.empty())
    toolchain.compiler = "c++";
  toolchain.flags = {"-std=c++17", "-O3", "-march=native", "-fPIC", "-shared",
                     "-fno-math-errno", "-fno-trapping-math",
                     // No FMA contraction: nvcc builds the same source with
                     // --fmad=false, so the two backends round alike.
                     "-ffp-contract=off", "-w", "-x", "c++"};
  return toolchain;
}

Status
GeneratedKernelLibrary::load(const RankProgram &program,
                             const KernelToolchain &toolchain,
                             const std::string &extraSource,
                             const std::vector<std::string> &extraNames) {
  if (!program.generatedKernels.empty() && program.kernelSource.empty())
    return Status::error("the program has " +
                         std::to_string(program.generatedKernels.size()) +
                         " generated kernels but no kernel source");
  std::vector<std::string> names;
  for (const GeneratedKernel &kernel : program.generatedKernels)
    names.push_back(kernel.name);
  if (extraNames.empty())
    return loadSource(program.kernelSource, program.kernelSource.size(), names,
                      toolchain);
  // A program's source starts with the prelude; extra kernels need it too.
  std::string source = program.kernelSource.empty()
                           ? std::string(generatedKernelPrelude())
                           : program.kernelSource;
  names.insert(names.end(), extraNames.begin(), extraNames.end());
  return loadSource(source + extraSource, source.size(), names, toolchain);
}

Status GeneratedKernelLibrary::loadSource(const std::string &kernelSource,
                                          size_t splittableEnd,
                                          const std::vector<std::string> &names,
                                          const KernelToolchain &toolchain) {
  symbols.clear();
  compileSeconds = 0;
  if (handle) {
    dlclose(handle);
    handle = nullptr;
  }
  if (names.empty())
    return Status::ok();
  const std::string &compiler = toolchain.compiler;
  const std::vector<std::string> &flags = toolchain.flags;
  bool host = toolchain.symbolSuffix.empty();
  std::string dir = cacheDirectory();
  if (dir == sharedTmpCache()) {
    mkdir(dir.c_str(), 0700); // made here: only this user may write it
    MTRT_RETURN_IF_ERROR(checkTmpCacheIsPrivate(dir));
  }
  MTRT_RETURN_IF_ERROR(makeDirectories(dir));
  std::string key = compiler;
  for (const std::string &flag : flags)
    key += " " + flag;
  key += "\n" + toolchainIdentity(compiler, dir, host) + "\n" +
         toolchain.targetIdentity;
  uint64_t hash = fnv1a(kernelSource.data(), kernelSource.size(),
                        fnv1a(key.data(), key.size()));
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx",
                static_cast<unsigned long long>(hash));
  std::string base = dir + "/" + name;
  libraryPath = base + ".so";

  if (!cachedLibraryIsWhole(libraryPath)) {
    // One process compiles; others wait on the lock, then find the file.
    // A library missing its checksum, or not matching it, is built again.
    int lock =
        open((base + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0)
      return Status::error("cannot open the kernel cache lock " + base +
                           ".lock: " + std::strerror(errno) +
                           kCacheDirectoryHint);
    auto waitStart = std::chrono::steady_clock::now();
    while (flock(lock, LOCK_EX) != 0 && errno == EINTR) {
    }
    // Waiting while another process compiled is this load's compile time
    // too (a rank's startup line would otherwise show a slow device).
    compileSeconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - waitStart)
                         .count();
    Status built = Status::ok();
    if (!cachedLibraryIsWhole(libraryPath)) {
      std::string source = base + ".cpp";
      {
        std::ofstream out(source, std::ios::binary | std::ios::trunc);
        out << kernelSource;
        if (!out.flush())
          built = Status::error("cannot write " + source + kCacheDirectoryHint);
      }
      std::string partial = base + ".so.part" + std::to_string(getpid());
      if (built) {
        auto start = std::chrono::steady_clock::now();
        built =
            buildLibrary(kernelSource, splittableEnd, toolchain, base, partial);
        compileSeconds += std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
      }
      // Synced, its checksum recorded, then renamed into place whole: a
      // reader never sees half a library, nor a library that is not the
      // one compiled.
      if (built)
        built = syncFile(partial);
      if (built) {
        std::string checksum = fileChecksum(partial);
        built = checksum.empty()
                    ? Status::error("cannot read back the compiled kernels " +
                                    partial + " to record their checksum")
                    : writeFileAtomically(
                          checksumPathOf(libraryPath),
                          {{checksum.data(), checksum.size()}, {"\n", 1}});
      }
      if (built && std::rename(partial.c_str(), libraryPath.c_str()) != 0)
        built = Status::error("cannot move the compiled kernels to " +
                              libraryPath + ": " + std::strerror(errno));
      std::remove(partial.c_str());
    }
    flock(lock, LOCK_UN);
    close(lock);
    MTRT_RETURN_IF_ERROR(built);
  }
  handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return Status::error("cannot load the compiled kernels " + libraryPath +
                         ": " + dlerror() + " (delete it to have it rebuilt)");
  for (const std::string &name : names) {
    std::string entry = name + toolchain.symbolSuffix;
    void *symbol = dlsym(handle, entry.c_str());
    if (!symbol)
      return Status::error("the compiled kernels " + libraryPath +
                           " have no kernel '" + entry +
                           "' (the kernel source does not define it)");
    symbols.push_back(symbol);
  }
  return Status::ok();
}
