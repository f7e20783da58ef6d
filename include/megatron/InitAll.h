//===- InitAll.h - Register everything megatron-mlir provides ---*- C++ -*-===//

#ifndef MEGATRON_INITALL_H
#define MEGATRON_INITALL_H

namespace mlir {
class DialectRegistry;
namespace mt {

/// Adds the megatron dialects (and the upstream ones their passes create).
void registerAllMegatronDialects(DialectRegistry &registry);

/// Registers every megatron pass and pass pipeline with the global registry.
void registerAllMegatronPasses();

} // namespace mt
} // namespace mlir

#endif // MEGATRON_INITALL_H
