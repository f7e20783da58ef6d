//===- TokenDataFuzzer.cpp - Fuzz the train.bin token reader --------------===//
//
// The input is a token file followed by the arguments of the calls made on
// it: FuzzedDataProvider takes the step, batch size, sequence length, steps
// and vocabulary size from the end of the input (small values mostly, any
// int64 sometimes, for the overflow checks), and the rest is the file.
// TokenData::open, batch, checkCovers and checkSamples are checked against a
// reference computed here with 128-bit arithmetic: a Status error is a correct
// answer only where the reference says so.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "mtrt/TokenData.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace megatron::fuzz;

namespace {

int64_t pick(FuzzedDataProvider &input, bool wide, int64_t low, int64_t high) {
  return wide ? input.ConsumeIntegral<int64_t>()
              : input.ConsumeIntegralInRange<int64_t>(low, high);
}

/// Token `index` of the file's bytes, as TokenData.h states the format.
uint16_t tokenAt(const std::string &bytes, __int128 index) {
  size_t at = size_t(2 * index);
  return uint16_t(uint8_t(bytes[at]) | (uint8_t(bytes[at + 1]) << 8));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FuzzFile file("tokens");
  FuzzedDataProvider input(data, size);
  uint8_t wide = input.ConsumeIntegral<uint8_t>();
  int64_t step = pick(input, wide & 1, -1, 8);
  int64_t batchSize = pick(input, wide & 2, -1, 8);
  int64_t seqLen = pick(input, wide & 4, -1, 16);
  int64_t steps = pick(input, wide & 8, -1, 8);
  int64_t vocabSize = pick(input, wide & 16, -1, 70000);
  std::string bytes = input.ConsumeRemainingBytesAsString();
  file.write(bytes);

  mtrt::TokenData tokens;
  mtrt::Status opened = mtrt::TokenData::open(file.path(), tokens);
  if (verbose())
    std::fprintf(stderr,
                 "open: %s\nstep %lld batch %lld seq %lld steps %lld vocab "
                 "%lld\n",
                 opened ? "ok" : opened.message().c_str(), (long long)step,
                 (long long)batchSize, (long long)seqLen, (long long)steps,
                 (long long)vocabSize);
  // An even-sized file is refused only as 32-bit ids: of its first 4096
  // 16-bit tokens (at least 64), every second one is 0 and not every other.
  auto token16 = [&](size_t i) {
    return uint16_t(uint8_t(bytes[2 * i]) | uint8_t(bytes[2 * i + 1]) << 8);
  };
  size_t sample = std::min<size_t>(bytes.size() / 2, 4096);
  bool highZero = sample >= 64, lowZero = true;
  for (size_t i = 0; i + 1 < sample && highZero; i += 2) {
    highZero = token16(i + 1) == 0;
    lowZero = lowZero && token16(i) == 0;
  }
  bool looks32Bit = bytes.size() % 2 == 0 && highZero && !lowZero;
  // An indexed dataset's index (given for its .bin) is refused by its
  // magic.
  bool isIndex = bytes.compare(0, 9, std::string("MMIDIDX\0\0", 9)) == 0;
  if (bool(opened) != (bytes.size() % 2 == 0 && !looks32Bit && !isIndex))
    fail("open accepts an odd-sized file, a file of 32-bit ids or an index, "
         "or refuses another even-sized one",
         std::to_string(bytes.size()) + " bytes");
  if (!opened)
    return 0;
  int64_t count = tokens.numTokens();
  if (count != int64_t(bytes.size() / 2))
    fail("numTokens is not half the file size", std::to_string(count));
  for (int64_t i = 0; i < count; ++i)
    if (tokens.token(i) != tokenAt(bytes, i))
      fail("token() differs from the file's bytes", std::to_string(i));

  // batch: ok exactly when the shape is positive, the step is not negative
  // and tokens [first, first + B*S + 1) lie in the file.
  bool batchFits = batchSize >= 1 && seqLen >= 1 && step >= 0;
  __int128 perStep = 0, first = 0;
  if (batchFits) {
    perStep = __int128(batchSize) * seqLen; // < 2^126
    batchFits = perStep + 1 <= count;
  }
  if (batchFits) {
    first = __int128(step) * perStep; // < 2^63 * 2^62
    batchFits = first + perStep + 1 <= count;
  }
  // Exact buffers where the batch can succeed; one element otherwise (a
  // batch that then succeeds writes out of bounds, which ASan reports).
  size_t elements = batchFits ? size_t(perStep) : 1;
  std::vector<int32_t> inputs(elements, -1), labels(elements, -1);
  mtrt::Status batch =
      tokens.batch(step, batchSize, seqLen, inputs.data(), labels.data());
  if (verbose())
    std::fprintf(stderr, "batch: %s\n", batch ? "ok" : batch.message().c_str());
  if (bool(batch) != batchFits)
    fail(batchFits ? "batch refuses a batch inside the file"
                   : "batch accepts a batch it cannot read",
         batch ? std::string("ok") : batch.message());
  if (batch)
    for (int64_t i = 0; i < batchSize; ++i)
      for (int64_t j = 0; j < seqLen; ++j) {
        __int128 at = first + i * seqLen + j;
        size_t k = size_t(i * seqLen + j);
        if (inputs[k] != tokenAt(bytes, at) ||
            labels[k] != tokenAt(bytes, at + 1))
          fail("batch returns the wrong tokens", "sample " + std::to_string(i) +
                                                     " position " +
                                                     std::to_string(j));
      }

  // checkCovers: ok exactly when the shape and vocabulary are positive, the
  // step count is not negative, and (for steps > 0) the file holds
  // steps*B*S + 1 tokens, all below the vocabulary size.
  bool covers = batchSize >= 1 && seqLen >= 1 && steps >= 0 && vocabSize >= 1;
  if (covers && steps > 0) {
    __int128 needed = __int128(steps) * batchSize; // < 2^126
    covers = needed <= count;
    if (covers) {
      needed = needed * seqLen + 1; // < 2^62 * 2^63 + 1
      covers = needed <= count;
    }
    for (__int128 i = 0; covers && i < needed; ++i)
      covers = tokenAt(bytes, i) < vocabSize;
  }
  mtrt::Status checked =
      tokens.checkCovers(steps, batchSize, seqLen, vocabSize);
  if (verbose())
    std::fprintf(stderr, "checkCovers: %s\n",
                 checked ? "ok" : checked.message().c_str());
  if (bool(checked) != covers)
    fail(covers ? "checkCovers refuses a file that covers the run"
                : "checkCovers accepts a file that does not cover the run",
         checked ? std::string("ok") : checked.message());

  // checkSamples (evaluation's: samples `step` .. `step + steps - 1`): ok
  // exactly when the sequence length, the count and the vocabulary are
  // positive, the first sample is not negative, and tokens
  // [first * S, (first + count) * S + 1) lie in the file, all below the
  // vocabulary size.
  bool holds = seqLen >= 1 && step >= 0 && steps >= 1 && vocabSize >= 1;
  __int128 begin = 0, end = 0;
  if (holds) {
    begin = __int128(step) * seqLen;             // < 2^126
    end = (__int128(step) + steps) * seqLen + 1; // < 2^127
    holds = end <= count;
  }
  for (__int128 i = begin; holds && i < end; ++i)
    holds = tokenAt(bytes, i) < vocabSize;
  mtrt::Status sampled =
      tokens.checkSamples(step, steps, seqLen, vocabSize, "the samples");
  if (verbose())
    std::fprintf(stderr, "checkSamples: %s\n",
                 sampled ? "ok" : sampled.message().c_str());
  if (bool(sampled) != holds)
    fail(holds ? "checkSamples refuses samples the file holds"
               : "checkSamples accepts samples the file does not hold",
         sampled ? std::string("ok") : sampled.message());
  return 0;
}
