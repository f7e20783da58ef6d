//===- CudaStaging.cpp - 16-bit operands through fp32 copies --------------===//

#include "cuda/CudaDeviceImpl.h"

using namespace mtrt;
using namespace mtrt::gpu;

bool CudaDevice::halfEmbedding(const Command &command, KernelId id) const {
  if (id != KernelId::embedding)
    return false;
  DType table = prog->buffers[size_t(command.ins[0])].dtype;
  return isHalf(table) && prog->buffers[size_t(command.outs[0])].dtype == table;
}

std::vector<std::pair<int64_t, int64_t>>
CudaDevice::stagingLayout(const Command &command) const {
  std::vector<std::pair<int64_t, int64_t>> layout;
  int64_t next = 0;
  for (const auto *ids : {&command.ins, &command.outs})
    for (int64_t id : *ids) {
      const BufferDesc &buffer = prog->buffers[size_t(id)];
      if (!isHalf(buffer.dtype) ||
          std::any_of(layout.begin(), layout.end(),
                      [&](const auto &entry) { return entry.first == id; }))
        continue;
      layout.push_back({id, next});
      next += buffer.numElements();
    }
  return layout;
}

const float *CudaDevice::viewWhileRunning(const Command &command, KernelId id,
                                          int64_t bufferId) const {
  if (stages(command, id))
    for (const auto &[buffer, first] : stagingLayout(command))
      if (buffer == bufferId)
        return staging + first;
  return reinterpret_cast<const float *>(address(bufferId));
}

int64_t CudaDevice::stagingBytes(const Command &command) const {
  int64_t bytes = 0;
  for (const auto &[id, first] : stagingLayout(command))
    bytes += prog->buffers[size_t(id)].numElements() * int64_t(sizeof(float));
  return bytes;
}

Status CudaDevice::stageOperands(const Command &command) {
  staged.clear();
  for (const auto &[id, first] : stagingLayout(command)) {
    const BufferDesc &buffer = prog->buffers[size_t(id)];
    staged.push_back({id, staging + first});
    if (std::find(command.ins.begin(), command.ins.end(), id) !=
        command.ins.end())
      MTRT_RETURN_IF_ERROR(checkCuda(
          gpu::launchConvert(stream, reinterpret_cast<uint16_t *>(address(id)),
                             staging + first, buffer.numElements(),
                             buffer.dtype == DType::BF16, false),
          "widening a 16-bit operand"));
  }
  return Status::ok();
}

Status CudaDevice::unstageOutputs(const Command &command) {
  for (int64_t id : command.outs) {
    const BufferDesc &buffer = prog->buffers[size_t(id)];
    if (isHalf(buffer.dtype))
      MTRT_RETURN_IF_ERROR(checkCuda(
          gpu::launchConvert(stream, reinterpret_cast<uint16_t *>(address(id)),
                             f32(id), buffer.numElements(),
                             buffer.dtype == DType::BF16, true),
          "rounding a 16-bit result"));
  }
  staged.clear();
  return Status::ok();
}
