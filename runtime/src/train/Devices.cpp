//===- Devices.cpp - The backends of this build, by name ------------------===//
//
// The one place that knows which backends were compiled in: `--device`
// names one, and everything else sees only mtrt::Device.
//
//===----------------------------------------------------------------------===//

#include "train/Devices.h"

#include "cpu/CpuDevice.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

using namespace mtrt;

#ifdef MTRT_HAVE_CUDA_BACKEND
namespace {
/// The CUDA backend, a plugin (libmtrt_cuda_backend.so beside libmtrt.so,
/// or MEGATRON_CUDA_BACKEND), loaded once, on first use.
struct CudaPlugin {
  int (*visibleDevices)() = nullptr;
  Device *(*create)(const DeviceOptions *options, std::string *error) = nullptr;
  std::string error;
};

const CudaPlugin &cudaPlugin() {
  static CudaPlugin plugin = [] {
    CudaPlugin loaded;
    // Beside the library or program holding this code, or in ../lib from
    // it (a test binary linking the trainer statically).
    std::vector<std::string> paths;
    if (const char *chosen = std::getenv("MEGATRON_CUDA_BACKEND")) {
      paths.push_back(chosen);
    } else {
      Dl_info self;
      std::string dir;
      if (dladdr(reinterpret_cast<void *>(&cudaPlugin), &self) &&
          self.dli_fname) {
        dir = self.dli_fname;
        dir = dir.substr(0, dir.rfind('/') + 1);
      }
      paths = {dir + "libmtrt_cuda_backend.so",
               dir + "../lib/libmtrt_cuda_backend.so"};
    }
    std::string path = paths.front();
    void *handle = nullptr;
    for (const std::string &candidate : paths)
      if (access(candidate.c_str(), F_OK) == 0 || paths.size() == 1) {
        path = candidate;
        handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        break;
      }
    if (!handle) {
      const char *why = dlerror();
      loaded.error = "cannot load the CUDA backend " + path + ": " +
                     (why ? why : "no such file") +
                     " (MEGATRON_CUDA_BACKEND names it)";
      return loaded;
    }
    loaded.visibleDevices = reinterpret_cast<int (*)()>(
        dlsym(handle, "mtrt_cuda_backend_visible_devices"));
    loaded.create =
        reinterpret_cast<Device *(*)(const DeviceOptions *, std::string *)>(
            dlsym(handle, "mtrt_cuda_backend_create_with_options"));
    if (!loaded.visibleDevices || !loaded.create)
      loaded.error = path + " is not the CUDA backend (its entry points "
                            "are missing)";
    return loaded;
  }();
  return plugin;
}
} // namespace
#endif

std::vector<std::string> mtrt::builtBackends() {
#ifdef MTRT_HAVE_CUDA_BACKEND
  return {"cuda", "cpu"};
#else
  return {"cpu"};
#endif
}

std::string mtrt::defaultBackend() {
#ifdef MTRT_HAVE_CUDA_BACKEND
  // Without NVIDIA's driver there is no GPU to find: no need to load the
  // CUDA runtime to learn it.
  if (access("/dev/nvidiactl", F_OK) == 0) {
    const CudaPlugin &plugin = cudaPlugin();
    if (plugin.error.empty() && plugin.visibleDevices() > 0)
      return "cuda";
  }
#endif
  return "cpu";
}

Status mtrt::createDevice(const std::string &name, const DeviceOptions &options,
                          std::unique_ptr<Device> &device) {
  if (name == "cpu") {
    if (options.tf32)
      return Status::error("--tf32: the cpu backend has no TF32 GEMMs (its "
                           "fp32 GEMMs are OpenBLAS's); it applies to "
                           "--device cuda");
    device = std::make_unique<CpuDevice>(options.hostThreads);
    return Status::ok();
  }
  std::string built;
  for (const std::string &backend : builtBackends())
    built += (built.empty() ? "" : ", ") + backend;
#ifdef MTRT_HAVE_CUDA_BACKEND
  if (name == "cuda") {
    const CudaPlugin &plugin = cudaPlugin();
    if (!plugin.error.empty())
      return Status::error("--device cuda: " + plugin.error);
    std::string error;
    Device *created = plugin.create(&options, &error);
    if (!created)
      return Status::error(error);
    device.reset(created);
    return Status::ok();
  }
#endif
  if (name == "cuda")
    return Status::error("--device cuda: this build of megatron-run has no "
                         "CUDA backend; the backends built are: " +
                         built);
  return Status::error("--device '" + name +
                       "' is not a backend; the backends built are: " + built);
}
