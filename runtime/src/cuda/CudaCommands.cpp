//===- CudaCommands.cpp - Each command's launch ---------------------------===//

#include "cuda/CudaDeviceImpl.h"

using namespace mtrt;
using namespace mtrt::gpu;

Status CudaDevice::runCommand(size_t index, KernelId id, const Command &command,
                              uint64_t seed, uint64_t step) {
  const std::vector<BufferDesc> &buffers = prog->buffers;
  auto in = [&](size_t i) { return f32(command.ins[i]); };
  auto out = [&](size_t i) { return f32(command.outs[i]); };
  auto ids = [&](size_t i) {
    return reinterpret_cast<const int32_t *>(address(command.ins[i]));
  };
  auto inDesc = [&](size_t i) -> const BufferDesc & {
    return buffers[size_t(command.ins[i])];
  };
  auto outDesc = [&](size_t i) -> const BufferDesc & {
    return buffers[size_t(command.outs[i])];
  };
  auto lastDim = [](const BufferDesc &buffer) {
    return buffer.shape.empty() ? int64_t(1) : buffer.shape.back();
  };
  double *stats = reinterpret_cast<double *>(scratch);
  // Dropout masks as the CPU backend draws them (DeviceKernels.h).
  gpu::DropoutKey key;
  key.seed = seed;
  key.step = uint32_t(step);
  key.stream = uint32_t(command.get("rng_stream", 0));
  key.offset = uint64_t(command.get("rng_offset", 0));
  key.live = stepKey;
  cudaError_t error = cudaSuccess;
  switch (id) {
  case KernelId::fused: {
    size_t generatedIndex = size_t(command.get("generated", 0));
    const GeneratedKernel &kernel = prog->generatedKernels[generatedIndex];
    int64_t blocks = dropoutParams.offset(index);
    GeneratedKernelArgs args = generatedKernelArgs(
        command, [&](int64_t buffer) { return address(buffer); },
        blocks < 0 ? nullptr : dropoutBlocks + blocks);
    error = launchers[generatedIndex](&args, kernel.elements, stream);
    break;
  }
  case KernelId::matmul:
    return gemm(command, id, halfGemm(command, id));
  case KernelId::matmul_bias:
  case KernelId::matmul_bias_gelu:
  case KernelId::matmul_gelu_grad:
  case KernelId::matmul_bias_grad: {
    const EpilogueGemm &plan = epiloguePlans[index];
    if (const auto &planned = plan.fused)
      return planned->run(lt, ltOperands(command, id), cublasWorkspace,
                          kCublasWorkspaceBytes, stream);
    if (plan.inPlace && id != KernelId::matmul_bias_grad) {
      const bool bf16 = inDesc(0).dtype == DType::BF16;
      auto *product = reinterpret_cast<uint16_t *>(address(command.outs[0]));
      if (id == KernelId::matmul_bias_gelu) {
        // The sum through the bias epilogue, then GeLU of it.
        MTRT_RETURN_IF_ERROR(plan.sum->run(lt, geluSumOperands(command),
                                           cublasWorkspace,
                                           kCublasWorkspaceBytes, stream));
        error = gpu::launchPointwiseStored(
            stream, gpu::Pointwise::Gelu, product, nullptr,
            reinterpret_cast<uint16_t *>(address(command.outs[1])),
            outDesc(1).numElements(), bf16);
        break;
      }
      // The product (GeLU's output gradient), then GeLU's derivative at
      // the stored sum, in place.
      MTRT_RETURN_IF_ERROR(gemm(command, id, /*half=*/true));
      error = gpu::launchPointwiseStored(
          stream, gpu::Pointwise::GeluGrad, product,
          reinterpret_cast<const uint16_t *>(address(command.ins[2])), product,
          outDesc(0).numElements(), bf16);
      break;
    }
    if (plan.inPlace) {
      // The 16-bit GEMM writing its f32 (or 16-bit) product, then the
      // bias gradient summed from the rhs as it is stored.
      MTRT_RETURN_IF_ERROR(gemm(command, id, /*half=*/true));
      const int64_t cols = outDesc(1).numElements();
      error = gpu::launchBiasAddGrad(
          stream, address(command.ins[1]), storageOf(inDesc(1).dtype),
          address(command.outs[1]), storageOf(outDesc(1).dtype), stats,
          inDesc(1).numElements() / cols, cols);
      break;
    }
    // The fallback, on fp32 copies: the product (output 0), then the
    // epilogue's kernels over it (one rounding to 16 bits, when the copies
    // go back). As cuBLASLt, it applies GeLU to the unrounded product (the
    // CPU backend rounds it first), with the unfused kernels' GeLU.
    MTRT_RETURN_IF_ERROR(gemm(command, id, /*half=*/false));
    const int64_t elements = outDesc(0).numElements();
    if (id == KernelId::matmul_bias_grad) {
      const int64_t cols = outDesc(1).numElements();
      error = gpu::launchBiasAddGrad(stream, in(1), gpu::Storage::F32, out(1),
                                     gpu::Storage::F32, stats,
                                     inDesc(1).numElements() / cols, cols);
      break;
    }
    if (id == KernelId::matmul_gelu_grad) {
      error = gpu::launchPointwise(stream, gpu::Pointwise::GeluGrad, out(0),
                                   in(2), out(0), elements, 1);
      break;
    }
    error = gpu::launchPointwise(stream, gpu::Pointwise::BiasAdd, out(0), in(2),
                                 out(0), elements, inDesc(2).numElements());
    if (error == cudaSuccess && id == KernelId::matmul_bias_gelu)
      error = gpu::launchPointwise(stream, gpu::Pointwise::Gelu, out(0),
                                   nullptr, out(1), elements, 1);
    break;
  }
  case KernelId::embedding: {
    const BufferDesc &table = inDesc(0);
    const int64_t vocabOffset = int64_t(command.get("vocab_offset", 0));
    error =
        halfEmbedding(command, id)
            ? gpu::launchEmbedding(
                  stream,
                  reinterpret_cast<const uint16_t *>(address(command.ins[0])),
                  ids(1),
                  reinterpret_cast<uint16_t *>(address(command.outs[0])),
                  inDesc(1).numElements(), table.shape[0], table.shape[1],
                  vocabOffset)
            : gpu::launchEmbedding(stream, in(0), ids(1), out(0),
                                   inDesc(1).numElements(), table.shape[0],
                                   table.shape[1], vocabOffset);
    break;
  }
  case KernelId::embedding_grad: {
    const BufferDesc &table = outDesc(0);
    error = gpu::launchEmbeddingGrad(
        stream, in(0), ids(1), out(0), inDesc(1).numElements(), table.shape[0],
        table.shape[1], int64_t(command.get("vocab_offset", 0)),
        reinterpret_cast<int32_t *>(scratch),
        accumulatesInPlace(id, command.ins.size()));
    break;
  }
  case KernelId::position_embedding:
    // fp32 views (16-bit operands are staged): count floats, not bytes.
    error = cudaMemcpyAsync(out(0), in(0),
                            size_t(outDesc(0).numElements()) * sizeof(float),
                            cudaMemcpyDeviceToDevice, stream);
    break;
  case KernelId::position_embedding_grad:
    error = gpu::launchPositionEmbeddingGrad(
        stream, in(0), out(0), inDesc(0).shape[0], outDesc(0).shape[0],
        outDesc(0).shape[1]);
    break;
  case KernelId::layer_norm: {
    int64_t cols = lastDim(inDesc(0));
    error = gpu::launchLayerNorm(stream, in(0), in(1), in(2), out(0),
                                 inDesc(0).numElements() / cols, cols,
                                 command.get("epsilon", 1e-5));
    break;
  }
  case KernelId::layer_norm_grad: {
    int64_t cols = lastDim(inDesc(1));
    error = gpu::launchLayerNormGrad(
        stream, in(0), in(1), in(2), out(0), out(1), out(2), stats,
        inDesc(1).numElements() / cols, cols, command.get("epsilon", 1e-5));
    break;
  }
  case KernelId::bias_add_grad: {
    // Read and written in their own storage (never staged).
    int64_t cols = outDesc(0).numElements();
    error = gpu::launchBiasAddGrad(
        stream, address(command.ins[0]), storageOf(inDesc(0).dtype),
        address(command.outs[0]), storageOf(outDesc(0).dtype), stats,
        inDesc(0).numElements() / cols, cols);
    break;
  }
  case KernelId::split_heads:
  case KernelId::merge_heads: {
    bool merge = id == KernelId::merge_heads;
    const BufferDesc &x = merge ? outDesc(0) : inDesc(0);
    const BufferDesc &head = merge ? inDesc(0) : outDesc(0);
    const std::vector<int64_t> &chunkIds = merge ? command.ins : command.outs;
    gpu::HeadChunks chunks{};
    for (size_t c = 0; c < chunkIds.size(); ++c)
      chunks.p[c] = f32(chunkIds[c]);
    error = gpu::launchHeads(
        stream, merge ? out(0) : in(0), chunks, int64_t(chunkIds.size()),
        x.numElements(), head.shape[2], head.shape[1], head.shape[3], merge);
    break;
  }
  case KernelId::attention:
  case KernelId::attention_grad:
  case KernelId::qkv_attention:
  case KernelId::qkv_attention_grad:
  case KernelId::merged_attention:
  case KernelId::merged_attention_grad: {
    // [batch, heads, seq, headDim] operands, or one fused QKV tensor.
    AttentionKind kind = attentionKind(id);
    bool forward = kind.forward, fusedQKV = kind.fusedQKV;
    AttentionExtent extent = AttentionExtent::of(
        inDesc(kind.queryInput()).shape, inDesc(kind.keyInput()).shape,
        fusedQKV, kind.mergedOutput, int64_t(command.get("heads", 1)));
    int64_t heads = extent.heads, seq = extent.seq, headDim = extent.headDim;
    int64_t rows = extent.batch * heads * seq;
    double scale = command.get("scale", 1.0 / std::sqrt(double(headDim)));
    AttentionLayout layout = extent.layout();
    // Mistral's sliding window (0: every earlier key).
    const int64_t window = int64_t(command.get("window", 0));
    // Gemma 2's soft cap of the scores (0: none).
    const double softcap = command.get("softcap", 0.0);
    gpu::AttentionDropout dropout;
    dropout.key = key;
    dropout.key.p = dropoutProbability(command, "dropout");
    dropout.heads = heads;
    dropout.headsTotal = int64_t(command.get("rng_heads", double(heads)));
    dropout.headOffset = int64_t(command.get("rng_head_offset", 0));
    // With a fused QKV tensor, q, k and v (and their gradients) are one
    // buffer that the layout indexes.
    const float *qIn = in(forward ? 0 : 1);
    const float *kIn = fusedQKV ? qIn : in(forward ? 1 : 2);
    const float *vIn = fusedQKV ? qIn : in(forward ? 2 : 3);
    // The fused and merged forms state their rows' log-sum-exp: the
    // forward writes it, the gradient reads it with the output (its last
    // two inputs).
    const size_t ins = command.ins.size();
    const bool hasStats = kind.hasStats();
    if (forward) {
      error = gpu::launchAttention(
          stream, qIn, kIn, vIn, out(0), hasStats ? out(1) : nullptr, rows, seq,
          headDim, scale, layout, dropout, window, softcap);
    } else {
      float *dQ = out(0);
      float *dK = fusedQKV ? dQ : out(1);
      float *dV = fusedQKV ? dQ : out(2);
      error = gpu::launchAttentionGrad(
          stream, in(0), qIn, kIn, vIn, hasStats ? in(ins - 2) : nullptr,
          hasStats ? in(ins - 1) : nullptr, dQ, dK, dV, stats, rows, seq,
          headDim, scale, layout, dropout, window, softcap);
    }
    break;
  }
  case KernelId::send:
  case KernelId::recv: {
    int64_t peer = int64_t(command.get("peer_stage", -1));
    int64_t tag = int64_t(command.get("tag", 0));
    if (ncclTransfer(command, id)) {
      if (id == KernelId::recv)
        return ncclTransfers.recv(peer, address(command.outs[0]),
                                  outDesc(0).bytes(), stream);
      // From its own slot, on the peer's stream, so that the compute
      // stream neither waits for the receive nor writes over the bytes.
      uint8_t *slot = sendSlots + sendSlot[index];
      const PeerStream &sender = sendStreams[peer];
      MTRT_RETURN_IF_ERROR(
          checkCuda(cudaMemcpyAsync(slot, address(command.ins[0]),
                                    size_t(inDesc(0).bytes()),
                                    cudaMemcpyDeviceToDevice, stream),
                    "copying a send's bytes into its slot"));
      MTRT_RETURN_IF_ERROR(
          checkCuda(cudaEventRecord(transferEvents[index], stream),
                    "forking to the send's stream"));
      MTRT_RETURN_IF_ERROR(checkCuda(
          cudaStreamWaitEvent(sender.stream, transferEvents[index], 0),
          "forking to the send's stream"));
      return ncclTransfers.send(peer, slot, inDesc(0).bytes(), sender.stream);
    }
    if (id == KernelId::send)
      return hostStaged.send(pipelineAxis, peer, tag, address(command.ins[0]),
                             inDesc(0).bytes(), stream);
    return hostStaged.recv(pipelineAxis, peer, tag, address(command.outs[0]),
                           outDesc(0).bytes(), stream);
  }
  case KernelId::cross_entropy: {
    if (command.has("vocab_grid_axis"))
      return runVocabParallelCrossEntropy(id, command);
    // A padded vocabulary's columns from vocab_size on are masked out.
    int64_t vocab = lastDim(inDesc(0)), rows = inDesc(1).numElements();
    error = gpu::launchCrossEntropy(
        stream, in(0), ids(1), stats, out(0), rows, vocab,
        int64_t(command.get("vocab_size", double(vocab))));
    break;
  }
  case KernelId::cross_entropy_grad: {
    if (command.has("vocab_grid_axis"))
      return runVocabParallelCrossEntropy(id, command);
    int64_t vocab = lastDim(inDesc(1)), rows = inDesc(2).numElements();
    error = gpu::launchCrossEntropyGrad(
        stream, in(0), in(1), ids(2), out(0), rows, vocab,
        int64_t(command.get("vocab_size", double(vocab))));
    break;
  }
  case KernelId::global_norm:
  case KernelId::sum_squares: {
    int64_t pieces = 0;
    for (size_t i = 0; i < command.ins.size(); ++i)
      pieces += gpu::normPieces(inDesc(i).numElements());
    if (tableOffsets[index] >= 0) {
      // One launch over the prepared table of tensors.
      const auto *table = reinterpret_cast<const gpu::NormSegment *>(
          commandTables + tableOffsets[index]);
      int64_t count = 0;
      for (size_t i = 0; i < command.ins.size(); ++i)
        count += inDesc(i).numElements() > 0;
      error =
          gpu::launchSumOfSquaresSegments(stream, table, count, pieces, stats);
    } else {
      for (size_t i = 0, at = 0; i < command.ins.size() && error == cudaSuccess;
           ++i) {
        error = gpu::launchSumOfSquares(stream, in(i), inDesc(i).numElements(),
                                        stats + at);
        at += gpu::normPieces(inDesc(i).numElements());
      }
    }
    if (error == cudaSuccess)
      error = gpu::launchSumOfPartials(stream, stats, pieces, out(0),
                                       id == KernelId::global_norm);
    break;
  }
  case KernelId::clip_scale:
    error = gpu::launchClipScale(stream, in(0), in(1), out(0));
    break;
  case KernelId::div:
    error = gpu::launchScalar(stream, in(0), in(1), out(0));
    break;
  case KernelId::sqrt:
    error = gpu::launchScalar(stream, in(0), nullptr, out(0));
    break;
  case KernelId::mean:
    error = gpu::launchMean(stream, in(0), inDesc(0).numElements(), out(0));
    break;
  case KernelId::scale:
    error = gpu::launchScale(stream, in(0), out(0), outDesc(0).numElements(),
                             float(command.get("factor", 1.0)));
    break;
  case KernelId::adamw: {
    if (out(0) != in(0) || out(1) != in(2) || out(2) != in(3))
      return Status::error(
          "adamw must update its parameter and moments in place");
    gpu::AdamScalars scalars{in(4), in(5), in(6), in(7), in(8), in(9), in(10)};
    error = gpu::launchAdamW(stream, out(0), in(1), out(1), out(2),
                             outDesc(0).numElements(), scalars,
                             command.get("decay", 0) != 0);
    break;
  }
  case KernelId::multi_adamw: {
    // One launch over the group's concatenation: its table of tensors was
    // built and checked when the program was prepared.
    const MultiAdamWLayout layout(command);
    const size_t count = layout.count;
    int64_t total = 0, chunks = 0;
    for (size_t k = 0; k < count; ++k) {
      total += outDesc(k).numElements();
      chunks += gpu::adamChunksOf(outDesc(k).numElements());
    }
    auto *table = reinterpret_cast<const gpu::AdamSegment *>(
        commandTables + tableOffsets[index]);
    gpu::AdamScalars scalars{in(layout.scalar(0)), in(layout.scalar(1)),
                             in(layout.scalar(2)), in(layout.scalar(3)),
                             in(layout.scalar(4)), in(layout.scalar(5)),
                             in(layout.scalar(6))};
    // The copies' one 16-bit type (the kernel signature holds it).
    const bool copyBf16 =
        layout.copies && outDesc(layout.newCopy(0)).dtype == DType::BF16;
    const bool decay = command.get("decay", 0) != 0;
    error =
        adamByChunks
            ? gpu::launchMultiAdamWChunks(stream, table, int64_t(count), total,
                                          chunks, scalars, decay, copyBf16)
            : gpu::launchMultiAdamW(stream, table, int64_t(count), total,
                                    scalars, decay, copyBf16);
    break;
  }
  case KernelId::cast: {
    const BufferDesc &from = inDesc(0), &to = outDesc(0);
    if (from.dtype == to.dtype)
      error =
          cudaMemcpyAsync(address(command.outs[0]), address(command.ins[0]),
                          size_t(to.bytes()), cudaMemcpyDeviceToDevice, stream);
    else if (from.dtype == DType::F32)
      error = gpu::launchConvert(
          stream, reinterpret_cast<uint16_t *>(address(command.outs[0])), in(0),
          to.numElements(), to.dtype == DType::BF16, true);
    else
      error = gpu::launchConvert(
          stream, reinterpret_cast<uint16_t *>(address(command.ins[0])), out(0),
          to.numElements(), from.dtype == DType::BF16, false);
    break;
  }
  case KernelId::multi_cast: {
    const DType from = inDesc(0).dtype, to = outDesc(0).dtype;
    if (from == to) {
      for (size_t k = 0; k < command.ins.size() && error == cudaSuccess; ++k)
        error = cudaMemcpyAsync(
            address(command.outs[k]), address(command.ins[k]),
            size_t(outDesc(k).bytes()), cudaMemcpyDeviceToDevice, stream);
      break;
    }
    // One launch over the prepared table (prepareCommandTables).
    int64_t total = 0;
    for (size_t k = 0; k < command.outs.size(); ++k)
      total += outDesc(k).numElements();
    const bool narrow = from == DType::F32;
    error =
        gpu::launchMultiConvert(stream,
                                reinterpret_cast<const gpu::CastSegment *>(
                                    commandTables + tableOffsets[index]),
                                int64_t(command.ins.size()), total,
                                (narrow ? to : from) == DType::BF16, narrow);
    break;
  }
  case KernelId::dropout: {
    key.p = dropoutProbability(command, "probability");
    const BufferDesc &x = outDesc(0);
    bool split = command.has("rng_seq_total");
    error = gpu::launchDropout(
        stream, in(0), out(0), x.numElements(), key, split ? x.shape[1] : 0,
        int64_t(command.get("rng_seq_total", 0)),
        int64_t(command.get("rng_seq_offset", 0)), split ? x.shape[2] : 0);
    break;
  }
  case KernelId::add:
  case KernelId::mul:
  case KernelId::bias_add:
  case KernelId::gelu:
  case KernelId::gelu_grad:
  case KernelId::silu:
  case KernelId::silu_grad: {
    gpu::Pointwise op = id == KernelId::add         ? gpu::Pointwise::Add
                        : id == KernelId::mul       ? gpu::Pointwise::Mul
                        : id == KernelId::bias_add  ? gpu::Pointwise::BiasAdd
                        : id == KernelId::gelu      ? gpu::Pointwise::Gelu
                        : id == KernelId::gelu_grad ? gpu::Pointwise::GeluGrad
                        : id == KernelId::silu      ? gpu::Pointwise::Silu
                                                    : gpu::Pointwise::SiluGrad;
    bool unary = id == KernelId::gelu || id == KernelId::silu;
    int64_t cols =
        id == KernelId::bias_add ? inDesc(1).numElements() : int64_t(1);
    error = gpu::launchPointwise(stream, op, in(0), unary ? nullptr : in(1),
                                 out(0), outDesc(0).numElements(), cols);
    break;
  }
  case KernelId::rms_norm: {
    int64_t cols = lastDim(inDesc(0));
    error = gpu::launchRmsNorm(
        stream, in(0), in(1), out(0), inDesc(0).numElements() / cols, cols,
        command.get("epsilon", 1e-6), rmsNormWeightOffset(command));
    break;
  }
  case KernelId::rms_norm_grad: {
    int64_t cols = lastDim(inDesc(1));
    error = gpu::launchRmsNormGrad(stream, in(0), in(1), in(2), out(0), out(1),
                                   stats, inDesc(1).numElements() / cols, cols,
                                   command.get("epsilon", 1e-6),
                                   rmsNormWeightOffset(command));
    break;
  }
  case KernelId::rope: {
    // The inverse frequencies: a table built when the program was prepared.
    const BufferDesc &x = inDesc(0);
    auto *invFreq =
        reinterpret_cast<const double *>(commandTables + tableOffsets[index]);
    error = gpu::launchRope(stream, in(0), out(0), invFreq,
                            x.shape[0] * x.shape[1] * x.shape[2], x.shape[2],
                            x.shape[3], command.get("inverse", 0.0) != 0.0);
    break;
  }
  case KernelId::repeat_kv:
  case KernelId::repeat_kv_grad: {
    const BufferDesc &kv = id == KernelId::repeat_kv ? inDesc(0) : outDesc(0);
    error = gpu::launchRepeatKV(stream, in(0), out(0), outDesc(0).numElements(),
                                int64_t(command.get("groups", 1)),
                                kv.shape[2] * kv.shape[3],
                                id == KernelId::repeat_kv_grad);
    break;
  }
  case KernelId::fill:
    error = gpu::launchFill(stream, out(0), outDesc(0).numElements(),
                            float(command.get("value", 0.0)));
    break;
  case KernelId::copy_prefix: {
    // Bytes of one type (checked at load); zero bits are 0.0 in f32, f16
    // and bf16 alike.
    const size_t element = size_t(dtypeSize(outDesc(0).dtype));
    const size_t total = size_t(outDesc(0).numElements()) * element;
    const size_t copied =
        std::min(total, size_t(inDesc(0).numElements()) * element);
    uint8_t *to = address(command.outs[0]);
    const uint8_t *from = address(command.ins[0]);
    // (The plan never overlaps an op's input with its output, but a copy
    // onto itself would be undefined for cudaMemcpyAsync.)
    if (to != from)
      error =
          cudaMemcpyAsync(to, from, copied, cudaMemcpyDeviceToDevice, stream);
    if (error == cudaSuccess && copied < total)
      error = cudaMemsetAsync(to + copied, 0, total - copied, stream);
    break;
  }
  case KernelId::all_reduce:
  case KernelId::reduce_scatter:
  case KernelId::all_gather:
  case KernelId::all_slice:
    return runCollective(id, command);
  case KernelId::expert_dispatch:
  case KernelId::expert_combine:
    return runExpertExchange(id, command);
  default:
    if (isMoeKernel(id))
      return runMoeCommand(index, id, command);
    return Status::error("no CUDA kernel for it");
  }
  return checkCuda(error, "the launch");
}
