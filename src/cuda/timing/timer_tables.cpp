// SPDX-License-Identifier: MIT
// What the stamping timers print: DeviceStageTimer's device stage rows and table,
// GraphKernelTimer's per-stage kernel table. Over their public faces only.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/profiler/report.hpp"

namespace simprof::cuda {

std::vector<DeviceStageRow> device_stage_rows(const StepProfiler& prof,
                                              const DeviceStageTimer& dev) {
  std::vector<DeviceStageRow> rows;
  const double dev_step = dev.sampled_mean(kStepStage);
  for_each_stage_row(prof, [&](StageId id, int depth) {
    DeviceStageRow r;
    r.device_mean_s = dev.mean(id);
    if (std::isnan(r.device_mean_s)) return;
    r.id = id;
    r.name = std::string(prof.stage_name(id));
    r.depth = depth;
    if (prof.options().stats_window > 0) {
      const auto s = prof.stats(id);
      if (s.count) r.host_mean_s = s.mean;
    }
    const double sampled = dev.sampled_mean(id);
    // The period is not a part of the step: no share (the table prints "-").
    r.device_share = id != kPeriodStage && dev_step > 0 && std::isfinite(sampled)
                         ? 100.0 * sampled / dev_step
                         : 0.0;
    r.samples = dev.samples(id);
    rows.push_back(std::move(r));
  });
  return rows;
}

std::vector<StageRow> device_record_rows(const StepProfiler& prof, const DeviceStageTimer& dev) {
  std::vector<StageRow> out;
  for (DeviceStageRow& d : device_stage_rows(prof, dev)) {
    StageRow r;
    r.id = d.id;
    r.name = std::move(d.name);
    r.depth = d.depth;
    r.stats = summarize(d.samples);
    r.share = d.device_share;
    r.samples = std::move(d.samples);
    out.push_back(std::move(r));
  }
  return out;
}

std::string device_stage_table(const StepProfiler& prof, const DeviceStageTimer& dev) {
  fmt::memory_buffer out;
  // The device's mean, and the median of its latest samples: one stalled step moves only the mean.
  fmt::format_to(std::back_inserter(out), "{:<28} {:>12} {:>12} {:>12} {:>8}\n", "stage",
                 "host mean us", "device us", "dev p50 us", "dev share");
  for (const DeviceStageRow& r : device_stage_rows(prof, dev)) {
    const std::string host =
        std::isnan(r.host_mean_s) ? std::string("-") : fmt::format("{:.1f}", r.host_mean_s * 1e6);
    const std::string share =
        r.id == kPeriodStage ? std::string("-") : fmt::format("{:.1f}%", r.device_share);
    fmt::format_to(std::back_inserter(out), "{:<28} {:>12} {:>12.1f} {:>12.1f} {:>8}\n",
                   stage_label(prof, r.id, r.depth), host, r.device_mean_s * 1e6,
                   summarize(r.samples).p50 * 1e6, share);
  }
  fmt::format_to(std::back_inserter(out), "(device: {} sampled steps joined", dev.joined());
  if (dev.unstamped() != 0)
    fmt::format_to(std::back_inserter(out), ", {} sampled steps unstamped: not in it",
                   dev.unstamped());
  if (dev.dropped() != 0) fmt::format_to(std::back_inserter(out), ", {} dropped", dev.dropped());
  // Steps a kernel tracer traced launch their eager stamps plainly, at the plain cost.
  const StampCost cost = dev.stamp_cost();
  const std::string plain =
      cost.dependent_launch && std::isfinite(cost.eager_plain_ns)
          ? fmt::format(", {:.2f} us in traced steps", cost.eager_plain_ns * 1e-3)
          : std::string();
  fmt::format_to(std::back_inserter(out), "; {:.2f} us an eager stamp{}, taken off eager stages)\n",
                 dev.eager_stamp_seconds() * 1e6, plain);
  return fmt::to_string(out);
}

std::string kernel_table(const GraphKernelTimer& timer, std::size_t top) {
  const std::vector<KernelNodeTime> nodes = timer.nodes();
  struct Group {
    std::string stage;
    double sum_s = 0;
    std::vector<const KernelNodeTime*> kernels;
  };
  std::map<std::string, Group> by_stage;
  double total = 0;
  for (const KernelNodeTime& k : nodes) {
    if (!k.kernel || k.count == 0) continue;
    Group& g = by_stage[k.stage_name];
    g.stage = k.stage_name.empty() ? "(no stage)" : k.stage_name;
    g.sum_s += k.mean_s;
    g.kernels.push_back(&k);
    total += k.mean_s;
  }
  std::vector<Group*> groups;
  for (auto& [name, g] : by_stage) groups.push_back(&g);
  std::sort(groups.begin(), groups.end(), [](const Group* a, const Group* b) {
    return a->sum_s != b->sum_s ? a->sum_s > b->sum_s : a->stage < b->stage;
  });
  std::string out = fmt::format(
      "Kernels of replayed graphs: device time per sampled replay ({} replays; a stamp after every "
      "node, {:.2f} us hop taken off each)\n",
      timer.replays(), timer.hop_ns() * 1e-3);
  out += fmt::format("{:<58} {:>10} {:>9} {:>9} {:>9} {:>7}\n", "stage / kernel", "graph:node",
                     "mean us", "min us", "max us", "share");
  auto cut = [](const std::string& s, std::size_t w) {
    return s.size() <= w ? s : s.substr(0, w - 3) + "...";
  };
  for (Group* g : groups) {
    std::sort(g->kernels.begin(), g->kernels.end(),
              [](const KernelNodeTime* a, const KernelNodeTime* b) {
                return a->mean_s != b->mean_s ? a->mean_s > b->mean_s : a->index < b->index;
              });
    out += fmt::format("{:<58} {:>10} {:>9.2f} {:>9} {:>9} {:>6.1f}%\n", cut(g->stage, 58), "",
                       g->sum_s * 1e6, "", "", total > 0 ? 100 * g->sum_s / total : 0.0);
    double rest = 0;
    std::size_t n_rest = 0;
    for (std::size_t i = 0; i < g->kernels.size(); ++i) {
      const KernelNodeTime& k = *g->kernels[i];
      if (i >= top) {
        rest += k.mean_s;
        ++n_rest;
        continue;
      }
      out += fmt::format("  {:<56} {:>10} {:>9.2f} {:>9.2f} {:>9.2f} {:>6.1f}%\n", cut(k.name, 56),
                         fmt::format("{}:{}", k.graph_id, k.node_id), k.mean_s * 1e6, k.min_s * 1e6,
                         k.max_s * 1e6, total > 0 ? 100 * k.mean_s / total : 0.0);
    }
    if (n_rest)
      out += fmt::format("  {:<56} {:>10} {:>9.2f} {:>9} {:>9} {:>6.1f}%\n",
                         fmt::format("({} more kernels)", n_rest), "", rest * 1e6, "", "",
                         total > 0 ? 100 * rest / total : 0.0);
  }
  if (timer.dropped() || timer.missed() || timer.unstamped())
    out += fmt::format(
        "({} sampled replays left out, {} sampled steps ran no stamped copy, {} graphs "
        "unstamped)\n",
        timer.dropped(), timer.missed(), timer.unstamped());
  return out;
}

}  // namespace simprof::cuda
