//===- CudnnAttention.cpp - cuDNN's fused attention for qkv_attention -----===//

#include "cuda/CudnnAttention.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

#if MTRT_HAVE_CUDNN_FRONTEND
// The frontend calls cuDNN through symbols it looks up in the library this
// file loads (cudnn_dlhandle): the backend needs no libcudnn to load, and
// a machine without one keeps the backend's own attention.
#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#include <cudnn_frontend.h>

#include <dlfcn.h>

namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend
#endif

using namespace mtrt;
using namespace mtrt::gpu;

namespace {

/// What selects a graph: the whole shape, the scale's bits, the type and
/// the direction.
using GraphKey = std::tuple<int64_t, int64_t, int64_t, int64_t, uint64_t, int,
                            bool, bool, int64_t>;

GraphKey keyOf(const CudnnAttentionShape &shape) {
  uint64_t scaleBits = 0;
  std::memcpy(&scaleBits, &shape.scale, sizeof(scaleBits));
  return {shape.batch,   shape.heads,     shape.seq,
          shape.headDim, scaleBits,       int(shape.dtype),
          shape.forward, shape.headMajor, shape.kvHeads};
}

} // namespace

#if MTRT_HAVE_CUDNN_FRONTEND

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

namespace {

/// One built graph and the tensors its variant pack binds.
struct AttentionGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  TensorPtr q, k, v, out, dOut, stats, dQ, dK, dV;
  int64_t workspace = 0;
};

/// dlopen of cuDNN, once per process: the library's error if it failed.
const std::string &loadCudnn() {
  static const std::string error = [] {
    // The frontend opens a CUDA runtime of its own for a few calls, the
    // first of libcudart.so.12 and .13 it finds: ours (CUDA 13, already
    // loaded) unless told otherwise.
    setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", "libcudart.so.13", 0);
    const char *name = std::getenv("MEGATRON_CUDNN_LIBRARY");
    if (!name || !*name)
      name = "libcudnn.so.9";
    fe::cudnn_dlhandle = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    if (fe::cudnn_dlhandle)
      return std::string();
    const char *why = dlerror();
    return std::string("cannot load ") + name + ": " +
           (why ? why : "unknown error") +
           " (set MEGATRON_CUDNN_LIBRARY to cuDNN 9's libcudnn.so)";
  }();
  return error;
}

/// The frontend's error as a message, or "" when it is good.
std::string failure(fe::error_t status) {
  return status.is_good() ? std::string() : status.get_message();
}

} // namespace

struct CudnnAttention::Impl {
  cudnnHandle_t handle = nullptr;
  std::map<GraphKey, AttentionGraph> graphs;
  std::map<GraphKey, std::string> refused;
  int64_t workspace = 0;

  ~Impl() { close(); }

  void close() {
    graphs.clear();
    refused.clear();
    workspace = 0;
    if (handle)
      fe::detail::destroy_handle(handle);
    handle = nullptr;
  }

