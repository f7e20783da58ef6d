//===- Safetensors.h - Read and write .safetensors files --------*- C++ -*-===//
//
// The Hugging Face safetensors format, used for GPT-2 weights and for the
// runtime's checkpoints:
//
//   8 bytes      N, the header length, unsigned little-endian
//   N bytes      a JSON object, padded with spaces:
//                  {"<tensor>": {"dtype": "F32", "shape": [d0, ...],
//                                "data_offsets": [begin, end]},
//                   ..., "__metadata__": {"<key>": "<string>", ...}}
//   the rest     the data section; a tensor's bytes are
//                [8 + N + begin, 8 + N + end), little-endian, row-major.
//
// Reading validates everything that a later step would otherwise trip over
// (sizes, offsets, dtypes) and says which file and which tensor is wrong.
// It is deliberately more lenient than the Rust library in one respect: gaps
// between tensors and bytes after the last one are accepted, since they do
// not make any tensor ambiguous. Overlapping tensors are rejected.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_SAFETENSORS_H
#define MTRT_SAFETENSORS_H

#include "mtrt/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mtrt {

/// A whole tensor held in host memory, in its file representation.
struct HostTensor {
  /// A safetensors dtype name: "F32", "F16", "BF16", "I32", "I64", ...
  std::string dtype;
  std::vector<int64_t> shape;
  /// product(shape) * safetensorsDtypeSize(dtype) bytes, little-endian.
  std::vector<uint8_t> bytes;
};

/// Bytes per element of the safetensors dtype `dtype` ("F32" -> 4), or 0 if
/// the name is not one this runtime knows. Sub-byte dtypes (F4, F6_*) are
/// not supported.
int64_t safetensorsDtypeSize(const std::string &dtype);

/// A safetensors file opened for reading: the header is parsed and validated
/// up front, tensor data is read only on request, so a tensor-parallel rank
/// can read just its shard of each parameter. Copies share the open file;
/// reads are positional (pread) and safe to issue from several threads.
class SafetensorsFile {
public:
  /// Opens and validates `path`, replacing whatever `file` held. On failure
  /// `file` is left unchanged.
  static Status open(const std::string &path, SafetensorsFile &file);

  const std::string &path() const { return filePath; }

  /// Tensor names in the order of their data in the file.
  std::vector<std::string> names() const;

  bool contains(const std::string &name) const;

  /// The dtype and shape of tensor `name`.
  Status info(const std::string &name, std::string &dtype,
              std::vector<int64_t> &shape) const;

  /// The size in bytes of tensor `name`.
  Status byteSize(const std::string &name, int64_t &size) const;

  /// The `__metadata__` string map (empty if the file has none).
  const std::map<std::string, std::string> &metadata() const {
    return metadataMap;
  }

  /// Reads all bytes of tensor `name` into `bytes` (resized to fit).
  Status read(const std::string &name, std::vector<uint8_t> &bytes) const;

  /// Reads `sizeBytes` bytes starting `offsetBytes` into tensor `name`'s data
  /// into `dst`, touching no other part of the file. The range must lie
  /// within the tensor.
  Status readSlice(const std::string &name, int64_t offsetBytes,
                   int64_t sizeBytes, void *dst) const;

private:
  struct Entry {
    std::string dtype;
    std::vector<int64_t> shape;
    /// Absolute file offsets of the tensor's first and one-past-last byte.
    int64_t begin = 0, end = 0;
  };
  class FileHandle;

  const Entry *find(const std::string &name) const;
  Status missing(const std::string &name) const;

  std::string filePath;
  std::shared_ptr<FileHandle> handle;
  std::map<std::string, Entry> entries;
  std::map<std::string, std::string> metadataMap;
};

/// Reads every tensor of `path` into `out` (cleared first).
Status readSafetensors(const std::string &path,
                       std::map<std::string, HostTensor> &out);

/// Writes `tensors`, data in the given order, to `path` with `metadata` as
/// the `__metadata__` entry (omitted when empty). The header is padded with
/// spaces to a multiple of 8 bytes, as the Hugging Face library does, so the
/// data section starts at a file offset that is a multiple of 8 (readers
/// that map the file can then view 8-byte dtypes in place). The file is
/// written to
/// `path + ".tmp"` and renamed into place; on failure nothing is left at
/// `path + ".tmp"` and a previous file at `path` is untouched. Fails on
/// duplicate or reserved names, unknown dtypes, and byte counts that do not
/// match the shape.
Status
writeSafetensors(const std::string &path,
                 const std::vector<std::pair<std::string, HostTensor>> &tensors,
                 const std::map<std::string, std::string> &metadata = {});

} // namespace mtrt

#endif // MTRT_SAFETENSORS_H
