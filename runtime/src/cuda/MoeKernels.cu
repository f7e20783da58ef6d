//===- MoeKernels.cu - A mixture of experts' kernels, launched ------------===//
//
// Each launcher runs MoeKernels.h's items over grid-stride loops
// (GridLaunch.cuh), pass after pass on one stream.
//
//===----------------------------------------------------------------------===//

#include "cuda/GridLaunch.cuh"
#include "cuda/MoeKernels.h"
#include "cuda/MoeLaunch.h"

namespace mtrt::gpu {

/// The first error of a sequence of launches.
#define MTRT_LAUNCH_OR_RETURN(call)                                            \
  if (cudaError_t error = (call); error != cudaSuccess)                        \
  return error

cudaError_t launchTopKGating(cudaStream_t stream, const float *logits,
                             float *weights, int32_t *experts, int64_t tokens,
                             int64_t numExperts, int64_t k, bool unnormalized) {
  return launch(stream, tokens, [=] __device__(int64_t t) {
    topKGatingItem(t, logits, weights, experts, numExperts, k, unnormalized);
  });
}

cudaError_t launchTopKGatingGrad(cudaStream_t stream, const float *dWeights,
                                 const float *weights, const int32_t *experts,
                                 const float *logits, float *dLogits,
                                 int64_t tokens, int64_t numExperts,
                                 int64_t k) {
  return launch(stream, tokens, [=] __device__(int64_t t) {
    topKGatingGradItem(t, dWeights, weights, experts, logits, dLogits,
                       numExperts, k);
  });
}

cudaError_t launchRouterStatistics(cudaStream_t stream, const float *logits,
                                   const int32_t *experts, float *load,
                                   float *probability, int64_t tokens,
                                   int64_t numExperts, int64_t k,
                                   double *scratch) {
  MTRT_LAUNCH_OR_RETURN(launch(stream, tokens, [=] __device__(int64_t t) {
    routerRowItem(t, logits, scratch, numExperts);
  }));
  // One item an expert, each over every token: blocks of 32 spread them.
  return launch<32>(stream, numExperts, [=] __device__(int64_t e) {
    routerStatisticsItem(e, logits, experts, scratch, load, probability, tokens,
                         numExperts, k);
  });
}

cudaError_t launchRouterProbabilityGrad(cudaStream_t stream,
                                        const float *dProbability,
                                        const float *logits, float *dLogits,
                                        int64_t tokens, int64_t numExperts) {
  return launch(stream, tokens, [=] __device__(int64_t t) {
    routerProbabilityGradItem(t, dProbability, logits, dLogits, tokens,
                              numExperts);
  });
}

cudaError_t launchLoadBalancingLoss(cudaStream_t stream,
                                    const float *const *loads,
                                    const float *const *probabilities,
                                    int64_t routers, int64_t numExperts,
                                    double coefficient, float *loss) {
  return launch<32>(stream, 1, [=] __device__(int64_t) {
    loadBalancingLossItem(loads, probabilities, routers, numExperts,
                          coefficient, loss);
  });
}

cudaError_t launchLoadBalancingLossGrad(cudaStream_t stream, const float *grad,
                                        const float *const *loads,
                                        float *dProbability, int64_t routers,
                                        int64_t numExperts,
                                        double coefficient) {
  return launch<32>(stream, numExperts, [=] __device__(int64_t e) {
    loadBalancingLossGradItem(e, grad, loads, dProbability, routers, numExperts,
                              coefficient);
  });
}

cudaError_t launchRouterZLoss(cudaStream_t stream, const float *logits,
                              float *loss, int64_t tokens, int64_t numExperts,
                              double coefficient, double *scratch) {
  MTRT_LAUNCH_OR_RETURN(launch(stream, tokens, [=] __device__(int64_t t) {
    routerZRowItem(t, logits, scratch, numExperts);
  }));
  return launch<32>(stream, 1, [=] __device__(int64_t) {
    routerZLossItem(scratch, tokens, coefficient, loss);
  });
}

cudaError_t launchRouterZLossGrad(cudaStream_t stream, const float *grad,
                                  const float *logits, float *dLogits,
                                  int64_t tokens, int64_t numExperts,
                                  double coefficient) {
  return launch(stream, tokens, [=] __device__(int64_t t) {
    routerZLossGradItem(t, grad, logits, dLogits, tokens, numExperts,
                        coefficient);
  });
}

cudaError_t launchMoeRoute(cudaStream_t stream, const int32_t *experts,
                           const float *weights, int32_t *positions,
                           int32_t *offsets, int64_t choices,
                           int64_t numExperts, int64_t capacity,
                           int32_t *scratch) {
  int32_t *count = scratch, *kept = scratch + numExperts;
  MTRT_LAUNCH_OR_RETURN(
      launch<32>(stream, numExperts, [=] __device__(int64_t e) {
        moeRouteCountItem(e, experts, choices, count);
      }));
  if (capacity > 0)
    MTRT_LAUNCH_OR_RETURN(launch(stream, choices, [=] __device__(int64_t i) {
      moeRouteKeepItem(i, experts, weights, count, choices, numExperts,
                       capacity, kept);
    }));
  MTRT_LAUNCH_OR_RETURN(launch(stream, choices, [=] __device__(int64_t i) {
    moeRoutePlaceItem(i, experts, count, kept, choices, numExperts, capacity,
                      positions);
  }));
  return launch<32>(stream, numExperts + 1, [=] __device__(int64_t e) {
    moeRouteOffsetItem(e, count, capacity, offsets);
  });
}

cudaError_t launchMoePermute(cudaStream_t stream, const float *x,
                             const int32_t *positions, const float *weights,
                             float *rows, int64_t choices, int64_t k,
                             int64_t hidden, int64_t rowCount, bool zeroRows) {
  if (zeroRows)
    MTRT_LAUNCH_OR_RETURN(cudaMemsetAsync(
        rows, 0, size_t(rowCount * hidden) * sizeof(float), stream));
  return launch(stream, choices * hidden, [=] __device__(int64_t i) {
    moePermuteItem(i, x, positions, weights, rows, k, hidden, rowCount);
  });
}

cudaError_t launchMoeUnpermute(cudaStream_t stream, const float *rows,
                               const int32_t *positions, const float *weights,
                               float *y, int64_t tokens, int64_t k,
                               int64_t hidden, int64_t rowCount) {
  return launch(stream, tokens * hidden, [=] __device__(int64_t i) {
    moeUnpermuteItem(i, rows, positions, weights, y, k, hidden, rowCount);
  });
}

cudaError_t launchMoeWeightsGrad(cudaStream_t stream, const float *dY,
                                 const float *rows, const int32_t *positions,
                                 float *dWeights, int64_t choices, int64_t k,
                                 int64_t hidden, int64_t rowCount) {
  return launch(stream, choices, [=] __device__(int64_t c) {
    moeWeightsGradItem(c, dY, rows, positions, dWeights, k, hidden, rowCount);
  });
}

cudaError_t launchSigmoidGate(cudaStream_t stream, const float *x,
                              const float *gate, float *y, int64_t tokens,
                              int64_t hidden) {
  return launch(stream, tokens * hidden, [=] __device__(int64_t i) {
    sigmoidGateItem(i, x, gate, y, hidden);
  });
}

cudaError_t launchSigmoidGateGrad(cudaStream_t stream, const float *dY,
                                  const float *x, const float *gate, float *dX,
                                  float *dGate, int64_t tokens,
                                  int64_t hidden) {
  return launch(stream, tokens, [=] __device__(int64_t t) {
    sigmoidGateGradItem(t, dY, x, gate, dX, dGate, hidden);
  });
}

cudaError_t launchGroupedMatmul(cudaStream_t stream, const float *x,
                                const int32_t *offsets,
                                const float *const *weights, float *y,
                                int64_t rows, int64_t numExperts, int64_t k,
                                int64_t n, bool transposeB) {
  return launch(stream, rows * n, [=] __device__(int64_t i) {
    groupedMatmulItem(i, x, offsets, weights, y, numExperts, k, n, transposeB);
  });
}

cudaError_t launchGroupedMatmulWeightGrad(cudaStream_t stream, const float *dY,
                                          const float *x,
                                          const int32_t *offsets,
                                          float *const *grads, int64_t rows,
                                          int64_t numExperts, int64_t k,
                                          int64_t n, bool transposeB) {
  return launch(stream, numExperts * k * n, [=] __device__(int64_t i) {
    groupedMatmulWeightGradItem(i, dY, x, offsets, grads, rows, k, n,
                                transposeB);
  });
}

#undef MTRT_LAUNCH_OR_RETURN

} // namespace mtrt::gpu
