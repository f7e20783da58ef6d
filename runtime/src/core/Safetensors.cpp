//===- Safetensors.cpp - Read and write .safetensors files ----------------===//

#include "mtrt/Safetensors.h"

#include "mtrt/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mtrt;

namespace {

const char *const kMetadataKey = "__metadata__";

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::string formatRange(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

/// product(shape) * elementSize, or -1 if it overflows int64_t.
int64_t checkedByteSize(const std::vector<int64_t> &shape,
                        int64_t elementSize) {
  int64_t total = elementSize;
  for (int64_t dim : shape)
    if (__builtin_mul_overflow(total, dim, &total))
      return -1;
  return total;
}

/// Reads a JSON value that must be a non-negative integer representable as
/// int64_t (nlohmann parses such numbers as unsigned).
bool getNonNegative(const nlohmann::json &value, int64_t &out) {
  if (!value.is_number_unsigned())
    return false;
  uint64_t raw = value.get<uint64_t>();
  if (raw > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return false;
  out = static_cast<int64_t>(raw);
  return true;
}

/// Whether `text` can be written as a JSON string: nlohmann refuses to dump
/// invalid UTF-8, and a header that cannot be dumped cannot be written.
bool isValidUtf8(const std::string &text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::exception &) {
    return false;
  }
}

} // namespace

int64_t mtrt::safetensorsDtypeSize(const std::string &dtype) {
  static const std::map<std::string, int64_t> sizes = {
      {"BOOL", 1},    {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},     {"BF16", 2},
      {"I32", 4},     {"U32", 4}, {"F32", 4}, {"I64", 8},     {"U64", 8},
      {"F64", 8},     {"C64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// Owns the file descriptor shared by copies of a SafetensorsFile.
class SafetensorsFile::FileHandle {
public:
  explicit FileHandle(int fd) : fd(fd) {}
  ~FileHandle() { ::close(fd); }
  FileHandle(const FileHandle &) = delete;
  FileHandle &operator=(const FileHandle &) = delete;

  /// Reads exactly `size` bytes at absolute `offset`; `what` names the
  /// object being read for the error message.
  Status readAt(const std::string &path, const std::string &what,
                int64_t offset, int64_t size, void *dst) const {
    char *out = static_cast<char *>(dst);
    int64_t done = 0;
    while (done < size) {
      ssize_t n = ::pread(fd, out + done, static_cast<size_t>(size - done),
                          static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return Status::error(path + ": " + what + ": cannot read " +
                             std::to_string(size) + " bytes at file offset " +
                             std::to_string(offset) + ": " +
                             std::strerror(errno));
      if (n == 0)
        return Status::error(path + ": " + what + ": file ended at offset " +
                             std::to_string(offset + done) + " while reading " +
                             std::to_string(size) + " bytes at offset " +
                             std::to_string(offset) +
                             " (was it truncated after it was opened?)");
      done += n;
    }
    return Status::ok();
  }

  int fd;
};

Status SafetensorsFile::open(const std::string &path, SafetensorsFile &file) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever;
  // what is not a regular file is refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Status::error(
        path + ": cannot open safetensors file: " + std::strerror(errno));
  auto handle = std::make_shared<FileHandle>(fd);

  struct stat info;
  if (::fstat(fd, &info) != 0)
    return Status::error(
        path + ": cannot stat safetensors file: " + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return Status::error(path + ": not a regular file");
  int64_t fileSize = static_cast<int64_t>(info.st_size);

  if (fileSize < 8)
    return Status::error(path + ": file is " + std::to_string(fileSize) +
                         " bytes, too short for the 8-byte header length of "
                         "a safetensors file");
  uint8_t lengthBytes[8];
  MTRT_RETURN_IF_ERROR(
      handle->readAt(path, "header length", 0, 8, lengthBytes));
  uint64_t headerLength = 0;
  for (int i = 7; i >= 0; --i)
    headerLength = (headerLength << 8) | lengthBytes[i];
  if (headerLength > static_cast<uint64_t>(fileSize - 8))
    return Status::error(path + ": header length " +
                         std::to_string(headerLength) +
                         " extends beyond the file, which has only " +
                         std::to_string(fileSize - 8) +
                         " bytes after the 8-byte length (is this a "
                         "safetensors file?)");
  // The format's own bound (safetensors' MAX_HEADER_SIZE): a damaged
  // length in a multi-gigabyte shard would otherwise read gigabytes before
  // the JSON fails.
  constexpr uint64_t kMaxHeaderBytes = 100000000;
  if (headerLength > kMaxHeaderBytes)
    return Status::error(path + ": header length " +
                         std::to_string(headerLength) +
                         " is more than the format's limit of " +
                         std::to_string(kMaxHeaderBytes) + " bytes");
  int64_t dataStart = 8 + static_cast<int64_t>(headerLength);
  int64_t dataSize = fileSize - dataStart;

  std::string headerText(headerLength, '\0');
  MTRT_RETURN_IF_ERROR(handle->readAt(
      path, "header", 8, static_cast<int64_t>(headerLength), &headerText[0]));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(headerText);
  } catch (const nlohmann::json::exception &e) {
    return Status::error(path + ": the " + std::to_string(headerLength) +
                         "-byte header is not valid JSON: " + e.what());
  }
  if (!header.is_object())
    return Status::error(path + ": the header is a JSON " +
                         std::string(header.type_name()) +
                         ", not an object mapping tensor names to entries");

  std::map<std::string, Entry> entries;
  std::map<std::string, std::string> metadata;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const nlohmann::json &value = it.value();
    if (name == kMetadataKey) {
      if (!value.is_object())
        return Status::error(path + ": \"__metadata__\" is a JSON " +
                             std::string(value.type_name()) +
                             ", not an object of strings");
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string())
          return Status::error(
              path + ": \"__metadata__\" key '" + m.key() + "' is a JSON " +
              std::string(m.value().type_name()) + ", not a string");
        metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }

    std::string where = path + ": tensor '" + name + "': ";
    if (!value.is_object())
      return Status::error(where + "entry is a JSON " +
                           std::string(value.type_name()) + ", not an object");
    for (const char *field : {"dtype", "shape", "data_offsets"})
      if (!value.contains(field))
        return Status::error(where + "entry has no \"" + field + "\"");

    Entry entry;
    const nlohmann::json &dtype = value["dtype"];
    if (!dtype.is_string())
      return Status::error(where + "\"dtype\" is a JSON " +
                           std::string(dtype.type_name()) + ", not a string");
    entry.dtype = dtype.get<std::string>();
    int64_t elementSize = safetensorsDtypeSize(entry.dtype);
    if (elementSize == 0)
      return Status::error(where + "unknown dtype '" + entry.dtype + "'");

    const nlohmann::json &shape = value["shape"];
    if (!shape.is_array())
      return Status::error(where + "\"shape\" is a JSON " +
                           std::string(shape.type_name()) +
                           ", not a list of dimensions");
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t dim;
      if (!getNonNegative(shape[d], dim))
        return Status::error(where + "shape dimension " + std::to_string(d) +
                             " is " + shape[d].dump() +
                             ", not a non-negative integer");
      entry.shape.push_back(dim);
    }

    const nlohmann::json &offsets = value["data_offsets"];
    int64_t begin, end;
    if (!offsets.is_array() || offsets.size() != 2 ||
        !getNonNegative(offsets[0], begin) || !getNonNegative(offsets[1], end))
      return Status::error(where + "\"data_offsets\" is " + offsets.dump() +
                           ", not [begin, end] of non-negative integers");
    if (begin > end)
      return Status::error(where + "data_offsets " + formatRange(begin, end) +
                           " are out of order: begin is after end");
    if (end > dataSize)
      return Status::error(where + "data_offsets " + formatRange(begin, end) +
                           " extend beyond the data section, which has " +
                           std::to_string(dataSize) + " bytes (file " +
                           std::to_string(fileSize) + " bytes, header " +
                           std::to_string(headerLength) + " bytes)");
    int64_t expected = checkedByteSize(entry.shape, elementSize);
    if (expected < 0)
      return Status::error(where + "shape " + formatShape(entry.shape) +
                           " is too large: its byte size overflows");
    if (end - begin != expected)
      return Status::error(where + "data_offsets " + formatRange(begin, end) +
                           " hold " + std::to_string(end - begin) +
                           " bytes but shape " + formatShape(entry.shape) +
                           " of " + entry.dtype + " needs " +
                           std::to_string(expected) + " bytes");
    entry.begin = dataStart + begin;
    entry.end = dataStart + end;
    entries.emplace(name, std::move(entry));
  }

