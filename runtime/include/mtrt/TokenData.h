//===- TokenData.h - nanoGPT's tokenized training data ----------*- C++ -*-===//
//
// nanoGPT's `prepare.py` writes the tokenized corpus as `train.bin`: the
// token ids, one after another, each an unsigned 16-bit little-endian
// integer, nothing else. GPT-2's 50257 ids fit in 16 bits.
//
// Batches are cut deterministically and sequentially (no random offsets as
// nanoGPT's get_batch does) so that every run, every rank and every
// executor sees the same tokens at the same step:
//
//   sample i of step t starts at token s = (t * B + i) * S
//   inputs[i][j] = token[s + j]        j = 0 .. S-1
//   labels[i][j] = token[s + j + 1]
//
// so `steps` steps need steps * B * S + 1 tokens.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_TOKENDATA_H
#define MTRT_TOKENDATA_H

#include "mtrt/Status.h"

#include <cstdint>
#include <memory>
#include <string>

namespace mtrt {

/// A train.bin token file, memory-mapped read-only. Copies share the
/// mapping.
class TokenData {
public:
  /// Maps `path`, replacing what `data` held; fails if the file cannot be
  /// read or has an odd number of bytes. On failure `data` is unchanged.
  static Status open(const std::string &path, TokenData &data);

  const std::string &path() const { return filePath; }
  int64_t numTokens() const { return count; }

  /// Token `index`; requires 0 <= index < numTokens().
  uint16_t token(int64_t index) const {
    return static_cast<uint16_t>(bytes[2 * index] |
                                 (bytes[2 * index + 1] << 8));
  }

  /// Fills `inputs` and `labels`, each batchSize * seqLen ids in row-major
  /// [batchSize, seqLen] order, with the batch of step `step` (0-based) as
  /// described in the file comment. Fails, naming the file and the token
  /// range, if the file is too short.
  Status batch(int64_t step, int64_t batchSize, int64_t seqLen, int32_t *inputs,
               int32_t *labels) const;

  /// Checks before training that `steps` steps of batchSize x seqLen,
  /// after the `consumed` samples a resumed run's checkpoint read, fit in
  /// the file ((consumed + steps * batchSize) * seqLen + 1 tokens) and that
  /// every token they read is below `vocabSize`; the error names the file,
  /// the token count it has and needs, or the first out-of-range id and its
  /// position.
  Status checkCovers(int64_t steps, int64_t batchSize, int64_t seqLen,
                     int64_t vocabSize, int64_t consumed = 0) const;

private:
  class Mapping;

  Status checkShape(int64_t batchSize, int64_t seqLen) const;

  std::string filePath;
  std::shared_ptr<Mapping> mapping;
  const uint8_t *bytes = nullptr;
  int64_t count = 0;
};

} // namespace mtrt

#endif // MTRT_TOKENDATA_H
