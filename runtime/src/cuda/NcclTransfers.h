//===- NcclTransfers.h - The pipeline's transfers over NCCL -----*- C++ -*-===//
//
// The pipeline's point-to-point transfers on the GPU, where the two stages
// of a transfer have their own GPUs. The compiler orders a schedule's
// transfers as if sends were buffered (MPI's, on CPU ranks: a send never
// waits for its receive), and two neighbouring stages both send before
// they receive in 1F1B's steady state. An NCCL send waits for its
// receive, so here a send copies its bytes into a slot of its own (no
// command of the step writes over them) and is sent from there on a
// stream of its own, one per peer, while the compute stream goes on; a
// receive runs on the compute stream, whose next command needs its bytes.
// Each direction between two stages is a two-rank NCCL communicator of its
// own, used on one stream at each end; NCCL matches a direction's sends
// and receives in order, so open() checks that the receiver takes them in
// the order the sender sends them (tags and sizes).
//
// Bootstrap, over the run's Communicator (MPI): the pipeline group
// all-gathers each rank's GPU (UUID), whether it loaded NCCL and whether
// it asked for host memory (MEGATRON_CUDA_COLLECTIVES=host). A direction
// whose two stages share a GPU or asked for host memory stays with
// HostStagedCollectives; both ends decide alike from the gathered words.
// For the others the sender makes an NCCL id and sends it with a digest
// of its sends; the receiver compares it with its receives and answers;
// then every rank joins its directions' communicators in one NCCL group.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_NCCLTRANSFERS_H
#define MTRT_CUDA_NCCLTRANSFERS_H

#include "mtrt/Communicator.h"
#include "mtrt/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// NCCL's communicator (nccl.h's ncclComm_t), opaque here.
struct ncclComm;

namespace mtrt::gpu {

/// One send or receive of a program, in program order.
struct Transfer {
  int64_t peer = 0;
  int64_t tag = 0;
  int64_t bytes = 0;
};

class NcclTransfers {
public:
  NcclTransfers();
  ~NcclTransfers();
  NcclTransfers(const NcclTransfers &) = delete;
  NcclTransfers &operator=(const NcclTransfers &) = delete;

  /// Chooses each direction's transport for a program's `sends` and
  /// `recvs` along the pipeline's grid `axis` (this rank's GPU: `ordinal`)
  /// and joins the NCCL ones. Every rank of the pipeline group calls it.
  /// `hostWhy`: why some directions stay in host memory ("" if none does).
  Status open(const Communicator &grid, int64_t axis, int ordinal,
              bool hostOnly, const std::vector<Transfer> &sends,
              const std::vector<Transfer> &recvs, std::string &hostWhy);
  /// Whether NCCL carries the sends to (`sending`) or receives from `peer`.
  bool viaNccl(int64_t peer, bool sending) const;

  /// The send of `bytes` from `data` to `peer` on `stream`, which returns
  /// when the peer has received them; the receive of `bytes` into `data`.
  Status send(int64_t peer, const void *data, int64_t bytes,
              cudaStream_t stream);
  Status recv(int64_t peer, void *data, int64_t bytes, cudaStream_t stream);

  /// Whether this rank joined any direction's NCCL communicator.
  bool joined() const;
  /// NCCL's first background error on them ("" if none).
  std::string backgroundError() const;
  /// Hands over the communicators to abort (ncclAbortAll), so that their
  /// sends and receives waiting for a peer return; no transfer runs after.
  std::vector<ncclComm *> releaseForAbort();

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace mtrt::gpu

#endif // MTRT_CUDA_NCCLTRANSFERS_H
