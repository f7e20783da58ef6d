//===- CudaAttention.cpp - cuDNN's fused attention or our kernels ---------===//

#include "cuda/CudaDeviceImpl.h"

using namespace mtrt;
using namespace mtrt::gpu;

gpu::CudnnAttentionShape CudaDevice::chooseCudnn(const Command &command,
                                                 KernelId id) {
  if (id != KernelId::qkv_attention && id != KernelId::qkv_attention_grad &&
      id != KernelId::merged_attention && id != KernelId::merged_attention_grad)
    return {};
  ++attentionCommands;
  const AttentionKind kind = attentionKind(id);
  const bool forward = kind.forward;
  // The queries: the fused QKV tensor, or head-major queries.
  const BufferDesc &qkv = prog->buffers[size_t(command.ins[kind.queryInput()])];
  const BufferDesc &keys = prog->buffers[size_t(command.ins[kind.keyInput()])];
  auto refuse = [&](const std::string &why) {
    if (cudnnRefusal.empty())
      cudnnRefusal = why;
    return gpu::CudnnAttentionShape{};
  };
  // Only 16-bit attention, all of its operands but the stats (f32, checked
  // at load) of one type.
  if (!isHalf(qkv.dtype))
    return {};
  const int64_t stats = forward ? command.outs[1] : command.ins.back();
  for (const std::vector<int64_t> *operands : {&command.ins, &command.outs})
    for (int64_t buffer : *operands)
      if (buffer != stats && prog->buffers[size_t(buffer)].dtype != qkv.dtype)
        return refuse("operands of mixed types");
  // cuDNN refuses, at execution, an operand not on a 16-byte boundary; the
  // compiler aligns buffers to 64 bytes unless told otherwise.
  for (const std::vector<int64_t> *operands : {&command.ins, &command.outs})
    for (int64_t buffer : *operands)
      if (prog->buffers[size_t(buffer)].offset % 16 != 0)
        return refuse("an operand not 16-byte aligned in the arena");
  if (command.get("dropout", 0.0) != 0.0)
    return refuse("dropout (cuDNN's mask is not the CPU backend's)");
  if (command.has("window"))
    return refuse("a sliding window (the backend's own kernels mask it)");
  if (command.has("softcap"))
    return refuse("soft-capped scores (the backend's own kernels cap them)");
  if (const char *use = std::getenv("MEGATRON_CUDNN_ATTENTION");
      use && std::string(use) == "0")
    return refuse("MEGATRON_CUDNN_ATTENTION=0");
  if (!cudnnTried) {
    cudnnTried = true;
    cudnnOpen = cudnn.open(stream, cudnnWhy);
  }
  if (!cudnnOpen)
    return refuse(cudnnWhy);
  AttentionExtent extent =
      AttentionExtent::of(qkv.shape, keys.shape, kind.fusedQKV,
                          kind.mergedOutput, int64_t(command.get("heads", 1)));
  gpu::CudnnAttentionShape call;
  call.batch = extent.batch;
  call.heads = extent.heads;
  call.seq = extent.seq;
  call.headDim = extent.headDim;
  call.headMajor = !kind.fusedQKV;
  call.kvHeads = extent.kvHeads;
  call.scale = command.get("scale", 1.0 / std::sqrt(double(extent.headDim)));
  call.dtype = qkv.dtype;
  call.forward = forward;
  if (std::string why; !cudnn.supports(call, why))
    return refuse(why);
  ++cudnnCommands;
  return call;
}

Status CudaDevice::runCudnnAttention(const Command &command,
                                     const gpu::CudnnAttentionShape &call) {
  // q, k and v (and their gradients): three tensors of their own, or the
  // three chunks of each fused QKV row, a chunk's width apart.
  const int64_t chunk = call.heads * call.headDim * 2; // bytes
  auto operands = [&](uint8_t *first, uint8_t *second, uint8_t *third) {
    return call.headMajor ? std::array<uint8_t *, 3>{first, second, third}
                          : std::array<uint8_t *, 3>{first, first + chunk,
                                                     first + 2 * chunk};
  };
  const size_t in0 = call.forward ? 0 : 1;
  std::array<uint8_t *, 3> qkv =
      operands(address(command.ins[in0]),
               call.headMajor ? address(command.ins[in0 + 1]) : nullptr,
               call.headMajor ? address(command.ins[in0 + 2]) : nullptr);
  if (call.forward)
    return cudnn.forward(call, qkv[0], qkv[1], qkv[2], address(command.outs[0]),
                         reinterpret_cast<float *>(address(command.outs[1])),
                         cudnnWorkspace);
  std::array<uint8_t *, 3> grads =
      operands(address(command.outs[0]),
               call.headMajor ? address(command.outs[1]) : nullptr,
               call.headMajor ? address(command.outs[2]) : nullptr);
  const size_t ins = command.ins.size();
  return cudnn.backward(
      call, address(command.ins[0]), qkv[0], qkv[1], qkv[2],
      address(command.ins[ins - 2]),
      reinterpret_cast<const float *>(address(command.ins[ins - 1])), grads[0],
      grads[1], grads[2], cudnnWorkspace);
}
