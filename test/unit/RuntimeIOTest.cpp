//===- RuntimeIOTest.cpp - Tests of the runtime's file and data inputs ----===//
//
// Safetensors reading and writing, parameters published as rows of fused
// tensors, train.bin token batches, the synthetic corpus and the
// learning-rate schedule.
//
//===----------------------------------------------------------------------===//

#include "mtrt/CheckpointShards.h"
#include "mtrt/FusedTensors.h"
#include "mtrt/HuggingFaceWeights.h"
#include "mtrt/LearningRate.h"
#include "mtrt/ParamInit.h"
#include "mtrt/Safetensors.h"
#include "mtrt/Sharding.h"
#include "mtrt/Strings.h"
#include "mtrt/SyntheticCorpus.h"
#include "mtrt/TokenData.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <sys/resource.h>

using namespace mtrt;
namespace fs = std::filesystem;

namespace {

/// A fresh directory under /tmp, removed with everything in it at the end.
class TempDir {
public:
  TempDir() {
    char pattern[] = "/tmp/mtrt-runtime-io-XXXXXX";
    const char *made = ::mkdtemp(pattern);
    EXPECT_NE(made, nullptr);
    dir = made ? made : "/tmp";
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  std::string path(const std::string &name) const { return dir + "/" + name; }

private:
  std::string dir;
};

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

std::string littleEndian64(uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>(value >> (8 * i));
  return bytes;
}

/// A safetensors file with the given header text and data section.
std::string safetensorsBytes(const std::string &header,
                             const std::string &data) {
  return littleEndian64(header.size()) + header + data;
}

template <typename T> std::vector<uint8_t> toBytes(const std::vector<T> &v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  if (!bytes.empty())
    std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

HostTensor makeTensor(const std::string &dtype, std::vector<int64_t> shape,
                      std::vector<uint8_t> bytes) {
  HostTensor tensor;
  tensor.dtype = dtype;
  tensor.shape = std::move(shape);
  tensor.bytes = std::move(bytes);
  return tensor;
}

/// Expects `status` to fail with a message containing every one of
/// `parts`.
void expectError(const Status &status, const std::vector<std::string> &parts) {
  ASSERT_FALSE(status.isOk()) << "expected an error mentioning " << parts[0];
  for (const std::string &part : parts)
    EXPECT_NE(status.message().find(part), std::string::npos)
        << "message '" << status.message() << "' lacks '" << part << "'";
}

//===----------------------------------------------------------------------===//
// Safetensors
//===----------------------------------------------------------------------===//

std::vector<std::pair<std::string, HostTensor>> sampleTensors() {
  std::vector<float> f32(6);
  for (int i = 0; i < 6; ++i)
    f32[i] = 0.5f * i - 1.0f;
  std::vector<uint16_t> f16 = {0x3C00, 0x4000, 0xBC00, 0x0001};
  std::vector<uint16_t> bf16 = {0x3F80, 0x4000, 0x4040, 0x4080};
  std::vector<int32_t> i32 = {-7, 0, 2147483647};
  std::vector<int64_t> i64 = {-1, int64_t(1) << 40};
  std::vector<uint8_t> u8 = {1, 2, 3, 4, 5};
  std::vector<float> scalar = {3.25f};
  return {
      {"wte.weight", makeTensor("F32", {2, 3}, toBytes(f32))},
      {"half", makeTensor("F16", {4}, toBytes(f16))},
      {"brain", makeTensor("BF16", {1, 2, 2}, toBytes(bf16))},
      {"ints", makeTensor("I32", {3}, toBytes(i32))},
      {"longs", makeTensor("I64", {2}, toBytes(i64))},
      {"bytes", makeTensor("U8", {5}, u8)},
      {"scalar", makeTensor("F32", {}, toBytes(scalar))},
      {"empty", makeTensor("F32", {0, 3}, {})},
  };
}

TEST(Safetensors, RoundTripKeepsDtypesShapesBytesAndOrder) {
  TempDir dir;
  std::string path = dir.path("model.safetensors");
  auto tensors = sampleTensors();
  ASSERT_TRUE(writeSafetensors(path, tensors, {{"format", "pt"}}).isOk());
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  std::map<std::string, HostTensor> read;
  Status status = readSafetensors(path, read);
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_EQ(read.size(), tensors.size());
  for (const auto &item : tensors) {
    const HostTensor &got = read.at(item.first);
    EXPECT_EQ(got.dtype, item.second.dtype) << item.first;
    EXPECT_EQ(got.shape, item.second.shape) << item.first;
    EXPECT_EQ(got.bytes, item.second.bytes) << item.first;
  }

  SafetensorsFile file;
  ASSERT_TRUE(SafetensorsFile::open(path, file).isOk());
  std::vector<std::string> expectedOrder;
  for (const auto &item : tensors)
    expectedOrder.push_back(item.first);
  // names() lists the data order, which is the order given to the writer.
  EXPECT_EQ(file.names(), expectedOrder);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_TRUE(file.contains("ints"));
  EXPECT_FALSE(file.contains("missing"));
  std::string dtype;
  std::vector<int64_t> shape;
  ASSERT_TRUE(file.info("brain", dtype, shape).isOk());
  EXPECT_EQ(dtype, "BF16");
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 2, 2}));
}

TEST(Safetensors, HeaderIsPaddedWithSpacesToAMultipleOfEight) {
  TempDir dir;
  std::string path = dir.path("padded.safetensors");
  // Try several name lengths so that some header needs padding.
  for (int extra = 0; extra < 8; ++extra) {
    std::string name = "t" + std::string(extra, 'x');
    ASSERT_TRUE(
        writeSafetensors(path, {{name, makeTensor("U8", {3}, {7, 8, 9})}})
            .isOk());
    std::string bytes = readBytes(path);
    ASSERT_GE(bytes.size(), 8u);
    uint64_t headerLength = 0;
    for (int i = 7; i >= 0; --i)
      headerLength = (headerLength << 8) | static_cast<uint8_t>(bytes[i]);
    EXPECT_EQ(headerLength % 8, 0u);
    ASSERT_EQ(bytes.size(), 8 + headerLength + 3);
    std::string header = bytes.substr(8, headerLength);
    EXPECT_EQ(header.front(), '{');
    size_t close = header.find_last_of('}');
    EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos);
    EXPECT_LT(header.size() - close - 1, 8u);
    EXPECT_EQ(bytes.substr(8 + headerLength), std::string("\x07\x08\x09"));
  }
}

