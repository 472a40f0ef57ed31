// SPDX-License-Identifier: MIT
#include "simprof/profiler/engine_zones.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "lanes.hpp"
#include "simprof/base/log.hpp"
#include "simprof/detail/thread_id.hpp"

namespace simprof {

thread_local detail::EngineZonesState::ThreadState detail::EngineZonesState::t_state;

detail::EngineZonesState::ThreadLanes::~ThreadLanes() {
  // Set before other thread_local destructors that may still call enter()/leave().
  t_state.gone = true;
  t_state.zones = nullptr;
  for (const Entry& e : entries) e.lane->thread_gone.store(true, std::memory_order_release);
}

// A function's own thread_local: its construction check stays here, out of the accesses to
// t_state (which, constant-initialised, then needs none).
detail::EngineZonesState::ThreadLanes& detail::EngineZonesState::thread_lanes() {
  thread_local ThreadLanes lanes;
  return lanes;
}

namespace {
std::atomic<std::uint64_t> g_next_zones_id{1};
}  // namespace

std::size_t detail::EngineZonesState::NodeKeyHash::operator()(const NodeKey& k) const noexcept {
  const std::size_t a = std::hash<const void*>{}(k.parent);
  return a ^ (std::hash<const void*>{}(k.name) + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
}

SIMPROF_ZONES_COLD detail::EngineZonesState::Node* detail::EngineZonesState::NodeTable::refill(
    Slot& slot, const NodeKey& key) {
  if (const auto it = index.find(key); it != index.end()) {
    slot = Slot{key, it->second};
    return it->second;
  }
  // First sight of this (parent, pointer): the only string work a zone ever costs.
  const Node* parent = key.parent;
  const char* name = key.name;
  Node n;
  n.parent = parent;
  n.path = parent->path.empty() ? std::string(name) : fmt::format("{}/{}", parent->path, name);
  nodes.push_back(std::move(n));
  index.emplace(key, &nodes.back());
  slot = Slot{key, &nodes.back()};
  return &nodes.back();
}

detail::EngineZonesState::EngineZonesState(StepProfiler& prof, std::string_view under)
    : prof_(prof),
      id_(g_next_zones_id.fetch_add(1, std::memory_order_relaxed)),
      loop_thread_(std::this_thread::get_id()) {
  if (!under.empty()) under_ = prof_.stage_id(under);  // throws for a bad name, naming it
  root_.path = std::string(under);
  root_.stage = under_;
  loop_stack_.reserve(StepProfiler::kMaxDepth);
  draining_.reserve(64);
  listeners_changed();
}

detail::EngineZonesState::~EngineZonesState() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& l : lanes_) l->owner_gone.store(true, std::memory_order_release);
}

void detail::EngineZonesState::listeners_changed() noexcept {
  span_listeners_.clear();
  try {
    for (StepListener* l : prof_.listeners_)
      if (l->wants_worker_zones()) span_listeners_.push_back(l);
  } catch (...) {  // out of memory: no spans (the CPU sums do not need them)
    span_listeners_.clear();
  }
  const bool wanted = !span_listeners_.empty();
  std::lock_guard<std::mutex> lock(mutex_);
  spans_.store(wanted, std::memory_order_relaxed);
  for (const auto& l : lanes_) l->spans.store(wanted, std::memory_order_relaxed);
}

// A repeated zone: the calling thread's last zone was one of this EngineZones', on the same side
// (a worker's: no line of the EngineZones is read; the loop's: its id, beside its stack). Anything
// else goes through enter_slow()/leave_slow(), which decide the side and remember it.
void detail::EngineZonesState::enter(const char* name) noexcept {
  ThreadState& t = t_state;
  if (SIMPROF_LIKELY(t.zones == this)) {
    if (Lane* l = t.lane) {
      if (SIMPROF_LIKELY(!l->owner_gone.load(std::memory_order_relaxed)))
        return worker_enter(*l, name);
    } else if (SIMPROF_LIKELY(t.loop_of == id_)) {
      return loop_enter(name);
    }
  }
  enter_slow(name);
}

