// SPDX-License-Identifier: MIT
// Collectives: a scope the program puts around a collective call (an NCCL all-reduce, say) so the
// trace knows what the communication kernel it launched was. The trace session records the scope
// as a CPU span carrying Kineto's collective arguments, and gives the same arguments to the
// device kernel (name starting "nccl") whose launch, on the same thread, fell inside the scope —
// linked by CUPTI's correlation id, as torch.profiler's record_param_comms does. Holistic Trace
// Analysis and Perfetto then show the message size, dtype and group on the NCCL kernel.
//
/* clang-format off */
//   const simprof::ProcessGroup world = simprof::ProcessGroup::world(ranks.world_size);
//   {
//     auto c = simprof::collective(prof, simprof::CollectiveOp::kAllReduce, n_envs,
//                                  simprof::DType::kFloat, world);
//     all_reduce(buf, n_envs);   // ncclAllReduce(buf, buf, n_envs, ncclFloat, ncclSum, comm, s)
//   }
/* clang-format on */
//
// The scope costs two clock reads and, while listeners are attached, one call per listener; it
// allocates nothing (the group is referenced, not copied: it must outlive the scope and the trace
// session that records it, which reads it when the window is written).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "simprof/profiler/step_profiler.hpp"

namespace simprof {

/// Which collective operation a scope times (torch.distributed's operations).
enum class CollectiveOp : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSend,
  kRecv,
  kBarrier
};
/// torch.distributed's names, as Kineto writes them in "Collective name": "allreduce", ...
std::string_view to_string(CollectiveOp op) noexcept;

/// Element types, named as torch names them in Kineto's "dtype" ("Float", "Half", ...).
enum class DType : std::uint8_t { kFloat, kDouble, kHalf, kBFloat16, kInt, kLong, kByte, kBool };
/// torch's name of the element type, as Kineto writes it: "Float", "Half", ...
std::string_view to_string(DType dtype) noexcept;

/// A process group: its name and description as torch.distributed gives them, and its ranks.
struct ProcessGroup {
  /// The group's name (torch.distributed numbers them: "0" is the default group).
  std::string name = "0";
  /// The group's description, e.g. "default_pg".
  std::string desc = "default_pg";
  /// The global ranks in the group.
  std::vector<int> ranks;
  /// The default group of a run of `world_size` processes: ranks 0 .. world_size - 1.
  static ProcessGroup world(int world_size);
};

/// What listeners receive when a collective scope ends (the group is the caller's).
struct Collective {
  /// The operation.
  CollectiveOp op = CollectiveOp::kAllReduce;
  /// The element type.
  DType dtype = DType::kFloat;
  /// Elements of the input (this rank's).
  std::int64_t in_nelems = 0;
  /// Elements of the output (this rank's).
  std::int64_t out_nelems = 0;
  /// The process group it runs in (not owned; null: none given).
  const ProcessGroup* group = nullptr;
};

/// RAII: notifies the profiler's listeners (StepListener::on_collective) when it ends.
class CollectiveScope {
 public:
  /// Starts timing collective `c` on `prof`'s clock (`c` is copied; its group must outlive the
  /// scope and any trace session recording it).
  CollectiveScope(StepProfiler& prof, const Collective& c)
      : prof_(prof), c_(c), begin_(prof.clock().now()) {}
  ~CollectiveScope() {
    const std::int64_t end = prof_.clock().now();
    prof_.notify([&](StepListener* l) { l->on_collective(c_, begin_, end); });
  }
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;

 private:
  StepProfiler& prof_;
  Collective c_;
  std::int64_t begin_;
};

/// A collective of `nelems` elements in and out (all-reduce, broadcast, reduce).
[[nodiscard]] inline CollectiveScope collective(StepProfiler& prof, CollectiveOp op,
                                                std::int64_t nelems, DType dtype,
                                                const ProcessGroup& group) {
  return CollectiveScope(prof, Collective{op, dtype, nelems, nelems, &group});
}
/// A collective whose input and output sizes differ (all-gather, reduce-scatter, all-to-all).
[[nodiscard]] inline CollectiveScope collective(StepProfiler& prof, CollectiveOp op,
                                                std::int64_t in_nelems, std::int64_t out_nelems,
                                                DType dtype, const ProcessGroup& group) {
  return CollectiveScope(prof, Collective{op, dtype, in_nelems, out_nelems, &group});
}

}  // namespace simprof
