//===- LtGemm.cpp - A GEMM with an epilogue, through cuBLASLt -------------===//

#include "cuda/LtGemm.h"

#include <cstdint>

using namespace mtrt;
using namespace mtrt::gpu;

namespace {

std::string ltError(cublasStatus_t status, const char *what) {
  return std::string(what) + " failed (" + cublasLtGetStatusName(status) + ")";
}

/// The largest power of two (at most 256) that divides every address.
uint32_t alignmentOf(std::initializer_list<const void *> pointers) {
  uint32_t alignment = 256;
  for (const void *pointer : pointers) {
    auto address = reinterpret_cast<uintptr_t>(pointer);
    while (alignment > 1 && address % alignment != 0)
      alignment /= 2;
  }
  return alignment;
}

} // namespace

struct LtGemm::Impl {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t x = nullptr, y = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  /// What the plan is for, and the pointers its descriptor holds: the
  /// bias (or, for BiasGradA, the bias gradient) and the auxiliary matrix.
  LtEpilogue epilogue = LtEpilogue::Bias;
  const void *bias = nullptr, *aux = nullptr;
  /// beta = 1: C holds the accumulator the product is added to.
  bool accumulate = false;

  ~Impl() {
    for (cublasLtMatrixLayout_t layout : {x, y, d})
      if (layout)
        cublasLtMatrixLayoutDestroy(layout);
    if (desc)
      cublasLtMatmulDescDestroy(desc);
  }
};

LtGemm::LtGemm() : impl(std::make_unique<Impl>()) {}
LtGemm::~LtGemm() = default;
LtGemm::LtGemm(LtGemm &&) noexcept = default;
LtGemm &LtGemm::operator=(LtGemm &&) noexcept = default;

