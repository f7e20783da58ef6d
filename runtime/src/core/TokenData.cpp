//===- TokenData.cpp - nanoGPT's tokenized training data ------------------===//

#include "mtrt/TokenData.h"

#include <cerrno>
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

Status TokenData::open(const std::string &path, TokenData &data) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever;
  // what is not a regular file is refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Status::error(path +
                         ": cannot open token file: " + std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int err = errno;
    ::close(fd);
    return Status::error(path +
                         ": cannot stat token file: " + std::strerror(err));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status::error(path + ": token file is not a regular file");
  }
  int64_t size = static_cast<int64_t>(info.st_size);
  if (size % 2 != 0) {
    ::close(fd);
    return Status::error(
        path + ": token file has " + std::to_string(size) +
        " bytes, an odd number, so it is not a sequence of 16-bit tokens");
  }

  std::shared_ptr<Mapping> mapping;
  // mmap rejects empty ranges; an empty file simply has no tokens.
  if (size > 0) {
    void *address = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ,
                           MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return Status::error(path +
                           ": cannot map token file: " + std::strerror(err));
    }
    mapping = std::make_shared<Mapping>(address, static_cast<size_t>(size));
  }
  ::close(fd);

  data.filePath = path;
  data.bytes =
      mapping ? static_cast<const uint8_t *>(mapping->address) : nullptr;
  data.mapping = std::move(mapping);
  data.count = size / 2;
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
      in[j] = token(start + j);
      label[j] = token(start + j + 1);
    }
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

  for (int64_t i = 0; i < needed; ++i) {
    uint16_t id = token(i);
    if (id >= vocabSize)
      return Status::error(
          filePath + ": token id " + std::to_string(id) + " at position " +
          std::to_string(i) + " is not below the vocabulary size " +
          std::to_string(vocabSize) + " (first such token among the " +
          std::to_string(needed) + " that " + what + " read)");
  }
  return Status::ok();
}
