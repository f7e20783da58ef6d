//===- CudaDevice.cpp - The CUDA backend behind the device seam -----------===//

#include "cuda/CudaDevice.h"

#include "cpu/HostKernels.h"
#include "cuda/CudnnAttention.h"
#include "cuda/DeviceLaunch.h"
#include "cuda/HostStagedCollectives.h"
#include "cuda/LtGemm.h"
#include "cuda/NcclCollectives.h"
#include "cuda/NcclTransfers.h"
#include "mtrt/AsyncJoins.h"
#include "mtrt/Deadline.h"
#include "mtrt/GeneratedKernelLibrary.h"
#include "mtrt/GeneratedKernelPrelude.h"
#include "mtrt/KernelSignatures.h"
#include "mtrt/Kernels.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace mtrt;

namespace {

std::string cudaMessage(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " +
         cudaGetErrorString(error);
}

Status checkCuda(cudaError_t error, const std::string &what) {
  if (error == cudaSuccess)
    return Status::ok();
  return Status::error(what + " failed (" + cudaMessage(error) + ")");
}

Status checkCublas(cublasStatus_t status, const std::string &what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  return Status::error(what + " failed (cuBLAS status " +
                       std::to_string(int(status)) + ")");
}

std::string describe(size_t index, const Command &command) {
  return "command " + std::to_string(index) + " ('" + command.kernel + "')";
}

/// The entry point MT_LAUNCHER defines for each generated kernel.
using GeneratedLauncher = cudaError_t (*)(const GeneratedKernelArgs *args,
                                          long long n, cudaStream_t stream);

/// cuBLAS's and cuBLASLt's workspace: 32 MiB, NVIDIA's advice for Hopper.
constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;

class CudaDevice final : public Device {
public:
  CudaDevice(int ordinal, bool tf32) : ordinal(ordinal), tf32(tf32) {}
  ~CudaDevice() override {
    // The graph and the libraries' handles before what they use.
    dropGraph();
    cudnn.close();
    epiloguePlans.clear();
    if (lt)
      cublasLtDestroy(lt);
    if (cublas)
      cublasDestroy(cublas);
    for (void *allocation :
         {static_cast<void *>(arena), static_cast<void *>(scratch),
          static_cast<void *>(flag), static_cast<void *>(staging),
          static_cast<void *>(dropoutBlocks), static_cast<void *>(stepKey),
          cudnnWorkspace, static_cast<void *>(commandTables), cublasWorkspace})
      if (allocation)
        cudaFree(allocation);
    for (cudaEvent_t event : commandEvents)
      cudaEventDestroy(event);
    for (cudaEvent_t event : besideEvents)
      cudaEventDestroy(event);
    for (cudaEvent_t event : overlapEvents)
      cudaEventDestroy(event);
    for (cudaEvent_t event : transferEvents)
      cudaEventDestroy(event);
    for (auto &[peer, sender] : sendStreams) {
      cudaEventDestroy(sender.done);
      cudaStreamDestroy(sender.stream);
    }
    if (sendSlots)
      cudaFree(sendSlots);
    if (commStream)
      cudaStreamDestroy(commStream);
    if (stream)
      cudaStreamDestroy(stream);
  }

  const char *backendName() const override { return "cuda"; }

  void setCommunicator(const Communicator *comm) override {
    communicator = comm;
    hostStaged.setCommunicator(comm);
  }
  void setPipelineAxis(int64_t axis) override { pipelineAxis = axis; }
  void setTrace(ExecutionTrace *recorder) override { trace = recorder; }
  Status upload(int64_t bufferId, const void *host, int64_t bytes,
                int64_t offset) override;
  Status download(int64_t bufferId, void *host, int64_t bytes,
                  int64_t offset) const override;
  Status executeStep(uint64_t seed, uint64_t step) override;
  Status findNonFinite(const std::vector<int64_t> &bufferIds,
                       int64_t &first) const override;
  int64_t measuredPeakBytes() const override { return measuredPeak; }

  std::string hardwareName() const override {
    cudaDeviceProp properties;
    if (cudaGetDeviceProperties(&properties, ordinal) != cudaSuccess)
      return {};
    return properties.name;
  }

  double kernelBuildSeconds() const override {
    return generated.buildSeconds();
  }

