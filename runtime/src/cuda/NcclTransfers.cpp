//===- NcclTransfers.cpp - The pipeline's transfers over NCCL -------------===//

#include "cuda/NcclTransfers.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

using namespace mtrt;
using namespace mtrt::gpu;

namespace {
/// The peers of `transfers`.
[[maybe_unused]] std::set<int64_t>
peersOf(const std::vector<Transfer> &transfers) {
  std::set<int64_t> peers;
  for (const Transfer &transfer : transfers)
    peers.insert(transfer.peer);
  return peers;
}
} // namespace

#if MTRT_HAVE_NCCL
#include "cuda/NcclLibrary.h"

namespace {
/// Tags of the bootstrap's messages: below any MPI's smallest tag bound
/// (32767), and exchanged before the first step's transfers.
constexpr int64_t kOfferTag = 32767, kAnswerTag = 32766;

/// What a sender offers the receiver of one direction: the NCCL id of the
/// direction's communicator (zeros: the sender could not make one) and
/// the count and digest of its sends, in order.
struct Offer {
  ncclUniqueId id;
  int64_t count;
  uint64_t digest;
};

/// The count and FNV-1a digest of the (tag, bytes) of `transfers` with
/// `peer`, in program order.
void describe(const std::vector<Transfer> &transfers, int64_t peer,
              int64_t &count, uint64_t &digest) {
  count = 0;
  digest = 1469598103934665603ull;
  for (const Transfer &transfer : transfers) {
    if (transfer.peer != peer)
      continue;
    ++count;
    for (int64_t word : {transfer.tag, transfer.bytes})
      for (int b = 0; b < 8; ++b) {
        digest ^= uint64_t(word >> (8 * b)) & 0xff;
        digest *= 1099511628211ull;
      }
  }
}
} // namespace

struct NcclTransfers::Impl {
  /// By peer: the communicators of the directions NCCL carries (this rank
  /// is rank 0 of a send's, rank 1 of a receive's).
  std::map<int64_t, ncclComm_t> sendComms, recvComms;

  ~Impl() {
    const NcclLibrary &nccl = NcclLibrary::get();
    for (auto *comms : {&sendComms, &recvComms})
      for (auto &[peer, comm] : *comms)
        if (comm && nccl.commDestroy)
          nccl.commDestroy(comm);
  }
};

NcclTransfers::NcclTransfers() : impl(std::make_unique<Impl>()) {}
NcclTransfers::~NcclTransfers() = default;