void detail::EngineZonesState::leave() noexcept {
  ThreadState& t = t_state;
  if (SIMPROF_LIKELY(t.zones == this)) {
    if (Lane* l = t.lane) {
      const std::int64_t now = l->clock.now();
      const std::uint32_t d = t.depth;
      // d - 1 wraps for d == 0: a stray leave, or a zone not kept, goes the slow way.
      if (SIMPROF_LIKELY(d - 1 < kMaxWorkerDepth && t.not_kept == 0 && t.frames[d - 1].lane == l &&
                         !l->owner_gone.load(std::memory_order_relaxed))) {
        t.depth = d - 1;
        return worker_leave(t.frames[d - 1], now);
      }
    } else if (SIMPROF_LIKELY(t.loop_of == id_)) {
      return loop_leave();
    }
  }
  leave_slow();
}

bool detail::EngineZonesState::claim_loop_thread() noexcept {
  if (std::this_thread::get_id() != loop_thread_) return false;
  ThreadState& t = t_state;  // the next zone here takes the loop's fast path
  t.zones = this;
  t.lane = nullptr;
  t.loop_of = id_;
  return true;
}

SIMPROF_ZONES_NOINLINE void detail::EngineZonesState::enter_slow(const char* name) noexcept {
  if (t_state.gone) return;
  if (claim_loop_thread()) return loop_enter(name);
  Lane* l = nullptr;
  try {
    l = lane();    // this thread's first zone here, or its previous zone was another's
  } catch (...) {  // out of memory: the zone is not kept (its leave() pairs with it)
    ++t_state.not_kept;
    return;
  }
  worker_enter(*l, name);
}

SIMPROF_ZONES_NOINLINE void detail::EngineZonesState::leave_slow() noexcept {
  ThreadState& t = t_state;
  if (t.gone) return;
  if (claim_loop_thread()) return loop_leave();
  if (t.not_kept > 0) {  // the innermost zone was not kept: it ends (whoever entered it)
    --t.not_kept;
    return;
  }
  if (t.depth == 0 || t.frames[t.depth - 1].lane->owner != id_) return stray_worker_leave();
  // The thread's innermost zone is ours, though its last zone was another EngineZones' (or the
  // lane's owner is gone: then the id cannot be ours, and it went stray above).
  const std::int64_t now = prof_.clock_.now();
  --t.depth;
  worker_leave(t.frames[t.depth], now);
}

bool detail::EngineZonesState::resolve(Node& n) noexcept {
  if (n.stage != kNoStage) return true;
  if (n.bad) return false;
  try {
    n.stage = prof_.stage_id(n.path);
    return true;
  } catch (const std::exception& e) {
    n.bad = true;
    say_once(kNotOpened, [&] {
      return fmt::format("simprof: engine zone '{}' is ignored: {}", n.path, e.what());
    });
    return false;
  }
}

SIMPROF_FORCE_INLINE void detail::EngineZonesState::loop_enter(const char* name) noexcept {
  const Node* parent = loop_stack_.empty() ? &root_ : loop_stack_.back().node;
  Node* n = nullptr;
  try {
    n = loop_nodes_.find_or_add(parent, name == nullptr ? kNullName : name);
    loop_stack_.push_back(LoopFrame{n, false});
  } catch (...) {  // out of memory: the zone is not kept, and its leave() pairs with it
    ++loop_not_kept_;
    return;
  }
  // Outside a step there is nothing to count it into; its leave() still pairs with it.
  if (!prof_.in_step() || (n->stage == kNoStage && !resolve(*n))) return;
  const StepProfiler& p = prof_;
  const StageId id = n->stage;  // a registered stage: what begin_stage() could refuse is this
  if (SIMPROF_UNLIKELY(p.depth_ == StepProfiler::kMaxDepth || p.slots_[id].open))
    return not_opened(*n);
  prof_.begin_stage(id);
  loop_stack_.back().opened = true;
}

// A loop zone whose stage begin_stage() refuses: already open (a scope of that name), or too deep.
SIMPROF_ZONES_COLD void detail::EngineZonesState::not_opened(const Node& n) noexcept {
  try {
    prof_.begin_stage(n.stage);  // throws, naming the reason
    loop_stack_.back().opened = true;
  } catch (const std::exception& e) {
    say_once(kNotOpened, [&] {
      return fmt::format("simprof: engine zone '{}' not counted: {}", n.path, e.what());
    });
  }
}

