//===- FusedTensors.cpp - Parameters published as rows of one tensor ------===//

#include "mtrt/FusedTensors.h"

#include <algorithm>
#include <set>

using namespace mtrt;

FusedTensorView::FusedTensorView(const TensorSource &file,
                                 const std::vector<ParamDesc> &params)
    : file(file) {
  for (const ParamDesc &param : params)
    if (!param.fusedIn.empty())
      fused[param.name] = &param;
}

const ParamDesc *FusedTensorView::fusedOnly(const std::string &name) const {
  auto it = fused.find(name);
  if (it == fused.end() || file.contains(name) ||
      !file.contains(it->second->fusedIn))
    return nullptr;
  return it->second;
}

std::vector<std::string> FusedTensorView::names() const {
  // Each fused tensor stands for the parameters read from it.
  std::map<std::string, std::vector<std::string>> held;
  for (const auto &[name, param] : fused)
    if (fusedOnly(name))
      held[param->fusedIn].push_back(name);
  std::vector<std::string> names;
  for (const std::string &name : file.names()) {
    auto it = held.find(name);
    if (it == held.end())
      names.push_back(name);
    else
      names.insert(names.end(), it->second.begin(), it->second.end());
  }
  return names;
}

bool FusedTensorView::contains(const std::string &name) const {
  return file.contains(name) || fusedOnly(name);
}

Status FusedTensorView::info(const std::string &name, std::string &dtype,
                             std::vector<int64_t> &shape) const {
  const ParamDesc *param = fusedOnly(name);
  if (!param)
    return file.info(name, dtype, shape);
  std::vector<int64_t> whole;
  MTRT_RETURN_IF_ERROR(file.info(param->fusedIn, dtype, whole));
  // Rows fusedRow to fusedRow + rows of a tensor whose other dimensions
  // are the parameter's.
  int64_t rows = param->shape.front();
  bool holds =
      whole.size() == param->shape.size() && !whole.empty() &&
      std::equal(whole.begin() + 1, whole.end(), param->shape.begin() + 1) &&
      param->fusedRow <= whole.front() &&
      rows <= whole.front() - param->fusedRow;
  if (!holds)
    return Status::error(
        location() + ": tensor '" + param->fusedIn + "' has shape " +
        shapeString(whole) + ", which does not hold rows " +
        std::to_string(param->fusedRow) + " to " +
        std::to_string(param->fusedRow + rows) + " of shape " +
        shapeString(param->shape) + " for parameter '" + name + "'");
  shape = param->shape;
  return Status::ok();
}

Status FusedTensorView::readRuns(const std::string &name,
                                 const std::vector<ElementRun> &runs,
                                 float *dst) const {
  const ParamDesc *param = fusedOnly(name);
  if (!param)
    return file.readRuns(name, runs, dst);
  // The parameter's rows are contiguous in the fused tensor, from row
  // fusedRow on (info checked that they lie within it).
  int64_t rowElements = 1;
  for (size_t d = 1; d < param->shape.size(); ++d)
    rowElements *= param->shape[d];
  std::vector<ElementRun> shifted = runs;
  for (ElementRun &run : shifted)
    run.offset += param->fusedRow * rowElements;
  return file.readRuns(param->fusedIn, shifted, dst);
}

/// The saved tensors of a fused tensor's parameters (by row) if they tile
/// its rows from 0 on, one after another, with one dtype and equal
/// trailing dimensions; else none.
static std::vector<const HostTensor *>
tilingParts(const std::map<int64_t, std::string> &rows,
            const std::map<std::string, size_t> &position,
            const std::vector<std::pair<std::string, HostTensor>> &tensors) {
  std::vector<const HostTensor *> parts;
  int64_t next = 0;
  for (const auto &[row, name] : rows) {
    auto it = position.find(name);
    if (it == position.end() || row != next)
      return {};
    const HostTensor &part = tensors[it->second].second;
    const HostTensor *first = parts.empty() ? &part : parts.front();
    if (part.shape.empty() || part.dtype != first->dtype ||
        !std::equal(part.shape.begin() + 1, part.shape.end(),
                    first->shape.begin() + 1, first->shape.end()))
      return {};
    parts.push_back(&part);
    next += part.shape.front();
  }
  return parts;
}

void mtrt::fuseAsPublished(
    const std::vector<ParamDesc> &params,
    std::vector<std::pair<std::string, HostTensor>> &tensors) {
  // Each fused tensor's parameters, by row.
  std::map<std::string, std::map<int64_t, std::string>> members;
  for (const ParamDesc &param : params)
    if (!param.fusedIn.empty())
      members[param.fusedIn][param.fusedRow] = param.name;
  if (members.empty())
    return;
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < tensors.size(); ++i)
    position[tensors[i].first] = i;
  std::set<std::string> fusedAway;
  for (const auto &[fused, rows] : members) {
    if (position.count(fused))
      continue; // already saved under its own name
    std::vector<const HostTensor *> parts =
        tilingParts(rows, position, tensors);
    if (parts.empty())
      continue;
    HostTensor whole;
    whole.dtype = parts.front()->dtype;
    whole.shape = parts.front()->shape;
    whole.shape.front() = 0;
    for (const HostTensor *part : parts) {
      whole.shape.front() += part->shape.front();
      whole.bytes.insert(whole.bytes.end(), part->bytes.begin(),
                         part->bytes.end());
    }
    // In place of its first parameter; the others leave.
    auto first = rows.begin();
    tensors[position[first->second]] = {fused, std::move(whole)};
    for (auto it = std::next(first); it != rows.end(); ++it)
      fusedAway.insert(it->second);
  }
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                               [&](const auto &entry) {
                                 return fusedAway.count(entry.first) != 0;
                               }),
                tensors.end());
}
