//===- ArtifactRoundTripTest.cpp - writeArtifact then loadArtifact --------===//
//
// The artifact's schema has one writer (the exporter calls `writeArtifact`)
// and one reader (`loadArtifact`, megatron-run). An artifact using every
// field of the schema — a pp x dp x tp grid, sharded, split and pieced
// buffers, microbatch inputs, per-rank parameters, send and receive,
// phases and microbatches, outputs — must come back equal, field by field,
// and a second write must produce the same bytes.
//
//===----------------------------------------------------------------------===//

#include "mtrt/Artifact.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace mtrt;

namespace {

BufferDesc buffer(int64_t id, int64_t offset, DType dtype,
                  std::vector<int64_t> shape, std::string kind,
                  std::string name = "") {
  BufferDesc desc;
  desc.id = id;
  desc.offset = offset;
  desc.dtype = dtype;
  desc.shape = std::move(shape);
  desc.kind = std::move(kind);
  desc.name = std::move(name);
  return desc;
}

/// Two stages on a 2 x 2 x 2 grid (pp, dp, tp), using every schema field.
Artifact everyField() {
  Artifact artifact;
  artifact.worldSize = 8;
  artifact.gridShape = {2, 2, 2};
  artifact.gridAxes = {"pp", "dp", "tp"};
  artifact.params = {{"w", DType::F32, {4, 8}},
                     {"b", DType::F32, {8}},
                     {"wte", DType::F32, {16, 8}}};
  // Stored in published weights as rows 12 to 16 of a fused tensor.
  artifact.params[0].fusedIn = "wqkv";
  artifact.params[0].fusedRow = 12;

  RankProgram first;
  first.stage = 0;
  first.flopsPerToken = 1536;
  first.persistentBytes = 1024;
  first.arenaBytes = 4096;
  BufferDesc tokens = buffer(0, 0, DType::I32, {1, 4}, "input", "tokens");
  tokens.microbatch = 1;
  // A tensor-parallel split of w's columns, itself split into ZeRO pieces
  // over the data-parallel axis.
  BufferDesc w = buffer(1, 64, DType::F32, {8}, "param", "w");
  w.fullShape = {4, 8};
  w.shardAxis = 2;
  w.shardCount = 2;
  w.shardDim = 1;
  w.shardChunks = 2;
  w.pieceAxis = 1;
  w.pieceCount = 2;
  // A ZeRO piece of b's optimizer state.
  BufferDesc state = buffer(2, 192, DType::F32, {4}, "exp_avg", "b");
  state.fullShape = {8};
  state.shardAxis = 1;
  state.shardCount = 2;
  BufferDesc activation = buffer(3, 1024, DType::F32, {1, 4, 8}, "activation");
  BufferDesc view = buffer(4, 1024, DType::F32, {4, 8}, "activation");
  view.alias = true;
  BufferDesc table = buffer(5, 256, DType::F32, {16, 8}, "param", "wte");
  first.buffers = {tokens, w, state, activation, view, table};

  Command embed;
  embed.kernel = "embedding";
  embed.ins = {5, 0};
  embed.outs = {3};
  embed.phase = Phase::Forward;
  embed.microbatch = 1;
  embed.chunk = 1;
  embed.params = {{"vocab_size", 16}, {"scale", 0.125}, {"transpose", 1}};
  embed.rankParams = {{"vocab_offset", RankParam{2, 8, 0}}};
  Command send;
  send.kernel = "send";
  send.ins = {3};
  send.phase = Phase::None;
  send.microbatch = 1;
  // A value beyond int64 is written as a double (converting it to an
  // integer to ask whether it is one was undefined: found by the fuzzer).
  send.params = {{"peer_stage", 1}, {"tag", 7}, {"beyond_int64", 1e300}};
  first.commands = {embed, send};

  RankProgram last;
  last.stage = 1;
  last.persistentBytes = 512;
  last.arenaBytes = 1024;
  BufferDesc received = buffer(0, 512, DType::F32, {1, 4, 8}, "activation", "");
  BufferDesc loss = buffer(1, 640, DType::F32, {}, "activation");
  BufferDesc labels = buffer(2, 192, DType::I32, {1, 4}, "input", "labels");
  labels.microbatch = 0;
  BufferDesc bias = buffer(3, 256, DType::F32, {8}, "param", "b");
  last.buffers = {received, loss, labels, bias};
  Command recv;
  recv.kernel = "recv";
  recv.outs = {0};
  recv.microbatch = 1;
  recv.params = {{"peer_stage", 0}, {"tag", 7}};
  Command update;
  update.kernel = "sum_squares";
  update.ins = {0};
  update.outs = {1};
  update.phase = Phase::Optimizer;
  last.commands = {recv, update};
  last.outputs = {{"loss", 1}};

  artifact.programs = {first, last};
  return artifact;
}

void expectEqual(const BufferDesc &a, const BufferDesc &b) {
  SCOPED_TRACE("buffer " + std::to_string(a.id));
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.offset, b.offset);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.alias, b.alias);
  EXPECT_EQ(a.microbatch, b.microbatch);
  EXPECT_EQ(a.fullShape, b.fullShape);
  EXPECT_EQ(a.shardAxis, b.shardAxis);
  EXPECT_EQ(a.shardCount, b.shardCount);
  EXPECT_EQ(a.shardDim, b.shardDim);
  EXPECT_EQ(a.shardChunks, b.shardChunks);
  EXPECT_EQ(a.pieceAxis, b.pieceAxis);
  EXPECT_EQ(a.pieceCount, b.pieceCount);
  EXPECT_EQ(a.validRows, b.validRows);
}