SIMPROF_FORCE_INLINE void detail::EngineZonesState::loop_leave() noexcept {
  if (SIMPROF_UNLIKELY(loop_not_kept_ != 0)) {  // the innermost zone was not kept
    --loop_not_kept_;
    return;
  }
  if (SIMPROF_UNLIKELY(loop_stack_.empty())) return stray_loop_leave();
  const LoopFrame f = loop_stack_.back();
  loop_stack_.pop_back();
  if (!f.opened) return;
  const StageId id = f.node->stage;
  if (SIMPROF_UNLIKELY(prof_.depth_ == 0 || prof_.stack_[prof_.depth_ - 1] != id))
    return left_around_a_scope(*f.node);
  prof_.close_stage(id, prof_.clock_.now());
}

SIMPROF_ZONES_COLD void detail::EngineZonesState::stray_loop_leave() noexcept {
  say_once(kStrayLeave, [] {
    return std::string(
        "simprof: EngineZones::leave() with no zone open on the loop's thread; ignored");
  });
}

// A scope opened inside the zone is still open: ending the zone would break the nesting. The
// step's end says so (the profiler's unbalanced-scopes error).
SIMPROF_ZONES_COLD void detail::EngineZonesState::left_around_a_scope(const Node& n) noexcept {
  say_once(kNotOpened, [&] {
    return fmt::format(
        "simprof: engine zone '{}' left while stage '{}' is open inside it; the "
        "zone is left to the step's end",
        n.path,
        prof_.depth_ ? prof_.names_[prof_.stack_[prof_.depth_ - 1]] : std::string("nothing"));
  });
}

SIMPROF_ZONES_COLD bool detail::EngineZonesState::fill_slot(Lane& l, std::size_t slot,
                                                            const NodeKey& key) noexcept {
  try {
    Lane::Named named;
    if (const auto it = l.names.find(key); it != l.names.end()) {
      named = it->second;
    } else {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        named.node = worker_nodes_.find_or_add(key.parent, key.name);
      }
      const std::uint32_t k = l.n_sums.load(std::memory_order_relaxed);
      named.sum = k < kMaxSums ? &l.sums[k] : nullptr;  // beyond: each zone goes through the ring
      l.names.emplace(key, named);
      if (named.sum != nullptr) {
        l.sum_node[k] = named.node;
        l.n_sums.store(k + 1, std::memory_order_release);
      }
    }
    l.slots[slot] = Lane::Slot{key, named};
    return true;
  } catch (...) {  // out of memory (or a lock that failed): the zone is not kept
    return false;
  }
}

// The innermost open zone of this EngineZones on the calling thread, under zones of others.
SIMPROF_ZONES_COLD const detail::EngineZonesState::Node* detail::EngineZonesState::worker_parent(
    const Lane* l) const noexcept {
  const ThreadState& t = t_state;
  for (std::uint32_t i = t.depth; i-- > 0;)
    if (t.frames[i].lane == l) return t.frames[i].node;
  return &root_;
}

SIMPROF_ZONES_COLD void detail::EngineZonesState::too_deep() noexcept {
  ++t_state.not_kept;  // its leave() pairs with it
  say_once(kTooDeep, [] {
    return fmt::format(
        "simprof: worker-thread engine zones nested deeper than {} are not "
        "counted (EngineZones::kMaxWorkerDepth)",
        kMaxWorkerDepth);
  });
}

// A worker's zone begins on lane l (the calling thread's, in t_state).
SIMPROF_FORCE_INLINE void detail::EngineZonesState::worker_enter(Lane& l,
                                                                 const char* name) noexcept {
  ThreadState& t = t_state;
  const std::uint32_t d = t.depth;
  if (SIMPROF_UNLIKELY(d >= kMaxWorkerDepth || t.not_kept != 0)) return too_deep();
  const Node* parent = &root_;
  if (d != 0) parent = t.frames[d - 1].lane == &l ? t.frames[d - 1].node : worker_parent(&l);
  const NodeKey key{parent, name == nullptr ? kNullName : name};
  const std::size_t at = slot_of(key, Lane::kSlots);
  // This thread's first sight of the zone path, or a collision: filled from the map.
  if (SIMPROF_UNLIKELY(!(l.slots[at].key == key)) && !fill_slot(l, at, key)) {
    ++t.not_kept;  // out of memory: its leave() pairs with it
    return;
  }
  const Lane::Named named = l.slots[at].named;
  // The zone begins once the lookup is done, as on the loop's thread: the time spent here
  // belongs to the parent zone, not to this one.
  t.frames[d] = WorkerFrame{&l, named.node, named.sum, l.clock.now()};
  t.depth = d + 1;
}

