//===- Strings.h - Small string helpers C++17 lacks -----------*- C++ -*-===//
//
// std::string::ends_with is C++20; the runtime builds as C++17. And the
// spelling of a number, or of a file's text, in a message.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_STRINGS_H
#define MTRT_STRINGS_H

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mtrt {

/// Whether `text` ends with `suffix`.
inline bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Shortest round-trip spelling of `value` ("1e-07", "0", "0.9", "90",
/// "1e+300"), not std::to_string's six decimals (or 301 digits).
inline std::string number(double value) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  // The shortest form of 90 is "9e+01": below 10^9 a number is written
  // with all its integer digits ("90", "1500").
  if (const char *exponent = std::strchr(text, 'e')) {
    int power = std::atoi(exponent + 1);
    if (power >= 0 && power < 9)
      std::snprintf(text, sizeof(text), "%.*g", power + 1, value);
  }
  return text;
}

/// `text` in single quotes for a message, on one line whatever it holds:
/// a newline, a tab, a quote or a backslash escaped as C writes them, any
/// other byte outside printable ASCII as \xNN, and more than `limit` bytes
/// cut with "...".
inline std::string quoted(const std::string &text, size_t limit = 64) {
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\'':
    case '\\':
      out += '\\';
      out += char(c);
      break;
    default:
      if (c >= 0x20 && c < 0x7f) {
        out += char(c);
      } else {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "\\x%02x", c);
        out += hex;
      }
    }
  }
  if (text.size() > limit)
    out += "...";
  return out + "'";
}

} // namespace mtrt

#endif // MTRT_STRINGS_H
