//===- Status.h - Errors of the megatron runtime ----------------*- C++ -*-===//
//
// Every runtime call that can fail returns a Status: ok, or a message that
// says what was wrong and where (the file, the tensor, the command). No
// exceptions cross the runtime's interfaces.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_STATUS_H
#define MTRT_STATUS_H

#include <string>
#include <utility>

namespace mtrt {

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status status;
    status.failed = true;
    status.text = std::move(message);
    return status;
  }

  bool isOk() const { return !failed; }
  explicit operator bool() const { return !failed; }
  const std::string &message() const { return text; }

private:
  bool failed = false;
  std::string text;
};

/// Returns early from the enclosing function when `expr` fails.
#define MTRT_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    ::mtrt::Status mtrtStatus_ = (expr);                                       \
    if (!mtrtStatus_)                                                          \
      return mtrtStatus_;                                                      \
  } while (false)

} // namespace mtrt

#endif // MTRT_STATUS_H
