//===- CpuDevice.cpp - The CPU backend: a rank program on the host --------===//

#include "cpu/CpuDevice.h"

#include "cpu/BlockedAttention.h"
#include "cpu/HostKernels.h"
#include "mtrt/ExpertExchange.h"
#include "mtrt/GeneratedKernelLibrary.h"
#include "mtrt/HalfFloat.h"
#include "mtrt/KernelSignatures.h"
#include "mtrt/Kernels.h"
#include "mtrt/ThreadPool.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>

using namespace mtrt;

namespace {

/// The GeLU epilogues' kernels, over fp32 views (the product rounded to
/// its 16-bit type, as the stored tensor the generated kernel of an
/// unfolded GeLU reads; the result rounded when the view is stored). No
/// operand is broadcast: one row as long as any domain (2^62), so that
/// each thread's range is one contiguous, vectorized run.
const char *kGeluEpilogueKernels = R"epilogue(
MT_KERNEL(mt_gelu_epilogue) {
  const float *MT_RESTRICT x = (const float *)MT_ARG(0);
  float *MT_RESTRICT y = (float *)MT_ARG(1);
  MT_ELEMENT_LOOP(i, c, 4611686018427387904LL)
    y[i] = mt_gelu(x[i]);
  MT_ELEMENT_LOOP_END
}
MT_KERNEL(mt_gelu_grad_epilogue) {
  const float *dy = (const float *)MT_ARG(0);
  const float *MT_RESTRICT x = (const float *)MT_ARG(1);
  float *dx = (float *)MT_ARG(2);
  MT_ELEMENT_LOOP(i, c, 4611686018427387904LL)
    dx[i] = mt_gelu_grad(dy[i], x[i]);
  MT_ELEMENT_LOOP_END
}
)epilogue";

std::string describe(size_t index, const Command &command) {
  return "command " + std::to_string(index) + " ('" + command.kernel + "')";
}

/// Row-major GEMM of one matrix pair: C = op(A) op(B) (+ bias, a vector
/// of C's columns, when not null), split over the pool into blocks of C's
/// columns (or rows, when it has more rows), each a single-threaded BLAS
/// call. Every element of C is one dot product in either case, so the
/// split does not change the result's bits. The bias is the GEMM's
/// epilogue: each block of C starts as the bias (while it is in cache) and
/// the product accumulates onto it.
/// C = op(A) op(B), plus `bias` (each row) when given; with `accumulate`,
/// C += op(A) op(B) (beta = 1).
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
          const float *b, float *c, const float *bias = nullptr,
          bool accumulate = false) {
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  auto block = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    if (bias)
      for (int64_t r = m0; r < m1; ++r)
        std::copy(bias + n0, bias + n1, c + r * n + n0);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, m1 - m0, n1 - n0, k, 1.0f,
                ta ? a + m0 : a + m0 * lda, lda, tb ? b + n0 * ldb : b + n0,
                ldb, bias || accumulate ? 1.0f : 0.0f, c + m0 * n + n0, n);
  };
  ThreadPool &pool = ThreadPool::global();
  int64_t threads = pool.threads();
  if (threads == 1 || double(m) * double(n) * double(k) < double(1 << 20)) {
    block(0, m, 0, n);
    return;
  }
  // Blocks of whole 16-column (or row) panels.
  auto grain = [&](int64_t size) {
    return std::max<int64_t>(16, (size / threads + 15) / 16 * 16);
  };
  if (n >= m)
    pool.parallelFor(n, grain(n),
                     [&](int64_t n0, int64_t n1) { block(0, m, n0, n1); });
  else
    pool.parallelFor(m, grain(m),
                     [&](int64_t m0, int64_t m1) { block(m0, m1, 0, n); });
}

} // namespace

CpuDevice::CpuDevice(int hostThreads) {
  if (hostThreads > 0)
    setThreads(hostThreads);
}

CpuDevice::~CpuDevice() { std::free(arena); }

std::vector<std::string> CpuDevice::choices() const {
  // OpenBLAS picks its kernels by the CPU's model; one it does not know (a
  // virtual machine's "Intel(R) Xeon(R) Processor", say) gets the SSE3
  // kernels of 2004's Prescott even where AVX2 or AVX-512 is there: the
  // GPT-2 mini main job's step took 44.7 ms with them and 36.5 ms with the
  // SkylakeX kernels on such a machine. Said, since it changes speed and
  // rounding; OPENBLAS_CORETYPE overrides the choice.
#if defined(__x86_64__)
  std::string core = openblas_get_corename();
  std::string lower = core;
  for (char &c : lower)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  bool vectorCore = false;
  for (const char *name :
       {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"})
    vectorCore |= lower.find(name) != std::string::npos;
  const char *wider = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                      : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                        : nullptr;
  if (wider && !vectorCore)
    return {"BLAS: OpenBLAS chose its " + core + " kernels on a CPU with " +
            (std::string(wider) == "SkylakeX" ? "AVX-512" : "AVX2") +
            " (it does not know this CPU's model): OPENBLAS_CORETYPE=" + wider +
            " selects its faster ones"};
#endif
  return {};
}

void CpuDevice::setThreads(int threads) {
  // BLAS runs inside the pool's threads, one thread per call: its own
  // threads would spin for the cores while our kernels run.
  openblas_set_num_threads(1);
  ThreadPool::setThreads(threads);
}

Status CpuDevice::runVocabParallelCrossEntropy(KernelId id,
                                               const Command &command) {
  // Megatron's vocab-parallel cross-entropy: each rank holds the logits of
  // its vocabulary rows; the row maximum, the sum of exponentials and the
  // target logit are reduced across the ranks, so none holds full logits.
  bool grad = id == KernelId::cross_entropy_grad;
  size_t logitsIndex = grad ? 1 : 0, labelsIndex = grad ? 2 : 1;
  const BufferDesc &logitsDesc = prog->buffers[command.ins[logitsIndex]];
  const float *logits = f32(command.ins[logitsIndex]);
  const int32_t *labels = as<int32_t>(command.ins[labelsIndex]);
  int64_t vocab = logitsDesc.shape.back();
  int64_t rows = logitsDesc.numElements() / vocab;
  int64_t offset = int64_t(command.get("vocab_offset", 0));
  int64_t axis = int64_t(command.get("vocab_grid_axis", 0));
  // A padded vocabulary: columns from vocab_size on are padding, masked out.
  int64_t valid = std::clamp<int64_t>(
      int64_t(command.get("vocab_size", double(offset + vocab))) - offset, 0,
      vocab);
  if (!communicator)
    return Status::error("a vocab-parallel cross-entropy needs the run's "
                         "communicator");
  std::vector<double> maxima(rows), sums(rows), targets(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = logits + r * vocab;
    maxima[r] = valid > 0 ? *std::max_element(row, row + valid)
                          : -std::numeric_limits<double>::infinity();
  }
  MTRT_RETURN_IF_ERROR(communicator->allReduce(axis, maxima.data(), rows,
                                               DType::F64, ReduceOp::Max));
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = logits + r * vocab;
    double sum = 0;
    for (int64_t v = 0; v < valid; ++v)
      sum += std::exp(double(row[v]) - maxima[r]);
    sums[r] = sum;
    int64_t local = int64_t(labels[r]) - offset;
    if (local >= 0 && local < vocab)
      targets[r] = row[local];
  }
  MTRT_RETURN_IF_ERROR(communicator->allReduce(axis, sums.data(), rows,
                                               DType::F64, ReduceOp::Sum));
  if (!grad) {
    MTRT_RETURN_IF_ERROR(communicator->allReduce(axis, targets.data(), rows,
                                                 DType::F64, ReduceOp::Sum));
    double loss = 0;
    for (int64_t r = 0; r < rows; ++r)
      loss += std::log(sums[r]) + maxima[r] - targets[r];
    f32(command.outs[0])[0] = float(loss / double(rows));
    return Status::ok();
  }
  double dLoss = f32(command.ins[0])[0];
  float *dLogits = f32(command.outs[0]);
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = logits + r * vocab;
    int64_t local = int64_t(labels[r]) - offset;
    for (int64_t v = 0; v < vocab; ++v) {
      double softmax =
          v < valid ? std::exp(double(row[v]) - maxima[r]) / sums[r] : 0.0;
      dLogits[r * vocab + v] =
          float(dLoss * (softmax - (v == local ? 1.0 : 0.0)) / double(rows));
    }
  }
  return Status::ok();
}

