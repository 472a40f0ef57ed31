// SPDX-License-Identifier: MIT
// Everything in simprof's core (no CUDA): include this, or the one header you need.
#pragma once

#include "simprof/clock.hpp"
#include "simprof/config.hpp"
#include "simprof/fps_tracker.hpp"
#include "simprof/manual_clock.hpp"
#include "simprof/options.hpp"
#include "simprof/precision_check.hpp"
#include "simprof/report.hpp"
#include "simprof/running_mean.hpp"
#include "simprof/schedule.hpp"
#include "simprof/stage_timings.hpp"
#include "simprof/stats.hpp"
#include "simprof/step_profiler.hpp"
#include "simprof/timer_stats.hpp"
#include "simprof/timers.hpp"
#include "simprof/trace.hpp"
#include "simprof/trace_analysis.hpp"
#include "simprof/trace_session.hpp"
