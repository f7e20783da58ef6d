//===- HuggingFaceWeights.h - Weights as Hugging Face ships them -*- C++ -*-=//
//
// --load-params reads full tensors from what Hugging Face publishes: one
// safetensors file, or a `model.safetensors.index.json` whose "weight_map"
// names the file of every tensor (the checkpoints of 7B parameters and
// more are split in several). Published LLaMA-family weights are BF16:
// tensors may be F32, BF16, F16 or F64, widened (F64 rounded) to F32 as
// they are read. A GPT-2 saved with its head (GPT2LMHeadModel) names its
// tensors under "transformer."; where the model has the name without that
// prefix and not with it, the prefix is dropped.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_HUGGINGFACEWEIGHTS_H
#define MTRT_HUGGINGFACEWEIGHTS_H

#include "mtrt/CheckpointShards.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace mtrt {

class HuggingFaceWeights final : public TensorSource {
public:
  /// Opens `path` (a .safetensors file, or an index .json and every file it
  /// names) for a model whose parameters are `modelNames`.
  static Status open(const std::string &path,
                     const std::set<std::string> &modelNames,
                     HuggingFaceWeights &source);

  const std::string &location() const override { return path; }
  std::vector<std::string> names() const override;
  bool contains(const std::string &name) const override {
    return tensors.count(name) != 0;
  }
  /// The dtype is the file's (F32, BF16, F16 or F64 are read as F32).
  Status info(const std::string &name, std::string &dtype,
              std::vector<int64_t> &shape) const override;
  Status readRuns(const std::string &name, const std::vector<ElementRun> &runs,
                  float *dst) const override;

  /// Whether readRuns converts tensors of safetensors dtype `dtype`.
  static bool readsDtype(const std::string &dtype);

  /// Whether tensors `a` and `b` hold the same dtype, shape and bytes (a
  /// tied head saved beside its embedding).
  bool sameTensor(const std::string &a, const std::string &b) const;

private:
  struct Tensor {
    size_t file;
    /// The name in its file (with the "transformer." prefix, if any).
    std::string stored;
  };
  std::string path;
  std::vector<SafetensorsFile> files;
  std::map<std::string, Tensor> tensors;
};

} // namespace mtrt

#endif // MTRT_HUGGINGFACEWEIGHTS_H
