//===- MpiCommunicator.cpp - Collectives of CPU ranks over MPI ------------===//

#include "mpi/Mpi.h"

#include "mtrt/HalfFloat.h"

#include <algorithm>
#include <cstring>

using namespace mtrt;
using namespace mtrt::mpi;

namespace {
bool isHalf(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16; }

/// The MPI type moving `dtype` (16-bit floats as raw 16-bit words).
MPI_Datatype mpiType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return MPI_FLOAT;
  case DType::F64:
    return MPI_DOUBLE;
  case DType::I32:
    return MPI_INT32_T;
  case DType::I64:
    return MPI_INT64_T;
  case DType::BF16:
  case DType::F16:
    return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

std::vector<float> widened(DType dtype, const void *data, int64_t count) {
  std::vector<float> values(static_cast<size_t>(count));
  widenHalves(static_cast<const uint16_t *>(data), values.data(), count,
              dtype == DType::BF16);
  return values;
}

void narrow(DType dtype, const std::vector<float> &values, void *data) {
  narrowToHalves(values.data(), static_cast<uint16_t *>(data),
                 int64_t(values.size()), dtype == DType::BF16);
}

/// Integers have no average.
Status checkAverage(DType dtype, ReduceOp op) {
  if (op == ReduceOp::Average && (dtype == DType::I32 || dtype == DType::I64))
    return Status::error(std::string("an average of ") + dtypeName(dtype) +
                         " values");
  return Status::ok();
}

/// Divides `count` float or double elements by `parts` (an average).
Status divide(void *data, int64_t count, DType dtype, int64_t parts) {
  if (dtype == DType::F32)
    for (int64_t i = 0; i < count; ++i)
      static_cast<float *>(data)[i] /= float(parts);
  else if (dtype == DType::F64)
    for (int64_t i = 0; i < count; ++i)
      static_cast<double *>(data)[i] /= double(parts);
  else
    return checkAverage(dtype, ReduceOp::Average);
  return Status::ok();
}
} // namespace

MpiCommunicator::MpiCommunicator(std::vector<int64_t> gridShape, int worldRank,
                                 bool usesMpi, const double &timeoutSeconds)
    : shape(std::move(gridShape)), usesMpi(usesMpi), timeout(timeoutSeconds) {
  // Row-major coordinates: the last axis varies fastest.
  myCoords.assign(shape.size(), 0);
  int64_t rest = worldRank;
  for (int64_t axis = int64_t(shape.size()) - 1; axis >= 0; --axis) {
    myCoords[size_t(axis)] = rest % shape[size_t(axis)];
    rest /= shape[size_t(axis)];
  }
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  for (MPI_Comm &group : groups)
    if (!finalized)
      MPI_Comm_free(&group);
  for (auto &[key, group] : stridedGroups)
    if (!finalized)
      MPI_Comm_free(&group);
}

Status MpiCommunicator::createGroups() {
  if (!usesMpi)
    return Status::ok();
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    // Ranks that agree on every other axis form the group.
    int64_t color = 0;
    for (size_t other = 0; other < shape.size(); ++other)
      color = color * shape[other] + (other == axis ? 0 : myCoords[other]);
    MPI_Comm group;
    MTRT_RETURN_IF_ERROR(check(
        MPI_Comm_split(MPI_COMM_WORLD, int(color), int(myCoords[axis]), &group),
        "group creation"));
    groups.push_back(group);
    for (int64_t stride = 2; stride < shape[axis]; ++stride) {
      if (shape[axis] % stride != 0)
        continue;
      MPI_Comm strided;
      MTRT_RETURN_IF_ERROR(
          check(MPI_Comm_split(group, int(myCoords[axis] % stride),
                               int(myCoords[axis]), &strided),
                "group creation"));
      stridedGroups[{int64_t(axis), stride}] = strided;
    }
  }
  return Status::ok();
}

std::string MpiCommunicator::describeAxis(int64_t axis) const {
  return "grid axis " + std::to_string(axis) + " (a group of " +
         std::to_string(shape[size_t(axis)]) + " ranks; a peer did not answer)";
}

