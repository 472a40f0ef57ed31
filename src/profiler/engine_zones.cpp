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

#include "simprof/base/log.hpp"
#include "simprof/detail/thread_id.hpp"

namespace simprof {

// A worker thread's open zones, of every EngineZones that thread enters (their lanes tell them
// apart: a lane is one thread's for one EngineZones, and frames of an EngineZones that is gone are
// removed before its lane is freed, so a lane's address is never another's while a frame holds it).
struct EngineZones::WorkerFrame {
  Lane* lane;
  Node* node;
  std::atomic<std::uint64_t>* sum;  // the lane's sum for the node, null for none
  std::int64_t begin;
};

// A worker's first sight of a name, a stray leave, a queued zone: out of the repeated zone's way,
// so that the code a zone runs in the middle of an engine's own work stays a few cache lines.
#if defined(__GNUC__) || defined(__clang__)
#define SIMPROF_ZONES_COLD __attribute__((noinline, cold))
#define SIMPROF_ZONES_NOINLINE __attribute__((noinline))
#else
#define SIMPROF_ZONES_COLD
#define SIMPROF_ZONES_NOINLINE
#endif

namespace {
constexpr std::uint32_t kPrefetchSums = 256;  // a step end asks for the first ones' lines at once

SIMPROF_FORCE_INLINE void prefetch(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}
constexpr const char* kNullName = "(null)";  // a null name's one pointer (the caches' key)
}  // namespace

// One worker thread's hand-over to one EngineZones, with one writer (the thread) and one reader
// (the loop's thread, at step ends): a running sum per zone path the thread ran, a ring of single
// zones for the listeners that want them, and the thread's own cache of zone names. All are
// allocated once, the cache and the sums inside the lane itself (a zone finds them at fixed offsets
// from the lane, with no pointer to load first); the ring's pages are committed as it goes round
// (up to kMaxPending x 40 bytes, 640 KiB, per worker thread and EngineZones over a long run, and
// only while spans are wanted or for paths beyond kMaxSums).
struct alignas(64) EngineZones::Lane {
  // A sum is one word, so that a reader takes it whole in one load and the step end reads 8 bytes
  // per path and thread: the ticks in the low 48 bits (modulo 2^48: the reader takes differences,
  // and 2^48 ticks are a day or more between two step ends), the zones in the high 16 (modulo
  // 2^16: only that the word moved matters, so that a zone of no time still counts as run).
  static constexpr int kTickBits = 48;
  static constexpr std::uint64_t kTickMask = (std::uint64_t{1} << kTickBits) - 1;
  static constexpr std::uint64_t kOneZone = std::uint64_t{1} << kTickBits;
  // The worker's cache of its zone names: direct-mapped by (parent, name pointer), one line a
  // hit; a miss (a new name, or two names on one slot) goes to `names`, and fills the slot.
  static constexpr std::size_t kSlots = 128;
  struct Named {
    Node* node = nullptr;
    std::atomic<std::uint64_t>* sum = nullptr;  // in this lane's sums; null: none (kMaxSums)
  };
  struct Slot {
    NodeKey key{nullptr, nullptr};
    Named named;
  };
  Lane(std::uint64_t owner_id, const Clock& c, bool spans_wanted)
      : clock(c),
        spans(spans_wanted),
        owner(owner_id),
        ring(new Finished[kMaxPending]),
        sum_node(new Node*[kMaxSums]),
        taken(new Taken[kMaxSums]) {
    for (std::uint32_t i = 0; i < kMaxSums; ++i) sums[i].store(0, std::memory_order_relaxed);
  }
  // The first line holds all a repeated zone reads of the lane besides its slot and its sum (its
  // owner's lines and the profiler's are not read at all), and nothing here is written but the
  // two flags, rarely: in a step of an engine's own work between two zones, fewer lines to bring
  // back, and none that waits for another, is what a zone costs.
  const Clock clock;                    // the profiler's (fixed for its life)
  std::atomic<bool> owner_gone{false};  // the EngineZones was destroyed: the thread forgets it
  std::atomic<bool> spans;              // a listener wants worker zones: the zones are queued too
  alignas(64) Slot slots[kSlots];       // the worker's own
  alignas(64) std::atomic<std::uint64_t> sums[kMaxSums];  // written by the worker, read by the loop
  // The rest, on later lines.
  const std::uint64_t owner;
  std::unique_ptr<Finished[]> ring;
  std::unique_ptr<Node*[]> sum_node;  // set before n_sums is raised past it, then fixed
  // The loop's thread's own, beside each sum: the word it took last, and the sum's stage once
  // resolved (so that a step end reads no node).
  struct Taken {
    std::uint64_t seen = 0;
    StageId stage = kNoStage;
    bool resolved = false;  // stage is set (or kNoStage: a bad name, ignored)
    bool top = false;       // a top-level zone: it counts into `under` and its parents too
  };
  std::unique_ptr<Taken[]> taken;
  std::atomic<std::uint32_t> n_sums{0};  // sums in use (release: their sum_node is set)
  std::atomic<std::uint64_t> head{0};    // written by the worker
  char apart[64 - sizeof(std::atomic<std::uint64_t>)] = {};  // head and tail on their own lines
  std::atomic<std::uint64_t> tail{0};                        // written by the loop's thread
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<bool> thread_gone{false};                   // its thread ended: removed once drained
  std::unordered_map<NodeKey, Named, NodeKeyHash> names;  // the worker's own, read by it alone
};

// The lanes of the calling thread. At the thread's exit each is marked, and the loop's thread
// removes it once it has taken what it holds; the EngineZones may be gone by then (shared_ptr).
struct EngineZones::ThreadLanes {
  struct Entry {
    std::uint64_t owner;
    std::shared_ptr<Lane> lane;
  };
  std::vector<Entry> entries;
  ~ThreadLanes();
};

// The calling thread's zone state, for every EngineZones: which one its last zone was of (so that
// a repeated zone is told apart with one compare and no look at the EngineZones), and its open
// worker zones. Trivially constructed and destructed, so that reading it is a plain access to the
// thread's block (no initialisation check) and it can be read at any point of the thread's exit.
struct EngineZones::ThreadState {
  // The EngineZones of the thread's last zone, whose address a later one may take: a lane's
  // owner_gone, or loop_of, tells that apart. Null after the thread's lanes are gone.
  const EngineZones* zones = nullptr;
  Lane* lane = nullptr;  // its lane (held in thread_lanes()); null: the thread is its loop's thread
  std::uint64_t loop_of = 0;  // with lane null: the id of the EngineZones whose loop thread it is
  bool gone = false;          // the thread is exiting and its lanes are gone: zones are ignored
  std::uint32_t depth = 0;    // worker zones open and kept in frames (kMaxWorkerDepth at most)
  // Worker zones open and not kept (past kMaxWorkerDepth, or out of memory), innermost of all:
  // while there are any, a zone entered is not kept either, and a leave ends one of them first.
  std::uint32_t not_kept = 0;
  WorkerFrame frames[kMaxWorkerDepth]{};
};
thread_local EngineZones::ThreadState EngineZones::t_state;

EngineZones::ThreadLanes::~ThreadLanes() {
  // Set before other thread_local destructors that may still call enter()/leave().
  t_state.gone = true;
  t_state.zones = nullptr;
  for (const Entry& e : entries) e.lane->thread_gone.store(true, std::memory_order_release);
}

// A function's own thread_local: its construction check stays here, out of the accesses to
// t_state (which, constant-initialised, then needs none).
EngineZones::ThreadLanes& EngineZones::thread_lanes() {
  thread_local ThreadLanes lanes;
  return lanes;
}

namespace {
std::atomic<std::uint64_t> g_next_zones_id{1};
}  // namespace

std::size_t EngineZones::NodeKeyHash::operator()(const NodeKey& k) const noexcept {
  const std::size_t a = std::hash<const void*>{}(k.parent);
  return a ^ (std::hash<const void*>{}(k.name) + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
}

SIMPROF_ZONES_COLD EngineZones::Node* EngineZones::NodeTable::refill(Slot& slot,
                                                                     const NodeKey& key) {
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

EngineZones::EngineZones(StepProfiler& prof, std::string_view under)
    : prof_(prof),
      id_(g_next_zones_id.fetch_add(1, std::memory_order_relaxed)),
      loop_thread_(std::this_thread::get_id()) {
  if (!under.empty()) under_ = prof_.stage_id(under);  // throws for a bad name, naming it
  root_.path = std::string(under);
  root_.stage = under_;
  loop_stack_.reserve(StepProfiler::kMaxDepth);
  draining_.reserve(64);
  prof_.zones_.push_back(this);
  listeners_changed();
}

EngineZones::~EngineZones() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& l : lanes_) l->owner_gone.store(true, std::memory_order_release);
  }
  auto& z = prof_.zones_;
  z.erase(std::remove(z.begin(), z.end(), this), z.end());
}

