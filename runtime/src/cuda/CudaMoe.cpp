//===- CudaMoe.cpp - A mixture of experts' commands on the GPU ------------===//
//
// mt.top_k_gating, mt.moe_route, the permutations, the grouped GEMMs, the
// router's statistics, the load-balancing loss and z-loss and Qwen2-MoE's
// sigmoid gate (and Gemma 2's unfused soft cap) on MoeKernels.h's kernels,
// read as the CPU backend reads each command (CpuDevice::runCommand). The
// experts' exchange across ranks (expert_dispatch, expert_combine) runs
// through host memory (CudaDevice::runExpertExchange).
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaDeviceImpl.h"
#include "cuda/MoeLaunch.h"

using namespace mtrt;
using namespace mtrt::gpu;

bool CudaDevice::isMoeKernel(KernelId id) {
  switch (id) {
  case KernelId::top_k_gating:
  case KernelId::top_k_gating_grad:
  case KernelId::router_statistics:
  case KernelId::router_probability_grad:
  case KernelId::load_balancing_loss:
  case KernelId::load_balancing_loss_grad:
  case KernelId::router_z_loss:
  case KernelId::router_z_loss_grad:
  case KernelId::moe_route:
  case KernelId::moe_permute:
  case KernelId::moe_unpermute:
  case KernelId::moe_weights_grad:
  case KernelId::sigmoid_gate:
  case KernelId::sigmoid_gate_grad:
  case KernelId::grouped_matmul:
  case KernelId::grouped_matmul_weight_grad:
  case KernelId::softcap:
  case KernelId::softcap_grad:
    return true;
  default:
    return false;
  }
}

static int64_t lastDimOf(const BufferDesc &buffer) {
  return buffer.shape.empty() ? int64_t(1) : buffer.shape.back();
}

int64_t CudaDevice::moeScratchBytes(const Command &command, KernelId id) const {
  const BufferDesc &first = prog->buffers[size_t(command.ins[0])];
  if (id == KernelId::router_statistics)
    return routerStatisticsScratchBytes(first.numElements() / lastDimOf(first));
  if (id == KernelId::router_z_loss)
    return routerZLossScratchBytes(first.numElements() / lastDimOf(first));
  if (id == KernelId::moe_route)
    return moeRouteScratchBytes(first.numElements(),
                                int64_t(command.get("num_experts", 0)));
  return 0;
}

std::vector<const void *> CudaDevice::moeTable(const Command &command,
                                               KernelId id) const {
  std::vector<const void *> table;
  auto add = [&](int64_t buffer) {
    table.push_back(viewWhileRunning(command, id, buffer));
  };
  switch (id) {
  case KernelId::grouped_matmul: // the experts' weights
    for (size_t i = 2; i < command.ins.size(); ++i)
      add(command.ins[i]);
    break;
  case KernelId::grouped_matmul_weight_grad: // their gradients
    for (int64_t buffer : command.outs)
      add(buffer);
    break;
  case KernelId::load_balancing_loss: // the loads, then the probabilities
    for (int64_t buffer : command.ins)
      add(buffer);
    break;
  case KernelId::load_balancing_loss_grad: // the loads
    for (size_t i = 1; i < command.ins.size(); ++i)
      add(command.ins[i]);
    break;
  default:
    break;
  }
  return table;
}