Status NcclTransfers::open(const Communicator &grid, int64_t axis, int ordinal,
                           bool hostOnly, const std::vector<Transfer> &sends,
                           const std::vector<Transfer> &recvs,
                           std::string &hostWhy) {
  hostWhy.clear();
  const int64_t size = grid.groupSize(axis), member = grid.groupIndex(axis);
  const std::set<int64_t> sendPeers = peersOf(sends),
                          recvPeers = peersOf(recvs);
  for (const auto *peers : {&sendPeers, &recvPeers})
    for (int64_t peer : *peers)
      if (peer < 0 || peer >= size || peer == member)
        return Status::error("a transfer with stage " + std::to_string(peer) +
                             " from stage " + std::to_string(member) + " of " +
                             std::to_string(size));
  // Each member's GPU, whether it can use NCCL and whether it asked for
  // host memory.
  const std::string cannot = hostOnly ? std::string() : ncclUnusable();
  GroupMembers members;
  MTRT_RETURN_IF_ERROR(
      members.gather(grid, axis, ordinal, cannot.empty(), hostOnly));
  // Why a direction between this rank and `peer` stays in host memory:
  // both ends answer alike.
  auto hostReason = [&](int64_t peer) -> std::string {
    if (members.askedHost(member) || members.askedHost(peer))
      return "MEGATRON_CUDA_COLLECTIVES=host";
    if (members.sameGpu(member, peer))
      return "stages " + std::to_string(std::min(member, peer)) + " and " +
             std::to_string(std::max(member, peer)) +
             " share a GPU, which NCCL refuses";
    return "";
  };
  std::vector<int64_t> ncclSends, ncclRecvs;
  std::string refused;
  for (auto [peers, chosen] :
       {std::pair{&sendPeers, &ncclSends}, std::pair{&recvPeers, &ncclRecvs}})
    for (int64_t peer : *peers) {
      std::string why = hostReason(peer);
      if (!why.empty()) {
        if (hostWhy.empty())
          hostWhy = why;
        continue;
      }
      if (!members.canJoin(member) || !members.canJoin(peer)) {
        // Both ends see it: neither offers, and the group agrees below.
        if (refused.empty())
          refused =
              "stage " +
              std::to_string(members.canJoin(member) ? peer : member) +
              " cannot use NCCL" +
              (cannot.empty() ? std::string() : " (here: " + cannot + ")") +
              "; MEGATRON_CUDA_COLLECTIVES=host carries them through host "
              "memory instead";
        continue;
      }
      chosen->push_back(peer);
    }
  // Offers out (MPI's sends do not wait), offers in and answered, answers
  // in: no rank waits for a message its peer sends only after waiting.
  const NcclLibrary &nccl = NcclLibrary::get();
  std::map<int64_t, Offer> made, taken;
  for (int64_t peer : ncclSends) {
    Offer offer;
    std::memset(&offer, 0, sizeof(offer));
    if (Status id = checkNccl(nccl.getUniqueId(&offer.id), "ncclGetUniqueId");
        !id && refused.empty())
      refused = id.message();
    describe(sends, peer, offer.count, offer.digest);
    made[peer] = offer;
    MTRT_RETURN_IF_ERROR(
        grid.send(axis, peer, kOfferTag, &made[peer], int64_t(sizeof(Offer))));
  }
  ncclUniqueId none;
  std::memset(&none, 0, sizeof(none));
  for (int64_t peer : ncclRecvs) {
    Offer &offer = taken[peer];
    MTRT_RETURN_IF_ERROR(
        grid.recv(axis, peer, kOfferTag, &offer, int64_t(sizeof(Offer))));
    int64_t count = 0;
    uint64_t digest = 0;
    describe(recvs, peer, count, digest);
    int64_t answer = 1;
    if (std::memcmp(&offer.id, &none, sizeof(none)) == 0) {
      answer = 0;
      if (refused.empty())
        refused =
            "stage " + std::to_string(peer) + " could not make an NCCL id";
    } else if (offer.count != count || offer.digest != digest) {
      answer = 0;
      if (refused.empty())
        refused =
            "stage " + std::to_string(peer) + " sends " +
            std::to_string(offer.count) + " transfers to stage " +
            std::to_string(member) + ", which receives " +
            std::to_string(count) +
            (offer.count == count ? " in another order of tags or sizes" : "") +
            "; NCCL matches them in order";
    }
    MTRT_RETURN_IF_ERROR(
        grid.send(axis, peer, kAnswerTag, &answer, int64_t(sizeof(answer))));
  }
  for (int64_t peer : ncclSends) {
    int64_t answer = 0;
    MTRT_RETURN_IF_ERROR(
        grid.recv(axis, peer, kAnswerTag, &answer, int64_t(sizeof(answer))));
    if (answer != 1 && refused.empty())
      refused = "stage " + std::to_string(peer) +
                " refused this stage's NCCL id or the order of its transfers";
  }
  MTRT_RETURN_IF_ERROR(grid.finishSends());
  // The whole pipeline group fails together, before any rank waits in
  // NCCL's joins for a neighbour that will not come.
  int32_t failed = refused.empty() ? 0 : 1;
  MTRT_RETURN_IF_ERROR(
      grid.allReduce(axis, &failed, 1, DType::I32, ReduceOp::Max));
  if (failed)
    return Status::error("the pipeline's transfers over NCCL: " +
                         (refused.empty()
                              ? std::string("another stage refused them (its "
                                            "error says why)")
                              : refused));
  // Every direction's communicator in one group, so that the joins cannot
  // wait for each other.
  Deadline deadline =
      joinDeadline(grid, "joining the pipeline's NCCL communicators");
  MTRT_RETURN_IF_ERROR(checkNccl(nccl.groupStart(), "ncclGroupStart"));
  Status joined = Status::ok();
  for (int64_t peer : ncclSends)
    if (joined)
      joined = checkNccl(
          nccl.commInitRank(&impl->sendComms[peer], 2, made[peer].id, 0),
          "joining the NCCL communicator to stage " + std::to_string(peer));
  for (int64_t peer : ncclRecvs)
    if (joined)
      joined = checkNccl(
          nccl.commInitRank(&impl->recvComms[peer], 2, taken[peer].id, 1),
          "joining the NCCL communicator from stage " + std::to_string(peer));
  Status ended = checkNccl(nccl.groupEnd(), "joining the pipeline's NCCL "
                                            "communicators (ncclGroupEnd)");
  return joined ? ended : joined;
}

