// SPDX-License-Identifier: MIT
#include "simprof/trace/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "simprof/base/stats.hpp"

namespace simprof {

namespace {

using Intervals = std::vector<std::pair<std::int64_t, std::int64_t>>;

// The union of intervals, sorted and merged.
Intervals merged(Intervals iv) {
  std::sort(iv.begin(), iv.end());
  Intervals out;
  for (const auto& [b, e] : iv)
    if (!out.empty() && b <= out.back().second)
      out.back().second = std::max(out.back().second, e);
    else
      out.emplace_back(b, e);
  return out;
}

std::int64_t length(const Intervals& iv) {
  std::int64_t n = 0;
  for (const auto& [b, e] : iv) n += e - b;
  return n;
}

// Length of the intersection of two merged interval lists.
std::int64_t overlap(const Intervals& a, const Intervals& b) {
  std::int64_t n = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    n += std::max<std::int64_t>(
        0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return n;
}

void add_kernel(KernelStat& s, const std::string& name, double us) {
  if (s.calls == 0) s.min_us = s.max_us = us;
  s.name = name;
  ++s.calls;
  s.total_us += us;
  s.min_us = std::min(s.min_us, us);
  s.max_us = std::max(s.max_us, us);
}

// The kernel table, and the stage table where kernels have stages.
void kernel_tables(const std::vector<const Span*>& kernels, TraceAnalysis& out) {
  std::map<std::string, KernelStat> by_name, by_stage;
  double all = 0;
  bool staged = false;
  for (const auto* k : kernels) {
    const double us = static_cast<double>(k->duration_ns()) * 1e-3;
    add_kernel(by_name[k->name], k->name, us);
    static const std::string kNone = "(no stage)";
    const std::string& stage = k->or_empty<KernelPayload>().stage;
    const std::string& key = stage.empty() ? kNone : stage;
    add_kernel(by_stage[key], key, us);
    staged = staged || !stage.empty();
    all += us;
  }
  const auto table = [all](std::map<std::string, KernelStat>& m, std::vector<KernelStat>& v) {
    for (auto& [n, s] : m) {
      s.mean_us = s.total_us / static_cast<double>(s.calls);
      s.share = all > 0 ? s.total_us / all : 0;
      v.push_back(s);
    }
    std::sort(v.begin(), v.end(),
              [](const KernelStat& a, const KernelStat& b) { return a.total_us > b.total_us; });
  };
  table(by_name, out.kernels);
  if (staged) table(by_stage, out.stages);
}

using ByCorrelation = std::unordered_multimap<std::uint64_t, const Span*>;

// Each stage span of the step: the device span of the kernels launched inside it on its thread,
// summed per stage name (a stage that ran twice counts both runs, as on the host).
void stage_spans(const Span& st, const std::vector<const Span*>& stages,
                 const std::vector<const Span*>& launches, const ByCorrelation& by_corr,
                 StepAnalysis& a) {
  for (const auto* sp : stages) {
    if (sp->step() != st.step() || sp->begin_ns < st.begin_ns || sp->end_ns > st.end_ns) continue;
    auto it = std::find_if(a.stages.begin(), a.stages.end(),
                           [sp](const StageGpu& g) { return g.name == sp->name; });
    if (it == a.stages.end()) it = a.stages.insert(a.stages.end(), StageGpu{sp->name, 0, 0});
    std::int64_t begin = std::numeric_limits<std::int64_t>::max();
    std::int64_t end = std::numeric_limits<std::int64_t>::min();
    for (const auto* launch : launches) {
      if (launch->tid != sp->tid || launch->begin_ns < sp->begin_ns ||
          launch->begin_ns > sp->end_ns || launch->correlation == 0)
        continue;
      auto [b, e] = by_corr.equal_range(launch->correlation);
      for (auto k = b; k != e; ++k, ++it->kernels) {
        begin = std::min(begin, k->second->begin_ns);
        end = std::max(end, k->second->end_ns);
      }
    }
    if (end > begin) it->gpu_span_us += static_cast<double>(end - begin) * 1e-3;
  }
}

// One step: its kernels, through the correlation of the runtime call that launched them.
StepAnalysis step_analysis(const Span& st, const std::vector<const Span*>& launches,
                           const ByCorrelation& by_corr, double graph_node_us) {
  StepAnalysis a;
  a.step = st.step();
  a.host_us = static_cast<double>(st.duration_ns()) * 1e-3;
  Intervals iv, comm, comp;
  std::vector<double> latency;
  for (const auto* launch : launches) {
    if (launch->begin_ns < st.begin_ns || launch->begin_ns > st.end_ns) continue;
    if (launch->correlation == 0) continue;
    auto [b, e] = by_corr.equal_range(launch->correlation);
    for (auto it = b; it != e; ++it) {
      iv.emplace_back(it->second->begin_ns, it->second->end_ns);
      (it->second->is_communication() ? comm : comp)
          .emplace_back(it->second->begin_ns, it->second->end_ns);
      latency.push_back(static_cast<double>(it->second->begin_ns - launch->begin_ns) * 1e-3);
    }
  }
  a.kernels = iv.size();
  comm = merged(std::move(comm));
  a.comm_us = static_cast<double>(length(comm)) * 1e-3;
  a.comm_overlap = comm.empty() ? std::nan("")
                                : static_cast<double>(overlap(comm, merged(std::move(comp)))) /
                                      static_cast<double>(length(comm));
  if (iv.empty()) return a;
  const Intervals busy = merged(std::move(iv));
  std::int64_t max_gap = 0;
  for (std::size_t i = 1; i < busy.size(); ++i)
    max_gap = std::max(max_gap, busy[i].first - busy[i - 1].second);
  a.gpu_begin_ns = busy.front().first;
  a.gpu_end_ns = busy.back().second;
  a.gpu_span_us = static_cast<double>(busy.back().second - busy.front().first) * 1e-3;
  a.gpu_busy_us = static_cast<double>(length(busy)) * 1e-3;
  a.idle_us = a.gpu_span_us - a.gpu_busy_us;
  a.max_gap_us = static_cast<double>(max_gap) * 1e-3;
  std::sort(latency.begin(), latency.end());
  a.launch_latency_p50_us = percentile_sorted(latency, 0.50);
  a.launch_latency_p99_us = percentile_sorted(latency, 0.99);
  a.launch_bound = a.idle_us > 0.5 * a.gpu_span_us;
  if (a.launch_bound)
    a.predicted_graph_us = a.gpu_busy_us + static_cast<double>(a.kernels) * graph_node_us;
  return a;
}

// Launch-bound (the GPU idle over half the span in most steps) or GPU-bound, said with figures.
std::string verdict(const TraceAnalysis& out, std::size_t bound) {
  const StepAnalysis& last = out.steps.back();
  if (out.launch_bound)
    return fmt::format(
        "launch-bound: in {} of {} traced steps the GPU was idle more than half of the step's GPU "
        "span (latest: busy {:.1f} us of {:.1f} us, {} kernels, launch latency p50 {:.1f} us). "
        "Captured into a CUDA graph the step would take about {:.1f} us on the GPU; more envs per "
        "step would also fill the gaps.",
        bound, out.steps.size(), last.gpu_busy_us, last.gpu_span_us, last.kernels,
        last.launch_latency_p50_us,
        last.predicted_graph_us > 0 ? last.predicted_graph_us : last.gpu_busy_us);
  std::string top;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, out.kernels.size()); ++i)
    top += fmt::format("{}{} ({:.0f}%)", i ? ", " : "", out.kernels[i].name,
                       100 * out.kernels[i].share);
  return fmt::format(
      "GPU-bound: the GPU was busy {:.0f}% of the latest step's GPU span ({:.1f} of {:.1f} us); "
      "the time is in the kernels: {}.",
      last.gpu_span_us > 0 ? 100 * last.gpu_busy_us / last.gpu_span_us : 0.0, last.gpu_busy_us,
      last.gpu_span_us, top);
}

}  // namespace

