// SPDX-License-Identifier: MIT
// The C API over the C++ library: every call catches what the library throws and turns it into a
// status and the thread's last message.
#include "simprof/c/simprof.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "simprof/base/manual_clock.hpp"
#include "simprof/base/running_mean.hpp"
#include "simprof/profiler/report.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/timers/plots.hpp"
#include "simprof/timers/timer_stats.hpp"
#include "simprof/trace/session.hpp"
#if SIMPROF_C_CUDA
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/cuda/trace/nvtx.hpp"
#endif

struct simprof_options {
  simprof::ProfilingOptions options;
};

struct simprof_manual_clock {
  simprof::ManualClock clock;
};

struct simprof_profiler {
  simprof::StepProfiler prof;
  std::vector<std::pair<std::string, double>> timings;  // the latest simprof_timings_count
  simprof_profiler(const simprof::ProfilingOptions& o, std::int64_t n) : prof(o, n) {}
  simprof_profiler(const simprof::ProfilingOptions& o, std::int64_t n, const simprof::Clock& c)
      : prof(o, n, c) {}
};

struct simprof_running_mean {
  simprof::RunningMean mean;
};

struct simprof_timer_stats {
  simprof::TimerStats stats;
};

struct simprof_trace {
  simprof::TraceSession session;
  std::vector<std::string> files;  // the latest simprof_trace_files_count
  simprof_trace(simprof::StepProfiler& p, const simprof::TraceOptions& o) : session(p, o) {}
};

#if SIMPROF_C_CUDA
struct simprof_kernel_tracer {
  simprof::cuda::KernelTracer tracer;
  simprof_kernel_tracer(const simprof::StepProfiler& p, const simprof::cuda::KernelTracerOptions& o)
      : tracer(p, o) {}
};
struct simprof_nvtx {
  simprof::cuda::NvtxRanges ranges;
  explicit simprof_nvtx(simprof::StepProfiler& p) : ranges(p) {}
};
#else
struct simprof_kernel_tracer {};
struct simprof_nvtx {};
#endif

namespace {

thread_local std::string t_error;

simprof_status fail(simprof_status s, std::string message) {
  try {
    t_error = std::move(message);
  } catch (...) {
  }
  return s;
}

// Runs `f`, mapping what it throws to a status (the library's message kept).
template <class F>
simprof_status guarded(F&& f) noexcept {
  try {
    f();
    return SIMPROF_OK;
  } catch (const std::invalid_argument& e) {
    return fail(SIMPROF_INVALID_ARGUMENT, e.what());
  } catch (const std::out_of_range& e) {
    return fail(SIMPROF_INVALID_ARGUMENT, e.what());
  } catch (const std::logic_error& e) {
    return fail(SIMPROF_LOGIC_ERROR, e.what());
#if SIMPROF_C_CUDA
  } catch (const simprof::cuda::CudaError& e) {
    return fail(SIMPROF_CUDA_ERROR, e.what());
#endif
  } catch (const std::bad_alloc&) {
    return fail(SIMPROF_ERROR, "simprof: out of memory");
  } catch (const std::exception& e) {
    return fail(SIMPROF_ERROR, e.what());
  } catch (...) {
    return fail(SIMPROF_ERROR, "simprof: an unknown exception");
  }
}

// A null handle or out pointer: named.
template <class T>
bool missing(const T* p, const char* what, simprof_status* s) {
  if (p != nullptr) return false;
  *s = fail(SIMPROF_INVALID_ARGUMENT, std::string("simprof: ") + what + " is NULL");
  return true;
}

#define SIMPROF_C_REQUIRE(p, what)            \
  do {                                        \
    simprof_status s_ = SIMPROF_OK;           \
    if (missing((p), (what), &s_)) return s_; \
  } while (0)

// Sets a field on a copy, validates the copy (the message names the field and the value), keeps it.
template <class Apply>
simprof_status set_option(simprof_options* o, Apply&& apply) {
  SIMPROF_C_REQUIRE(o, "options");
  return guarded([&] {
    simprof::ProfilingOptions next = o->options;
    apply(next);
    next.validate();
    o->options = next;
  });
}

simprof::StageId stage_of(const simprof::StepProfiler& prof, const char* name) {
  if (name == nullptr) throw std::invalid_argument("simprof: stage name is NULL");
  const simprof::StageId id = prof.find_stage(name);
  if (id == simprof::kNoStage)
    throw std::invalid_argument(std::string("simprof: no stage named '") + name +
                                "' has begun (expected the name given to simprof_stage_begin)");
  return id;
}

// A string into the caller's buffer (NUL-terminated, truncated) and the bytes it needs.
void copy_out(const std::string& t, char* buf, size_t cap, size_t* needed) {
  if (needed) *needed = t.size() + 1;
  if (buf && cap) {
    const size_t n = t.size() < cap - 1 ? t.size() : cap - 1;
    t.copy(buf, n);
    buf[n] = '\0';
  }
}

#if !SIMPROF_C_CUDA
simprof_status no_cuda() {
  return fail(SIMPROF_UNAVAILABLE,
              "simprof: built without the CUDA backend (kernel tracer and NVTX need it)");
}
#endif

}  // namespace

