// SPDX-License-Identifier: MIT
// The C API's collectives room: a scope around a collective call (NCCL, torch.distributed), by the
// names torch.distributed and Kineto use, so a trace gives the communication kernel launched inside
// it the collective's arguments (simprof/profiler/collective.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "c_api_internal.hpp"
#include "simprof/profiler/collective.hpp"

using simprof::c_api::guarded;

namespace {

// A name as Kineto writes it ("allreduce"), or torch.distributed's function ("all_reduce").
template <class E>
E parse(const char* what, const char* name, std::initializer_list<E> values,
        std::initializer_list<std::pair<std::string_view, E>> aliases) {
  if (name == nullptr)
    throw std::invalid_argument(fmt::format("simprof: collective {} is NULL", what));
  std::string known;
  for (const E v : values) {
    if (simprof::to_string(v) == name) return v;
    known += known.empty() ? "" : ", ";
    known += simprof::to_string(v);
  }
  for (const auto& [alias, v] : aliases)
    if (alias == name) return v;
  throw std::invalid_argument(
      fmt::format("simprof: collective {} '{}' (expected one of {})", what, name, known));
}

}  // namespace

struct simprof_collective {
  std::optional<simprof::CollectiveScope> scope;
};

extern "C" {

void simprof_collective_info_init(simprof_collective_info* info) {
  if (info == nullptr) return;
  *info =
      simprof_collective_info{sizeof(*info), nullptr, 0, 0, nullptr, nullptr, nullptr, nullptr, 0};
}

simprof_status simprof_collective_begin(simprof_profiler* p, const simprof_collective_info* info,
                                        simprof_collective** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(info, "info");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    const simprof_collective_info in = simprof::c_api::checked_options(
        info, simprof_collective_info_init, "simprof_collective_info");
    using simprof::CollectiveOp;
    using simprof::DType;
    const CollectiveOp o = parse<CollectiveOp>(
        "op", in.op,
        {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
         CollectiveOp::kBroadcast, CollectiveOp::kReduce, CollectiveOp::kAllToAll,
         CollectiveOp::kSend, CollectiveOp::kRecv, CollectiveOp::kBarrier},
        {{"all_reduce", CollectiveOp::kAllReduce},
         {"all_gather", CollectiveOp::kAllGather},
         {"all_gather_into_tensor", CollectiveOp::kAllGather},
         {"reduce_scatter_tensor", CollectiveOp::kReduceScatter},
         {"all_to_all_single", CollectiveOp::kAllToAll}});
    const DType d = parse<DType>("dtype", in.dtype,
                                 {DType::kFloat, DType::kDouble, DType::kHalf, DType::kBFloat16,
                                  DType::kInt, DType::kLong, DType::kByte, DType::kBool},
                                 {});
    if (in.in_nelems < 0 || in.out_nelems < 0)
      throw std::invalid_argument(
          fmt::format("simprof: collective of {} elements in, {} out (expected >= 0)", in.in_nelems,
                      in.out_nelems));
    if (in.ranks == nullptr && in.n_ranks != 0)
      throw std::invalid_argument(
          fmt::format("simprof: collective ranks is NULL with n_ranks = {}", in.n_ranks));
    simprof::ProcessGroup g;
    if (in.group_name) g.name = in.group_name;
    if (in.group_desc) g.desc = in.group_desc;
    if (in.n_ranks != 0) g.ranks.assign(in.ranks, in.ranks + in.n_ranks);
    // The profiler's copy: a trace session refers to it until the window is written.
    auto same = [&](const simprof::ProcessGroup& h) {
      return h.name == g.name && h.desc == g.desc && h.ranks == g.ranks;
    };
    auto it = std::find_if(p->groups.begin(), p->groups.end(), same);
    const simprof::ProcessGroup& kept =
        it != p->groups.end() ? *it : p->groups.emplace_back(std::move(g));
    auto c = std::make_unique<simprof_collective>();
    c->scope.emplace(p->prof, simprof::Collective{o, d, in.in_nelems, in.out_nelems, &kept});
    *out = c.release();
  });
}

void simprof_collective_end(simprof_collective* c) {
  if (c == nullptr) return;
  c->scope.reset();  // the listeners hear of it now: a throw there is not the caller's to see
  delete c;
}

}  // extern "C"
