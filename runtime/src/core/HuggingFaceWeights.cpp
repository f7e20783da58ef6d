//===- HuggingFaceWeights.cpp - Weights as Hugging Face ships them --------===//

#include "mtrt/HuggingFaceWeights.h"

#include "mtrt/HalfFloat.h"
#include "mtrt/Strings.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace mtrt;
using json = nlohmann::json;

namespace {

/// The directory part of `path` with its slash ("" for a bare name).
std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

/// Hugging Face's index of a split checkpoint: tensor name -> file name.
Status readWeightMap(const std::string &path,
                     std::vector<std::pair<std::string, std::string>> &map) {
  std::ifstream in(path);
  if (!in)
    return Status::error(path + ": cannot open the index");
  std::stringstream text;
  text << in.rdbuf();
  json index = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object())
    return Status::error(path + ": not a JSON object (a safetensors index "
                                "holds {\"weight_map\": {tensor: file}})");
  auto weights = index.find("weight_map");
  if (weights == index.end() || !weights->is_object() || weights->empty())
    return Status::error(path + ": no \"weight_map\" object naming the file "
                                "of each tensor");
  for (auto it = weights->begin(); it != weights->end(); ++it) {
    if (!it->is_string())
      return Status::error(path + ": weight_map['" + it.key() +
                           "'] is not a file name");
    std::string file = it->get<std::string>();
    if (file.empty() || file == "." || file == ".." ||
        file.find('/') != std::string::npos ||
        file == path.substr(path.rfind('/') == std::string::npos
                                ? 0
                                : path.rfind('/') + 1))
      return Status::error(path + ": weight_map['" + it.key() + "'] is '" +
                           file + "', not a file name beside the index");
    map.emplace_back(it.key(), file);
  }
  return Status::ok();
}

} // namespace

bool HuggingFaceWeights::readsDtype(const std::string &dtype) {
  return dtype == "F32" || dtype == "BF16" || dtype == "F16" || dtype == "F64";
}

Status HuggingFaceWeights::open(const std::string &path,
                                const std::set<std::string> &modelNames,
                                HuggingFaceWeights &source) {
  HuggingFaceWeights opened;
  opened.path = path;
  // Each stored tensor: its file and name there.
  std::vector<std::pair<size_t, std::string>> stored;
  if (endsWith(path, ".json")) {
    std::vector<std::pair<std::string, std::string>> map;
    MTRT_RETURN_IF_ERROR(readWeightMap(path, map));
    std::map<std::string, size_t> fileIndex;
    for (const auto &[name, file] : map) {
      auto [it, added] = fileIndex.emplace(file, opened.files.size());
      if (added) {
        SafetensorsFile shard;
        MTRT_RETURN_IF_ERROR(
            SafetensorsFile::open(directoryOf(path) + file, shard));
        opened.files.push_back(std::move(shard));
      }
      if (!opened.files[it->second].contains(name))
        return Status::error(path + ": weight_map puts tensor '" + name +
                             "' in " + file + ", which does not hold it");
      stored.emplace_back(it->second, name);
    }
  } else {
    SafetensorsFile file;
    MTRT_RETURN_IF_ERROR(SafetensorsFile::open(path, file));
    for (const std::string &name : file.names())
      stored.emplace_back(0, name);
    opened.files.push_back(std::move(file));
  }
  const std::string prefix = "transformer.";
  for (const auto &[file, name] : stored) {
    std::string presented = name;
    if (name.rfind(prefix, 0) == 0 && !modelNames.count(name) &&
        modelNames.count(name.substr(prefix.size())))
      presented = name.substr(prefix.size());
    auto [it, added] = opened.tensors.emplace(presented, Tensor{file, name});
    if (!added)
      return Status::error(path + ": tensors '" + it->second.stored +
                           "' and '" + name + "' are both the model's '" +
                           presented + "'");
  }
  source = std::move(opened);
  return Status::ok();
}

