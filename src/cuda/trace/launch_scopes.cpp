// SPDX-License-Identifier: MIT
#include "simprof/cuda/trace/launch_scopes.hpp"

// cupti.h: with the launch calls' parameter structs (generated_*_meta.h)
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "../cupti/cupti_hub.hpp"
#include "event_cost.hpp"
#include "launch_hook.hpp"
#include "scope_driver.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"

namespace simprof::cuda {

namespace {

constexpr std::size_t kStreamsPerScope = 8;
constexpr std::size_t kMaxDepth = 32;

// A scope run: the streams it launched to, each with its begin and end event (-1: none yet).
struct Run {
  std::int32_t id = 0, depth = 0;
  std::size_t streams = 0;
  std::array<cudaStream_t, kStreamsPerScope> stream{};
  std::array<int, kStreamsPerScope> begin{}, end{};
};

// A window's pool: free, armed, waiting on the GPU, or read and kept as the next one's anchor.
enum class State { kFree, kArmed, kPending, kAnchor };

struct Slot {
  std::vector<cudaEvent_t> events;
  std::size_t used = 0;
  std::vector<Run> runs;
  std::size_t n_runs = 0;
  std::uint64_t tag = 0;
  State state = State::kFree;
  bool failed = false;
  int anchor = -1;  // the event of the last depth-0 scope's latest end
};

std::int64_t elapsed_ns(cudaEvent_t from, cudaEvent_t to, bool& ok) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, from, to) != cudaSuccess) ok = false;
  return std::llround(static_cast<double>(ms) * 1e6);
}

}  // namespace

struct LaunchScopes::Impl {
  LaunchScopesOptions options;
  // Held while a window is armed: a CUPTI subscription slows every driver call of a launch-bound
  // loop, armed or not.
  std::optional<detail::CuptiLease> lease;
  std::string reason;
  std::vector<Slot> slots;
  std::atomic<std::thread::id> armed_thread{};
  Slot* cur = nullptr;
  std::array<int, kMaxDepth> stack{};  // open runs (-1: one not kept)
  std::size_t depth = 0;
  std::vector<Slot*> order;                   // the windows in arm order (a ring)
  std::uint64_t next_arm = 0, next_read = 0;  // counted into it: read in arm order
  Slot* anchor = nullptr;                     // the last anchored window read
  std::atomic<std::uint64_t> skipped{0}, dropped{0}, capturing{0};
  bool claimed = false;  // the process's one LaunchScopes
  bool handler = false;  // the launch handler is set: the destructor clears it
  // LaunchSource::kHook: the preloaded hook's watch and retire (null: CUPTI's callbacks instead).
  detail::HookWatch hook_watch = nullptr;
  detail::HookRetire hook_retire = nullptr;
  LaunchSource source = LaunchSource::kCupti;  // resolved: kHook or kCupti
  std::string hook_unused;                     // kAuto chose CUPTI: why
  EventCost cost;                              // measured once enabled
  detail::ScopeDriver driver;  // what a launch records, through the driver (scope_driver.hpp)

  ~Impl() {
    for (Slot& s : slots)
      for (cudaEvent_t e : s.events)
        if (e != nullptr) cudaEventDestroy(e);
    if (claimed) detail::CuptiProcess::get().release_launches();
  }

  // The next event of the window, recorded on `s`; -1 (the window fails) when none is left or
  // the record fails (a stream of another device).
  int record(cudaStream_t s) {
    if (cur->used == cur->events.size() || !driver.record(cur->events[cur->used], s)) {
      cur->failed = true;
      return -1;
    }
    return static_cast<int>(cur->used++);
  }

