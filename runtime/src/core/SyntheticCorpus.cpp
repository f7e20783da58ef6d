//===- SyntheticCorpus.cpp - A token source with a known loss floor -------===//

#include "mtrt/SyntheticCorpus.h"

#include "mtrt/AtomicFile.h"

#include <cmath>
#include <random>

using namespace mtrt;

namespace {

/// The most successor entries a corpus may hold; keeps the power iteration
/// and the tables small (2^24 entries is ~100 MB of tables).
constexpr int64_t kMaxEntries = int64_t(1) << 24;
/// Power iteration stops when the L1 change of the distribution falls
/// below this, or after kMaxIterations.
constexpr double kTolerance = 1e-14;
constexpr int kMaxIterations = 100000;

/// SplitMix64's finalizer: spreads nearby seeds (1, 2, 3, ...) over the
/// whole 64-bit space before they seed a Mersenne Twister.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A uniform integer in [0, n), n > 0, by rejection: exact and defined
/// only by the generator's raw outputs, unlike std::uniform_int_distribution.
uint64_t uniformBelow(std::mt19937_64 &gen, uint64_t n) {
  // Accept x below the largest multiple of n that fits in 2^64.
  uint64_t excess = (UINT64_MAX % n + 1) % n; // 2^64 mod n
  uint64_t limit = UINT64_MAX - excess;       // accept x <= limit
  uint64_t x;
  do
    x = gen();
  while (x > limit);
  return x % n;
}

/// A double in [0, 1) from the top 53 bits of one output.
double uniformUnit(std::mt19937_64 &gen) {
  return static_cast<double>(gen() >> 11) * (1.0 / 9007199254740992.0);
}

double entropyOf(const std::vector<double> &distribution) {
  double h = 0.0;
  for (double p : distribution)
    if (p > 0.0)
      h -= p * std::log(p);
  return h;
}

} // namespace

Status SyntheticCorpus::create(const SyntheticCorpusOptions &options,
                               SyntheticCorpus &corpus) {
  const int64_t v = options.vocabSize;
  if (v < 2 || v > 65536)
    return Status::error("synthetic corpus: vocabulary size " +
                         std::to_string(v) +
                         " is outside 2 .. 65536 (tokens are 16-bit)");
  if (options.order < 1 || options.order > 3)
    return Status::error("synthetic corpus: order " +
                         std::to_string(options.order) + " is outside 1 .. 3");
  if (options.successors < 2 || options.successors > v)
    return Status::error(
        "synthetic corpus: " + std::to_string(options.successors) +
        " successors per context is outside 2 .. " + std::to_string(v) +
        ", the vocabulary size");
  int64_t contexts = 1;
  for (int64_t i = 0; i < options.order; ++i)
    contexts *= v; // at most 2^48: no overflow
  if (contexts > kMaxEntries / options.successors)
    return Status::error(
        "synthetic corpus: " + std::to_string(v) + "^" +
        std::to_string(options.order) +
        " contexts (vocabulary size ^ order) x " +
        std::to_string(options.successors) +
        " successors exceeds 2^24 table entries; use a smaller vocabulary or "
        "order");

  SyntheticCorpus result;
  result.opts = options;
  result.numContexts = contexts;
  const int64_t b = options.successors;
  result.nextTokens.resize(contexts * b);
  result.weights.resize(contexts * b);
  result.totalWeight.resize(contexts);

  std::mt19937_64 gen(mix(options.seed));
  for (int64_t c = 0; c < contexts; ++c) {
    uint16_t *next = &result.nextTokens[c * b];
    uint32_t *weight = &result.weights[c * b];
    int64_t last = c % v;
    // The forced successors guarantee a single aperiodic recurrent class
    // (see the header); the rest are distinct random tokens.
    next[0] = static_cast<uint16_t>(last);
    next[1] = static_cast<uint16_t>((last + 1) % v);
    for (int64_t s = 2; s < b;) {
      uint16_t candidate = static_cast<uint16_t>(uniformBelow(gen, v));
      bool taken = false;
      for (int64_t t = 0; t < s; ++t)
        taken |= next[t] == candidate;
      if (!taken)
        next[s++] = candidate;
    }
    uint32_t total = 0;
    for (int64_t s = 0; s < b; ++s) {
      weight[s] = 1 + static_cast<uint32_t>(gen() >> 56);
      total += weight[s];
    }
    result.totalWeight[c] = total;
  }

  // Power iteration pi <- pi P from the uniform distribution. The chain is
  // aperiodic with one recurrent class, so this converges to the unique
  // stationary distribution; transient contexts decay to 0.
  std::vector<double> pi(contexts, 1.0 / static_cast<double>(contexts));
  std::vector<double> nextPi(contexts);
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    std::fill(nextPi.begin(), nextPi.end(), 0.0);
    for (int64_t c = 0; c < contexts; ++c) {
      if (pi[c] == 0.0)
        continue;
      double scale = pi[c] / result.totalWeight[c];
      int64_t shifted = (c * v) % contexts;
      for (int64_t s = 0; s < b; ++s)
        nextPi[shifted + result.nextTokens[c * b + s]] +=
            scale * result.weights[c * b + s];
    }
    double change = 0.0;
    for (int64_t c = 0; c < contexts; ++c)
      change += std::fabs(nextPi[c] - pi[c]);
    pi.swap(nextPi);
    if (change < kTolerance)
      break;
  }

  double rate = 0.0;
  for (int64_t c = 0; c < contexts; ++c) {
    if (pi[c] == 0.0)
      continue;
    double h = 0.0;
    for (int64_t s = 0; s < b; ++s) {
      double p = static_cast<double>(result.weights[c * b + s]) /
                 result.totalWeight[c];
      h -= p * std::log(p);
    }
    rate += pi[c] * h;
  }
  result.stationary = std::move(pi);
  result.entropyRate = rate;
  corpus = std::move(result);
  return Status::ok();
}

