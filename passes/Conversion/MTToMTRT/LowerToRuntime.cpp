//===- LowerToRuntime.cpp - mt functions to mtrt programs -----------------===//
//
// Assigns every tensor value an allocation (persistent, transient, or a view
// of another allocation), plans the transient ones into the arena by
// lifetime, and emits the straight-line program.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/MTToMTRT/Passes.h"

#include "dialects/MT/IR/MTOps.h"
#include "dialects/MTRT/IR/MTRTDialect.h"
#include "megatron/Analysis/MemoryPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "mt-lower-to-runtime"

namespace mlir::mt {
#define GEN_PASS_DEF_LOWERTORUNTIMEPASS
#include "passes/Conversion/MTToMTRT/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

/// Storage for one or more tensor values (views share one allocation).
struct Allocation {
  int64_t bytes = 0;
  bool persistent = false;
  std::string kind; // param, exp_avg, exp_avg_sq, input, activation, ...
  std::string name; // parameter name or input role
  int64_t firstUse = 0;
  int64_t lastUse = 0;
  int64_t offset = 0;
};

int64_t tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() *
         llvm::divideCeil(tensor.getElementTypeBitWidth(), 8);
}

MemRefType memrefFor(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// Sizes of a program's memory, for the plan report.
struct MemoryReport {
  int64_t params = 0, optimizerState = 0, inputs = 0, gradients = 0,
          activations = 0, persistent = 0, arena = 0;
};

struct LowerToRuntimePass
    : public mt::impl::LowerToRuntimePassBase<LowerToRuntimePass> {
  using LowerToRuntimePassBase::LowerToRuntimePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        functions.push_back(function);
    // Every defined function becomes a program; they are the ranks.
    int64_t rank = 0;
    for (func::FuncOp function : functions) {
      if (failed(lower(function, rank++)))
        return signalPassFailure();
      function.erase();
    }
  }

  LogicalResult lower(func::FuncOp function, int64_t rank) {
    if (!function.getBody().hasOneBlock())
      return function.emitOpError()
             << "mt-lower-to-runtime needs a single-block function";
    Block &body = function.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    SmallVector<Allocation> allocs;
    DenseMap<Value, unsigned> allocOf;
    DenseSet<Value> views; // values that share another value's allocation
    DenseSet<unsigned> gradientAllocs;
    auto newAlloc = [&](Value value, Allocation alloc) {
      alloc.bytes = tensorBytes(value.getType());
      allocOf[value] = allocs.size();
      allocs.push_back(std::move(alloc));
    };
    auto alias = [&](Value view, Value source) {
      allocOf[view] = allocOf.lookup(source);
      views.insert(view);
    };

    // Arguments are persistent: the runtime fills them before each step.
    for (BlockArgument arg : body.getArguments()) {
      if (!isa<RankedTensorType>(arg.getType()))
        return function.emitOpError()
               << "argument #" << arg.getArgNumber() << " is not a tensor";
      Allocation alloc;
      alloc.persistent = true;
      unsigned index = arg.getArgNumber();
      auto param =
          function.getArgAttrOfType<StringAttr>(index, MTDialect::getParamAttrName());
      auto state =
          function.getArgAttrOfType<StringAttr>(index, MTDialect::getStateAttrName());
      auto input =
          function.getArgAttrOfType<StringAttr>(index, MTDialect::getInputAttrName());
      if (param) {
        alloc.kind = state ? state.getValue().str() : "param";
        alloc.name = param.getValue().str();
      } else if (input) {
        alloc.kind = "input";
        alloc.name = input.getValue().str();
      } else {
        return function.emitOpError()
               << "argument #" << index
               << " has no role: mark it 'mt.param' or 'mt.input'";
      }
      newAlloc(arg, std::move(alloc));
    }

    // Results of ops: new transient allocations or views.
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator()) {
      int64_t step = ops.size();
      ops.push_back(&op);
      if (failed(checkLowerable(&op)))
        return failure();
      if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
        alias(collapse.getResult(), collapse.getSrc());
      } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
        alias(expand.getResult(), expand.getSrc());
      } else if (auto adamw = dyn_cast<AdamWOp>(op)) {
        alias(adamw.getNewParam(), adamw.getParam());
        alias(adamw.getNewExpAvg(), adamw.getExpAvg());
        alias(adamw.getNewExpAvgSq(), adamw.getExpAvgSq());
        gradientAllocs.insert(allocOf.lookup(adamw.getGrad()));
      } else {
        for (Value result : op.getResults()) {
          Allocation alloc;
          alloc.kind = isa<arith::ConstantOp>(op) ? "constant" : "activation";
          alloc.firstUse = alloc.lastUse = step;
          newAlloc(result, std::move(alloc));
        }
      }
      for (Value operand : op.getOperands()) {
        Allocation &alloc = allocs[allocOf.lookup(operand)];
        alloc.lastUse = std::max(alloc.lastUse, step);
      }
    }
    int64_t end = ops.size();
    for (Value value : ret.getOperands())
      allocs[allocOf.lookup(value)].lastUse = end;
    for (unsigned index : gradientAllocs)
      if (!allocs[index].persistent)
        allocs[index].kind = "gradient";

    // Persistent first, in argument order; then the planned transients.
    int64_t offset = 0;
    SmallVector<BufferLifetime> lifetimes;
    SmallVector<unsigned> transient;
    for (auto [index, alloc] : llvm::enumerate(allocs)) {
      if (alloc.persistent) {
        alloc.offset = offset;
        offset = alignTo(offset + std::max<int64_t>(alloc.bytes, 1), alignment);
      } else {
        lifetimes.push_back({alloc.bytes, alloc.firstUse, alloc.lastUse});
        transient.push_back(index);
      }
    }
    int64_t persistentBytes = offset;
    ArenaPlacement placement =
        placeBuffers(lifetimes, persistentBytes, alignment);
    for (auto [i, index] : llvm::enumerate(transient))
      allocs[index].offset = placement.offsets[i];
    int64_t arena = placement.endBytes;

    // Emit the program.
    OpBuilder builder(function);
    Location loc = function.getLoc();
    auto program = mtrt::ProgramOp::create(
        builder, loc, builder.getStringAttr("rank" + std::to_string(rank)),
        builder.getI64IntegerAttr(rank), builder.getI64IntegerAttr(arena),
        builder.getI64IntegerAttr(persistentBytes));
    Block *programBody = builder.createBlock(&program.getBody());
    builder.setInsertionPointToStart(programBody);

    DenseMap<Value, Value> buffers;
    auto bufferFor = [&](Value value) -> Value {
      if (Value buffer = buffers.lookup(value))
        return buffer;
      const Allocation &alloc = allocs[allocOf.lookup(value)];
      auto buffer = mtrt::BufferOp::create(
          builder, value.getLoc(), memrefFor(value.getType()),
          builder.getI64IntegerAttr(alloc.offset),
          builder.getStringAttr(alloc.kind),
          alloc.name.empty() ? StringAttr() : builder.getStringAttr(alloc.name),
          views.contains(value) ? builder.getUnitAttr() : UnitAttr());
      buffers[value] = buffer;
      return buffer;
    };
    for (BlockArgument arg : body.getArguments())
      bufferFor(arg);

    for (Operation *op : ops) {
      if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op)) {
        bufferFor(op->getResult(0));
        continue;
      }
      if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
        auto splat = cast<SplatElementsAttr>(constant.getValue());
        mtrt::FillOp::create(
            builder, op->getLoc(), bufferFor(constant.getResult()),
            builder.getF64FloatAttr(
                splat.getSplatValue<APFloat>().convertToDouble()));
        continue;
      }
      SmallVector<Value> ins, outs;
      for (Value operand : op->getOperands())
        ins.push_back(bufferFor(operand));
      for (Value result : op->getResults())
        outs.push_back(bufferFor(result));
      mtrt::KernelOp::create(
          builder, op->getLoc(),
          builder.getStringAttr(op->getName().stripDialect()), ins, outs,
          op->getAttrDictionary());
      ++numKernels;
    }
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      auto role = function.getResultAttrOfType<StringAttr>(
          index, MTDialect::getOutputAttrName());
      if (role)
        mtrt::OutputOp::create(builder, ret.getLoc(), role, bufferFor(value));
    }
    arenaBytes += arena;

    if (printMemoryPlan)
      printPlan(function.getName(), allocs, persistentBytes, arena);
    return success();
  }

  /// Rejects ops the runtime has no kernel for, before anything is emitted.
  LogicalResult checkLowerable(Operation *op) {
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op))
      return success();
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto type = dyn_cast<RankedTensorType>(constant.getType());
      if (isa<SplatElementsAttr>(constant.getValue()) && type &&
          isa<FloatType>(type.getElementType()))
        return success();
      return op->emitOpError()
             << "cannot be lowered to the runtime: only splat float tensor "
                "constants are supported";
    }
    if (!isa<MTDialect>(op->getDialect()))
      return op->emitOpError() << "cannot be lowered to the runtime";
    auto needsStream = [&](double probability,
                           IntegerAttr stream) -> LogicalResult {
      if (probability == 0.0 || stream)
        return success();
      return op->emitOpError()
             << "has no rng_stream: run mt-autodiff before "
                "mt-lower-to-runtime";
    };
    if (auto dropout = dyn_cast<DropoutOp>(op))
      return needsStream(dropout.getProbability().convertToDouble(),
                         dropout.getRngStreamAttr());
    if (auto attention = dyn_cast<AttentionOp>(op))
      return needsStream(attention.getDropout().convertToDouble(),
                         attention.getRngStreamAttr());
    return success();
  }

  void printPlan(StringRef name, ArrayRef<Allocation> allocs,
                 int64_t persistentBytes, int64_t arena) {
    MemoryReport report;
    for (const Allocation &alloc : allocs) {
      if (alloc.kind == "param")
        report.params += alloc.bytes;
      else if (alloc.kind == "exp_avg" || alloc.kind == "exp_avg_sq")
        report.optimizerState += alloc.bytes;
      else if (alloc.kind == "input")
        report.inputs += alloc.bytes;
      else if (alloc.kind == "gradient")
        report.gradients += alloc.bytes;
      else
        report.activations += alloc.bytes;
    }
    llvm::outs() << "memory plan @" << name << "\n"
                 << "  parameters: " << report.params << " bytes\n"
                 << "  optimizer state: " << report.optimizerState
                 << " bytes\n"
                 << "  inputs: " << report.inputs << " bytes\n"
                 << "  persistent (aligned): " << persistentBytes
                 << " bytes\n"
                 << "  gradients (sum): " << report.gradients << " bytes\n"
                 << "  activations and workspace (sum): "
                 << report.activations << " bytes\n"
                 << "  transient peak: " << arena - persistentBytes
                 << " bytes\n"
                 << "  planned peak: " << arena << " bytes\n";
  }
};
} // namespace
