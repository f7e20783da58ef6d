//===- ShardingInterfaceImpl.h - mt ops' sharding models --------*- C++ -*-===//
//
// Upstream `shard::ShardingInterface` for every `mt` op of a training step
// (and for `tensor.collapse_shape`, which autodiff emits and upstream leaves
// without a model), so that upstream `sharding-propagation` and
// `shard-partition` turn an annotated step into per-device programs.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_DIALECTS_MT_TRANSFORMS_SHARDINGINTERFACEIMPL_H
#define MEGATRON_DIALECTS_MT_TRANSFORMS_SHARDINGINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
namespace mt {

/// Attaches the sharding models of the `mt` ops and of
/// `tensor.collapse_shape`, and upstream's for `func` (returns).
void registerShardingInterfaceExternalModels(DialectRegistry &registry);

} // namespace mt
} // namespace mlir

#endif // MEGATRON_DIALECTS_MT_TRANSFORMS_SHARDINGINTERFACEIMPL_H
