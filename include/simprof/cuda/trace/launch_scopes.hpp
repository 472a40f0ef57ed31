// SPDX-License-Identifier: MIT
// LaunchScopes: the device time of the work a thread launches inside host scopes, on whatever
// streams it goes to, without knowing those streams: for programs simprof did not write (simprof
// run times a program's NVTX ranges with it).
//
/* clang-format off */
//   simprof::cuda::LaunchScopes scopes;
//   if (scopes.arm(/*tag=*/frames)) {        // a window: this thread's launches are watched
//     scopes.open(0); engine.physics(); scopes.close();  // any library's kernels and graphs
//     scopes.disarm();
//   }
//   std::vector<simprof::cuda::LaunchWindow> done;
//   scopes.poll(done);                      // windows the GPU has passed; never waits
/* clang-format on */
//
// While armed, CUPTI's callbacks on the driver's launch calls (no activity records: their cost is
// per kernel, and CUPTI's first activity window costs a loop milliseconds) see every kernel and
// graph launch made on the arming thread (a runtime launch reaches the driver's call). CUPTI is
// subscribed from arm() to disarm() only: a subscription slows every driver call. Where the
// launch hook is preloaded (LaunchSource::kHook, or kAuto, the default) it tells the same launches
// instead, without CUPTI. The first launch into a stream inside a scope records an event on that
// stream just before it; a scope's close records one on every stream it launched to. A scope's
// device time runs from the first of its begin events to the last of its end events: from the end
// of the work queued before it on its streams to the end of its own (the stamps' rule of
// DeviceStageTimer); its work's time (work_ns) is that less the events' own cost, measured once
// per device (EventCost). Events come from a pool made at construction (none is made while armed);
// windows are read in order once the GPU passed them, and one whose events ran out, or whose CUDA
// call failed, is dropped and counted. A launch into a stream being captured is not stamped (the
// event would join the capture): counted; the driver is asked where an event would be recorded (a
// launch into a stream new to an open scope, and each stream at its scope's close), not at every
// launch. A stream captured by the time its scope closes gets no end event: that window is dropped.
// Only kernel and graph launches are stamped: a scope whose only work is a copy launched nothing.
// Every call is the arming thread's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace simprof::cuda {

/// How a LaunchScopes sees the launches.
enum class LaunchSource {
  /// CUPTI's callbacks on the driver's launch calls, subscribed while a window is armed.
  kCupti,
  /// libsimprof_launch_hook.so, preloaded into the process (`simprof run` does): the driver's
  /// launch entry points as the program found them, told to the arming thread's watcher, with no
  /// CUPTI at all. Disabled (enabled() false, the reason said) when the hook is not in the process
  /// or handed out no launch entry point.
  kHook,
  /// The hook where it is in the process and handed out a launch entry point, else CUPTI's
  /// callbacks (source() says which; hook_unused_reason() why not the hook).
  kAuto,
};

/// Sizes of a LaunchScopes's pools, and how it sees the launches.
struct LaunchScopesOptions {
  std::size_t events = 256;  ///< events per window (>= 2)
  std::size_t scopes = 64;   ///< scope runs per window (>= 1)
  std::size_t windows = 8;   ///< windows armed or waiting on the GPU at most, plus one (>= 2)
  LaunchSource source = LaunchSource::kAuto;  ///< how the launches are seen
};

/// What the events a LaunchScopes records cost a stream, measured once per device when the first
/// enabled LaunchScopes is made on it (milliseconds, on a stream of its own).
struct EventCost {
  bool measured = false;  ///< false: not measured (why_not says); nothing is taken off
  double pair_ns = 0;     ///< a scope's two events: its span less its kernel's own time
  double inside_ns = 0;   ///< one event of a nested scope between two kernels, over a plain gap
  std::string why_not;    ///< why it was not measured (empty where it was, or while disabled)
};

/// One scope run of a window, on the device.
struct ScopeTiming {
  std::int32_t id = 0;     ///< the id open() was given
  std::int32_t depth = 0;  ///< scopes open around it
  /// It launched device work (begin_ns and end_ns hold); false: it launched none.
  bool launched = false;
  ///@{
  /// Device nanoseconds from the window's first event.
  std::int64_t begin_ns = 0, end_ns = 0;
  ///@}
  /// The events' own cost in [begin_ns, end_ns]: its pair and those of the scopes nested in it
  /// (EventCost).
  std::int64_t events_ns = 0;
  /// The device time of its work: its span less its events' cost (never below 0).
  std::int64_t work_ns() const noexcept {
    const std::int64_t w = end_ns - begin_ns - events_ns;
    return w > 0 ? w : 0;
  }
};

/// One window, read once the GPU passed it.
struct LaunchWindow {
  std::uint64_t tag = 0;               ///< arm()'s
  std::vector<ScopeTiming> scopes;     ///< in the order they opened
  bool anchored = false;               ///< a depth-0 scope launched work: anchor_ns holds
  std::int64_t anchor_ns = 0;          ///< the last depth-0 scope's end (from the first event)
  bool has_previous = false;           ///< an earlier window was anchored: since_previous_ns holds
  std::int64_t since_previous_ns = 0;  ///< from that window's anchor to this one's
};

/// Device times of the work launched inside host scopes (see the header comment).
class LaunchScopes {
 public:
  /// On the device current now. Never throws for CUPTI, the launch hook or the driver's event
  /// record being unavailable (enabled() says);
  /// std::invalid_argument for bad sizes, std::logic_error while another LaunchScopes exists (one
  /// per process: CUPTI's callbacks reach one), CudaError when the events cannot be made.
  explicit LaunchScopes(LaunchScopesOptions options = {});
  ~LaunchScopes();
  LaunchScopes(const LaunchScopes&) = delete;
  LaunchScopes& operator=(const LaunchScopes&) = delete;

  /// False when the launches cannot be seen (another tool holds CUPTI, or the hook is missing);
  /// disabled_reason() says why.
  bool enabled() const noexcept;
  /// Why the launches cannot be seen (empty while enabled()).
  const std::string& disabled_reason() const noexcept;
  /// How the launches are seen: kHook or kCupti (kAuto resolved when made).
  LaunchSource source() const noexcept;
  /// Where kAuto chose CUPTI: why not the hook ("the launch hook is not in the process", ...);
  /// empty otherwise.
  const std::string& hook_unused_reason() const noexcept;
  /// What its events cost the device's streams (taken off each scope's work_ns()).
  const EventCost& event_cost() const noexcept;

  /// Begins a window on the calling thread; false (counted in skipped()) when every window is
  /// still waiting on the GPU, or when disabled.
  bool arm(std::uint64_t tag);
  /// Opens a scope inside the armed window (a no-op when none is armed).
  void open(std::int32_t id);
  /// Closes the innermost scope.
  void close();
  /// Ends the window: it waits on the GPU until poll() reads it.
  void disarm();
  /// Whether a window is armed.
  bool armed() const noexcept;
  /// Appends the windows the GPU has passed, in arm order; never waits.
  void poll(std::vector<LaunchWindow>& out);

  /// Windows not armed: every one was still waiting on the GPU.
  std::uint64_t skipped() const noexcept;
  /// Windows dropped: their events ran out, a scope overflowed, a CUDA call failed, or a stream
  /// was being captured when its scope closed.
  std::uint64_t dropped() const noexcept;
  /// Launches into a stream being captured that would have been stamped (a stream new to an open
  /// scope); they are not.
  std::uint64_t capturing_launches() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace simprof::cuda
