//===- Devices.cpp - The backends of this build, by name ------------------===//
//
// The one place that knows which backends were compiled in: `--device`
// names one, and everything else sees only mtrt::Device.
//
//===----------------------------------------------------------------------===//

#include "mtrt/Device.h"

#include "cpu/CpuDevice.h"

using namespace mtrt;

std::vector<std::string> mtrt::builtBackends() { return {"cpu"}; }

// The CUDA backend (issue 12) is not built yet, so no GPU is looked for:
// the CPU backend is the default everywhere.
std::string mtrt::defaultBackend() { return "cpu"; }

Status mtrt::createDevice(const std::string &name, const DeviceOptions &options,
                          std::unique_ptr<Device> &device) {
  if (name == "cpu") {
    device = std::make_unique<CpuDevice>(options.hostThreads);
    return Status::ok();
  }
  std::string built;
  for (const std::string &backend : builtBackends())
    built += (built.empty() ? "" : ", ") + backend;
  if (name == "cuda")
    return Status::error("--device cuda: this build of megatron-run has no "
                         "CUDA backend; the backends built are: " +
                         built);
  return Status::error("--device '" + name +
                       "' is not a backend; the backends built are: " + built);
}