TEST(Safetensors, ReadsAHandWrittenHuggingFaceStyleFile) {
  TempDir dir;
  std::string path = dir.path("hf.safetensors");
  // As the Rust library lays it out: metadata first, 8-byte alignment.
  std::string header =
      "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\","
      "\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"I64\","
      "\"shape\":[1,1],\"data_offsets\":[8,16]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::vector<float> a = {1.5f, -2.0f};
  std::vector<int64_t> b = {42};
  std::vector<uint8_t> data = toBytes(a), bData = toBytes(b);
  data.insert(data.end(), bData.begin(), bData.end());
  writeBytes(path,
             safetensorsBytes(header, std::string(data.begin(), data.end())));
  std::map<std::string, HostTensor> read;
  Status status = readSafetensors(path, read);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(read.at("a").bytes, toBytes(a));
  EXPECT_EQ(read.at("b").shape, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(read.at("b").bytes, toBytes(b));
}

TEST(Safetensors, ReadSliceReadsAMiddleRange) {
  TempDir dir;
  std::string path = dir.path("slice.safetensors");
  std::vector<float> values(100);
  for (int i = 0; i < 100; ++i)
    values[i] = static_cast<float>(i);
  std::vector<int32_t> other = {1, 2, 3};
  ASSERT_TRUE(writeSafetensors(
                  path, {{"first", makeTensor("I32", {3}, toBytes(other))},
                         {"w", makeTensor("F32", {10, 10}, toBytes(values))}})
                  .isOk());
  SafetensorsFile file;
  ASSERT_TRUE(SafetensorsFile::open(path, file).isOk());
  std::vector<float> slice(20, -1.0f);
  Status status = file.readSlice("w", 40 * 4, 20 * 4, slice.data());
  ASSERT_TRUE(status.isOk()) << status.message();
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(slice[i], 40.0f + i);

  // The last byte of the tensor is readable, one past it is not.
  float last = 0;
  ASSERT_TRUE(file.readSlice("w", 99 * 4, 4, &last).isOk());
  EXPECT_EQ(last, 99.0f);
  expectError(file.readSlice("w", 99 * 4, 8, slice.data()),
              {path, "'w'", "offset 396", "400 bytes"});
  expectError(file.readSlice("w", -4, 4, slice.data()), {path, "'w'", "-4"});
  expectError(file.readSlice("nope", 0, 4, slice.data()), {path, "'nope'"});
  std::vector<uint8_t> bytes;
  expectError(file.read("nope", bytes), {path, "'nope'"});
  std::string dtype;
  std::vector<int64_t> shape;
  expectError(file.info("nope", dtype, shape), {path, "'nope'"});
}

/// Writes `bytes` to a file in `dir` and expects opening it to fail with a
/// message naming the file and containing `parts`.
void expectBadFile(const TempDir &dir, const std::string &bytes,
                   std::vector<std::string> parts) {
  std::string path = dir.path("bad.safetensors");
  writeBytes(path, bytes);
  SafetensorsFile file;
  parts.insert(parts.begin(), path);
  expectError(SafetensorsFile::open(path, file), parts);
  std::map<std::string, HostTensor> tensors;
  expectError(readSafetensors(path, tensors), parts);
}

TEST(Safetensors, MissingFile) {
  TempDir dir;
  std::string path = dir.path("absent.safetensors");
  SafetensorsFile file;
  expectError(SafetensorsFile::open(path, file),
              {path, "cannot open", "No such file"});
}

TEST(Safetensors, FileShorterThanTheLengthField) {
  TempDir dir;
  expectBadFile(dir, "abcde", {"5 bytes", "too short"});
  expectBadFile(dir, "", {"0 bytes", "too short"});
}

TEST(Safetensors, HeaderLengthBeyondTheFile) {
  TempDir dir;
  expectBadFile(dir, littleEndian64(1000) + "{}",
                {"header length 1000", "beyond", "2 bytes"});
  expectBadFile(dir, littleEndian64(~uint64_t(0)) + "{}",
                {"header length 18446744073709551615", "beyond"});
}

TEST(Safetensors, HeaderNotJsonOrNotAnObject) {
  TempDir dir;
  expectBadFile(dir, safetensorsBytes("{\"a\": ", ""), {"not valid JSON"});
  expectBadFile(dir, safetensorsBytes("[1, 2]", ""),
                {"array", "not an object"});
  expectBadFile(dir, safetensorsBytes("{\"t\": 3}", ""),
                {"tensor 't'", "not an object"});
}

TEST(Safetensors, EntryMissingAField) {
  TempDir dir;
  expectBadFile(
      dir,
      safetensorsBytes("{\"t\": {\"shape\": [1], \"data_offsets\": [0, 4]}}",
                       "abcd"),
      {"tensor 't'", "no \"dtype\""});
  expectBadFile(
      dir,
      safetensorsBytes(
          "{\"t\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", "abcd"),
      {"tensor 't'", "no \"shape\""});
  expectBadFile(
      dir,
      safetensorsBytes("{\"t\": {\"dtype\": \"F32\", \"shape\": [1]}}", "abcd"),
      {"tensor 't'", "no \"data_offsets\""});
}

TEST(Safetensors, MalformedFields) {
  TempDir dir;
  expectBadFile(dir,
                safetensorsBytes("{\"t\": {\"dtype\": \"Q7\", \"shape\": [1], "
                                 "\"data_offsets\": [0, 4]}}",
                                 "abcd"),
                {"tensor 't'", "unknown dtype 'Q7'"});
  expectBadFile(dir,
                safetensorsBytes("{\"t\": {\"dtype\": \"F32\", \"shape\": "
                                 "[-1], \"data_offsets\": [0, 4]}}",
                                 "abcd"),
                {"tensor 't'", "dimension 0", "-1", "non-negative"});
  expectBadFile(dir,
                safetensorsBytes("{\"t\": {\"dtype\": \"F32\", \"shape\": "
                                 "[1], \"data_offsets\": [0]}}",
                                 "abcd"),
                {"tensor 't'", "[0]", "[begin, end]"});
  expectBadFile(dir, safetensorsBytes("{\"__metadata__\": {\"k\": 1}}", ""),
                {"__metadata__", "'k'", "not a string"});
}

TEST(Safetensors, OffsetsOutOfOrderOrBeyondTheFile) {
  TempDir dir;
  expectBadFile(dir,
                safetensorsBytes("{\"t\": {\"dtype\": \"F32\", \"shape\": [1], "
                                 "\"data_offsets\": [8, 4]}}",
                                 std::string(8, 'x')),
                {"tensor 't'", "[8, 4]", "out of order"});
  expectBadFile(dir,
                safetensorsBytes("{\"t\": {\"dtype\": \"F32\", \"shape\": [2], "
                                 "\"data_offsets\": [0, 8]}}",
                                 "abcd"),
                {"tensor 't'", "[0, 8]", "beyond", "4 bytes"});
  expectBadFile(dir,
                safetensorsBytes("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
                                 "\"data_offsets\": [0, 8]}, \"b\": "
                                 "{\"dtype\": \"F32\", \"shape\": [2], "
                                 "\"data_offsets\": [4, 12]}}",
                                 std::string(12, 'x')),
                {"'a'", "'b'", "overlap"});
}

// As safetensors' own validate(): the tensors fill the data section.
TEST(Safetensors, BytesOfNoTensor) {
  TempDir dir;
  expectBadFile(
      dir,
      safetensorsBytes("{\"t\": {\"dtype\": \"F32\", \"shape\": [1], "
                       "\"data_offsets\": [4, 8]}}",
                       std::string(8, 'x')),
      {"bytes [0, 4)", "before the first tensor 't'", "belong to no tensor"});
  expectBadFile(
      dir,
      safetensorsBytes("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
                       "\"data_offsets\": [0, 4]}, \"b\": "
                       "{\"dtype\": \"F32\", \"shape\": [1], "
                       "\"data_offsets\": [8, 12]}}",
                       std::string(12, 'x')),
      {"bytes [4, 8)", "between tensors 'a' and 'b'", "belong to no tensor"});
  expectBadFile(dir,
                safetensorsBytes("{\"t\": {\"dtype\": \"F32\", \"shape\": [1], "
                                 "\"data_offsets\": [0, 4]}}",
                                 std::string(9, 'x')),
                {"the last 5 bytes", "after tensor 't'", "appended"});
  expectBadFile(dir, safetensorsBytes("{}", "xy"),
                {"the last 2 bytes", "belong to no tensor"});
}

TEST(Safetensors, ByteSizeNotMatchingTheShape) {
  TempDir dir;
  expectBadFile(dir,
                safetensorsBytes("{\"t\": {\"dtype\": \"F32\", \"shape\": "
                                 "[3], \"data_offsets\": [0, 8]}}",
                                 std::string(8, 'x')),
                {"tensor 't'", "hold 8 bytes", "[3]", "F32", "needs 12"});
}

TEST(Safetensors, FailedWriteLeavesNoFileAndNoTemporary) {
  TempDir dir;
  std::string path = dir.path("no-such-dir/model.safetensors");
  expectError(writeSafetensors(path, sampleTensors()),
              {path, "cannot create", "No such file"});
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(Safetensors, FailedWriteDoesNotClobberTheExistingFile) {
  TempDir dir;
  std::string path = dir.path("ckpt.safetensors");
  ASSERT_TRUE(writeSafetensors(path, sampleTensors()).isOk());
  std::string before = readBytes(path);

  // A tensor whose bytes do not match its shape fails before any write.
  expectError(
      writeSafetensors(path, {{"w", makeTensor("F32", {3}, {1, 2, 3, 4})}}),
      {path, "tensor 'w'", "4 bytes", "needs 12"});
  EXPECT_EQ(readBytes(path), before);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  expectError(writeSafetensors(path, {{"w", makeTensor("Q7", {1}, {1})}}),
              {path, "tensor 'w'", "unknown dtype 'Q7'"});
  auto dup = sampleTensors();
  dup.push_back(dup.front());
  expectError(writeSafetensors(path, dup), {path, "'wte.weight'", "twice"});
  expectError(
      writeSafetensors(path, {{"__metadata__", makeTensor("U8", {1}, {1})}}),
      {path, "reserved"});
  EXPECT_EQ(readBytes(path), before);

  // A destination that cannot be replaced (a directory) fails at the
  // rename; the temporary file must not be left behind.
  std::string dirPath = dir.path("occupied");
  fs::create_directory(dirPath);
  expectError(writeSafetensors(dirPath, sampleTensors()), {dirPath, "rename"});
  EXPECT_TRUE(fs::is_directory(dirPath));
  EXPECT_FALSE(fs::exists(dirPath + ".tmp"));
}

TEST(Safetensors, OverwriteReplacesTheFile) {
  TempDir dir;
  std::string path = dir.path("ckpt.safetensors");
  ASSERT_TRUE(writeSafetensors(path, sampleTensors()).isOk());
  ASSERT_TRUE(
      writeSafetensors(path, {{"only", makeTensor("U8", {2}, {9, 9})}}).isOk());
  std::map<std::string, HostTensor> read;
  ASSERT_TRUE(readSafetensors(path, read).isOk());
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read.at("only").bytes, (std::vector<uint8_t>{9, 9}));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

//===----------------------------------------------------------------------===//
// TokenData
//===----------------------------------------------------------------------===//

/// Writes tokens as train.bin does: uint16 little-endian.
void writeTokens(const std::string &path, const std::vector<uint16_t> &ids) {
  std::string bytes;
  for (uint16_t id : ids) {
    bytes.push_back(static_cast<char>(id & 0xFF));
    bytes.push_back(static_cast<char>(id >> 8));
  }
  writeBytes(path, bytes);
}

/// Token i is 1000 + i: above 255 so that byte order matters.
std::vector<uint16_t> countingTokens(int64_t n) {
  std::vector<uint16_t> ids(n);
  for (int64_t i = 0; i < n; ++i)
    ids[i] = static_cast<uint16_t>(1000 + i);
  return ids;
}

//===----------------------------------------------------------------------===//
// Parameters published as rows of one tensor (Phi-3's qkv_proj)
//===----------------------------------------------------------------------===//

namespace {
/// A [rows, 2] F32 tensor whose element i is first + i.
HostTensor rowsFrom(float first, int64_t rows) {
  HostTensor tensor;
  tensor.dtype = "F32";
  tensor.shape = {rows, 2};
  std::vector<float> values(size_t(rows * 2));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = first + float(i);
  tensor.bytes.resize(values.size() * sizeof(float));
  std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  return tensor;
}

std::vector<float> floatsOf(const HostTensor &tensor) {
  std::vector<float> values(tensor.bytes.size() / sizeof(float));
  std::memcpy(values.data(), tensor.bytes.data(), tensor.bytes.size());
  return values;
}

/// q (rows 0-1), k (row 2) and v (row 3) of "qkv"; "o" on its own.
std::vector<ParamDesc> fusedParams() {
  std::vector<ParamDesc> params(4);
  const char *names[] = {"q", "k", "v", "o"};
  int64_t rows[] = {2, 1, 1, 2}, at[] = {0, 2, 3, 0};
  for (size_t i = 0; i < 4; ++i) {
    params[i].name = names[i];
    params[i].shape = {rows[i], 2};
    if (i < 3) {
      params[i].fusedIn = "qkv";
      params[i].fusedRow = at[i];
    }
  }
  return params;
}
} // namespace

TEST(FusedTensors, SavedFusedInPlaceOfTheFirstAndReadBackByRows) {
  std::vector<ParamDesc> params = fusedParams();
  std::vector<std::pair<std::string, HostTensor>> tensors = {
      {"q", rowsFrom(0, 2)},
      {"o", rowsFrom(100, 2)},
      {"k", rowsFrom(4, 1)},
      {"v", rowsFrom(6, 1)}};
  fuseAsPublished(params, tensors);
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].first, "qkv");
  EXPECT_EQ(tensors[0].second.shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(floatsOf(tensors[0].second),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(tensors[1].first, "o");

  // Written and read through the view: each parameter is its rows.
  TempDir dir;
  std::string path = dir.path("fused.safetensors");
  ASSERT_TRUE(writeSafetensors(path, tensors, {}));
  HuggingFaceWeights file;
  ASSERT_TRUE(
      HuggingFaceWeights::open(path, {"q", "k", "v", "o", "qkv"}, file));
  FusedTensorView view(file, params);
  // The fused tensor's name stands for its parameters'.
  std::vector<std::string> names = view.names();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"k", "o", "q", "v"}));
  EXPECT_TRUE(view.contains("q"));
  std::string dtype;
  std::vector<int64_t> shape;
  ASSERT_TRUE(view.info("k", dtype, shape));
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 2}));
  float k[2];
  ASSERT_TRUE(view.readRuns("k", {{0, 2}}, k));
  EXPECT_EQ(k[0], 4.0f);
  EXPECT_EQ(k[1], 5.0f);
  float vSecond;
  ASSERT_TRUE(view.readRuns("v", {{1, 1}}, &vSecond));
  EXPECT_EQ(vSecond, 7.0f);
}

