// SPDX-License-Identifier: MIT
// FpsTracker: the live step rate, an EMA over samples of at least `interval` (50 ms by default).
//
/* clang-format off */
//   const simprof::Clock clock = simprof::Clock::steady();
//   simprof::FpsTracker fps(0.95, std::chrono::milliseconds(50), /*n_envs=*/30000, clock);
//   for (;;) { fps.tick(clock.now()); engine.step(); }
//   // logs "Running at 43,000,000.00 FPS (1,433.33 FPS per env, 30000 envs)." once per sample
/* clang-format on */
//
// StepProfiler owns one and ticks it at every step start, so the rate measures the whole loop,
// including the user's code between steps. Exact rules:
//   * the first tick only starts the clock;
//   * ticks are counted into a sample until at least `interval` has passed since it began; then
//     sample_fps = ticks / sample_duration and the rate is the debiased, time-weighted EMA of the
//     samples: with f = sample_duration / interval (1 for a full sample, less for the tail that
//     flush() completes),
//       sum = alpha^f * sum + (1 - alpha) * f * sample_fps,  weight = alpha^f * weight + (1 -
//       alpha) * f, rate = sum / weight   (both start at 0: the first sample is the rate, and no
//       sample keeps
//     more than its alpha^age share, as the first would in an EMA seeded with it);
//     one line is emitted and a new sample starts at that tick;
//   * restart() drops the sample in progress; the next tick starts the clock again;
//   * flush() completes the sample in progress early (the end of a run shorter than a sample).
// Formatting happens once per sample, never per tick.
//
// Which clock: by default the host's (the profiler's clock, ticked at step starts). On a GPU
// backend the device can feed it instead (cuda::StepPacer ticks it with the device's step-end times
// in nanoseconds while it holds claim_device_clock(), one claimant at a time); the line then ends
// in "GPU clock" and the profiler no longer ticks it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "simprof/base/clock.hpp"
#include "simprof/base/ranks.hpp"

namespace spdlog {
class logger;
}

namespace simprof {

/// Which clock an FpsTracker's ticks come from.
enum class FpsClock { kHost, kDevice };

/// What one completed sample said. Rates are steps per second; total = per env x n_envs.
struct FpsSample {
  std::uint64_t index = 0;        ///< 0 for the first sample
  std::uint64_t steps = 0;        ///< steps counted in the sample
  double duration_s = 0.0;        ///< its length
  double sample_fps_per_env = 0;  ///< steps / duration, unsmoothed
  double fps_per_env = 0;         ///< the EMA
  double total_fps = 0;           ///< the EMA times n_envs (equal to fps_per_env without a batch)
  std::int64_t n_envs = 0;        ///< 0: the scene has no batch dimension
  /// The clock the sample's steps were timed on.
  FpsClock clock = FpsClock::kHost;
};

/// "Running at 43,000,000.00 FPS (1,433.33 FPS per env, 30000 envs)." or, without a batch
/// dimension, "Running at 1,433.33 FPS."; on the device clock "... 30000 envs, GPU clock)." and
/// "Running at 1,433.33 FPS (GPU clock).".
std::string format_fps_line(double fps_per_env, std::int64_t n_envs,
                            FpsClock clock = FpsClock::kHost);

/// `value` with two decimals and thousands separators: 43000000 -> "43,000,000.00".
std::string format_thousands(double value, int decimals = 2);

/// Steps per second, sampled over fixed intervals and smoothed by an exponential moving average,
/// optionally logged as an FPS line per sample.
class FpsTracker {
 public:
  /// Called with each completed sample.
  using Callback = std::function<void(const FpsSample&)>;

  /// Throws std::invalid_argument for alpha outside [0, 1] or not finite, interval <= 0, n_envs <
  /// 0.
  FpsTracker(double alpha, std::chrono::nanoseconds interval, std::int64_t n_envs, Clock clock);
  ~FpsTracker();
  FpsTracker(const FpsTracker&) = delete;
  FpsTracker& operator=(const FpsTracker&) = delete;

  /// Counts one step at `now` (ticks of the clock). Returns true when a sample completed.
  SIMPROF_FORCE_INLINE bool tick(std::int64_t now) {
    if (SIMPROF_UNLIKELY(!started_)) {
      started_ = true;
      sample_start_ = now;
      return false;
    }
    ++steps_;
    last_tick_ = now;
    if (SIMPROF_LIKELY(now - sample_start_ < interval_ticks_)) return false;
    complete_sample(now);
    return true;
  }
  /// Counts `steps` steps, the last of which ended at `now`: a clock that sees only some step ends
  /// (sampled ones) gives the steps run since the last end it saw. The first call only starts the
  /// clock. Returns true when a sample completed.
  bool advance(std::int64_t now, std::uint64_t steps) {
    if (!started_ || steps == 0) return started_ ? false : tick(now);
    steps_ += steps - 1;
    return tick(now);
  }
  /// Drops the sample in progress (after a veto or a pause); the next tick restarts the clock.
  void restart() noexcept {
    started_ = false;
    steps_ = 0;
  }
  /// Forgets the rate too (NaN again; num_samples() 0): the next completed sample starts the EMA
  /// afresh. Call it after a warm-up, whose slow first steps would otherwise weigh on the smoothed
  /// value for many samples.
  void reset() noexcept;
  /// How many times reset() was called: a device clock that feeds the tracker starts its next
  /// sample at the next step's own start, not at the last step end it timed before the reset.
  std::uint64_t resets() const noexcept { return resets_; }
  /// Completes the sample in progress at `now` when it counted a step since it began: a run
  /// shorter than a sample still gets its rate. Returns whether a sample completed.
  bool flush(std::int64_t now);
  /// flush() at the latest tick: the end of the last step counted (the end of a run).
  bool flush() { return flush(last_tick_); }

