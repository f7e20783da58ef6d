//===- LtGemm.h - A GEMM with an epilogue, through cuBLASLt -----*- C++ -*-===//
//
// The GEMMs whose epilogue does more than store the product, on the CUDA
// backend, each one cublasLtMatmul:
// - mt.matmul_bias: C = op(A) op(B) + bias, a vector of C's columns
//   (CUBLASLT_EPILOGUE_BIAS);
// - mt.matmul_bias_gelu: that sum stored as the auxiliary output (the
//   backward reads it) and C = GeLU(sum) (CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
// - mt.matmul_gelu_grad: C = op(A) op(B) * GeLU'(aux), the auxiliary input
//   being the GeLU's input (CUBLASLT_EPILOGUE_DGELU);
// - mt.matmul_bias_grad: C = op(A) B, a weight gradient, and the sum of
//   B's rows (B = dY [k, n]: the bias gradient) in C's type
//   (CUBLASLT_EPILOGUE_BGRADA: in the column-major view B is cuBLAS's A).
// So the product is never stored and read back by a pass of its own. As
// the backend's cuBLAS GEMMs, each computes the column-major C^T = op(B)^T
// op(A)^T, batched by stride with a rank-2 B shared by every batch; fp32
// without TF32 unless --tf32, 16-bit operands with fp32 accumulation, the
// result rounded once.
//
// The descriptors, layouts and the heuristic's algorithm are made once
// per command when the program is prepared (for the arena's actual
// alignment), so a step only calls cublasLtMatmul: nothing to allocate or
// wait for inside a captured CUDA graph.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_LTGEMM_H
#define MTRT_CUDA_LTGEMM_H

#include "mtrt/Artifact.h"
#include "mtrt/Device.h"
#include "mtrt/Status.h"

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <string>

namespace mtrt::gpu {

/// What the GEMM's epilogue does besides storing C.
enum class LtEpilogue {
  Bias,        // adds `bias`
  GeluAuxBias, // adds `bias`, stores the sum at `aux`, then applies GeLU
  DGelu,       // multiplies by GeLU's derivative at `aux`
  BiasGradA,   // writes the sum of B's rows at `biasGrad`
};

class LtGemm {
public:
  /// The pointers the plan is made for (their alignment matters; the bias
  /// and the auxiliary matrix are part of the plan).
  struct Operands {
    const void *a = nullptr, *b = nullptr, *bias = nullptr;
    void *c = nullptr;
    /// GeluAuxBias: the sum's output; DGelu: the GeLU's input (read).
    void *aux = nullptr;
    /// BiasGradA: the bias gradient's output.
    void *biasGrad = nullptr;
  };

  LtGemm();
  ~LtGemm();
  LtGemm(LtGemm &&) noexcept;
  LtGemm &operator=(LtGemm &&) noexcept;

  /// Plans the GEMM of `shape` over operands of `dtype` (f32, bf16 or
  /// f16) into C of `resultType` (the operands', or f32 for BiasGradA's
  /// widened weight gradient) with `epilogue`; `tf32` allows TF32 for f32;
  /// with `accumulate` the product is added to C (beta = 1: a weight
  /// gradient accumulated over microbatches).
  /// False, with `why`, when cuBLASLt offers no algorithm for it.
  bool plan(cublasLtHandle_t lt, const MatmulShape &shape, DType dtype,
            DType resultType, bool tf32, LtEpilogue epilogue,
            const Operands &operands, size_t workspaceBytes, std::string &why,
            bool accumulate = false);
  /// Runs the planned GEMM on `stream`.
  Status run(cublasLtHandle_t lt, const Operands &operands, void *workspace,
             size_t workspaceBytes, cudaStream_t stream) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace mtrt::gpu

#endif // MTRT_CUDA_LTGEMM_H
