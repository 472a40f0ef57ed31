// SPDX-License-Identifier: MIT
// The C API's timers room: statistics of per-environment timer frames, the terminal plot and the
// SVG.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "c_api_internal.hpp"
#include "simprof/timers/plots.hpp"
#include "simprof/timers/timer_stats.hpp"

using simprof::c_api::copy_out;
using simprof::c_api::guarded;

struct simprof_timer_stats {
  simprof::TimerStats stats;
};

extern "C" {

simprof_status simprof_timer_stats_new(const char* const* labels, int rows, int n_envs,
                                       double alpha, simprof_timer_stats** out) {
  SIMPROF_C_REQUIRE(labels, "labels");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    if (rows < 1)
      throw std::invalid_argument("simprof: timer rows = " + std::to_string(rows) +
                                  " (expected >= 1 labels)");
    std::vector<std::string> names;
    for (int r = 0; r < rows; ++r) {
      if (labels[r] == nullptr)
        throw std::invalid_argument("simprof: timer label " + std::to_string(r) + " is NULL");
      names.emplace_back(labels[r]);
    }
    simprof::TimerLabels l(std::move(names));
    *out = alpha < 0 ? new simprof_timer_stats{simprof::TimerStats(std::move(l), n_envs)}
                     : new simprof_timer_stats{simprof::TimerStats(std::move(l), n_envs, alpha)};
  });
}

void simprof_timer_stats_free(simprof_timer_stats* stats) { delete stats; }

simprof_status simprof_timer_stats_update(simprof_timer_stats* s, const uint64_t* ticks, int rows,
                                          int n_envs, double ticks_per_second) {
  SIMPROF_C_REQUIRE(s, "timer stats");
  SIMPROF_C_REQUIRE(ticks, "ticks");
  return guarded([&] {
    if (!(ticks_per_second > 0) || !std::isfinite(ticks_per_second))
      throw std::invalid_argument(
          "simprof: ticks_per_second = " + std::to_string(ticks_per_second) + " (expected > 0)");
    simprof::TimerFrame f;
    f.labels = &s->stats.labels();
    f.data = ticks;
    f.rows = rows;
    f.n_envs = n_envs;
    f.unit = simprof::TimerUnit::kNanoseconds;
    f.ticks_per_second = ticks_per_second;
    s->stats.update(f);  // names the shapes when they differ
  });
}

uint64_t simprof_timer_stats_frames(const simprof_timer_stats* s) {
  return s ? s->stats.frames() : 0;
}

simprof_status simprof_timer_stats_across_envs(const simprof_timer_stats* s, int row, int latest,
                                               double* out6) {
  SIMPROF_C_REQUIRE(s, "timer stats");
  SIMPROF_C_REQUIRE(out6, "out");
  return guarded([&] {
    const simprof::AcrossEnvs a = s->stats.across_envs(row, latest != 0);
    const double v[6] = {a.min, a.p50, a.p95, a.p99, a.max, a.mean};
    for (int i = 0; i < 6; ++i) out6[i] = v[i];
  });
}

simprof_status simprof_timer_stats_slowest(const simprof_timer_stats* s, int row, int k, int* envs,
                                           int* count) {
  SIMPROF_C_REQUIRE(s, "timer stats");
  SIMPROF_C_REQUIRE(envs, "envs");
  SIMPROF_C_REQUIRE(count, "count");
  return guarded([&] {
    const std::vector<int> v = s->stats.slowest(row, k);
    for (size_t i = 0; i < v.size(); ++i) envs[i] = v[i];
    *count = static_cast<int>(v.size());
  });
}

simprof_status simprof_timer_plot(const simprof_timer_stats* s, int row, int width, char* buf,
                                  size_t cap, size_t* needed) {
  SIMPROF_C_REQUIRE(s, "timer stats");
  return guarded([&] {
    simprof::PlotOptions o;
    o.width = width;
    copy_out(simprof::terminal_plot(s->stats, row, o), buf, cap, needed);
  });
}

simprof_status simprof_timer_svg(const simprof_timer_stats* s, const char* title, char* buf,
                                 size_t cap, size_t* needed) {
  SIMPROF_C_REQUIRE(s, "timer stats");
  return guarded([&] {
    copy_out(simprof::timers_svg(s->stats, title ? title : "simprof timers"), buf, cap, needed);
  });
}

}  // extern "C"
