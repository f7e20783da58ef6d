//===- CudaGemms.cpp - cuBLAS and cuBLASLt GEMMs --------------------------===//

#include "cuda/CudaDeviceImpl.h"

using namespace mtrt;
using namespace mtrt::gpu;

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
