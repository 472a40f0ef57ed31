// SPDX-License-Identifier: MIT
#include "simprof/profiler/collective.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace simprof {

std::string_view to_string(CollectiveOp op) noexcept {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "allreduce";
    case CollectiveOp::kAllGather:
      return "allgather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kReduce:
      return "reduce";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
    case CollectiveOp::kSend:
      return "send";
    case CollectiveOp::kRecv:
      return "recv";
    case CollectiveOp::kBarrier:
      return "barrier";
  }
  return "?";
}

std::string_view to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat:
      return "Float";
    case DType::kDouble:
      return "Double";
    case DType::kHalf:
      return "Half";
    case DType::kBFloat16:
      return "BFloat16";
    case DType::kInt:
      return "Int";
    case DType::kLong:
      return "Long";
    case DType::kByte:
      return "Byte";
    case DType::kBool:
      return "Bool";
  }
  return "?";
}

ProcessGroup ProcessGroup::world(int world_size) {
  if (world_size < 1)
    throw std::invalid_argument(
        fmt::format("simprof: ProcessGroup::world({}) (expected a world size >= 1)", world_size));
  ProcessGroup g;
  for (int r = 0; r < world_size; ++r) g.ranks.push_back(r);
  return g;
}

}  // namespace simprof