bool LtGemm::plan(cublasLtHandle_t lt, const MatmulShape &shape, DType dtype,
                  DType resultType, bool tf32, LtEpilogue epilogueKind,
                  const Operands &operands, size_t workspaceBytes,
                  std::string &why, bool accumulate) {
  const bool ta = shape.transposeA, tb = shape.transposeB;
  const bool broadcast = shape.sharedB;
  // [batch..., m, k] x [k, n]: the batch joins the rows.
  const bool folded = broadcast && !ta;
  const int64_t m = folded ? shape.batch * shape.m : shape.m, n = shape.n,
                k = shape.k, batch = folded ? 1 : shape.batch;
  auto cudaType = [](DType of) {
    return of == DType::BF16  ? CUDA_R_16BF
           : of == DType::F16 ? CUDA_R_16F
                              : CUDA_R_32F;
  };
  cudaDataType type = cudaType(dtype), typeC = cudaType(resultType);
  // fp32 accumulation; TF32 only with --tf32 (cuBLASLt has no math mode:
  // plain 32F keeps fp32 inputs in fp32).
  cublasComputeType_t compute = dtype == DType::F32 && tf32
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  auto check = [&](cublasStatus_t status, const char *what) {
    if (status != CUBLAS_STATUS_SUCCESS && why.empty())
      why = ltError(status, what);
    return status == CUBLAS_STATUS_SUCCESS;
  };
  impl = std::make_unique<Impl>(); // a fresh plan
  Impl &p = *impl;
  const bool gelu = epilogueKind == LtEpilogue::GeluAuxBias ||
                    epilogueKind == LtEpilogue::DGelu;
  const bool bias = epilogueKind == LtEpilogue::Bias ||
                    epilogueKind == LtEpilogue::GeluAuxBias;
  const bool biasGrad = epilogueKind == LtEpilogue::BiasGradA;
  // The bias gradient sums B's rows: B [k, n] as it lies, whole.
  if (biasGrad && (tb || batch > 1)) {
    why = "a bias gradient of a transposed or batched B";
    return false;
  }
  // The auxiliary matrix is C's layout; a batched one would need its own
  // stride (the MLP's GEMMs fold their batch into the rows).
  if (gelu && batch > 1) {
    why = "a batched GEMM with a GeLU epilogue";
    return false;
  }
  // cuBLASLt takes the auxiliary matrix's leading dimension in multiples
  // of 8.
  if (gelu && n % 8 != 0) {
    why = "a GeLU epilogue over rows of " + std::to_string(n) +
          " (cuBLASLt needs a multiple of 8)";
    return false;
  }
  // Column-major D^T [n x m] = X [n x k] Y [k x m]: X is B as it lies
  // (transposed when B is not), Y is A likewise.
  cublasOperation_t opX = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opY = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue =
      epilogueKind == LtEpilogue::Bias ? CUBLASLT_EPILOGUE_BIAS
      : epilogueKind == LtEpilogue::GeluAuxBias
          ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
      : epilogueKind == LtEpilogue::DGelu ? CUBLASLT_EPILOGUE_DGELU
                                          : CUBLASLT_EPILOGUE_BGRADA;
  // One descriptor attribute: `value` as the attribute's bytes.
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const auto &value,
                 const char *what) {
    return check(cublasLtMatmulDescSetAttribute(p.desc, attribute, &value,
                                                sizeof(value)),
                 what);
  };
  // The bias the epilogue adds, or the bias gradient it writes (in C's
  // type, cuBLASLt's rule, over C's n rows of the column-major view); the
  // GeLU's input, in C's layout (column-major [n x m], ld n).
  const void *biasPointer =
      biasGrad ? static_cast<const void *>(operands.biasGrad) : operands.bias;
  const cudaDataType biasType = biasGrad ? typeC : type;
  const int64_t auxLd = n;
  if (!check(cublasLtMatmulDescCreate(&p.desc, compute, CUDA_R_32F),
             "cublasLtMatmulDescCreate") ||
      !set(CUBLASLT_MATMUL_DESC_TRANSA, opX, "setting TRANSA") ||
      !set(CUBLASLT_MATMUL_DESC_TRANSB, opY, "setting TRANSB") ||
      !set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "setting the epilogue"))
    return false;
  if ((bias || biasGrad) && (!set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, biasType,
                                  "setting the bias type") ||
                             !set(CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                  biasPointer, "setting the bias")))
    return false;
  if (gelu && (!set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, operands.aux,
                    "setting the auxiliary matrix") ||
               !set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, auxLd,
                    "setting the auxiliary matrix's leading dimension") ||
               !set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, type,
                    "setting the auxiliary matrix's type")))
    return false;
  p.epilogue = epilogueKind;
  p.accumulate = accumulate;
  p.bias = bias || biasGrad ? biasPointer : nullptr;
  p.aux = gelu ? operands.aux : nullptr;
  // X: B [k, n] row-major is column-major [n x k], ld n; B^T [n, k] is
  // column-major [k x n], ld k. Y likewise for A.
  if (!check(cublasLtMatrixLayoutCreate(&p.x, type, tb ? k : n, tb ? n : k,
                                        tb ? k : n),
             "the B layout") ||
      !check(cublasLtMatrixLayoutCreate(&p.y, type, ta ? m : k, ta ? k : m,
                                        ta ? m : k),
             "the A layout") ||
      !check(cublasLtMatrixLayoutCreate(&p.d, typeC, n, m, n), "the C layout"))
    return false;
  if (batch > 1) {
    int32_t count = int32_t(batch);
    int64_t xStride = broadcast ? 0 : k * n, yStride = m * k, dStride = m * n;
    for (auto [layout, stride] :
         {std::pair{p.x, xStride}, {p.y, yStride}, {p.d, dStride}})
      if (!check(cublasLtMatrixLayoutSetAttribute(
                     layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                     sizeof(count)),
                 "the batch count") ||
          !check(cublasLtMatrixLayoutSetAttribute(
                     layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                     &stride, sizeof(stride)),
                 "the batch stride"))
        return false;
  }
  cublasLtMatmulPreference_t preference = nullptr;
  if (!check(cublasLtMatmulPreferenceCreate(&preference),
             "cublasLtMatmulPreferenceCreate"))
    return false;
  uint64_t bytes = workspaceBytes;
  // Every batch's start counts: the base pointers, and the strides.
  const int64_t element = dtype == DType::F32 ? 4 : 2;
  uint32_t alignment = alignmentOf(
      {operands.a, operands.b, operands.c, gelu ? operands.aux : operands.c});
  if (batch > 1)
    for (int64_t stride : {broadcast ? int64_t(0) : k * n, m * k, m * n})
      while (stride != 0 && alignment > 1 &&
             (stride * element) % int64_t(alignment) != 0)
        alignment /= 2;
  // Split-K partial sums only in the compute type (fp32), never rounded
  // to a 16-bit output type between them: the sum is rounded once, as the
  // plain GEMMs' DISALLOW_REDUCED_PRECISION_REDUCTION keeps it.
  uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  bool ok = check(cublasLtMatmulPreferenceSetAttribute(
                      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                      &bytes, sizeof(bytes)),
                  "the workspace preference");
  ok = ok && check(cublasLtMatmulPreferenceSetAttribute(
                       preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                       &reductions, sizeof(reductions)),
                   "the reduction scheme preference");
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    ok = ok && check(cublasLtMatmulPreferenceSetAttribute(
                         preference, attribute, &alignment, sizeof(alignment)),
                     "the alignment preference");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  ok = ok &&
       check(cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.x, p.y, p.d, p.d,
                                            preference, 1, &result, &found),
             "cublasLtMatmulAlgoGetHeuristic");
  cublasLtMatmulPreferenceDestroy(preference);
  if (!ok)
    return false;
  if (found == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
    why = std::string("cuBLASLt has no algorithm for this GEMM with a ") +
          (epilogueKind == LtEpilogue::Bias          ? "bias"
           : epilogueKind == LtEpilogue::GeluAuxBias ? "bias and GeLU"
           : epilogueKind == LtEpilogue::DGelu       ? "GeLU gradient"
                                                     : "bias gradient") +
          " epilogue";
    return false;
  }
  p.algo = result.algo;
  return true;
}

Status LtGemm::run(cublasLtHandle_t lt, const Operands &operands,
                   void *workspace, size_t workspaceBytes,
                   cudaStream_t stream) const {
  if (!impl || !impl->desc)
    return Status::error("cublasLtMatmul: the GEMM was not planned");
  const float one = 1.0f, zero = 0.0f;
  const Impl &p = *impl;
  // The bias and auxiliary pointers were set when planning; the arena
  // does not move (a GEMM run on another bias would add the planned one).
  const bool biasGrad = p.epilogue == LtEpilogue::BiasGradA;
  if (p.bias && (biasGrad ? static_cast<const void *>(operands.biasGrad)
                          : operands.bias) != p.bias)
    return Status::error(std::string("cublasLtMatmul: the ") +
                         (biasGrad ? "bias gradient" : "bias") +
                         " is not the one the GEMM was planned with");
  if (p.aux && operands.aux != p.aux)
    return Status::error("cublasLtMatmul: the GeLU's input is not the one "
                         "the GEMM was planned with");
  cublasStatus_t status =
      cublasLtMatmul(lt, p.desc, &one, operands.b, p.x, operands.a, p.y,
                     p.accumulate ? &one : &zero, operands.c, p.d, operands.c,
                     p.d, &p.algo, workspace, workspaceBytes, stream);
  if (status != CUBLAS_STATUS_SUCCESS)
    return Status::error(ltError(status, "cublasLtMatmul"));
  return Status::ok();
}
