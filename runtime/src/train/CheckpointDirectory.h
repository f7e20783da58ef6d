//===- CheckpointDirectory.h - Saving an iteration so it is whole -*- C++ -*-=//
//
// A training checkpoint is a directory of shards, one per rank
// (DIR/iter_NNNNNNN/), and DIR/latest_checkpointed_iteration.txt names the
// newest whole one. Each shard file is written atomically, but a directory
// of several is not: saving over an iteration that already has a directory,
// above all the one the marker names (a job restarted from another
// checkpoint that saves the same iteration again), would replace its shards
// one by one, and a crash in between would leave the marked checkpoint a mix
// of two saves that no run can load.
//
// So a save writes its shards into a staging directory (iter_NNNNNNN.saving)
// and publishes it with renames once every shard is whole:
//   1. iter_N (if any) is renamed iter_N.replaced;
//   2. iter_N.saving is renamed iter_N;
//   3. the marker names N;
//   4. iter_N.replaced is removed.
// The only moment the marked iteration has no directory is between 1 and 2,
// and then its staging directory is whole: a load reads it there, and the
// next save renames it into place before sweeping what killed saves left.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_TRAIN_CHECKPOINTDIRECTORY_H
#define MTRT_TRAIN_CHECKPOINTDIRECTORY_H

#include "mtrt/Status.h"

#include <cstdint>
#include <string>

namespace mtrt::train {

/// The file in a checkpoint directory naming its latest whole iteration.
inline constexpr const char *kLatestFile = "latest_checkpointed_iteration.txt";

/// The iteration the marker of `dir` names; the error names the marker and
/// what is wrong (missing, or not a positive iteration number).
Status readMarkedIteration(const std::string &dir, int64_t &iteration);

/// Whether `dir` holds no checkpoint yet: it does not exist, or holds no
/// marker and no iteration directory.
bool holdsNoCheckpoint(const std::string &dir);

/// DIR/iter_NNNNNNN: where the checkpoint of `iteration` lies.
std::string iterationDir(const std::string &dir, int64_t iteration);

/// Where a save of `iteration` writes its shards before publishing them.
std::string stagingDirOf(const std::string &dir, int64_t iteration);

/// The directory holding the checkpoint of `iteration` for a load: its
/// iteration directory, or, if a save was interrupted between the renames
/// that publish it, its whole staging directory.
std::string readableIterationDir(const std::string &dir, int64_t iteration);

/// Before a run's first save into `dir` (rank 0 only): finishes a publish a
/// crash interrupted (the marked iteration's staging directory renamed into
/// place), then removes what killed saves left: staging and replaced
/// directories and temporary files (*.tmp) in `dir` and its iterations.
Status recoverCheckpointDirectory(const std::string &dir);

/// Creates an empty staging directory for a save of `iteration` into `dir`
/// (rank 0 only; one a killed save of it left is emptied first).
Status beginCheckpointSave(const std::string &dir, int64_t iteration);

/// Publishes the whole staging directory of `iteration` (rank 0 only, once
/// every rank's shard is written and checked): steps 1 to 3 above, then
/// step 4, whose failure (the old directory left as iter_N.replaced, swept
/// by the next run) is only warned about: the checkpoint is saved.
Status publishCheckpoint(const std::string &dir, int64_t iteration);

/// Removes the staging directory of a save that failed (rank 0 only), so a
/// full disk is not kept full by the shards that did get written.
void abandonCheckpointSave(const std::string &dir, int64_t iteration);

} // namespace mtrt::train

#endif // MTRT_TRAIN_CHECKPOINTDIRECTORY_H
