//===- MTDialect.h - The mt dialect -----------------------------*- C++ -*-===//

#ifndef MEGATRON_DIALECTS_MT_IR_MTDIALECT_H
#define MEGATRON_DIALECTS_MT_IR_MTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/MT/IR/MTOpsDialect.h.inc"

#include "mlir/IR/BuiltinAttributes.h"

#include <optional>

namespace mlir::mt {

/// A parameter's tensor-parallel role, read from its `mt.parallel`.
struct ParallelRole {
  enum class Kind { Column, Row, Vocab, Replicated };
  Kind kind = Kind::Replicated;
  /// The dimension split over the tp ranks (-1 when replicated).
  int64_t dim = -1;
  /// Equal chunks of `dim`, each split separately ([q | k | v]: 3).
  int64_t chunks = 1;

  bool isSplit() const { return kind != Kind::Replicated; }
  /// The `mt.parallel` attribute stating this role.
  DictionaryAttr toAttr(MLIRContext *context) const;
  /// The role `attr` states; std::nullopt if it is not a valid one.
  static std::optional<ParallelRole> fromAttr(Attribute attr);
};

/// A parameter's initializer, read from its `mt.init`.
struct ParamInitializer {
  enum class Kind { Normal, Zeros, Ones };
  Kind kind = Kind::Normal;
  /// Standard deviation of a normal initializer.
  double std = 0.0;

  DictionaryAttr toAttr(MLIRContext *context) const;
  static std::optional<ParamInitializer> fromAttr(Attribute attr);
  /// "normal", "zeros" or "ones".
  StringRef kindName() const;
};

} // namespace mlir::mt

#endif // MEGATRON_DIALECTS_MT_IR_MTDIALECT_H
