//===- CudaDevice.cpp - The CUDA backend behind the device seam -----------===//

#include "cuda/CudaDeviceImpl.h"

using namespace mtrt;
using namespace mtrt::gpu;

std::vector<std::string> CudaDevice::choices() const {
  std::vector<std::string> lines;
  int64_t epilogueGemms = 0, fused = 0;
  // (Planned with the arena: none before a program is prepared.)
  for (size_t i = 0; i < resolved.size() && i < epiloguePlans.size(); ++i)
    if (hasEpilogue(resolved[i]->id)) {
      ++epilogueGemms;
      fused += epiloguePlans[i].fused != nullptr;
    }
  if (epilogueGemms > 0)
    lines.push_back(
        "GEMM epilogues (bias, GeLU, bias gradient): "
        "cuBLASLt's for " +
        std::to_string(fused) + " of " + std::to_string(epilogueGemms) +
        (ltRefusal.empty() ? std::string()
                           : ", a GEMM then the epilogue's kernels for the "
                             "rest (" +
                                 ltRefusal + ")"));
  if (std::string line = transportChoice(); !line.empty())
    lines.push_back(line);
  int64_t outside = 0;
  std::string parts;
  for (const auto &[what, bytes] : outsidePlan)
    if (bytes > 0) {
      outside += bytes;
      parts += (parts.empty() ? "" : ", ") + std::string(what) + " " +
               std::to_string(bytes) + " B";
    }
  if (outside > 0)
    lines.push_back("memory beside the planned arena: " +
                    std::to_string(outside) + " B (" + parts + ")");
  if (adamTensors > 0)
    lines.push_back(adamByChunks
                        ? "multi-tensor AdamW: by chunks of " +
                              std::to_string(gpu::kAdamChunk) + " elements, " +
                              std::to_string(adamVectorized) + " of " +
                              std::to_string(adamTensors) +
                              " tensors with 16-byte loads"
                        : std::string("multi-tensor AdamW: element by element "
                                      "(MEGATRON_CUDA_ADAM=elements)"));
  if (graphExec)
    lines.push_back("step: one CUDA graph, captured at the second step");
  else if (!graphWhy.empty())
    lines.push_back("step: launched command by command (" + graphWhy + ")");
  if (attentionCommands == 0)
    return lines;
  std::string counts = std::to_string(cudnnCommands) + " of " +
                       std::to_string(attentionCommands) +
                       " attention commands";
  if (cudnnCommands == attentionCommands) {
    lines.push_back("attention: cuDNN's fused kernels for " + counts);
    return lines;
  }
  std::string line = "attention: cuDNN's fused kernels for " + counts +
                     ", the backend's own fp32 kernels for the rest";
  line +=
      cudnnRefusal.empty() ? " (fp32 attention)" : " (" + cudnnRefusal + ")";
  lines.push_back(line);
  return lines;
}