TEST(FusedTensors, RowsThatDoNotTileStayUnderTheirNames) {
  // v missing from the saved tensors: q and k do not make the whole
  // tensor from row 0 on, so nothing is fused.
  std::vector<ParamDesc> params = fusedParams();
  std::vector<std::pair<std::string, HostTensor>> tensors = {
      {"q", rowsFrom(0, 2)}, {"k", rowsFrom(4, 1)}, {"o", rowsFrom(100, 2)}};
  fuseAsPublished(params, tensors);
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0].first, "q");
  EXPECT_EQ(tensors[1].first, "k");
  // A fused tensor too short for a parameter's rows is refused by name.
  TempDir dir;
  std::string path = dir.path("short.safetensors");
  std::vector<std::pair<std::string, HostTensor>> shortFile = {
      {"qkv", rowsFrom(0, 3)}};
  ASSERT_TRUE(writeSafetensors(path, shortFile, {}));
  HuggingFaceWeights file;
  ASSERT_TRUE(HuggingFaceWeights::open(path, {"q", "k", "v", "qkv"}, file));
  FusedTensorView view(file, params);
  std::string dtype;
  std::vector<int64_t> shape;
  EXPECT_TRUE(view.info("k", dtype, shape));
  Status status = view.info("v", dtype, shape);
  EXPECT_EQ(status.message(),
            path + ": tensor 'qkv' has shape [3, 2], which does not hold rows "
                   "3 to 4 of shape [1, 2] for parameter 'v'");
}

