// SPDX-License-Identifier: MIT
// EngineZones' insides, the one face the profiler reaches (step ends, listeners changed): the zone
// paths, the loop's stack, the worker threads' lanes. The rest of this room is private to it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "simprof/profiler/engine_zones.hpp"

namespace simprof::detail {

// Reached by the profiler directly at each step end (StepProfiler::zones_): no hop through the
// EngineZones on a line the engine's work has made cold.
class EngineZonesState {
 public:
  static constexpr std::size_t kMaxPending = EngineZones::kMaxPending;
  static constexpr std::uint32_t kMaxSums = EngineZones::kMaxSums;
  static constexpr std::uint32_t kMaxWorkerDepth = EngineZones::kMaxWorkerDepth;
  EngineZonesState(StepProfiler& prof, std::string_view under);
  ~EngineZonesState();
  EngineZonesState(const EngineZonesState&) = delete;
  EngineZonesState& operator=(const EngineZonesState&) = delete;
  void enter(const char* name) noexcept;
  void leave() noexcept;
  std::optional<double> worker_cpu_seconds(StageId id) const noexcept;
  std::uint64_t dropped() const noexcept;
  StageId under() const noexcept { return under_; }
  StepProfiler& profiler() const noexcept { return prof_; }
  void step_ending(std::int64_t t) noexcept;
  void listeners_changed() noexcept;

 private:
  // One distinct zone path: (parent node, name pointer). The path text is made once, at creation.
  struct Node {
    const Node* parent = nullptr;
    std::string path;          // "physics/stepSimulation"
    StageId stage = kNoStage;  // resolved on the loop's thread, on first use
    bool bad = false;          // not a valid stage name: ignored, said once
  };
  struct NodeKey {
    const Node* parent;
    const char* name;
    bool operator==(const NodeKey& o) const noexcept {
      return parent == o.parent && name == o.name;
    }
  };
  struct NodeKeyHash {
    std::size_t operator()(const NodeKey& k) const noexcept;
  };
  // Slot of `k` in a direct-mapped cache of `slots` (a power of two) entries.
  static std::size_t slot_of(const NodeKey& k, std::size_t slots) noexcept {
    constexpr std::uint64_t kMix = 0x9e3779b97f4a7c15ULL;  // Fibonacci hashing: the high bits
    const std::uint64_t h = (reinterpret_cast<std::uintptr_t>(k.parent) * kMix) ^
                            reinterpret_cast<std::uintptr_t>(k.name);
    return static_cast<std::size_t>((h * kMix) >> 32) & (slots - 1);
  }
  // The nodes one side knows: the loop's (its thread only) or the workers' (under mutex_). A
  // direct-mapped cache in front of the index makes a repeated zone one line and no division.
  struct NodeTable {
    static constexpr std::size_t kSlots = 64;
    /// One entry of the direct-mapped cache.
    struct Slot {
      NodeKey key{nullptr, nullptr};  ///< the (parent, name pointer) cached here; null: empty
      Node* node = nullptr;           ///< its node
    };
    std::deque<Node> nodes;  // deque: pointers stay valid as it grows
    std::unordered_map<NodeKey, Node*, NodeKeyHash> index;
    std::array<Slot, kSlots> slots{};
    // The node of (parent, name): a hit in the cache reads one slot; the rest is out of line.
    Node* find_or_add(const Node* parent, const char* name) {
      const NodeKey key{parent, name};
      Slot& slot = slots[slot_of(key, kSlots)];
      return slot.key == key ? slot.node : refill(slot, key);
    }
    Node* refill(Slot& slot, const NodeKey& key);  // from the index, or a new node; may throw
  };
  struct LoopFrame {
    const Node* node;
    bool opened;  // a profiler stage was begun for it (and not yet ended)
  };
  struct Finished {  // a worker-thread zone, handed over
    Node* node;
    std::int64_t begin, end, tid;
    bool summed;  // its time is in the lane's sums already
  };
  struct Lane;  // one worker thread's queue and name cache, for this EngineZones
  struct WorkerFrame;
  struct ThreadLanes;
  struct ThreadState;
  // The calling thread's last EngineZones (its lane, or that it is its loop's thread) and its open
  // worker zones: one trivially destructible block, so that a repeated zone reads it directly.
  static thread_local ThreadState t_state;
  static ThreadLanes& thread_lanes();  // the calling thread's lanes (its first zone, its exit)
  enum Problem : unsigned {
    kLeftOpen = 1,
    kStrayLeave = 2,
    kNotOpened = 4,
    kOverflow = 8,
    kTooDeep = 16
  };

