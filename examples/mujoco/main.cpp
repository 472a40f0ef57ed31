// SPDX-License-Identifier: MIT
// mujoco_example: N MuJoCo environments (one mjData each, one shared mjModel) stepped over T
// threads, with simprof's FPS line while it runs, MuJoCo's own phase timers (d->timer, measured
// through mjcb_time as mujoco-testspeed does) recorded as "physics/<phase>" stages, and a closing
// comparison of simprof's figures with MuJoCo's for the same run (docs/engines.md).
//
//   mujoco_example --n-envs 8 --threads 2 --steps 1000
//   mujoco_example --compare-testspeed            (1 env, 1 thread, 5000 steps vs mujoco-testspeed)
//   mujoco_example --cost --n-envs 8 --threads 2  (simprof on vs off, interleaved)
#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <mujoco/mujoco.h>
#include "on_off_cost.hpp"
#include "run_json.hpp"

#include "cli.hpp"
#include "simprof/simprof.hpp"
#include "testspeed.hpp"

namespace simprof::examples::mujoco {
namespace {

RunResult run(const Args& args, const mjModel* m, bool print) {
  simprof::ProfilingOptions options = simprof::ProfilingOptions::from_env();
  if (args.quiet || !print) options.show_fps = false;
  options.stats_window = static_cast<std::size_t>(args.steps);
  simprof::StepProfiler prof(options, args.n_envs);
  Batch batch(m, args.n_envs, args.threads, args.ctrl_noise, args.seed);
  const simprof::StageId physics = prof.stage_id("physics");
  const PhaseStages phases(prof);
  std::optional<simprof::EngineZones> zones;
  std::optional<simprof::TraceSession> trace;
  if (!args.trace.empty()) {
    zones.emplace(prof, "physics");
    batch.set_zones(&*zones);
    simprof::TraceOptions topt;
    topt.schedule.warmup = 2;
    topt.schedule.active = 3;
    topt.schedule.wait = std::max(0, args.steps / 2 - 5);
    topt.dir = args.trace;
    trace.emplace(prof, topt);
  }
  if (print)
    fmt::print(
        "mujoco_example: {} ({} bodies, {} dofs, {} actuators, dt {}), {} envs over {} thread{}, "
        "{} steps, ctrl noise {} (MuJoCo {}, clock {})\n",
        args.model, m->nbody, m->nv, m->nu, m->opt.timestep, args.n_envs, args.threads,
        args.threads > 1 ? "s" : "", args.steps, args.ctrl_noise, mj_versionString(),
        simprof::to_string(prof.clock().source()));

  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < args.steps; ++i) {
    auto step = prof.step();
    auto s = prof.stage(physics);  // the loop's thread: wall time of the parallel step
    batch.step(i, true);
    phases.record(prof, batch);
  }
  RunResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  prof.fps().flush();
  r.fps = prof.fps().total_fps();
  if (trace) {
    trace.reset();  // writes a window still open
    batch.set_zones(nullptr);
    zones.reset();
  }

  const auto phys = prof.stats(physics);
  r.env_steps_per_s = args.n_envs / phys.mean;
  double mj_step_total = 0;
  for (const Env& env : batch.envs()) mj_step_total += env.d->timer[mjTIMER_STEP].duration;
  r.mujoco_steps_per_s = static_cast<double>(args.n_envs) * args.steps / mj_step_total;
  r.rate_ok = args.threads == 1 ? agrees(1 / r.mujoco_steps_per_s, 1 / r.env_steps_per_s) : true;
  r.ok = r.rate_ok;
  for (std::size_t p = 0; p < kNumPhases; ++p) {
    PhaseLine line;
    line.name = mjTIMERSTRING[kPhases[p]];
    double total = 0;
    int number = 0;
    for (const Env& env : batch.envs()) {
      total += env.d->timer[kPhases[p]].duration;
      number += env.d->timer[kPhases[p]].number;
    }
    if (number == 0) continue;
    line.mujoco_ms = 1e3 * total / args.steps;  // per loop step, summed over the envs
    const auto st = prof.stats(phases.ids[p]);
    line.ran = st.count;
    line.simprof_mean_ms = 1e3 * st.mean;
    line.simprof_ms = 1e3 * st.mean * static_cast<double>(st.count) / args.steps;
    line.ok = agrees(line.mujoco_ms * 1e-3, line.simprof_ms * 1e-3);
    r.ok = r.ok && line.ok;
    r.phases.push_back(line);
  }
  r.stages = simprof::examples::stage_rows_json(simprof::stage_rows(prof));
  r.fps_line = simprof::examples::fps_json(prof.fps());
  if (!print) return r;

