//===- EvaluationSlice.h - The commands a loss depends on -------*- C++ -*-===//
//
// Megatron-LM evaluates a model by running its schedule forward only
// (forward_only=True) with dropout off. A compiled training step holds
// that forward pass among its backward and optimizer commands, but the
// phases the compiler states are for the trace, not a contract: the loss's
// mean is computed among the backward commands, pipeline transfers carry
// none. The evaluation slice is found from the data instead: the commands
// whose results the loss reads, transitively, following aliases to their
// allocation (ArenaLifetimes.h), every earlier writer of a bytes it reads
// (an accumulation writes its buffer more than once), and a receive's
// matching send on its peer stage (the k-th receive of a tag from a peer
// takes the k-th send of that tag to it, as the transfers match), until
// nothing is added.
//
// Running the slice alone computes the loss the step would, leaving the
// training state as it was; a slice that would write a parameter,
// optimizer state or an input, or run a collective over the pipeline axis
// (which every stage would have to join), is refused, naming the command.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_EVALUATIONSLICE_H
#define MTRT_EVALUATIONSLICE_H

#include "mtrt/Artifact.h"
#include "mtrt/Status.h"

#include <vector>

namespace mtrt {

/// For each program of `artifact` (one per pipeline stage), which of its
/// commands the program's or another stage's `loss` output depends on:
/// `slices[s][c]` for command c of stage s. Fails if no program has a loss
/// output, or the slice would change the training state or needs a
/// pipeline-axis collective; errors name the program and command.
Status evaluationSlices(const Artifact &artifact,
                        std::vector<std::vector<bool>> &slices);

} // namespace mtrt

#endif // MTRT_EVALUATIONSLICE_H