Status MpiCommunicator::checkAxis(int64_t axis) const {
  if (axis < 0 || axis >= int64_t(shape.size()))
    return Status::error("grid axis " + std::to_string(axis) +
                         " is not an axis of the device grid (it has " +
                         std::to_string(shape.size()) + ")");
  return Status::ok();
}

Status MpiCommunicator::allReduce(int64_t axis, void *data, int64_t count,
                                  DType dtype, ReduceOp op) const {
  return allReduceStrided(axis, 1, data, count, dtype, op);
}

Status MpiCommunicator::stridedGroup(int64_t axis, int64_t stride,
                                     Group &group) const {
  MTRT_RETURN_IF_ERROR(checkAxis(axis));
  int64_t size = shape[size_t(axis)];
  if (stride < 1 || size % stride != 0)
    return Status::error("stride " + std::to_string(stride) +
                         " does not divide the " + std::to_string(size) +
                         " ranks of grid axis " + std::to_string(axis));
  group.members = usesMpi ? size / stride : 1;
  group.name = stride == 1 ? describeAxis(axis)
                           : "every " + std::to_string(stride) + "th rank of " +
                                 describeAxis(axis);
  if (group.members > 1)
    group.comm =
        stride == 1 ? groups[size_t(axis)] : stridedGroups.at({axis, stride});
  return Status::ok();
}

Status MpiCommunicator::allReduceStrided(int64_t axis, int64_t stride,
                                         void *data, int64_t count, DType dtype,
                                         ReduceOp op) const {
  Group group;
  MTRT_RETURN_IF_ERROR(stridedGroup(axis, stride, group));
  MTRT_RETURN_IF_ERROR(checkAverage(dtype, op));
  if (group.members == 1)
    return Status::ok(); // a group of one: the sum, mean and max are itself
  return reduceInGroup(group.comm, group.members,
                       "an all-reduce over " + group.name, data, count, dtype,
                       op);
}

Status MpiCommunicator::reduceInGroup(MPI_Comm group, int64_t members,
                                      const std::string &what, void *data,
                                      int64_t count, DType dtype,
                                      ReduceOp op) const {
  // 16-bit floats are reduced in float and rounded once.
  if (isHalf(dtype)) {
    std::vector<float> values = widened(dtype, data, count);
    MTRT_RETURN_IF_ERROR(reduceInGroup(group, members, what, values.data(),
                                       count, DType::F32, op));
    narrow(dtype, values, data);
    return Status::ok();
  }
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(check(
      MPI_Iallreduce(MPI_IN_PLACE, data, int(count), mpiType(dtype),
                     op == ReduceOp::Max ? MPI_MAX : MPI_SUM, group, &request),
      "all-reduce"));
  MTRT_RETURN_IF_ERROR(wait(request, what, timeout));
  if (op == ReduceOp::Average)
    return divide(data, count, dtype, members);
  return Status::ok();
}

Status MpiCommunicator::reduceScatter(int64_t axis, const void *in, void *out,
                                      int64_t count, DType dtype,
                                      ReduceOp op) const {
  return reduceScatterStrided(axis, 1, in, out, count, dtype, op);
}

Status MpiCommunicator::reduceScatterStrided(int64_t axis, int64_t stride,
                                             const void *in, void *out,
                                             int64_t count, DType dtype,
                                             ReduceOp op) const {
  Group group;
  MTRT_RETURN_IF_ERROR(stridedGroup(axis, stride, group));
  if (op == ReduceOp::Max)
    return Status::error("a reduce-scatter takes a sum or an average");
  MTRT_RETURN_IF_ERROR(checkAverage(dtype, op));
  if (group.members == 1) {
    std::memcpy(out, in, size_t(count * dtypeSize(dtype)));
    return Status::ok();
  }
  if (isHalf(dtype)) {
    std::vector<float> values = widened(dtype, in, count * group.members);
    std::vector<float> piece(static_cast<size_t>(count));
    MTRT_RETURN_IF_ERROR(reduceScatterStrided(
        axis, stride, values.data(), piece.data(), count, DType::F32, op));
    narrow(dtype, piece, out);
    return Status::ok();
  }
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Ireduce_scatter_block(in, out, int(count), mpiType(dtype),
                                      MPI_SUM, group.comm, &request),
            "reduce-scatter"));
  MTRT_RETURN_IF_ERROR(
      wait(request, "a reduce-scatter over " + group.name, timeout));
  if (op == ReduceOp::Average)
    return divide(out, count, dtype, group.members);
  return Status::ok();
}