  void close_left_open(std::int64_t t) noexcept;  // the loop's zones open at a step end
  void add_cpu(StageId stage, bool top, std::int64_t ticks) noexcept;  // a worker path's time
  void hand_over(const Finished& f) noexcept;   // one queued worker zone, at a step end
  static bool drained(const Lane& l) noexcept;  // nothing in l the loop has not read
  // enter()/leave() when the calling thread's last zone was not one of this EngineZones' (or
  // something is out of the ordinary: a gone owner, a zone too deep, a stray leave).
  void enter_slow(const char* name) noexcept;
  void leave_slow() noexcept;
  bool claim_loop_thread() noexcept;  // the caller is the loop's thread: marked so in t_state
  void loop_enter(const char* name) noexcept;
  void loop_leave() noexcept;
  // The loop's slow paths: a zone whose stage cannot be opened, a stray leave, a zone left while
  // a scope inside it is open.
  void not_opened(const Node& n) noexcept;
  void stray_loop_leave() noexcept;
  void left_around_a_scope(const Node& n) noexcept;
  void worker_enter(Lane& l, const char* name) noexcept;             // l: the calling thread's lane
  void worker_leave(const WorkerFrame& f, std::int64_t t) noexcept;  // f popped, ended at t
  // A worker's slow paths, kept out of the repeated zone's code: a name's first sight on the
  // thread (fills l's slot `slot`; false when out of memory), the parent zone when the thread's
  // innermost zone is another EngineZones', a zone too deep, a stray leave, a zone through the
  // queue.
  bool fill_slot(Lane& l, std::size_t slot, const NodeKey& key) noexcept;
  const Node* worker_parent(const Lane* l) const noexcept;
  void too_deep() noexcept;
  void stray_worker_leave() noexcept;
  void queue_zone(Lane& l, const WorkerFrame& f, std::int64_t t, bool summed) noexcept;
  Lane* lane();                    // the calling thread's lane, made on its first zone
  bool resolve(Node& n) noexcept;  // loop's thread: n.stage from n.path; false when bad
  template <class MakeMessage>
  void say_once(Problem p, MakeMessage&& make) noexcept;  // make(): the message, made once

  // What a step end and a loop zone read comes first, on a few lines together: after the
  // engine's work they are cold, and each line (and page) fetched is on the loop's critical path.
  StepProfiler& prof_;
  const std::uint64_t id_;  // tells this EngineZones apart in the threads' lanes (never reused)
  std::vector<LoopFrame> loop_stack_;
  std::uint32_t loop_not_kept_ = 0;  // loop zones open but not kept (out of memory), innermost
  StageId under_ = kNoStage;
  std::atomic<unsigned> said_{0};                 // Problem bits already said (set under mutex_)
  std::vector<Lane*> draining_;                   // lanes_ as of lanes_seen_, read without the lock
  std::atomic<std::uint64_t> lanes_changed_{0};   // bumped (under mutex_) when lanes_ changes
  std::uint64_t lanes_seen_ = ~std::uint64_t{0};  // lanes_changed_ when draining_ was taken
  // The latest step end's worker CPU ticks by stage: valid where cpu_in_[id] == cpu_serial_.
  std::vector<std::int64_t> cpu_ticks_;
  std::vector<std::uint64_t> cpu_in_;
  std::uint64_t cpu_serial_ = 0;
  std::vector<StepListener*> span_listeners_;  // the listeners that want worker zones (loop's)
  std::atomic<bool> spans_{false};  // a listener wants worker zones: they go through the queues

  std::thread::id loop_thread_;
  Node root_;  // parent of the top-level zones, both sides
  NodeTable loop_nodes_;
  mutable std::mutex mutex_;  // guards the workers' nodes, lanes_, dropped_, setting said_
  NodeTable worker_nodes_;
  std::vector<std::shared_ptr<Lane>> lanes_;  // one per worker thread that entered a zone
  std::uint64_t dropped_ = 0;                 // of lanes whose thread has ended
};

}  // namespace simprof::detail
