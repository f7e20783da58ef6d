//===- Device.cpp - The backend seam: what every backend shares -----------===//

#include "mtrt/Device.h"

using namespace mtrt;

Device::~Device() = default;

Status mtrt::checkTransfer(const RankProgram &program, int64_t bufferId,
                           int64_t bytes, int64_t offset, const char *what) {
  if (bufferId < 0 || bufferId >= int64_t(program.buffers.size()))
    return Status::error(std::string(what) + ": no buffer " +
                         std::to_string(bufferId) + " in a program of " +
                         std::to_string(program.buffers.size()) + " buffers");
  const BufferDesc &buffer = program.buffers[size_t(bufferId)];
  if (bytes < 0 || offset < 0 || offset > buffer.bytes() ||
      bytes > buffer.bytes() - offset)
    return Status::error(std::string(what) + " of " + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(offset) +
                         " does not fit buffer " + std::to_string(bufferId) +
                         " ('" + buffer.name + "', " +
                         std::to_string(buffer.bytes()) + " bytes)");
  return Status::ok();
}