std::string CudaDevice::unsupported(const Command &command, KernelId id) const {
  for (const auto *ids : {&command.ins, &command.outs})
    for (int64_t buffer : *ids) {
      DType dtype = prog->buffers[size_t(buffer)].dtype;
      if (dtype == DType::I64 || dtype == DType::F64)
        return std::string("operands of ") + dtypeName(dtype);
    }
  switch (id) {
  case KernelId::fused:
  case KernelId::matmul:
  case KernelId::matmul_bias:
  case KernelId::matmul_bias_gelu:
  case KernelId::matmul_gelu_grad:
  case KernelId::matmul_bias_grad:
  case KernelId::embedding:
  case KernelId::embedding_grad:
  case KernelId::position_embedding:
  case KernelId::position_embedding_grad:
  case KernelId::layer_norm:
  case KernelId::layer_norm_grad:
  case KernelId::bias_add_grad:
  case KernelId::split_heads:
  case KernelId::merge_heads:
  case KernelId::global_norm:
  case KernelId::sum_squares:
  case KernelId::clip_scale:
  case KernelId::div:
  case KernelId::sqrt:
  case KernelId::mean:
  case KernelId::scale:
  case KernelId::adamw:
  case KernelId::multi_adamw:
  case KernelId::fill:
  case KernelId::copy_prefix:
  case KernelId::dropout:
  case KernelId::add:
  case KernelId::mul:
  case KernelId::bias_add:
  case KernelId::gelu:
  case KernelId::gelu_grad:
  case KernelId::silu:
  case KernelId::silu_grad:
  case KernelId::rms_norm:
  case KernelId::rms_norm_grad:
  case KernelId::rope:
  case KernelId::repeat_kv:
  case KernelId::repeat_kv_grad:
    break;
  case KernelId::cast:
  case KernelId::multi_cast: { // (multi_cast: one pair of types)
    DType from = prog->buffers[size_t(command.ins[0])].dtype;
    DType to = prog->buffers[size_t(command.outs[0])].dtype;
    if (from != to && from != DType::F32 && to != DType::F32)
      return std::string("a cast from ") + dtypeName(from) + " to " +
             dtypeName(to);
    break;
  }
  case KernelId::attention:
  case KernelId::attention_grad:
  case KernelId::merged_attention:
  case KernelId::merged_attention_grad: {
    const BufferDesc &q =
        prog->buffers[size_t(command.ins[attentionKind(id).queryInput()])];

    if (q.shape.size() != 4 || q.shape[3] > gpu::kMaxHeadDim)
      return "a head dimension above " + std::to_string(gpu::kMaxHeadDim);
    break;
  }
  case KernelId::qkv_attention:
  case KernelId::qkv_attention_grad: {
    const BufferDesc &qkv = prog->buffers[size_t(
        command.ins[id == KernelId::qkv_attention ? 0 : 1])];
    double heads = command.get("heads", 1);
    if (qkv.shape.size() != 3 ||
        double(qkv.shape[2]) / (3 * heads) > gpu::kMaxHeadDim)
      return "a head dimension above " + std::to_string(gpu::kMaxHeadDim);
    break;
  }
  case KernelId::cross_entropy:
  case KernelId::cross_entropy_grad:
    if (command.has("vocab_grid_axis")) {
      int64_t axis = int64_t(command.get("vocab_grid_axis", 0));
      if (!communicator)
        return "a vocab-parallel cross-entropy without the run's "
               "communicator";
      if (axis < 0 || axis >= int64_t(communicator->coords().size()))
        return "a vocab-parallel cross-entropy along grid axis " +
               std::to_string(axis) + ", which the device grid does not have";
    }
    break;
  case KernelId::send:
  case KernelId::recv:
    if (!communicator || pipelineAxis < 0)
      return "a pipeline transfer without the run's communicator and a "
             "pipeline axis";
    if (int64_t peer = int64_t(command.get("peer_stage", -1));
        peer < 0 || peer >= communicator->groupSize(pipelineAxis))
      return "a transfer with peer stage " + std::to_string(peer) +
             ", which is not a stage of the pipeline";
    break;
  case KernelId::all_reduce:
  case KernelId::reduce_scatter:
  case KernelId::all_gather:
  case KernelId::all_slice:
  case KernelId::expert_dispatch:
  case KernelId::expert_combine: {
    const std::string what =
        isCollective(id) ? "a collective" : "an expert exchange";
    if (!communicator)
      return what + " without the run's communicator";
    if (int64_t axis = int64_t(command.get("grid_axis", 0));
        axis < 0 || axis >= int64_t(communicator->coords().size()))
      return what + " along grid axis " + std::to_string(axis) +
             ", which the device grid does not have";
    break;
  }
  default:
    if (!isMoeKernel(id))
      return "no CUDA kernel for it yet";
  }
  if (id == KernelId::split_heads || id == KernelId::merge_heads) {
    size_t chunks =
        id == KernelId::split_heads ? command.outs.size() : command.ins.size();
    if (chunks > size_t(gpu::kMaxHeadChunks))
      return std::to_string(chunks) + " head chunks (at most " +
             std::to_string(gpu::kMaxHeadChunks) + ")";
  }
  return "";
}

int64_t CudaDevice::scratchBytes(const Command &command, KernelId id) const {
  auto elements = [&](int64_t buffer) {
    return prog->buffers[size_t(buffer)].numElements();
  };
  auto rowsOf = [&](int64_t buffer) {
    const BufferDesc &desc = prog->buffers[size_t(buffer)];
    return desc.numElements() / std::max<int64_t>(1, desc.shape.back());
  };
  switch (id) {
  case KernelId::layer_norm_grad:
    return 2 * rowsOf(command.ins[1]) * int64_t(sizeof(double));
  case KernelId::rms_norm_grad:
    return rowsOf(command.ins[1]) * int64_t(sizeof(double));
  case KernelId::attention_grad:
  case KernelId::merged_attention_grad: {
    const BufferDesc &q = prog->buffers[size_t(command.ins[1])];
    return 3 * (q.numElements() / q.shape[3]) * int64_t(sizeof(double));
  }
  case KernelId::qkv_attention_grad: {
    // Three statistics per query row: batch * heads * seq rows.
    const BufferDesc &qkv = prog->buffers[size_t(command.ins[1])];
    int64_t heads = int64_t(command.get("heads", 1));
    return 3 * qkv.shape[0] * qkv.shape[1] * heads * int64_t(sizeof(double));
  }
  case KernelId::cross_entropy:
    // Per row: its loss, or (vocab-parallel) its maximum, sum and target.
    return (command.has("vocab_grid_axis") ? 3 : 1) * elements(command.ins[1]) *
           int64_t(sizeof(double));
  case KernelId::cross_entropy_grad:
    return command.has("vocab_grid_axis")
               ? 3 * elements(command.ins[2]) * int64_t(sizeof(double))
               : 0;
  case KernelId::reduce_scatter:
  case KernelId::all_gather: {
    // The whole tensor in rank-major order, where the pieces are not
    // contiguous (split along a dimension after the first).
    if (!acrossRanks(command))
      return 0;
    int64_t outer = 1, block = 1;
    collectivePieces(id, command, groupOf(command), outer, block);
    const BufferDesc &whole = prog->buffers[size_t(
        id == KernelId::all_gather ? command.outs[0] : command.ins[0])];
    return outer > 1 ? whole.numElements() * int64_t(sizeof(float)) : 0;
  }
  case KernelId::embedding_grad:
    // The tokens' sorted order and their rows' counts (launchEmbeddingGrad).
    return 2 * elements(command.ins[1]) * int64_t(sizeof(int32_t));
  case KernelId::bias_add_grad:
  case KernelId::matmul_bias_grad: {
    // The column sums' partials (matmul_bias_grad: its fallback's, over
    // the rhs).
    const bool gemm = id == KernelId::matmul_bias_grad;
    int64_t cols = std::max<int64_t>(1, elements(command.outs[gemm ? 1 : 0]));
    return gpu::columnSumChunks(elements(command.ins[gemm ? 1 : 0]) / cols,
                                cols) *
           cols * int64_t(sizeof(double));
  }
  case KernelId::global_norm:
  case KernelId::sum_squares: {
    int64_t pieces = 0;
    for (int64_t buffer : command.ins)
      pieces += gpu::normPieces(elements(buffer));
    return pieces * int64_t(sizeof(double));
  }
  default:
    return isMoeKernel(id) ? moeScratchBytes(command, id) : 0;
  }
}

