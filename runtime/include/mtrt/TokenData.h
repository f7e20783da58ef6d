//===- TokenData.h - Tokenized training data --------------------*- C++ -*-===//
//
// Two formats of a tokenized corpus, read as one stream of token ids:
//
// - nanoGPT's `prepare.py` writes `train.bin`: the token ids, one after
//   another, each an unsigned 16-bit little-endian integer, nothing else.
//   GPT-2's 50257 ids fit in 16 bits.
// - Megatron-LM's indexed dataset (`preprocess_data.py` writes PREFIX.bin
//   and PREFIX.idx; `--data-path PREFIX`): the .bin holds the documents'
//   ids one after another in the .idx's element type (uint16 below 65,500
//   ids, int32 above: LLaMA 3's 128,256 and Qwen2's 151,936 need it), and
//   the .idx its header, the documents' lengths and byte offsets. It is
//   read when `--data` names PREFIX or PREFIX.bin and PREFIX.idx exists.
//   The documents are read in their order, concatenated (with the end-of-
//   document tokens the preprocessing appended), where Megatron-LM's
//   GPTDataset shuffles its samples.
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
#include <cstring>
#include <memory>
#include <string>

namespace mtrt {

/// A token file (either format), memory-mapped read-only. Copies share the
/// mapping.
class TokenData {
public:
  /// Maps the tokens `path` names, replacing what `data` held; fails,
  /// naming the file and what is wrong, if a file cannot be read, a
  /// train.bin has an odd number of bytes, or an indexed dataset's .idx is
  /// malformed or does not describe its .bin. On failure `data` is
  /// unchanged.
  static Status open(const std::string &path, TokenData &data);

  /// The file holding the tokens `path` names: PREFIX.bin for an indexed
  /// dataset named by its prefix, else `path`.
  static std::string tokenFileOf(const std::string &path);
  /// The index of the indexed dataset `path` names (PREFIX.idx), or "" for
  /// a train.bin.
  static std::string indexFileOf(const std::string &path);

  /// The token file, and its format in words ("uint16 token file",
  /// "Megatron-LM indexed dataset, int32, 12 documents").
  const std::string &path() const { return filePath; }
  const std::string &format() const { return formatName; }
  int64_t numTokens() const { return count; }

  /// Token `index`; requires 0 <= index < numTokens().
  int64_t token(int64_t index) const {
    const uint8_t *at = bytes + index * elementSize;
    switch (elementSize) { // little-endian, as the hosts we build for
    case 1:
      return isSigned ? int64_t(int8_t(*at)) : int64_t(*at);
    case 2:
      return isSigned ? int64_t(load<int16_t>(at))
                      : int64_t(load<uint16_t>(at));
    case 4:
      return load<int32_t>(at);
    default:
      return load<int64_t>(at);
    }
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

  /// Checks that samples `first` .. `first + samples - 1` (sample i: seqLen +
  /// 1 tokens from token i * seqLen) lie in the file and hold ids below
  /// `vocabSize`; errors name the file and `what` reads them ("the
  /// validation part's 20 samples").
  Status checkSamples(int64_t first, int64_t samples, int64_t seqLen,
                      int64_t vocabSize, const std::string &what) const;

private:
  class Mapping;

  template <typename T> static T load(const uint8_t *at) {
    T value;
    std::memcpy(&value, at, sizeof(T)); // the mapping need not be aligned
    return value;
  }

  /// Maps the regular file `path` read-only (`what` names it in errors):
  /// its mapping (null when empty) and size.
  static Status mapFile(const std::string &path, const std::string &what,
                        std::shared_ptr<Mapping> &mapping, int64_t &size);
  /// Reads Megatron-LM's index `indexPath` of the token file mapped in
  /// `data` (`binSize` bytes): the element type, and that the documents
  /// fill the file in order.
  static Status readIndex(const std::string &indexPath, int64_t binSize,
                          TokenData &data);

  Status checkShape(int64_t batchSize, int64_t seqLen) const;
  /// Tokens [begin, end) are all ids below `vocabSize`; the error names the
  /// first that is not, its position, and `which` it is.
  Status checkIdsBelow(int64_t begin, int64_t end, int64_t vocabSize,
                       const std::string &which) const;

  std::string filePath, formatName;
  std::shared_ptr<Mapping> mapping;
  const uint8_t *bytes = nullptr;
  int64_t count = 0;
  int elementSize = 2;
  bool isSigned = false;
};

} // namespace mtrt

#endif // MTRT_TOKENDATA_H
