//===- GeneratedKernelLibrary.cpp - Generated kernels, compiled once ------===//

#include "mtrt/GeneratedKernelLibrary.h"

#include "mtrt/Hash.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

std::string cacheDirectory() {
  if (std::string dir = env("MEGATRON_KERNEL_CACHE"); !dir.empty())
    return dir;
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
    return xdg + "/megatron-mlir/kernels";
  if (std::string home = env("HOME"); !home.empty())
    return home + "/.cache/megatron-mlir/kernels";
  return "/tmp/megatron-mlir-kernels-" + std::to_string(getuid());
}

/// mkdir -p.
Status makeDirectories(const std::string &path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/')
      continue;
    std::string prefix = path.substr(0, at);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::error("cannot create the kernel cache directory " +
                           prefix + ": " + std::strerror(errno));
  }
  return Status::ok();
}

std::string readHead(const std::string &path, size_t limit) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  return text.size() > limit ? text.substr(0, limit) + "..." : text;
}

/// Runs `argv` with stdout and stderr into `log`; its exit status. `what`
/// names the compiler in errors ("C++ compiler"), `variable` the
/// `hint` says how to choose another.
Status run(const std::vector<std::string> &argv, const std::string &log,
           const std::string &what = "C++ compiler",
           const std::string &hint = "set MEGATRON_CXX to a C++17 compiler") {
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
  pid_t pid = 0;
  int spawned =
      posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(logFd);
  if (spawned != 0)
    return Status::error("cannot run the " + what + " '" + argv[0] +
                         "' to build the generated kernels: " +
                         std::strerror(spawned) + " (" + hint + ")");
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0)
    return Status::error("cannot wait for the " + what + " '" + argv[0] +
                         "': " + std::strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return Status::ok();
  return Status::error("the " + what + " '" + argv[0] +
                       "' failed on the generated kernels (log " + log +
                       "):\n" + readHead(log, 2000));
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
    return loadSource(program.kernelSource, names, toolchain);
  // A program's source starts with the prelude; extra kernels need it too.
  std::string source = program.kernelSource.empty()
                           ? std::string(generatedKernelPrelude())
                           : program.kernelSource;
  names.insert(names.end(), extraNames.begin(), extraNames.end());
  return loadSource(source + extraSource, names, toolchain);
}

Status GeneratedKernelLibrary::loadSource(const std::string &kernelSource,
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

  struct stat info;
  if (stat(libraryPath.c_str(), &info) != 0) {
    // One process compiles; others wait on the lock, then find the file.
    int lock =
        open((base + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0)
      return Status::error("cannot open the kernel cache lock " + base +
                           ".lock: " + std::strerror(errno));
    while (flock(lock, LOCK_EX) != 0 && errno == EINTR) {
    }
    Status built = Status::ok();
    if (stat(libraryPath.c_str(), &info) != 0) {
      std::string source = base + ".cpp";
      {
        std::ofstream out(source, std::ios::binary | std::ios::trunc);
        out << kernelSource;
        if (!out.flush())
          built = Status::error("cannot write " + source);
      }
      std::string partial = base + ".so.part" + std::to_string(getpid());
      if (built) {
        std::vector<std::string> argv = {compiler};
        argv.insert(argv.end(), flags.begin(), flags.end());
        argv.insert(argv.end(), {source, "-o", partial});
        auto start = std::chrono::steady_clock::now();
        built = run(argv, base + ".log", toolchain.what, toolchain.hint);
        compileSeconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
      }
      // Renamed into place whole: a reader never sees half a library.
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
