//===- ConfigReader.h - Typed keys of a Hugging Face config -----*- C++ -*-===//
//
// Shared by the importers of every model family (GPT-2, LLaMA, ...).
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_LIB_IMPORT_CONFIGREADER_H
#define MEGATRON_LIB_IMPORT_CONFIGREADER_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace mlir::mt::detail {

/// `value` as the errors show a number from the config (%g: 0.1, 500000).
inline std::string shown(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// The deepest nesting of objects and arrays a config may have. Real configs
/// nest three levels; llvm::json parses and frees values recursively, so a
/// file nested 100,000 levels deep would overflow the stack.
constexpr int kMaxConfigNesting = 64;

/// The offset of the bracket that opens level kMaxConfigNesting + 1 of
/// `text` (strings skipped), or npos when `text` nests no deeper.
inline size_t tooDeepAt(StringRef text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '{' || c == '[') {
      if (++depth > kMaxConfigNesting)
        return i;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"';)
        i += text[i] == '\\' ? 2 : 1;
    }
  }
  return StringRef::npos;
}

/// `text` parsed as JSON, or an error at `loc` (a file's 1:1): invalid JSON,
/// or nesting deeper than kMaxConfigNesting, reported at the bracket that
/// opens the level too many before the recursive parser sees it.
inline FailureOr<llvm::json::Value> parseConfigJson(StringRef text,
                                                    Location loc) {
  if (size_t at = tooDeepAt(text); at != StringRef::npos) {
    Location where = loc;
    if (auto fileLoc = dyn_cast<FileLineColLoc>(loc)) {
      StringRef before = text.take_front(at);
      where = FileLineColLoc::get(fileLoc.getFilename(), 1 + before.count('\n'),
                                  1 + at - (before.rfind('\n') + 1));
    }
    return emitError(where) << "config nests objects and arrays more than "
                            << kMaxConfigNesting << " levels deep";
  }
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return emitError(loc) << "config is not valid JSON: "
                          << llvm::toString(parsed.takeError());
  return std::move(*parsed);
}

/// `text` parsed as a JSON object: parseConfigJson's errors, or one at `loc`
/// for JSON that is no object.
inline FailureOr<llvm::json::Value> parseConfigObject(StringRef text,
                                                      Location loc) {
  FailureOr<llvm::json::Value> parsed = parseConfigJson(text, loc);
  if (succeeded(parsed) && !parsed->getAsObject())
    return emitError(loc) << "config must be a JSON object";
  return parsed;
}

/// Reads typed keys from a config object; every error names the key, the
/// value found and the line of the key in the file.
class ConfigReader {
public:
  static constexpr int64_t kMaxSize = int64_t(1) << 24;
  /// The importer writes every layer out as IR, and every later pass walks
  /// it: 1024 is eight times the deepest published model (LLaMA 3.1 405B
  /// has 126 layers), while 2^24 layers would exhaust memory.
  static constexpr int64_t kMaxLayers = 1024;

  ConfigReader(const llvm::json::Object &object, StringRef text, Location loc)
      : object(object), text(text), whole(text), loc(loc) {}

  /// A reader of the object under this reader's key `parent` (rope_scaling,
  /// text_config.rope_scaling): its errors name the key as `parent.key` and
  /// point at the key inside the object where it is written, else at
  /// `parent`.
  ConfigReader nested(const llvm::json::Object &fields,
                      StringRef parent) const {
    ConfigReader reader(fields, text, keyLoc(parent));
    reader.prefix = prefix + (parent + ".").str();
    reader.whole = whole;
    reader.base = base;
    // The object's own text, where `parent`'s value is one.
    size_t at = keyOffset(parent);
    if (at != StringRef::npos && !anchor) {
      size_t open = text.find_first_of("{[", text.find(':', at));
      size_t close = open == StringRef::npos ? open : closingBracket(open);
      if (open != StringRef::npos && text[open] == '{' &&
          close != StringRef::npos) {
        reader.text = text.slice(open, close + 1);
        reader.base = base + open;
        return reader;
      }
    }
    reader.anchor = true;
    return reader;
  }