std::vector<std::string> HuggingFaceWeights::names() const {
  std::vector<std::string> all;
  for (const auto &entry : tensors)
    all.push_back(entry.first);
  return all;
}

bool HuggingFaceWeights::sameTensor(const std::string &a,
                                    const std::string &b) const {
  auto first = tensors.find(a), second = tensors.find(b);
  if (first == tensors.end() || second == tensors.end())
    return false;
  const SafetensorsFile &fileA = files[first->second.file];
  const SafetensorsFile &fileB = files[second->second.file];
  std::string dtypeA, dtypeB;
  std::vector<int64_t> shapeA, shapeB;
  int64_t bytes = 0;
  if (!fileA.info(first->second.stored, dtypeA, shapeA) ||
      !fileB.info(second->second.stored, dtypeB, shapeB) || dtypeA != dtypeB ||
      shapeA != shapeB || !fileA.byteSize(first->second.stored, bytes))
    return false;
  // In slices: an embedding is hundreds of megabytes.
  constexpr int64_t kSlice = 1 << 22;
  std::vector<uint8_t> sliceA, sliceB;
  for (int64_t at = 0; at < bytes; at += kSlice) {
    int64_t size = std::min(kSlice, bytes - at);
    sliceA.resize(size_t(size));
    sliceB.resize(size_t(size));
    if (!fileA.readSlice(first->second.stored, at, size, sliceA.data()) ||
        !fileB.readSlice(second->second.stored, at, size, sliceB.data()) ||
        sliceA != sliceB)
      return false;
  }
  return true;
}

Status HuggingFaceWeights::info(const std::string &name, std::string &dtype,
                                std::vector<int64_t> &shape) const {
  auto it = tensors.find(name);
  if (it == tensors.end())
    return Status::error(path + ": no tensor '" + name + "'");
  return files[it->second.file].info(it->second.stored, dtype, shape);
}

Status HuggingFaceWeights::readRuns(const std::string &name,
                                    const std::vector<ElementRun> &runs,
                                    float *dst) const {
  auto it = tensors.find(name);
  if (it == tensors.end())
    return Status::error(path + ": no tensor '" + name + "'");
  const SafetensorsFile &file = files[it->second.file];
  const std::string &stored = it->second.stored;
  std::string dtype;
  std::vector<int64_t> shape;
  MTRT_RETURN_IF_ERROR(file.info(stored, dtype, shape));
  if (!readsDtype(dtype))
    return Status::error(file.path() + ": tensor '" + stored + "' has dtype " +
                         dtype + ", not F32, BF16, F16 or F64");
  const int64_t size = safetensorsDtypeSize(dtype);
  std::vector<uint16_t> halves;
  std::vector<double> doubles;
  for (const ElementRun &run : runs) {
    if (run.count <= 0)
      continue;
    const int64_t offset = run.offset * size, bytes = run.count * size;
    if (dtype == "F32") {
      MTRT_RETURN_IF_ERROR(file.readSlice(stored, offset, bytes, dst));
    } else if (dtype == "F64") {
      doubles.resize(size_t(run.count));
      MTRT_RETURN_IF_ERROR(
          file.readSlice(stored, offset, bytes, doubles.data()));
      for (int64_t i = 0; i < run.count; ++i) {
        double value = doubles[size_t(i)];
        if (std::isfinite(value) && std::fabs(value) > double(FLT_MAX)) {
          char shown[32];
          std::snprintf(shown, sizeof(shown), "%g", value);
          return Status::error(file.path() + ": tensor '" + stored +
                               "' holds " + shown + " at element " +
                               std::to_string(run.offset + i) +
                               ", beyond F32's range");
        }
        dst[i] = float(value);
      }
    } else {
      halves.resize(size_t(run.count));
      MTRT_RETURN_IF_ERROR(
          file.readSlice(stored, offset, bytes, halves.data()));
      widenHalves(halves.data(), dst, run.count, dtype == "BF16");
    }
    dst += run.count;
  }
  return Status::ok();
}
