// SPDX-License-Identifier: MIT
// EngineZones' per-thread layout, private to src/profiler/zones (lanes.cpp: a thread's lane, the
// step end).
// Why: a worker's repeated zone must cost a few loads and two stores on lines only its thread
// writes, never a lock, and a step end must take every thread's sums in one sweep.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"

#include "state.hpp"

namespace simprof {

// A worker thread's open zones, of every EngineZones that thread enters (their lanes tell them
// apart: a lane is one thread's for one EngineZones, and frames of an EngineZones that is gone are
// removed before its lane is freed, so a lane's address is never another's while a frame holds it).
struct detail::EngineZonesState::WorkerFrame {
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
struct alignas(64) detail::EngineZonesState::Lane {
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
struct detail::EngineZonesState::ThreadLanes {
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
struct detail::EngineZonesState::ThreadState {
  // The EngineZones of the thread's last zone, whose address a later one may take: a lane's
  // owner_gone, or loop_of, tells that apart. Null after the thread's lanes are gone.
  const EngineZonesState* zones = nullptr;
  Lane* lane = nullptr;  // its lane (held in thread_lanes()); null: the thread is its loop's thread
  std::uint64_t loop_of = 0;  // with lane null: the id of the EngineZones whose loop thread it is
  bool gone = false;          // the thread is exiting and its lanes are gone: zones are ignored
  std::uint32_t depth = 0;    // worker zones open and kept in frames (kMaxWorkerDepth at most)
  // Worker zones open and not kept (past kMaxWorkerDepth, or out of memory), innermost of all:
  // while there are any, a zone entered is not kept either, and a leave ends one of them first.
  std::uint32_t not_kept = 0;
  WorkerFrame frames[kMaxWorkerDepth]{};
};

// The message is made only the first time: a problem repeated in every zone (a stray leave, a
// zone too deep) costs one load after that, no string and no lock.
template <class MakeMessage>
void detail::EngineZonesState::say_once(Problem p, MakeMessage&& make) noexcept {
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

}  // namespace simprof
