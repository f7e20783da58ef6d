//===- Devices.h - The backends of this build, by name ----------*- C++ -*-===//
//
// What `--device` chooses from. Declared apart from the seam (Device.h, in
// the core) because only the training library knows which backends were
// built: it links the CPU backend and loads the CUDA plugin.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_TRAIN_DEVICES_H
#define MTRT_TRAIN_DEVICES_H

#include "mtrt/Device.h"

#include <memory>
#include <string>
#include <vector>

namespace mtrt {

/// The backends this runtime was built with, in order of preference
/// ("cpu" always).
std::vector<std::string> builtBackends();

/// The backend `--device` means when not given: the first built backend
/// that finds a device on this machine.
std::string defaultBackend();

/// A device of backend `name` for this process. An unknown name, a backend
/// this build lacks, or a machine without the device is an error naming
/// the backend and what was looked for.
Status createDevice(const std::string &name, const DeviceOptions &options,
                    std::unique_ptr<Device> &device);

} // namespace mtrt

#endif // MTRT_TRAIN_DEVICES_H
