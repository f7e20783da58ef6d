//===- LtBiasGemm.h - A GEMM with its bias in cuBLASLt's epilogue -*- C++
//-*-===//
//
// mt.matmul_bias on the CUDA backend: row-major C = op(A) op(B) + bias (a
// vector of C's columns) as one cublasLtMatmul whose epilogue adds the
// bias (CUBLASLT_EPILOGUE_BIAS), so the product is never stored and read
// back. As the backend's cuBLAS GEMMs, it computes the column-major
// C^T = op(B)^T op(A)^T, batched by stride with a rank-2 B shared by every
// batch; fp32 without TF32 unless --tf32, 16-bit operands with fp32
// accumulation, the sum rounded once.
//
// The descriptors, layouts and the heuristic's algorithm are made once
// per command when the program is prepared (for the arena's actual
// alignment), so a step only calls cublasLtMatmul: nothing to allocate or
// wait for inside a captured CUDA graph.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_LTBIASGEMM_H
#define MTRT_CUDA_LTBIASGEMM_H

#include "mtrt/Artifact.h"
#include "mtrt/Device.h"
#include "mtrt/Status.h"

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <string>

namespace mtrt::gpu {

class LtBiasGemm {
public:
  /// The pointers the plan is made for (their alignment matters).
  struct Operands {
    const void *a = nullptr, *b = nullptr, *bias = nullptr;
    void *c = nullptr;
  };

  LtBiasGemm();
  ~LtBiasGemm();
  LtBiasGemm(LtBiasGemm &&) noexcept;
  LtBiasGemm &operator=(LtBiasGemm &&) noexcept;

  /// Plans the GEMM of `shape` over elements of `dtype` (f32, bf16 or
  /// f16, every operand the same); `tf32` allows TF32 for f32. False, with
  /// `why`, when cuBLASLt offers no algorithm for it.
  bool plan(cublasLtHandle_t lt, const MatmulShape &shape, DType dtype,
            bool tf32, const Operands &operands, size_t workspaceBytes,
            std::string &why);
  /// Runs the planned GEMM on `stream`.
  Status run(cublasLtHandle_t lt, const Operands &operands, void *workspace,
             size_t workspaceBytes, cudaStream_t stream) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace mtrt::gpu

#endif // MTRT_CUDA_LTBIASGEMM_H
