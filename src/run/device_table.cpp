// SPDX-License-Identifier: MIT
#include "device_table.hpp"

#include <algorithm>
#include <cmath>

#include "simprof/base/stage_id.hpp"

namespace simprof::run {

namespace {
constexpr const char* kStep = "step";
constexpr const char* kPeriod = "period";

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}
}  // namespace

TraceAnalysis WindowSteps::operator()(const cuda::LaunchWindow& w, const NameFn& name) {
  constexpr std::int64_t kOrigin = std::int64_t{1} << 40;
  std::int64_t base = 0;
  if (w.anchored) {
    base = (w.has_previous ? anchor_ + w.since_previous_ns : kOrigin) - w.anchor_ns;
    anchor_ = base + w.anchor_ns;
  }
  TraceAnalysis a;
  std::uint64_t step = w.tag;
  for (const cuda::ScopeTiming& t : w.scopes) {
    const double span_us = static_cast<double>(t.work_ns()) * 1e-3;  // its events' cost off
    if (t.depth == 0) {
      StepAnalysis s;
      s.step = step++;
      if (t.launched && w.anchored) {
        s.kernels = 1;  // launched device work (how many kernels, the events do not say)
        s.gpu_begin_ns = base + t.begin_ns;
        s.gpu_end_ns = base + t.end_ns;
        s.gpu_span_us = span_us;
      }
      a.steps.push_back(std::move(s));
      continue;
    }
    if (a.steps.empty() || !t.launched) continue;
    auto& stages = a.steps.back().stages;
    const std::string n = name(t.id);
    auto it =
        std::find_if(stages.begin(), stages.end(), [&](const StageGpu& g) { return g.name == n; });
    if (it == stages.end()) it = stages.insert(stages.end(), StageGpu{n, 0, 0});
    ++it->kernels;
    it->gpu_span_us += span_us;
  }
  return a;
}

bool parse_launches(const std::string& text, cuda::LaunchSource& out) noexcept {
  for (const auto s :
       {cuda::LaunchSource::kAuto, cuda::LaunchSource::kHook, cuda::LaunchSource::kCupti})
    if (text == launches_name(s)) {
      out = s;
      return true;
    }
  return false;
}

const char* launches_name(cuda::LaunchSource source) noexcept {
  switch (source) {
    case cuda::LaunchSource::kHook:
      return "hook";
    case cuda::LaunchSource::kCupti:
      return "cupti";
    case cuda::LaunchSource::kAuto:
      break;
  }
  return "auto";
}

WindowSchedule::WindowSchedule(Sampling sampling, double ticks_per_second)
    : every_(static_cast<std::uint64_t>(sampling.every)),
      interval_(static_cast<std::int64_t>(static_cast<double>(sampling.interval_ms) * 1e-3 *
                                          ticks_per_second)) {}

bool WindowSchedule::opens(std::uint64_t step, std::int64_t ticks) noexcept {
  if (step % every_ != every_ - 2 || (opened_ && ticks - last_ < interval_)) return false;
  opened_ = true;
  last_ = ticks;
  return true;
}

DeviceTable::DeviceTable(std::size_t window) : window_(window) {}

void DeviceTable::push(const std::string& name, double seconds) {
  auto [it, fresh] = samples_.try_emplace(name);
  if (fresh && name != kStep && name != kPeriod) order_.push_back(name);
  if (it->second.size() == window_) it->second.pop_front();
  it->second.push_back(seconds);
}

std::optional<DeviceTable::Progress> DeviceTable::add(const TraceAnalysis& window) {
  ++windows_;
  const StepAnalysis* previous = nullptr;  // the window's step before, when it ran kernels
  const StepAnalysis* last = nullptr;      // the window's last step that ran kernels
  for (const StepAnalysis& s : window.steps) {
    if (s.kernels == 0) {
      ++without_kernels_;
      previous = nullptr;
      continue;
    }
    ++sampled_;
    push(kStep, s.gpu_span_us * 1e-6);
    for (const StageGpu& g : s.stages)
      if (g.kernels > 0) push(g.name, g.gpu_span_us * 1e-6);
    if (previous != nullptr && s.step == previous->step + 1 && s.gpu_end_ns > previous->gpu_end_ns)
      push(kPeriod, static_cast<double>(s.gpu_end_ns - previous->gpu_end_ns) * 1e-9);
    previous = last = &s;
  }
  // Device ends go forward: a window that ended no later than the last one seen gives no progress.
  if (last == nullptr ||
      (last_step_ && (last->step <= *last_step_ || last->gpu_end_ns <= last_end_)))
    return std::nullopt;
  const Progress p{last->gpu_end_ns, last_step_ ? last->step - *last_step_ : 0};
  if (!last_step_) {
    first_step_ = last->step;
    first_end_ = last->gpu_end_ns;
  }
  last_step_ = last->step;
  last_end_ = last->gpu_end_ns;
  return p;
}

double DeviceTable::steps_per_second() const noexcept {
  if (!last_step_ || last_end_ <= first_end_) return std::nan("");
  return static_cast<double>(*last_step_ - first_step_) /
         (static_cast<double>(last_end_ - first_end_) * 1e-9);
}

std::vector<StageRow> DeviceTable::rows() const {
  std::vector<StageRow> rows;
  const auto step = samples_.find(kStep);
  if (step == samples_.end()) return rows;
  double step_total = 0;
  for (const double v : step->second) step_total += v;
  const auto row = [&](const std::string& name, StageId id, int depth) {
    const auto& v = samples_.at(name);
    StageRow r;
    r.id = id;
    r.name = name;
    r.depth = depth;
    r.samples.assign(v.begin(), v.end());
    r.stats = summarize(r.samples);
    r.share = step_total > 0
                  ? 100.0 * (r.stats.mean * static_cast<double>(r.stats.count) / step_total)
                  : 0.0;
    r.partial = id != kPeriodStage && r.stats.count < step->second.size();
    rows.push_back(std::move(r));
  };
  // A stage's row follows its parent's; one whose parent has no row (a name with '/' at the top,
  // or a parent that launched nothing itself) goes at the top.
  const auto parent_row = [&](const std::string& name) {
    const std::string p = parent_of(name);
    return samples_.count(p) != 0 ? p : std::string();
  };
  const auto visit = [&](auto& self, const std::string& parent, int depth) -> void {
    for (const std::string& name : order_)
      if (parent_row(name) == parent) {
        row(name, kNoStage, depth);
        self(self, name, depth + 1);
      }
  };
  visit(visit, std::string(), 0);
  row(kStep, kStepStage, 0);
  if (samples_.count(kPeriod)) row(kPeriod, kPeriodStage, 0);
  return rows;
}

void DeviceTable::clear() {
  samples_.clear();
  order_.clear();
  sampled_ = without_kernels_ = windows_ = 0;
  last_step_.reset();
  last_end_ = first_end_ = 0;
  first_step_ = 0;
}

}  // namespace simprof::run