Status CudaDevice::prepareProgram(const RankProgram &program) {
  // A previous program's graph goes first: it names that program's
  // generated kernels, which the load below unloads.
  dropGraph();
  eagerSteps = 0;
  graphDecided = false;
  MTRT_RETURN_IF_ERROR(selectDevice());
  if (!stream)
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                  "creating the compute stream"));
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaDeviceGetAttribute(
                    &computeMajor, cudaDevAttrComputeCapabilityMajor, ordinal),
                "reading the GPU's compute capability"));
  resolved.clear();
  cudnnCalls.clear();
  attentionCommands = cudnnCommands = 0;
  cudnnRefusal.clear();
  int64_t scratchNeeded = 0, stagingNeeded = 0;
  for (size_t i = 0; i < program.commands.size(); ++i) {
    const Command &command = program.commands[i];
    const KernelInfo *kernel = findKernel(command.kernel);
    if (!kernel)
      return Status::error(describe(i, command) + ": no kernel of that name");
    if (std::string why = unsupported(command, kernel->id); !why.empty())
      return Status::error(describe(i, command) +
                           ": the CUDA backend does not run " + why +
                           " (run it with --device cpu)");
    resolved.push_back(kernel);
    cudnnCalls.push_back(chooseCudnn(command, kernel->id));
    if (cudnnCalls.back().heads)
      continue; // cuDNN reads the 16-bit operands in place
    // (A GEMM with an epilogue reserves its fallback's scratch.)
    scratchNeeded = std::max(scratchNeeded, scratchBytes(command, kernel->id));
    if (hasEpilogue(kernel->id))
      continue; // planned with the arena (planEpilogueGemms)
    if (stages(command, kernel->id))
      stagingNeeded = std::max(stagingNeeded, stagingBytes(command));
  }
  MTRT_RETURN_IF_ERROR(openCollectives(program));
  MTRT_RETURN_IF_ERROR(openTransfers(program));
  hostStagedCommands = 0;
  for (size_t i = 0; i < program.commands.size(); ++i)
    hostStagedCommands += throughHost(program.commands[i], resolved[i]->id);
  MTRT_RETURN_IF_ERROR(prepareOverlap());
  // Generated kernels: the program's source, compiled once by nvcc for this
  // GPU, cached as the CPU backend caches its build.
  if (!program.generatedKernels.empty()) {
    cudaDeviceProp properties;
    MTRT_RETURN_IF_ERROR(checkCuda(
        cudaGetDeviceProperties(&properties, ordinal), "reading the GPU"));
    KernelToolchain toolchain;
    const char *nvcc = std::getenv("MEGATRON_NVCC");
    toolchain.compiler = nvcc && *nvcc ? nvcc : "nvcc";
    std::string arch = "sm_" + std::to_string(properties.major) +
                       std::to_string(properties.minor);
    toolchain.flags = {
        "-std=c++17", "-O3",        "--fmad=false", "-arch=" + arch,
        "-shared",    "-Xcompiler", "-fPIC",        "-w",
        "-x",         "cu"};
    // A kernel variant to measure (-DMT_ROW_BLOCK_THREADS=128, say): the
    // flags are part of the cache key, so each variant is built once.
    if (const char *extra = std::getenv("MEGATRON_NVCC_FLAGS")) {
      std::istringstream words(extra);
      for (std::string word; words >> word;)
        toolchain.flags.push_back(word);
    }
    toolchain.symbolSuffix = "_launch";
    toolchain.targetIdentity = std::string(properties.name) + " " + arch;
    toolchain.what = "CUDA compiler";
    toolchain.hint = "set MEGATRON_NVCC to nvcc";
    if (Status loaded = generated.load(program, toolchain); !loaded)
      return Status::error("generated kernels: " + loaded.message());
    launchers.clear();
    for (size_t k = 0; k < program.generatedKernels.size(); ++k)
      launchers.push_back(
          reinterpret_cast<GeneratedLauncher>(generated.symbol(k)));
  }
  if (!cublas) {
    MTRT_RETURN_IF_ERROR(checkCublas(cublasCreate(&cublas), "cublasCreate"));
    MTRT_RETURN_IF_ERROR(
        checkCublas(cublasSetStream(cublas, stream), "cublasSetStream"));
    // fp32 GEMMs in fp32: no TF32 unless asked (--tf32).
    MTRT_RETURN_IF_ERROR(checkCublas(
        cublasSetMathMode(cublas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode"));
    mathMode = CUBLAS_PEDANTIC_MATH;
    // Ours, so that a step captured as a graph allocates nothing; cuBLASLt
    // shares it (the two never run at once: GEMMs run only on the compute
    // stream, never on the communication or send streams).
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaMalloc(&cublasWorkspace, kCublasWorkspaceBytes),
                  "cuBLAS's workspace"));
    MTRT_RETURN_IF_ERROR(checkCublas(
        cublasSetWorkspace(cublas, cublasWorkspace, kCublasWorkspaceBytes),
        "cublasSetWorkspace"));
    MTRT_RETURN_IF_ERROR(checkCublas(cublasLtCreate(&lt), "cublasLtCreate"));
  }
  for (void **allocation :
       {reinterpret_cast<void **>(&arena), reinterpret_cast<void **>(&scratch),
        reinterpret_cast<void **>(&flag), reinterpret_cast<void **>(&staging),
        reinterpret_cast<void **>(&dropoutBlocks),
        reinterpret_cast<void **>(&stepKey), &cudnnWorkspace,
        reinterpret_cast<void **>(&commandTables)})
    if (*allocation) {
      cudaFree(*allocation);
      *allocation = nullptr;
    }
  size_t bytes = size_t(std::max<int64_t>(program.arenaBytes, 256));
  // A plan larger than the GPU's free memory is refused before any
  // allocation, with both sizes: the compiler's plan is exact, so no
  // step could run.
  size_t freeBytes = 0, totalBytes = 0;
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo"));
  freeBeforeArena = freeBytes;
  if (bytes > freeBytes) {
    auto gib = [](size_t count) {
      char text[32];
      std::snprintf(text, sizeof text, "%.2f GiB", double(count) / (1 << 30));
      return std::string(text);
    };
    return Status::error(
        "the memory plan needs an arena of " + gib(bytes) + " (" +
        std::to_string(program.arenaBytes) + " bytes) but " + hardwareName() +
        " has " + gib(freeBytes) + " free of " + gib(totalBytes) +
        ": compile for less memory (a smaller micro-batch, remat, ZeRO, or "
        "more ranks)");
  }
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaMalloc(reinterpret_cast<void **>(&arena), bytes),
                "allocating an arena of " + std::to_string(program.arenaBytes) +
                    " bytes"));
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaMemsetAsync(arena, 0, bytes, stream), "zeroing the arena"));
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaStreamSynchronize(stream), "zeroing the arena"));
  if (scratchNeeded > 0)
    MTRT_RETURN_IF_ERROR(checkCuda(
        cudaMalloc(reinterpret_cast<void **>(&scratch), size_t(scratchNeeded)),
        "allocating scratch"));
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaMalloc(reinterpret_cast<void **>(&flag), sizeof(int)),
                "allocating a flag"));
  stagingNeeded = std::max(stagingNeeded, planEpilogueGemms(program));
  if (stagingNeeded > 0 && !staging)
    MTRT_RETURN_IF_ERROR(checkCuda(
        cudaMalloc(reinterpret_cast<void **>(&staging), size_t(stagingNeeded)),
        "allocating fp32 copies of 16-bit operands"));
  if (cudnn.workspaceBytes() > 0)
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaMalloc(&cudnnWorkspace, size_t(cudnn.workspaceBytes())),
                  "allocating cuDNN's attention workspace"));
  MTRT_RETURN_IF_ERROR(checkCuda(
      cudaMalloc(reinterpret_cast<void **>(&stepKey), 2 * sizeof(uint64_t)),
      "allocating the step's dropout key"));
  dropoutParams.prepare(program);
  if (!dropoutParams.all().empty())
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaMalloc(reinterpret_cast<void **>(&dropoutBlocks),
                             dropoutParams.all().size() * sizeof(uint64_t)),
                  "allocating the dropouts' parameter blocks"));
  MTRT_RETURN_IF_ERROR(prepareCommandTables(program));
  MTRT_RETURN_IF_ERROR(prepareTransfers());
  // What the backend holds beside the planned arena, for choices().
  outsidePlan = {{"cuBLAS workspace", int64_t(kCublasWorkspaceBytes)},
                 {"fp32 staging", stagingNeeded},
                 {"scratch", scratchNeeded},
                 {"cuDNN workspace", cudnn.workspaceBytes()},
                 {"send slots", sendSlotBytes}};
  graphWhy = graphRefusal();
  measuredPeak = 0;
  return Status::ok();
}

