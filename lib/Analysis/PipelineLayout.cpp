//===- PipelineLayout.cpp - Explicit split of a model into stages ---------===//

#include "megatron/Analysis/PipelineLayout.h"

#include <cctype>
#include <sstream>

using namespace mlir::mt;

namespace {

/// Expands the repetitions of a layout into a plain string of E, t, L
/// and |.
class Expander {
public:
  explicit Expander(const std::string &text) : text(text) {}

  bool expand(std::string &out) {
    if (!sequence(out))
      return false;
    if (pos != text.size())
      return fail("unmatched ')'");
    return true;
  }
  const std::string &error() const { return message; }

private:
  bool sequence(std::string &out) {
    while (pos < text.size() && text[pos] != ')') {
      std::string unit;
      char c = text[pos];
      if (c == '(') {
        size_t open = pos++;
        if (!sequence(unit))
          return false;
        if (pos >= text.size()) {
          pos = open;
          return fail("unmatched '('");
        }
        ++pos; // ')'
      } else if (c == 'E' || c == 't' || c == 'L' || c == '|') {
        unit = std::string(1, c);
        ++pos;
      } else {
        return fail(std::string("unexpected '") + c +
                    "' (expected E, t, L, |, (...) or *N)");
      }
      int64_t count = 1;
      if (pos < text.size() && text[pos] == '*') {
        size_t star = pos++;
        if (pos >= text.size() || !std::isdigit(text[pos])) {
          pos = star;
          return fail("'*' needs a repeat count");
        }
        count = 0;
        while (pos < text.size() && std::isdigit(text[pos])) {
          count = count * 10 + (text[pos++] - '0');
          if (count > 1000000)
            return fail("repeat count too large");
        }
      }
      // Nested repeats multiply: the expansion is bounded as a whole, not
      // only each count (a model has far fewer layers and stages).
      if (unit.size() > 0 &&
          (int64_t(out.size()) + int64_t(unit.size()) * count) > kMaxExpanded)
        return fail("expands to more than " + std::to_string(kMaxExpanded) +
                    " layers and stage breaks");
      for (int64_t i = 0; i < count; ++i)
        out += unit;
    }
    return true;
  }

  static constexpr int64_t kMaxExpanded = 1000000;

  bool fail(const std::string &what) {
    std::ostringstream os;
    os << "layout '" << text << "': " << what << " at position " << pos;
    message = os.str();
    return false;
  }

  const std::string &text;
  size_t pos = 0;
  std::string message;
};

} // namespace

std::variant<std::vector<int64_t>, std::string>
mlir::mt::parsePipelineLayout(const std::string &layout, int64_t stages,
                              int64_t layers) {
  std::string plain;
  Expander expander(layout);
  if (!expander.expand(plain))
    return expander.error();

  std::vector<std::string> segments(1);
  for (char c : plain) {
    if (c == '|')
      segments.emplace_back();
    else
      segments.back() += c;
  }
  std::ostringstream os;
  os << "layout '" << layout << "': ";
  if (int64_t(segments.size()) != stages) {
    os << "has " << segments.size() << " stages, but pp x virtual-stages is "
       << stages;
    return os.str();
  }
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    const std::string &segment = segments[s];
    int64_t count = 0;
    for (size_t i = 0; i < segment.size(); ++i) {
      char c = segment[i];
      if (c == 't') {
        ++count;
        continue;
      }
      bool first = s == 0 && i == 0;
      bool last = s + 1 == segments.size() && i + 1 == segment.size();
      if (c == 'E' && !first) {
        os << "the embedding (E) must open the first stage, found on stage "
           << s;
        return os.str();
      }
      if (c == 'L' && !last) {
        os << "the loss (L) must close the last stage, found on stage " << s;
        return os.str();
      }
    }
    if (count == 0) {
      // The embedding and the head go with the first and last layer's
      // stage (their data flow); a stage of no layer has nothing to run.
      os << "stage " << s
         << " holds no transformer layer (t); every stage needs one";
      return os.str();
    }
    counts.push_back(count);
    total += count;
  }
  if (total != layers) {
    os << "places " << total << " transformer layers, but the model has "
       << layers;
    return os.str();
  }
  return counts;
}
