//===- CudaCommunication.cpp - Collectives and transfers ------------------===//

#include "cuda/CudaDeviceImpl.h"

using namespace mtrt;
using namespace mtrt::gpu;

bool CudaDevice::overlaps(const Command &command, KernelId id) {
  if (!isCollective(id) || id == KernelId::all_slice || !acrossRanks(command))
    return false;
  if (stridedCollective(command, id)) // through host memory
    return false;
  if (!viaNccl(int64_t(command.get("grid_axis", 0))))
    return false;
  // fp32 operands only: a 16-bit one goes through the shared fp32 staging,
  // which the next command would overwrite.
  for (const auto *ids : {&command.ins, &command.outs})
    for (int64_t buffer : *ids)
      if (prog->buffers[size_t(buffer)].dtype != DType::F32)
        return false;
  if (id == KernelId::all_reduce)
    return true;
  // Pieces that are not contiguous pass through the shared scratch.
  int64_t outer = 1, block = 1;
  collectivePieces(id, command, groupOf(command), outer, block);
  return outer == 1;
}

Status CudaDevice::prepareOverlap() {
  const size_t count = prog->commands.size();
  overlapping.assign(count, false);
  callsNccl.assign(count, false);
  overlappingCommands = 0;
  const char *use = std::getenv("MEGATRON_CUDA_OVERLAP");
  if (use && std::string(use) == "0")
    return Status::ok();
  for (size_t i = 0; i < count; ++i) {
    const Command &command = prog->commands[i];
    KernelId id = resolved[i]->id;
    int64_t axis = -1;
    if (isCollective(id) && id != KernelId::all_slice && acrossRanks(command) &&
        !stridedCollective(command, id))
      axis = int64_t(command.get("grid_axis", 0));
    else if (isCrossEntropy(id) && command.has("vocab_grid_axis"))
      axis = int64_t(command.get("vocab_grid_axis", 0));
    callsNccl[i] = viaNccl(axis);
    if (overlaps(command, id)) {
      overlapping[i] = true;
      ++overlappingCommands;
    }
  }
  if (overlappingCommands == 0)
    return Status::ok();
  joins = planAsyncJoins(*prog, overlapping);
  if (!commStream)
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaStreamCreateWithFlags(&commStream, cudaStreamNonBlocking),
                  "creating the communication stream"));
  while (overlapEvents.size() < 2 * count) {
    cudaEvent_t event;
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                  "creating the communication stream's events"));
    overlapEvents.push_back(event);
  }
  return Status::ok();
}

void CudaDevice::collectivePieces(KernelId id, const Command &command,
                                  int64_t parts, int64_t &outer,
                                  int64_t &block) const {
  const BufferDesc &input = prog->buffers[size_t(command.ins[0])];
  const BufferDesc &output = prog->buffers[size_t(command.outs[0])];
  const BufferDesc &whole = id == KernelId::all_gather ? output : input;
  int64_t dim = int64_t(command.get("axis", 0));
  outer = 1;
  int64_t inner = 1;
  for (int64_t d = 0; d < dim && d < int64_t(whole.shape.size()); ++d)
    outer *= whole.shape[size_t(d)];
  for (size_t d = size_t(dim) + 1; d < whole.shape.size(); ++d)
    inner *= whole.shape[d];
  int64_t local = dim < int64_t(whole.shape.size())
                      ? whole.shape[size_t(dim)] / std::max<int64_t>(1, parts)
                      : 0;
  block = local * inner;
}

Status CudaDevice::hostMemoryAsked(bool &hostOnly) {
  const char *choice = std::getenv("MEGATRON_CUDA_COLLECTIVES");
  std::string mode = choice ? choice : "";
  hostOnly = mode == "host";
  if (mode.empty() || mode == "auto" || hostOnly)
    return Status::ok();
  return Status::error("MEGATRON_CUDA_COLLECTIVES is '" + mode +
                       "'; it takes 'auto' (NCCL where every rank has its "
                       "own GPU) or 'host' (MPI through host memory)");
}