int64_t CudaDevice::deviceBytesTaken() const {
  size_t freeBytes = 0, totalBytes = 0;
  if (freeBeforeArena == 0 || !selectDevice() ||
      cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
    return 0;
  // Other processes on the GPU move the free count too: a lower bound of
  // zero rather than a negative amount.
  return freeBytes < freeBeforeArena ? int64_t(freeBeforeArena - freeBytes) : 0;
}

Status CudaDevice::prepareCommandTables(const RankProgram &program) {
  tableOffsets.assign(program.commands.size(), -1);
  adamTensors = adamVectorized = 0;
  const char *adam = std::getenv("MEGATRON_CUDA_ADAM");
  adamByChunks = !(adam && std::string(adam) == "elements");
  std::vector<uint8_t> tables;
  auto append = [&](const void *data, size_t bytes) {
    size_t at = (tables.size() + 15) / 16 * 16; // aligned for any element
    tables.resize(at + bytes);
    std::memcpy(tables.data() + at, data, bytes);
    return int64_t(at);
  };
  for (size_t i = 0; i < program.commands.size(); ++i) {
    const Command &command = program.commands[i];
    KernelId id = resolved[i]->id;
    if (id == KernelId::multi_adamw) {
      // The group's concatenation, checked in place (every tensor before
      // any update).
      const MultiAdamWLayout layout(command);
      const size_t count = layout.count;
      const std::vector<int64_t> &ins = command.ins, &outs = command.outs;
      auto at = [&](int64_t buffer) {
        return reinterpret_cast<float *>(address(buffer));
      };
      std::vector<gpu::AdamSegment> segments(count);
      int64_t total = 0, chunks = 0;
      for (size_t k = 0; k < count; ++k) {
        uint16_t *copy =
            layout.copies
                ? reinterpret_cast<uint16_t *>(address(outs[layout.newCopy(k)]))
                : nullptr;
        if (at(outs[k]) != at(ins[k]) ||
            at(outs[layout.newExpAvg(k)]) != at(ins[layout.expAvg(k)]) ||
            at(outs[layout.newExpAvgSq(k)]) != at(ins[layout.expAvgSq(k)]) ||
            (copy &&
             reinterpret_cast<void *>(copy) != address(ins[layout.copyIn(k)])))
          return Status::error(describe(i, command) +
                               ": multi_adamw must update its parameters, "
                               "moments and copies in place");
        segments[k] = {at(outs[k]),
                       at(ins[layout.grad(k)]),
                       at(outs[layout.newExpAvg(k)]),
                       at(outs[layout.newExpAvgSq(k)]),
                       copy,
                       total,
                       chunks,
                       0};
        segments[k].vectorized = gpu::adamVectorizable(segments[k]);
        adamTensors += 1;
        adamVectorized += segments[k].vectorized;
        const int64_t n = program.buffers[size_t(outs[k])].numElements();
        total += n;
        chunks += gpu::adamChunksOf(n);
      }
      tableOffsets[i] =
          append(segments.data(), segments.size() * sizeof(gpu::AdamSegment));
    } else if ((id == KernelId::global_norm || id == KernelId::sum_squares) &&
               std::all_of(
                   command.ins.begin(), command.ins.end(), [&](int64_t buffer) {
                     return program.buffers[size_t(buffer)].dtype == DType::F32;
                   })) {
      // Every tensor's pieces in one launch (the gradient norm of GPT-2
      // 124M: 148 launches before), where the operands are f32 in place.
      std::vector<gpu::NormSegment> segments;
      int64_t pieces = 0;
      for (int64_t buffer : command.ins) {
        int64_t n = program.buffers[size_t(buffer)].numElements();
        if (n > 0)
          segments.push_back(
              {reinterpret_cast<const float *>(address(buffer)), n, pieces});
        pieces += gpu::normPieces(n);
      }
      if (!segments.empty())
        tableOffsets[i] =
            append(segments.data(), segments.size() * sizeof(gpu::NormSegment));
    } else if (id == KernelId::multi_cast) {
      // Between f32 and 16 bits (the kernel signature and unsupported()
      // hold one pair of types, one of them f32), one launch over the
      // tensors' concatenation; a copy per tensor needs no table.
      DType from = program.buffers[size_t(command.ins[0])].dtype;
      DType to = program.buffers[size_t(command.outs[0])].dtype;
      if (from == to)
        continue;
      const bool narrow = from == DType::F32;
      std::vector<gpu::CastSegment> segments;
      int64_t total = 0;
      for (size_t k = 0; k < command.ins.size(); ++k) {
        uint8_t *in = address(command.ins[k]), *out = address(command.outs[k]);
        segments.push_back({reinterpret_cast<uint16_t *>(narrow ? out : in),
                            reinterpret_cast<float *>(narrow ? in : out),
                            total});
        total += program.buffers[size_t(command.ins[k])].numElements();
      }
      tableOffsets[i] =
          append(segments.data(), segments.size() * sizeof(gpu::CastSegment));
    } else if (id == KernelId::rope) {
      const BufferDesc &x = program.buffers[size_t(command.ins[0])];
      std::vector<double> invFreq = cpu::ropeInverseFrequencies(
          x.shape[3], command.get("theta", 10000.0),
          command.get("llama3_factor", 0.0),
          command.get("llama3_low_freq_factor", 0.0),
          command.get("llama3_high_freq_factor", 0.0),
          command.get("llama3_original_max_positions", 0.0),
          command.get("linear_factor", 0.0));
      tableOffsets[i] = append(invFreq.data(), invFreq.size() * sizeof(double));
    } else if (isMoeKernel(id)) {
      // The experts' weights (or gradients) of a grouped GEMM, the
      // routers' statistics of a load-balancing loss.
      std::vector<const void *> pointers = moeTable(command, id);
      if (!pointers.empty())
        tableOffsets[i] =
            append(pointers.data(), pointers.size() * sizeof(const void *));
    }
  }
  if (tables.empty())
    return Status::ok();
  MTRT_RETURN_IF_ERROR(checkCuda(
      cudaMalloc(reinterpret_cast<void **>(&commandTables), tables.size()),
      "allocating the commands' tables"));
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaMemcpyAsync(commandTables, tables.data(), tables.size(),
                                cudaMemcpyHostToDevice, stream),
                "uploading the commands' tables"));
  // The host copy must outlive the transfer.
  return checkCuda(cudaStreamSynchronize(stream), "the commands' tables");
}