extern "C" {

const char* simprof_last_error(void) { return t_error.c_str(); }
const char* simprof_version(void) { return "0.1.0"; }
int simprof_has_cuda(void) { return SIMPROF_C_CUDA ? 1 : 0; }

simprof_status simprof_options_new(simprof_options** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    auto o = std::make_unique<simprof_options>();
    o->options = simprof::ProfilingOptions::from_env();
    *out = o.release();
  });
}

void simprof_options_free(simprof_options* options) { delete options; }

simprof_status simprof_options_set_show_fps(simprof_options* o, int show) {
  return set_option(o, [&](simprof::ProfilingOptions& p) { p.show_fps = show != 0; });
}

simprof_status simprof_options_set_alpha(simprof_options* o, double alpha) {
  return set_option(o, [&](simprof::ProfilingOptions& p) { p.fps_tracker_alpha = alpha; });
}

simprof_status simprof_options_set_interval_ms(simprof_options* o, double ms) {
  // Checked before the conversion to nanoseconds, which could overflow.
  if (!(ms > 0) || !(ms <= 1e9))
    return fail(SIMPROF_INVALID_ARGUMENT,
                "simprof: fps_sample_interval = " + std::to_string(ms) +
                    " ms (expected a finite number of milliseconds > 0 and <= 1e9)");
  return set_option(o, [&](simprof::ProfilingOptions& p) {
    p.fps_sample_interval = std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6));
  });
}

simprof_status simprof_options_set_timings_window(simprof_options* o, uint64_t steps) {
  return set_option(
      o, [&](simprof::ProfilingOptions& p) { p.timings_window = static_cast<std::size_t>(steps); });
}

simprof_status simprof_options_set_stats_window(simprof_options* o, uint64_t steps) {
  return set_option(
      o, [&](simprof::ProfilingOptions& p) { p.stats_window = static_cast<std::size_t>(steps); });
}

simprof_status simprof_profiler_new(const simprof_options* options, int64_t n_envs,
                                    simprof_profiler** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    const simprof::ProfilingOptions o =
        options ? options->options : simprof::ProfilingOptions::from_env();
    *out = new simprof_profiler(o, n_envs);
  });
}

simprof_status simprof_profiler_new_with_clock(const simprof_options* options, int64_t n_envs,
                                               const simprof_manual_clock* clock,
                                               simprof_profiler** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  SIMPROF_C_REQUIRE(clock, "clock");
  return guarded([&] {
    const simprof::ProfilingOptions o =
        options ? options->options : simprof::ProfilingOptions::from_env();
    *out = new simprof_profiler(o, n_envs, clock->clock.clock());
  });
}

void simprof_profiler_free(simprof_profiler* prof) { delete prof; }

simprof_status simprof_manual_clock_new(simprof_manual_clock** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] { *out = new simprof_manual_clock(); });
}

void simprof_manual_clock_free(simprof_manual_clock* clock) { delete clock; }

simprof_status simprof_manual_clock_advance_ns(simprof_manual_clock* clock, int64_t ns) {
  SIMPROF_C_REQUIRE(clock, "clock");
  if (ns < 0)
    return fail(SIMPROF_INVALID_ARGUMENT,
                fmt::format("simprof: manual clock advance_ns = {} (expected >= 0: time does not "
                            "run backwards)",
                            ns));
  clock->clock.advance_ns(ns);
  return SIMPROF_OK;
}

simprof_status simprof_manual_clock_now_ns(const simprof_manual_clock* clock, int64_t* ns) {
  SIMPROF_C_REQUIRE(clock, "clock");
  SIMPROF_C_REQUIRE(ns, "ns");
  *ns = clock->clock.now_ns();
  return SIMPROF_OK;
}

simprof_status simprof_step_begin(simprof_profiler* p) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { p->prof.begin_step(); });
}