Status CudaDevice::openTransfers(const RankProgram &program) {
  if (!communicator || pipelineAxis < 0)
    return Status::ok();
  std::vector<gpu::Transfer> sends, recvs;
  for (size_t i = 0; i < program.commands.size(); ++i) {
    KernelId id = resolved[i]->id;
    if (id != KernelId::send && id != KernelId::recv)
      continue;
    const Command &command = program.commands[i];
    const bool sending = id == KernelId::send;
    const BufferDesc &buffer =
        program.buffers[size_t(sending ? command.ins[0] : command.outs[0])];
    (sending ? sends : recvs)
        .push_back({int64_t(command.get("peer_stage", -1)),
                    int64_t(command.get("tag", 0)), buffer.bytes()});
  }
  if (sends.empty() && recvs.empty())
    return Status::ok();
  auto same = [](const std::vector<gpu::Transfer> &a,
                 const std::vector<gpu::Transfer> &b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const gpu::Transfer &x, const gpu::Transfer &y) {
                        return x.peer == y.peer && x.tag == y.tag &&
                               x.bytes == y.bytes;
                      });
  };
  if (transfersOpen) {
    // NCCL matches a direction's transfers in the order the bootstrap
    // checked; a program with others would be matched wrongly.
    if (same(sends, openedSends) && same(recvs, openedRecvs))
      return Status::ok();
    return Status::error("the pipeline's transfers differ from those of the "
                         "first program this device prepared, which its "
                         "transports were chosen and checked for");
  }
  bool hostOnly = false;
  MTRT_RETURN_IF_ERROR(hostMemoryAsked(hostOnly));
  if (Status opened =
          ncclTransfers.open(*communicator, pipelineAxis, ordinal, hostOnly,
                             sends, recvs, transfersHostWhy);
      !opened)
    return Status::error("the pipeline's transfers: " + opened.message());
  transfersOpen = true;
  openedSends = sends;
  openedRecvs = recvs;
  return Status::ok();
}

Status CudaDevice::prepareTransfers() {
  const size_t count = prog->commands.size();
  sendSlot.assign(count, -1);
  sendPeers.clear();
  int64_t bytes = 0;
  for (size_t i = 0; i < count; ++i) {
    const Command &command = prog->commands[i];
    if (resolved[i]->id != KernelId::send ||
        !ncclTransfer(command, KernelId::send))
      continue;
    sendSlot[i] = bytes;
    bytes += (prog->buffers[size_t(command.ins[0])].bytes() + 255) / 256 * 256;
    int64_t peer = int64_t(command.get("peer_stage", -1));
    if (std::find(sendPeers.begin(), sendPeers.end(), peer) == sendPeers.end())
      sendPeers.push_back(peer);
    PeerStream &sender = sendStreams[peer];
    if (!sender.stream) {
      MTRT_RETURN_IF_ERROR(checkCuda(
          cudaStreamCreateWithFlags(&sender.stream, cudaStreamNonBlocking),
          "creating a send stream"));
      MTRT_RETURN_IF_ERROR(checkCuda(
          cudaEventCreateWithFlags(&sender.done, cudaEventDisableTiming),
          "creating a send stream's event"));
    }
  }
  if (sendSlots) {
    cudaFree(sendSlots);
    sendSlots = nullptr;
  }
  sendSlotBytes = bytes;
  if (sendPeers.empty())
    return Status::ok();
  // Outside the memory plan: every send of a step has its own slot.
  if (bytes > 0)
    MTRT_RETURN_IF_ERROR(checkCuda(
        cudaMalloc(reinterpret_cast<void **>(&sendSlots), size_t(bytes)),
        "allocating " + std::to_string(bytes) + " bytes of send slots"));
  while (transferEvents.size() < count) {
    cudaEvent_t event;
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                  "creating the sends' events"));
    transferEvents.push_back(event);
  }
  return Status::ok();
}

Status CudaDevice::openCollectives(const RankProgram &program) {
  if (collectivesOpen || !communicator)
    return Status::ok();
  bool across = false;
  for (size_t i = 0; i < program.commands.size() && !across; ++i) {
    const Command &command = program.commands[i];
    KernelId id = resolved[i]->id;
    across = (isCollective(id) && id != KernelId::all_slice &&
              acrossRanks(command)) ||
             (isCrossEntropy(id) && command.has("vocab_grid_axis") &&
              communicator->groupSize(
                  int64_t(command.get("vocab_grid_axis", 0))) > 1);
  }
  if (!across)
    return Status::ok();
  bool hostOnly = false;
  MTRT_RETURN_IF_ERROR(hostMemoryAsked(hostOnly));
  // Every rank of a stage has the same program, so all of them choose here,
  // or none does; the groups of the axes chosen for never span stages.
  if (Status opened =
          nccl.open(*communicator, ordinal, pipelineAxis, hostOnly, hostWhy);
      !opened)
    return Status::error("the collectives across ranks: " + opened.message());
  collectivesOpen = true;
  return Status::ok();
}