bool NcclTransfers::viaNccl(int64_t peer, bool sending) const {
  const auto &comms = sending ? impl->sendComms : impl->recvComms;
  auto found = comms.find(peer);
  return found != comms.end() && found->second;
}

Status NcclTransfers::send(int64_t peer, const void *data, int64_t bytes,
                           cudaStream_t stream) {
  if (!viaNccl(peer, true))
    return Status::error("no NCCL communicator to stage " +
                         std::to_string(peer));
  return checkNccl(NcclLibrary::get().send(data, size_t(bytes), ncclUint8, 1,
                                           impl->sendComms[peer], stream),
                   "ncclSend to stage " + std::to_string(peer));
}

bool NcclTransfers::joined() const {
  for (const auto *comms : {&impl->sendComms, &impl->recvComms})
    for (const auto &[peer, comm] : *comms)
      if (comm)
        return true;
  return false;
}

std::string NcclTransfers::backgroundError() const {
  for (auto [comms, direction] : {std::pair{&impl->sendComms, " to stage "},
                                  std::pair{&impl->recvComms, " from stage "}})
    for (const auto &[peer, comm] : *comms)
      if (std::string error =
              ncclBackgroundError(comm, std::string("the NCCL transfers") +
                                            direction + std::to_string(peer));
          !error.empty())
        return error;
  return "";
}

std::vector<ncclComm_t> NcclTransfers::releaseForAbort() {
  std::vector<ncclComm_t> released;
  for (auto *comms : {&impl->sendComms, &impl->recvComms}) {
    for (auto &[peer, comm] : *comms)
      released.push_back(comm);
    comms->clear();
  }
  return released;
}

Status NcclTransfers::recv(int64_t peer, void *data, int64_t bytes,
                           cudaStream_t stream) {
  if (!viaNccl(peer, false))
    return Status::error("no NCCL communicator from stage " +
                         std::to_string(peer));
  return checkNccl(NcclLibrary::get().recv(data, size_t(bytes), ncclUint8, 0,
                                           impl->recvComms[peer], stream),
                   "ncclRecv from stage " + std::to_string(peer));
}

#else // !MTRT_HAVE_NCCL

// Built without nccl.h: every direction through host memory.
struct NcclTransfers::Impl {};
NcclTransfers::NcclTransfers() : impl(std::make_unique<Impl>()) {}
NcclTransfers::~NcclTransfers() = default;

Status NcclTransfers::open(const Communicator &, int64_t, int, bool hostOnly,
                           const std::vector<Transfer> &sends,
                           const std::vector<Transfer> &recvs,
                           std::string &hostWhy) {
  hostWhy.clear();
  if (!sends.empty() || !recvs.empty())
    hostWhy = hostOnly ? "MEGATRON_CUDA_COLLECTIVES=host"
                       : "this build of the CUDA backend has no NCCL";
  return Status::ok();
}
bool NcclTransfers::viaNccl(int64_t, bool) const { return false; }
Status NcclTransfers::send(int64_t, const void *, int64_t, cudaStream_t) {
  return Status::error("no NCCL in this build");
}
Status NcclTransfers::recv(int64_t, void *, int64_t, cudaStream_t) {
  return Status::error("no NCCL in this build");
}
bool NcclTransfers::joined() const { return false; }
std::string NcclTransfers::backgroundError() const { return ""; }
std::vector<ncclComm *> NcclTransfers::releaseForAbort() { return {}; }

#endif // MTRT_HAVE_NCCL