TEST(TokenData, BatchIndexing) {
  TempDir dir;
  std::string path = dir.path("train.bin");
  writeTokens(path, countingTokens(200));
  TokenData data;
  ASSERT_TRUE(TokenData::open(path, data).isOk());
  EXPECT_EQ(data.numTokens(), 200);
  EXPECT_EQ(data.token(5), 1005);

  const int64_t b = 2, s = 4;
  std::vector<int32_t> inputs(b * s), labels(b * s);
  ASSERT_TRUE(data.batch(0, b, s, inputs.data(), labels.data()).isOk());
  EXPECT_EQ(inputs, (std::vector<int32_t>{1000, 1001, 1002, 1003, 1004, 1005,
                                          1006, 1007}));
  EXPECT_EQ(labels, (std::vector<int32_t>{1001, 1002, 1003, 1004, 1005, 1006,
                                          1007, 1008}));

  // Step 2 starts at token (2 * 2 + 0) * 4 = 16.
  ASSERT_TRUE(data.batch(2, b, s, inputs.data(), labels.data()).isOk());
  EXPECT_EQ(inputs, (std::vector<int32_t>{1016, 1017, 1018, 1019, 1020, 1021,
                                          1022, 1023}));
  EXPECT_EQ(labels, (std::vector<int32_t>{1017, 1018, 1019, 1020, 1021, 1022,
                                          1023, 1024}));

  // Step 23 reads tokens [184, 193), the last that fit in 200; step 24
  // would read [192, 201).
  ASSERT_TRUE(data.batch(23, b, s, inputs.data(), labels.data()).isOk());
  EXPECT_EQ(labels.back(), 1000 + 192);
  expectError(data.batch(24, b, s, inputs.data(), labels.data()),
              {path, "step 24", "[192, 201)", "only 200 tokens"});
  expectError(data.batch(0, 0, s, inputs.data(), labels.data()),
              {path, "batch size 0"});
}

TEST(TokenData, CheckCoversCountsTheTokensTheStepsNeed) {
  TempDir dir;
  std::string path = dir.path("train.bin");
  writeTokens(path, countingTokens(200));
  TokenData data;
  ASSERT_TRUE(TokenData::open(path, data).isOk());
  // ((steps-1)*B + B-1)*S + S + 1 = steps*B*S + 1.
  EXPECT_TRUE(data.checkCovers(24, 2, 4, 50257).isOk()); // 193 tokens
  EXPECT_TRUE(data.checkCovers(0, 2, 4, 50257).isOk());
  expectError(data.checkCovers(25, 2, 4, 50257),
              {path, "has 200 tokens", "25 steps", "need 201 tokens"});
  EXPECT_TRUE(data.checkCovers(1, 1, 199, 50257).isOk()); // 200 tokens
  expectError(data.checkCovers(1, 1, 200, 50257),
              {path, "has 200 tokens", "1 steps", "need 201 tokens"});
}