  fmt::print("\n{}", simprof::stage_table(prof));
  fmt::print(
      "physics: the loop thread's wall time of the parallel step (ctrl noise + mj_step of every "
      "env).\nphysics/<phase>: MuJoCo's own timers (d->timer through mjcb_time), summed over the "
      "{} "
      "envs{}; the phases nest (step > forward > position > pos_*), so they do not add up.\n",
      args.n_envs,
      args.threads > 1
          ? fmt::format(" = CPU time summed across {} threads, so they can exceed physics",
                        args.threads)
          : std::string());
  const Env& env0 = batch.envs().front();
  fmt::print("env 0: {:.2f} contacts, {:.2f} constraints per step; {} dofs\n",
             static_cast<double>(env0.contacts) / args.steps,
             static_cast<double>(env0.constraints) / args.steps, m->nv);
  if (!args.trace.empty()) fmt::print("trace written under {}\n", args.trace);

  fmt::print(
      "\nsimprof vs MuJoCo's own timers, same run (ms per step of the run: a phase's total over "
      "the {} steps, summed over {} envs; simprof's = mean x steps that ran it / steps; agreement: "
      "within 5 % or 1 us)\n",
      args.steps, args.n_envs);
  fmt::print("  {:<16} {:>12} {:>12} {:>10}  {:<8} {}\n", "phase", "MuJoCo ms", "simprof ms",
             "diff", "verdict", "ran in");
  for (const auto& l : r.phases)
    fmt::print("  {:<16} {:>12.5f} {:>12.5f} {:>10}  {:<8} {} of {} steps\n", l.name, l.mujoco_ms,
               l.simprof_ms, pct(l.mujoco_ms, l.simprof_ms), l.ok ? "ok" : "DIFFERS", l.ran,
               args.steps);
  if (args.threads == 1)
    fmt::print("  {:<16} {:>12.0f} {:>12.0f} {:>10}  {}\n", "env-steps/s", r.mujoco_steps_per_s,
               r.env_steps_per_s, pct(r.mujoco_steps_per_s, r.env_steps_per_s),
               r.rate_ok ? "ok" : "DIFFERS");
  else
    fmt::print(
        "  {:<16} {:>12.0f} {:>12.0f} {:>10}  not judged: MuJoCo's is per thread (CPU time), "
        "simprof's is wall\n",
        "env-steps/s", r.mujoco_steps_per_s, r.env_steps_per_s,
        pct(r.mujoco_steps_per_s, r.env_steps_per_s));
  fmt::print(
      "  (MuJoCo env-steps/s: n_envs x steps / sum of timer[step]; simprof: n_envs / mean physics; "
      "simprof's FPS tracker: {})\n",
      std::isnan(r.fps) ? std::string("no sample") : simprof::format_thousands(r.fps));
  fmt::print("comparison with MuJoCo's timers: {}\n",
             r.ok ? "ok" : "DIFFERS (beyond 5 % and 1 us)");
  return r;
}

// --- cost: simprof on vs off, interleaved -----------------------------------------------------

// The cost, and in `loop_s` simprof's own time on the loop's thread in each on step, seconds.
simprof::examples::OnOffCost measure_cost(const Args& args, const mjModel* m, int threads,
                                          std::vector<double>& loop_s) {
  simprof::ProfilingOptions options = simprof::ProfilingOptions::from_env();
  options.show_fps = false;
  options.stats_window = static_cast<std::size_t>(args.cost_steps);
  simprof::StepProfiler prof(options, args.n_envs);
  Batch batch(m, args.n_envs, threads, args.ctrl_noise, args.seed);
  const simprof::StageId physics = prof.stage_id("physics");
  const PhaseStages phases(prof);
  int i = 0;
  const simprof::Clock& clock = prof.clock();
  loop_s.clear();
  loop_s.reserve(static_cast<std::size_t>(args.cost_rounds + 1) *
                 static_cast<std::size_t>(args.cost_steps));
  auto timed = [&](bool on) {
    return simprof::examples::time_run([&] {
      for (int k = 0; k < args.cost_steps; ++k, ++i) {
        if (on) {
          // simprof's own time on the loop's thread (the pool waits for it): t1 - t0 + end - t2.
          const std::int64_t t0 = clock.now();
          std::int64_t t1 = 0, t2 = 0;
          {
            auto step = prof.step();
            auto s = prof.stage(physics);
            t1 = clock.now();
            batch.step(i, true);
            t2 = clock.now();
            phases.record(prof, batch);
          }
          loop_s.push_back(clock.seconds(clock.now() - t2 + t1 - t0));
        } else {
          batch.step(i, false);
        }
      }
    });
  };
  timed(true);  // warm-up: first touches, stage registration
  timed(false);
  loop_s.clear();
  return simprof::examples::measure_on_off(args.cost_rounds, timed);
}

int run_cost(const Args& args, const mjModel* m) {
  fmt::print(
      "mujoco_example --cost: {}, {} envs, ctrl noise {}; {} rounds of runs of {} steps, on / off "
      "/ "
      "off' / off (on: step + physics scopes + {} records per step; off: the bare loop; each on "
      "run and each off' run, the null pair, against the off runs either side; mjcb_time "
      "installed in all)\n",
      args.model, args.n_envs, args.ctrl_noise, args.cost_rounds, args.cost_steps, kNumPhases);
  std::vector<int> counts = {1};
  if (args.threads > 1) counts.push_back(args.threads);
  bool ok = true;
  double base = 0;
  for (const int t : counts) {
    std::vector<double> loop_steps_s;
    const simprof::examples::OnOffCost c = measure_cost(args, m, t, loop_steps_s);
    const double off_rate = args.n_envs * args.cost_steps / c.off_wall_s;
    const double loop_s = median(loop_steps_s);  // the median on step's
    const double off_step_s = c.off_wall_s / args.cost_steps;
    if (t == 1) base = off_rate;
    ok = ok && c.resolved(1.0) && c.cost_pct <= 1.0;
    fmt::print(
        "  {} thread{}: off {} env-steps/s, on {} env-steps/s (medians); cost {:+.2f} % "
        "({}); simprof on the loop's thread {:.2f} us a step ({:.3f} % of {:.1f} us){}\n{}",
        t, t > 1 ? "s" : "", simprof::format_thousands(off_rate, 0),
        simprof::format_thousands(args.n_envs * args.cost_steps / c.on_wall_s, 0), c.cost_pct,
        c.verdict(1.0), 1e6 * loop_s, 100 * loop_s / off_step_s, 1e6 * off_step_s,
        t > 1 ? fmt::format("; scaling {:.2f}x over 1 thread", off_rate / base) : std::string(),
        c.details("    "));
  }
  fmt::print("cost: {}\n",
             ok ? "ok (within 1 %)" : "not shown within 1 % (rerun on an idle machine)");
  return ok ? 0 : 3;
}

}  // namespace
}  // namespace simprof::examples::mujoco