Status CudaDevice::upload(int64_t bufferId, const void *host, int64_t bytes,
                          int64_t offset) {
  MTRT_RETURN_IF_ERROR(checkTransfer(bufferId, bytes, offset, "upload"));
  MTRT_RETURN_IF_ERROR(selectDevice());
  // On the compute stream, which does not synchronize with the legacy
  // default stream a plain cudaMemcpy uses; waited for, so that the host
  // buffer may be reused on return and the next step sees the bytes.
  std::string what = "upload to buffer " + std::to_string(bufferId);
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaMemcpyAsync(address(bufferId) + offset, host, size_t(bytes),
                                cudaMemcpyHostToDevice, stream),
                what));
  return checkCuda(cudaStreamSynchronize(stream), what);
}

Status CudaDevice::waitForStream(const char *what) {
  if (!nccl.joined() && !ncclTransfers.joined())
    return checkCuda(cudaStreamSynchronize(stream), what);
  const double timeout = communicator ? communicator->timeoutSeconds() : 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t polls = 0;; ++polls) {
    cudaError_t state = cudaStreamQuery(stream);
    if (state != cudaErrorNotReady)
      return checkCuda(state, what);
    if (polls % 256 != 0) {
      if (polls > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    std::string error = nccl.backgroundError();
    if (error.empty())
      error = ncclTransfers.backgroundError();
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (error.empty() && timeout > 0 && waited > timeout)
      error = noAnswerWithin(timeout) + " from the ranks NCCL waits for";
    if (!error.empty()) {
      // The graph first: NCCL counts the graph's captured calls as
      // references to their communicators, and ncclCommAbort (2.26 on)
      // waits until they are gone; before 2.26 the graph's clean-up would
      // read the freed communicators instead.
      dropGraph();
      graphWhy = "this rank's NCCL communicators were aborted";
      gpu::abortTogether(nccl, ncclTransfers, timeout);
      ncclAborted = std::string(what) + " did not finish: " + error;
      return Status::error(ncclAborted +
                           "; this rank's NCCL communicators were aborted");
    }
  }
}

Status CudaDevice::download(int64_t bufferId, void *host, int64_t bytes,
                            int64_t offset) const {
  MTRT_RETURN_IF_ERROR(checkTransfer(bufferId, bytes, offset, "download"));
  MTRT_RETURN_IF_ERROR(selectDevice());
  std::string what = "download of buffer " + std::to_string(bufferId);
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaMemcpyAsync(host, address(bufferId) + offset, size_t(bytes),
                                cudaMemcpyDeviceToHost, stream),
                what));
  return checkCuda(cudaStreamSynchronize(stream), what);
}