TEST(TokenData, CheckCoversFindsTheFirstTokenOutsideTheVocabulary) {
  TempDir dir;
  std::string path = dir.path("train.bin");
  std::vector<uint16_t> ids(100, 7);
  ids[57] = 5000; // the first out-of-range id
  ids[60] = 6000;
  writeTokens(path, ids);
  TokenData data;
  ASSERT_TRUE(TokenData::open(path, data).isOk());
  // Four steps of 2 x 8 read 65 tokens, including position 57.
  expectError(data.checkCovers(4, 2, 8, 1000),
              {path, "token id 5000", "position 57", "vocabulary size 1000"});
  // Two steps read 33 tokens, all 7.
  EXPECT_TRUE(data.checkCovers(2, 2, 8, 1000).isOk());
  EXPECT_TRUE(data.checkCovers(4, 2, 8, 50257).isOk());
}

TEST(TokenData, OddByteFileMissingFileAndEmptyFile) {
  TempDir dir;
  std::string odd = dir.path("odd.bin");
  writeBytes(odd, "abc");
  TokenData data;
  expectError(TokenData::open(odd, data), {odd, "3 bytes", "odd"});

  std::string absent = dir.path("absent.bin");
  expectError(TokenData::open(absent, data), {absent, "cannot open"});

  std::string empty = dir.path("empty.bin");
  writeBytes(empty, "");
  ASSERT_TRUE(TokenData::open(empty, data).isOk());
  EXPECT_EQ(data.numTokens(), 0);
  expectError(data.checkCovers(1, 1, 1, 10), {empty, "has 0 tokens"});
}

//===----------------------------------------------------------------------===//
// SyntheticCorpus
//===----------------------------------------------------------------------===//

SyntheticCorpus makeCorpus(const SyntheticCorpusOptions &options) {
  SyntheticCorpus corpus;
  Status status = SyntheticCorpus::create(options, corpus);
  EXPECT_TRUE(status.isOk()) << status.message();
  return corpus;
}

TEST(SyntheticCorpus, SameSeedSameStream) {
  SyntheticCorpusOptions options;
  std::vector<uint16_t> a, b, c, d, prefix;
  makeCorpus(options).generate(5000, a);
  makeCorpus(options).generate(5000, b);
  EXPECT_EQ(a, b);
  makeCorpus(options).generate(1234, prefix);
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), a.begin()));

  SyntheticCorpusOptions other = options;
  other.seed = options.seed + 1;
  makeCorpus(other).generate(5000, c);
  EXPECT_NE(a, c);
  makeCorpus(options).generate(5000, d, /*stream=*/1);
  EXPECT_NE(a, d);
}

TEST(SyntheticCorpus, StreamIsPinned) {
  // Guards against changes to the construction or the sampling, which
  // would silently move every recorded loss target.
  SyntheticCorpusOptions options; // V = 64, order 2, 6 successors, seed 1234
  SyntheticCorpus corpus = makeCorpus(options);
  std::vector<uint16_t> tokens;
  corpus.generate(16, tokens);
  std::vector<uint16_t> expected = {15, 63, 63, 10, 46, 34, 58, 19,
                                    6,  41, 41, 13, 24, 44, 1,  48};
  EXPECT_EQ(tokens, expected);
  EXPECT_NEAR(corpus.entropyRateNats(), 1.61299855579546, 1e-9);
}

/// The mean of -log p(x[t] | x[t-order .. t-1]) over the stream.
double empiricalCrossEntropy(const SyntheticCorpus &corpus,
                             const std::vector<uint16_t> &tokens) {
  int64_t k = corpus.options().order;
  double sum = 0.0;
  for (size_t t = k; t < tokens.size(); ++t) {
    double p = corpus.probability(&tokens[t - k], tokens[t]);
    EXPECT_GT(p, 0.0) << "token " << t << " has probability 0";
    sum -= std::log(p);
  }
  return sum / static_cast<double>(tokens.size() - k);
}

TEST(SyntheticCorpus, EmpiricalLossMatchesTheEntropyRate) {
  for (int64_t order : {1, 2, 3}) {
    SyntheticCorpusOptions options;
    options.order = order;
    options.vocabSize = order == 3 ? 32 : 64;
    options.seed = 7 + order;
    SyntheticCorpus corpus = makeCorpus(options);
    double h = corpus.entropyRateNats();
    EXPECT_GT(h, 0.0);
    EXPECT_LT(h, std::log(static_cast<double>(options.vocabSize)));
    EXPECT_LE(h, std::log(static_cast<double>(options.successors)) + 1e-12);

    std::vector<uint16_t> tokens;
    corpus.generate(200000, tokens);
    for (uint16_t id : tokens)
      ASSERT_LT(id, options.vocabSize);
    double empirical = empiricalCrossEntropy(corpus, tokens);
    EXPECT_NEAR(empirical, h, 0.02 * h) << "order " << order;
  }
}

TEST(SyntheticCorpus, LossFloorOfShortWindows) {
  SyntheticCorpusOptions options;
  options.order = 1;
  SyntheticCorpus first = makeCorpus(options);
  EXPECT_NEAR(first.lossFloorNats(1), first.entropyRateNats(), 1e-12);
  EXPECT_NEAR(first.lossFloorNats(64), first.entropyRateNats(), 1e-12);

  options.order = 2;
  SyntheticCorpus second = makeCorpus(options);
  double h = second.entropyRateNats();
  double h0 = second.lossFloorNats(1); // H(x1 | x0)
  EXPECT_GT(h0, h);
  EXPECT_NEAR(second.lossFloorNats(4), (h0 + 3 * h) / 4, 1e-12);

  // H(x1 | x0) estimated from pair counts of a long stream.
  std::vector<uint16_t> tokens;
  second.generate(400000, tokens);
  const int64_t v = options.vocabSize;
  std::vector<double> pairs(v * v, 0.0), singles(v, 0.0);
  for (size_t t = 0; t + 1 < tokens.size(); ++t) {
    pairs[tokens[t] * v + tokens[t + 1]] += 1;
    singles[tokens[t]] += 1;
  }
  double n = static_cast<double>(tokens.size() - 1), estimate = 0.0;
  for (int64_t a = 0; a < v; ++a)
    for (int64_t b = 0; b < v; ++b)
      if (pairs[a * v + b] > 0)
        estimate -=
            pairs[a * v + b] / n * std::log(pairs[a * v + b] / singles[a]);
  EXPECT_NEAR(estimate, h0, 0.02 * h0);
}

