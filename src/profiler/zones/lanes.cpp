// SPDX-License-Identifier: MIT
// EngineZones' lanes: a worker thread's lane, made at its first zone, and the step end on the
// loop's thread, which takes the lanes' sums and queued zones.
#include <algorithm>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "lanes.hpp"
#include "simprof/base/log.hpp"
#include "simprof/detail/thread_id.hpp"

namespace simprof {

detail::EngineZonesState::Lane* detail::EngineZonesState::lane() {
  ThreadState& t = t_state;
  auto& entries = thread_lanes().entries;
  for (const ThreadLanes::Entry& e : entries)
    if (e.owner == id_) {
      t.zones = this;
      t.lane = e.lane.get();
      return e.lane.get();
    }
  // This thread's first zone of this EngineZones: the one allocation and lock a thread pays.
  // The lanes of EngineZones that are gone are taken out (and held here until this returns), then
  // the zones this thread left open in them are forgotten: decided once, from the same lanes, so
  // that an EngineZones destroyed meanwhile on its loop's thread cannot free a lane that a frame
  // still names (and whose address the lane made below could take).
  std::vector<std::shared_ptr<Lane>> gone;
  for (const ThreadLanes::Entry& e : entries)
    if (e.lane->owner_gone.load(std::memory_order_acquire)) gone.push_back(e.lane);
  if (!gone.empty()) {
    const auto is_gone = [&gone](const Lane* l) {
      for (const auto& g : gone)
        if (g.get() == l) return true;
      return false;
    };
    // Zones not kept stay counted (whose they were is not known), innermost as they were.
    const WorkerFrame* end = std::remove_if(t.frames, t.frames + t.depth,
                                            [&](const WorkerFrame& f) { return is_gone(f.lane); });
    t.depth = static_cast<std::uint32_t>(end - t.frames);
    entries.erase(
        std::remove_if(entries.begin(), entries.end(),
                       [&](const ThreadLanes::Entry& e) { return is_gone(e.lane.get()); }),
        entries.end());
  }
  t.zones = nullptr;  // its lane may have been one of those
  entries.reserve(entries.size() + 1);
  std::shared_ptr<Lane> made;
  {
    std::lock_guard<std::mutex> lock(mutex_);  // spans_ as listeners_changed() leaves it
    made = std::make_shared<Lane>(id_, prof_.clock_, spans_.load(std::memory_order_relaxed));
    lanes_.push_back(made);
    lanes_changed_.fetch_add(1, std::memory_order_release);
  }
  entries.push_back(ThreadLanes::Entry{id_, made});  // reserved: cannot throw
  t.zones = this;
  t.lane = made.get();
  return made.get();
}

// The loop's zones still open at the step's end: closed there, said once.
void detail::EngineZonesState::close_left_open(std::int64_t t) noexcept {
  for (auto it = loop_stack_.rbegin(); it != loop_stack_.rend(); ++it) {
    if (!it->opened) continue;
    const StageId id = it->node->stage;
    if (prof_.depth_ == 0 || prof_.stack_[prof_.depth_ - 1] != id) break;  // a scope inside it
    say_once(kLeftOpen, [&] {
      return fmt::format(
          "simprof: engine zone '{}' still open at the end of step {}; closed "
          "there (the engine's later leave() pairs with it)",
          it->node->path, prof_.serial_ - 1);
    });
    prof_.close_stage(id, t);
    it->opened = false;  // the frame stays, so that the engine's leave() finds it
  }
  // A zone that could not be closed has a scope open inside it: the profiler drops the step
  // (its unbalanced-scopes error) and every stage with it, so none of ours is open any more.
  for (LoopFrame& f : loop_stack_) f.opened = false;
}

// At the step's end, on the loop's thread: close the zones left open, then take the workers' sums
// that moved into the CPU times and their queued zones to the listeners.
void detail::EngineZonesState::step_ending(std::int64_t t) noexcept {
  close_left_open(t);
  // The lanes, taken under the lock only when a thread's first zone added one or a step end
  // removed some: most step ends take no lock (its line and code, cold after the engine's work,
  // cost more than the rest of a step end without workers).
  if (lanes_changed_.load(std::memory_order_acquire) != lanes_seen_) {
    std::lock_guard<std::mutex> lock(mutex_);
    draining_.clear();
    try {
      draining_.reserve(lanes_.size());  // allocates only when threads were added
    } catch (...) {
      return;  // out of memory: the zones wait in their lanes for the next step end
    }
    for (const auto& l : lanes_) draining_.push_back(l.get());
    lanes_seen_ = lanes_changed_.load(std::memory_order_relaxed);
  }
  ++cpu_serial_;
  // Every line read below is likely cold (the workers wrote the sums; the engine's work evicted
  // the rest), and each lane's reads depend on its pointers: asked for all at once first, so that
  // they come in together rather than one after another.
  for (const Lane* l : draining_) prefetch(&l->n_sums);
  for (const Lane* l : draining_) {
    const std::uint32_t n = std::min(l->n_sums.load(std::memory_order_relaxed), kPrefetchSums);
    for (std::uint32_t i = 0; i < n; i += 64 / sizeof(std::uint64_t)) prefetch(&l->sums[i]);
    for (std::uint32_t i = 0; i < n; i += 64 / sizeof(Lane::Taken)) prefetch(&l->taken[i]);
    prefetch(&l->tail);
  }
  bool gone = false;
  for (Lane* l : draining_) {
    gone = gone || l->thread_gone.load(std::memory_order_acquire);
    const std::uint32_t n = l->n_sums.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint64_t v = l->sums[i].load(std::memory_order_relaxed);
      Lane::Taken& k = l->taken[i];
      if (v == k.seen) continue;  // no zone of that path ended since the last step end
      if (!k.resolved) {
        Node& node = *l->sum_node[i];
        k.stage = resolve(node) ? node.stage : kNoStage;
        k.top = node.parent == &root_;
        k.resolved = true;
      }
      add_cpu(k.stage, k.top, static_cast<std::int64_t>((v - k.seen) & Lane::kTickMask));
      k.seen = v;
    }
    const std::uint64_t head = l->head.load(std::memory_order_acquire);
    const std::uint64_t tail = l->tail.load(std::memory_order_relaxed);
    if (tail == head) continue;  // nothing queued: the line stays as the worker last saw it
    for (std::uint64_t i = tail; i != head; ++i) hand_over(l->ring[i % kMaxPending]);
    l->tail.store(head, std::memory_order_release);
  }
  if (!gone) return;
  // Lanes of threads that ended, now empty: removed (their drop counts kept).
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t before = lanes_.size();
  lanes_.erase(std::remove_if(lanes_.begin(), lanes_.end(),
                              [&](const std::shared_ptr<Lane>& l) {
                                if (!l->thread_gone.load(std::memory_order_acquire) || !drained(*l))
                                  return false;
                                dropped_ += l->dropped.load(std::memory_order_relaxed);
                                return true;
                              }),
               lanes_.end());
  if (lanes_.size() != before) {  // draining_ names freed lanes now: taken again next time
    draining_.clear();
    lanes_changed_.fetch_add(1, std::memory_order_release);
  }
}

