//===- Launcher.h - The ranks of a run: start, agree, abort -----*- C++ -*-===//
//
// The control plane of a run: which process this is among how many (from
// mpirun, Slurm's srun or any MPI launcher; a process started alone is a
// world of one and starts no MPI), agreement and small gathers across all
// ranks, deadlines on every wait, and ending every rank after an error the
// others cannot see. It also builds the data plane, a Communicator over
// the device grid, for the backend.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_LAUNCHER_H
#define MTRT_LAUNCHER_H

#include "mtrt/Communicator.h"
#include "mtrt/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mtrt {

class Launcher {
public:
  virtual ~Launcher() = default;

  /// How the ranks were found ("mpi", "single process").
  virtual const char *name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Every wait for other ranks (agreement, gather, collective, receive,
  /// send completion) gives up after `seconds` with an error naming what it
  /// waited for (0: wait forever). Applies to the communicators it built.
  virtual void setTimeout(double seconds) = 0;

  /// `value` of rank `root` on every rank.
  virtual Status broadcast(int root, double &value) const = 0;
  /// Rank 0 receives every rank's `bytes` (equal sizes), in rank order;
  /// other ranks receive nothing.
  virtual Status gatherToRoot(const void *in, int64_t bytes,
                              std::vector<uint8_t> &out) const = 0;
  /// Rank 0 receives every rank's `text` (of any length), in rank order.
  virtual Status gatherStringsToRoot(const std::string &text,
                                     std::vector<std::string> &out) const = 0;
  /// True when `ok` is true on every rank. A rank that cannot learn the
  /// answer (a peer stopped answering) reports it and ends the run.
  virtual bool allAgree(bool ok) const = 0;
  /// Ends every rank of the run: used after an error that other ranks,
  /// waiting in a collective, cannot see.
  [[noreturn]] virtual void abort(int code) const = 0;

  /// The data plane over a device grid of `gridShape` (row-major: the last
  /// axis varies fastest; empty: one axis holding every rank). Its product
  /// must be the number of ranks.
  virtual Status createCommunicator(const std::vector<int64_t> &gridShape,
                                    std::unique_ptr<Communicator> &out) = 0;
};

/// The process's launcher, started on the first call (which may consume
/// launcher arguments from argv) and the same one afterwards: MPI is
/// initialized at most once per process and finalized at its exit.
Status startLauncher(int &argc, char **&argv, Launcher *&launcher);

} // namespace mtrt

#endif // MTRT_LAUNCHER_H