// A worker's zone f (popped off the calling thread's frames) ended at t.
SIMPROF_FORCE_INLINE void detail::EngineZonesState::worker_leave(const WorkerFrame& f,
                                                                 std::int64_t t) noexcept {
  Lane& l = *f.lane;
  // A zone of 2^48 ticks or more (a day or more) has no place in a sum: it goes through the ring.
  const std::int64_t d = std::max<std::int64_t>(t - f.begin, 0);
  const bool summed = f.sum != nullptr && static_cast<std::uint64_t>(d) <= Lane::kTickMask;
  if (summed) {  // one writer: a plain add, stored whole for the loop's thread to load whole
    std::atomic<std::uint64_t>& s = *f.sum;
    s.store(s.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(d) + Lane::kOneZone,
            std::memory_order_relaxed);
    if (SIMPROF_LIKELY(!l.spans.load(std::memory_order_relaxed))) return;
  }
  queue_zone(l, f, t, summed);
}

SIMPROF_ZONES_COLD void detail::EngineZonesState::stray_worker_leave() noexcept {
  say_once(kStrayLeave, [] {
    return std::string(
        "simprof: EngineZones::leave() with no zone open on a worker thread; ignored");
  });
}

// A worker zone through its thread's queue, for the listeners (or for its time: no sum).
SIMPROF_ZONES_NOINLINE void detail::EngineZonesState::queue_zone(Lane& l, const WorkerFrame& f,
                                                                 std::int64_t t,
                                                                 bool summed) noexcept {
  const std::uint64_t h = l.head.load(std::memory_order_relaxed);
  if (h - l.tail.load(std::memory_order_acquire) >= kMaxPending) {
    if (l.dropped.fetch_add(1, std::memory_order_relaxed) == 0) {
      say_once(kOverflow, [] {  // out of memory for the message: the count still says it
        return fmt::format(
            "simprof: more than {} worker zones of one thread waited for a step "
            "end; the rest are dropped (EngineZones::dropped())",
            kMaxPending);
      });
    }
    return;
  }
  l.ring[h % kMaxPending] = Finished{f.node, f.begin, t, detail::os_thread_id(), summed};
  l.head.store(h + 1, std::memory_order_release);
}

std::optional<double> detail::EngineZonesState::worker_cpu_seconds(StageId id) const noexcept {
  if (id >= cpu_in_.size() || cpu_in_[id] != cpu_serial_ || cpu_serial_ == 0) return std::nullopt;
  return prof_.clock_.seconds(cpu_ticks_[id]);
}

std::uint64_t detail::EngineZonesState::dropped() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint64_t n = dropped_;
  for (const auto& l : lanes_) n += l->dropped.load(std::memory_order_relaxed);
  return n;
}

// The public face: each call goes to the insides (inlined here, in their own file).
EngineZones::EngineZones(StepProfiler& prof, std::string_view under)
    : impl_(std::make_unique<detail::EngineZonesState>(prof, under)) {
  prof.zones_.push_back(impl_.get());
}

EngineZones::~EngineZones() {
  auto& z = impl_->profiler().zones_;
  z.erase(std::remove(z.begin(), z.end(), impl_.get()), z.end());
}

void EngineZones::enter(const char* name) noexcept { impl_->enter(name); }
void EngineZones::leave() noexcept { impl_->leave(); }
std::optional<double> EngineZones::worker_cpu_seconds(StageId id) const noexcept {
  return impl_->worker_cpu_seconds(id);
}
std::optional<double> EngineZones::worker_cpu_seconds(std::string_view name) const noexcept {
  const StageId id = impl_->profiler().find_stage(name);
  if (id == kNoStage) return std::nullopt;
  return impl_->worker_cpu_seconds(id);
}
std::uint64_t EngineZones::dropped() const noexcept { return impl_->dropped(); }
StageId EngineZones::under() const noexcept { return impl_->under(); }

}  // namespace simprof
