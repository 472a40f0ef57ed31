// SPDX-License-Identifier: MIT
// bullet: N Bullet worlds (a pile of spheres and boxes on a plane each) stepped over T threads,
// Bullet's own profile zones turned into simprof stages through EngineZones, and the zone times
// checked against a CProfileManager-style tree fed by the same callbacks (reference.hpp).
//
//   bullet --n-envs 4 --threads 1 --steps 300 --bodies 200      the stage table and the comparison
//   bullet --n-envs 4 --threads 2 --cost                         simprof's hooks on vs off
//
// Threads: with --threads 1 the loop's thread steps every world inside the "physics" stage, so
// Bullet's zones are nested wall-time stages (physics/internalSingleStepSimulation/...: Debian's
// 3.24 opens no zone in stepSimulation itself). With T > 1, T pool
// threads step the worlds (world i on thread i % T) while the loop's thread waits inside
// "physics": the zones then run on the pool's threads, where EngineZones sums them across threads
// (worker_cpu_seconds(): thread time added up, not wall time) and puts them on each thread's track
// in the trace.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <btBulletDynamicsCommon.h>
#include <fmt/format.h>
#include "on_off_cost.hpp"
#include "run_json.hpp"

#include "cli.hpp"
#include "reference.hpp"
#include "simprof/profiler/engine_zones.hpp"
#include "simprof/profiler/report.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/session.hpp"
#include "world.hpp"