  /// The offset in `text` of the top-level `"key":` (the last one, as the
  /// parser keeps the last of duplicate keys), or npos. Keys inside nested
  /// objects and inside strings are skipped.
  size_t keyOffset(StringRef key) const {
    size_t found = StringRef::npos;
    int depth = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        --depth;
      } else if (c == '"') {
        size_t start = i++;
        while (i < text.size() && text[i] != '"')
          i += text[i] == '\\' ? 2 : 1;
        StringRef token = text.slice(start + 1, std::min(i, text.size()));
        StringRef rest = text.drop_front(std::min(i + 1, text.size())).ltrim();
        if (depth == 1 && token == key && rest.starts_with(":"))
          found = start;
      }
    }
    return found;
  }

  /// The offset of the bracket closing the one at `open` (strings
  /// skipped), or npos.
  size_t closingBracket(size_t open) const {
    int depth = 0;
    for (size_t i = open; i < text.size(); ++i) {
      char c = text[i];
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0)
          return i;
      } else if (c == '"') {
        for (++i; i < text.size() && text[i] != '"';)
          i += text[i] == '\\' ? 2 : 1;
      }
    }
    return StringRef::npos;
  }

  /// The location of the top-level `"key":` in the file, or of the file
  /// (of the parent key, for a nested reader) when absent.
  Location keyLoc(StringRef key) const {
    auto fileLoc = dyn_cast<FileLineColLoc>(loc);
    if (!fileLoc || anchor)
      return loc;
    size_t found = keyOffset(key);
    if (found == StringRef::npos)
      return loc;
    StringRef before = whole.take_front(base + found);
    unsigned line = 1 + before.count('\n');
    unsigned column = 1 + (base + found) - (before.rfind('\n') + 1);
    return FileLineColLoc::get(fileLoc.getFilename(), line, column);
  }

  /// The config object itself, for keys of nested objects.
  const llvm::json::Object &json() const { return object; }

  /// `key` as errors name it (`parent.key` in a nested reader).
  std::string keyName(StringRef key) const { return prefix + key.str(); }

  InFlightDiagnostic error(StringRef key) {
    return emitError(keyLoc(key)) << "config key '" << prefix << key << "' ";
  }

  /// A required positive integer.
  FailureOr<int64_t> positiveInt(StringRef key) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return missing(key);
    return positiveInt(key, *value);
  }

  /// The error for a required `key` that is absent.
  InFlightDiagnostic missing(StringRef key) {
    return emitError(loc) << "config is missing required key '" << prefix << key
                          << "'";
  }

  /// A required positive number.
  FailureOr<double> requiredPositiveNumber(StringRef key) {
    if (!object.get(key))
      return missing(key);
    return positiveNumber(key, 0.0);
  }

  /// A required number of layers, at most kMaxLayers.
  FailureOr<int64_t> layerCount(StringRef key) {
    FailureOr<int64_t> layers = positiveInt(key);
    if (succeeded(layers) && *layers > kMaxLayers)
      return error(key) << "is " << *layers << ", more than the largest "
                        << "supported number of layers " << kMaxLayers;
    return layers;
  }

  /// An optional positive integer; null or absent gives `fallback`.
  FailureOr<int64_t> optionalPositiveInt(StringRef key, int64_t fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->getAsNull())
      return fallback;
    return positiveInt(key, *value);
  }

  /// An optional integer >= 0 (a layer index, say); null or absent gives
  /// `fallback`.
  FailureOr<int64_t> optionalNonNegativeInt(StringRef key, int64_t fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->getAsNull())
      return fallback;
    std::optional<int64_t> result = value->getAsInteger();
    if (!result)
      return error(key) << "must be an integer, got " << show(*value);
    if (*result < 0)
      return error(key) << "must not be negative, got " << *result;
    return *result;
  }

  /// An optional probability in [0, 1).
  FailureOr<double> probability(StringRef key, double fallback) {
    FailureOr<double> value = number(key, fallback);
    if (failed(value))
      return failure();
    if (!(*value >= 0.0 && *value < 1.0))
      return error(key) << "must be a probability in [0, 1), got "
                        << show(*object.get(key));
    return value;
  }

  /// An optional positive number.
  FailureOr<double> positiveNumber(StringRef key, double fallback) {
    FailureOr<double> value = number(key, fallback);
    if (failed(value))
      return failure();
    if (!(*value > 0.0) || !std::isfinite(*value))
      return error(key) << "must be a positive finite number, got "
                        << show(*object.get(key));
    return value;
  }

  /// An optional finite number >= 0 (a loss's weight); null or absent
  /// gives `fallback`.
  FailureOr<double> nonNegativeNumber(StringRef key, double fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->getAsNull())
      return fallback;
    FailureOr<double> result = number(key, fallback);
    if (failed(result))
      return failure();
    if (!(*result >= 0.0) || !std::isfinite(*result))
      return error(key) << "must be a finite number >= 0, got " << show(*value);
    return result;
  }

  FailureOr<bool> boolean(StringRef key, bool fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return fallback;
    if (std::optional<bool> result = value->getAsBoolean())
      return *result;
    return error(key) << "must be a boolean, got " << show(*value);
  }

  /// An optional string that must be one of `allowed`.
  LogicalResult oneOf(StringRef key, ArrayRef<StringRef> allowed,
                      StringRef why) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return success();
    std::optional<StringRef> str = value->getAsString();
    if (!str)
      return error(key) << "must be a string, got " << show(*value);
    if (llvm::is_contained(allowed, *str))
      return success();
    return error(key) << "is \"" << *str << "\"; " << why;
  }

private:
  static std::string show(const llvm::json::Value &value) {
    return llvm::formatv("{0}", value).str();
  }

  FailureOr<int64_t> positiveInt(StringRef key,
                                 const llvm::json::Value &value) {
    std::optional<int64_t> result = value.getAsInteger();
    if (!result)
      return error(key) << "must be an integer, got " << show(value);
    if (*result <= 0)
      return error(key) << "must be positive, got " << *result;
    // Far above any real model, and low enough that products of sizes
    // (vocab x hidden, 4 x hidden) cannot overflow.
    if (*result > kMaxSize)
      return error(key) << "is " << *result << ", more than the largest "
                        << "supported size " << kMaxSize;
    return *result;
  }

  FailureOr<double> number(StringRef key, double fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return fallback;
    if (std::optional<double> result = value->getAsNumber())
      return *result;
    return error(key) << "must be a number, got " << show(*value);
  }

  const llvm::json::Object &object;
  /// The object's text (a nested reader's: its object's, which starts at
  /// offset `base` of the file's text, `whole`).
  StringRef text;
  StringRef whole;
  size_t base = 0;
  Location loc;
  /// For a nested reader: "parent." before each key it names; its missing
  /// keys are reported at `loc`, the parent's key, and with `anchor` (its
  /// object's text not found) every error.
  std::string prefix;
  bool anchor = false;
};

} // namespace mlir::mt::detail

#endif // MEGATRON_LIB_IMPORT_CONFIGREADER_H
