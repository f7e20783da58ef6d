//===- MTDialect.cpp - The mt dialect -------------------------------------===//
//
// Registration of the mt ops and verification of the dialect's attributes
// (`mt.param` on function arguments, `mt.layer` on ops).
//
//===----------------------------------------------------------------------===//

#include "dialects/MT/IR/MTDialect.h"
#include "dialects/MT/IR/MTOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::mt;

#include "dialects/MT/IR/MTOpsDialect.cpp.inc"

void MTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MT/IR/MTOps.cpp.inc"
      >();
}

LogicalResult MTDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == getLayerAttrName()) {
    auto layer = dyn_cast<IntegerAttr>(attr.getValue());
    if (!layer || layer.getType().isIndex() || layer.getValue().isNegative())
      return op->emitOpError() << "attribute '" << name
                               << "' must be a non-negative integer, got "
                               << attr.getValue();
    return success();
  }
  if (name == getParamAttrName())
    return op->emitOpError()
           << "attribute '" << name
           << "' belongs on a function argument, not on an operation";
  return op->emitOpError() << "unknown mt dialect attribute '" << name << "'";
}

LogicalResult MTDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name != getParamAttrName())
    return op->emitOpError() << "unknown mt dialect argument attribute '"
                             << name << "' on argument #" << argIndex;
  auto paramName = dyn_cast<StringAttr>(attr.getValue());
  if (!paramName || paramName.getValue().empty())
    return op->emitOpError() << "argument #" << argIndex << ": '" << name
                             << "' must be a non-empty string, got "
                             << attr.getValue();
  Value arg = op->getRegion(regionIndex).getArgument(argIndex);
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  if (!type || !type.hasStaticShape() ||
      !isa<FloatType>(type.getElementType()))
    return op->emitOpError()
           << "argument #" << argIndex << " ('" << paramName.getValue()
           << "') is a parameter and must be a statically shaped float "
              "tensor, got "
           << arg.getType();

  // Two arguments naming the same checkpoint tensor would make loading and
  // saving ambiguous. Report the pair once, at the later argument.
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function || regionIndex != 0)
    return success();
  for (unsigned other = 0; other < argIndex; ++other) {
    auto otherName =
        function.getArgAttrOfType<StringAttr>(other, getParamAttrName());
    if (otherName == paramName)
      return op->emitOpError()
             << "arguments #" << other << " and #" << argIndex
             << " both name parameter '" << paramName.getValue() << "'";
  }
  return success();
}
