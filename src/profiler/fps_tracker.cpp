// SPDX-License-Identifier: MIT
#include "simprof/profiler/fps_tracker.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"

namespace simprof {

namespace {

void check_alpha(double alpha) {
  if (!(std::isfinite(alpha) && alpha >= 0.0 && alpha <= 1.0))
    throw std::invalid_argument(
        fmt::format("simprof: fps_tracker_alpha = {} (expected a finite value in [0, 1])", alpha));
}

// Appends `value` with `decimals` decimals and a comma every three integer digits. Writes into a
// fmt buffer (inline storage), so a line per sample costs no heap allocation.
template <class Buffer>
void append_thousands(Buffer& out, double value, int decimals) {
  fmt::basic_memory_buffer<char, 64> plain;
  fmt::format_to(std::back_inserter(plain), "{:.{}f}", value, decimals);
  std::string_view s(plain.data(), plain.size());
  if (!std::isfinite(value)) {
    out.append(s);
    return;
  }
  std::size_t i = 0;
  if (!s.empty() && s[0] == '-') {
    out.push_back('-');
    i = 1;
  }
  const std::size_t dot = s.find('.');
  const std::size_t int_end = dot == std::string_view::npos ? s.size() : dot;
  for (std::size_t k = i; k < int_end; ++k) {
    out.push_back(s[k]);
    const std::size_t left = int_end - k - 1;
    if (left > 0 && left % 3 == 0) out.push_back(',');
  }
  out.append(s.substr(int_end));
}

template <class Buffer>
void append_fps_line(Buffer& out, double fps_per_env, std::int64_t n_envs, FpsClock clock) {
  const bool device = clock == FpsClock::kDevice;
  out.append(std::string_view("Running at "));
  if (n_envs > 0) {
    append_thousands(out, fps_per_env * static_cast<double>(n_envs), 2);
    out.append(std::string_view(" FPS ("));
    append_thousands(out, fps_per_env, 2);
    fmt::format_to(std::back_inserter(out), " FPS per env, {} envs{}).", n_envs,
                   device ? ", GPU clock" : "");
  } else {
    append_thousands(out, fps_per_env, 2);
    out.append(std::string_view(device ? " FPS (GPU clock)." : " FPS."));
  }
}

}  // namespace

std::string format_thousands(double value, int decimals) {
  fmt::memory_buffer out;
  append_thousands(out, value, decimals);
  return fmt::to_string(out);
}

std::string format_fps_line(double fps_per_env, std::int64_t n_envs, FpsClock clock) {
  fmt::memory_buffer out;
  append_fps_line(out, fps_per_env, n_envs, clock);
  return fmt::to_string(out);
}

FpsTracker::FpsTracker(double alpha, std::chrono::nanoseconds interval, std::int64_t n_envs,
                       Clock clock)
    : host_clock_(clock),
      clock_(clock),
      alpha_(alpha),
      interval_(interval),
      interval_ticks_(0),
      n_envs_(n_envs),
      ema_(std::numeric_limits<double>::quiet_NaN()),
      rates_(kRateHistory) {
  check_alpha(alpha);
  if (interval.count() <= 0)
    throw std::invalid_argument(fmt::format(
        "simprof: fps_sample_interval = {} ns (expected a duration > 0)", interval.count()));
  if (n_envs < 0)
    throw std::invalid_argument(
        fmt::format("simprof: n_envs = {} (expected >= 0; 0 means no batch dimension)", n_envs));
  set_clock(clock);
}

void FpsTracker::set_clock(Clock clock) {
  clock_ = clock;
  full_samples_ = 0;  // the rates kept are of one clock
  interval_ticks_ =
      std::max<std::int64_t>(1, clock_.ticks(static_cast<double>(interval_.count()) * 1e-9));
  restart();
}

FpsTracker::~FpsTracker() {
  if (claim_) claim_->fps_ = nullptr;
}

// Device ticks are nanoseconds: any clock of 1e9 ticks per second converts them (the tracker never
// reads the clock itself; it is given its ticks).
FpsTracker::DeviceClockClaim FpsTracker::claim_device_clock(std::string who) {
  if (claim_)
    throw std::logic_error(fmt::format(
        "simprof: the FPS line's clock is already fed device time by {}; {} cannot feed it too "
        "(one device clock feeds the line: make the second with its FPS feed off)",
        owner_, who));
  owner_ = who.empty() ? std::string("a device clock") : std::move(who);
  set_clock(Clock::steady());
  DeviceClockClaim claim(this);
  claim_ = &claim;  // a move on return, if not elided, re-points claim_ (operator=)
  return claim;
}

void FpsTracker::release_device_clock(const DeviceClockClaim* claim) noexcept {
  if (claim_ != claim) return;
  claim_ = nullptr;
  owner_.clear();
  set_clock(host_clock_);
}

FpsTracker::DeviceClockClaim& FpsTracker::DeviceClockClaim::operator=(
    DeviceClockClaim&& other) noexcept {
  if (this == &other) return *this;
  release();
  fps_ = other.fps_;
  other.fps_ = nullptr;
  if (fps_) fps_->claim_ = this;
  return *this;
}

void FpsTracker::DeviceClockClaim::release() noexcept {
  if (!fps_) return;
  fps_->release_device_clock(this);
  fps_ = nullptr;
}

void FpsTracker::reset() noexcept {
  restart();
  ++resets_;
  samples_ = 0;
  full_samples_ = 0;
  ema_ = std::numeric_limits<double>::quiet_NaN();
  last_ = FpsSample{};
}

bool FpsTracker::flush(std::int64_t now) {
  if (!started_ || steps_ == 0 || now <= sample_start_) return false;
  complete_sample(now);
  return true;
}

std::vector<double> FpsTracker::sample_rates() const {
  const std::size_t n =
      static_cast<std::size_t>(std::min<std::uint64_t>(full_samples_, kRateHistory));
  std::vector<double> out;
  out.reserve(n);
  for (std::uint64_t i = full_samples_ - n; i < full_samples_; ++i)
    out.push_back(rates_[i % kRateHistory]);
  return out;
}

void FpsTracker::set_alpha(double alpha) {
  check_alpha(alpha);
  alpha_ = alpha;
}

void FpsTracker::set_logger(std::shared_ptr<spdlog::logger> logger) { logger_ = std::move(logger); }

double FpsTracker::total_fps() const noexcept {
  return n_envs_ > 0 ? ema_ * static_cast<double>(n_envs_) : ema_;
}

void FpsTracker::complete_sample(std::int64_t now) {
  const double duration = clock_.seconds(now - sample_start_);
  const double sample = static_cast<double>(steps_) / duration;
  // A debiased EMA (as in Adam), weighted by time: the weighted sum and the sum of its weights
  // decay by alpha per sample interval, and a sample weighs its duration in intervals (a full one
  // 1, the short tail a flush() completes a fraction). The rate is their ratio: the first sample
  // is the rate, and the first samples of a run never dominate it (a plain EMA seeded with the
  // first sample keeps alpha^n of it after n samples).
  const double f = duration / (static_cast<double>(interval_.count()) * 1e-9);
  const double decay = std::pow(alpha_, f);
  if (samples_ == 0) weighted_ = weights_ = 0;
  weighted_ = decay * weighted_ + (1.0 - alpha_) * f * sample;
  weights_ = decay * weights_ + (1.0 - alpha_) * f;
  if (weights_ > 0)
    ema_ = weighted_ / weights_;
  else if (samples_ == 0)
    ema_ = sample;  // alpha 1: the first sample, for good
  if (now - sample_start_ >= interval_ticks_) rates_[full_samples_++ % kRateHistory] = sample;
  last_.index = samples_;
  last_.steps = steps_;
  last_.duration_s = duration;
  last_.sample_fps_per_env = sample;
  last_.fps_per_env = ema_;
  last_.total_fps = total_fps();
  last_.n_envs = n_envs_;
  last_.clock = clock_kind();
  ++samples_;
  sample_start_ = now;
  steps_ = 0;
  if (show()) {
    if (!logger_) logger_ = default_logger();
    fmt::basic_memory_buffer<char, 160> line;
    if (world_ > 1) fmt::format_to(std::back_inserter(line), "[rank {}/{}] ", rank_, world_);
    append_fps_line(line, ema_, n_envs_, clock_kind());
    logger_->info(std::string_view(line.data(), line.size()));
  }
  if (callback_) callback_(last_);
}

}  // namespace simprof