TEST(SyntheticCorpus, TokenFileRoundTrip) {
  TempDir dir;
  std::string path = dir.path("synthetic.bin");
  SyntheticCorpusOptions options;
  SyntheticCorpus corpus = makeCorpus(options);
  ASSERT_TRUE(corpus.writeTokenFile(path, 3000).isOk());
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  std::vector<uint16_t> expected;
  corpus.generate(3000, expected);
  TokenData data;
  ASSERT_TRUE(TokenData::open(path, data).isOk());
  ASSERT_EQ(data.numTokens(), 3000);
  for (int64_t i = 0; i < 3000; ++i)
    ASSERT_EQ(data.token(i), expected[i]) << i;
  EXPECT_TRUE(data.checkCovers(2, 4, 64, options.vocabSize).isOk());

  std::string bad = dir.path("missing-dir/synthetic.bin");
  expectError(corpus.writeTokenFile(bad, 10), {bad});
  EXPECT_FALSE(fs::exists(bad + ".tmp"));
}

TEST(SyntheticCorpus, RejectsBadOptions) {
  SyntheticCorpus corpus;
  SyntheticCorpusOptions options;
  options.order = 4;
  expectError(SyntheticCorpus::create(options, corpus), {"order 4"});
  options = SyntheticCorpusOptions();
  options.vocabSize = 1;
  expectError(SyntheticCorpus::create(options, corpus), {"vocabulary size 1"});
  options = SyntheticCorpusOptions();
  options.successors = 65;
  expectError(SyntheticCorpus::create(options, corpus), {"65 successors"});
  options = SyntheticCorpusOptions();
  options.vocabSize = 50257;
  options.order = 2;
  expectError(SyntheticCorpus::create(options, corpus), {"2^24"});
}

//===----------------------------------------------------------------------===//
// LearningRate
//===----------------------------------------------------------------------===//

using Style = LearningRateSchedule::Style;

LearningRateSchedule schedule(Style style) {
  LearningRateSchedule s;
  s.maxLr = 1e-3;
  s.minLr = 1e-4;
  s.warmupIters = 10;
  s.decayIters = 110;
  s.style = style;
  return s;
}

ParamDesc normalParam(std::string name, std::vector<int64_t> shape) {
  ParamDesc param;
  param.name = std::move(name);
  param.shape = std::move(shape);
  param.init.kind = ParamInitSpec::Kind::Normal;
  param.init.std = 0.02;
  return param;
}

TEST(ParamInit, RangesGiveTheWholeTensorsBits) {
  // An odd count (the last pair's second value is not stored) and ranges
  // of every even split, as the runtime's threads draw them.
  for (int64_t n : {int64_t(1), int64_t(2), int64_t(1001), int64_t(5000)}) {
    ParamDesc param = normalParam("h.3.mlp.c_fc.weight", {n});
    std::vector<float> whole(size_t(n), -1.0f);
    initParameter(param, 1234, whole.data());
    for (int64_t step :
         {int64_t(2), int64_t(312), int64_t(626), int64_t(1000)}) {
      std::vector<float> split(size_t(n), -1.0f);
      for (int64_t first = 0; first < n; first += step)
        initParameterRange(param, 1234, split.data(), first,
                           std::min(n, first + step));
      EXPECT_EQ(0, std::memcmp(whole.data(), split.data(), n * sizeof(float)))
          << n << " values in ranges of " << step;
    }
  }
  ParamDesc ones = normalParam("ln_f.weight", {7});
  ones.init.kind = ParamInitSpec::Kind::Ones;
  std::vector<float> values(7, 0.0f);
  initParameterRange(ones, 1, values.data(), 2, 5);
  EXPECT_EQ(values, (std::vector<float>{0, 0, 1, 1, 1, 0, 0}));
}

TEST(ParamInit, OnePassOfSkipsGivesEachRangesStart) {
  // As the runtime draws a tensor on several threads: one generator skips
  // from range to range, leaving a copy at each start, and the copies
  // draw their ranges in any order.
  for (int64_t n : {int64_t(1), int64_t(1001), int64_t(5000)}) {
    ParamDesc param = normalParam("h.0.attn.c_attn.weight", {n});
    std::vector<float> whole(size_t(n), -1.0f);
    initParameter(param, 99, whole.data());
    for (int64_t step : {int64_t(2), int64_t(312), int64_t(1000)}) {
      std::vector<ParameterDraws> starts;
      ParameterDraws draws(param, 99);
      for (int64_t first = 0; first < n; first += step) {
        draws.skipTo(first);
        starts.push_back(draws);
      }
      std::vector<float> split(size_t(n), -1.0f);
      for (size_t r = starts.size(); r-- > 0;) {
        int64_t first = int64_t(r) * step;
        EXPECT_EQ(starts[r].position(), first);
        starts[r].fill(split.data(), first, std::min(n, first + step));
      }
      EXPECT_EQ(0, std::memcmp(whole.data(), split.data(), n * sizeof(float)))
          << n << " values in ranges of " << step << ", last range first";
    }
  }
}

TEST(ParamInit, NormalValuesArePinned) {
  // A checkpoint-free run's starting point: these draws must not change
  // with the runtime (nor with how many threads draw them).
  ParamDesc param = normalParam("wte", {6});
  std::vector<float> values(6);
  initParameter(param, 1234, values.data());
  const float pinned[6] = {0.013930928f,   0.0130121373f,  -0.00250140228f,
                           0.00242629973f, -0.0141471364f, 0.0389111564f};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(values[size_t(i)], pinned[i]) << "value " << i;
}