Status CudaDevice::findNonFinite(const std::vector<int64_t> &bufferIds,
                                 int64_t &first) const {
  first = -1;
  MTRT_RETURN_IF_ERROR(checkPrepared("findNonFinite"));
  MTRT_RETURN_IF_ERROR(selectDevice());
  for (int64_t id : bufferIds) {
    MTRT_RETURN_IF_ERROR(checkFloatBuffer(id, "findNonFinite"));
    const BufferDesc &buffer = prog->buffers[size_t(id)];
    int found = 0;
    MTRT_RETURN_IF_ERROR(checkCuda(
        cudaMemsetAsync(flag, 0, sizeof(int), stream), "findNonFinite"));
    MTRT_RETURN_IF_ERROR(checkCuda(
        gpu::launchNonFinite(stream, f32(id), buffer.numElements(), flag),
        "findNonFinite"));
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaMemcpyAsync(&found, flag, sizeof(int),
                                  cudaMemcpyDeviceToHost, stream),
                  "findNonFinite"));
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaStreamSynchronize(stream), "findNonFinite"));
    if (found) {
      first = id;
      return Status::ok();
    }
  }
  return Status::ok();
}

Status CudaDevice::executeStep(uint64_t seed, uint64_t step) {
  MTRT_RETURN_IF_ERROR(checkPrepared("a step"));
  if (!ncclAborted.empty())
    return Status::error("no step after an earlier one failed (" + ncclAborted +
                         ") and this rank's NCCL communicators were aborted");
  MTRT_RETURN_IF_ERROR(selectDevice());

  measuredPeak = std::max(measuredPeak, persistentExtent(*prog));
  // The step's key, on the stream before any command (from pageable
  // memory: the copies are staged before they return): for the dropout and
  // attention kernels, and into the generated kernels' dropout blocks.
  const uint64_t key[2] = {seed, step};
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaMemcpyAsync(stepKey, key, sizeof(key),
                                cudaMemcpyHostToDevice, stream),
                "uploading the step's dropout key"));
  if (!dropoutParams.all().empty()) {
    dropoutParams.setStep(seed, step);
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaMemcpyAsync(dropoutBlocks, dropoutParams.all().data(),
                                  dropoutParams.all().size() * sizeof(uint64_t),
                                  cudaMemcpyHostToDevice, stream),
                  "uploading the dropouts' parameters"));
  }
  // Replayed: one launch. Captured at the second step; a capture that
  // fails leaves the steps eager, and says why (choices()).
  if (!trace && !graphDecided && eagerSteps > 0)
    MTRT_RETURN_IF_ERROR(decideGraph(seed, step));
  if (!trace && graphExec) {
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaGraphLaunch(graphExec, stream), "launching the step"));
    return waitForStream("the step");
  }
  // With a trace, command i runs between events i and i + 1; the step's
  // host time at its start places them on the trace's clock.
  double stepBegin = 0.0;
  if (trace) {
    while (commandEvents.size() < prog->commands.size() + 1) {
      cudaEvent_t event;
      MTRT_RETURN_IF_ERROR(
          checkCuda(cudaEventCreate(&event), "creating a timing event"));
      commandEvents.push_back(event);
    }
    while (overlappingCommands > 0 &&
           besideEvents.size() < 2 * prog->commands.size()) {
      cudaEvent_t event;
      MTRT_RETURN_IF_ERROR(
          checkCuda(cudaEventCreate(&event), "creating a timing event"));
      besideEvents.push_back(event);
    }
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaStreamSynchronize(stream), "the step's start"));
    stepBegin = trace->nowUs();
    MTRT_RETURN_IF_ERROR(checkCuda(cudaEventRecord(commandEvents[0], stream),
                                   "timing the step"));
  }
  MTRT_RETURN_IF_ERROR(enqueueCommands(seed, step, trace != nullptr));
  MTRT_RETURN_IF_ERROR(waitForStream("the step"));
  // Sends copied their bytes out: wait for them before the next step.
  if (communicator && pipelineAxis >= 0)
    MTRT_RETURN_IF_ERROR(hostStaged.finishSends());
  ++eagerSteps;
  if (trace)
    for (size_t i = 0; i < prog->commands.size(); ++i) {
      // A command that overlaps between its own events on the
      // communication stream, beside the others; the rest between the
      // compute stream's (which waited for those on the communication
      // stream that do not overlap).
      const bool beside = onCommStream(i) && overlapping[i];
      cudaEvent_t from = beside ? besideEvents[2 * i] : commandEvents[i];
      cudaEvent_t to = beside ? besideEvents[2 * i + 1] : commandEvents[i + 1];
      float begin = 0, end = 0; // milliseconds after the first event
      MTRT_RETURN_IF_ERROR(
          checkCuda(cudaEventElapsedTime(&begin, commandEvents[0], from),
                    "reading a command's time"));
      MTRT_RETURN_IF_ERROR(
          checkCuda(cudaEventElapsedTime(&end, commandEvents[0], to),
                    "reading a command's time"));
      trace->record(int64_t(step), int64_t(i), stepBegin + 1e3 * begin,
                    stepBegin + 1e3 * end, beside);
    }
  return Status::ok();
}