bool CudaDevice::throughHost(const Command &command, KernelId id) const {
  if (id == KernelId::send || id == KernelId::recv)
    return !ncclTransfer(command, id);
  // The experts' exchange and an expert's replicas' sum: MPI on host
  // copies (runExpertExchange, runCollective).
  if (id == KernelId::expert_dispatch || id == KernelId::expert_combine)
    return acrossRanks(command);
  if (stridedCollective(command, id))
    return acrossRanks(command);
  int64_t axis = -1;
  if (isCollective(id) && id != KernelId::all_slice && acrossRanks(command))
    axis = int64_t(command.get("grid_axis", 0));
  else if (isCrossEntropy(id) && command.has("vocab_grid_axis"))
    axis = int64_t(command.get("vocab_grid_axis", 0));
  if (axis < 0 || !communicator || communicator->groupSize(axis) <= 1)
    return false;
  return !viaNccl(axis);
}

std::string CudaDevice::transportChoice() const {
  std::string ncclAxes, hostAxes;
  for (size_t axis = 0; axis < hostWhy.size(); ++axis) {
    if (communicator->groupSize(int64_t(axis)) <= 1 ||
        int64_t(axis) == pipelineAxis)
      continue;
    std::string &list = hostWhy[axis].empty() ? ncclAxes : hostAxes;
    list += (list.empty() ? "" : ", ") + std::to_string(axis);
    if (!hostWhy[axis].empty())
      list += " (" + hostWhy[axis] + ")";
  }
  std::string line;
  if (!ncclAxes.empty())
    line = "collectives over NCCL along grid axes " + ncclAxes;
  if (!hostAxes.empty())
    line += (line.empty() ? "" : "; ") +
            std::string("collectives through host memory (MPI) along grid "
                        "axes ") +
            hostAxes;
  int64_t transfers = 0, overNccl = 0;
  for (size_t i = 0; i < resolved.size(); ++i) {
    KernelId id = resolved[i]->id;
    if (id != KernelId::send && id != KernelId::recv)
      continue;
    ++transfers;
    overNccl += ncclTransfer(prog->commands[i], id);
  }
  if (transfers > 0) {
    std::string what = overNccl == transfers ? std::string("NCCL")
                       : overNccl == 0
                           ? "MPI through host memory"
                           : "NCCL for " + std::to_string(overNccl) + " of " +
                                 std::to_string(transfers) +
                                 ", MPI through host memory";
    if (overNccl < transfers && !transfersHostWhy.empty())
      what += " (" + transfersHostWhy + ")";
    line +=
        (line.empty() ? "" : "; ") + std::string("pipeline transfers: ") + what;
  }
  if (overlappingCommands > 0)
    line += "; " + std::to_string(overlappingCommands) +
            " collectives overlap the computation on a communication stream";
  return line.empty() ? line : "communication: " + line;
}