simprof_status simprof_step_end(simprof_profiler* p, int* published) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] {
    const bool ok = p->prof.end_step();
    if (published) *published = ok ? 1 : 0;
  });
}

simprof_status simprof_step_veto(simprof_profiler* p) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { p->prof.veto_step(); });
}

simprof_status simprof_stage_begin(simprof_profiler* p, const char* name) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(name, "stage name");
  return guarded([&] { p->prof.begin_stage(p->prof.stage_id(name)); });
}

simprof_status simprof_stage_end(simprof_profiler* p, const char* name) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { p->prof.end_stage(stage_of(p->prof, name)); });
}

simprof_status simprof_timings_count(simprof_profiler* p, size_t* count) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(count, "count");
  return guarded([&] {
    p->timings.clear();
    p->prof.timings().for_each(
        [&](std::string_view n, double v) { p->timings.emplace_back(std::string(n), v); });
    *count = p->timings.size();
  });
}

simprof_status simprof_timings_get(const simprof_profiler* p, size_t index, const char** name,
                                   double* seconds) {
  SIMPROF_C_REQUIRE(p, "profiler");
  if (index >= p->timings.size())
    return fail(SIMPROF_INVALID_ARGUMENT, "simprof: timing index " + std::to_string(index) +
                                              " (expected < " + std::to_string(p->timings.size()) +
                                              ", from simprof_timings_count)");
  if (name) *name = p->timings[index].first.c_str();
  if (seconds) *seconds = p->timings[index].second;
  return SIMPROF_OK;
}

simprof_status simprof_timing(const simprof_profiler* p, const char* stage, double* seconds) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(stage, "stage name");
  SIMPROF_C_REQUIRE(seconds, "seconds");
  return guarded([&] { *seconds = p->prof.timings().at(stage); });
}

simprof_status simprof_stage_table(const simprof_profiler* p, char* buf, size_t cap,
                                   size_t* needed) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { copy_out(simprof::stage_table(p->prof), buf, cap, needed); });
}

uint64_t simprof_steps(const simprof_profiler* p) { return p ? p->prof.steps() : 0; }

simprof_status simprof_fps(const simprof_profiler* p, double* total_fps, double* fps_per_env) {
  SIMPROF_C_REQUIRE(p, "profiler");
  if (total_fps) *total_fps = p->prof.fps().total_fps();
  if (fps_per_env) *fps_per_env = p->prof.fps().fps_per_env();
  return SIMPROF_OK;
}

simprof_status simprof_set_show_fps(simprof_profiler* p, int show) {
  SIMPROF_C_REQUIRE(p, "profiler");
  p->prof.set_show_fps(show != 0);
  return SIMPROF_OK;
}

simprof_status simprof_fps_flush(simprof_profiler* p) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { p->prof.fps().flush(); });
}

simprof_status simprof_set_fps_callback(simprof_profiler* p, simprof_fps_callback callback,
                                        void* user) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] {
    if (callback == nullptr) {
      p->prof.fps().set_callback(nullptr);
      return;
    }
    p->prof.fps().set_callback([callback, user](const simprof::FpsSample& s) {
      callback(s.total_fps, s.fps_per_env, s.n_envs, user);
    });
  });
}

simprof_status simprof_running_mean_new_window(size_t window, simprof_running_mean** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] { *out = new simprof_running_mean{simprof::RunningMean(window)}; });
}

simprof_status simprof_running_mean_new_ema(double alpha, simprof_running_mean** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] { *out = new simprof_running_mean{simprof::RunningMean::ema(alpha)}; });
}

void simprof_running_mean_free(simprof_running_mean* mean) { delete mean; }

simprof_status simprof_running_mean_update(simprof_running_mean* m, double x) {
  SIMPROF_C_REQUIRE(m, "running mean");
  return guarded([&] { m->mean.update(x); });
}

double simprof_running_mean_value(const simprof_running_mean* m) {
  return m ? m->mean.value() : std::numeric_limits<double>::quiet_NaN();
}

uint64_t simprof_running_mean_count(const simprof_running_mean* m) {
  return m ? m->mean.count() : 0;
}

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

simprof_status simprof_trace_new(simprof_profiler* p, int64_t wait, int64_t warmup, int64_t active,
                                 int64_t repeat, int64_t skip_first, const char* dir, int flags,
                                 simprof_trace** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    if (flags < 0 || flags > SIMPROF_SESSION_BACKGROUND)
      throw std::invalid_argument("simprof: trace session flags = " + std::to_string(flags) +
                                  " (expected 0 or SIMPROF_SESSION_BACKGROUND = 1)");
    simprof::TraceOptions o;
    o.schedule = simprof::Schedule{wait, warmup, active, repeat, skip_first};
    if (dir) o.dir = dir;
    o.background = (flags & SIMPROF_SESSION_BACKGROUND) != 0;
    *out = new simprof_trace(p->prof, o);
  });
}