TraceAnalysis analyze(const Trace& trace, double graph_node_us) {
  TraceAnalysis out;
  std::vector<const Span*> steps, stages, launches, kernels;
  for (const Span& s : trace.spans) {
    if (s.is_step())
      steps.push_back(&s);
    else if (s.kind == SpanKind::kCpuStage)
      stages.push_back(&s);
    else if (s.kind == SpanKind::kLaunch)
      launches.push_back(&s);
    else if (s.kind == SpanKind::kKernel)
      kernels.push_back(&s);
  }
  std::sort(steps.begin(), steps.end(), [](auto* a, auto* b) { return a->begin_ns < b->begin_ns; });
  kernel_tables(kernels, out);
  ByCorrelation by_corr;
  for (const auto* k : kernels)
    if (k->correlation != 0) by_corr.emplace(k->correlation, k);
  std::size_t bound = 0;
  for (const auto* st : steps) {
    out.steps.push_back(step_analysis(*st, launches, by_corr, graph_node_us));
    stage_spans(*st, stages, launches, by_corr, out.steps.back());
    bound += out.steps.back().launch_bound;
  }
  if (out.steps.empty() || kernels.empty()) {
    out.verdict = "no kernels were traced in a profiled step: nothing to say about the GPU";
    return out;
  }
  out.launch_bound = 2 * bound > out.steps.size();
  out.verdict = verdict(out, bound);
  return out;
}

std::string TraceAnalysis::report(std::size_t top_kernels) const {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "{}\n\n{:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9} {:>8}\n",
                 verdict, "step", "kernels", "host us", "gpu span", "gpu busy", "idle us",
                 "lat p50", "lat p99", "bound", "comm us", "overlap");
  for (const auto& s : steps)
    fmt::format_to(std::back_inserter(out),
                   "{:>8} {:>8} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>8} "
                   "{:>9.1f} {:>8}\n",
                   s.step, s.kernels, s.host_us, s.gpu_span_us, s.gpu_busy_us, s.idle_us,
                   s.launch_latency_p50_us, s.launch_latency_p99_us,
                   s.launch_bound ? "launch" : "gpu", s.comm_us,
                   std::isnan(s.comm_overlap) ? std::string("-")
                                              : fmt::format("{:.0f}%", 100 * s.comm_overlap));
  const auto rows = [&out](const char* what, const std::vector<KernelStat>& v, std::size_t n) {
    fmt::format_to(std::back_inserter(out), "\n{:<40} {:>7} {:>11} {:>9} {:>9} {:>9} {:>7}\n", what,
                   "calls", "total us", "mean us", "min us", "max us", "share");
    for (std::size_t i = 0; i < std::min(n, v.size()); ++i) {
      const auto& k = v[i];
      const std::string name = k.name.size() > 40 ? k.name.substr(0, 37) + "..." : k.name;
      fmt::format_to(std::back_inserter(out),
                     "{:<40} {:>7} {:>11.1f} {:>9.2f} {:>9.2f} {:>9.2f} {:>6.1f}%\n", name, k.calls,
                     k.total_us, k.mean_us, k.min_us, k.max_us, 100 * k.share);
    }
  };
  rows("kernel", kernels, top_kernels);
  if (!stages.empty()) rows("stage (graph kernels by capture)", stages, stages.size());
  return fmt::to_string(out);
}

}  // namespace simprof
