//===- PipelineLayout.h - Explicit split of a model into stages -*- C++ -*-===//
//
// Megatron-LM's --pipeline-model-parallel-layout: which layers each
// (virtual) pipeline stage holds, written as a string. `|` separates the
// stages, in virtual-stage order (for the interleaved schedule, all the
// ranks' first chunks, then their second chunks, ...); `E` is the
// embedding, `t` a transformer layer, `L` the head and the loss; `X*N`
// repeats a letter and `(...)*N` a group, which may hold `|`. For example
// "Et*3|(t*4|)*2t*3L" puts 3 layers beside the embedding on stage 0, 4 on
// each of stages 1 and 2, and 3 beside the loss on stage 3: 14 layers in
// all. The embedding must open the first stage and the loss close the last.
//
// Plain C++17, like the schedules, so that it can be tested without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_ANALYSIS_PIPELINELAYOUT_H
#define MEGATRON_ANALYSIS_PIPELINELAYOUT_H

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace mlir::mt {

/// The number of transformer layers on each virtual stage, in virtual-stage
/// order, or an error message saying what is wrong with `layout` and where.
/// `stages` is pp x virtual stages; `layers` the model's layer count.
std::variant<std::vector<int64_t>, std::string>
parsePipelineLayout(const std::string &layout, int64_t stages, int64_t layers);

} // namespace mlir::mt

#endif // MEGATRON_ANALYSIS_PIPELINELAYOUT_H
