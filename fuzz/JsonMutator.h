//===- JsonMutator.h - Structure-aware mutations of JSON inputs -*- C++ -*-===//
//
// libFuzzer's byte mutations rarely keep a JSON document valid, and the
// readers fuzzed here reject invalid JSON at once; a value of the wrong type
// ("alias": 1 for true) takes several lucky edits in a row. The mutator here
// parses the input, makes one edit of the document (a value replaced by one
// of another type or an extreme number, an integer nudged, an element
// removed, duplicated, swapped or copied over another) and writes it back.
// Harnesses use it for part of their mutations (LLVMFuzzerCustomMutator)
// and libFuzzer's own byte mutations for the rest.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_FUZZ_JSONMUTATOR_H
#define MEGATRON_FUZZ_JSONMUTATOR_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

/// libFuzzer's own mutation of `data`, for custom mutators to fall back on.
extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace megatron::fuzz {

namespace detail {

using json = nlohmann::json;

inline void collect(json &node, std::vector<json *> &nodes, int depth) {
  nodes.push_back(&node);
  if (depth > 64 || !node.is_structured())
    return;
  for (json &child : node)
    collect(child, nodes, depth + 1);
}

inline json interesting(std::minstd_rand &rng, const json &old) {
  switch (rng() % 22) {
  case 0:
    return nullptr;
  case 1:
    return true;
  case 2:
    return false;
  case 3:
    return 0;
  case 4:
    return -1;
  case 5:
    return 1;
  case 6:
    return std::numeric_limits<int64_t>::max();
  case 7:
    return std::numeric_limits<int64_t>::min();
  case 8:
    return std::numeric_limits<uint64_t>::max();
  case 9:
    return uint64_t(1) << 63;
  case 10:
    return 1e300;
  case 11:
    return -0.5;
  case 12:
    return 0.5;
  case 13:
    return std::string();
  case 14:
    return "x";
  case 15:
    return json::array();
  case 16:
    return json::object();
  case 17:
    return json::array({old});
  case 18:
    return int64_t(1) << 31;
  case 19:
    return int64_t(1) << 56;
  case 20:
    return 1.0000000001;
  default:
    return int64_t(rng() % 8);
  }
}

inline void nudge(std::minstd_rand &rng, json &node) {
  int64_t value = node.is_number_unsigned()
                      ? int64_t(node.get<uint64_t>() & INT64_MAX)
                      : node.get<int64_t>();
  switch (rng() % 6) {
  case 0:
    value = value == INT64_MAX ? value : value + 1;
    break;
  case 1:
    value = value == INT64_MIN ? value : value - 1;
    break;
  case 2:
    value = value > INT64_MAX / 2 || value < INT64_MIN / 2 ? value : value * 2;
    break;
  case 3:
    value = value == INT64_MIN ? value : -value;
    break;
  case 4:
    value /= 2;
    break;
  default:
    value = int64_t(rng() % 64);
    break;
  }
  node = value;
}

} // namespace detail

/// One structural edit of the JSON document `text`, chosen by `seed`.
/// Returns false (and leaves `text` alone) if `text` is not JSON.
inline bool mutateJson(std::string &text, unsigned seed) {
  using detail::json;
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded())
    return false;
  std::minstd_rand rng(seed);
  std::vector<json *> nodes;
  detail::collect(document, nodes, 0);
  json *node = nodes[rng() % nodes.size()];
  json *other = nodes[rng() % nodes.size()];
  switch (rng() % 8) {
  case 0:
  case 1:
    *node = detail::interesting(rng, *node);
    break;
  case 2:
  case 3:
    if (node->is_number_integer())
      detail::nudge(rng, *node);
    else
      *node = detail::interesting(rng, *node);
    break;
  case 4: // remove an element or a key
    if (node->is_array() && !node->empty())
      node->erase(node->begin() + ptrdiff_t(rng() % node->size()));
    else if (node->is_object() && !node->empty()) {
      auto it = node->begin();
      std::advance(it, ptrdiff_t(rng() % node->size()));
      node->erase(it);
    } else
      *node = detail::interesting(rng, *node);
    break;
  case 5: // duplicate an element, or add a key with another node's value
    if (node->is_array() && !node->empty()) {
      json copy = (*node)[rng() % node->size()];
      node->insert(node->begin() + ptrdiff_t(rng() % (node->size() + 1)),
                   std::move(copy));
    } else if (node->is_object()) {
      // A key from elsewhere in the document, so the names are the format's.
      std::vector<std::string> keys;
      for (json *candidate : nodes)
        if (candidate->is_object())
          for (auto &item : candidate->items())
            keys.push_back(item.key());
      json copy = *other;
      if (!keys.empty())
        (*node)[keys[rng() % keys.size()]] = std::move(copy);
    }
    break;
  case 6: // swap two elements of an array
    if (node->is_array() && node->size() >= 2)
      std::swap((*node)[rng() % node->size()], (*node)[rng() % node->size()]);
    break;
  default: { // one value copied over another
    json copy = *other;
    *node = std::move(copy);
    break;
  }
  }
  text = document.dump();
  return true;
}

/// A LLVMFuzzerCustomMutator body for inputs that are one JSON document:
/// two mutations in three are structural, the rest (and any input that is
/// not JSON) libFuzzer's own.
inline size_t mutateJsonInput(uint8_t *data, size_t size, size_t maxSize,
                              unsigned seed) {
  if (seed % 3 != 0) {
    std::string text(reinterpret_cast<const char *>(data), size);
    if (mutateJson(text, seed) && text.size() <= maxSize) {
      std::memcpy(data, text.data(), text.size());
      return text.size();
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}

} // namespace megatron::fuzz

#endif // MEGATRON_FUZZ_JSONMUTATOR_H