Status CudaDevice::executeEvaluation(const std::vector<bool> &slice) {
  MTRT_RETURN_IF_ERROR(checkEvaluationSlice(slice));
  if (!ncclAborted.empty())
    return Status::error("no evaluation after an earlier step failed (" +
                         ncclAborted +
                         ") and this rank's NCCL communicators were aborted");
  MTRT_RETURN_IF_ERROR(selectDevice());
  measuredPeak = std::max(measuredPeak, persistentExtent(*prog));
  // The generated kernels' dropout blocks, disabled (the next step uploads
  // its own before it runs, graph or not); the dropout and attention
  // kernels read a probability of 0 (dropoutProbability).
  if (!dropoutParams.all().empty()) {
    FusedDropoutBlocks off = dropoutParams;
    off.disable();
    MTRT_RETURN_IF_ERROR(
        checkCuda(cudaMemcpyAsync(dropoutBlocks, off.all().data(),
                                  off.all().size() * sizeof(uint64_t),
                                  cudaMemcpyHostToDevice, stream),
                  "uploading the evaluation's dropout parameters"));
  }
  evaluationSlice = &slice;
  Status status = enqueueCommands(0, 0, /*timed=*/false);
  evaluationSlice = nullptr;
  MTRT_RETURN_IF_ERROR(status);
  MTRT_RETURN_IF_ERROR(waitForStream("the evaluation"));
  if (communicator && pipelineAxis >= 0)
    MTRT_RETURN_IF_ERROR(hostStaged.finishSends());
  return Status::ok();
}

