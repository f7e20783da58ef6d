//===- MTRTDialect.cpp - The runtime-program dialect ----------------------===//

#include "dialects/MTRT/IR/MTRTDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::mtrt;

#include "dialects/MTRT/IR/MTRTOpsDialect.cpp.inc"

void MTRTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MTRT/IR/MTRTOps.cpp.inc"
      >();
}

/// Bytes of a buffer: elements times element size.
static int64_t bufferBytes(MemRefType type) {
  return type.getNumElements() *
         llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

LogicalResult ProgramOp::verify() {
  if (getPersistentBytes() < 0 || getPersistentBytes() > getArenaBytes())
    return emitOpError() << "persistent_bytes " << getPersistentBytes()
                         << " must be between 0 and arena_bytes "
                         << getArenaBytes();
  return success();
}

LogicalResult BufferOp::verify() {
  auto program = (*this)->getParentOfType<ProgramOp>();
  int64_t end = getOffset() + bufferBytes(getType());
  if (getOffset() < 0 || end > program.getArenaBytes())
    return emitOpError() << "bytes [" << getOffset() << ", " << end
                         << ") lie outside the arena of "
                         << program.getArenaBytes() << " bytes";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/MTRT/IR/MTRTOps.cpp.inc"
