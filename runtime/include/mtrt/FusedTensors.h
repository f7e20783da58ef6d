//===- FusedTensors.h - Parameters published as rows of one tensor -*- C++
//-*-=//
//
// Some families publish several of a layer's projections as one tensor:
// Phi-3's qkv_proj holds the q, k and v projections' rows one after
// another, its gate_up_proj the gate's then the up projection's. The
// compiled model keeps them as parameters of their own (as LLaMA's, so
// that tensor parallelism splits each by its heads or features); each
// states where the published tensor holds it (ParamDesc::fusedIn). This
// view of a weights file presents such a parameter under its own name,
// reading its rows of the fused tensor, so that loading, strictness and
// shape checks see the model's names.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_FUSEDTENSORS_H
#define MTRT_FUSEDTENSORS_H

#include "mtrt/Artifact.h"
#include "mtrt/CheckpointShards.h"
#include "mtrt/Safetensors.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mtrt {

class FusedTensorView final : public TensorSource {
public:
  /// Over `file`, for the model's parameters `params` (both outlive it).
  FusedTensorView(const TensorSource &file,
                  const std::vector<ParamDesc> &params);

  const std::string &location() const override { return file.location(); }
  /// The file's names, a fused tensor's replaced by the names of the
  /// parameters it holds (those the file lacks under their own names).
  std::vector<std::string> names() const override;
  bool contains(const std::string &name) const override;
  /// A parameter read from a fused tensor has its own shape, once the
  /// tensor is checked to hold its rows (an error names both otherwise).
  Status info(const std::string &name, std::string &dtype,
              std::vector<int64_t> &shape) const override;
  Status readRuns(const std::string &name, const std::vector<ElementRun> &runs,
                  float *dst) const override;

private:
  /// The parameter `name` if the file holds it only in its fused tensor.
  const ParamDesc *fusedOnly(const std::string &name) const;

  const TensorSource &file;
  std::map<std::string, const ParamDesc *> fused;
};

/// `tensors` (full tensors under the model's names, as --save-params
/// writes them) with the parameters that published weights store as rows
/// of one tensor concatenated into it, in place of the first of them: a
/// Phi-3's q, k and v projections written as its qkv_proj, so that the
/// file loads where the family's published weights do. A fused tensor
/// whose rows its parameters do not tile from row 0 (an artifact edited
/// by hand) keeps them under their own names.
void fuseAsPublished(const std::vector<ParamDesc> &params,
                     std::vector<std::pair<std::string, HostTensor>> &tensors);

} // namespace mtrt

#endif // MTRT_FUSEDTENSORS_H
