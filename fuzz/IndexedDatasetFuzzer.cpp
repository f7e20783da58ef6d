//===- IndexedDatasetFuzzer.cpp - Fuzz the indexed-dataset reader ---------===//
//
// Megatron-LM's indexed dataset is two files, PREFIX.idx and PREFIX.bin. The
// input is the .idx's bytes, then the .bin's, with the .idx's length in the
// input's last two bytes (FuzzedDataProvider reads integers from the end).
// Both are in-memory files reached through symbolic links named as the
// format wants. TokenData::open is checked against a reference parse of the
// index written here with 128-bit arithmetic: it must accept exactly the
// well-formed pairs, and then read every token the .bin's bytes hold in the
// element type the .idx names.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "mtrt/TokenData.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <unistd.h>

using namespace megatron::fuzz;

namespace {

/// A directory holding PREFIX.idx and PREFIX.bin as links to two in-memory
/// files, made once.
struct IndexedDatasetFiles {
  FuzzFile index{"dataset-idx"}, tokens{"dataset-bin"};
  std::string directory, prefix;
  IndexedDatasetFiles() {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/indexed-fuzz-XXXXXX";
    if (!::mkdtemp(&pattern[0])) {
      std::perror("IndexedDatasetFuzzer: mkdtemp");
      std::abort();
    }
    directory = pattern;
    prefix = directory + "/data";
    if (::symlink(index.path().c_str(), (prefix + ".idx").c_str()) != 0 ||
        ::symlink(tokens.path().c_str(), (prefix + ".bin").c_str()) != 0) {
      std::perror("IndexedDatasetFuzzer: symlink");
      std::abort();
    }
  }
  ~IndexedDatasetFiles() {
    ::unlink((prefix + ".idx").c_str());
    ::unlink((prefix + ".bin").c_str());
    ::rmdir(directory.c_str());
  }
};

template <typename T> T readAt(const std::string &bytes, size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

/// The element size and signedness the index names, or 0 if it is not a
/// well-formed index of `bin` as TokenData.h describes the format.
int referenceElementSize(const std::string &idx, const std::string &bin,
                         bool &isSigned) {
  if (idx.size() < 34 || std::memcmp(idx.data(), "MMIDIDX\0\0", 9) != 0 ||
      readAt<uint64_t>(idx, 9) != 1)
    return 0;
  int size = 0;
  switch (uint8_t(idx[17])) {
  case 1: size = 1, isSigned = false; break;
  case 2: size = 1, isSigned = true; break;
  case 3: size = 2, isSigned = true; break;
  case 4: size = 4, isSigned = true; break;
  case 5: size = 8, isSigned = true; break;
  case 8: size = 2, isSigned = false; break;
  default: return 0;
  }
  unsigned __int128 sequences = readAt<uint64_t>(idx, 18);
  unsigned __int128 documents = readAt<uint64_t>(idx, 26);
  unsigned __int128 tables = 34 + 12 * sequences + 8 * documents;
  if (idx.size() != tables && idx.size() != tables + sequences)
    return 0;
  __int128 offset = 0;
  for (size_t i = 0; i < size_t(sequences); ++i) {
    int32_t length = readAt<int32_t>(idx, 34 + 4 * i);
    int64_t pointer = readAt<int64_t>(idx, 34 + 4 * size_t(sequences) + 8 * i);
    if (length < 0 || pointer != offset)
      return 0;
    offset += __int128(length) * size;
  }
  if (offset != __int128(bin.size()))
    return 0;
  int64_t previous = 0;
  size_t at = 34 + 12 * size_t(sequences);
  for (size_t d = 0; d < size_t(documents); ++d) {
    int64_t boundary = readAt<int64_t>(idx, at + 8 * d);
    if ((d == 0 && boundary != 0) || boundary < previous ||
        __int128(boundary) > __int128(sequences) ||
        (d + 1 == size_t(documents) && __int128(boundary) != __int128(sequences)))
      return 0;
    previous = boundary;
  }
  return size;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static IndexedDatasetFiles files;
  FuzzedDataProvider input(data, size);
  size_t indexSize = input.ConsumeIntegral<uint16_t>();
  std::string idx = input.ConsumeBytesAsString(indexSize);
  std::string bin = input.ConsumeRemainingBytesAsString();
  files.index.write(idx);
  files.tokens.write(bin);

  mtrt::TokenData tokens;
  mtrt::Status opened = mtrt::TokenData::open(files.prefix, tokens);
  if (verbose())
    std::fprintf(stderr, "open (%zu + %zu bytes): %s\n", idx.size(), bin.size(),
                 opened ? tokens.format().c_str() : opened.message().c_str());
  bool isSigned = false;
  int elementSize = referenceElementSize(idx, bin, isSigned);
  if (bool(opened) != (elementSize > 0))
    fail(opened ? "open accepts a malformed indexed dataset"
                : "open refuses a well-formed indexed dataset",
         opened ? tokens.format() : opened.message());
  if (!opened)
    return 0;
  if (tokens.numTokens() != int64_t(bin.size()) / elementSize)
    fail("numTokens is not the .bin's size over the element size",
         std::to_string(tokens.numTokens()));
  for (int64_t i = 0; i < tokens.numTokens(); ++i) {
    int64_t expected = 0;
    size_t at = size_t(i) * size_t(elementSize);
    switch (elementSize) {
    case 1:
      expected = isSigned ? int64_t(int8_t(bin[at])) : int64_t(uint8_t(bin[at]));
      break;
    case 2:
      expected = isSigned ? int64_t(readAt<int16_t>(bin, at))
                          : int64_t(readAt<uint16_t>(bin, at));
      break;
    case 4:
      expected = readAt<int32_t>(bin, at);
      break;
    default:
      expected = readAt<int64_t>(bin, at);
    }
    if (tokens.token(i) != expected)
      fail("token() differs from the .bin's bytes", std::to_string(i));
  }
  return 0;
}