  class DeviceClockClaim;
  /// From now until the claim goes, ticks are device nanoseconds given by `who` (a GPU backend's
  /// pacer), and the sample in progress is dropped; the claim's end goes back to the host clock
  /// given at construction. One owner at a time: a second claim while one lives throws
  /// std::logic_error naming both.
  [[nodiscard]] DeviceClockClaim claim_device_clock(std::string who);
  /// Who feeds the line device time now ("" on the host clock).
  const std::string& device_clock_owner() const noexcept { return owner_; }
  /// Which clock ticks are on now.
  FpsClock clock_kind() const noexcept { return claim_ ? FpsClock::kDevice : FpsClock::kHost; }

  /// Smoothed steps per second of the whole batch (NaN before the first sample).
  double total_fps() const noexcept;
  /// Smoothed steps per second of one environment (NaN before the first sample).
  double fps_per_env() const noexcept { return ema_; }
  /// Environments per step (0: no batch dimension).
  std::int64_t n_envs() const noexcept { return n_envs_; }
  /// Samples completed since construction or reset().
  std::uint64_t num_samples() const noexcept { return samples_; }
  /// The last completed sample (all zero before the first).
  const FpsSample& last_sample() const noexcept { return last_; }
  /// How many unsmoothed rates sample_rates() keeps.
  static constexpr std::size_t kRateHistory = 4096;
  /// The unsmoothed per-env rates of the latest kRateHistory full samples since construction or
  /// reset(), oldest first (a flush()'s short tail is left out): the samples `simprof compare`
  /// tests.
  std::vector<double> sample_rates() const;
  /// The EMA's momentum, in [0, 1]: larger reacts slower and reads steadier.
  double alpha() const noexcept { return alpha_; }
  /// Validated like the constructor; takes effect at the next sample.
  void set_alpha(double alpha);

  /// Whether a line is emitted per sample; safe to flip from another thread; takes effect at the
  /// next sample. The rate is computed either way.
  void set_show(bool show) noexcept { show_.store(show, std::memory_order_relaxed); }
  /// Whether a line is emitted per sample.
  bool show() const noexcept { return show_.load(std::memory_order_relaxed); }
  /// Where lines go: by default the spdlog logger named "simprof" (created on first use).
  void set_logger(std::shared_ptr<spdlog::logger> logger);
  /// Called once per sample, whether or not lines are shown (use it to plot or export the rate).
  void set_callback(Callback callback) { callback_ = std::move(callback); }
  /// One process of several: lines begin "[rank R/W] " (nothing when world_size is 1). A
  /// StepProfiler sets it from the launcher's environment (RankInfo::from_env).
  void set_rank(const RankInfo& ranks) noexcept {
    rank_ = ranks.rank;
    world_ = ranks.world_size;
  }

 private:
  void complete_sample(std::int64_t now);
  void set_clock(Clock clock);
  void release_device_clock(const DeviceClockClaim* claim) noexcept;

  Clock host_clock_;
  Clock clock_;
  std::string owner_;                  // the device clock's claimant ("" when none)
  DeviceClockClaim* claim_ = nullptr;  // its claim, told when this tracker goes first
  double alpha_;
  std::chrono::nanoseconds interval_;
  std::int64_t interval_ticks_;
  std::int64_t n_envs_;
  bool started_ = false;
  std::int64_t sample_start_ = 0;
  std::uint64_t steps_ = 0;
  std::int64_t last_tick_ = 0;
  std::uint64_t samples_ = 0;
  std::uint64_t resets_ = 0;
  double ema_;
  double weighted_ = 0, weights_ = 0;  // the debiased EMA's sums
  FpsSample last_{};
  std::vector<double> rates_;  // ring of kRateHistory unsmoothed rates, allocated once
  std::uint64_t full_samples_ = 0;
  std::atomic<bool> show_{true};
  std::shared_ptr<spdlog::logger> logger_;
  Callback callback_;
  int rank_ = 0, world_ = 1;
};

/// The FPS line's device clock, held: the tracker reads device time while it lives, and goes back
/// to its host clock when it goes. Either side may go first (a tracker gone first leaves it empty).
class FpsTracker::DeviceClockClaim {
 public:
  DeviceClockClaim() = default;
  ~DeviceClockClaim() { release(); }
  /// Takes `other`'s clock (`other` is left empty).
  DeviceClockClaim(DeviceClockClaim&& other) noexcept { *this = std::move(other); }
  /// Gives this claim's clock back, then takes `other`'s.
  DeviceClockClaim& operator=(DeviceClockClaim&& other) noexcept;
  DeviceClockClaim(const DeviceClockClaim&) = delete;
  DeviceClockClaim& operator=(const DeviceClockClaim&) = delete;
  /// Whether it holds a tracker's clock.
  explicit operator bool() const noexcept { return fps_ != nullptr; }
  /// Gives the clock back now (the host clock again).
  void release() noexcept;

 private:
  friend class FpsTracker;
  explicit DeviceClockClaim(FpsTracker* fps) noexcept : fps_(fps) {}
  FpsTracker* fps_ = nullptr;
};

}  // namespace simprof
