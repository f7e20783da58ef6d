//===- ArenaLifetimes.h - Buffers live together do not overlap --*- C++ -*-===//
//
// The compiler places every buffer of a program in one arena so that
// buffers alive at the same time never share bytes: parameters, optimizer
// state and inputs hold their bytes for the whole step, and transient
// buffers from the command that writes them to the last that reads them.
// `loadArtifact` checks that the program it was given keeps those rules:
// that an edited or miscompiled artifact cannot have two live buffers
// share bytes (tokens overwriting labels), or a command read a transient
// buffer that nothing has written yet (a deleted or reordered command).
//
// Aliases (reshaped views, in-place updates, a result written over the
// parameter it replaces) are the same allocation as a buffer of the same
// bytes, kind and name, and extend its lifetime.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_ARENALIFETIMES_H
#define MTRT_ARENALIFETIMES_H

#include "mtrt/Artifact.h"
#include "mtrt/Status.h"

#include <cstdint>
#include <vector>

namespace mtrt {

/// When each buffer's bytes are in use, by buffer id. A buffer that is not
/// an alias of another owns an allocation: `owner[id] == id`, live from
/// command `begin[id]` to command `end[id]` (inclusive; -1 to the number of
/// commands for persistent buffers, which hold their bytes across steps).
/// An alias has the owner it shares bytes with; a buffer no command uses
/// has owner -1.
struct ArenaTimeline {
  std::vector<int64_t> owner, begin, end;
};

/// The timeline of `program`; fails if a command reads a buffer that no
/// command has written, or an alias that matches no buffer.
Status buildArenaTimeline(const RankProgram &program, ArenaTimeline &timeline);

/// Checks `program`'s buffers against its commands. Errors name buffers by
/// id and commands by index; the caller names the program.
Status checkArenaLifetimes(const RankProgram &program);

/// True for the kinds of buffer the runtime fills before a step and that
/// persist across steps (parameters, optimizer state, inputs).
bool isPersistentKind(const std::string &kind);

} // namespace mtrt

#endif // MTRT_ARENALIFETIMES_H
