// SPDX-License-Identifier: MIT
// soak: many steps with everything on — the FPS line, a timings window, a stats window, CPU per-env
// timers and their statistics, and a trace session repeating forever with a deliberately small
// buffer — sampling the resident memory along the way. Exits non-zero when memory grew by more than
// the bound after the warm-up, when a trace window was not written or did not parse, or when the
// dropped-span count differs from what the bounded buffer must drop. A labelled long test, outside
// the default CI set (ctest -L soak).
//
//   soak --steps 10000000 --max-growth-kb 512
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "resident.hpp"
#include "simprof/simprof.hpp"

namespace {

using namespace simprof;

struct Args {
  int steps = 10'000'000;
  int n_envs = 64;
  int max_growth_kb = 512;
  int window_every = 10'000;  // a trace window (1 active step) every N steps
  int samples = 50;           // RSS samples over the run
};

}  // namespace

int main(int argc, char** argv) try {
  Args a;
  cli::Flags("soak [--steps N] [--n-envs N] [--max-growth-kb K] [--window-every N]\n")
      .integer("--steps", a.steps, 1000)
      .integer("--n-envs", a.n_envs, 1, 4096)
      .integer("--max-growth-kb", a.max_growth_kb, 0)
      .integer("--window-every", a.window_every, 10)
      .parse(argc, argv);

  ProfilingOptions o;
  o.timings_window = 16;
  o.stats_window = 1024;
  StepProfiler prof(o, a.n_envs);
  std::uint64_t fps_lines = 0;
  auto sink = std::make_shared<spdlog::sinks::null_sink_mt>();
  prof.fps().set_logger(
      std::make_shared<spdlog::logger>("soak", sink));  // lines formatted, dropped
  prof.fps().set_callback([&](const FpsSample&) { ++fps_lines; });

  // The trace: 1 active step per window holds the step span and 4 stage spans (physics, its forces
  // and integrate, sensors/Imu) = 5; the buffer keeps 4, so each window must drop exactly 1.
  constexpr std::size_t kKept = 4, kPerStep = 5;
  default_logger()->set_level(spdlog::level::err);  // one "dropped" warning per window otherwise
  TraceOptions t;
  t.schedule = Schedule{a.window_every - 2, 1, 1, 0, 0};
  t.max_cpu_events = kKept;
  t.ranks = RankInfo{};
  TraceSession trace(prof, t);
  const std::string path = fmt::format("/tmp/simprof_soak_{}.json", ::getpid());
  std::uint64_t written = 0, parsed_bad = 0;
  trace.on_trace_ready([&](const Trace& tr, std::uint64_t) {
    write_chrome_trace(tr, path);
    ++written;
    // Read back as a reader would: it parses, holds the kept CPU spans (an FPS sample completed in
    // the step adds a counter, not a span) and says the one dropped span.
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    std::size_t stages = 0;
    if (!j.is_discarded() && j.contains("traceEvents"))
      for (const auto& e : j["traceEvents"]) stages += e.value("ph", "") == "X";
    const bool dropped_said =
        !j.is_discarded() && j.contains("otherData") &&
        j["otherData"].value("dropped_events", "") == std::to_string(kPerStep - kKept);
    if (j.is_discarded() || stages != kKept || !dropped_said) ++parsed_bad;
  });

  TimerLabels labels({"forces", "integrate"});
  TimerBuffer timers({"forces", "integrate"}, a.n_envs, TimerUnit::kNanoseconds);
  TimerStats stats(labels, a.n_envs);
  const TimerView view = timers.view();
  std::vector<float> x(static_cast<std::size_t>(a.n_envs), 1.0f);

  const auto physics = prof.stage_id("physics");
  const auto forces = prof.stage_id("physics/forces");
  const auto integrate = prof.stage_id("physics/integrate");
  const auto imu = prof.stage_id("sensors/Imu");
  std::vector<long> rss;
  long warm = 0;
  const int sample_every = std::max(1, a.steps / a.samples);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < a.steps; ++i) {
    auto step = prof.step();
    {
      auto p = prof.stage(physics);
      {
        auto f = prof.stage(forces);
        for (int e = 0; e < a.n_envs; ++e) {
          TimerChain<GlobalTimerNs> chain(view, e);
          x[static_cast<std::size_t>(e)] *= 0.9999f;
          chain.lap(0);
          x[static_cast<std::size_t>(e)] += 0.0001f;
          chain.lap(1);
        }
      }
      auto g = prof.stage(integrate);
    }
    { auto s = prof.stage(imu); }
    if (i % 64 == 0) stats.update(timers.read());
    if (i % sample_every == 0) {
      rss.push_back(bench::resident_kb());
      if (i >= a.steps / 10 && warm == 0) warm = rss.back();  // after the first tenth: warm
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rss.push_back(bench::resident_kb());
  std::remove(path.c_str());

  const long start = rss.front(), end = rss.back(),
             peak = *std::max_element(rss.begin(), rss.end());
  const std::uint64_t expected_windows = static_cast<std::uint64_t>(a.steps / a.window_every);
  const std::uint64_t expected_dropped = trace.windows() * (kPerStep - kKept);
  fmt::print(
      "soak: {} steps in {:.1f} s ({:.0f} ns per step, everything on), {} FPS samples, {} timer "
      "frames\n",
      a.steps, seconds, seconds / a.steps * 1e9, fps_lines, stats.frames());
  fmt::print("resident memory: start {} KiB, warm {} KiB, end {} KiB, peak {} KiB ({} samples)\n",
             start, warm, end, peak, rss.size());
  fmt::print(
      "trace windows: {} written (expected {}), {} not as bounded; dropped {} (expected {})\n",
      written, expected_windows, parsed_bad, trace.dropped(), expected_dropped);
  bool ok = true;
  if (end - warm > a.max_growth_kb) {
    fmt::print("FAIL: memory grew {} KiB after the warm-up (bound {} KiB)\n", end - warm,
               a.max_growth_kb);
    ok = false;
  }
  if (written != trace.windows() || written < expected_windows - 1 || parsed_bad != 0) {
    fmt::print("FAIL: trace windows\n");
    ok = false;
  }
  if (trace.dropped() != expected_dropped) {
    fmt::print("FAIL: dropped {} spans, the bounded buffer must drop {}\n", trace.dropped(),
               expected_dropped);
    ok = false;
  }
  fmt::print("{}\n", ok ? "soak ok" : "soak FAILED");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "soak: %s\n", e.what());
  return 2;
}
