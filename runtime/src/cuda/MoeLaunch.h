//===- MoeLaunch.h - Launching a mixture of experts' kernels ----*- C++ -*-===//
//
// Host entry points of MoeKernels.h's items, compiled by nvcc in
// MoeKernels.cu: each runs its passes on `stream` and returns the first
// launch error. Pointers are device addresses; a table of pointers
// (`weights`, `loads`) lives in device memory too.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_MOELAUNCH_H
#define MTRT_CUDA_MOELAUNCH_H

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mtrt::gpu {

cudaError_t launchTopKGating(cudaStream_t stream, const float *logits,
                             float *weights, int32_t *experts, int64_t tokens,
                             int64_t numExperts, int64_t k, bool unnormalized);
/// `logits` null: renormalized weights (the chosen experts' logits only).
cudaError_t launchTopKGatingGrad(cudaStream_t stream, const float *dWeights,
                                 const float *weights, const int32_t *experts,
                                 const float *logits, float *dLogits,
                                 int64_t tokens, int64_t numExperts, int64_t k);

/// The scratch routerStatistics needs: two doubles a token.
inline int64_t routerStatisticsScratchBytes(int64_t tokens) {
  return 2 * tokens * int64_t(sizeof(double));
}
cudaError_t launchRouterStatistics(cudaStream_t stream, const float *logits,
                                   const int32_t *experts, float *load,
                                   float *probability, int64_t tokens,
                                   int64_t numExperts, int64_t k,
                                   double *scratch);
cudaError_t launchRouterProbabilityGrad(cudaStream_t stream,
                                        const float *dProbability,
                                        const float *logits, float *dLogits,
                                        int64_t tokens, int64_t numExperts);
cudaError_t launchLoadBalancingLoss(cudaStream_t stream,
                                    const float *const *loads,
                                    const float *const *probabilities,
                                    int64_t routers, int64_t numExperts,
                                    double coefficient, float *loss);
cudaError_t launchLoadBalancingLossGrad(cudaStream_t stream, const float *grad,
                                        const float *const *loads,
                                        float *dProbability, int64_t routers,
                                        int64_t numExperts, double coefficient);

/// The scratch routerZLoss needs: a double a token.
inline int64_t routerZLossScratchBytes(int64_t tokens) {
  return tokens * int64_t(sizeof(double));
}
cudaError_t launchRouterZLoss(cudaStream_t stream, const float *logits,
                              float *loss, int64_t tokens, int64_t numExperts,
                              double coefficient, double *scratch);
cudaError_t launchRouterZLossGrad(cudaStream_t stream, const float *grad,
                                  const float *logits, float *dLogits,
                                  int64_t tokens, int64_t numExperts,
                                  double coefficient);

/// The scratch moeRoute needs: a count an expert and a flag a choice.
inline int64_t moeRouteScratchBytes(int64_t choices, int64_t numExperts) {
  return (numExperts + choices) * int64_t(sizeof(int32_t));
}
/// `capacity` at most 0: every choice kept. `weights` null: the first
/// choices kept (with a capacity).
cudaError_t launchMoeRoute(cudaStream_t stream, const int32_t *experts,
                           const float *weights, int32_t *positions,
                           int32_t *offsets, int64_t choices,
                           int64_t numExperts, int64_t capacity,
                           int32_t *scratch);
/// `zeroRows`: the rows no choice writes (a capacity's) are zeros.
cudaError_t launchMoePermute(cudaStream_t stream, const float *x,
                             const int32_t *positions, const float *weights,
                             float *rows, int64_t choices, int64_t k,
                             int64_t hidden, int64_t rowCount, bool zeroRows);
cudaError_t launchMoeUnpermute(cudaStream_t stream, const float *rows,
                               const int32_t *positions, const float *weights,
                               float *y, int64_t tokens, int64_t k,
                               int64_t hidden, int64_t rowCount);
cudaError_t launchMoeWeightsGrad(cudaStream_t stream, const float *dY,
                                 const float *rows, const int32_t *positions,
                                 float *dWeights, int64_t choices, int64_t k,
                                 int64_t hidden, int64_t rowCount);

cudaError_t launchSigmoidGate(cudaStream_t stream, const float *x,
                              const float *gate, float *y, int64_t tokens,
                              int64_t hidden);
cudaError_t launchSigmoidGateGrad(cudaStream_t stream, const float *dY,
                                  const float *x, const float *gate, float *dX,
                                  float *dGate, int64_t tokens, int64_t hidden);

/// y [rows, n] = x [rows, k] times each row's expert's weight.
cudaError_t launchGroupedMatmul(cudaStream_t stream, const float *x,
                                const int32_t *offsets,
                                const float *const *weights, float *y,
                                int64_t rows, int64_t numExperts, int64_t k,
                                int64_t n, bool transposeB);
/// Each expert's weight gradient over its rows.
cudaError_t launchGroupedMatmulWeightGrad(cudaStream_t stream, const float *dY,
                                          const float *x,
                                          const int32_t *offsets,
                                          float *const *grads, int64_t rows,
                                          int64_t numExperts, int64_t k,
                                          int64_t n, bool transposeB);

} // namespace mtrt::gpu

#endif // MTRT_CUDA_MOELAUNCH_H
