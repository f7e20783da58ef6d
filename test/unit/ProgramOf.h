//===- ProgramOf.h - Small runtime programs for unit tests ------*- C++ -*-===//

#ifndef MEGATRON_TEST_UNIT_PROGRAMOF_H
#define MEGATRON_TEST_UNIT_PROGRAMOF_H

#include "mtrt/Artifact.h"

#include <string>
#include <vector>

/// A program of f32 buffers of `floats[i]` elements at byte `offsets[i]`,
/// each of kind `kind`.
inline mtrt::RankProgram programOf(const std::vector<int64_t> &offsets,
                                   const std::vector<int64_t> &floats,
                                   const std::string &kind = "") {
  mtrt::RankProgram program;
  for (size_t i = 0; i < offsets.size(); ++i) {
    mtrt::BufferDesc buffer;
    buffer.id = int64_t(i);
    buffer.offset = offsets[i];
    buffer.shape = {floats[i]};
    buffer.kind = kind;
    program.buffers.push_back(buffer);
  }
  return program;
}

#endif // MEGATRON_TEST_UNIT_PROGRAMOF_H
