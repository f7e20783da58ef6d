//===- Strings.h - Small string helpers C++17 lacks -----------*- C++ -*-===//
//
// std::string::ends_with is C++20; the runtime builds as C++17.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_STRINGS_H
#define MTRT_STRINGS_H

#include <string>

namespace mtrt {

/// Whether `text` ends with `suffix`.
inline bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace mtrt

#endif // MTRT_STRINGS_H