Status CudaDevice::runVocabParallelCrossEntropy(KernelId id,
                                                const Command &command) {
  // As CpuDevice::runVocabParallelCrossEntropy: each rank holds the logits
  // of its vocabulary columns; the row maxima, the sums of exponentials
  // and the target logits are reduced across the ranks, in double.
  const bool grad = id == KernelId::cross_entropy_grad;
  const int64_t logitsId = command.ins[grad ? 1 : 0];
  const BufferDesc &logitsDesc = prog->buffers[size_t(logitsId)];
  const float *logits = f32(logitsId);
  const auto *labels =
      reinterpret_cast<const int32_t *>(address(command.ins[grad ? 2 : 1]));
  const int64_t vocab = logitsDesc.shape.back();
  const int64_t rows = logitsDesc.numElements() / std::max<int64_t>(1, vocab);
  const int64_t offset = int64_t(command.get("vocab_offset", 0));
  const int64_t axis = int64_t(command.get("vocab_grid_axis", 0));
  // A padded vocabulary: columns from vocab_size on are padding, masked out.
  const int64_t valid = std::clamp<int64_t>(
      int64_t(command.get("vocab_size", double(offset + vocab))) - offset, 0,
      vocab);
  double *maxima = reinterpret_cast<double *>(scratch);
  double *sums = maxima + rows, *targets = sums + rows;
  const bool across = communicator->groupSize(axis) > 1;
  auto reduce = [&](double *values, ReduceOp op) {
    return across ? transport(axis).allReduce(axis, values, rows, DType::F64,
                                              op, stream)
                  : Status::ok();
  };
  MTRT_RETURN_IF_ERROR(checkCuda(
      gpu::launchVocabRowMax(stream, logits, rows, vocab, valid, maxima),
      "the launch"));
  MTRT_RETURN_IF_ERROR(reduce(maxima, ReduceOp::Max));
  MTRT_RETURN_IF_ERROR(
      checkCuda(gpu::launchVocabRowSums(stream, logits, labels, maxima, rows,
                                        vocab, valid, offset, sums, targets),
                "the launch"));
  MTRT_RETURN_IF_ERROR(reduce(sums, ReduceOp::Sum));
  if (!grad) {
    MTRT_RETURN_IF_ERROR(reduce(targets, ReduceOp::Sum));
    return checkCuda(gpu::launchVocabLossMean(stream, maxima, sums, targets,
                                              rows, f32(command.outs[0])),
                     "the launch");
  }
  return checkCuda(gpu::launchVocabGrad(stream, f32(command.ins[0]), logits,
                                        labels, maxima, sums, rows, vocab,
                                        valid, offset, f32(command.outs[0])),
                   "the launch");
}

Status CudaDevice::runCollective(KernelId id, const Command &command) {
  const BufferDesc &input = prog->buffers[size_t(command.ins[0])];
  const BufferDesc &output = prog->buffers[size_t(command.outs[0])];
  if (!acrossRanks(command)) {
    // A group of one: every collective is a copy, and an all-slice keeps
    // the one piece there is.
    if (command.ins[0] == command.outs[0] ||
        address(command.ins[0]) == address(command.outs[0]))
      return Status::ok();
    return checkCuda(
        cudaMemcpyAsync(address(command.outs[0]), address(command.ins[0]),
                        size_t(std::min(input.bytes(), output.bytes())),
                        cudaMemcpyDeviceToDevice, stream),
        "a collective's copy");
  }
  // Across ranks, on fp32 views (16-bit operands are staged), as
  // CpuDevice::runCollective: the pieces split dimension `axis`, and
  // where they are not contiguous they pass through the scratch in rank
  // order.
  const int64_t axis = int64_t(command.get("grid_axis", 0));
  const ReduceOp op =
      command.get("average", 0) != 0 ? ReduceOp::Average : ReduceOp::Sum;
  const int64_t stride = int64_t(command.get("stride", 1));
  const int64_t parts = groupOf(command);
  const float *in = f32(command.ins[0]);
  float *out = f32(command.outs[0]);
  if (stridedCollective(command, id)) {
    // An expert's replicas, every stride-th rank of the axis: through host
    // memory (NCCL communicators per residue class are not made here),
    // once the stream's queued work (NCCL's, waiting for peers) is done
    // under waitForStream's deadline.
    MTRT_RETURN_IF_ERROR(
        waitForStream("the commands before an expert replicas' collective"));
    if (id == KernelId::reduce_scatter)
      return hostStaged.reduceScatterStrided(axis, stride, in, out,
                                             output.numElements(), op, stream);
    if (id == KernelId::all_gather)
      return hostStaged.allGatherStrided(axis, stride, in, out,
                                         input.numElements(), stream);
    if (out != in)
      MTRT_RETURN_IF_ERROR(checkCuda(
          cudaMemcpyAsync(out, in, size_t(output.numElements()) * sizeof(float),
                          cudaMemcpyDeviceToDevice, stream),
          "an all-reduce's copy"));
    return hostStaged.allReduceStrided(axis, stride, out, output.numElements(),
                                       DType::F32, op, stream);
  }
  if (id == KernelId::all_reduce) {
    if (out != in)
      MTRT_RETURN_IF_ERROR(checkCuda(
          cudaMemcpyAsync(out, in, size_t(output.numElements()) * sizeof(float),
                          cudaMemcpyDeviceToDevice, stream),
          "an all-reduce's copy"));
    return transport(axis).allReduce(axis, out, output.numElements(),
                                     DType::F32, op, stream);
  }
  int64_t outer = 1, block = 1;
  collectivePieces(id, command, parts, outer, block);
  const int64_t member = communicator->groupIndex(axis) / stride;
  const size_t row = size_t(block) * sizeof(float);
  // Piece t of a whole tensor is `outer` rows of `block` floats, one every
  // parts x block floats from t x block.
  auto copyPieces = [&](float *to, size_t toPitch, const float *from,
                        size_t fromPitch, const char *what) {
    return checkCuda(cudaMemcpy2DAsync(to, toPitch, from, fromPitch, row,
                                       size_t(outer), cudaMemcpyDeviceToDevice,
                                       stream),
                     what);
  };
  const size_t wholePitch = size_t(parts) * row;
  if (id == KernelId::all_slice) // this rank's piece; nothing sent
    return copyPieces(out, row, in + member * block, wholePitch,
                      "an all-slice's copy");
  auto *rankMajor = reinterpret_cast<float *>(scratch);
  if (id == KernelId::reduce_scatter) {
    if (outer == 1)
      return transport(axis).reduceScatter(axis, in, out, output.numElements(),
                                           op, stream);
    for (int64_t t = 0; t < parts; ++t)
      MTRT_RETURN_IF_ERROR(copyPieces(rankMajor + t * outer * block, row,
                                      in + t * block, wholePitch,
                                      "ordering the pieces by rank"));
    return transport(axis).reduceScatter(axis, rankMajor, out,
                                         output.numElements(), op, stream);
  }
  if (outer == 1)
    return transport(axis).allGather(axis, in, out, input.numElements(),
                                     stream);
  MTRT_RETURN_IF_ERROR(transport(axis).allGather(axis, in, rankMajor,
                                                 input.numElements(), stream));
  for (int64_t t = 0; t < parts; ++t)
    MTRT_RETURN_IF_ERROR(copyPieces(out + t * block, wholePitch,
                                    rankMajor + t * outer * block, row,
                                    "placing the pieces"));
  return Status::ok();
}