Status CudaDevice::runMoeCommand(size_t index, KernelId id,
                                 const Command &command) {
  auto in = [&](size_t i) { return f32(command.ins[i]); };
  auto out = [&](size_t i) { return f32(command.outs[i]); };
  auto ids = [&](size_t i) {
    return reinterpret_cast<const int32_t *>(address(command.ins[i]));
  };
  auto outIds = [&](size_t i) {
    return reinterpret_cast<int32_t *>(address(command.outs[i]));
  };
  auto inDesc = [&](size_t i) -> const BufferDesc & {
    return prog->buffers[size_t(command.ins[i])];
  };
  auto outDesc = [&](size_t i) -> const BufferDesc & {
    return prog->buffers[size_t(command.outs[i])];
  };
  const void *const *table = tableOffsets[index] < 0
                                 ? nullptr
                                 : reinterpret_cast<const void *const *>(
                                       commandTables + tableOffsets[index]);
  cudaError_t error = cudaSuccess;
  switch (id) {
  case KernelId::top_k_gating: {
    const int64_t experts = lastDimOf(inDesc(0)), k = lastDimOf(outDesc(0));
    error = launchTopKGating(stream, in(0), out(0), outIds(1),
                             inDesc(0).numElements() / experts, experts, k,
                             command.get("unnormalized", 0.0) != 0.0);
    break;
  }
  case KernelId::top_k_gating_grad: {
    const int64_t experts = lastDimOf(outDesc(0)), k = lastDimOf(inDesc(1));
    error = launchTopKGatingGrad(
        stream, in(0), in(1), ids(2), command.ins.size() == 4 ? in(3) : nullptr,
        out(0), outDesc(0).numElements() / experts, experts, k);
    break;
  }
  case KernelId::router_statistics: {
    const int64_t experts = lastDimOf(inDesc(0)), k = lastDimOf(inDesc(1));
    error = launchRouterStatistics(stream, in(0), ids(1), out(0), out(1),
                                   inDesc(0).numElements() / experts, experts,
                                   k, reinterpret_cast<double *>(scratch));
    break;
  }
  case KernelId::router_probability_grad: {
    const int64_t experts = lastDimOf(inDesc(1));
    error =
        launchRouterProbabilityGrad(stream, in(0), in(1), out(0),
                                    inDesc(1).numElements() / experts, experts);
    break;
  }
  case KernelId::load_balancing_loss:
  case KernelId::load_balancing_loss_grad: {
    const bool forward = id == KernelId::load_balancing_loss;
    const size_t first = forward ? 0 : 1;
    const int64_t routers =
        int64_t(command.ins.size() - first) / (forward ? 2 : 1);
    const int64_t experts = lastDimOf(inDesc(first));
    const double coefficient = command.get("coefficient", 0.0);
    auto loads = reinterpret_cast<const float *const *>(table);
    error = forward
                ? launchLoadBalancingLoss(stream, loads, loads + routers,
                                          routers, experts, coefficient, out(0))
                : launchLoadBalancingLossGrad(stream, in(0), loads, out(0),
                                              routers, experts, coefficient);
    break;
  }
  case KernelId::router_z_loss: {
    const int64_t experts = lastDimOf(inDesc(0));
    error = launchRouterZLoss(
        stream, in(0), out(0), inDesc(0).numElements() / experts, experts,
        command.get("coefficient", 0.0), reinterpret_cast<double *>(scratch));
    break;
  }
  case KernelId::router_z_loss_grad: {
    const int64_t experts = lastDimOf(inDesc(1));
    error = launchRouterZLossGrad(stream, in(0), in(1), out(0),
                                  inDesc(1).numElements() / experts, experts,
                                  command.get("coefficient", 0.0));
    break;
  }
  case KernelId::moe_route:
    error = launchMoeRoute(stream, ids(0),
                           command.ins.size() == 2 ? in(1) : nullptr, outIds(0),
                           outIds(1), inDesc(0).numElements(),
                           int64_t(command.get("num_experts", 0)),
                           int64_t(command.get("capacity", 0)),
                           reinterpret_cast<int32_t *>(scratch));
    break;
  case KernelId::moe_permute:
  case KernelId::moe_unpermute:
  case KernelId::moe_weights_grad: {
    // Positions [tokens..., k] and rows [tokens * k, hidden] (with a
    // capacity, the experts' capacity rows, those no choice writes zeros).
    const bool gradient = id == KernelId::moe_weights_grad;
    const size_t at = gradient ? 2 : 1;
    const BufferDesc &positions = inDesc(at);
    const BufferDesc &rows = id == KernelId::moe_permute     ? outDesc(0)
                             : id == KernelId::moe_unpermute ? inDesc(0)
                                                             : inDesc(1);
    const int64_t k = lastDimOf(positions), hidden = lastDimOf(rows);
    const int64_t choices = positions.numElements();
    const float *weights =
        !gradient && command.ins.size() == 3 ? in(2) : nullptr;
    if (id == KernelId::moe_permute)
      error = launchMoePermute(stream, in(0), ids(at), weights, out(0), choices,
                               k, hidden, rows.shape[0],
                               command.has("capacity_factor"));
    else if (id == KernelId::moe_unpermute)
      error = launchMoeUnpermute(stream, in(0), ids(at), weights, out(0),
                                 choices / k, k, hidden, rows.shape[0]);
    else
      error = launchMoeWeightsGrad(stream, in(0), in(1), ids(at), out(0),
                                   choices, k, hidden, rows.shape[0]);
    break;
  }
  case KernelId::sigmoid_gate:
  case KernelId::sigmoid_gate_grad: {
    const bool forward = id == KernelId::sigmoid_gate;
    const BufferDesc &rows = inDesc(forward ? 0 : 1);
    const int64_t hidden = lastDimOf(rows);
    const int64_t tokens = rows.numElements() / hidden;
    error = forward ? launchSigmoidGate(stream, in(0), in(1), out(0), tokens,
                                        hidden)
                    : launchSigmoidGateGrad(stream, in(0), in(1), in(2), out(0),
                                            out(1), tokens, hidden);
    break;
  }
  case KernelId::grouped_matmul:
  case KernelId::grouped_matmul_weight_grad: {
    const bool forward = id == KernelId::grouped_matmul;
    const bool transposeB = command.get("transpose_b", 0) != 0;
    const BufferDesc &input = inDesc(forward ? 0 : 1);
    const BufferDesc &product = forward ? outDesc(0) : inDesc(0);
    const int64_t rows = input.shape[0], k = input.shape[1],
                  n = product.shape[1];
    if (forward)
      error = launchGroupedMatmul(
          stream, in(0), ids(1), reinterpret_cast<const float *const *>(table),
          out(0), rows, int64_t(command.ins.size()) - 2, k, n, transposeB);
    else
      error = launchGroupedMatmulWeightGrad(
          stream, in(0), in(1), ids(2),
          reinterpret_cast<float *const *>(const_cast<void *const *>(table)),
          rows, int64_t(command.outs.size()), k, n, transposeB);
    break;
  }
  case KernelId::softcap:
  case KernelId::softcap_grad: {
    const bool forward = id == KernelId::softcap;
    error = launchSoftcap(stream, forward ? nullptr : in(0),
                          in(forward ? 0 : 1), out(0), outDesc(0).numElements(),
                          command.get("cap", 1.0));
    break;
  }
  default:
    return Status::error("no CUDA kernel for it");
  }
  return checkCuda(error, "the launch");
}