  void launched(cudaStream_t s) {
    if (cur == nullptr || depth == 0) return;
    int mark = -1;
    bool asked = false;  // the driver is asked once, and only where an event would be recorded
    for (std::size_t i = 0; i < depth; ++i) {
      if (stack[i] < 0) continue;
      Run& r = cur->runs[static_cast<std::size_t>(stack[i])];
      if (std::find(r.stream.begin(), r.stream.begin() + static_cast<std::ptrdiff_t>(r.streams),
                    s) != r.stream.begin() + static_cast<std::ptrdiff_t>(r.streams))
        continue;
      if (r.streams == kStreamsPerScope) {
        cur->failed = true;
        continue;
      }
      // An event recorded into a capture would join the program's graph.
      if (!asked && (asked = true, driver.captured(s))) {
        capturing.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      if (mark < 0 && (mark = record(s)) < 0) return;
      r.stream[r.streams] = s;
      r.begin[r.streams] = mark;
      r.end[r.streams++] = -1;
    }
  }

  static void on_launch(void* context, CUpti_CallbackDomain, CUpti_CallbackId id,
                        const void* data) {
    auto* self = static_cast<Impl*>(context);
    const auto* d = static_cast<const CUpti_CallbackData*>(data);
    if (self == nullptr || d == nullptr) return;
    if (d->callbackSite != CUPTI_API_ENTER ||
        self->armed_thread.load(std::memory_order_acquire) != std::this_thread::get_id())
      return;
    self->launched(static_cast<cudaStream_t>(detail::launch_stream(id, d->functionParams)));
  }

  // The launch hook's watcher: set on the arming thread only, while armed.
  static void on_hook_launch(void* context, void* stream, int per_thread) {
    auto* self = static_cast<Impl*>(context);
    if (self->armed_thread.load(std::memory_order_acquire) != std::this_thread::get_id()) return;
    self->launched(stream == nullptr && per_thread != 0 ? cudaStreamPerThread
                                                        : static_cast<cudaStream_t>(stream));
  }

  // LaunchSource::kHook or kAuto: the hook's functions, or why it cannot be used.
  void find_hook() {
    hook_watch = reinterpret_cast<detail::HookWatch>(dlsym(RTLD_DEFAULT, detail::kHookWatch));
    hook_retire = reinterpret_cast<detail::HookRetire>(dlsym(RTLD_DEFAULT, detail::kHookRetire));
    const auto entries =
        reinterpret_cast<detail::HookEntries>(dlsym(RTLD_DEFAULT, detail::kHookEntries));
    if (hook_watch == nullptr || hook_retire == nullptr || entries == nullptr)
      reason =
          "the launch hook is not in the process (libsimprof_launch_hook.so, preloaded by "
          "simprof run where it is beside its tool)";
    else if (entries() == 0)
      reason =
          "the launch hook handed out no launch entry point (the program found the driver's "
          "before the hook was loaded, or this is not x86-64)";
    if (!reason.empty()) hook_watch = nullptr, hook_retire = nullptr;
  }

  // Whether the GPU passed every event of the window (its streams run in any order).
  static bool passed(const Slot& slot) {
    // The last event first: while the GPU has not reached it, one query says so.
    if (slot.used > 0 && cudaEventQuery(slot.events[slot.used - 1]) == cudaErrorNotReady)
      return false;
    for (std::size_t i = 0; i + 1 < slot.used; ++i)
      if (cudaEventQuery(slot.events[i]) == cudaErrorNotReady) return false;
    return true;
  }

  // The window in `slot`, read: its scopes from its first event.
  bool read(Slot& slot, LaunchWindow& w) {
    w.tag = slot.tag;
    bool ok = true;
    const cudaEvent_t ref = slot.events[0];  // read only when a scope launched work
    const auto at = [&](int e) {
      return elapsed_ns(ref, slot.events[static_cast<std::size_t>(e)], ok);
    };
    int last_top = -1;  // the last depth-0 scope that launched work
    for (std::size_t i = 0; i < slot.n_runs; ++i) {
      const Run& r = slot.runs[i];
      ScopeTiming t{r.id, r.depth, r.streams > 0, 0, 0};
      for (std::size_t k = 0; k < r.streams; ++k) {
        const std::int64_t b = at(r.begin[k]), e = r.end[k] >= 0 ? at(r.end[k]) : b;
        t.begin_ns = k == 0 ? b : std::min(t.begin_ns, b);
        t.end_ns = k == 0 ? e : std::max(t.end_ns, e);
      }
      if (cost.measured)
        t.events_ns = detail::events_ns(r.begin.data(), r.end.data(), r.streams, cost);
      if (r.depth == 0 && r.streams > 0) last_top = static_cast<int>(i);
      w.scopes.push_back(t);
    }
    detail::keep_nested_inside(w.scopes);
    std::int64_t anchor_end = 0;  // that scope's latest end, over its streams
    if (last_top >= 0) {
      const Run& r = slot.runs[static_cast<std::size_t>(last_top)];
      for (std::size_t k = 0; k < r.streams; ++k)
        if (r.end[k] >= 0 && (slot.anchor < 0 || at(r.end[k]) > anchor_end)) {
          slot.anchor = r.end[k];
          anchor_end = at(r.end[k]);
        }
    }
    if (slot.anchor >= 0) {
      w.anchored = true;
      w.anchor_ns = anchor_end;
      if (anchor != nullptr) {
        w.has_previous = true;
        w.since_previous_ns = elapsed_ns(anchor->events[static_cast<std::size_t>(anchor->anchor)],
                                         slot.events[static_cast<std::size_t>(slot.anchor)], ok);
      }
    }
    return ok;
  }
};

LaunchScopes::LaunchScopes(LaunchScopesOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.events < 2 || options.scopes < 1 || options.windows < 2)
    throw std::invalid_argument(fmt::format(
        "simprof: LaunchScopesOptions events = {}, scopes = {}, windows = {} (expected >= 2, >= 1, "
        ">= 2)",
        options.events, options.scopes, options.windows));
  if (!detail::CuptiProcess::get().claim_launches())
    throw std::logic_error("simprof: a LaunchScopes already exists (one per process)");
  Impl& m = *impl_;
  m.claimed = true;
  m.options = options;
  m.slots.resize(options.windows);
  m.order.resize(options.windows);
  if (options.source == LaunchSource::kHook) {
    m.source = LaunchSource::kHook;
    m.find_hook();
    if (!m.reason.empty()) return;  // disabled: nothing made
  }
  m.reason = m.driver.find();
  if (!m.reason.empty()) return;  // disabled: nothing made
  for (Slot& s : m.slots) {
    s.runs.resize(options.scopes);
    s.events.resize(options.events);
    for (cudaEvent_t& e : s.events) SIMPROF_CUDA_CHECK(cudaEventCreate(&e));
  }
  if (options.source == LaunchSource::kAuto) {  // CUDA has started: its entry points are out
    m.find_hook();
    m.hook_unused = std::exchange(m.reason, {});  // no hook: CUPTI's callbacks instead
    if (m.hook_unused.empty()) m.source = LaunchSource::kHook;
  }
  if (m.source != LaunchSource::kHook) {  // the hook needs no CUPTI at all
    const detail::CuptiLease probe;       // CUPTI is ours to use (no other tool holds it)
    if (probe.result() != CUPTI_SUCCESS) {
      m.reason = probe.failure();
      return;
    }
  }
  m.cost =
      detail::event_cost(current_device());  // never throws; before the handler (nothing to undo)
  if (m.source != LaunchSource::kHook) {
    detail::set_launch_handler(&Impl::on_launch, &m);
    m.handler = true;
  }
}

