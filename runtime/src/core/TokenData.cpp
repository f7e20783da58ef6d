//===- TokenData.cpp - Tokenized training data ----------------------------===//

#include "mtrt/TokenData.h"

#include "mtrt/Strings.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mtrt;

/// Owns the read-only mapping shared by copies of a TokenData. The file
/// descriptor is closed right after mapping; the mapping keeps the pages.
class TokenData::Mapping {
public:
  Mapping(void *address, size_t size) : address(address), size(size) {}
  ~Mapping() { ::munmap(address, size); }
  Mapping(const Mapping &) = delete;
  Mapping &operator=(const Mapping &) = delete;

  void *address;
  size_t size;
};

namespace {
bool isRegularFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

/// Megatron-LM's .idx: "MMIDIDX\0\0", version (u64) 1, the element type's
/// code (u8), the sequence and document counts (u64 each), then the
/// sequences' lengths (i32), byte offsets (i64) and the document indices
/// (i64), and for a multimodal dataset each sequence's mode (i8).
const char kIndexMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
constexpr int64_t kIndexHeaderBytes = 9 + 8 + 1 + 8 + 8;

template <typename T> T readLittleEndian(const uint8_t *at) {
  T value;
  std::memcpy(&value, at,
              sizeof(T)); // the hosts we build for are little-endian
  return value;
}
} // namespace

std::string TokenData::tokenFileOf(const std::string &path) {
  if (!isRegularFile(path) && isRegularFile(path + ".bin") &&
      isRegularFile(path + ".idx"))
    return path + ".bin";
  return path;
}

Status TokenData::mapFile(const std::string &path, const std::string &what,
                          std::shared_ptr<Mapping> &mapping, int64_t &size) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever;
  // what is not a regular file is refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Status::error(path + ": cannot open " + what + ": " +
                         std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int err = errno;
    ::close(fd);
    return Status::error(path + ": cannot stat " + what + ": " +
                         std::strerror(err));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status::error(path + ": " + what + " is not a regular file");
  }
  size = static_cast<int64_t>(info.st_size);
  mapping.reset();
  // mmap rejects empty ranges; an empty file simply has no bytes.
  if (size > 0) {
    void *address = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ,
                           MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return Status::error(path + ": cannot map " + what + ": " +
                           std::strerror(err));
    }
    mapping = std::make_shared<Mapping>(address, static_cast<size_t>(size));
  }
  ::close(fd);
  return Status::ok();
}

Status TokenData::readIndex(const std::string &indexPath, int64_t binSize,
                            TokenData &data) {
  std::shared_ptr<Mapping> index;
  int64_t size = 0;
  MTRT_RETURN_IF_ERROR(mapFile(indexPath, "index file", index, size));
  auto bad = [&](const std::string &what) {
    return Status::error(indexPath + ": " + what +
                         " (not a Megatron-LM indexed dataset index)");
  };
  const uint8_t *at =
      index ? static_cast<const uint8_t *>(index->address) : nullptr;
  if (size < kIndexHeaderBytes || std::memcmp(at, kIndexMagic, 9) != 0)
    return bad("does not start with the header MMIDIDX");
  uint64_t version = readLittleEndian<uint64_t>(at + 9);
  if (version != 1)
    return bad("version " + std::to_string(version) + ", not 1");
  uint8_t code = at[17];
  struct ElementType {
    uint8_t code;
    const char *name;
    int size;
    bool isSigned;
  };
  static const ElementType kTypes[] = {
      {1, "uint8", 1, false}, {2, "int8", 1, true},  {3, "int16", 2, true},
      {4, "int32", 4, true},  {5, "int64", 8, true}, {8, "uint16", 2, false}};
  const ElementType *type = nullptr;
  for (const ElementType &candidate : kTypes)
    if (candidate.code == code)
      type = &candidate;
  if (!type)
    return bad(code == 6 || code == 7
                   ? std::string("its elements are floating-point, not "
                                 "token ids")
                   : "element type code " + std::to_string(code) +
                         " is none of uint8, int8, int16, int32, int64, "
                         "uint16");
  uint64_t sequences = readLittleEndian<uint64_t>(at + 18);
  uint64_t documents = readLittleEndian<uint64_t>(at + 26);
  // The header, lengths, offsets and document indices, and optionally the
  // multimodal datasets' modes: nothing else.
  uint64_t tables = 0, withModes = 0;
  bool overflow = sequences > uint64_t(INT64_MAX) / 16 ||
                  documents > uint64_t(INT64_MAX) / 16 ||
                  __builtin_add_overflow(uint64_t(kIndexHeaderBytes),
                                         12 * sequences, &tables) ||
                  __builtin_add_overflow(tables, 8 * documents, &tables) ||
                  __builtin_add_overflow(tables, sequences, &withModes);
  if (overflow || (uint64_t(size) != tables && uint64_t(size) != withModes))
    return bad(
        "has " + std::to_string(size) + " bytes, but its header's " +
        std::to_string(sequences) + " sequences and " +
        std::to_string(documents) + " document indices need " +
        (overflow ? std::string("more than 2^63") : std::to_string(tables)));
  const uint8_t *lengths = at + kIndexHeaderBytes;
  const uint8_t *pointers = lengths + 4 * sequences;
  const uint8_t *documentIndices = pointers + 8 * sequences;
  // The sequences lie in the .bin one after another, in order, filling it:
  // it is read as one stream.
  int64_t offset = 0;
  for (uint64_t i = 0; i < sequences; ++i) {
    int32_t length = readLittleEndian<int32_t>(lengths + 4 * i);
    int64_t pointer = readLittleEndian<int64_t>(pointers + 8 * i);
    if (length < 0)
      return bad("sequence " + std::to_string(i) + " has length " +
                 std::to_string(length));
    if (pointer != offset)
      return Status::error(
          indexPath + ": sequence " + std::to_string(i) + " starts at byte " +
          std::to_string(pointer) + " of " + data.filePath +
          ", not where the sequences before it end (" + std::to_string(offset) +
          "): megatron-run reads the documents as one stream in their order");
    offset += int64_t(length) * type->size;
  }
  if (offset != binSize)
    return Status::error(
        indexPath + ": its " + std::to_string(sequences) + " sequences hold " +
        std::to_string(offset) + " bytes of " + type->name + " ids, but " +
        data.filePath + " has " + std::to_string(binSize) + " bytes");
  int64_t previous = 0;
  for (uint64_t d = 0; d < documents; ++d) {
    int64_t boundary = readLittleEndian<int64_t>(documentIndices + 8 * d);
    if ((d == 0 && boundary != 0) || boundary < previous ||
        boundary > int64_t(sequences) ||
        (d + 1 == documents && boundary != int64_t(sequences)))
      return bad("document index " + std::to_string(d) + " is " +
                 std::to_string(boundary) +
                 " (they rise from 0 to the sequence count " +
                 std::to_string(sequences) + ")");
    previous = boundary;
  }
  data.elementSize = type->size;
  data.isSigned = type->isSigned;
  data.count = binSize / type->size;
  uint64_t documentCount = documents > 0 ? documents - 1 : 0;
  data.formatName = std::string("Megatron-LM indexed dataset, ") + type->name +
                    " ids, " + std::to_string(documentCount) +
                    (documentCount == 1 ? " document" : " documents");
  return Status::ok();
}

