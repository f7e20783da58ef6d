//===- Strings.h - Small string helpers C++17 lacks -----------*- C++ -*-===//
//
// std::string::ends_with is C++20; the runtime builds as C++17. And the
// spelling of a number in a message.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_STRINGS_H
#define MTRT_STRINGS_H

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mtrt {

/// Whether `text` ends with `suffix`.
inline bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Shortest round-trip spelling of `value` ("1e-07", "0", "0.9",
/// "1e+300"), not std::to_string's six decimals (or 301 digits).
inline std::string number(double value) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
}

} // namespace mtrt

#endif // MTRT_STRINGS_H