  /// Builds the forward or backward graph of `shape`; "" or the reason it
  /// cannot be built.
  std::string build(const CudnnAttentionShape &shape, AttentionGraph &built) {
    const int64_t b = shape.batch, h = shape.heads, s = shape.seq,
                  d = shape.headDim;
    auto graph = std::make_shared<fe::graph::Graph>();
    graph
        ->set_io_data_type(shape.dtype == DType::BF16 ? fe::DataType_t::BFLOAT16
                                                      : fe::DataType_t::HALF)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    // [batch, heads, seq, headDim] views of the artifact's layouts: the
    // fused QKV tensor's chunks, or tensors of their own (keys and values
    // of kvHeads heads).
    const int64_t kvh =
        shape.headMajor && shape.kvHeads > 0 ? shape.kvHeads : h;
    const std::vector<int64_t> dims{b, h, s, d}, kvDims{b, kvh, s, d};
    const std::vector<int64_t> qkvStrides =
        shape.headMajor ? std::vector<int64_t>{h * s * d, s * d, d, 1}
                        : std::vector<int64_t>{s * 3 * h * d, d, 3 * h * d, 1};
    const std::vector<int64_t> kvStrides =
        shape.headMajor ? std::vector<int64_t>{kvh * s * d, s * d, d, 1}
                        : qkvStrides;
    const std::vector<int64_t> mergedStrides{s * h * d, d, h * d, 1};
    const std::vector<int64_t> statsDims{b, h, s, 1},
        statsStrides{h * s, s, 1, 1};
    auto tensor = [&](const char *name, const std::vector<int64_t> &strides,
                      const std::vector<int64_t> &shapeDims) {
      return graph->tensor(fe::graph::Tensor_attributes()
                               .set_name(name)
                               .set_dim(shapeDims)
                               .set_stride(strides));
    };
    built.q = tensor("q", qkvStrides, dims);
    built.k = tensor("k", kvStrides, kvDims);
    built.v = tensor("v", kvStrides, kvDims);
    if (shape.forward) {
      auto options = fe::graph::SDPA_attributes()
                         .set_name("causal_attention")
                         .set_generate_stats(true)
                         .set_causal_mask(true)
                         .set_attn_scale(float(shape.scale));
      auto [out, stats] = graph->sdpa(built.q, built.k, built.v, options);
      out->set_output(true).set_dim(dims).set_stride(mergedStrides);
      stats->set_output(true)
          .set_data_type(fe::DataType_t::FLOAT)
          .set_dim(statsDims)
          .set_stride(statsStrides);
      built.out = out;
      built.stats = stats;
    } else {
      built.out = tensor("out", mergedStrides, dims);
      built.dOut = tensor("d_out", mergedStrides, dims);
      built.stats = graph->tensor(fe::graph::Tensor_attributes()
                                      .set_name("stats")
                                      .set_dim(statsDims)
                                      .set_stride(statsStrides)
                                      .set_data_type(fe::DataType_t::FLOAT));
      // Deterministic: dQ summed in a fixed order, as every other sum of
      // the backend is, so that a step's result does not depend on
      // scheduling (NVIDIA's fp16_bwd sample does the same).
      auto options = fe::graph::SDPA_backward_attributes()
                         .set_name("causal_attention_backward")
                         .set_causal_mask(true)
                         .set_attn_scale(float(shape.scale))
                         .set_deterministic_algorithm(true);
      auto [dQ, dK, dV] =
          graph->sdpa_backward(built.q, built.k, built.v, built.out, built.dOut,
                               built.stats, options);
      dQ->set_output(true).set_dim(dims).set_stride(qkvStrides);
      for (const TensorPtr &gradient : {dK, dV})
        gradient->set_output(true).set_dim(kvDims).set_stride(kvStrides);
      built.dQ = dQ;
      built.dK = dK;
      built.dV = dV;
    }
    // Each step only once the one before it succeeded.
    std::string why = failure(graph->validate());
    if (why.empty())
      why = failure(graph->build_operation_graph(handle));
    if (why.empty())
      why = failure(graph->create_execution_plans({fe::HeurMode_t::A}));
    if (why.empty())
      why = failure(graph->check_support(handle));
    if (why.empty())
      why = failure(graph->build_plans(handle));
    if (why.empty())
      why = failure(graph->get_workspace_size(built.workspace));
    if (!why.empty())
      return why;
    built.graph = graph;
    return "";
  }

  Status execute(std::unordered_map<TensorPtr, void *> &pack,
                 const AttentionGraph &graph, void *workspace) {
    try {
      if (std::string why =
              failure(graph.graph->execute(handle, pack, workspace));
          !why.empty())
        return Status::error("cuDNN attention: " + why);
    } catch (const std::exception &error) {
      return Status::error(std::string("cuDNN attention: ") + error.what());
    }
    return Status::ok();
  }
};

CudnnAttention::CudnnAttention() : impl(std::make_unique<Impl>()) {}
CudnnAttention::~CudnnAttention() = default;

void CudnnAttention::close() { impl->close(); }

bool CudnnAttention::open(cudaStream_t stream, std::string &why) {
  if (impl->handle)
    return true;
  if (const std::string &error = loadCudnn(); !error.empty()) {
    why = error;
    return false;
  }
  try {
    if (fe::detail::create_handle(&impl->handle) != CUDNN_STATUS_SUCCESS) {
      impl->handle = nullptr;
      why = "cudnnCreate failed";
      return false;
    }
    if (fe::detail::set_stream(impl->handle, stream) != CUDNN_STATUS_SUCCESS) {
      impl->close();
      why = "cudnnSetStream failed";
      return false;
    }
  } catch (const std::exception &error) {
    why = error.what();
    return false;
  }
  return true;
}

