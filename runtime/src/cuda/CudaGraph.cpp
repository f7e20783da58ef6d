//===- CudaGraph.cpp - The step as one CUDA graph -------------------------===//

#include "cuda/CudaDeviceImpl.h"

using namespace mtrt;
using namespace mtrt::gpu;

std::string CudaDevice::graphRefusal() const {
  if (const char *use = std::getenv("MEGATRON_CUDA_GRAPH");
      use && std::string(use) == "0")
    return "MEGATRON_CUDA_GRAPH=0";
  if (hostStagedCommands > 0)
    return std::to_string(hostStagedCommands) +
           " commands move data through host memory, which a graph cannot "
           "capture";
  // Dropout masks are drawn with the step's key read from the device
  // (stepKey), which each step writes before the graph runs.
  return "";
}

/// NCCL requires whether its calls are captured to be the same on every
/// rank of a communicator (its guide, "Using NCCL with CUDA Graphs"), and
/// a rank may refuse a graph (host-staged transfers to one peer,
/// MEGATRON_CUDA_GRAPH=0 in its environment) or fail to capture one where
/// its peers succeed: so the ranks agree before capturing, and again on
/// the captures, and all replay graphs or none does. Every rank reaches
/// this at the same step (--trace, the only other condition, is one flag
/// of the job the ranks agreed on).
Status CudaDevice::decideGraph(uint64_t seed, uint64_t step) {
  graphDecided = true;
  bool everyRankMay = false;
  MTRT_RETURN_IF_ERROR(everyRankAgrees(graphWhy.empty(), everyRankMay));
  if (!everyRankMay) {
    if (graphWhy.empty())
      graphWhy = "another rank launches its steps command by command, and "
                 "NCCL needs every rank to capture its calls or none";
    return Status::ok();
  }
  Status captured = captureStep(seed, step);
  bool everyRankCaptured = false;
  MTRT_RETURN_IF_ERROR(everyRankAgrees(captured.isOk(), everyRankCaptured));
  if (!captured) {
    graphWhy = "the capture failed: " + captured.message();
  } else if (!everyRankCaptured) {
    dropGraph();
    graphWhy = "the capture failed on another rank";
  }
  return Status::ok();
}

Status CudaDevice::everyRankAgrees(bool mine, bool &all) const {
  int32_t refused = mine ? 0 : 1;
  if (communicator)
    for (int64_t axis = 0, e = int64_t(communicator->coords().size()); axis < e;
         ++axis)
      if (communicator->groupSize(axis) > 1)
        MTRT_RETURN_IF_ERROR(communicator->allReduce(
            axis, &refused, 1, DType::I32, ReduceOp::Max));
  all = refused == 0;
  return Status::ok();
}

Status CudaDevice::captureStep(uint64_t seed, uint64_t step) {
  dropGraph();
  MTRT_RETURN_IF_ERROR(checkCuda(
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
      "starting to capture the step"));
  Status enqueued = enqueueCommands(seed, step, /*timed=*/false);
  cudaGraph_t captured = nullptr;
  cudaError_t ended = cudaStreamEndCapture(stream, &captured);
  if (enqueued && ended == cudaSuccess && captured) {
    cudaError_t made = cudaGraphInstantiate(&graphExec, captured, 0);
    if (made == cudaSuccess) {
      graph = captured;
      return Status::ok();
    }
    ended = made;
    graphExec = nullptr;
  }
  if (captured)
    cudaGraphDestroy(captured);
  (void)cudaGetLastError(); // a refused capture leaves no sticky error
  if (!enqueued)
    return enqueued;
  return checkCuda(ended, "capturing the step as a CUDA graph");
}