TEST(LearningRate, WarmupIsLinearFromZero) {
  for (Style style : {Style::Constant, Style::Linear, Style::Cosine}) {
    LearningRateSchedule s = schedule(style);
    ASSERT_TRUE(s.validate().isOk());
    // Megatron's first update runs with num_steps = 0.
    EXPECT_DOUBLE_EQ(s.at(0), 0.0);
    EXPECT_DOUBLE_EQ(s.at(1), 1e-4);
    EXPECT_DOUBLE_EQ(s.at(5), 5e-4);
    EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
    EXPECT_DOUBLE_EQ(s.at(-3), 0.0);
  }
  LearningRateSchedule fromInit = schedule(Style::Linear);
  fromInit.initLr = 2e-4;
  EXPECT_DOUBLE_EQ(fromInit.at(0), 2e-4);
  EXPECT_DOUBLE_EQ(fromInit.at(5), 6e-4);
}

TEST(LearningRate, ConstantStaysAtMaxAfterWarmup) {
  LearningRateSchedule s = schedule(Style::Constant);
  EXPECT_DOUBLE_EQ(s.at(11), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(110), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(100000), 1e-3);
}

TEST(LearningRate, LinearAndCosineDecay) {
  LearningRateSchedule linear = schedule(Style::Linear);
  LearningRateSchedule cosine = schedule(Style::Cosine);
  // Midpoint: decay ratio (60 - 10) / (110 - 10) = 0.5.
  EXPECT_DOUBLE_EQ(linear.at(60), 1e-4 + 0.5 * 9e-4);
  EXPECT_NEAR(cosine.at(60), 1e-4 + 0.5 * 9e-4, 1e-18);
  // A quarter of the way: linear 0.75, cosine (cos(pi/4) + 1) / 2.
  EXPECT_DOUBLE_EQ(linear.at(35), 1e-4 + 0.75 * 9e-4);
  EXPECT_NEAR(cosine.at(35), 1e-4 + 0.5 * (std::sqrt(0.5) + 1) * 9e-4, 1e-15);
  // At the end of decay both reach min, and stay there.
  EXPECT_DOUBLE_EQ(linear.at(110), 1e-4);
  EXPECT_DOUBLE_EQ(cosine.at(110), 1e-4);
  EXPECT_DOUBLE_EQ(linear.at(111), 1e-4);
  EXPECT_DOUBLE_EQ(cosine.at(5000), 1e-4);
  // Without warmup the first update uses max.
  linear.warmupIters = 0;
  EXPECT_DOUBLE_EQ(linear.at(0), 1e-3);
  EXPECT_DOUBLE_EQ(linear.at(55), 1e-4 + 0.5 * 9e-4);
}

TEST(LearningRate, ParseStyleAndValidate) {
  Style style = Style::Constant;
  ASSERT_TRUE(parseStyle("cosine", style).isOk());
  EXPECT_EQ(style, Style::Cosine);
  ASSERT_TRUE(parseStyle("linear", style).isOk());
  EXPECT_EQ(style, Style::Linear);
  ASSERT_TRUE(parseStyle("constant", style).isOk());
  EXPECT_EQ(style, Style::Constant);
  expectError(parseStyle("exponential", style),
              {"(--lr-decay-style) 'exponential'", "constant, linear, cosine"});
  EXPECT_EQ(style, Style::Constant);
  EXPECT_STREQ(styleName(Style::Linear), "linear");

  LearningRateSchedule s = schedule(Style::Cosine);
  s.warmupIters = 110;
  expectError(s.validate(),
              {"warmup iterations (--lr-warmup-iters) 110",
               "below the decay iterations (--lr-decay-iters, default "
               "--steps) 110"});
  s = schedule(Style::Cosine);
  s.minLr = 2e-3;
  // Rates are spelled the shortest way that reads back exactly.
  expectError(s.validate(),
              {"max lr (--lr) 0.001 is below min lr (--min-lr) 0.002"});
  s = schedule(Style::Cosine);
  s.minLr = -1e-7;
  expectError(s.validate(), {"min lr (--min-lr) -1e-07 is negative"});
  s = schedule(Style::Cosine);
  s.decayIters = 0;
  expectError(s.validate(),
              {"decay iterations (--lr-decay-iters, default --steps) 0 "
               "must be positive"});
}

//===----------------------------------------------------------------------===//
// CheckpointShards: a checkpoint of many shards and the open-file limit
//===----------------------------------------------------------------------===//

/// A checkpoint of `shards` files in `dir`, shard r holding element r of
/// tensor "w" (value r).
void writeShardedCheckpoint(const std::string &dir, int shards) {
  for (int rank = 0; rank < shards; ++rank) {
    float value = float(rank);
    TensorPiece piece{"w", {shards}, {{rank, 1}}, &value};
    ASSERT_TRUE(
        writeCheckpointShard(dir, rank, shards, 7, {piece}, {{"format", "t"}}))
        << rank;
  }
}

/// The file descriptors this process holds now.
rlim_t openFileCount() {
  return rlim_t(std::distance(fs::directory_iterator("/proc/self/fd"),
                              fs::directory_iterator()));
}

/// Opens the checkpoint in `dir` of `shards` shards with the soft limit of
/// open files (and the hard one too, with `hardToo`) a few above those open
/// now; exits 0 if every element reads back, else 3 with the error printed.
[[noreturn]] void openUnderALowLimit(const std::string &dir, int shards,
                                     bool hardToo) {
  struct rlimit limit;
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = openFileCount() + 8;
  if (hardToo)
    limit.rlim_max = limit.rlim_cur;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  CheckpointShards checkpoint;
  Status opened = CheckpointShards::open(dir, "t", checkpoint);
  std::vector<float> values(size_t(shards), -1.0f);
  if (opened)
    opened = checkpoint.readRuns("w", {{0, shards}}, values.data());
  for (int r = 0; opened && r < shards; ++r)
    if (values[size_t(r)] != float(r))
      opened = Status::error("element " + std::to_string(r) + " read wrong");
  std::fprintf(stderr, "%s\n", opened ? "ok" : opened.message().c_str());
  std::_Exit(opened ? 0 : 3);
}

// A job of more ranks than the soft limit of open files: loading its
// checkpoint raises the limit (up to the hard one) instead of failing at
// shard 1,000 as "incomplete".
TEST(CheckpointShardsDeathTest, RaisesTheSoftLimitOfOpenFilesForManyShards) {
  TempDir dir;
  writeShardedCheckpoint(dir.path(""), 64);
  EXPECT_EXIT(openUnderALowLimit(dir.path(""), 64, /*hardToo=*/false),
              ::testing::ExitedWithCode(0), "ok");
}