int main(int argc, char** argv) {
  using namespace simprof::examples::mujoco;
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mujoco_example: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    std::optional<simprof::examples::JsonFile> json;
    if (!args.json.empty()) json.emplace(args.json);  // a bad path fails before the run
    const Model model(args.model);
    mjcb_time = mj_clock;  // MuJoCo measures its phases (d->timer), as testspeed's profile mode
    if (args.cost) return run_cost(args, model.m);

    std::vector<Testspeed> ts;
    std::vector<RunResult> mine;
    const int runs = args.compare_testspeed ? args.compare_runs : 1;
    if (args.compare_testspeed) pin_to_this_cpu();  // testspeed, a child, inherits it
    for (int k = 0; k < runs; ++k) {  // in turn: testspeed, this example, ..., testspeed
      if (args.compare_testspeed) ts.push_back(run_testspeed(args));
      mine.push_back(run(args, model.m, k == runs - 1));
    }
    const RunResult& r = mine.back();
    bool ok = r.ok;
    if (args.compare_testspeed) {
      ts.push_back(run_testspeed(args));
      ok = compare_testspeed(ts, mine) && ok;
    }
    if (json) {
      using simprof::examples::Json;
      Json j = simprof::examples::record_head("simprof examples/mujoco", args.command,
                                              {{"model", args.model},
                                               {"n_envs", args.n_envs},
                                               {"threads", args.threads},
                                               {"ctrl_noise", args.ctrl_noise}});
      j.update(Json{{"example", "mujoco"},
                    {"model", args.model},
                    {"mujoco", mj_versionString()},
                    {"n_envs", args.n_envs},
                    {"threads", args.threads},
                    {"steps", args.steps},
                    {"ctrl_noise", args.ctrl_noise},
                    {"seed", args.seed},
                    {"seconds", r.seconds},
                    {"env_steps_per_s", r.env_steps_per_s},
                    {"mujoco_env_steps_per_s", r.mujoco_steps_per_s},
                    {"phases_summed_over", "envs"},
                    {"stages", r.stages},
                    {"fps", r.fps_line},
                    {"agrees", r.ok}});
      for (const auto& l : r.phases)
        j["phases"].push_back({{"phase", l.name},
                               {"mujoco_ms", l.mujoco_ms},
                               {"simprof_ms", l.simprof_ms},
                               {"simprof_mean_ms", l.simprof_mean_ms},
                               {"ran_steps", l.ran},
                               {"agrees", l.ok}});
      for (const auto& t : ts) j["testspeed_steps_per_s"].push_back(t.steps_per_s);
      json->write(j);
      std::printf("wrote %s\n", args.json.c_str());
    }
    return ok ? 0 : 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mujoco_example: %s\n", e.what());
    return 1;
  }
}