void simprof_trace_free(simprof_trace* trace) { delete trace; }

simprof_status simprof_trace_wait(simprof_trace* t) {
  SIMPROF_C_REQUIRE(t, "trace");
  return guarded([&] { t->session.wait(); });
}

uint64_t simprof_trace_windows(const simprof_trace* t) { return t ? t->session.windows() : 0; }
uint64_t simprof_trace_dropped(const simprof_trace* t) { return t ? t->session.dropped() : 0; }

simprof_status simprof_trace_files_count(simprof_trace* t, size_t* count) {
  SIMPROF_C_REQUIRE(t, "trace");
  SIMPROF_C_REQUIRE(count, "count");
  return guarded([&] {
    t->files = t->session.files();
    *count = t->files.size();
  });
}

simprof_status simprof_trace_file(const simprof_trace* t, size_t index, const char** path) {
  SIMPROF_C_REQUIRE(t, "trace");
  SIMPROF_C_REQUIRE(path, "path");
  if (index >= t->files.size())
    return fail(SIMPROF_INVALID_ARGUMENT, "simprof: trace file index " + std::to_string(index) +
                                              " (expected < " + std::to_string(t->files.size()) +
                                              ", from simprof_trace_files_count)");
  *path = t->files[index].c_str();
  return SIMPROF_OK;
}

simprof_status simprof_kernel_tracer_new(simprof_profiler* p, simprof_trace* t, int flags,
                                         simprof_kernel_tracer** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(t, "trace");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
#if SIMPROF_C_CUDA
  return guarded([&] {
    simprof::cuda::KernelTracerOptions o;
    if (flags < 0 || flags > 255)
      throw std::invalid_argument("simprof: kernel tracer flags = " + std::to_string(flags) +
                                  " (expected a combination of the SIMPROF_TRACE_* flags, 0-255)");
    if (flags & SIMPROF_TRACE_CUPTI_CLOCK) o.align_clock = false;
    o.mode = (flags & SIMPROF_TRACE_GRAPH_LAUNCHES) ? simprof::cuda::TraceMode::kGraphLaunch
                                                    : simprof::cuda::TraceMode::kPerKernel;
    if (flags & SIMPROF_TRACE_KERNELS_ONLY)
      o.runtime_api = o.driver_api = o.memory = o.synchronization = o.overhead = false;
    if (flags & SIMPROF_TRACE_NO_RUNTIME) o.runtime_api = false;
    if (flags & SIMPROF_TRACE_NO_DRIVER) o.driver_api = false;
    if (flags & SIMPROF_TRACE_NO_COPIES) o.memory = false;
    if (flags & SIMPROF_TRACE_NO_SYNCS) o.synchronization = false;
    if (flags & SIMPROF_TRACE_OVERHEAD) o.overhead = true;
    auto k = std::make_unique<simprof_kernel_tracer>(p->prof, o);
    t->session.add_source(&k->tracer);
    *out = k.release();
  });
#else
  (void)flags;
  return no_cuda();
#endif
}

void simprof_kernel_tracer_free(simprof_kernel_tracer* tracer) { delete tracer; }

int simprof_kernel_tracer_enabled(const simprof_kernel_tracer* k) {
#if SIMPROF_C_CUDA
  return k && k->tracer.enabled() ? 1 : 0;
#else
  (void)k;
  return 0;
#endif
}

const char* simprof_kernel_tracer_reason(const simprof_kernel_tracer* k) {
#if SIMPROF_C_CUDA
  return k ? k->tracer.disabled_reason().c_str() : "";
#else
  (void)k;
  return "built without the CUDA backend";
#endif
}

uint64_t simprof_kernel_tracer_dropped(const simprof_kernel_tracer* k) {
#if SIMPROF_C_CUDA
  return k ? k->tracer.dropped() : 0;
#else
  (void)k;
  return 0;
#endif
}

simprof_status simprof_nvtx_new(simprof_profiler* p, simprof_nvtx** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
#if SIMPROF_C_CUDA
  return guarded([&] { *out = new simprof_nvtx(p->prof); });
#else
  return no_cuda();
#endif
}

void simprof_nvtx_free(simprof_nvtx* nvtx) { delete nvtx; }

}  // extern "C"