Status MpiCommunicator::allGather(int64_t axis, const void *in, void *out,
                                  int64_t count, DType dtype) const {
  return allGatherStrided(axis, 1, in, out, count, dtype);
}

Status MpiCommunicator::allGatherStrided(int64_t axis, int64_t stride,
                                         const void *in, void *out,
                                         int64_t count, DType dtype) const {
  Group group;
  MTRT_RETURN_IF_ERROR(stridedGroup(axis, stride, group));
  if (group.members == 1) {
    std::memcpy(out, in, size_t(count * dtypeSize(dtype)));
    return Status::ok();
  }
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Iallgather(in, int(count), mpiType(dtype), out, int(count),
                           mpiType(dtype), group.comm, &request),
            "all-gather"));
  return wait(request, "an all-gather over " + group.name, timeout);
}

Status MpiCommunicator::send(int64_t axis, int64_t peer, int64_t tag,
                             const void *data, int64_t bytes) const {
  MTRT_RETURN_IF_ERROR(checkAxis(axis));
  if (!usesMpi)
    return Status::error("a send needs a second rank (run under mpirun)");
  int *upper = nullptr, found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upper, &found);
  if (found && tag > *upper)
    return Status::error("transfer tag " + std::to_string(tag) +
                         " exceeds this MPI's largest tag " +
                         std::to_string(*upper));
  // A copy per send lives until the send completes (not until the step
  // ends): a 1F1B stage sends one activation or gradient per microbatch.
  reapSends();
  PendingSend pending;
  pending.bytes.assign(static_cast<const uint8_t *>(data),
                       static_cast<const uint8_t *>(data) + bytes);
  MTRT_RETURN_IF_ERROR(
      check(MPI_Isend(pending.bytes.data(), int(bytes), MPI_BYTE, int(peer),
                      int(tag), groups[size_t(axis)], &pending.request),
            "send"));
  // (A vector's heap bytes stay where they are when the vector moves.)
  pendingSends.push_back(std::move(pending));
  inFlight += bytes;
  peakInFlight = std::max(peakInFlight, inFlight);
  return Status::ok();
}

void MpiCommunicator::reapSends() const {
  auto done = [&](PendingSend &pending) {
    int complete = 0;
    if (MPI_Test(&pending.request, &complete, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS ||
        !complete)
      return false; // finishSends reports a failed one
    inFlight -= int64_t(pending.bytes.size());
    return true;
  };
  pendingSends.erase(
      std::remove_if(pendingSends.begin(), pendingSends.end(), done),
      pendingSends.end());
}

Status MpiCommunicator::recv(int64_t axis, int64_t peer, int64_t tag,
                             void *data, int64_t bytes) const {
  MTRT_RETURN_IF_ERROR(checkAxis(axis));
  if (!usesMpi)
    return Status::error("a receive needs a second rank (run under mpirun)");
  MPI_Status status;
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Irecv(data, int(bytes), MPI_BYTE, int(peer), int(tag),
                      groups[size_t(axis)], &request),
            "receive"));
  MTRT_RETURN_IF_ERROR(wait(request,
                            "a receive from pipeline stage " +
                                std::to_string(peer) + " (tag " +
                                std::to_string(tag) + "), which did not send",
                            timeout, &status));
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  if (count != bytes)
    return Status::error("received " + std::to_string(count) +
                         " bytes from stage " + std::to_string(peer) +
                         " (tag " + std::to_string(tag) + "), expected " +
                         std::to_string(bytes));
  return Status::ok();
}

Status MpiCommunicator::finishSends() const {
  Status result = Status::ok();
  for (PendingSend &pending : pendingSends) {
    Status status =
        wait(pending.request, "the completion of this step's sends", timeout);
    if (result && !status)
      result = status;
  }
  pendingSends.clear();
  inFlight = 0;
  return result;
}