Status CpuDevice::runCollective(KernelId id, const Command &command) {
  const BufferDesc &input = prog->buffers[command.ins[0]];
  const BufferDesc &output = prog->buffers[command.outs[0]];
  const float *in = f32(command.ins[0]);
  float *out = f32(command.outs[0]);
  int64_t axis = int64_t(command.get("grid_axis", 0));
  ReduceOp op =
      command.get("average", 0) != 0 ? ReduceOp::Average : ReduceOp::Sum;
  if (!communicator)
    return Status::error("a collective needs the run's communicator");
  if (axis < 0 || axis >= int64_t(communicator->coords().size()))
    return Status::error("grid axis " + std::to_string(axis) +
                         " is not an axis of the device grid");
  // Over every stride-th rank of the axis (an expert's replicas, whose
  // ZeRO pieces are indexed by the coordinate divided by the stride; the
  // kernel's signature checked that it divides the axis).
  int64_t stride = int64_t(command.get("stride", 1));
  int64_t parts = communicator->groupSize(axis) / stride;
  if (id == KernelId::all_reduce) {
    if (out != in)
      std::memcpy(out, in, size_t(output.numElements()) * sizeof(float));
    return communicator->allReduceStrided(axis, stride, out,
                                          output.numElements(), DType::F32, op);
  }
  // The pieces split tensor dimension `dim`: the whole tensor is
  // [outer][parts x local][inner] and piece t is [outer][local][inner].
  // Along dimension 0 the pieces are contiguous; along a later one
  // (sequence parallelism splits [batch, seq, hidden] along seq) they are
  // rearranged through a scratch buffer in rank order.
  const BufferDesc &whole = id == KernelId::all_gather ? output : input;
  const BufferDesc &piece = id == KernelId::all_gather ? input : output;
  int64_t dim = int64_t(command.get("axis", 0));
  if (dim < 0 || dim >= int64_t(whole.shape.size()) ||
      whole.numElements() != piece.numElements() * parts)
    return Status::error(
        command.kernel + " of " + std::to_string(input.numElements()) +
        " elements into " + std::to_string(output.numElements()) +
        " along "
        "dimension " +
        std::to_string(dim) + " over " + std::to_string(parts) + " ranks");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= whole.shape[d];
  for (size_t d = size_t(dim) + 1; d < whole.shape.size(); ++d)
    inner *= whole.shape[d];
  int64_t block = piece.shape[dim] * inner; // one outer row of a piece
  // Moves piece t of `from` (whole layout) to rank-major `to`, or back.
  auto toRankMajor = [&](const float *from, float *to) {
    for (int64_t t = 0; t < parts; ++t)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(to + (t * outer + o) * block,
                    from + (o * parts + t) * block, size_t(block) * 4);
  };
  auto fromRankMajor = [&](const float *from, float *to) {
    for (int64_t t = 0; t < parts; ++t)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(to + (o * parts + t) * block,
                    from + (t * outer + o) * block, size_t(block) * 4);
  };
  int64_t index = communicator->groupIndex(axis) / stride;
  if (id == KernelId::all_slice) {
    // This rank's piece of a tensor every rank holds; no communication.
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + o * block, in + (o * parts + index) * block,
                  size_t(block) * 4);
    return Status::ok();
  }
  if (outer == 1) {
    if (id == KernelId::reduce_scatter)
      return communicator->reduceScatterStrided(
          axis, stride, in, out, output.numElements(), DType::F32, op);
    return communicator->allGatherStrided(axis, stride, in, out,
                                          input.numElements(), DType::F32);
  }
  std::vector<float> scratch(size_t(whole.numElements()));
  if (id == KernelId::reduce_scatter) {
    toRankMajor(in, scratch.data());
    return communicator->reduceScatterStrided(axis, stride, scratch.data(), out,
                                              output.numElements(), DType::F32,
                                              op);
  }
  MTRT_RETURN_IF_ERROR(communicator->allGatherStrided(
      axis, stride, in, scratch.data(), input.numElements(), DType::F32));
  fromRankMajor(scratch.data(), out);
  return Status::ok();
}

Status CpuDevice::prepareProgram(const RankProgram &program) {
  resolved.clear();
  for (size_t i = 0; i < program.commands.size(); ++i) {
    const Command &command = program.commands[i];
    const KernelInfo *kernel = findKernel(command.kernel);
    if (!kernel)
      return Status::error(describe(i, command) +
                           ": no CPU kernel of that name");
    resolved.push_back(kernel);
    // Counts, shapes, dtypes and attribute ranges were checked against
    // the kernel's typed signature at load (mtrt/KernelSignatures.h);
    // 16-bit operands are staged through fp32 (stageOperands).
    for (size_t j = 0; j < command.ins.size(); ++j)
      if (kernel->isIndexInput(j) &&
          program.buffers[command.ins[j]].dtype != DType::I32)
        return Status::error(describe(i, command) + ": input " +
                             std::to_string(j) + " is " +
                             dtypeName(program.buffers[command.ins[j]].dtype) +
                             ", the CPU backend expects i32 indices");
  }
  // Generated kernels are compiled (or found in the cache) once, here,
  // with the GeLU epilogues' where GEMMs have them: the prelude's GeLU, as
  // the generated kernel of a GeLU the GEMM did not take computes it.
  const size_t epilogues = program.generatedKernels.size();
  bool geluEpilogues = std::any_of(
      resolved.begin(), resolved.end(), [](const KernelInfo *kernel) {
        return kernel->id == KernelId::matmul_bias_gelu ||
               kernel->id == KernelId::matmul_gelu_grad;
      });
  generated = std::make_unique<GeneratedKernelLibrary>();
  if (Status loaded =
          geluEpilogues
              ? generated->load(program, KernelToolchain::host(),
                                kGeluEpilogueKernels,
                                {"mt_gelu_epilogue", "mt_gelu_grad_epilogue"})
              : generated->load(program);
      !loaded)
    return Status::error("generated kernels: " + loaded.message());
  geluEpilogue = geluEpilogues ? generated->function(epilogues) : nullptr;
  geluGradEpilogue =
      geluEpilogues ? generated->function(epilogues + 1) : nullptr;
  dropoutBlocks.prepare(program);
  noDropoutBlocks = dropoutBlocks;
  noDropoutBlocks.disable();
  std::free(arena);
  size_t bytes = std::max<int64_t>(program.arenaBytes, 64);
  bytes = (bytes + 63) / 64 * 64;
  arena = static_cast<uint8_t *>(std::aligned_alloc(64, bytes));
  if (!arena)
    return Status::error("cannot allocate an arena of " +
                         std::to_string(program.arenaBytes) + " bytes");
  std::memset(arena, 0, bytes);
  measuredPeak = 0;
  return Status::ok();
}

