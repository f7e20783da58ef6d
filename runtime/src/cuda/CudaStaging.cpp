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

int64_t CudaDevice::stagingBytes(const Command &command) const {
  int64_t bytes = 0;
  std::vector<int64_t> seen;
  for (const auto *ids : {&command.ins, &command.outs})
    for (int64_t id : *ids) {
      const BufferDesc &buffer = prog->buffers[size_t(id)];
      if (!isHalf(buffer.dtype) ||
          std::find(seen.begin(), seen.end(), id) != seen.end())
        continue;
      seen.push_back(id);
      bytes += buffer.numElements() * int64_t(sizeof(float));
    }
  return bytes;
}

Status CudaDevice::stageOperands(const Command &command) {
  staged.clear();
  float *next = staging;
  for (const auto *ids : {&command.ins, &command.outs}) {
    bool input = ids == &command.ins;
    for (int64_t id : *ids) {
      const BufferDesc &buffer = prog->buffers[size_t(id)];
      if (!isHalf(buffer.dtype) ||
          std::any_of(staged.begin(), staged.end(),
                      [&](const auto &entry) { return entry.first == id; }))
        continue;
      staged.push_back({id, next});
      if (input)
        MTRT_RETURN_IF_ERROR(checkCuda(
            gpu::launchConvert(
                stream, reinterpret_cast<uint16_t *>(address(id)), next,
                buffer.numElements(), buffer.dtype == DType::BF16, false),
            "widening a 16-bit operand"));
      next += buffer.numElements();
    }
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