bool CudnnAttention::supports(const CudnnAttentionShape &shape,
                              std::string &why) {
  GraphKey key = keyOf(shape);
  if (impl->graphs.count(key))
    return true;
  if (auto refused = impl->refused.find(key); refused != impl->refused.end()) {
    why = refused->second;
    return false;
  }
  if (!impl->handle)
    why = "cuDNN is not open";
  else if (shape.dtype != DType::BF16 && shape.dtype != DType::F16)
    why = "fp32 attention stays on the backend's own kernels";
  else if (shape.headDim % 8 != 0 || shape.headDim > 256)
    why = "a head dimension of " + std::to_string(shape.headDim) +
          " (cuDNN takes multiples of 8 up to 256)";
  else if (!shape.headMajor && shape.heads * shape.headDim * 2 % 16 != 0)
    why = "keys and values not 16-byte aligned in the QKV tensor";
  else if (shape.headMajor &&
           (shape.kvHeads <= 0 || shape.heads % shape.kvHeads != 0))
    why = "key and value heads that do not divide the query heads";
  else {
    AttentionGraph graph;
    try {
      why = impl->build(shape, graph);
    } catch (const std::exception &error) {
      why = error.what();
    }
    // The deterministic backward's workspace grows with batch x heads x
    // seq^2 (2 bytes each on Hopper: 8 GiB at 8 x 32 x 4096), allocated
    // beside the arena: past a bound the backend's own kernels run it.
    constexpr int64_t kMaxWorkspace = int64_t(1) << 30;
    if (why.empty() && graph.workspace > kMaxWorkspace)
      why = "cuDNN's deterministic backward needs " +
            std::to_string(graph.workspace >> 20) +
            " MiB of workspace, over the 1024 MiB it may take";
    if (why.empty()) {
      impl->workspace = std::max(impl->workspace, graph.workspace);
      impl->graphs.emplace(key, std::move(graph));
      return true;
    }
  }
  impl->refused.emplace(key, why);
  return false;
}

int64_t CudnnAttention::workspaceBytes() const { return impl->workspace; }

Status CudnnAttention::forward(const CudnnAttentionShape &shape, const void *q,
                               const void *k, const void *v, void *out,
                               float *lse, void *workspace) {
  auto found = impl->graphs.find(keyOf(shape));
  if (found == impl->graphs.end() || !shape.forward)
    return Status::error("cuDNN attention: no forward graph for this shape");
  const AttentionGraph &graph = found->second;
  std::unordered_map<TensorPtr, void *> pack{{graph.q, const_cast<void *>(q)},
                                             {graph.k, const_cast<void *>(k)},
                                             {graph.v, const_cast<void *>(v)},
                                             {graph.out, out},
                                             {graph.stats, lse}};
  return impl->execute(pack, graph, workspace);
}

Status CudnnAttention::backward(const CudnnAttentionShape &shape,
                                const void *dOut, const void *q, const void *k,
                                const void *v, const void *out,
                                const float *lse, void *dQ, void *dK, void *dV,
                                void *workspace) {
  auto found = impl->graphs.find(keyOf(shape));
  if (found == impl->graphs.end() || shape.forward)
    return Status::error("cuDNN attention: no backward graph for this shape");
  const AttentionGraph &graph = found->second;
  std::unordered_map<TensorPtr, void *> pack{
      {graph.q, const_cast<void *>(q)},
      {graph.k, const_cast<void *>(k)},
      {graph.v, const_cast<void *>(v)},
      {graph.out, const_cast<void *>(out)},
      {graph.dOut, const_cast<void *>(dOut)},
      {graph.stats, const_cast<float *>(lse)},
      {graph.dQ, dQ},
      {graph.dK, dK},
      {graph.dV, dV}};
  return impl->execute(pack, graph, workspace);
}

#else // !MTRT_HAVE_CUDNN_FRONTEND

// Built without the cuDNN frontend's headers (scripts/install-deps.sh
// fetches them): attention always runs on the backend's own kernels.
struct CudnnAttention::Impl {};

CudnnAttention::CudnnAttention() : impl(std::make_unique<Impl>()) {}
CudnnAttention::~CudnnAttention() = default;

void CudnnAttention::close() {}

bool CudnnAttention::open(cudaStream_t, std::string &why) {
  why = "this build has no cuDNN frontend (scripts/install-deps.sh fetches "
        "its headers)";
  return false;
}

bool CudnnAttention::supports(const CudnnAttentionShape &, std::string &why) {
  why = "this build has no cuDNN frontend";
  return false;
}

int64_t CudnnAttention::workspaceBytes() const { return 0; }

Status CudnnAttention::forward(const CudnnAttentionShape &, const void *,
                               const void *, const void *, void *, float *,
                               void *) {
  return Status::error("this build has no cuDNN frontend");
}

Status CudnnAttention::backward(const CudnnAttentionShape &, const void *,
                                const void *, const void *, const void *,
                                const void *, const float *, void *, void *,
                                void *, void *) {
  return Status::error("this build has no cuDNN frontend");
}

#endif // MTRT_HAVE_CUDNN_FRONTEND
