//===- FunctionAttributeEditor.h - Batched argument attributes --*- C++ -*-===//
//
// Upstream's FunctionOpInterface::setArgAttr rebuilds the function's whole
// array of argument dictionaries on every call, so setting a few attributes
// on each argument is quadratic in the number of arguments. A training step
// of GPT-3 175B has thousands (parameters and their optimizer state), and
// the passes that describe each one's sharding spent seconds there. This
// editor reads the dictionaries once, edits them in place, and writes them
// back with one call.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_UTILS_FUNCTIONATTRIBUTEEDITOR_H
#define MEGATRON_UTILS_FUNCTIONATTRIBUTEEDITOR_H

#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::mt {

/// Edits of a function's argument and result attributes, written back by
/// `commit` (and by the destructor if not yet committed). Reads see the
/// edits made so far.
class FunctionAttributeEditor {
public:
  explicit FunctionAttributeEditor(FunctionOpInterface function)
      : function(function) {
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      args.emplace_back(function.getArgAttrDict(i));
    for (unsigned i = 0, e = function.getNumResults(); i < e; ++i)
      results.emplace_back(function.getResultAttrDict(i));
  }
  FunctionAttributeEditor(const FunctionAttributeEditor &) = delete;
  FunctionAttributeEditor &operator=(const FunctionAttributeEditor &) = delete;
  ~FunctionAttributeEditor() { commit(); }

  Attribute getArg(unsigned index, StringRef name) const {
    return args[index].get(name);
  }
  template <typename AttrT>
  AttrT getArgOfType(unsigned index, StringRef name) const {
    return llvm::dyn_cast_or_null<AttrT>(getArg(index, name));
  }
  void setArg(unsigned index, StringRef name, Attribute value) {
    args[index].set(name, value);
    dirty = true;
  }

  Attribute getResult(unsigned index, StringRef name) const {
    return results[index].get(name);
  }
  template <typename AttrT>
  AttrT getResultOfType(unsigned index, StringRef name) const {
    return llvm::dyn_cast_or_null<AttrT>(getResult(index, name));
  }
  void setResult(unsigned index, StringRef name, Attribute value) {
    results[index].set(name, value);
    dirty = true;
  }

  /// Writes the edited dictionaries back to the function, each array once.
  void commit() {
    if (!dirty)
      return;
    MLIRContext *context = function->getContext();
    SmallVector<DictionaryAttr> dicts;
    for (const NamedAttrList &attrs : args)
      dicts.push_back(attrs.getDictionary(context));
    function.setAllArgAttrs(dicts);
    dicts.clear();
    for (const NamedAttrList &attrs : results)
      dicts.push_back(attrs.getDictionary(context));
    function.setAllResultAttrs(dicts);
    dirty = false;
  }

private:
  FunctionOpInterface function;
  SmallVector<NamedAttrList> args;
  SmallVector<NamedAttrList> results;
  bool dirty = false;
};

} // namespace mlir::mt

#endif // MEGATRON_UTILS_FUNCTIONATTRIBUTEEDITOR_H