Status CudaDevice::runExpertExchange(KernelId id, const Command &command) {
  // Every operand on the host once the commands before have made it, the
  // exchange there over MPI (its sizes come from counts only the host
  // reads), the results back: f32 views of the rows (16-bit ones staged),
  // the offsets and counts as they are.
  // (Polled where this rank joined NCCL: queued NCCL work before it waits
  // for its peers, which waitForStream gives a deadline.)
  MTRT_RETURN_IF_ERROR(waitForStream("the commands before an expert exchange"));
  auto deviceView = [&](int64_t buffer) -> uint8_t * {
    if (prog->buffers[size_t(buffer)].dtype == DType::I32)
      return address(buffer);
    return reinterpret_cast<uint8_t *>(f32(buffer));
  };
  auto bytesOf = [&](int64_t buffer) {
    return size_t(prog->buffers[size_t(buffer)].numElements()) * 4;
  };
  std::map<int64_t, std::vector<uint8_t>> host;
  for (int64_t buffer : command.ins) {
    std::vector<uint8_t> &copy = host[buffer];
    copy.resize(bytesOf(buffer));
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaMemcpyAsync(copy.data(), deviceView(buffer), copy.size(),
                                  cudaMemcpyDeviceToHost, stream),
                  "copying an expert exchange's operand to the host"));
  }
  for (int64_t buffer : command.outs)
    host[buffer].resize(bytesOf(buffer));
  MTRT_RETURN_IF_ERROR(waitForStream("copying an expert exchange's operands"));
  MTRT_RETURN_IF_ERROR(exchangeExpertRows(
      communicator, prog->buffers, id, command,
      [&](int64_t buffer) -> void * { return host[buffer].data(); }));
  for (int64_t buffer : command.outs)
    MTRT_RETURN_IF_ERROR(checkCuda(
        cudaMemcpyAsync(deviceView(buffer), host[buffer].data(),
                        host[buffer].size(), cudaMemcpyHostToDevice, stream),
        "copying an expert exchange's result to the GPU"));
  // The host copies go when this returns.
  return waitForStream("copying an expert exchange's results");
}