  // Two tensors sharing bytes would make a write to one corrupt the other;
  // no writer produces that, so it means the header is damaged.
  std::vector<std::pair<const std::string *, const Entry *>> byOffset;
  for (const auto &item : entries)
    byOffset.push_back({&item.first, &item.second});
  std::sort(byOffset.begin(), byOffset.end(), [](const auto &a, const auto &b) {
    return std::make_pair(a.second->begin, a.second->end) <
           std::make_pair(b.second->begin, b.second->end);
  });
  for (size_t i = 1; i < byOffset.size(); ++i) {
    const Entry &prev = *byOffset[i - 1].second;
    const Entry &next = *byOffset[i].second;
    if (next.begin < prev.end)
      return Status::error(
          path + ": tensors '" + *byOffset[i - 1].first + "' (data_offsets " +
          formatRange(prev.begin - dataStart, prev.end - dataStart) +
          ") and '" + *byOffset[i].first + "' (data_offsets " +
          formatRange(next.begin - dataStart, next.end - dataStart) +
          ") overlap");
  }
  // The tensors fill the data section exactly, as the format's reference
  // reader requires (safetensors' validate: InvalidOffset,
  // MetadataIncompleteBuffer): bytes that belong to no tensor mean a header
  // that lost an entry, or a file appended to, which no writer produces.
  int64_t covered = 0;
  const std::string *previous = nullptr;
  for (const auto &[name, entry] : byOffset) {
    if (entry->begin - dataStart > covered)
      return Status::error(
          path + ": bytes [" + std::to_string(covered) + ", " +
          std::to_string(entry->begin - dataStart) + ") of the data section, " +
          (previous ? "between tensors '" + *previous + "' and '" + *name + "'"
                    : "before the first tensor '" + *name + "'") +
          ", belong to no tensor (a safetensors file's tensors fill its data "
          "section)");
    covered = entry->end - dataStart;
    previous = name;
  }
  if (covered != dataSize)
    return Status::error(
        path + ": the last " + std::to_string(dataSize - covered) +
        " bytes of the data section " +
        (previous ? "(after tensor '" + *previous + "') " : "") +
        "belong to no tensor (a safetensors file's tensors fill its data "
        "section; was the file appended to?)");