double SyntheticCorpus::blockEntropy(int64_t length) const {
  int64_t size = 1;
  for (int64_t i = 0; i < length; ++i)
    size *= opts.vocabSize;
  // The last `length` tokens of context c are c mod V^length; by
  // stationarity their distribution is that of any `length` consecutive
  // tokens of the stream.
  std::vector<double> marginal(size, 0.0);
  for (int64_t c = 0; c < numContexts; ++c)
    marginal[c % size] += stationary[c];
  return entropyOf(marginal);
}

double SyntheticCorpus::lossFloorNats(int64_t seqLen) const {
  if (seqLen < 1)
    return entropyRate;
  // H(x[j+1] | x[0..j]) = H(x[0..j+1]) - H(x[0..j]) for j + 2 <= order;
  // from j = order - 1 on the full context is visible and it is the rate.
  double sum = 0.0;
  for (int64_t j = 0; j < seqLen; ++j)
    sum += j + 1 < opts.order ? blockEntropy(j + 2) - blockEntropy(j + 1)
                              : entropyRate;
  return sum / static_cast<double>(seqLen);
}

int64_t SyntheticCorpus::contextIndex(const uint16_t *context) const {
  int64_t c = 0;
  for (int64_t i = 0; i < opts.order; ++i)
    c = c * opts.vocabSize + context[i];
  return c;
}

double SyntheticCorpus::probability(const uint16_t *context,
                                    uint16_t next) const {
  for (int64_t i = 0; i < opts.order; ++i)
    if (context[i] >= opts.vocabSize)
      return 0.0;
  int64_t c = contextIndex(context);
  const int64_t b = opts.successors;
  for (int64_t s = 0; s < b; ++s)
    if (nextTokens[c * b + s] == next)
      return static_cast<double>(weights[c * b + s]) / totalWeight[c];
  return 0.0;
}

void SyntheticCorpus::generate(int64_t numTokens, std::vector<uint16_t> &out,
                               uint64_t stream) const {
  out.clear();
  if (numTokens <= 0 || numContexts == 0)
    return;
  out.resize(static_cast<size_t>(numTokens));
  // A generator of its own per stream, independent of the one that built
  // the chain, so that streams do not depend on each other.
  std::mt19937_64 gen(mix(mix(opts.seed) ^ mix(stream + 1)));

  // The first context from the stationary distribution. This is the one
  // step that compares doubles; everything after is integer arithmetic.
  double u = uniformUnit(gen);
  int64_t c = 0, lastPositive = 0;
  double cumulative = 0.0;
  for (; c < numContexts; ++c) {
    if (stationary[c] <= 0.0)
      continue;
    lastPositive = c;
    cumulative += stationary[c];
    if (u < cumulative)
      break;
  }
  if (c == numContexts) // rounding left u above the total
    c = lastPositive;

  const int64_t v = opts.vocabSize, k = opts.order, b = opts.successors;
  int64_t produced = 0;
  for (int64_t i = 0; i < k && produced < numTokens; ++i) {
    int64_t divisor = 1;
    for (int64_t j = i + 1; j < k; ++j)
      divisor *= v;
    out[produced++] = static_cast<uint16_t>((c / divisor) % v);
  }
  for (; produced < numTokens; ++produced) {
    uint32_t r = static_cast<uint32_t>(uniformBelow(gen, totalWeight[c]));
    int64_t s = 0;
    while (r >= weights[c * b + s]) {
      r -= weights[c * b + s];
      ++s;
    }
    uint16_t token = nextTokens[c * b + s];
    out[produced] = token;
    c = (c * v) % numContexts + token;
  }
}

Status SyntheticCorpus::writeTokenFile(const std::string &path,
                                       int64_t numTokens,
                                       uint64_t stream) const {
  if (numTokens < 0)
    return Status::error(path + ": cannot write " + std::to_string(numTokens) +
                         " tokens (negative)");
  std::vector<uint16_t> tokens;
  generate(numTokens, tokens, stream);
  // train.bin is little-endian whatever the host is.
  std::vector<uint8_t> bytes(tokens.size() * 2);
  for (size_t i = 0; i < tokens.size(); ++i) {
    bytes[2 * i] = static_cast<uint8_t>(tokens[i]);
    bytes[2 * i + 1] = static_cast<uint8_t>(tokens[i] >> 8);
  }
  return writeFileAtomically(path, {{bytes.data(), bytes.size()}});
}
