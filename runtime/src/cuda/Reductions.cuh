//===- Reductions.cuh - Block reductions for the CUDA backend -------------===//
//
// Sums over many elements, as blocks of threads: the gradient norm's sum
// of squares (one block per piece of kNormPiece elements, then one block
// over the pieces) and the column sums of a bias gradient (a block per 32
// columns and chunk of rows, its 32 row groups summed in order, then the
// chunks' partial sums in order; the gradient read and written in its own
// storage type, so a 16-bit one needs no fp32 copy). Every sum is in double and
// in a fixed order, so a step's result does not depend on scheduling; the
// order differs from the CPU backend's, which rounding to float hides but
// for rare ties. CudaKernelsTest checks them on a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_REDUCTIONS_CUH
#define MTRT_CUDA_REDUCTIONS_CUH

#include "cuda/DeviceKernels.h"

namespace mtrt::gpu::reduce {

constexpr int kThreads = 256;
constexpr int kColumns = 32, kRowGroups = 32;

/// The sum of `value` over the block (blockDim.x a multiple of 32, at most
/// 1024), in a fixed order; the result is thread 0's.
__device__ __forceinline__ double blockSum(double value) {
  __shared__ double warps[32];
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffffu, value, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    warps[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < int(blockDim.x / 32) ? warps[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2)
      value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  return value;
}

/// The sum of squares of x[piece kNormPiece, (piece + 1) kNormPiece) (n
/// elements in all), thread 0's.
__device__ __forceinline__ double sumOfSquaresPiece(const float *x, int64_t n,
                                                    int64_t piece) {
  const int64_t begin = piece * kNormPiece;
  const int64_t end = begin + kNormPiece < n ? begin + kNormPiece : n;
  double sum = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    sum += double(x[i]) * double(x[i]);
  return blockSum(sum);
}

/// partial[p] = the sum of squares of x[p kNormPiece, (p + 1) kNormPiece)
/// (block p).
__global__ void __launch_bounds__(kThreads)
    sumOfSquaresPieces(const float *x, int64_t n, double *partial) {
  double sum = sumOfSquaresPiece(x, n, blockIdx.x);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = sum;
}

/// sumOfSquaresPieces over `count` tensors at once: block b is piece
/// b - start of the last segment starting at or before piece b, its sum
/// partial[b] (where that tensor's own launch would have put it).
__global__ void __launch_bounds__(kThreads)
    sumOfSquaresSegments(const NormSegment *segments, int64_t count,
                         double *partial) {
  const int64_t b = blockIdx.x;
  const NormSegment segment = segments[segmentOf(segments, count, b, 0)];
  double sum = sumOfSquaresPiece(segment.x, segment.n, b - segment.start);
  if (threadIdx.x == 0)
    partial[b] = sum;
}

/// out[0] = the sum of `count` partials, or its square root (one block).
__global__ void __launch_bounds__(kThreads)
    sumOfPartials(const double *partial, int64_t count, float *out, bool root) {
  double sum = 0;
  for (int64_t p = threadIdx.x; p < count; p += blockDim.x)
    sum += partial[p];
  sum = blockSum(sum);
  if (threadIdx.x == 0)
    out[0] = float(root ? sqrt(sum) : sum);
}

/// Element i of a tensor stored as `S` (Storage), as a float, and a float
/// stored there (rounded to 16 bits as mtrt/HalfFloat.h rounds).
template <Storage S>
__device__ __forceinline__ float loadAs(const void *p, int64_t i) {
  if constexpr (S == Storage::F32)
    return static_cast<const float *>(p)[i];
  else if constexpr (S == Storage::BF16)
    return bfloat16ToFloat(static_cast<const uint16_t *>(p)[i]);
  else
    return halfToFloat(static_cast<const uint16_t *>(p)[i]);
}
template <Storage S>
__device__ __forceinline__ void storeAs(void *p, int64_t i, float value) {
  if constexpr (S == Storage::F32)
    static_cast<float *>(p)[i] = value;
  else if constexpr (S == Storage::BF16)
    static_cast<uint16_t *>(p)[i] = floatToBFloat16(value);
  else
    static_cast<uint16_t *>(p)[i] = floatToHalf(value);
}

/// partial[chunk, c] = the sum of dY[r, c] over the rows of chunk
/// blockIdx.y ([chunk chunkRows, (chunk + 1) chunkRows)), for the kColumns
/// columns of block x: thread (g, c) sums every kRowGroups-th row from g
/// (coalesced across the columns), then the groups are added in order.
template <Storage S>
__global__ void __launch_bounds__(kColumns *kRowGroups)
    columnPartials(const void *dY, double *partial, int64_t rows, int64_t cols,
                   int64_t chunkRows) {
  __shared__ double groups[kRowGroups][kColumns + 1];
  const int column = threadIdx.x % kColumns, group = threadIdx.x / kColumns;
  const int64_t c = int64_t(blockIdx.x) * kColumns + column;
  const int64_t first = int64_t(blockIdx.y) * chunkRows;
  const int64_t last = min(rows, first + chunkRows);
  double sum = 0;
  if (c < cols)
    for (int64_t r = first + group; r < last; r += kRowGroups)
      sum += double(loadAs<S>(dY, r * cols + c));
  groups[group][column] = sum;
  __syncthreads();
  if (group == 0 && c < cols) {
    double total = 0;
    for (int g = 0; g < kRowGroups; ++g)
      total += groups[g][column];
    partial[int64_t(blockIdx.y) * cols + c] = total;
  }
}

/// dBias[c] = the sum of the chunks' partial sums of column c, in order.
template <Storage S>
__global__ void __launch_bounds__(kThreads)
    columnTotals(const double *partial, void *dBias, int64_t chunks,
                 int64_t cols) {
  const int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= cols)
    return;
  double total = 0;
  for (int64_t chunk = 0; chunk < chunks; ++chunk)
    total += partial[chunk * cols + c];
  storeAs<S>(dBias, c, float(total));
}

} // namespace mtrt::gpu::reduce

#endif // MTRT_CUDA_REDUCTIONS_CUH