void expectEqual(const Command &a, const Command &b) {
  SCOPED_TRACE("command " + a.kernel);
  EXPECT_EQ(a.kernel, b.kernel);
  EXPECT_EQ(a.ins, b.ins);
  EXPECT_EQ(a.outs, b.outs);
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.microbatch, b.microbatch);
  EXPECT_EQ(a.chunk, b.chunk);
  EXPECT_EQ(a.params, b.params);
  ASSERT_EQ(a.rankParams.size(), b.rankParams.size());
  for (const auto &[name, param] : a.rankParams) {
    ASSERT_TRUE(b.rankParams.count(name)) << name;
    const RankParam &other = b.rankParams.at(name);
    EXPECT_EQ(param.gridAxis, other.gridAxis);
    EXPECT_EQ(param.stride, other.stride);
    EXPECT_EQ(param.base, other.base);
  }
}

std::string written(const Artifact &artifact) {
  std::ostringstream os;
  writeArtifact(artifact, os);
  return os.str();
}

TEST(Artifact, RoundTripKeepsEveryField) {
  Artifact original = everyField();
  std::string path = testing::TempDir() + "artifact-round-trip.mtx";
  {
    std::ofstream out(path);
    out << written(original);
  }
  Artifact loaded;
  Status status = loadArtifact(path, loaded);
  ASSERT_TRUE(status.isOk()) << status.message();

  EXPECT_EQ(loaded.version, kArtifactVersion);
  EXPECT_EQ(loaded.worldSize, original.worldSize);
  EXPECT_EQ(loaded.gridShape, original.gridShape);
  EXPECT_EQ(loaded.gridAxes, original.gridAxes);
  ASSERT_EQ(loaded.params.size(), original.params.size());
  for (size_t i = 0; i < original.params.size(); ++i) {
    EXPECT_EQ(loaded.params[i].name, original.params[i].name);
    EXPECT_EQ(loaded.params[i].dtype, original.params[i].dtype);
    EXPECT_EQ(loaded.params[i].shape, original.params[i].shape);
    EXPECT_EQ(loaded.params[i].fusedIn, original.params[i].fusedIn);
    EXPECT_EQ(loaded.params[i].fusedRow, original.params[i].fusedRow);
  }
  ASSERT_EQ(loaded.programs.size(), original.programs.size());
  for (size_t p = 0; p < original.programs.size(); ++p) {
    SCOPED_TRACE("program " + std::to_string(p));
    const RankProgram &a = original.programs[p], &b = loaded.programs[p];
    EXPECT_EQ(a.stage, b.stage);
    EXPECT_EQ(a.arenaBytes, b.arenaBytes);
    EXPECT_EQ(a.persistentBytes, b.persistentBytes);
    EXPECT_EQ(a.flopsPerToken, b.flopsPerToken);
    EXPECT_EQ(a.outputs, b.outputs);
    ASSERT_EQ(a.buffers.size(), b.buffers.size());
    for (size_t i = 0; i < a.buffers.size(); ++i)
      expectEqual(a.buffers[i], b.buffers[i]);
    ASSERT_EQ(a.commands.size(), b.commands.size());
    for (size_t i = 0; i < a.commands.size(); ++i)
      expectEqual(a.commands[i], b.commands[i]);
  }
  // Writing what was read gives the same document.
  EXPECT_EQ(written(loaded), written(original));
  std::filesystem::remove(path);
}

TEST(Artifact, UnknownPhaseIsAnErrorNamingTheCommand) {
  std::string text = written(everyField());
  size_t at = text.find("\"forward\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 9, "\"sideways\"");
  // A deliberate edit: seal it again so the phase, not the checksum, is
  // what the loader refuses.
  text = sealArtifactText(std::move(text));
  std::string path = testing::TempDir() + "artifact-bad-phase.mtx";
  {
    std::ofstream out(path);
    out << text;
  }
  Artifact loaded;
  Status status = loadArtifact(path, loaded);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("programs[0].commands[0].phase"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("sideways"), std::string::npos)
      << status.message();
  std::filesystem::remove(path);
}

} // namespace