void *CpuDevice::data(int64_t bufferId) const {
  return arena + prog->buffers[bufferId].offset;
}

Status CpuDevice::upload(int64_t bufferId, const void *host, int64_t bytes,
                         int64_t offset) {
  MTRT_RETURN_IF_ERROR(checkTransfer(bufferId, bytes, offset, "upload"));
  std::memcpy(static_cast<uint8_t *>(data(bufferId)) + offset, host,
              size_t(bytes));
  return Status::ok();
}

Status CpuDevice::download(int64_t bufferId, void *host, int64_t bytes,
                           int64_t offset) const {
  MTRT_RETURN_IF_ERROR(checkTransfer(bufferId, bytes, offset, "download"));
  std::memcpy(host, static_cast<const uint8_t *>(data(bufferId)) + offset,
              size_t(bytes));
  return Status::ok();
}

Status CpuDevice::findNonFinite(const std::vector<int64_t> &bufferIds,
                                int64_t &first) const {
  first = -1;
  for (int64_t id : bufferIds) {
    MTRT_RETURN_IF_ERROR(checkFloatBuffer(id, "findNonFinite"));
    const float *values = as<float>(id);
    int64_t count = prog->buffers[size_t(id)].numElements();
    // One pass in pieces over the pool: an element is inf or NaN exactly
    // when its exponent bits are all ones. Integer tests, OR-ed, vectorize
    // and mean the same under any floating-point flags.
    std::atomic<bool> bad{false};
    ThreadPool::global().parallelFor(count, 1 << 16, [&](int64_t b, int64_t e) {
      uint32_t any = 0;
      for (int64_t i = b; i < e; ++i) {
        uint32_t bits;
        std::memcpy(&bits, values + i, sizeof(bits));
        any |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
      }
      if (any)
        bad = true;
    });
    if (bad) {
      first = id;
      return Status::ok();
    }
  }
  return Status::ok();
}

namespace {
bool isHalf(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16; }

void widen(DType dtype, const void *from, float *to, int64_t count) {
  if (isHalf(dtype))
    widenHalves(static_cast<const uint16_t *>(from), to, count,
                dtype == DType::BF16);
  else
    std::memcpy(to, from, size_t(count) * sizeof(float));
}

void narrow(DType dtype, const float *from, void *to, int64_t count) {
  if (isHalf(dtype))
    narrowToHalves(from, static_cast<uint16_t *>(to), count,
                   dtype == DType::BF16);
  else
    std::memcpy(to, from, size_t(count) * sizeof(float));
}

/// Rounds fp32 values in place to what `dtype` stores (a no-op for f32):
/// what a kernel reading the stored tensor back would see.
void roundTo(DType dtype, float *values, int64_t count) {
  if (dtype == DType::BF16)
    for (int64_t i = 0; i < count; ++i)
      values[i] = bfloat16ToFloat(floatToBFloat16(values[i]));
  else if (dtype == DType::F16)
    for (int64_t i = 0; i < count; ++i)
      values[i] = halfToFloat(floatToHalf(values[i]));
}
} // namespace

float *CpuDevice::f32(int64_t bufferId) const {
  for (size_t i = 0; i < numStaged; ++i)
    if (staged[i].bufferId == bufferId)
      return staged[i].values;
  return as<float>(bufferId);
}

void CpuDevice::stageOperands(const KernelInfo &kernel,
                              const Command &command) {
  // First the operands to stage (each buffer once) and their total size.
  numStaged = 0;
  size_t total = 0;
  auto add = [&](int64_t bufferId) {
    if (!isHalf(prog->buffers[bufferId].dtype))
      return;
    for (size_t i = 0; i < numStaged; ++i)
      if (staged[i].bufferId == bufferId)
        return;
    if (numStaged == staged.size())
      staged.emplace_back();
    staged[numStaged++].bufferId = bufferId;
    total += size_t(prog->buffers[bufferId].numElements());
  };
  for (size_t j = 0; j < command.ins.size(); ++j)
    if (!kernel.isIndexInput(j))
      add(command.ins[j]);
  size_t inputs = numStaged;
  for (size_t j = 0; j < command.outs.size(); ++j)
    if (!kernel.isIndexOutput(j))
      add(command.outs[j]);
  if (total > stagingCapacity) {
    stagingPool.reset(new float[total]);
    stagingCapacity = total;
  }
  // Then their ranges of the pool, the inputs widened into theirs.
  float *next = stagingPool.get();
  for (size_t i = 0; i < numStaged; ++i) {
    const BufferDesc &buffer = prog->buffers[staged[i].bufferId];
    staged[i].values = next;
    if (i < inputs)
      widen(buffer.dtype, data(staged[i].bufferId), next, buffer.numElements());
    next += buffer.numElements();
  }
}

int64_t CpuDevice::hostScratchBytes() const {
  return int64_t(stagingCapacity * sizeof(float));
}

void CpuDevice::unstageOutputs(const Command &command) {
  for (int64_t out : command.outs)
    for (size_t i = 0; i < numStaged; ++i)
      if (staged[i].bufferId == out) {
        const BufferDesc &buffer = prog->buffers[out];
        narrow(buffer.dtype, staged[i].values, data(out), buffer.numElements());
      }
  numStaged = 0;
}

void CpuDevice::castBuffer(int64_t from, int64_t to) {
  const BufferDesc &source = prog->buffers[from];
  const BufferDesc &target = prog->buffers[to];
  int64_t count = target.numElements();
  if (source.dtype == DType::F32) {
    narrow(target.dtype, as<float>(from), data(to), count);
    return;
  }
  if (target.dtype == DType::F32) {
    widen(source.dtype, data(from), as<float>(to), count);
    return;
  }
  std::vector<float> wide(static_cast<size_t>(count));
  widen(source.dtype, data(from), wide.data(), count);
  narrow(target.dtype, wide.data(), data(to), count);
}

Status CpuDevice::executeStep(uint64_t seed, uint64_t step) {
  MTRT_RETURN_IF_ERROR(checkPrepared("a step"));
  // The runtime filled the persistent buffers (parameters, state, inputs).
  measuredPeak = std::max(measuredPeak, persistentExtent(*prog));
  dropoutBlocks.setStep(seed, step);
  return runCommands(seed, step, nullptr);
}

Status CpuDevice::executeEvaluation(const std::vector<bool> &slice) {
  MTRT_RETURN_IF_ERROR(checkEvaluationSlice(slice));
  evaluating = true;
  ExecutionTrace *traced = trace;
  trace = nullptr;
  // No dropout runs: its key is never read.
  Status status = runCommands(0, 0, &slice);
  trace = traced;
  evaluating = false;
  return status;
}