namespace simprof::examples::bullet {
namespace {
using simprof::examples::measure_on_off;
using simprof::examples::OnOffCost;
using simprof::examples::time_run;

struct ZoneRow {
  std::string zone;  // Bullet's path: "stepSimulation/internalSingleStepSimulation"
  double simprof_ms = 0, reference_ms = 0;
  long long calls = 0;
  bool ok = false;
};

int run_profile(const Args& a) {
  std::optional<JsonFile> json_out;
  if (!a.json.empty()) json_out.emplace(a.json);  // a bad path fails before the run
  auto worlds = make_worlds(a);
  ProfilingOptions options = ProfilingOptions::from_env();
  if (a.quiet) options.show_fps = false;
  options.stats_window = static_cast<std::size_t>(a.steps);
  StepProfiler prof(options, a.n_envs);
  const StageId physics = prof.stage_id("physics");
  EngineZones zones(prof, "physics");
  ReferenceProfile reference;
  const Hooks hooks;
  g_zones = &zones;
  g_reference = &reference;
  btSetCustomEnterProfileZoneFunc(enter_both);
  btSetCustomLeaveProfileZoneFunc(leave_both);
  std::optional<Pool> pool;
  if (a.threads > 1) pool.emplace(a.threads, worlds);
  Pool* p = pool ? &*pool : nullptr;

  fmt::print(
      "bullet: Bullet {}, {} worlds x {} bodies (spheres and boxes on a plane), {} thread{}, "
      "{} warm-up + {} steps of 1/60 s (clock {})\n",
      bullet_version(), a.n_envs, a.bodies, a.threads, a.threads > 1 ? "s" : "", a.warmup, a.steps,
      to_string(prof.clock().source()));
  for (int i = 0; i < a.warmup; ++i) {
    auto step = prof.step();
    auto s = prof.stage(physics);
    step_all(worlds, p);
  }
  std::optional<TraceSession> trace;
  if (!a.trace.empty()) {
    TraceOptions topt;
    topt.schedule.warmup = 2;
    topt.schedule.active = 3;
    topt.schedule.wait = std::max(0, a.steps / 2 - 5);
    topt.schedule.repeat = 1;
    topt.dir = a.trace;
    trace.emplace(prof, topt);
  }
  const bool wall = a.threads == 1;
  // With a pool the zones' times come per step from worker_cpu_seconds(): added up here.
  std::vector<double> worker_sum;
  std::vector<ZoneRow> rows;
  double seconds = 0;
  bool all_ok = false;
  int attempt = 1;
  for (;; ++attempt) {
    prof.reset_stats();
    prof.fps().reset();
    reference.reset();
    worker_sum.assign(prof.num_stages(), 0.0);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < a.steps; ++i) {
      // The pool's hand-off publishes it to the workers before they step.
      g_reference_outside.store(i % 2 == 1, std::memory_order_relaxed);
      {
        auto step = prof.step();
        auto s = prof.stage(physics);
        step_all(worlds, p);
      }
      reference.count_frame();
      if (p) {
        worker_sum.resize(prof.num_stages(), 0.0);
        for (StageId id = 0; id < prof.num_stages(); ++id)
          worker_sum[id] += zones.worker_cpu_seconds(id).value_or(0.0);
      }
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    prof.fps().flush();

    // The comparison: every zone the reference saw, in ms per step.
    const auto totals = reference.totals();
    const double frames = static_cast<double>(reference.frames());
    rows.clear();
    for (const auto& [path, z] : totals) {
      ZoneRow r;
      r.zone = path;
      r.calls = z.calls;
      r.reference_ms = static_cast<double>(z.nanoseconds) * 1e-6 / frames;
      const StageId id = prof.find_stage("physics/" + path);
      if (id == kNoStage) {
        r.simprof_ms = std::nan("");
      } else if (wall) {
        const auto st = prof.stats(id);  // mean over the steps that ran it: scaled to all steps
        r.simprof_ms = st.mean * 1e3 * static_cast<double>(st.count) / frames;
      } else {
        r.simprof_ms = id < worker_sum.size() ? worker_sum[id] * 1e3 / frames : 0.0;
      }
      const double diff = std::fabs(r.simprof_ms - r.reference_ms);
      r.ok = diff <= 0.05 * r.reference_ms || diff <= 1e-3;  // 5 % or 1 us
      rows.push_back(r);
    }
    const auto agree =
        std::count_if(rows.begin(), rows.end(), [](const ZoneRow& r) { return r.ok; });
    all_ok = !rows.empty() && agree == static_cast<long>(rows.size());
    if (all_ok || attempt >= a.attempts) break;
    std::string off;
    for (const auto& r : rows)
      if (!r.ok) off += fmt::format(" {} ({:+.4f} ms)", r.zone, r.simprof_ms - r.reference_ms);
    fmt::print("attempt {}: {} of {} zones agree, off:{}; measuring again ({} attempts at most)\n",
               attempt, agree, rows.size(), off, a.attempts);
  }
  hooks.restore();
  pool.reset();
  g_zones = nullptr;
  g_reference = nullptr;

  fmt::print("\nstages, {} ({} steps):\n{}", "wall time on the loop's thread", a.steps,
             stage_table(prof));
  const auto step_stats = prof.stats(kStepStage);
  fmt::print("\n{} env-steps/s ({} steps/s, {} envs, {} thread{}); FPS tracker: {}\n",
             format_thousands(a.n_envs * a.steps / seconds), format_thousands(a.steps / seconds),
             a.n_envs, a.threads, a.threads > 1 ? "s" : "",
             std::isnan(prof.fps().total_fps()) ? std::string("no sample yet")
                                                : format_thousands(prof.fps().total_fps()));
  if (!wall) {
    fmt::print(
        "\nBullet's zones on the {} pool threads, summed thread time (not wall time), ms per "
        "step:\n",
        a.threads);
    for (const auto& r : rows) fmt::print("  {:<70} {:>10.4f}\n", r.zone, r.simprof_ms);
  }
  fmt::print(
      "\nsimprof vs the reference (a CProfileManager-style tree on Bullet's btClock, fed by the "
      "same "
      "callbacks in this run; Bullet's own CProfileManager is {}), ms per step, {}:\n",
      cprofile_manager_linked() ? "linked but replaced by the custom zone functions"
                                : "not compiled into this libLinearMath (BT_NO_PROFILE)",
      wall ? "wall time" : "summed across threads");
  fmt::print("  {:<70} {:>10} {:>10} {:>10} {:>8} {:>7}  {}\n", "zone", "simprof", "reference",
             "diff", "diff %", "calls", "verdict (5 % or 1 us)");
  for (const auto& r : rows) {
    const double diff = r.simprof_ms - r.reference_ms;
    fmt::print("  {:<70} {:>10.4f} {:>10.4f} {:>+10.4f} {:>+7.2f}% {:>7}  {}\n", r.zone,
               r.simprof_ms, r.reference_ms, diff,
               r.reference_ms > 0 ? 100 * diff / r.reference_ms : 0.0, r.calls,
               r.ok ? "ok" : "DIFFERS");
  }
  const auto agree = std::count_if(rows.begin(), rows.end(), [](const ZoneRow& r) { return r.ok; });
  if (all_ok)
    fmt::print("comparison: all {} zones agree (attempt {} of at most {})\n", rows.size(), attempt,
               a.attempts);
  else
    fmt::print("comparison: {} of {} zones agree (attempt {} of at most {})\n", agree, rows.size(),
               attempt, a.attempts);
  if (trace) {
    trace.reset();  // writes a window still open
    fmt::print("trace written under {}\n", a.trace);
  }

  if (json_out) {
    Json j = record_head("simprof examples/bullet", a.command,
                         {{"n_envs", a.n_envs}, {"threads", a.threads}, {"bodies", a.bodies}});
    j["example"] = "bullet";
    j["bullet_version"] = bullet_version();
    j["n_envs"] = a.n_envs;
    j["threads"] = a.threads;
    j["steps"] = a.steps;
    j["warmup"] = a.warmup;
    j["bodies"] = a.bodies;
    j["seconds"] = seconds;
    j["env_steps_per_s"] = a.n_envs * a.steps / seconds;
    j["step_mean_s"] = step_stats.mean;
    j["stage_times"] = "wall time on the loop's thread";
    j["stages"] = stage_rows_json(stage_rows(prof));
    j["fps"] = fps_json(prof.fps());
    j["comparison"]["zone_times"] = wall ? "wall time" : "summed across threads";
    j["comparison"]["reference"] = "CProfileManager-style tree on btClock, same callbacks";
    for (const auto& r : rows)
      j["comparison"]["zones"].push_back({{"zone", r.zone},
                                          {"simprof_ms_per_step", r.simprof_ms},
                                          {"reference_ms_per_step", r.reference_ms},
                                          {"calls", r.calls},
                                          {"agree", r.ok}});
    j["comparison"]["all_agree"] = all_ok;
    j["comparison"]["attempt"] = attempt;
    json_out->write(j);
    fmt::print("wrote {}\n", a.json);
  }
  return all_ok ? 0 : 3;
}

// simprof's hooks on (a profiled step, the "physics" stage, Bullet's zones into EngineZones) vs
// off (a bare step; Bullet's own, empty, zone functions), in blocks of 5 steps: on, off, off'
// (the null pair), off, ... (simprof::examples::measure_on_off).
int run_cost(const Args& a) {
  constexpr int block = 5;
  const int rounds = std::max(1, a.steps / (4 * block));  // --steps: on, off, off' and off
  double one_thread_block_s = 0;  // the 1-thread off block's median: the T-thread rounds follow
  auto worlds = make_worlds(a);
  ProfilingOptions options = ProfilingOptions::from_env();
  options.show_fps = false;
  StepProfiler prof(options, a.n_envs);
  const StageId physics = prof.stage_id("physics");
  EngineZones zones(prof, "physics");
  const Hooks hooks;
  g_zones = &zones;
  fmt::print(
      "bullet --cost: Bullet {}, {} worlds x {} bodies; {} rounds of {}-step blocks at 1 thread "
      "(at T threads as many as take the same time), hooks on / off / off' / off (each on block "
      "and each off' block, the null pair, against the off blocks either side), after {} warm-up "
      "steps\n",
      bullet_version(), a.n_envs, a.bodies, rounds, block, a.warmup);
  // The hook's own cost: on the loop's thread (nested stages) and on one worker (summed there).
  double loop_ns = 0, worker_ns = 0;
  {
    auto step = prof.step();
    auto s = prof.stage(physics);
    loop_ns = zone_ns(1500);
  }
  {
    auto step = prof.step();
    auto s = prof.stage(physics);
    std::thread worker([&] { worker_ns = zone_ns(1500); });
    worker.join();
  }
  btSetCustomEnterProfileZoneFunc(enter_count);
  btSetCustomLeaveProfileZoneFunc(leave_count);
  for (auto& w : worlds) w->step();
  hooks.restore();
  const double zones_per_step = static_cast<double>(g_zone_count.load());
  fmt::print(
      "  hook cost: {:.0f} ns per zone on the loop's thread, {:.0f} ns on a worker thread "
      "(best of 5 x 3,000, uncontended); {:.0f} zones per step\n",
      loop_ns, worker_ns, zones_per_step);
  std::vector<int> counts{1};
  if (a.threads > 1) counts.push_back(a.threads);
  bool ok = true;
  for (const int t : counts) {
    std::optional<Pool> pool;
    if (t > 1) pool.emplace(t, worlds);
    Pool* p = pool ? &*pool : nullptr;
    // simprof's own time on the loop's thread per step (the step and stage scopes, the workers'
    // sums read at the step's end), timed in the on blocks: the part of the cost that the pool's
    // threads wait for, and so the part that does not spread over them.
    // One per on step (their medians: a preemption moves a mean): the whole, and its two parts
    // (the step and stage begin; the stage and step end, which reads the workers' sums).
    std::vector<double> loop_steps_s, loop_begins_s, loop_ends_s;
    for (auto* v : {&loop_steps_s, &loop_begins_s, &loop_ends_s})
      v->reserve(static_cast<std::size_t>(a.steps + a.warmup));
    auto on = [&](int n) {
      btSetCustomEnterProfileZoneFunc(enter_simprof);
      btSetCustomLeaveProfileZoneFunc(leave_simprof);
      const simprof::Clock& clock = prof.clock();
      return time_run([&] {
        for (int i = 0; i < n; ++i) {
          const std::int64_t t0 = clock.now();
          std::int64_t t1 = 0, t2 = 0;
          {
            auto step = prof.step();
            auto s = prof.stage(physics);
            t1 = clock.now();
            step_all(worlds, p);
            t2 = clock.now();
          }
          const std::int64_t t3 = clock.now();
          loop_steps_s.push_back(clock.seconds(t3 - t2 + t1 - t0));
          loop_begins_s.push_back(clock.seconds(t1 - t0));
          loop_ends_s.push_back(clock.seconds(t3 - t2));
        }
      });
    };
    auto off = [&](int n) {
      hooks.restore();
      return time_run([&] {
        for (int i = 0; i < n; ++i) step_all(worlds, p);
      });
    };
    on(a.warmup);
    const double warm_off_s = off(a.warmup).wall_s;
    for (auto* v : {&loop_steps_s, &loop_begins_s, &loop_ends_s}) v->clear();
    // A faster batch gets more rounds, so that its median is not the noisier one: as many as take
    // the 1-thread half's time (its warm-up's off steps are the estimate of a block).
    int rounds_t = rounds;
    if (t > 1 && one_thread_block_s > 0 && warm_off_s > 0) {
      const double faster = one_thread_block_s / (warm_off_s * block / std::max(1, a.warmup));
      rounds_t =
          static_cast<int>(std::clamp(std::round(rounds * faster), 1.0 * rounds, 16.0 * rounds));
    }
    const OnOffCost c =
        measure_on_off(rounds_t, [&](bool is_on) { return is_on ? on(block) : off(block); });
    if (t == 1) one_thread_block_s = c.off_wall_s;
    hooks.restore();
    ok = ok && c.resolved(1.0) && c.cost_pct <= 1.0;
    // The same cost from the hook's own time: zones x ns, spread over t threads, per step (off).
    const double estimate =
        zones_per_step * (t > 1 ? worker_ns : loop_ns) * 1e-9 / t / (c.off_wall_s / block);
    const double loop_s = median(loop_steps_s);
    fmt::print(
        "  {} thread{} ({} rounds): steps/s on {:.1f}, off {:.1f} (medians); cost {:+.2f} % ({}); "
        "from the hook's own time {:.3f} % + on the loop's thread {:.2f} us a step ({:.3f} %; "
        "begin {:.2f}, end {:.2f}); envs/s off {}\n{}",
        t, t > 1 ? "s" : "", rounds_t, block / c.on_wall_s, block / c.off_wall_s, c.cost_pct,
        c.verdict(1.0), 100 * estimate, 1e6 * loop_s, 100 * loop_s / (c.off_wall_s / block),
        1e6 * median(loop_begins_s), 1e6 * median(loop_ends_s),
        format_thousands(a.n_envs * block / c.off_wall_s), c.details("    "));
  }
  g_zones = nullptr;
  fmt::print("cost: {}\n", ok ? "ok (within 1 %)" : "not shown within 1 % (see above)");
  return ok ? 0 : 3;
}

}  // namespace
}  // namespace simprof::examples::bullet

int main(int argc, char** argv) {
  using namespace simprof::examples::bullet;
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bullet: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    return args.cost ? run_cost(args) : run_profile(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bullet: %s\n", e.what());
    return 1;
  }
}