LaunchScopes::~LaunchScopes() {
  Impl& m = *impl_;
  if (m.lease) detail::enable_launches(m.lease->handle(), false);
  // Even where a later arm() failed: the handler still points here. Returns once no callback is
  // inside it.
  if (m.handler) detail::set_launch_handler(nullptr, nullptr);
  if (m.hook_retire != nullptr) m.hook_retire();  // no watcher of this one is called after this
}

bool LaunchScopes::enabled() const noexcept { return impl_->reason.empty(); }
const std::string& LaunchScopes::disabled_reason() const noexcept { return impl_->reason; }
LaunchSource LaunchScopes::source() const noexcept { return impl_->source; }
const std::string& LaunchScopes::hook_unused_reason() const noexcept { return impl_->hook_unused; }
const EventCost& LaunchScopes::event_cost() const noexcept { return impl_->cost; }
bool LaunchScopes::armed() const noexcept { return impl_->cur != nullptr; }
std::uint64_t LaunchScopes::skipped() const noexcept { return impl_->skipped.load(); }
std::uint64_t LaunchScopes::dropped() const noexcept { return impl_->dropped.load(); }
std::uint64_t LaunchScopes::capturing_launches() const noexcept { return impl_->capturing.load(); }

bool LaunchScopes::arm(std::uint64_t tag) {
  Impl& m = *impl_;
  if (!m.reason.empty() || m.cur != nullptr) return false;
  // Any free slot (the anchor's stays taken until a later window is anchored); read in arm order.
  const auto free = std::find_if(m.slots.begin(), m.slots.end(),
                                 [](const Slot& x) { return x.state == State::kFree; });
  if (free == m.slots.end()) {
    m.skipped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  Slot& s = *free;
  if (m.hook_watch != nullptr) {
    m.hook_watch(&Impl::on_hook_launch, &m);  // this thread's launches from now on
  } else {
    m.lease.emplace();
    if (m.lease->result() != CUPTI_SUCCESS) {
      m.reason = m.lease->failure();
      m.lease.reset();
      return false;
    }
    if (const CUptiResult r = detail::enable_launches(m.lease->handle(), true);
        r != CUPTI_SUCCESS) {
      m.reason = "cuptiEnableCallback failed: " + detail::cupti_error(r);
      m.lease.reset();
      return false;
    }
  }
  s.state = State::kArmed;
  s.used = s.n_runs = 0;
  s.failed = false;
  s.anchor = -1;
  s.tag = tag;
  m.order[m.next_arm++ % m.order.size()] = &s;
  m.cur = &s;
  m.depth = 0;
  m.armed_thread.store(std::this_thread::get_id(), std::memory_order_release);
  return true;
}

void LaunchScopes::open(std::int32_t id) {
  Impl& m = *impl_;
  if (m.cur == nullptr) return;
  int run = -1;
  if (m.depth == kMaxDepth || m.cur->n_runs == m.cur->runs.size()) {
    m.cur->failed = true;
  } else {
    run = static_cast<int>(m.cur->n_runs++);
    Run& r = m.cur->runs[static_cast<std::size_t>(run)];
    r.id = id;
    r.depth = static_cast<std::int32_t>(m.depth);
    r.streams = 0;
  }
  if (m.depth < kMaxDepth) m.stack[m.depth++] = run;
}

void LaunchScopes::close() {
  Impl& m = *impl_;
  if (m.cur == nullptr || m.depth == 0) return;
  const int run = m.stack[--m.depth];
  if (run < 0) return;
  Run& r = m.cur->runs[static_cast<std::size_t>(run)];
  for (std::size_t k = 0; k < r.streams; ++k) {
    if (m.driver.captured(r.stream[k])) {  // captured since its first launch: no end, no window
      m.cur->failed = true;
      continue;
    }
    r.end[k] = m.record(r.stream[k]);
  }
}

void LaunchScopes::disarm() {
  Impl& m = *impl_;
  if (m.cur == nullptr) return;
  m.armed_thread.store(std::thread::id(), std::memory_order_release);
  if (m.hook_watch != nullptr) m.hook_watch(nullptr, nullptr);
  if (m.lease) detail::enable_launches(m.lease->handle(), false);
  m.lease.reset();
  if (m.depth != 0) m.cur->failed = true;  // a scope still open: its ends are missing
  m.cur->state = State::kPending;
  m.cur = nullptr;
}

void LaunchScopes::poll(std::vector<LaunchWindow>& out) {
  Impl& m = *impl_;
  while (m.next_read < m.next_arm) {
    Slot& s = *m.order[m.next_read % m.order.size()];
    if (s.state != State::kPending) return;  // still armed
    if (!s.failed && !m.passed(s)) return;   // the GPU has not passed it: never wait
    ++m.next_read;
    LaunchWindow w;
    if (s.failed || !m.read(s, w)) {
      m.dropped.fetch_add(1, std::memory_order_relaxed);
      s.state = State::kFree;
      continue;
    }
    if (w.anchored) {  // the anchor moves on: the one before is free again
      if (m.anchor != nullptr) m.anchor->state = State::kFree;
      m.anchor = &s;
      s.state = State::kAnchor;
    } else {
      s.state = State::kFree;
    }
    out.push_back(std::move(w));
  }
}

}  // namespace simprof::cuda