// Past the hard limit: an error that names the limit, not a missing shard.
TEST(CheckpointShardsDeathTest, NamesAHardLimitOfOpenFilesTooLow) {
  TempDir dir;
  writeShardedCheckpoint(dir.path(""), 64);
  EXPECT_EXIT(openUnderALowLimit(dir.path(""), 64, /*hardToo=*/true),
              ::testing::ExitedWithCode(3),
              "its 64 shards are open at once while it loads, but this "
              "process may open at most [0-9]+ files \\(hard limit [0-9]+; "
              "raise it with ulimit -Hn");
}

// A piece's checksums are per 1 MiB chunk: a read checks the chunks it
// touches, across their boundaries, and a damaged chunk fails only the
// reads that touch it, naming its bytes.
TEST(CheckpointShards, ChecksumsPerChunkCheckWhatIsRead) {
  TempDir dir;
  const int64_t count = 700000; // 2.8 MB: chunks of 1 MiB, the last short
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[size_t(i)] = float(i) * 0.5f;
  TensorPiece piece{"w", {count}, {{0, count}}, values.data()};
  ASSERT_TRUE(
      writeCheckpointShard(dir.path(""), 0, 1, 7, {piece}, {{"format", "t"}}));
  auto readBack = [&](int64_t offset, int64_t length) {
    CheckpointShards checkpoint;
    Status status = CheckpointShards::open(dir.path(""), "t", checkpoint);
    std::vector<float> got(static_cast<size_t>(length));
    if (status)
      status = checkpoint.readRuns("w", {{offset, length}}, got.data());
    for (int64_t i = 0; status && i < length; ++i)
      if (got[size_t(i)] != values[size_t(offset + i)])
        status = Status::error("element " + std::to_string(offset + i));
    return status;
  };
  // Whole, across the first boundary (element 262144 starts byte 2^20),
  // and within the last chunk.
  for (auto [offset, length] : {std::pair<int64_t, int64_t>{0, count},
                                {262000, 1000},
                                {600000, 100000}})
    EXPECT_TRUE(readBack(offset, length)) << offset;

  // One byte of the third chunk changed (bytes [2097152, 2800000)).
  std::string path = checkpointShardPath(dir.path(""), 0);
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t headerBytes = 0;
  file.read(reinterpret_cast<char *>(&headerBytes), 8);
  file.seekp(std::streamoff(8 + headerBytes + 2500000));
  file.put('\x7f');
  file.close();
  EXPECT_TRUE(readBack(0, 500000));
  Status damaged = readBack(520000, 10000);
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.message().find("tensor 'w': checksum mismatch in bytes "
                                   "[2097152, 2800000)"),
            std::string::npos)
      << damaged.message();
}

// ZeRO's pieces of a tensor dp does not divide are padded to equal
// lengths: the runs name only the real elements, so the last pieces hold
// fewer (or none), and the rest of their buffer is padding.
TEST(Sharding, PaddedZeroPiecesNameOnlyRealElements) {
  BufferDesc piece;
  piece.shape = {3};
  piece.fullShape = {8};
  piece.shardCount = 3;
  auto runsOf = [&](int64_t index) {
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (const ElementRun &run : shardRuns(piece, index, 0))
      runs.push_back({run.offset, run.count});
    return runs;
  };
  using Runs = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(runsOf(0), (Runs{{0, 3}}));
  EXPECT_EQ(runsOf(1), (Runs{{3, 3}}));
  EXPECT_EQ(runsOf(2), (Runs{{6, 2}}));
  // 13 ranks over 8 elements: the ninth on hold only padding.
  piece.shape = {1};
  piece.shardCount = 13;
  EXPECT_EQ(runsOf(7), (Runs{{7, 1}}));
  EXPECT_TRUE(runsOf(8).empty());
}

// ZeRO inside a tensor-parallel split: a rank's share of a [4, 6] matrix
// split in 2 along its columns is 4 runs of 3; over 5 data-parallel ranks
// its pieces hold 3 elements each (12 padded to 15).
TEST(Sharding, PaddedPiecesOfASplit) {
  BufferDesc piece;
  piece.shape = {3};
  piece.fullShape = {4, 6};
  piece.shardCount = 2;
  piece.shardDim = 1;
  piece.pieceCount = 5;
  auto runsOf = [&](int64_t split, int64_t index) {
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (const ElementRun &run : shardRuns(piece, split, index))
      runs.push_back({run.offset, run.count});
    return runs;
  };
  using Runs = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(runsOf(0, 0), (Runs{{0, 3}}));
  EXPECT_EQ(runsOf(1, 1), (Runs{{9, 3}}));
  EXPECT_EQ(runsOf(0, 3), (Runs{{18, 3}}));
  EXPECT_TRUE(runsOf(0, 4).empty());
}

// A file's text in a message stays on one line and shows what the file holds
// (a tracker of "4\n5" printed its newline raw, splitting the error).
TEST(Strings, QuotedShowsEveryByteOnOneLine) {
  EXPECT_EQ(mtrt::quoted("seven"), "'seven'");
  EXPECT_EQ(mtrt::quoted("4\n5\r\t"), "'4\\n5\\r\\t'");
  EXPECT_EQ(mtrt::quoted("it's a\\b"), "'it\\'s a\\\\b'");
  EXPECT_EQ(mtrt::quoted(std::string("\0\x7f\xff", 3)), "'\\x00\\x7f\\xff'");
  EXPECT_EQ(mtrt::quoted("abcdef", 3), "'abc...'");
  EXPECT_EQ(mtrt::quoted("abc", 3), "'abc'");
}

// Numbers in messages: the shortest spelling that reads back as the value,
// whole numbers below 10^9 with every digit ("90", not "9e+01").
TEST(Strings, NumberIsShortAndReadsBack) {
  EXPECT_EQ(mtrt::number(90), "90");
  EXPECT_EQ(mtrt::number(1500), "1500");
  EXPECT_EQ(mtrt::number(0.9), "0.9");
  EXPECT_EQ(mtrt::number(1e-7), "1e-07");
  EXPECT_EQ(mtrt::number(6e-4), "0.0006");
  EXPECT_EQ(mtrt::number(123456789.0), "123456789");
  EXPECT_EQ(mtrt::number(1e9), "1e+09");
  EXPECT_EQ(mtrt::number(1e14), "1e+14");
  EXPECT_EQ(mtrt::number(1e39), "1e+39");
  EXPECT_EQ(mtrt::number(-250), "-250");
  EXPECT_EQ(mtrt::number(0), "0");
  EXPECT_EQ(mtrt::number(0.1 + 0.2), "0.30000000000000004");
}

} // namespace