Status CpuDevice::runCommands(uint64_t seed, uint64_t step,
                              const std::vector<bool> *slice) {
  for (size_t i = 0; i < prog->commands.size(); ++i) {
    if (slice && !(*slice)[i])
      continue;
    const Command &command = prog->commands[i];
    measuredPeak = std::max(measuredPeak, commandExtent(*prog, command));
    double begin = trace ? trace->nowUs() : 0.0;
    KernelId id = resolved[i]->id;
    bool staging = !convertsOwnStorage(id);
    if (staging)
      stageOperands(*resolved[i], command);
    Status status = runCommand(id, command, seed, step);
    if (staging)
      unstageOutputs(command);
    if (trace)
      trace->record(int64_t(step), int64_t(i), begin, trace->nowUs());
    if (!status)
      return Status::error(describe(i, command) + ": " + status.message());
  }
  // Sends copied their bytes out: wait for them before the next step.
  if (communicator && pipelineAxis >= 0)
    return communicator->finishSends();
  return Status::ok();
}

/// The error of a routing's choice `choice` naming an expert outside the
/// `experts` (a routing some other command wrote wrong).
static Status choiceOutOfRange(int64_t choice, int32_t expert,
                               int64_t experts) {
  return Status::error("choice " + std::to_string(choice) + " is expert " +
                       std::to_string(expert) + ", outside [0, " +
                       std::to_string(experts) + ")");
}

/// A mixture of experts' routing read at run time (mt.moe_route's, unless
/// a command before it wrote the buffer wrong), checked before it indexes
/// anything: the positions number each of the `choices` rows once, or
/// with a capacity (`dropped` allowed), some of the `rows` rows at most
/// once, -1 for a dropped choice.
static Status checkPositions(const int32_t *positions, int64_t choices,
                             int64_t rows, bool dropped) {
  std::vector<bool> seen(size_t(rows), false);
  for (int64_t i = 0; i < choices; ++i) {
    if (dropped && positions[i] == -1)
      continue;
    if (positions[i] < 0 || positions[i] >= rows)
      return Status::error("position " + std::to_string(i) + " is row " +
                           std::to_string(positions[i]) + ", outside [0, " +
                           std::to_string(rows) + ")" +
                           (dropped ? " (nor -1, dropped)" : ""));
    if (seen[size_t(positions[i])])
      return Status::error("position " + std::to_string(i) + " is row " +
                           std::to_string(positions[i]) +
                           " again (each row is one token's choice)");
    seen[size_t(positions[i])] = true;
  }
  return Status::ok();
}

