//===- CudaDeviceImpl.h - The CUDA backend's device class ------*- C++ -*--===//
//
// The class behind createCudaDevice (CudaDevice.h), private to the
// backend's plugin, and the helpers its files share. Its members are
// defined one concept a file:
// - CudaDevice.cpp: preparing a program (the arena, the generated kernels,
//   the constant tables), running a step, uploads and downloads, the
//   choices it reports, and the plugin's entry points;
// - CudaCommands.cpp: each command's launch (runCommand);
// - CudaGemms.cpp: cuBLAS and cuBLASLt GEMMs and their epilogues' plans;
// - CudaStaging.cpp: 16-bit operands through fp32 copies;
// - CudaAttention.cpp: the choice of cuDNN's fused attention, and its call;
// - CudaGraph.cpp: the step as one CUDA graph;
// - CudaCommunication.cpp: collectives and pipeline transfers (NCCL or
//   host memory), their overlap with the compute stream.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_CUDADEVICEIMPL_H
#define MTRT_CUDA_CUDADEVICEIMPL_H

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
#include "mtrt/ExpertExchange.h"
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

namespace mtrt::gpu {

inline std::string cudaMessage(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " +
         cudaGetErrorString(error);
}

inline Status checkCuda(cudaError_t error, const std::string &what) {
  if (error == cudaSuccess)
    return Status::ok();
  return Status::error(what + " failed (" + cudaMessage(error) + ")");
}

inline Status checkCublas(cublasStatus_t status, const std::string &what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  return Status::error(what + " failed (cuBLAS status " +
                       std::to_string(int(status)) + ")");
}

inline std::string describe(size_t index, const Command &command) {
  return "command " + std::to_string(index) + " ('" + command.kernel + "')";
}

/// The entry point MT_LAUNCHER defines for each generated kernel.
using GeneratedLauncher = cudaError_t (*)(const GeneratedKernelArgs *args,
                                          long long n, cudaStream_t stream);

/// cuBLAS's and cuBLASLt's workspace: 32 MiB, NVIDIA's advice for Hopper.
constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;

inline bool isHalf(DType dtype) {
  return dtype == DType::BF16 || dtype == DType::F16;
}

/// How the kernels that read 16-bit storage themselves see `dtype` (a
/// floating-point one: unsupported() refuses the others first).
inline gpu::Storage storageOf(DType dtype) {
  return dtype == DType::BF16  ? gpu::Storage::BF16
         : dtype == DType::F16 ? gpu::Storage::F16
                               : gpu::Storage::F32;
}

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
  /// The slice's commands eagerly in program order on the compute stream
  /// (no graph, no overlap, not traced), every dropout off: the dropout and
  /// attention kernels at probability 0, the generated kernels' dropout
  /// blocks disabled until the next step uploads its own.
  Status executeEvaluation(const std::vector<bool> &slice) override;
  bool evaluates() const override { return true; }
  Status findNonFinite(const std::vector<int64_t> &bufferIds,
                       int64_t &first) const override;
  int64_t measuredPeakBytes() const override { return measuredPeak; }
  int64_t deviceBytesTaken() const override;

  std::string hardwareName() const override {
    cudaDeviceProp properties;
    if (cudaGetDeviceProperties(&properties, ordinal) != cudaSuccess)
      return {};
    return properties.name;
  }

  double kernelBuildSeconds() const override {
    return generated.buildSeconds();
  }

  /// The backend's choices for this program, a line each (the GEMM
  /// epilogues, the transports, memory beside the arena, AdamW, the graph,
  /// attention), as megatron-run prints them.
  std::vector<std::string> choices() const override;

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
  /// read on the device (commandTables): multi_adamw's, the grouped
  /// norms' and multi_cast's tensors (arena addresses) and rope's inverse
  /// frequencies. A step then uploads
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
  /// Waits for what the compute stream holds (a step's end; before an
  /// exchange through host memory, the commands before it). Where this rank
  /// joined NCCL it polls instead, as PyTorch's NCCL watchdog does: NCCL's
  /// kernels wait for their peers without a deadline, so a rank that
  /// stopped answering would hang this one for good. On NCCL's background
  /// error, or past the run's deadline (--distributed-timeout-minutes), it
  /// aborts this rank's NCCL communicators (their kernels return) and
  /// fails, naming what it waited for.
  Status waitForStream(const char *what);
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
  /// While executeEvaluation runs: its slice (enqueueCommands runs only
  /// those commands, in order on the compute stream), else null.
  const std::vector<bool> *evaluationSlice = nullptr;
  /// A command's dropout probability `name`: 0 while evaluating.
  double dropoutProbability(const Command &command, const char *name) const {
    return evaluationSlice ? 0.0 : command.get(name, 0.0);
  }
  Status runCollective(KernelId id, const Command &command);
  /// expert_dispatch or expert_combine through host memory, over MPI
  /// (mtrt/ExpertExchange.h).
  Status runExpertExchange(KernelId id, const Command &command);
  /// Whether `command` is a collective over every stride-th rank of its
  /// axis (an expert's replicas, and ZeRO's pieces of it), which runs
  /// through host memory; an all-slice among them is a copy.
  static bool stridedCollective(const Command &command, KernelId id) {
    return isCollective(id) && id != KernelId::all_slice &&
           command.get("stride", 1) != 1;
  }
  /// The ranks of `command`'s group: its axis', or every stride-th of them.
  int64_t groupOf(const Command &command) const {
    return communicator->groupSize(int64_t(command.get("grid_axis", 0))) /
           std::max<int64_t>(1, int64_t(command.get("stride", 1)));
  }
  /// A mixture of experts' commands and the soft cap (CudaMoe.cpp), on
  /// MoeKernels.h's kernels.
  static bool isMoeKernel(KernelId id);
  Status runMoeCommand(size_t index, KernelId id, const Command &command);
  /// The scratch bytes a command of isMoeKernel needs.
  int64_t moeScratchBytes(const Command &command, KernelId id) const;
  /// The device pointers a command of isMoeKernel reads from its table
  /// (the grouped GEMMs' experts, the load-balancing loss's routers), as
  /// its kernels see them (staged fp32 copies of 16-bit operands); none
  /// for the others.
  std::vector<const void *> moeTable(const Command &command, KernelId id) const;
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
  /// copy raw bytes of the one type a collective moves, and the bias
  /// gradient's column sums), GEMMs of one 16-bit type, which cuBLAS takes
  /// as they are, and embeddings that copy 16-bit rows (halfEmbedding).
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
  /// Whether a collective's group has several ranks (then NCCL runs it,
  /// except an all-slice, which only keeps this rank's piece).
  bool acrossRanks(const Command &command) const {
    return communicator && groupOf(command) > 1;
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
  /// Where stageOperands widens each of `command`'s 16-bit operands: the
  /// buffer and its first element in `staging`, in operand order.
  std::vector<std::pair<int64_t, int64_t>>
  stagingLayout(const Command &command) const;
  /// The fp32 view `command`'s kernels read of operand `bufferId` while it
  /// runs (f32() then): its staged copy or the buffer itself. Known before
  /// any step, for the tables of pointers built at prepare time.
  const float *viewWhileRunning(const Command &command, KernelId id,
                                int64_t bufferId) const;
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
  /// The device's free memory just before the arena was allocated (0:
  /// unknown), for deviceBytesTaken.
  size_t freeBeforeArena = 0;

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

} // namespace mtrt::gpu

#endif // MTRT_CUDA_CUDADEVICEIMPL_H