  file.filePath = path;
  file.handle = std::move(handle);
  file.entries = std::move(entries);
  file.metadataMap = std::move(metadata);
  return Status::ok();
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto &item : entries)
    order.push_back({item.second.begin, item.first});
  std::stable_sort(
      order.begin(), order.end(),
      [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<std::string> result;
  for (auto &item : order)
    result.push_back(std::move(item.second));
  return result;
}

bool SafetensorsFile::contains(const std::string &name) const {
  return entries.count(name) != 0;
}

const SafetensorsFile::Entry *
SafetensorsFile::find(const std::string &name) const {
  auto it = entries.find(name);
  return it == entries.end() ? nullptr : &it->second;
}

Status SafetensorsFile::missing(const std::string &name) const {
  if (!handle)
    return Status::error("safetensors: tensor '" + name +
                         "' requested from a file that was never opened");
  return Status::error(filePath + ": no tensor named '" + name +
                       "' (file has " + std::to_string(entries.size()) +
                       " tensors)");
}

Status SafetensorsFile::info(const std::string &name, std::string &dtype,
                             std::vector<int64_t> &shape) const {
  const Entry *entry = find(name);
  if (!entry)
    return missing(name);
  dtype = entry->dtype;
  shape = entry->shape;
  return Status::ok();
}

Status SafetensorsFile::byteSize(const std::string &name, int64_t &size) const {
  const Entry *entry = find(name);
  if (!entry)
    return missing(name);
  size = entry->end - entry->begin;
  return Status::ok();
}

Status SafetensorsFile::read(const std::string &name,
                             std::vector<uint8_t> &bytes) const {
  const Entry *entry = find(name);
  if (!entry)
    return missing(name);
  bytes.resize(static_cast<size_t>(entry->end - entry->begin));
  return handle->readAt(filePath, "tensor '" + name + "'", entry->begin,
                        entry->end - entry->begin, bytes.data());
}

Status SafetensorsFile::readSlice(const std::string &name, int64_t offsetBytes,
                                  int64_t sizeBytes, void *dst) const {
  const Entry *entry = find(name);
  if (!entry)
    return missing(name);
  int64_t tensorBytes = entry->end - entry->begin;
  if (offsetBytes < 0 || sizeBytes < 0 || offsetBytes > tensorBytes ||
      sizeBytes > tensorBytes - offsetBytes)
    return Status::error(filePath + ": tensor '" + name + "': slice of " +
                         std::to_string(sizeBytes) + " bytes at offset " +
                         std::to_string(offsetBytes) +
                         " is outside the tensor's " +
                         std::to_string(tensorBytes) + " bytes");
  if (sizeBytes == 0)
    return Status::ok();
  if (!dst)
    return Status::error(filePath + ": tensor '" + name +
                         "': slice destination is null");
  return handle->readAt(filePath,
                        "tensor '" + name + "' slice at offset " +
                            std::to_string(offsetBytes),
                        entry->begin + offsetBytes, sizeBytes, dst);
}

Status mtrt::readSafetensors(const std::string &path,
                             std::map<std::string, HostTensor> &out) {
  out.clear();
  SafetensorsFile file;
  MTRT_RETURN_IF_ERROR(SafetensorsFile::open(path, file));
  for (const std::string &name : file.names()) {
    HostTensor tensor;
    MTRT_RETURN_IF_ERROR(file.info(name, tensor.dtype, tensor.shape));
    MTRT_RETURN_IF_ERROR(file.read(name, tensor.bytes));
    out.emplace(name, std::move(tensor));
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

Status mtrt::writeSafetensors(
    const std::string &path,
    const std::vector<std::pair<std::string, HostTensor>> &tensors,
    const std::map<std::string, std::string> &metadata) {
  // ordered_json keeps the entries in the order of the data, which makes the
  // header readable and matches the order readers list tensors in.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto &item : metadata) {
      if (!isValidUtf8(item.first) || !isValidUtf8(item.second))
        return Status::error(path + ": \"__metadata__\" key '" + item.first +
                             "' or its value is not valid UTF-8");
      meta[item.first] = item.second;
    }
    header[kMetadataKey] = std::move(meta);
  }

  std::set<std::string> seen;
  int64_t offset = 0;
  for (const auto &item : tensors) {
    const std::string &name = item.first;
    const HostTensor &tensor = item.second;
    std::string where = path + ": tensor '" + name + "': ";
    if (name == kMetadataKey)
      return Status::error(where + "the name is reserved for metadata");
    if (!seen.insert(name).second)
      return Status::error(where + "the name appears twice");
    if (!isValidUtf8(name))
      return Status::error(where + "the name is not valid UTF-8");
    int64_t elementSize = safetensorsDtypeSize(tensor.dtype);
    if (elementSize == 0)
      return Status::error(where + "unknown dtype '" + tensor.dtype + "'");
    for (size_t d = 0; d < tensor.shape.size(); ++d)
      if (tensor.shape[d] < 0)
        return Status::error(where + "shape " + formatShape(tensor.shape) +
                             " has a negative dimension " + std::to_string(d));
    int64_t expected = checkedByteSize(tensor.shape, elementSize);
    if (expected < 0)
      return Status::error(where + "shape " + formatShape(tensor.shape) +
                           " is too large: its byte size overflows");
    if (static_cast<int64_t>(tensor.bytes.size()) != expected)
      return Status::error(
          where + "has " + std::to_string(tensor.bytes.size()) +
          " bytes but shape " + formatShape(tensor.shape) + " of " +
          tensor.dtype + " needs " + std::to_string(expected) + " bytes");
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = tensor.dtype;
    entry["shape"] = tensor.shape;
    entry["data_offsets"] = {offset, offset + expected};
    header[name] = std::move(entry);
    offset += expected;
  }

  std::string headerText = header.dump();
  // Hugging Face pads with spaces (valid JSON whitespace) so that the data
  // section starts 8-byte aligned.
  headerText.append((8 - headerText.size() % 8) % 8, ' ');
  uint8_t lengthBytes[8];
  uint64_t headerLength = headerText.size();
  for (int i = 0; i < 8; ++i)
    lengthBytes[i] = static_cast<uint8_t>(headerLength >> (8 * i));

  std::vector<FileChunk> chunks;
  chunks.push_back({lengthBytes, sizeof(lengthBytes)});
  chunks.push_back({headerText.data(), headerText.size()});
  for (const auto &item : tensors)
    if (!item.second.bytes.empty())
      chunks.push_back({item.second.bytes.data(), item.second.bytes.size()});
  return writeFileAtomically(path, chunks);
}