std::string TokenData::indexFileOf(const std::string &path) {
  std::string binPath = tokenFileOf(path);
  std::string index = binPath.substr(0, binPath.size() - 4) + ".idx";
  return endsWith(binPath, ".bin") && isRegularFile(index) ? index : "";
}

Status TokenData::open(const std::string &path, TokenData &data) {
  std::string binPath = tokenFileOf(path);
  std::string indexPath = indexFileOf(path);
  std::shared_ptr<Mapping> mapping;
  int64_t size = 0;
  MTRT_RETURN_IF_ERROR(mapFile(binPath, "token file", mapping, size));
  TokenData opened;
  opened.filePath = binPath;
  opened.bytes =
      mapping ? static_cast<const uint8_t *>(mapping->address) : nullptr;
  opened.mapping = std::move(mapping);
  if (!indexPath.empty()) {
    MTRT_RETURN_IF_ERROR(readIndex(indexPath, size, opened));
  } else {
    if (size % 2 != 0)
      return Status::error(
          binPath + ": token file has " + std::to_string(size) +
          " bytes, an odd number, so it is not a sequence of 16-bit tokens");
    // The index of an indexed dataset, named instead of its prefix, would
    // read as tokens.
    if (size >= int64_t(sizeof(kIndexMagic)) &&
        std::memcmp(opened.bytes, kIndexMagic, sizeof(kIndexMagic)) == 0)
      return Status::error(
          binPath + ": is the index of a Megatron-LM indexed dataset (it "
                    "starts with MMIDIDX), not tokens: give --data its "
                    "prefix (PREFIX, or PREFIX.bin beside PREFIX.idx)");
    opened.count = size / 2;
    opened.formatName = "uint16 token file";
    // 32-bit ids (a tokenizer's int32 output, numpy's default) read as
    // 16-bit tokens are each an id and a 0: a valid-looking stream that
    // trains on garbage. Text never has a 0 at every second position.
    int64_t sample = std::min<int64_t>(opened.count, 4096);
    bool highHalvesZero = sample >= 64, lowHalvesZero = true;
    for (int64_t i = 0; i + 1 < sample && highHalvesZero; i += 2) {
      highHalvesZero = opened.token(i + 1) == 0;
      lowHalvesZero = lowHalvesZero && opened.token(i) == 0;
    }
    if (highHalvesZero && !lowHalvesZero)
      return Status::error(
          binPath + ": every second 16-bit token of the first " +
          std::to_string(sample) +
          " is 0: the file looks like 32-bit token ids, which a raw token "
          "file cannot hold (it is uint16, as nanoGPT's train.bin); write "
          "Megatron-LM's indexed dataset (PREFIX.bin beside PREFIX.idx, any "
          "integer id type) instead");
  }
  data = std::move(opened);
  return Status::ok();
}

