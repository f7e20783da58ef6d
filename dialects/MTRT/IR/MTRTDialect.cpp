//===- MTRTDialect.cpp - The runtime-program dialect ----------------------===//

#include "dialects/MTRT/IR/MTRTDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

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

// The getters of I64Attr return unsigned values: sizes are read signed here
// so that negative ones are reported as such.
LogicalResult ProgramOp::verify() {
  int64_t arena = getArenaBytesAttr().getInt();
  int64_t persistent = getPersistentBytesAttr().getInt();
  if (arena < 0 || arena > kMaxArenaBytes)
    return emitOpError() << "arena_bytes must be between 0 and 2^60, got "
                         << arena;
  if (persistent < 0 || persistent > arena)
    return emitOpError() << "persistent_bytes " << persistent
                         << " must be between 0 and arena_bytes " << arena;
  return success();
}

LogicalResult BufferOp::verify() {
  auto program = (*this)->getParentOfType<ProgramOp>();
  int64_t offset = getOffsetAttr().getInt();
  int64_t arena = program.getArenaBytesAttr().getInt();
  int64_t bytes = bufferBytes(getType());
  int64_t end;
  if (offset < 0 || llvm::AddOverflow(offset, bytes, end) || end > arena)
    return emitOpError() << "bytes [" << offset << ", " << offset << " + "
                         << bytes << ") lie outside the arena of " << arena
                         << " bytes";
  if (bool(getExpertNames()) != bool(getExpertAxis()))
    return emitOpError() << "expert_names and expert_axis go together";
  if (getExpertNames() && (getExpertNames()->empty() || !getName() ||
                           getExpertNames()->getValue()[0] != getNameAttr()))
    return emitOpError() << "expert_names must start with the buffer's name";
  // A parameter's rows in a published fused tensor (the artifact's
  // params[].fused_in).
  if (DictionaryAttr fused = getFusedInAttr()) {
    auto tensor = fused.getAs<StringAttr>("tensor");
    auto row = fused.getAs<IntegerAttr>("row");
    if (getKind() != "param" || fused.size() != 2 || !tensor ||
        tensor.getValue().empty() || !row || row.getInt() < 0 ||
        getType().getRank() == 0)
      return emitOpError()
             << "fused_in must be {tensor = \"name\", row = R} with a "
                "non-negative row, on a param buffer with rows, got "
             << fused << " on a '" << getKind() << "' buffer";
  }
  if (std::optional<uint64_t> valid = getValidRows()) {
    // The padded vocabulary's true rows, at most the full tensor's (the
    // attribute is read signed, as the artifact stores it).
    int64_t rows = 0;
    if (getFullShape())
      rows = getFullShape()->empty() ? 0 : (*getFullShape())[0];
    else if (getType().getRank() > 0)
      rows = getType().getDimSize(0);
    if (int64_t(*valid) < 1 || int64_t(*valid) > rows)
      return emitOpError() << "valid_rows " << int64_t(*valid)
                           << " must be between 1 and the tensor's " << rows
                           << " rows";
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/MTRT/IR/MTRTOps.cpp.inc"