Status CudaDevice::enqueueCommands(uint64_t seed, uint64_t step, bool timed) {
  auto join = [&](const std::vector<size_t> &commands) {
    for (size_t k : commands)
      MTRT_RETURN_IF_ERROR(
          checkCuda(cudaStreamWaitEvent(stream, overlapEvents[2 * k + 1], 0),
                    "waiting for " + describe(k, prog->commands[k])));
    return Status::ok();
  };
  // An evaluation runs its slice in order on the compute stream.
  const bool overlap = overlappingCommands > 0 && !evaluationSlice;
  for (size_t i = 0; i < prog->commands.size(); ++i) {
    if (evaluationSlice && !(*evaluationSlice)[i])
      continue;
    const Command &command = prog->commands[i];
    measuredPeak = std::max(measuredPeak, commandExtent(*prog, command));
    KernelId id = resolved[i]->id;
    if (overlap)
      MTRT_RETURN_IF_ERROR(join(joins.before[i]));
    // With collectives overlapping, every command that calls NCCL's
    // collectives runs on the communication stream, so that they keep the
    // program's order on one stream (two NCCL kernels running at once on
    // two streams can wait for each other across ranks). The pipeline's
    // NCCL transfers do run beside them (receives on the compute stream,
    // sends on the peers' streams), each on a communicator of its own, as
    // Megatron-LM runs its gradient reduction beside its pipeline's
    // transfers; that needs the GPU to hold their kernels at once, which
    // NCCL's few blocks per kernel allow. It starts once the
    // compute stream has run every command before it; one that does not
    // overlap is waited for at once.
    const bool onComm = overlap && onCommStream(i);
    bool swapped = false;
    Status status = Status::ok();
    if (onComm) {
      status = checkCuda(cudaEventRecord(overlapEvents[2 * i], stream),
                         "forking to the communication stream");
      if (status)
        status =
            checkCuda(cudaStreamWaitEvent(commStream, overlapEvents[2 * i], 0),
                      "forking to the communication stream");
      if (status && timed)
        status = checkCuda(cudaEventRecord(besideEvents[2 * i], commStream),
                           "timing the command");
      if (status) {
        std::swap(stream, commStream);
        swapped = true;
      }
    }
    const gpu::CudnnAttentionShape &cudnnCall = cudnnCalls[i];
    bool staging = !cudnnCall.heads && stages(command, id);
    if (status && staging)
      status = stageOperands(command);
    if (status)
      status = cudnnCall.heads ? runCudnnAttention(command, cudnnCall)
                               : runCommand(i, id, command, seed, step);
    if (status && staging)
      status = unstageOutputs(command);
    if (swapped)
      std::swap(stream, commStream);
    if (onComm) {
      // The timing event before the one the compute stream waits for, so
      // that it has completed when the step has.
      if (status && timed)
        status = checkCuda(cudaEventRecord(besideEvents[2 * i + 1], commStream),
                           "timing the command");
      if (status)
        status =
            checkCuda(cudaEventRecord(overlapEvents[2 * i + 1], commStream),
                      "marking the collective's end");
      if (status && !overlapping[i])
        status = join({i});
    }
    if (status && timed)
      status = checkCuda(cudaEventRecord(commandEvents[i + 1], stream),
                         "timing the command");
    if (!status)
      return Status::error(describe(i, command) + ": " + status.message());
  }
  // The collectives no later command touches, before the step ends.
  if (overlap)
    MTRT_RETURN_IF_ERROR(join(joins.atEnd));
  // The sends over NCCL: received before the step ends (and their slots
  // are free for the next step's).
  for (int64_t peer : sendPeers) {
    const PeerStream &sender = sendStreams[peer];
    MTRT_RETURN_IF_ERROR(checkCuda(cudaEventRecord(sender.done, sender.stream),
                                   "joining the sends' streams"));
    MTRT_RETURN_IF_ERROR(checkCuda(cudaStreamWaitEvent(stream, sender.done, 0),
                                   "joining the sends' streams"));
  }
  return Status::ok();
}

int mtrt::visibleCudaDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess)
    return 0;
  return count;
}

Status mtrt::createCudaDevice(const DeviceOptions &options,
                              std::unique_ptr<Device> &device) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return Status::error(
        "--device cuda: no CUDA device is visible (cudaGetDeviceCount: " +
        (error != cudaSuccess ? cudaMessage(error) : std::string("0 devices")) +
        "; CUDA_VISIBLE_DEVICES " +
        (visible ? "is '" + std::string(visible) + "'" : "is unset") +
        "); run with --device cpu on a machine without a GPU");
  }
  (void)options;
  // One GPU per rank: the rank's index on its node (Open MPI, Slurm), as
  // Megatron-LM's torch.cuda.set_device(local_rank).
  int local = 0;
  for (const char *variable : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                               "MPI_LOCALRANKID", "LOCAL_RANK"})
    if (const char *value = std::getenv(variable)) {
      local = std::atoi(value);
      break;
    }
  // More ranks on a node than GPUs share them round-robin: CUDA runs their
  // contexts side by side, and their collectives go through host memory
  // (NCCL refuses a duplicate GPU; openCollectives finds such groups).
  if (local < 0)
    return Status::error("--device cuda: this rank's index on its node is " +
                         std::to_string(local));
  device = std::make_unique<CudaDevice>(local % count, options.tf32);
  return Status::ok();
}

// The plugin's entry points: libmtrt_cuda_backend.so is loaded by the
// trainer only when the CUDA backend is asked for, so that runs on the CPU
// never load the CUDA runtime and cuBLAS.
extern "C" __attribute__((visibility("default"))) int
mtrt_cuda_backend_visible_devices() {
  return mtrt::visibleCudaDevices();
}

extern "C" __attribute__((visibility("default"))) mtrt::Device *
mtrt_cuda_backend_create_with_options(const mtrt::DeviceOptions *options,
                                      std::string *error) {
  std::unique_ptr<mtrt::Device> device;
  if (mtrt::Status status = mtrt::createCudaDevice(*options, device); !status) {
    *error = status.message();
    return nullptr;
  }
  return device.release();
}