Status CpuDevice::runCommand(KernelId id, const Command &command, uint64_t seed,
                             uint64_t step) {
  const std::vector<BufferDesc> &buffers = prog->buffers;
  auto in = [&](size_t i) { return f32(command.ins[i]); };
  auto ids = [&](size_t i) { return as<int32_t>(command.ins[i]); };
  auto out = [&](size_t i) { return f32(command.outs[i]); };
  auto inDesc = [&](size_t i) -> const BufferDesc & {
    return buffers[command.ins[i]];
  };
  auto outDesc = [&](size_t i) -> const BufferDesc & {
    return buffers[command.outs[i]];
  };
  auto lastDim = [](const BufferDesc &buffer) {
    return buffer.shape.empty() ? int64_t(1) : buffer.shape.back();
  };
  auto scalar = [&](size_t i) { return double(in(i)[0]); };
  cpu::RngKey key{seed, step};
  // Where this rank's part of a batch-split tensor starts in the
  // single-device random stream.
  uint64_t rngOffset = uint64_t(command.get("rng_offset", 0));
  uint32_t stream = uint32_t(command.get("rng_stream", 0));

  if (id == KernelId::fused) {
    // Operands in the generated kernel's order, elements split over the
    // pool (a few pages each, so small kernels stay on one thread).
    size_t index = size_t(command.get("generated", 0));
    const GeneratedKernel &kernel = prog->generatedKernels[index];
    int64_t blocks =
        dropoutBlocks.offset(size_t(&command - prog->commands.data()));
    GeneratedKernelArgs args = generatedKernelArgs(
        command, [&](int64_t buffer) { return data(buffer); },
        blocks < 0
            ? nullptr
            : (evaluating ? noDropoutBlocks : dropoutBlocks).all().data() +
                  blocks);
    GeneratedKernelFn function = generated->function(index);
    int64_t grain =
        std::max<int64_t>(1, 32768 / std::max<int64_t>(1, kernel.rowLength));
    if (kernel.rowBlock > 0) {
      // Whole blocks of rows per range: each block's partial sums are one
      // thread's.
      ThreadPool::global().parallelFor(
          kernel.numRowBlocks(), std::max<int64_t>(1, grain / kernel.rowBlock),
          [&](int64_t begin, int64_t end) {
            function(&args, begin * kernel.rowBlock,
                     std::min(end * kernel.rowBlock, kernel.elements));
          });
    } else {
      ThreadPool::global().parallelFor(
          kernel.elements, grain,
          [&](int64_t begin, int64_t end) { function(&args, begin, end); });
    }
  } else if (id == KernelId::embedding) {
    const BufferDesc &table = inDesc(0);
    cpu::embedding(in(0), ids(1), out(0), inDesc(1).numElements(),
                   table.shape[0], table.shape[1],
                   int64_t(command.get("vocab_offset", 0)));
  } else if (id == KernelId::embedding_grad) {
    const BufferDesc &table = outDesc(0);
    // With an accumulator (input 2, output 0's bytes) the rows' sums are
    // added to it.
    if (accumulatesInPlace(id, command.ins.size()))
      cpu::embeddingGradAccumulate(
          in(0), ids(1), out(0), inDesc(1).numElements(), table.shape[0],
          table.shape[1], int64_t(command.get("vocab_offset", 0)));
    else
      cpu::embeddingGrad(in(0), ids(1), out(0), inDesc(1).numElements(),
                         table.shape[0], table.shape[1],
                         int64_t(command.get("vocab_offset", 0)));
  } else if (id == KernelId::position_embedding) {
    cpu::positionEmbedding(in(0), out(0), outDesc(0).shape[0],
                           outDesc(0).shape[1]);
  } else if (id == KernelId::position_embedding_grad) {
    cpu::positionEmbeddingGrad(in(0), out(0), inDesc(0).shape[0],
                               outDesc(0).shape[0], outDesc(0).shape[1]);
  } else if (id == KernelId::layer_norm) {
    int64_t cols = lastDim(inDesc(0));
    ThreadPool::global().parallelFor(
        inDesc(0).numElements() / cols, std::max<int64_t>(1, 16384 / cols),
        [&](int64_t begin, int64_t end) {
          cpu::layerNorm(in(0) + begin * cols, in(1), in(2),
                         out(0) + begin * cols, end - begin, cols,
                         command.get("epsilon", 1e-5));
        });
  } else if (id == KernelId::layer_norm_grad) {
    int64_t cols = lastDim(inDesc(1));
    cpu::layerNormGrad(in(0), in(1), in(2), out(0), out(1), out(2),
                       inDesc(1).numElements() / cols, cols,
                       command.get("epsilon", 1e-5));
  } else if (id == KernelId::rms_norm) {
    int64_t cols = lastDim(inDesc(0));
    cpu::rmsNorm(in(0), in(1), out(0), inDesc(0).numElements() / cols, cols,
                 command.get("epsilon", 1e-6), rmsNormWeightOffset(command));
  } else if (id == KernelId::rms_norm_grad) {
    int64_t cols = lastDim(inDesc(1));
    cpu::rmsNormGrad(
        in(0), in(1), in(2), out(0), out(1), inDesc(1).numElements() / cols,
        cols, command.get("epsilon", 1e-6), rmsNormWeightOffset(command));
  } else if (id == KernelId::silu) {
    cpu::silu(in(0), out(0), outDesc(0).numElements());
  } else if (id == KernelId::silu_grad) {
    cpu::siluGrad(in(0), in(1), out(0), outDesc(0).numElements());
  } else if (id == KernelId::softcap) {
    cpu::softcap(in(0), out(0), outDesc(0).numElements(),
                 command.get("cap", 1.0));
  } else if (id == KernelId::softcap_grad) {
    cpu::softcapGrad(in(0), in(1), out(0), outDesc(0).numElements(),
                     command.get("cap", 1.0));
  } else if (id == KernelId::mul) {
    cpu::mul(in(0), in(1), out(0), outDesc(0).numElements());
  } else if (id == KernelId::rope) {
    const BufferDesc &x = inDesc(0);
    int64_t headDim = x.shape[3];
    std::vector<double> invFreq = cpu::ropeInverseFrequencies(
        headDim, command.get("theta", 10000.0),
        command.get("llama3_factor", 0.0),
        command.get("llama3_low_freq_factor", 0.0),
        command.get("llama3_high_freq_factor", 0.0),
        command.get("llama3_original_max_positions", 0.0),
        command.get("linear_factor", 0.0));
    cpu::rope(in(0), out(0), x.shape[0] * x.shape[1], x.shape[2], headDim,
              invFreq, command.get("inverse", 0.0) != 0.0);
  } else if (id == KernelId::repeat_kv || id == KernelId::repeat_kv_grad) {
    const BufferDesc &kv = id == KernelId::repeat_kv ? inDesc(0) : outDesc(0);
    int64_t groups = int64_t(command.get("groups", 1));
    int64_t inner = kv.shape[2] * kv.shape[3];
    if (id == KernelId::repeat_kv)
      cpu::repeatKV(in(0), out(0), kv.shape[0], kv.shape[1], groups, inner);
    else
      cpu::repeatKVGrad(in(0), out(0), kv.shape[0], kv.shape[1], groups, inner);
  } else if (id == KernelId::top_k_gating ||
             id == KernelId::top_k_gating_grad) {
    // Each token's row on its own: tokens split over the pool.
    const bool forward = id == KernelId::top_k_gating;
    const BufferDesc &logits = forward ? inDesc(0) : outDesc(0);
    int64_t experts = lastDim(logits);
    int64_t k = lastDim(forward ? outDesc(0) : inDesc(1));
    int32_t *chosen = forward ? as<int32_t>(command.outs[1]) : nullptr;
    // The gradient writes each token's chosen experts' logits: a choice
    // outside them (a routing some other command wrote) is refused first.
    if (!forward)
      for (int64_t i = 0, n = inDesc(2).numElements(); i < n; ++i)
        if (ids(2)[i] < 0 || ids(2)[i] >= experts)
          return choiceOutOfRange(i, ids(2)[i], experts);
    ThreadPool::global().parallelFor(
        logits.numElements() / experts, 256, [&](int64_t begin, int64_t end) {
          if (forward)
            cpu::topKGating(in(0) + begin * experts, out(0) + begin * k,
                            chosen + begin * k, end - begin, experts, k,
                            command.get("unnormalized", 0.0) != 0.0);
          else
            cpu::topKGatingGrad(
                in(0) + begin * k, in(1) + begin * k, ids(2) + begin * k,
                command.ins.size() == 4 ? in(3) + begin * experts : nullptr,
                out(0) + begin * experts, end - begin, experts, k);
        });
  } else if (id == KernelId::router_statistics) {
    int64_t experts = lastDim(inDesc(0)), k = lastDim(inDesc(1));
    int64_t bad =
        cpu::routerStatistics(in(0), ids(1), out(0), out(1),
                              inDesc(0).numElements() / experts, experts, k);
    if (bad >= 0)
      return choiceOutOfRange(bad, ids(1)[bad], experts);
  } else if (id == KernelId::router_probability_grad) {
    // Each token's row on its own: tokens split over the pool.
    int64_t experts = lastDim(inDesc(1));
    int64_t tokens = inDesc(1).numElements() / experts;
    ThreadPool::global().parallelFor(
        tokens, 256, [&](int64_t begin, int64_t end) {
          cpu::routerProbabilityGrad(in(0), in(1) + begin * experts,
                                     out(0) + begin * experts, end - begin,
                                     tokens, experts);
        });
  } else if (id == KernelId::load_balancing_loss ||
             id == KernelId::load_balancing_loss_grad) {
    const bool forward = id == KernelId::load_balancing_loss;
    size_t first = forward ? 0 : 1;
    int64_t routers = int64_t(command.ins.size() - first) / (forward ? 2 : 1);
    int64_t experts = lastDim(inDesc(first));
    double coefficient = command.get("coefficient", 0.0);
    std::vector<const float *> loads, probabilities;
    for (int64_t l = 0; l < routers; ++l) {
      loads.push_back(in(first + size_t(l)));
      if (forward)
        probabilities.push_back(in(size_t(routers + l)));
    }
    if (forward)
      out(0)[0] = float(cpu::loadBalancingLoss(
          loads.data(), probabilities.data(), routers, experts, coefficient));
    else
      cpu::loadBalancingLossGrad(double(in(0)[0]), loads.data(), out(0),
                                 routers, experts, coefficient);
  } else if (id == KernelId::router_z_loss) {
    int64_t experts = lastDim(inDesc(0));
    out(0)[0] =
        float(cpu::routerZLoss(in(0), inDesc(0).numElements() / experts,
                               experts, command.get("coefficient", 0.0)));
  } else if (id == KernelId::router_z_loss_grad) {
    // Each token's row on its own: tokens split over the pool.
    int64_t experts = lastDim(inDesc(1));
    int64_t tokens = inDesc(1).numElements() / experts;
    const double grad = scalar(0);
    ThreadPool::global().parallelFor(
        tokens, 256, [&](int64_t begin, int64_t end) {
          cpu::routerZLossGrad(grad, in(1) + begin * experts,
                               out(0) + begin * experts, end - begin, tokens,
                               experts, command.get("coefficient", 0.0));
        });
  } else if (id == KernelId::moe_route) {
    int64_t experts = int64_t(command.get("num_experts", 0));
    int64_t bad = cpu::moeRoute(
        ids(0), as<int32_t>(command.outs[0]), as<int32_t>(command.outs[1]),
        inDesc(0).numElements(), experts, int64_t(command.get("capacity", 0)),
        command.ins.size() == 2 ? in(1) : nullptr);
    if (bad >= 0)
      return choiceOutOfRange(bad, ids(0)[bad], experts);
  } else if (id == KernelId::moe_permute || id == KernelId::moe_unpermute ||
             id == KernelId::moe_weights_grad) {
    // Positions [tokens..., k] and rows [tokens * k, hidden] (with a
    // capacity, the experts' capacity rows).
    const bool gradient = id == KernelId::moe_weights_grad;
    const BufferDesc &positions = inDesc(gradient ? 2 : 1);
    const BufferDesc &rows = id == KernelId::moe_permute     ? outDesc(0)
                             : id == KernelId::moe_unpermute ? inDesc(0)
                                                             : inDesc(1);
    int64_t k = lastDim(positions), hidden = lastDim(rows);
    int64_t tokens = positions.numElements() / k;
    // A capacity's rows: some choices dropped, the rows no choice
    // writes zeros.
    const bool capacity = command.has("capacity_factor");
    MTRT_RETURN_IF_ERROR(checkPositions(ids(gradient ? 2 : 1),
                                        positions.numElements(), rows.shape[0],
                                        capacity));
    if (capacity && id == KernelId::moe_permute)
      std::fill(out(0), out(0) + rows.numElements(), 0.0f);
    const float *weights =
        !gradient && command.ins.size() == 3 ? in(2) : nullptr;
    // Tokens split over the pool: each writes its own rows (a permute) or
    // its own result (an unpermute, the weights' gradient).
    ThreadPool::global().parallelFor(
        tokens, std::max<int64_t>(1, 16384 / hidden),
        [&](int64_t begin, int64_t end) {
          const int32_t *at = ids(gradient ? 2 : 1) + begin * k;
          const float *scale = weights ? weights + begin * k : nullptr;
          if (id == KernelId::moe_permute)
            cpu::moePermute(in(0) + begin * hidden, at, scale, out(0),
                            end - begin, k, hidden);
          else if (id == KernelId::moe_unpermute)
            cpu::moeUnpermute(in(0), at, scale, out(0) + begin * hidden,
                              end - begin, k, hidden);
          else
            cpu::moeWeightsGrad(in(0) + begin * hidden, in(1), at,
                                out(0) + begin * k, end - begin, k, hidden);
        });
  } else if (id == KernelId::sigmoid_gate ||
             id == KernelId::sigmoid_gate_grad) {
    // Rows [tokens..., hidden], one gate per token; tokens split over the
    // pool.
    const bool forward = id == KernelId::sigmoid_gate;
    const BufferDesc &rows = inDesc(forward ? 0 : 1);
    int64_t hidden = lastDim(rows), tokens = rows.numElements() / hidden;
    ThreadPool::global().parallelFor(
        tokens, std::max<int64_t>(1, 16384 / hidden),
        [&](int64_t begin, int64_t end) {
          int64_t at = begin * hidden;
          if (forward)
            cpu::sigmoidGate(in(0) + at, in(1) + begin, out(0) + at,
                             end - begin, hidden);
          else
            cpu::sigmoidGateGrad(in(0) + at, in(1) + at, in(2) + begin,
                                 out(0) + at, out(1) + begin, end - begin,
                                 hidden);
        });
  } else if (id == KernelId::grouped_matmul ||
             id == KernelId::grouped_matmul_weight_grad) {
    // Rows offsets[e] to offsets[e + 1] are expert e's.
    const bool forward = id == KernelId::grouped_matmul;
    const bool tb = command.get("transpose_b", 0) != 0;
    const BufferDesc &input = inDesc(forward ? 0 : 1);
    const BufferDesc &product = forward ? outDesc(0) : inDesc(0);
    const int32_t *offsets = ids(forward ? 1 : 2);
    int64_t rows = input.shape[0], k = input.shape[1], n = product.shape[1];
    int64_t experts = forward ? int64_t(command.ins.size()) - 2
                              : int64_t(command.outs.size());
    MTRT_RETURN_IF_ERROR(checkExpertOffsets(offsets, experts, rows));
    // Rows after the last expert's are no expert's: zeros.
    if (forward)
      std::fill(out(0) + offsets[experts] * n, out(0) + rows * n, 0.0f);
    for (int64_t e = 0; e < experts; ++e) {
      int64_t begin = offsets[e], count = offsets[e + 1] - begin;
      if (forward) {
        if (count > 0)
          gemm(false, tb, count, n, k, in(0) + begin * k, in(2 + size_t(e)),
               out(0) + begin * n);
        continue;
      }
      float *grad = out(size_t(e));
      if (count == 0) {
        std::fill_n(grad, n * k, 0.0f);
        continue;
      }
      // [n, k] = dy_e^T x_e with transpose_b, else [k, n] = x_e^T dy_e.
      const float *dy = in(0) + begin * n, *x = in(1) + begin * k;
      if (tb)
        gemm(true, false, n, k, count, dy, x, grad);
      else
        gemm(true, false, k, n, count, x, dy, grad);
    }
  } else if (id == KernelId::add) {
    cpu::add(in(0), in(1), out(0), outDesc(0).numElements());
  } else if (id == KernelId::bias_add) {
    int64_t cols = inDesc(1).numElements();
    cpu::biasAdd(in(0), in(1), out(0), inDesc(0).numElements() / cols, cols);
  } else if (id == KernelId::bias_add_grad) {
    int64_t cols = outDesc(0).numElements();
    cpu::biasAddGrad(in(0), out(0), inDesc(0).numElements() / cols, cols);
  } else if (id == KernelId::gelu) {
    cpu::gelu(in(0), out(0), outDesc(0).numElements());
  } else if (id == KernelId::gelu_grad) {
    cpu::geluGrad(in(0), in(1), out(0), outDesc(0).numElements());
  } else if (id == KernelId::dropout && command.has("rng_seq_total")) {
    // Split along the sequence: each row of `inner` elements draws its
    // stretch of the single-device mask of [batch, seq total, inner].
    int64_t seqTotal = int64_t(command.get("rng_seq_total", 0));
    int64_t seqOffset = int64_t(command.get("rng_seq_offset", 0));
    const BufferDesc &x = outDesc(0);
    int64_t batch = x.shape[0], seqLocal = x.shape[1], inner = x.shape[2];
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < seqLocal; ++t) {
        int64_t row = (b * seqLocal + t) * inner;
        uint64_t index =
            rngOffset + uint64_t((b * seqTotal + seqOffset + t) * inner);
        cpu::dropout(in(0) + row, out(0) + row, inner,
                     dropoutProbability(command, "probability"), stream, key,
                     index);
      }
  } else if (id == KernelId::dropout) {
    // Counter-based: any range draws its own part of the mask.
    ThreadPool::global().parallelFor(
        outDesc(0).numElements(), 16384, [&](int64_t begin, int64_t end) {
          cpu::dropout(in(0) + begin, out(0) + begin, end - begin,
                       dropoutProbability(command, "probability"), stream, key,
                       rngOffset + uint64_t(begin));
        });
  } else if (isGemm(id)) {
    MatmulShape shape = matmulShape(*prog, command);
    bool ta = shape.transposeA, tb = shape.transposeB;
    bool broadcast = shape.sharedB;
    int64_t m = shape.m, n = shape.n, kDim = shape.k, batch = shape.batch;
    const float *bias =
        id == KernelId::matmul_bias || id == KernelId::matmul_bias_gelu
            ? in(2)
            : nullptr;
    // An accumulating GEMM's output is its accumulator (input 2), in place.
    const bool accumulate = accumulatesInPlace(id, command.ins.size());
    if (broadcast && !ta) {
      // [batch..., m, k] x [k, n]: the batch folds into the rows.
      gemm(false, tb, batch * m, n, kDim, in(0), in(1), out(0), bias,
           accumulate);
    } else {
      for (int64_t i = 0; i < batch; ++i)
        gemm(ta, tb, m, n, kDim, in(0) + i * m * kDim,
             in(1) + (broadcast ? 0 : i * kDim * n), out(0) + i * m * n, bias,
             accumulate);
    }
    // The GeLU epilogues read the product (or sum) as the separate ops
    // would: rounded to the stored type first.
    const BufferDesc &product = outDesc(0);
    auto epilogue = [&](GeneratedKernelFn function,
                        std::initializer_list<float *> operands) {
      GeneratedKernelArgs args{};
      size_t k = 0;
      for (float *operand : operands)
        args.p[k++] = operand;
      ThreadPool::global().parallelFor(
          product.numElements(), 32768,
          [&](int64_t begin, int64_t end) { function(&args, begin, end); });
    };
    if (id == KernelId::matmul_bias_gelu) {
      roundTo(product.dtype, out(0), product.numElements());
      epilogue(geluEpilogue, {out(0), out(1)});
    } else if (id == KernelId::matmul_bias_grad) {
      // bias_add_grad's column sums of the rhs [k, n], to the bit.
      const int64_t cols = outDesc(1).numElements();
      cpu::biasAddGrad(in(1), out(1), inDesc(1).numElements() / cols, cols);
    } else if (id == KernelId::matmul_gelu_grad) {
      roundTo(product.dtype, out(0), product.numElements());
      epilogue(geluGradEpilogue, {out(0), const_cast<float *>(in(2)), out(0)});
    }
  } else if (id == KernelId::split_heads) {
    const BufferDesc &x = inDesc(0), &head = outDesc(0);
    std::vector<float *> outs;
    for (size_t i = 0; i < command.outs.size(); ++i)
      outs.push_back(out(i));
    cpu::splitHeads(in(0), outs.data(), int64_t(outs.size()), x.shape[0],
                    x.shape[1], head.shape[1], head.shape[3]);
  } else if (id == KernelId::merge_heads) {
    const BufferDesc &head = inDesc(0);
    std::vector<const float *> ins;
    for (size_t i = 0; i < command.ins.size(); ++i)
      ins.push_back(in(i));
    cpu::mergeHeads(ins.data(), out(0), int64_t(ins.size()), head.shape[0],
                    head.shape[2], head.shape[1], head.shape[3]);
  } else if (isAttention(id)) {
    // [batch, heads, seq, headDim] operands, or one fused QKV tensor.
    AttentionKind kind = attentionKind(id);
    bool forward = kind.forward, fusedQKV = kind.fusedQKV;
    AttentionExtent extent = AttentionExtent::of(
        inDesc(kind.queryInput()).shape, inDesc(kind.keyInput()).shape,
        fusedQKV, kind.mergedOutput, int64_t(command.get("heads", 1)));
    int64_t batch = extent.batch, heads = extent.heads, seq = extent.seq,
            headDim = extent.headDim;
    double scale = command.get("scale", 1.0 / std::sqrt(double(headDim)));
    double p = dropoutProbability(command, "dropout");
    int64_t headOffset = int64_t(command.get("rng_head_offset", 0));
    int64_t headsTotal = int64_t(command.get("rng_heads", double(heads)));
    // Blocked float attention (BlockedAttention.h); the (batch, head)
    // pairs are independent, and the pool shares them out.
    cpu::AttentionShape shape{
        batch,  heads, seq,       headDim,    scale,      p,
        stream, key,   rngOffset, headOffset, headsTotal, extent.layout()};
    // Mistral's sliding window: keys window or more before the query are
    // masked too.
    shape.window = int64_t(command.get("window", 0));
    // Gemma 2's soft cap of the scores (0: none).
    shape.softcap = command.get("softcap", 0.0);
    // With a fused QKV tensor, q, k and v (and their gradients) are one
    // buffer that the layout indexes.
    const float *qIn = in(forward ? 0 : 1);
    const float *kIn = fusedQKV ? qIn : in(forward ? 1 : 2);
    const float *vIn = fusedQKV ? qIn : in(forward ? 2 : 3);
    float *dQ = out(0);
    float *dK = fusedQKV || forward ? dQ : out(1);
    float *dV = fusedQKV || forward ? dQ : out(2);
    // The fused and merged forms state their rows' log-sum-exp: the
    // forward writes it, the gradient reads it with the output (its last
    // two inputs).
    float *lse = kind.hasStats() && forward ? out(1) : nullptr;
    cpu::AttentionForward results;
    if (kind.hasStats() && !forward)
      results = {in(command.ins.size() - 2), in(command.ins.size() - 1)};
    // The gradient shares each key and value head among its group of query
    // heads (grouped-query attention): a group's pairs run on one thread,
    // which sums their key and value gradients in head order.
    const int64_t groups = forward ? 1 : shape.layout.groups();
    ThreadPool::global().parallelFor(
        batch * heads / groups, 1, [&](int64_t begin, int64_t end) {
          if (forward)
            cpu::blockedAttention(qIn, kIn, vIn, out(0), lse, shape, begin,
                                  end);
          else
            cpu::blockedAttentionGrad(in(0), qIn, kIn, vIn, results, dQ, dK, dV,
                                      shape, begin * groups, end * groups);
        });
  } else if ((id == KernelId::cross_entropy ||
              id == KernelId::cross_entropy_grad) &&
             command.has("vocab_grid_axis")) {
    return runVocabParallelCrossEntropy(id, command);
  } else if (id == KernelId::cross_entropy) {
    // Rows on the pool; the mean in row order, the same for any split. A
    // padded vocabulary's columns from vocab_size on are masked out.
    int64_t vocab = lastDim(inDesc(0)), rows = inDesc(1).numElements();
    int64_t valid = int64_t(command.get("vocab_size", double(vocab)));
    std::vector<double> losses(size_t(rows), 0.0);
    ThreadPool::global().parallelFor(rows, std::max<int64_t>(1, 65536 / vocab),
                                     [&](int64_t begin, int64_t end) {
                                       cpu::crossEntropyRows(
                                           in(0), ids(1), losses.data(), begin,
                                           end, vocab, valid);
                                     });
    out(0)[0] = cpu::crossEntropyMean<float>(losses);
  } else if (id == KernelId::cross_entropy_grad) {
    int64_t vocab = lastDim(inDesc(1)), rows = inDesc(2).numElements();
    int64_t valid = int64_t(command.get("vocab_size", double(vocab)));
    ThreadPool::global().parallelFor(rows, std::max<int64_t>(1, 65536 / vocab),
                                     [&](int64_t begin, int64_t end) {
                                       cpu::crossEntropyGrad(
                                           in(0)[0], in(1), ids(2), out(0),
                                           rows, vocab, begin, end, valid);
                                     });
  } else if (id == KernelId::global_norm) {
    // Sums of squares of fixed 1M-element pieces on the pool, added in
    // order: the same bits for any number of threads.
    constexpr int64_t kPiece = int64_t(1) << 20;
    std::vector<std::pair<size_t, int64_t>> pieces; // (operand, first)
    for (size_t i = 0; i < command.ins.size(); ++i)
      for (int64_t first = 0; first < inDesc(i).numElements(); first += kPiece)
        pieces.push_back({i, first});
    std::vector<double> sums(pieces.size(), 0.0);
    ThreadPool::global().parallelFor(
        int64_t(pieces.size()), 1, [&](int64_t begin, int64_t end) {
          for (int64_t p = begin; p < end; ++p) {
            auto [operand, first] = pieces[size_t(p)];
            int64_t count =
                std::min(kPiece, inDesc(operand).numElements() - first);
            sums[size_t(p)] = cpu::sumOfSquares(in(operand) + first, count);
          }
        });
    double sum = 0;
    for (double part : sums)
      sum += part;
    out(0)[0] = float(std::sqrt(sum));
  } else if (id == KernelId::clip_scale) {
    double norm = scalar(0), maxNorm = scalar(1);
    // A non-finite norm skips the step: every adamw sees NaN.
    out(0)[0] = !std::isfinite(norm) ? std::nanf("")
                : maxNorm <= 0       ? 1.0f
                               : float(std::min(1.0, maxNorm / (norm + 1e-6)));
  } else if (id == KernelId::div) {
    out(0)[0] = float(scalar(0) / scalar(1));
  } else if (id == KernelId::cast) {
    castBuffer(command.ins[0], command.outs[0]);
  } else if (id == KernelId::multi_cast) {
    ThreadPool::global().parallelFor(
        int64_t(command.ins.size()), 1, [&](int64_t begin, int64_t end) {
          for (int64_t k = begin; k < end; ++k)
            castBuffer(command.ins[size_t(k)], command.outs[size_t(k)]);
        });
  } else if (id == KernelId::adamw) {
    // The moments are read through the outputs: they must alias the inputs.
    if (out(0) != in(0) || out(1) != in(2) || out(2) != in(3))
      return Status::error(
          "adamw must update its parameter and moments in place");
    double stepCount = scalar(4);
    if (stepCount < 1)
      return Status::error("adamw step must be >= 1, got " +
                           std::to_string(stepCount));
    // Elementwise: the pool shares out ranges of the tensor.
    ThreadPool::global().parallelFor(
        outDesc(0).numElements(), 32768, [&](int64_t begin, int64_t end) {
          cpu::adamw(out(0) + begin, in(1) + begin, out(1) + begin,
                     out(2) + begin, end - begin, scalar(5), scalar(6),
                     scalar(7), scalar(8), scalar(9), int64_t(stepCount),
                     scalar(10), command.get("decay", 0) != 0);
        });
  } else if (id == KernelId::multi_adamw) {
    // One pass over all the group's tensors as if they were one: the pool
    // shares out ranges of their concatenation. Its operands are not
    // staged: all are f32 but the 16-bit copies, which are written here.
    const MultiAdamWLayout layout(command);
    const size_t count = layout.count;
    double stepCount = scalar(layout.scalar(0));
    if (stepCount < 1)
      return Status::error("multi_adamw step must be >= 1, got " +
                           std::to_string(stepCount));
    std::vector<int64_t> starts(count + 1, 0);
    for (size_t k = 0; k < count; ++k) {
      if (out(k) != in(k) || out(layout.newExpAvg(k)) != in(layout.expAvg(k)) ||
          out(layout.newExpAvgSq(k)) != in(layout.expAvgSq(k)) ||
          (layout.copies && data(command.outs[layout.newCopy(k)]) !=
                                data(command.ins[layout.copyIn(k)])))
        return Status::error("multi_adamw must update its parameters, "
                             "moments and copies in place");
      starts[k + 1] = starts[k] + outDesc(k).numElements();
    }
    const float *scalars[7];
    for (size_t j = 0; j < 7; ++j)
      scalars[j] = in(layout.scalar(j));
    bool decay = command.get("decay", 0) != 0;
    // Each updated element's copy, rounded as a cast rounds (a skipped
    // update rewrites the unchanged parameter's).
    auto copyOut = [&](size_t k, int64_t at, int64_t n) {
      if (!layout.copies)
        return;
      const int64_t id = command.outs[layout.newCopy(k)];
      narrow(buffers[id].dtype, out(k) + at,
             static_cast<uint16_t *>(data(id)) + at, n);
    };
    ThreadPool::global().parallelFor(
        starts[count], 32768, [&](int64_t begin, int64_t end) {
          size_t k =
              size_t(std::upper_bound(starts.begin(), starts.end(), begin) -
                     starts.begin()) -
              1;
          for (; begin < end; ++k) {
            int64_t stop = std::min(end, starts[k + 1]);
            int64_t at = begin - starts[k];
            cpu::adamw(out(k) + at, in(layout.grad(k)) + at,
                       out(layout.newExpAvg(k)) + at,
                       out(layout.newExpAvgSq(k)) + at, stop - begin,
                       scalars[1][0], scalars[2][0], scalars[3][0],
                       scalars[4][0], scalars[5][0], int64_t(stepCount),
                       scalars[6][0], decay);
            copyOut(k, at, stop - begin);
            begin = stop;
          }
        });
  } else if (id == KernelId::sum_squares) {
    double sum = 0;
    for (size_t i = 0; i < command.ins.size(); ++i)
      sum += cpu::sumOfSquares(in(i), inDesc(i).numElements());
    out(0)[0] = float(sum);
  } else if (id == KernelId::mean) {
    // In double, in index order: the same bits as the CUDA backend's.
    const float *x = in(0);
    int64_t n = inDesc(0).numElements();
    double sum = 0;
    for (int64_t i = 0; i < n; ++i)
      sum += double(x[i]);
    out(0)[0] = float(sum / double(n));
  } else if (id == KernelId::sqrt) {
    out(0)[0] = std::sqrt(in(0)[0]);
  } else if (id == KernelId::scale) {
    float factor = float(command.get("factor", 1.0));
    const float *x = in(0);
    float *y = out(0);
    for (int64_t i = 0, n = outDesc(0).numElements(); i < n; ++i)
      y[i] = factor * x[i];
  } else if (isCollective(id)) {
    return runCollective(id, command);
  } else if (id == KernelId::expert_dispatch ||
             id == KernelId::expert_combine) {
    // Rows as f32 (16-bit ones staged), offsets and counts as i32.
    return exchangeExpertRows(communicator, buffers, id, command,
                              [&](int64_t buffer) -> void * {
                                if (buffers[size_t(buffer)].dtype == DType::I32)
                                  return as<int32_t>(buffer);
                                return f32(buffer);
                              });
  } else if (id == KernelId::send || id == KernelId::recv) {
    if (!communicator || pipelineAxis < 0)
      return Status::error("a pipeline transfer needs the run's communicator "
                           "and a grid with a pipeline axis");
    int64_t peer = int64_t(command.get("peer_stage", -1));
    int64_t tag = int64_t(command.get("tag", 0));
    if (peer < 0 || peer >= communicator->groupSize(pipelineAxis))
      return Status::error("peer stage " + std::to_string(peer) +
                           " is not a stage of the pipeline");
    if (id == KernelId::send)
      return communicator->send(pipelineAxis, peer, tag, data(command.ins[0]),
                                inDesc(0).bytes());
    return communicator->recv(pipelineAxis, peer, tag, data(command.outs[0]),
                              outDesc(0).bytes());
  } else if (id == KernelId::fill) {
    std::fill_n(out(0), outDesc(0).numElements(),
                float(command.get("value", 0.0)));
  } else if (id == KernelId::copy_prefix) {
    // Bytes of one type (checked at load): zero bits are 0.0 in f32, f16
    // and bf16 alike.
    size_t total = size_t(outDesc(0).bytes());
    size_t copied = std::min(total, size_t(inDesc(0).bytes()));
    auto *to = static_cast<uint8_t *>(data(command.outs[0]));
    std::memcpy(to, data(command.ins[0]), copied);
    std::memset(to + copied, 0, total - copied);
  } else {
    return Status::error("no CPU kernel of that name");
  }
  return Status::ok();
}
