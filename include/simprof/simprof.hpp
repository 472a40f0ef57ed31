// SPDX-License-Identifier: MIT
// Everything in simprof's core (no CUDA): include this, or the one header you need. The rooms:
//   base/       clock, statistics, running mean, logger, atomic file writes
//   profiler/   StepProfiler, its timings, the FPS line, options, reports, SIMPROF_* macros
//   timers/     per-env (rows, n_envs) clock-counter timers, their statistics and plots
//   trace/      typed trace spans, the Chrome/Perfetto writer, schedules, sessions, analysis
//   precision/  FP32 reference vs reduced-precision variant checks
//   memory/     allocations and bytes per step and stage, device memory in use, the host hook
// The CUDA backend is <simprof/cuda.hpp>.
#pragma once

#include "simprof/base/clock.hpp"
#include "simprof/base/config.hpp"
#include "simprof/base/io.hpp"
#include "simprof/base/log.hpp"
#include "simprof/base/manual_clock.hpp"
#include "simprof/base/ranks.hpp"
#include "simprof/base/running_mean.hpp"
#include "simprof/base/stats.hpp"
#include "simprof/memory/tracker.hpp"
#include "simprof/precision/checker.hpp"
#include "simprof/precision/error_sums.hpp"
#include "simprof/precision/rounding.hpp"
#include "simprof/profiler/collective.hpp"
#include "simprof/profiler/device_steps.hpp"
#include "simprof/profiler/engine_zones.hpp"
#include "simprof/profiler/fps_tracker.hpp"
#include "simprof/profiler/listener.hpp"
#include "simprof/profiler/macros.hpp"
#include "simprof/profiler/options.hpp"
#include "simprof/profiler/report.hpp"
#include "simprof/profiler/run_record.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/profiler/timings.hpp"
#include "simprof/timers/plots.hpp"
#include "simprof/timers/timer_buffer.hpp"
#include "simprof/timers/timer_stats.hpp"
#include "simprof/timers/timer_view.hpp"
#include "simprof/trace/analysis.hpp"
#include "simprof/trace/chrome_json.hpp"
#include "simprof/trace/schedule.hpp"
#include "simprof/trace/session.hpp"
#include "simprof/trace/span.hpp"
#include "simprof/trace/time_base.hpp"