  std::vector<std::string> choices() const override {
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
      lines.push_back(
          adamByChunks
              ? "multi-tensor AdamW: by chunks of " +
                    std::to_string(gpu::kAdamChunk) + " elements, " +
                    std::to_string(adamVectorized) + " of " +
                    std::to_string(adamTensors) + " tensors with 16-byte loads"
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

private:
  Status prepareProgram(const RankProgram &program) override;
  /// The GPU is a thread's setting: every entry point sets it.
  Status selectDevice() const {
    return checkCuda(cudaSetDevice(ordinal), "cudaSetDevice");
  }
  /// Why the CUDA backend cannot run `command` yet, or "".
  std::string unsupported(const Command &command, KernelId id) const;
  /// Scratch bytes `command` needs (row statistics, partial sums).
  int64_t scratchBytes(const Command &command, KernelId id) const;
  /// Builds and uploads, once per program, the constant tables commands
  /// read on the device (commandTables): multi_adamw's tensors (arena
  /// addresses) and rope's inverse frequencies. A step then uploads
  /// nothing and waits for nothing until its end.
  Status prepareCommandTables(const RankProgram &program);
  /// Enqueues every command of the step on the stream (with `timed`, an
  /// event after each); waits for nothing.
  Status enqueueCommands(uint64_t seed, uint64_t step, bool timed);
  /// Whether the program's steps can be one CUDA graph: no command moves
  /// data through host memory (what changes between steps, the dropout
  /// key, is read from device memory written before each step), and
  /// MEGATRON_CUDA_GRAPH is not 0. "" or why not.
  std::string graphRefusal() const;
  /// Captures the commands as this program's graph (graphExec).
  Status captureStep(uint64_t seed, uint64_t step);
  /// Decides, once per program, whether its steps become a graph, and
  /// captures it: with every rank of the run or none (see the definition).
  Status decideGraph(uint64_t seed, uint64_t step);
  /// Whether every rank of the run says `mine` (the maximum of a refusal
  /// over each grid axis in turn: over all of the grid's ranks).
  Status everyRankAgrees(bool mine, bool &all) const;
  /// Waits for the step's end on the compute stream. Where this rank
  /// joined NCCL it polls instead, as PyTorch's NCCL watchdog does: NCCL's
  /// kernels wait for their peers without a deadline, so a rank that
  /// stopped answering would hang this one for good. On NCCL's background
  /// error, or past the run's deadline (--distributed-timeout-minutes), it
  /// aborts this rank's NCCL communicators (their kernels return) and
  /// fails, naming what it waited for.
  Status finishStep(const char *what);
  /// Why this rank's NCCL communicators were aborted ("" if they were
  /// not): no later step runs, as its collectives and transfers would
  /// have no communicator, or fall back to host memory unlike their peers.
  std::string ncclAborted;
  void dropGraph() {
    if (graphExec)
      cudaGraphExecDestroy(graphExec);
    if (graph)
      cudaGraphDestroy(graph);
    graphExec = nullptr;
    graph = nullptr;
  }
  Status runCommand(size_t index, KernelId id, const Command &command,
                    uint64_t seed, uint64_t step);
  Status runCollective(KernelId id, const Command &command);
  /// The command's product: of its 16-bit operands as they are (`half`,
  /// halfGemm), or of fp32 views; kernel `id`'s accumulator, if it has one,
  /// added (beta = 1).
  Status gemm(const Command &command, KernelId id, bool half);

  uint8_t *address(int64_t bufferId) const {
    return arena + prog->buffers[size_t(bufferId)].offset;
  }
  /// An fp32 view of a floating-point operand: the buffer itself when it
  /// is f32, else its staged copy (stageOperands).
  float *f32(int64_t bufferId) const {
    for (const auto &[id, copy] : staged)
      if (id == bufferId)
        return copy;
    return reinterpret_cast<float *>(address(bufferId));
  }
  /// Whether `command`'s 16-bit operands run through fp32 copies: every
  /// kernel but those that handle their storage themselves
  /// (convertsOwnStorage; here also collectives of a group of one, which
  /// copy raw bytes, and the bias gradient's column sums), and GEMMs of one
  /// 16-bit type, which cuBLAS takes as they are.
  bool stages(const Command &command, KernelId id) const {
    if (isCollective(id)) // across ranks: NCCL sums fp32, as the CPU does
      return acrossRanks(command);
    if (hasEpilogue(id)) { // cuBLASLt reads them as they are
      size_t index = size_t(&command - prog->commands.data());
      return !epiloguePlans[index].fused && !epiloguePlans[index].inPlace;
    }
    return !convertsOwnStorage(id) && id != KernelId::bias_add_grad &&
           !halfGemm(command, id) && !halfEmbedding(command, id);
  }
  /// Whether `command` is an embedding whose table and output are of one
  /// 16-bit type: its rows are copied as they are (an fp32 copy of the
  /// whole table, GPT-2's tied vocabulary, only to gather a row a token).
  bool halfEmbedding(const Command &command, KernelId id) const;
  /// The GEMMs with an epilogue (LtGemm.h).
  static bool hasEpilogue(KernelId id) {
    return isGemm(id) && id != KernelId::matmul;
  }
  static bool isCrossEntropy(KernelId id) {
    return id == KernelId::cross_entropy || id == KernelId::cross_entropy_grad;
  }
  static bool isCollective(KernelId id) {
    return id == KernelId::all_reduce || id == KernelId::reduce_scatter ||
           id == KernelId::all_gather || id == KernelId::all_slice;
  }
  /// Whether a collective's group has several ranks (then NCCL runs it,
  /// except an all-slice, which only keeps this rank's piece).
  bool acrossRanks(const Command &command) const {
    return communicator &&
           communicator->groupSize(int64_t(command.get("grid_axis", 0))) > 1;
  }
  /// A collective's tensor as [outer][parts x local][inner] pieces along
  /// its dimension `axis` (see CpuDevice::runCollective): the whole
  /// tensor's outer extent and one piece's contiguous block.
  void collectivePieces(KernelId id, const Command &command, int64_t parts,
                        int64_t &outer, int64_t &block) const;
  /// Whether `command` is a GEMM whose operands are all bf16 or all fp16
  /// and whose result is of their type or f32 (a widened gradient): cuBLAS
  /// multiplies them on the tensor cores with fp32 accumulation and rounds
  /// a 16-bit result once, where the CPU backend rounds its fp32 GEMM's.
  bool halfGemm(const Command &command, KernelId id) const;
  /// Selects cuBLAS's math mode for the next GEMM: pedantic for fp32 (no
  /// TF32; TF32 tensor cores with --tf32), the default for 16-bit operands
  /// (tensor cores) without reduced-precision reductions.
  Status useMathMode(cublasMath_t mode);
  /// The bytes of fp32 copies `command` needs.
  int64_t stagingBytes(const Command &command) const;
  /// Widens the command's 16-bit operands into fp32 copies in `staging`,
  /// as the CPU backend does, so that every kernel computes in fp32 and
  /// results round to 16 bits exactly where the CPU backend's do.
  Status stageOperands(const Command &command);
  /// Rounds the staged outputs back into their 16-bit buffers.
  Status unstageOutputs(const Command &command);

  /// The cuDNN call that runs `command` (CudnnAttention.h), or a shape of
  /// no heads: 16-bit qkv_attention and its gradient without dropout go to
  /// cuDNN's fused kernels when cuDNN loads and supports the shape, unless
  /// MEGATRON_CUDNN_ATTENTION=0. Counts the choice for choices().
  gpu::CudnnAttentionShape chooseCudnn(const Command &command, KernelId id);
  /// Runs `command` through cuDNN, its operands in place in the arena.
  Status runCudnnAttention(const Command &command,
                           const gpu::CudnnAttentionShape &call);

  int ordinal;
  /// --tf32: fp32 GEMMs on the tensor cores, inputs rounded to TF32.
  bool tf32;
  /// The GPU's compute capability (major), read when a program is prepared.
  int computeMajor = 0;
  /// Whether the GPU's tensor cores take 16-bit `type`: bf16 from Ampere
  /// (sm_80), fp16 from Volta (sm_70); an older GPU multiplies fp32 copies.
  bool tensorCoresTake(DType type) const;

  std::vector<const KernelInfo *> resolved;
  std::vector<GeneratedLauncher> launchers;
  GeneratedKernelLibrary generated;
  const Communicator *communicator = nullptr;
  int64_t pipelineAxis = -1;
  ExecutionTrace *trace = nullptr;
  /// --trace/--profile: an event on the stream before the step's first
  /// command and after each command, so that a command's time is measured
  /// on the GPU without waiting for it (the step waits once, at its end).
  std::vector<cudaEvent_t> commandEvents;
  /// With a trace, the begin and end of each command on the communication
  /// stream (two per command): such a command runs beside the ones after
  /// it, and the compute stream's events would time it as nothing.
  std::vector<cudaEvent_t> besideEvents;
  /// The commands' constant tables, one allocation; each command's byte
  /// offset into it (-1: none).
  uint8_t *commandTables = nullptr;
  std::vector<int64_t> tableOffsets;
  /// multi_adamw by chunks (multiAdamwChunkThread), or, with
  /// MEGATRON_CUDA_ADAM=elements, element by element over the whole group
  /// (multiAdamwThread, as before 2026-11-27's ninth session: the bench's
  /// baseline for it); its tensors, and those its vector loads serve.
  bool adamByChunks = true;
  int64_t adamTensors = 0, adamVectorized = 0;
  /// The step as a CUDA graph: captured at the program's second step (the
  /// first runs eagerly, so that every library has made its one-time
  /// allocations), then replayed, one launch a step. Steps with --trace
  /// stay eager.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graphExec = nullptr;
  int64_t eagerSteps = 0;
  /// Whether decideGraph ran for this program.
  bool graphDecided = false;
  /// Why the steps are not a graph ("" while they may become one).
  std::string graphWhy;
  /// cuBLAS's workspace, ours so that a captured GEMM allocates nothing.
  void *cublasWorkspace = nullptr;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasMath_t mathMode = CUBLAS_PEDANTIC_MATH;
  /// The fused dropouts' parameter blocks (host copy, resolved when the
  /// program is prepared) and their device copy, uploaded once per step.
  FusedDropoutBlocks dropoutParams;
  uint64_t *dropoutBlocks = nullptr;
  /// The step's dropout key {seed, step} on the device, written before each
  /// step: the dropout and attention kernels read it when they run
  /// (DropoutKey::live), so a captured step draws each step's masks.
  uint64_t *stepKey = nullptr;
  uint8_t *arena = nullptr;
  uint8_t *scratch = nullptr;
  int *flag = nullptr;
  float *staging = nullptr;
  std::vector<std::pair<int64_t, float *>> staged;
  int64_t measuredPeak = 0;

  /// cuBLASLt, for GEMMs with a bias epilogue: per command, its planned
  /// GEMM (null: the fallback, a GEMM on fp32 copies then the bias added).
  cublasLtHandle_t lt = nullptr;
  /// How each GEMM with an epilogue runs (planEpilogueGemms; empty for
  /// other commands).
  struct EpilogueGemm {
    /// cuBLASLt with the epilogue.
    std::unique_ptr<gpu::LtGemm> fused;
    /// Else, on a GPU with 16-bit tensor cores, in the command's own
    /// storage (no fp32 copies, no fp32 GEMM): a weight gradient's GEMM
    /// then the bias gradient's column sums read from 16 bits; the GeLU
    /// gradient's GEMM then GeLU's derivative over its 16-bit product; the
    /// sum through cuBLASLt's bias epilogue (`sum`) then GeLU over it.
    bool inPlace = false;
    std::unique_ptr<gpu::LtGemm> sum;
  };
  std::vector<EpilogueGemm> epiloguePlans;
  /// The first reason a GEMM with an epilogue fell back, for choices().
  std::string ltRefusal;
  /// Plans each GEMM with an epilogue (mt.matmul_bias, mt.matmul_bias_gelu,
  /// mt.matmul_gelu_grad, mt.matmul_bias_grad) with cuBLASLt once the
  /// arena is allocated;
  /// returns the staging the fallbacks need.
  int64_t planEpilogueGemms(const RankProgram &program);
  /// The epilogue's operands: matmul_bias_gelu writes its GeLU as C and
  /// the sum as the auxiliary output; matmul_gelu_grad reads the GeLU's
  /// input as the auxiliary input.
  gpu::LtGemm::Operands ltOperands(const Command &command, KernelId id) const {
    gpu::LtGemm::Operands operands;
    operands.a = address(command.ins[0]);
    operands.b = address(command.ins[1]);
    if (id == KernelId::matmul_gelu_grad) {
      operands.aux = address(command.ins[2]);
      operands.c = address(command.outs[0]);
    } else if (id == KernelId::matmul_bias_grad) {
      operands.c = address(command.outs[0]);
      operands.biasGrad = address(command.outs[1]);
    } else {
      operands.bias = address(command.ins[2]);
      operands.c = address(command.outs.back());
      if (id == KernelId::matmul_bias_gelu)
        operands.aux = address(command.outs[0]);
    }
    return operands;
  }
  /// matmul_bias_gelu's in-place fallback: its sum (outs[0]) through the
  /// bias epilogue alone.
  gpu::LtGemm::Operands geluSumOperands(const Command &command) const {
    gpu::LtGemm::Operands sum = ltOperands(command, KernelId::matmul_bias_gelu);
    sum.c = address(command.outs[0]);
    sum.aux = nullptr;
    return sum;
  }

  /// The transports of collectives across ranks, per grid axis: NCCL
  /// where every rank of the axis' group has its own GPU, MPI through host
  /// memory where ranks share one (or MEGATRON_CUDA_COLLECTIVES=host), and
  /// for the pipeline's transfers. Chosen once, when the first program
  /// with a collective across ranks is prepared (openCollectives).
  gpu::NcclCollectives nccl;
  gpu::HostStagedCollectives hostStaged;
  bool collectivesOpen = false;
  /// Per axis: why its collectives go through host memory ("": NCCL, or a
  /// group of one rank).
  std::vector<std::string> hostWhy;
  /// The program's commands that run through host memory (its transfers
  /// and collectives on host axes): the step cannot be a graph then.
  int64_t hostStagedCommands = 0;
  /// Chooses each axis' transport (NcclCollectives::open) if `program` has
  /// a collective across ranks and none was chosen yet.
  Status openCollectives(const RankProgram &program);
  /// Whether NCCL carries grid axis `axis`' collectives.
  bool viaNccl(int64_t axis) const {
    return axis >= 0 && size_t(axis) < hostWhy.size() &&
           hostWhy[size_t(axis)].empty() && axis != pipelineAxis &&
           communicator->groupSize(axis) > 1;
  }
  /// The transport of grid axis `axis`' collectives.
  gpu::DeviceCollectives &transport(int64_t axis) {
    if (viaNccl(axis))
      return nccl;
    return hostStaged;
  }
  /// Collectives that overlap: NCCL collectives of fp32 operands run on
  /// the communication stream from their place in the program, while the
  /// compute stream goes on (the data-parallel gradient reduction beside
  /// the rest of the backward); the compute stream waits for each before
  /// the first later command that touches its bytes (mtrt/AsyncJoins.h).
  /// MEGATRON_CUDA_OVERLAP=0 keeps them on the compute stream.
  std::vector<bool> overlapping;
  /// Per command: whether it calls NCCL (a collective or a vocab-parallel
  /// cross-entropy whose group NCCL serves).
  std::vector<bool> callsNccl;
  AsyncJoins joins;
  int64_t overlappingCommands = 0;
  cudaStream_t commStream = nullptr;
  /// Per command: the event the communication stream waits for before it
  /// (recorded on the compute stream) and the one recorded after it.
  std::vector<cudaEvent_t> overlapEvents;
  /// Whether command i runs on the communication stream.
  bool onCommStream(size_t i) const {
    return overlappingCommands > 0 && callsNccl[i];
  }
  /// Whether collective `command` can overlap (see `overlapping`).
  bool overlaps(const Command &command, KernelId id);
  /// Chooses the overlapping collectives of the prepared program, their
  /// join points, stream and events.
  Status prepareOverlap();
  /// The pipeline's transfers over NCCL, where the two stages of a
  /// direction have their own GPUs (NcclTransfers.h): a send copies its
  /// bytes into its slot (sendSlot: the command's byte offset into
  /// sendSlots, -1 for the others) and is sent from there on its peer's
  /// stream; the compute stream waits for every peer's stream at the
  /// step's end. The others go through host memory (hostStaged).
  gpu::NcclTransfers ncclTransfers;
  bool transfersOpen = false;
  std::string transfersHostWhy;
  std::vector<int64_t> sendSlot;
  uint8_t *sendSlots = nullptr;
  int64_t sendSlotBytes = 0;
  /// Device memory beside the planned arena, by what holds it.
  std::vector<std::pair<const char *, int64_t>> outsidePlan;
  struct PeerStream {
    cudaStream_t stream = nullptr;
    cudaEvent_t done = nullptr;
  };
  std::map<int64_t, PeerStream> sendStreams;
  /// The peers the prepared program sends to over NCCL.
  std::vector<int64_t> sendPeers;
  /// The transfers the NCCL directions were set up and checked for: a
  /// later program must have the same.
  std::vector<gpu::Transfer> openedSends, openedRecvs;
  /// Per command: the event a send's peer stream waits for.
  std::vector<cudaEvent_t> transferEvents;
  /// Whether MEGATRON_CUDA_COLLECTIVES asks for host memory ('host'; unset
  /// or 'auto': NCCL where it can); another value is an error.
  static Status hostMemoryAsked(bool &hostOnly);
  /// Chooses the transports of `program`'s transfers once (every rank of
  /// the pipeline group calls it, as every stage has transfers).
  Status openTransfers(const RankProgram &program);
  /// The NCCL sends' slots, peer streams and events, once the arena is.
  Status prepareTransfers();
  /// Whether NCCL carries transfer `command`.
  bool ncclTransfer(const Command &command, KernelId id) const {
    return (id == KernelId::send || id == KernelId::recv) &&
           ncclTransfers.viaNccl(int64_t(command.get("peer_stage", -1)),
                                 id == KernelId::send);
  }
  /// Whether `command` moves data across ranks through host memory.
  bool throughHost(const Command &command, KernelId id) const;
  /// The run's choices line for its transports ("" when it has none).
  std::string transportChoice() const;
  /// Megatron's vocab-parallel cross-entropy: three passes around
  /// reductions across the vocabulary's ranks (DeviceKernels.h).
  Status runVocabParallelCrossEntropy(KernelId id, const Command &command);

  gpu::CudnnAttention cudnn;
  /// Whether cuDNN was opened (tried once per device), and why not.
  bool cudnnTried = false, cudnnOpen = false;
  std::string cudnnWhy;
  /// Per command: its cuDNN call (heads 0: the backend's own kernels).
  std::vector<gpu::CudnnAttentionShape> cudnnCalls;
  /// The program's attention commands, and those cuDNN runs; the first
  /// reason one 16-bit attention stayed on our kernels.
  int64_t attentionCommands = 0, cudnnCommands = 0;
  std::string cudnnRefusal;
  void *cudnnWorkspace = nullptr;
};

bool isHalf(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16; }

bool CudaDevice::tensorCoresTake(DType type) const {
  return isHalf(type) && computeMajor >= (type == DType::BF16 ? 8 : 7);
}

int64_t CudaDevice::planEpilogueGemms(const RankProgram &program) {
  epiloguePlans.clear();
  epiloguePlans.resize(program.commands.size());
  ltRefusal.clear();
  int64_t fallbackStaging = 0;
  for (size_t i = 0; i < program.commands.size(); ++i) {
    const KernelId id = resolved[i]->id;
    if (!hasEpilogue(id))
      continue;
    const Command &command = program.commands[i];
    // One element type for every operand, and a GPU whose tensor cores
    // take it (bf16: Ampere, fp16: Volta), or the fallback.
    // (A weight gradient and its bias gradient may be widened to f32.)
    DType dtype = program.buffers[size_t(command.ins[0])].dtype;
    DType resultType = program.buffers[size_t(command.outs[0])].dtype;
    auto allOf = [&program](const std::vector<int64_t> &ids, DType type) {
      return std::all_of(ids.begin(), ids.end(), [&](int64_t buffer) {
        return program.buffers[size_t(buffer)].dtype == type;
      });
    };
    // An accumulator (input 2 of an accumulating weight gradient) is the
    // f32 output's own bytes: the GEMM's operands are the first two.
    const bool accumulate = accumulatesInPlace(id, command.ins.size());
    const std::vector<int64_t> operandIds(
        command.ins.begin(), command.ins.end() - (accumulate ? 1 : 0));
    bool uniform =
        allOf(operandIds, dtype) && allOf(command.outs, resultType) &&
        (resultType == dtype ||
         (id == KernelId::matmul_bias_grad && resultType == DType::F32));
    const gpu::LtEpilogue epilogue =
        id == KernelId::matmul_bias        ? gpu::LtEpilogue::Bias
        : id == KernelId::matmul_bias_gelu ? gpu::LtEpilogue::GeluAuxBias
        : id == KernelId::matmul_gelu_grad ? gpu::LtEpilogue::DGelu
                                           : gpu::LtEpilogue::BiasGradA;
    std::string why;
    if (!uniform)
      why = "operands of mixed types";
    else if (isHalf(dtype) && !tensorCoresTake(dtype))
      why = "16-bit GEMMs need a newer GPU";
    else {
      auto planned = std::make_unique<gpu::LtGemm>();
      if (planned->plan(lt, matmulShape(program, command), dtype, resultType,
                        tf32, epilogue, ltOperands(command, id),
                        kCublasWorkspaceBytes, why, accumulate)) {
        epiloguePlans[i].fused = std::move(planned);
        continue;
      }
    }
    if (ltRefusal.empty())
      ltRefusal = why;
    // The fallback runs in place where cuBLAS takes the operands as they
    // are (halfGemm's rule); the GeLU's sum through the bias epilogue.
    if (uniform && tensorCoresTake(dtype)) {
      bool inPlace = id != KernelId::matmul_bias;
      if (id == KernelId::matmul_bias_gelu) {
        const gpu::LtGemm::Operands sum = geluSumOperands(command);
        auto planned = std::make_unique<gpu::LtGemm>();
        std::string sumWhy;
        inPlace = planned->plan(lt, matmulShape(program, command), dtype,
                                resultType, tf32, gpu::LtEpilogue::Bias, sum,
                                kCublasWorkspaceBytes, sumWhy);
        if (inPlace)
          epiloguePlans[i].sum = std::move(planned);
      }
      if (inPlace) {
        epiloguePlans[i].inPlace = true;
        continue;
      }
    }
    fallbackStaging = std::max(fallbackStaging, stagingBytes(command));
  }
  return fallbackStaging;
}

/// How the kernels that read 16-bit storage themselves see `dtype` (a
/// floating-point one: unsupported() refuses the others first).
gpu::Storage storageOf(DType dtype) {
  return dtype == DType::BF16  ? gpu::Storage::BF16
         : dtype == DType::F16 ? gpu::Storage::F16
                               : gpu::Storage::F32;
}

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
    if (!communicator)
      return "a collective without the run's communicator";
    if (int64_t axis = int64_t(command.get("grid_axis", 0));
        axis < 0 || axis >= int64_t(communicator->coords().size()))
      return "a collective along grid axis " + std::to_string(axis) +
             ", which the device grid does not have";
    break;
  default:
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
    collectivePieces(
        id, command,
        communicator->groupSize(int64_t(command.get("grid_axis", 0))), outer,
        block);
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
    return 0;
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
    // shares it (the two never run at once: one stream).
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
          command.get("llama3_original_max_positions", 0.0));
      tableOffsets[i] = append(invFreq.data(), invFreq.size() * sizeof(double));
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

Status CudaDevice::finishStep(const char *what) {
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
      nccl.abort();
      ncclTransfers.abort();
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
    return finishStep("the step");
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
  MTRT_RETURN_IF_ERROR(finishStep("the step"));
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

Status CudaDevice::enqueueCommands(uint64_t seed, uint64_t step, bool timed) {
  auto join = [&](const std::vector<size_t> &commands) {
    for (size_t k : commands)
      MTRT_RETURN_IF_ERROR(
          checkCuda(cudaStreamWaitEvent(stream, overlapEvents[2 * k + 1], 0),
                    "waiting for " + describe(k, prog->commands[k])));
    return Status::ok();
  };
  for (size_t i = 0; i < prog->commands.size(); ++i) {
    const Command &command = prog->commands[i];
    measuredPeak = std::max(measuredPeak, commandExtent(*prog, command));
    KernelId id = resolved[i]->id;
    if (overlappingCommands > 0)
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
    const bool onComm = onCommStream(i);
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
  if (overlappingCommands > 0)
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

bool CudaDevice::overlaps(const Command &command, KernelId id) {
  if (!isCollective(id) || id == KernelId::all_slice || !acrossRanks(command))
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
  collectivePieces(
      id, command,
      communicator->groupSize(int64_t(command.get("grid_axis", 0))), outer,
      block);
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
    if (isCollective(id) && id != KernelId::all_slice && acrossRanks(command))
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

bool CudaDevice::halfEmbedding(const Command &command, KernelId id) const {
  if (id != KernelId::embedding)
    return false;
  DType table = prog->buffers[size_t(command.ins[0])].dtype;
  return isHalf(table) && prog->buffers[size_t(command.outs[0])].dtype == table;
}

bool CudaDevice::halfGemm(const Command &command, KernelId id) const {
  if (id != KernelId::matmul || command.outs.empty())
    return false;
  // 16-bit operands of one type; the product in it, or in f32 (a widened
  // gradient: the f32 accumulation stored as it is).
  DType type = prog->buffers[size_t(command.ins[0])].dtype;
  DType result = prog->buffers[size_t(command.outs[0])].dtype;
  if (!tensorCoresTake(type) || (result != type && result != DType::F32))
    return false;
  // (An accumulator, input 2, is f32: the signature holds it so.)
  return prog->buffers[size_t(command.ins[1])].dtype == type;
}

Status CudaDevice::useMathMode(cublasMath_t mode) {
  if (mode == mathMode)
    return Status::ok();
  MTRT_RETURN_IF_ERROR(
      checkCublas(cublasSetMathMode(cublas, mode), "cublasSetMathMode"));
  mathMode = mode;
  return Status::ok();
}

/// Row-major C [m, n] = op(A) op(B) as cuBLAS's column-major C^T = op(B)^T
/// op(A)^T, batched by stride (a rank-2 B is shared by every batch).
Status CudaDevice::gemm(const Command &command, KernelId id, bool half) {
  MatmulShape shape = matmulShape(*prog, command);
  bool ta = shape.transposeA, tb = shape.transposeB;
  bool broadcast = shape.sharedB;
  int64_t m = shape.m, n = shape.n, k = shape.k, batch = shape.batch;
  const float one = 1.0f, zero = 0.0f;
  // An accumulating GEMM adds its product to output 0, its accumulator
  // (input 2) in place.
  const float *beta = accumulatesInPlace(id, command.ins.size()) ? &one : &zero;
  int lda = int(ta ? m : k), ldb = int(tb ? k : n);
  cublasOperation_t opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (half) {
    // No reduction in the output's precision (split-K partial sums in
    // bf16 would round more than once).
    MTRT_RETURN_IF_ERROR(useMathMode(
        cublasMath_t(CUBLAS_DEFAULT_MATH |
                     CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    // The operands' type; the product's is theirs, or f32 for a widened
    // gradient (cuBLAS stores the f32 accumulation).
    auto cudaType = [](DType dtype) {
      return dtype == DType::BF16  ? CUDA_R_16BF
             : dtype == DType::F16 ? CUDA_R_16F
                                   : CUDA_R_32F;
    };
    cudaDataType type = cudaType(prog->buffers[size_t(command.ins[0])].dtype);
    cudaDataType typeC = cudaType(prog->buffers[size_t(command.outs[0])].dtype);
    const void *pa = address(command.ins[0]), *pb = address(command.ins[1]);
    void *pc = address(command.outs[0]);
    if (broadcast && !ta)
      return checkCublas(cublasGemmEx(cublas, opB, opA, int(n), int(batch * m),
                                      int(k), &one, pb, type, ldb, pa, type,
                                      lda, beta, pc, typeC, int(n),
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                         "cublasGemmEx");
    return checkCublas(cublasGemmStridedBatchedEx(
                           cublas, opB, opA, int(n), int(m), int(k), &one, pb,
                           type, ldb, broadcast ? 0 : k * n, pa, type, lda,
                           m * k, beta, pc, typeC, int(n), m * n, int(batch),
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmStridedBatchedEx");
  }
  MTRT_RETURN_IF_ERROR(
      useMathMode(tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
  const float *pa = f32(command.ins[0]), *pb = f32(command.ins[1]);
  float *pc = f32(command.outs[0]);
  if (broadcast && !ta) // [batch..., m, k] x [k, n]: the batch joins the rows
    return checkCublas(cublasSgemm(cublas, opB, opA, int(n), int(batch * m),
                                   int(k), &one, pb, ldb, pa, lda, beta, pc,
                                   int(n)),
                       "cublasSgemm");
  return checkCublas(
      cublasSgemmStridedBatched(cublas, opB, opA, int(n), int(m), int(k), &one,
                                pb, ldb, broadcast ? 0 : k * n, pa, lda, m * k,
                                beta, pc, int(n), m * n, int(batch)),
      "cublasSgemmStridedBatched");
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
  const int64_t parts = communicator->groupSize(axis);
  const float *in = f32(command.ins[0]);
  float *out = f32(command.outs[0]);
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
  const int64_t member = communicator->groupIndex(axis);
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
    gpu::AttentionDropout dropout;
    dropout.key = key;
    dropout.key.p = command.get("dropout", 0.0);
    dropout.heads = heads;
    dropout.headsTotal = int64_t(command.get("rng_heads", double(heads)));
    dropout.headOffset = int64_t(command.get("rng_head_offset", 0));
    // With a fused QKV tensor, q, k and v (and their gradients) are one
    // buffer that the layout indexes.
    const float *qIn = in(forward ? 0 : 1);
    const float *kIn = fusedQKV ? qIn : in(forward ? 1 : 2);
    const float *vIn = fusedQKV ? qIn : in(forward ? 2 : 3);
    // The fused form states its rows' log-sum-exp: the forward writes it,
    // the gradient reads it with the output.
    // The fused and merged forms state their rows' log-sum-exp: the
    // forward writes it, the gradient reads it with the output (its last
    // two inputs).
    const size_t ins = command.ins.size();
    const bool hasStats = kind.hasStats();
    if (forward) {
      error = gpu::launchAttention(stream, qIn, kIn, vIn, out(0),
                                   hasStats ? out(1) : nullptr, rows, seq,
                                   headDim, scale, layout, dropout, window);
    } else {
      float *dQ = out(0);
      float *dK = fusedQKV ? dQ : out(1);
      float *dV = fusedQKV ? dQ : out(2);
      error = gpu::launchAttentionGrad(
          stream, in(0), qIn, kIn, vIn, hasStats ? in(ins - 2) : nullptr,
          hasStats ? in(ins - 1) : nullptr, dQ, dK, dV, stats, rows, seq,
          headDim, scale, layout, dropout, window);
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
    key.p = command.get("probability", 0.0);
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
    error = gpu::launchRmsNorm(stream, in(0), in(1), out(0),
                               inDesc(0).numElements() / cols, cols,
                               command.get("epsilon", 1e-6));
    break;
  }
  case KernelId::rms_norm_grad: {
    int64_t cols = lastDim(inDesc(1));
    error = gpu::launchRmsNormGrad(stream, in(0), in(1), in(2), out(0), out(1),
                                   stats, inDesc(1).numElements() / cols, cols,
                                   command.get("epsilon", 1e-6));
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
  case KernelId::all_reduce:
  case KernelId::reduce_scatter:
  case KernelId::all_gather:
  case KernelId::all_slice:
    return runCollective(id, command);
  default:
    return Status::error("no CUDA kernel for it");
  }
  return checkCuda(error, "the launch");
}

} // namespace

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