void EngineZones::listeners_changed() noexcept {
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
void EngineZones::enter(const char* name) noexcept {
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

void EngineZones::leave() noexcept {
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

bool EngineZones::claim_loop_thread() noexcept {
  if (std::this_thread::get_id() != loop_thread_) return false;
  ThreadState& t = t_state;  // the next zone here takes the loop's fast path
  t.zones = this;
  t.lane = nullptr;
  t.loop_of = id_;
  return true;
}

SIMPROF_ZONES_NOINLINE void EngineZones::enter_slow(const char* name) noexcept {
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

SIMPROF_ZONES_NOINLINE void EngineZones::leave_slow() noexcept {
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

// The message is made only the first time: a problem repeated in every zone (a stray leave, a
// zone too deep) costs one load after that, no string and no lock.
template <class MakeMessage>
void EngineZones::say_once(Problem p, MakeMessage&& make) noexcept {
  if (said_.load(std::memory_order_relaxed) & p) return;
  try {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (said_.load(std::memory_order_relaxed) & p) return;
      said_.fetch_or(p, std::memory_order_relaxed);
    }
    default_logger()->warn("{} (said once)", make());
  } catch (...) {
    // Logging (or the message's memory) must not take the engine's callback down.
  }
}

bool EngineZones::resolve(Node& n) noexcept {
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

SIMPROF_FORCE_INLINE void EngineZones::loop_enter(const char* name) noexcept {
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
SIMPROF_ZONES_COLD void EngineZones::not_opened(const Node& n) noexcept {
  try {
    prof_.begin_stage(n.stage);  // throws, naming the reason
    loop_stack_.back().opened = true;
  } catch (const std::exception& e) {
    say_once(kNotOpened, [&] {
      return fmt::format("simprof: engine zone '{}' not counted: {}", n.path, e.what());
    });
  }
}

SIMPROF_FORCE_INLINE void EngineZones::loop_leave() noexcept {
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

SIMPROF_ZONES_COLD void EngineZones::stray_loop_leave() noexcept {
  say_once(kStrayLeave, [] {
    return std::string(
        "simprof: EngineZones::leave() with no zone open on the loop's thread; ignored");
  });
}

// A scope opened inside the zone is still open: ending the zone would break the nesting. The
// step's end says so (the profiler's unbalanced-scopes error).
SIMPROF_ZONES_COLD void EngineZones::left_around_a_scope(const Node& n) noexcept {
  say_once(kNotOpened, [&] {
    return fmt::format(
        "simprof: engine zone '{}' left while stage '{}' is open inside it; the "
        "zone is left to the step's end",
        n.path,
        prof_.depth_ ? prof_.names_[prof_.stack_[prof_.depth_ - 1]] : std::string("nothing"));
  });
}

EngineZones::Lane* EngineZones::lane() {
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

SIMPROF_ZONES_COLD bool EngineZones::fill_slot(Lane& l, std::size_t slot,
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
SIMPROF_ZONES_COLD const EngineZones::Node* EngineZones::worker_parent(
    const Lane* l) const noexcept {
  const ThreadState& t = t_state;
  for (std::uint32_t i = t.depth; i-- > 0;)
    if (t.frames[i].lane == l) return t.frames[i].node;
  return &root_;
}

SIMPROF_ZONES_COLD void EngineZones::too_deep() noexcept {
  ++t_state.not_kept;  // its leave() pairs with it
  say_once(kTooDeep, [] {
    return fmt::format(
        "simprof: worker-thread engine zones nested deeper than {} are not "
        "counted (EngineZones::kMaxWorkerDepth)",
        kMaxWorkerDepth);
  });
}

// A worker's zone begins on lane l (the calling thread's, in t_state).
SIMPROF_FORCE_INLINE void EngineZones::worker_enter(Lane& l, const char* name) noexcept {
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
SIMPROF_FORCE_INLINE void EngineZones::worker_leave(const WorkerFrame& f, std::int64_t t) noexcept {
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

SIMPROF_ZONES_COLD void EngineZones::stray_worker_leave() noexcept {
  say_once(kStrayLeave, [] {
    return std::string(
        "simprof: EngineZones::leave() with no zone open on a worker thread; ignored");
  });
}

// A worker zone through its thread's queue, for the listeners (or for its time: no sum).
SIMPROF_ZONES_NOINLINE void EngineZones::queue_zone(Lane& l, const WorkerFrame& f, std::int64_t t,
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

// At the step's end, on the loop's thread: close the zones left open, then take the workers' sums
// that moved into the CPU times and their queued zones to the listeners.
void EngineZones::step_ending(std::int64_t t) noexcept {
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

bool EngineZones::drained(const Lane& l) noexcept {
  if (l.head.load(std::memory_order_acquire) != l.tail.load(std::memory_order_relaxed))
    return false;
  const std::uint32_t n = l.n_sums.load(std::memory_order_acquire);
  for (std::uint32_t i = 0; i < n; ++i)
    if (l.sums[i].load(std::memory_order_relaxed) != l.taken[i].seen) return false;
  return true;
}

// A worker zone path's CPU ticks at the step end, into its stage's sum (kNoStage: none).
void EngineZones::add_cpu(StageId stage, bool top, std::int64_t d) noexcept {
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
void EngineZones::hand_over(const Finished& f) noexcept {
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

std::optional<double> EngineZones::worker_cpu_seconds(StageId id) const noexcept {
  if (id >= cpu_in_.size() || cpu_in_[id] != cpu_serial_ || cpu_serial_ == 0) return std::nullopt;
  return prof_.clock_.seconds(cpu_ticks_[id]);
}

std::optional<double> EngineZones::worker_cpu_seconds(std::string_view name) const noexcept {
  const StageId id = prof_.find_stage(name);
  if (id == kNoStage) return std::nullopt;
  return worker_cpu_seconds(id);
}

std::uint64_t EngineZones::dropped() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint64_t n = dropped_;
  for (const auto& l : lanes_) n += l->dropped.load(std::memory_order_relaxed);
  return n;
}

}  // namespace simprof
