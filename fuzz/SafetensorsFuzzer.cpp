//===- SafetensorsFuzzer.cpp - Fuzz the safetensors reader ----------------===//
//
// Feeds arbitrary bytes to SafetensorsFile::open and readSafetensors, then
// reads every tensor of a file they accept, whole and in slices. A Status
// error is a correct answer; a crash or a sanitizer report is a finding, and
// so is a broken property:
//  - open and readSafetensors agree on whether the file is valid;
//  - every tensor's byte size is product(shape) * dtype size, and its bytes
//    read whole equal the same bytes read slice by slice;
//  - out-of-range slices are refused;
//  - the writer accepts what the reader accepted, and what it writes reads
//    back with the same tensors and metadata.
//
// Two mutations in three edit the parsed JSON header (JsonMutator.h) and
// rewrite the 8-byte length before it, keeping the data section; the rest
// are libFuzzer's bytewise ones.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"
#include "JsonMutator.h"

#include "mtrt/Safetensors.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

using namespace megatron::fuzz;

namespace {

/// Where the round trip writes: writeSafetensors writes `path.tmp` and
/// renames it, which a /proc/self/fd path cannot do. /dev/shm keeps it in
/// memory where it exists.
const std::string &roundTripPath() {
  static const std::string path = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                      : tmp && *tmp                 ? tmp
                                                    : "/tmp";
    std::string file =
        dir + "/safetensors-fuzz-" + std::to_string(getpid()) + ".safetensors";
    std::atexit([] { ::unlink(roundTripPath().c_str()); });
    return file;
  }();
  return path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FuzzFile file("safetensors");
  file.write(data, size);

  mtrt::SafetensorsFile st;
  mtrt::Status opened = mtrt::SafetensorsFile::open(file.path(), st);
  std::map<std::string, mtrt::HostTensor> tensors;
  mtrt::Status read = mtrt::readSafetensors(file.path(), tensors);
  if (verbose())
    std::fprintf(stderr, "open: %s\nreadSafetensors: %s\n",
                 opened ? "ok" : opened.message().c_str(),
                 read ? "ok" : read.message().c_str());
  if (bool(opened) != bool(read))
    fail("open and readSafetensors disagree",
         "open: " + (opened ? std::string("ok") : opened.message()) +
             "\nreadSafetensors: " +
             (read ? std::string("ok") : read.message()));
  if (!opened)
    return 0;

  (void)st.metadata();
  std::vector<std::string> names = st.names();
  if (names.size() != tensors.size())
    fail("names() and readSafetensors list different tensors",
         std::to_string(names.size()) + " vs " +
             std::to_string(tensors.size()));
  for (const std::string &name : names) {
    if (!st.contains(name))
      fail("names() lists a tensor contains() denies", name);
    std::string dtype;
    std::vector<int64_t> shape;
    int64_t bytes = -1;
    if (!st.info(name, dtype, shape) || !st.byteSize(name, bytes))
      fail("info or byteSize fails for a listed tensor", name);
    int64_t expected = mtrt::safetensorsDtypeSize(dtype);
    for (int64_t dim : shape)
      expected *= dim; // open checked the product for overflow
    if (bytes != expected || bytes < 0 || bytes > int64_t(size))
      fail("tensor byte size does not match its shape",
           name + ": " + std::to_string(bytes) + " bytes, expected " +
               std::to_string(expected));

    std::vector<uint8_t> whole;
    if (mtrt::Status s = st.read(name, whole); !s)
      fail("read fails on a validated tensor", s.message());
    const mtrt::HostTensor &tensor = tensors.at(name);
    if (whole != tensor.bytes || tensor.dtype != dtype || tensor.shape != shape)
      fail("read and readSafetensors disagree", name);

    // The same bytes in two slices, and slices that must be refused.
    std::vector<uint8_t> sliced(whole.size() + 1);
    int64_t half = bytes / 2;
    if (!st.readSlice(name, 0, half, sliced.data()) ||
        !st.readSlice(name, half, bytes - half, sliced.data() + half))
      fail("readSlice fails inside a tensor", name);
    sliced.pop_back();
    if (sliced != whole)
      fail("slices differ from the whole tensor", name);
    uint8_t sink[8];
    if (st.readSlice(name, bytes, 1, sink) || st.readSlice(name, -1, 1, sink) ||
        st.readSlice(name, 0, bytes + 1, sink) ||
        st.readSlice(name, 1, INT64_MAX, sink))
      fail("readSlice accepts a slice outside the tensor", name);
  }
  std::vector<uint8_t> none;
  if (st.read("\x01 not a tensor", none))
    fail("read of a missing tensor succeeds", "");

  // Round trip through the writer, in file order.
  std::vector<std::pair<std::string, mtrt::HostTensor>> ordered;
  for (const std::string &name : names)
    ordered.push_back({name, tensors.at(name)});
  const std::string &path = roundTripPath();
  // Everything the reader accepts (valid UTF-8 names, known dtypes, sizes
  // that match the shapes) the writer accepts too.
  if (mtrt::Status w = mtrt::writeSafetensors(path, ordered, st.metadata()); !w)
    fail("writeSafetensors refuses what the reader accepted", w.message());
  std::map<std::string, mtrt::HostTensor> back;
  mtrt::SafetensorsFile reopened;
  if (mtrt::Status r = mtrt::readSafetensors(path, back); !r)
    fail("writeSafetensors' output does not read back", r.message());
  if (mtrt::Status r = mtrt::SafetensorsFile::open(path, reopened); !r)
    fail("writeSafetensors' output does not open", r.message());
  // (The order of names() may change: zero-byte tensors tie with their
  // neighbours once the gaps between tensors are gone.)
  if (reopened.metadata() != st.metadata() || back.size() != tensors.size())
    fail("round trip changes the metadata or the tensor count", "");
  for (const auto &[name, tensor] : tensors) {
    const mtrt::HostTensor &other = back.at(name);
    if (other.dtype != tensor.dtype || other.shape != tensor.shape ||
        other.bytes != tensor.bytes)
      fail("round trip changes a tensor", name);
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  uint64_t length = 0;
  for (int i = 7; size >= 8 && i >= 0; --i)
    length = (length << 8) | data[i];
  if (seed % 3 != 0 && size >= 8 && length <= size - 8) {
    std::string header(reinterpret_cast<const char *>(data) + 8, length);
    if (mutateJson(header, seed)) {
      if (seed & 8) // as writers pad it: to a multiple of 8 bytes
        header.append((8 - header.size() % 8) % 8, ' ');
      size_t rest = size - 8 - size_t(length);
      size_t newSize = 8 + header.size() + rest;
      if (newSize <= maxSize) {
        std::memmove(data + 8 + header.size(), data + 8 + length, rest);
        std::memcpy(data + 8, header.data(), header.size());
        for (int i = 0; i < 8; ++i)
          data[i] = uint8_t(uint64_t(header.size()) >> (8 * i));
        return newSize;
      }
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}