Status TokenData::checkShape(int64_t batchSize, int64_t seqLen) const {
  if (batchSize < 1 || seqLen < 1)
    return Status::error(filePath + ": batch size " +
                         std::to_string(batchSize) + " and sequence length " +
                         std::to_string(seqLen) + " must both be positive");
  return Status::ok();
}

Status TokenData::batch(int64_t step, int64_t batchSize, int64_t seqLen,
                        int32_t *inputs, int32_t *labels) const {
  MTRT_RETURN_IF_ERROR(checkShape(batchSize, seqLen));
  if (step < 0)
    return Status::error(filePath + ": step " + std::to_string(step) +
                         " is negative");
  // The batch reads tokens [first, first + batchSize * seqLen + 1).
  int64_t tokensPerStep = 0, first = 0, end = 0;
  bool overflow = __builtin_mul_overflow(batchSize, seqLen, &tokensPerStep) ||
                  __builtin_mul_overflow(step, tokensPerStep, &first) ||
                  __builtin_add_overflow(first, tokensPerStep, &end) ||
                  __builtin_add_overflow(end, 1, &end);
  if (overflow || end > count)
    return Status::error(
        filePath + ": step " + std::to_string(step) + " (batch size " +
        std::to_string(batchSize) + ", sequence length " +
        std::to_string(seqLen) + ") reads tokens " +
        (overflow
             ? std::string("beyond index 2^63")
             : "[" + std::to_string(first) + ", " + std::to_string(end) + ")") +
        " but the file has only " + std::to_string(count) + " tokens");

  for (int64_t i = 0; i < batchSize; ++i) {
    int64_t start = first + i * seqLen;
    int32_t *in = inputs + i * seqLen;
    int32_t *label = labels + i * seqLen;
    for (int64_t j = 0; j < seqLen; ++j) {
      in[j] = static_cast<int32_t>(token(start + j));
      label[j] = static_cast<int32_t>(token(start + j + 1));
    }
  }
  return Status::ok();
}

Status TokenData::checkSamples(int64_t first, int64_t samples, int64_t seqLen,
                               int64_t vocabSize,
                               const std::string &what) const {
  MTRT_RETURN_IF_ERROR(checkShape(1, seqLen));
  int64_t begin = 0, end = 0;
  if (first < 0 || samples < 1 || vocabSize < 1 ||
      __builtin_mul_overflow(first, seqLen, &begin) ||
      __builtin_add_overflow(first, samples, &end) ||
      __builtin_mul_overflow(end, seqLen, &end) ||
      __builtin_add_overflow(end, int64_t(1), &end) || end > numTokens())
    return Status::error(filePath + ": has " + std::to_string(numTokens()) +
                         " tokens, too few for " + what);
  return checkIdsBelow(begin, end, vocabSize,
                       "the first such token that " + what + " read");
}

Status TokenData::checkIdsBelow(int64_t begin, int64_t end, int64_t vocabSize,
                                const std::string &which) const {
  for (int64_t i = begin; i < end; ++i) {
    int64_t id = token(i);
    if (id < 0 || id >= vocabSize)
      return Status::error(filePath + ": token id " + std::to_string(id) +
                           " at position " + std::to_string(i) +
                           " is not below the vocabulary size " +
                           std::to_string(vocabSize) + " (" + which + ")");
  }
  return Status::ok();
}

Status TokenData::checkCovers(int64_t steps, int64_t batchSize, int64_t seqLen,
                              int64_t vocabSize, int64_t consumed) const {
  MTRT_RETURN_IF_ERROR(checkShape(batchSize, seqLen));
  if (steps < 0)
    return Status::error(filePath + ": number of steps " +
                         std::to_string(steps) + " is negative");
  if (consumed < 0)
    return Status::error(filePath + ": consumed samples " +
                         std::to_string(consumed) + " is negative");
  if (vocabSize < 1)
    return Status::error(filePath + ": vocabulary size " +
                         std::to_string(vocabSize) + " must be positive");
  if (steps == 0)
    return Status::ok();

  // The last sample of the last step starts at (consumed + (steps-1)*B +
  // B-1) * S and reads S + 1 tokens from there, i.e. (consumed + steps * B)
  // * S + 1 tokens in all.
  int64_t needed;
  bool overflow = __builtin_mul_overflow(steps, batchSize, &needed) ||
                  __builtin_add_overflow(needed, consumed, &needed) ||
                  __builtin_mul_overflow(needed, seqLen, &needed) ||
                  __builtin_add_overflow(needed, 1, &needed);
  std::string what = std::to_string(steps) + " steps of batch size " +
                     std::to_string(batchSize) + " and sequence length " +
                     std::to_string(seqLen) +
                     (consumed > 0 ? " after the " + std::to_string(consumed) +
                                         " samples the checkpoint consumed"
                                   : std::string());
  if (overflow || needed > count)
    return Status::error(
        filePath + ": has " + std::to_string(count) + " tokens but " + what +
        " need " +
        (overflow ? std::string("more than 2^63") : std::to_string(needed)) +
        " tokens");

  return checkIdsBelow(0, needed, vocabSize,
                       "first such token among the " + std::to_string(needed) +
                           " that " + what + " read");
}
