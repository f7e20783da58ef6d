//===- SyntheticCorpus.h - A token source with a known floor ----*- C++ -*-===//
//
// The built-in corpus for running without downloaded data: an order-k
// Markov source over tokens 0 .. V-1. Because the true distribution is
// known, so is the best loss any model can reach on it: the entropy rate,
// which a working trainer must approach and cannot beat.
//
// Construction, all from std::mt19937_64 seeded with the seed (mt19937_64's
// output sequence is fixed by the C++ standard; the standard distributions
// are not, so none is used and the corpus is the same on every platform):
//
//   * A context is the last k tokens. Each context has `successors`
//     distinct next tokens with integer weights drawn uniformly from
//     1 .. 256; p(next | context) = weight / sum of the context's weights.
//   * Two of the successors are always the context's last token t and
//     (t + 1) mod V. From any context the chain can then walk +1 to any
//     token c and repeat it to reach c c ... c, and c c ... c can go to
//     itself: the chain has a single recurrent class and is aperiodic, so
//     its stationary distribution is unique and the entropy rate is well
//     defined whatever the seed.
//   * Sampling uses integer arithmetic only (unbiased rejection sampling
//     on raw 64-bit outputs), so a stream depends on nothing but the seed.
//     The one exception is the first context of a stream, drawn from the
//     stationary distribution, which is computed in floating point; a
//     last-bit difference in it could change that draw only with
//     negligible probability.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_SYNTHETICCORPUS_H
#define MTRT_SYNTHETICCORPUS_H

#include "mtrt/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mtrt {

struct SyntheticCorpusOptions {
  /// Tokens are 0 .. vocabSize-1; at most 65536 so they fit train.bin. It
  /// may be far smaller than the model's vocabulary: the model then learns
  /// to put no mass on the other ids.
  int64_t vocabSize = 64;
  /// How many previous tokens the next one depends on: 1, 2 or 3.
  int64_t order = 2;
  /// Next-token candidates per context, 2 .. vocabSize.
  int64_t successors = 6;
  uint64_t seed = 1234;
};

class SyntheticCorpus {
public:
  /// Builds the chain of `options` into `corpus` and computes its
  /// stationary distribution. Fails on out-of-range options, or when
  /// vocabSize^order * successors exceeds 2^24 entries.
  static Status create(const SyntheticCorpusOptions &options,
                       SyntheticCorpus &corpus);

  const SyntheticCorpusOptions &options() const { return opts; }

  /// The entropy rate H = sum_ctx pi(ctx) * H(next | ctx) in nats per token,
  /// with pi the stationary distribution over contexts (by power
  /// iteration). It is the cross-entropy loss floor for predicting a token
  /// from unboundedly many (at least `order`) previous ones.
  double entropyRateNats() const { return entropyRate; }

  /// The loss floor of a model that sees a window of `seqLen` tokens, as in
  /// training: the mean over positions j = 0 .. seqLen-1 of
  /// H(x[j+1] | x[0..j]). Positions j < order-1 see less than a full
  /// context and have a higher floor, so this is slightly above
  /// entropyRateNats() for order >= 2 and equal to it for order 1.
  double lossFloorNats(int64_t seqLen) const;

  /// p(next | context), where `context` points at the `order` preceding
  /// tokens, oldest first. 0 when `next` is not a successor of the context.
  double probability(const uint16_t *context, uint16_t next) const;

  /// Replaces `out` with the first `numTokens` tokens of stream `stream`
  /// (distinct streams are independent, e.g. for train and validation).
  /// The chain starts in a context drawn from the stationary distribution,
  /// so every window of the stream is distributed alike. A longer request
  /// extends a shorter one.
  void generate(int64_t numTokens, std::vector<uint16_t> &out,
                uint64_t stream = 0) const;

  /// Writes generate(numTokens, stream) to `path` in train.bin format
  /// (uint16 little-endian), through a temporary file renamed into place.
  Status writeTokenFile(const std::string &path, int64_t numTokens,
                        uint64_t stream = 0) const;

private:
  int64_t contextIndex(const uint16_t *context) const;
  /// The entropy of the stationary distribution of the last `length` tokens
  /// of the context (length <= order).
  double blockEntropy(int64_t length) const;

  SyntheticCorpusOptions opts;
  int64_t numContexts = 0;
  /// successors consecutive entries per context.
  std::vector<uint16_t> nextTokens;
  std::vector<uint32_t> weights;
  std::vector<uint32_t> totalWeight;
  /// The stationary distribution over contexts.
  std::vector<double> stationary;
  double entropyRate = 0.0;
};

} // namespace mtrt

#endif // MTRT_SYNTHETICCORPUS_H
