//===- Device.cpp - The backend seam: what every backend shares -----------===//

#include "mtrt/Device.h"

#include <algorithm>

using namespace mtrt;

Device::~Device() = default;

Status Device::prepare(const RankProgram &program) {
  prog = &program;
  Status prepared = prepareProgram(program);
  if (!prepared)
    prog = nullptr;
  return prepared;
}

Status Device::executeEvaluation(const std::vector<bool> &) {
  return Status::error(std::string("evaluation (--eval-interval) is not "
                                   "built for the ") +
                       backendName() + " backend");
}

Status Device::checkPrepared(const char *what) const {
  if (!prog)
    return Status::error(std::string(what) +
                         " before the program was prepared");
  return Status::ok();
}

Status Device::checkEvaluationSlice(const std::vector<bool> &slice) const {
  MTRT_RETURN_IF_ERROR(checkPrepared("an evaluation"));
  if (slice.size() != prog->commands.size())
    return Status::error(
        "an evaluation slice of " + std::to_string(slice.size()) +
        " commands for a program of " + std::to_string(prog->commands.size()));
  return Status::ok();
}

Status Device::checkTransfer(int64_t bufferId, int64_t bytes, int64_t offset,
                             const char *what) const {
  MTRT_RETURN_IF_ERROR(checkPrepared(what));
  const RankProgram &program = *prog;
  if (bufferId < 0 || bufferId >= int64_t(program.buffers.size()))
    return Status::error(std::string(what) + ": no buffer " +
                         std::to_string(bufferId) + " in a program of " +
                         std::to_string(program.buffers.size()) + " buffers");
  const BufferDesc &buffer = program.buffers[size_t(bufferId)];
  if (bytes < 0 || offset < 0 || offset > buffer.bytes() ||
      bytes > buffer.bytes() - offset)
    return Status::error(std::string(what) + " of " + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(offset) +
                         " does not fit buffer " + std::to_string(bufferId) +
                         " ('" + buffer.name + "', " +
                         std::to_string(buffer.bytes()) + " bytes)");
  return Status::ok();
}

Status Device::checkFloatBuffer(int64_t bufferId, const char *what) const {
  MTRT_RETURN_IF_ERROR(checkTransfer(bufferId, 0, 0, what));
  const BufferDesc &buffer = prog->buffers[size_t(bufferId)];
  if (buffer.dtype != DType::F32)
    return Status::error(std::string(what) + ": buffer " +
                         std::to_string(bufferId) + " ('" + buffer.name +
                         "') is not f32");
  return Status::ok();
}

int64_t mtrt::persistentExtent(const RankProgram &program) {
  int64_t extent = 0;
  for (const BufferDesc &buffer : program.buffers)
    if (buffer.offset < program.persistentBytes)
      extent = std::max(extent, buffer.offset + buffer.bytes());
  return extent;
}

int64_t mtrt::commandExtent(const RankProgram &program,
                            const Command &command) {
  int64_t extent = 0;
  for (const auto *ids : {&command.ins, &command.outs})
    for (int64_t id : *ids)
      extent = std::max(extent, program.buffers[size_t(id)].offset +
                                    program.buffers[size_t(id)].bytes());
  return extent;
}

MatmulShape mtrt::matmulShape(const RankProgram &program,
                              const Command &command) {
  const BufferDesc &a = program.buffers[size_t(command.ins[0])];
  const BufferDesc &b = program.buffers[size_t(command.ins[1])];
  const BufferDesc &c = program.buffers[size_t(command.outs[0])];
  MatmulShape shape;
  shape.transposeA = command.get("transpose_a", 0) != 0;
  shape.transposeB = command.get("transpose_b", 0) != 0;
  size_t rank = a.shape.size();
  shape.m = c.shape[rank - 2];
  shape.n = c.shape[rank - 1];
  shape.k = shape.transposeA ? a.shape[rank - 2] : a.shape[rank - 1];
  shape.batch = c.numElements() / (shape.m * shape.n);
  shape.sharedB = b.shape.size() != rank;
  return shape;
}