bool detail::EngineZonesState::drained(const Lane& l) noexcept {
  if (l.head.load(std::memory_order_acquire) != l.tail.load(std::memory_order_relaxed))
    return false;
  const std::uint32_t n = l.n_sums.load(std::memory_order_acquire);
  for (std::uint32_t i = 0; i < n; ++i)
    if (l.sums[i].load(std::memory_order_relaxed) != l.taken[i].seen) return false;
  return true;
}

// A worker zone path's CPU ticks at the step end, into its stage's sum (kNoStage: none).
void detail::EngineZonesState::add_cpu(StageId stage, bool top, std::int64_t d) noexcept {
  // Nested worker zones are inside their parent zone's time already; a top-level one also
  // counts into `under` and its parents (the loop's scopes do the same for "a/b" into "a").
  StageId p = stage;
  while (p != kNoStage) {
    try {
      if (cpu_ticks_.size() <= p) {
        cpu_ticks_.resize(prof_.num_stages(), 0);
        cpu_in_.resize(prof_.num_stages(), 0);
      }
    } catch (...) {
      break;
    }
    if (cpu_in_[p] != cpu_serial_) {
      cpu_in_[p] = cpu_serial_;
      cpu_ticks_[p] = 0;
    }
    cpu_ticks_[p] += d;
    if (!top) break;
    p = prof_.slots_[p].parent;
  }
}

// One queued worker zone at the step end: the listeners, and the CPU sums if not summed already.
void detail::EngineZonesState::hand_over(const Finished& f) noexcept {
  if (!resolve(*f.node)) return;
  if (!f.summed) add_cpu(f.node->stage, f.node->parent == &root_, f.end - f.begin);
  const StageId id = f.node->stage;
  for (auto* l : span_listeners_) {
    try {
      l->on_worker_zone(id, f.begin, f.end, f.tid);
    } catch (...) {  // a listener's failure must not end the step (or the process)
    }
  }
}

}  // namespace simprof
