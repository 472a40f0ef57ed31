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

namespace {

const char* const kUsage =
    "usage: mujoco_example [--model PATH] [--n-envs N] [--threads T] [--steps N]\n"
    "                      [--ctrl-noise X] [--seed S] [--trace DIR] [--json FILE] [--quiet]\n"
    "                      [--compare-testspeed] [--compare-runs N] [--testspeed PATH]\n"
    "                      [--cost] [--cost-rounds N] [--cost-steps N]\n"
    "  --model PATH          MJCF model (default /usr/share/mujoco/model/humanoid/humanoid.xml)\n"
    "  --n-envs N            environments, one mjData each (default 8; 1 with "
    "--compare-testspeed)\n"
    "  --threads T           threads stepping them, the loop's thread included (default 1)\n"
    "  --steps N             steps of every environment (default 1000; 5000 with "
    "--compare-testspeed)\n"
    "  --ctrl-noise X        control noise in [0, 1], as mujoco-testspeed's (default 0.01)\n"
    "  --seed S              env e's noise starts at Halton index (S * n_envs + e) * 100003\n"
    "                        (env 0 of seed 0: mujoco-testspeed's own sequence)\n"
    "  --trace DIR           a Chrome/Perfetto trace of 3 steps in the middle, under DIR\n"
    "  --json FILE           the run as JSON\n"
    "  --compare-testspeed   also run mujoco-testspeed on the same model and settings, in turn\n"
    "                        with this example's runs, and compare steps/s and its phase table\n"
    "                        (1 env, 1 thread; medians)\n"
    "  --compare-runs N      runs of this example (N + 1 of testspeed) to take medians of (3)\n"
    "  --cost                steps/s with simprof on vs off, interleaved, at 1 and T threads\n";

struct Args {
  std::string model = "/usr/share/mujoco/model/humanoid/humanoid.xml";
  int n_envs = -1;  // -1: the default (8, or 1 with --compare-testspeed)
  int threads = -1;
  int steps = -1;
  double ctrl_noise = 0.01;
  int seed = 0;
  std::string trace;
  std::string json;
  std::string command;  // as typed: the --json file's provenance
  bool quiet = false;
  bool compare_testspeed = false;
  std::string testspeed = "/usr/bin/mujoco-testspeed";
  int compare_runs = 3;
  bool cost = false;
  int cost_rounds = 21;
  int cost_steps = 100;
};

Args parse_args(int argc, char** argv) {
  Args a;
  simprof::cli::Flags(kUsage)
      .text("--model", a.model)
      .integer("--n-envs", a.n_envs, 1)
      .integer("--threads", a.threads, 1, 512)
      .integer("--steps", a.steps, 1)
      .real("--ctrl-noise", a.ctrl_noise, 0.0, 1.0)
      .integer("--seed", a.seed, 0)
      .text("--trace", a.trace)
      .text("--json", a.json)
      .flag("--quiet", a.quiet)
      .flag("--compare-testspeed", a.compare_testspeed)
      .text("--testspeed", a.testspeed)
      .integer("--compare-runs", a.compare_runs, 1)
      .flag("--cost", a.cost)
      .integer("--cost-rounds", a.cost_rounds, 1)
      .integer("--cost-steps", a.cost_steps, 1)
      .parse(argc, argv);
  a.command = simprof::examples::command_line(argc, argv);
  if (a.compare_testspeed) {
    if (a.n_envs > 1 || a.threads > 1)
      throw std::invalid_argument(fmt::format(
          "--compare-testspeed runs 1 env on 1 thread, as mujoco-testspeed does (got --n-envs {} "
          "--threads {})",
          a.n_envs, a.threads));
    if (a.cost) throw std::invalid_argument("--compare-testspeed and --cost are separate runs");
    a.n_envs = 1;
    a.threads = 1;
    if (a.steps < 0) a.steps = 5000;
  }
  if (a.n_envs < 0) a.n_envs = 8;
  if (a.threads < 0) a.threads = 1;
  if (a.steps < 0) a.steps = 1000;
  if (a.threads > a.n_envs)
    throw std::invalid_argument(fmt::format(
        "--threads {}: more threads than environments (--n-envs {})", a.threads, a.n_envs));
  return a;
}

// --- MuJoCo's clock: mjcb_time, as mujoco-testspeed installs it ---------------------------------
// testspeed returns seconds since its start from std::chrono::system_clock; steady_clock reads the
// same vDSO clock_gettime at the same cost and never jumps.
std::chrono::steady_clock::time_point g_t0 = std::chrono::steady_clock::now();
mjtNum mj_clock() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - g_t0).count();
}

// The phases mj_step times (MuJoCo 2.2.2's mjtTimer; mjTIMER_INVERSE is mj_inverse's, not run).
constexpr std::array<int, 12> kPhases = {
    mjTIMER_STEP,        mjTIMER_FORWARD,       mjTIMER_POSITION,   mjTIMER_VELOCITY,
    mjTIMER_ACTUATION,   mjTIMER_ACCELERATION,  mjTIMER_CONSTRAINT, mjTIMER_POS_KINEMATICS,
    mjTIMER_POS_INERTIA, mjTIMER_POS_COLLISION, mjTIMER_POS_MAKE,   mjTIMER_POS_PROJECT};
constexpr std::size_t kNumPhases = kPhases.size();

struct Model {
  mjModel* m = nullptr;
  explicit Model(const std::string& path) {
    char error[1000] = "";
    m = mj_loadXML(path.c_str(), nullptr, error, sizeof error);
    if (m == nullptr)
      throw std::runtime_error(fmt::format("--model {}: {}", path,
                                           error[0] ? error : "MuJoCo could not load the model"));
  }
  ~Model() { mj_deleteModel(m); }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
};

struct alignas(64) Env {  // one per cache line or more: threads never share a line
  mjData* d = nullptr;
  int halton_offset = 0;
  std::array<double, kNumPhases> seen{};  // d->timer[phase].duration at the latest record
  long contacts = 0, constraints = 0;
};

// The environments and the threads that step them: a persistent pool of T - 1 workers; the loop's
// thread steps chunk 0 itself, so with T = 1 no thread is made at all.
class Batch {
 public:
  Batch(const mjModel* m, int n_envs, int threads, double ctrl_noise, int seed)
      : m_(m), ctrl_noise_(ctrl_noise), threads_(threads) {
    const int testkey = mj_name2id(m, mjOBJ_KEY, "test");
    envs_.resize(static_cast<std::size_t>(n_envs));
    for (int e = 0; e < n_envs; ++e) {
      Env& env = envs_[static_cast<std::size_t>(e)];
      env.d = mj_makeData(m);
      if (env.d == nullptr) throw std::runtime_error("MuJoCo could not allocate mjData");
      if (testkey >= 0) {  // testspeed's keyframe "test"
        mju_copy(env.d->qpos, m->key_qpos + testkey * m->nq, m->nq);
        mju_copy(env.d->qvel, m->key_qvel + testkey * m->nv, m->nv);
        mju_copy(env.d->act, m->key_act + testkey * m->na, m->na);
      }
      env.halton_offset =
          static_cast<int>((static_cast<long>(seed) * n_envs + e) * 100003L % (1L << 30));
    }
    sums_.resize(static_cast<std::size_t>(threads));
    for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { worker(t); });
  }
  ~Batch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    go_.notify_all();
    for (auto& w : workers_) w.join();
    for (auto& env : envs_) mj_deleteData(env.d);
  }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  /// MuJoCo's phase times of one thread's environments in the latest step: each thread sums its
  /// own, on its own core where their mjData is hot, so that the loop's thread reads T rows and
  /// not every environment's timers (which at 8 threads cost it +1.8 % of the step in cache
  /// misses).
  struct alignas(64) PhaseSums {
    std::array<double, kNumPhases> seconds{};
    std::array<bool, kNumPhases> ran{};
  };

  /// Step `i` of every environment, over the threads; returns when all are done. With `phases`,
  /// each thread also sums its environments' phase times since the previous such step into
  /// phase_sums().
  void step(int i, bool phases) {
    phases_ = phases;  // published to the workers by generation_'s release
    if (threads_ > 1) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        step_index_.store(i, std::memory_order_relaxed);
        pending_.store(threads_ - 1, std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
      }
      go_.notify_all();
    }
    run_chunk(0, i);
    if (threads_ > 1) {
      // Spin briefly (the workers are usually about to finish), then sleep.
      for (int k = 0; k < kSpins && pending_.load(std::memory_order_acquire) != 0; ++k)
        std::this_thread::yield();
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
    }
  }
  /// With zones set, each env's step is a zone "mj_step" (worker threads: their own trace track).
  void set_zones(simprof::EngineZones* zones) { zones_ = zones; }
  std::vector<Env>& envs() { return envs_; }
  std::vector<PhaseSums>& phase_sums() { return sums_; }
  int threads() const { return threads_; }

 private:
  static constexpr int kSpins = 200;  // yields before a thread sleeps on its condition variable

  void worker(int t) {
    std::uint64_t seen = 0;
    for (;;) {
      for (int k = 0; k < kSpins && generation_.load(std::memory_order_acquire) == seen; ++k)
        std::this_thread::yield();
      {
        std::unique_lock<std::mutex> lock(mutex_);
        go_.wait(lock,
                 [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
        if (stop_) return;
        seen = generation_.load(std::memory_order_acquire);
      }
      run_chunk(t, step_index_.load(std::memory_order_relaxed));
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);  // the loop's thread checks under the lock
        done_.notify_one();
      }
    }
  }
  // Thread t steps a contiguous chunk of the environments.
  // PREFETCHW on x86-64 (GCC emits a read prefetch for the builtin without -mprfchw; a CPU
  // without PREFETCHW runs it as a NOP).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static void prefetch_for_write(const void* p) {
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
  }
#elif defined(__GNUC__) || defined(__clang__)
  static void prefetch_for_write(const void* p) { __builtin_prefetch(p, 1); }
#else
  static void prefetch_for_write(const void*) {}
#endif
  void run_chunk(int t, int i) {
    const std::size_t n = envs_.size(), T = static_cast<std::size_t>(threads_);
    const std::size_t begin = n * static_cast<std::size_t>(t) / T;
    const std::size_t end = n * static_cast<std::size_t>(t + 1) / T;
    if (phases_) {
      // The loop's thread read and zeroed this row at the previous step's end, so its lines are in
      // that core's cache: asked for now, for writing, they arrive while MuJoCo steps, rather than
      // stalling the row's first add (on the step's critical path: the loop waits for the slowest
      // thread) by a transfer from another core.
      const char* row = reinterpret_cast<const char*>(&sums_[static_cast<std::size_t>(t)]);
      for (std::size_t b = 0; b < sizeof(PhaseSums); b += 64) prefetch_for_write(row + b);
    }
    for (std::size_t e = begin; e < end; ++e) {
      Env& env = envs_[e];
      if (zones_) zones_->enter("mj_step");
      if (ctrl_noise_ > 0) add_ctrl_noise(env, i);
      mj_step(m_, env.d);
      if (phases_) {
        PhaseSums& sums = sums_[static_cast<std::size_t>(t)];
        for (std::size_t p = 0; p < kNumPhases; ++p) {
          const double now = env.d->timer[kPhases[p]].duration;
          if (now != env.seen[p]) sums.ran[p] = true;
          sums.seconds[p] += now - env.seen[p];
          env.seen[p] = now;
        }
      }
      env.contacts += env.d->ncon;
      env.constraints += env.d->nefc;
      if (zones_) zones_->leave();
    }
  }
  // mujoco-testspeed's control noise: a Halton sequence around the middle of each control range.
  void add_ctrl_noise(Env& env, int i) const {
    for (int j = 0; j < m_->nu; ++j) {
      mjtNum center = 0.0, radius = 1.0;
      const mjtNum* range = m_->actuator_ctrlrange + 2 * j;
      if (m_->actuator_ctrllimited[j]) {
        center = (range[1] + range[0]) / 2;
        radius = (range[1] - range[0]) / 2;
      }
      radius *= ctrl_noise_;
      env.d->ctrl[j] = center + radius * (2 * mju_Halton(env.halton_offset + i, j + 2) - 1);
    }
  }

  const mjModel* m_;
  double ctrl_noise_;
  int threads_;
  std::vector<Env> envs_;
  std::vector<PhaseSums> sums_;  // one per thread
  bool phases_ = false;
  std::vector<std::thread> workers_;
  simprof::EngineZones* zones_ = nullptr;
  std::mutex mutex_;
  std::condition_variable go_, done_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> step_index_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
};

// The stage ids of "physics/<phase>", and the hand-over of MuJoCo's timers after each step.
struct PhaseStages {
  std::array<simprof::StageId, kNumPhases> ids{};
  explicit PhaseStages(simprof::StepProfiler& prof) {
    for (std::size_t p = 0; p < kNumPhases; ++p) {
      ids[p] = prof.stage_id(std::string("physics/") + mjTIMERSTRING[kPhases[p]]);
      prof.set_stage_clock(ids[p], "mjcb_time");
    }
  }
  /// Records, for each phase, the time MuJoCo measured in it in the latest step(i, true), summed
  /// over the environments (CPU time summed across threads when T > 1), and clears the sums.
  void record(simprof::StepProfiler& prof, Batch& batch) const {
    auto& rows = batch.phase_sums();
    for (std::size_t p = 0; p < kNumPhases; ++p) {
      double sum = 0;
      bool ran = false;
      for (Batch::PhaseSums& row : rows) {
        sum += row.seconds[p];
        ran = ran || row.ran[p];
        row.seconds[p] = 0;
        row.ran[p] = false;
      }
      if (ran) prof.record(ids[p], std::max(0.0, sum));
    }
  }
};

// --- agreement --------------------------------------------------------------------------------
// Two figures agree when they differ by at most 5 % of the reference or 1 us.
bool agrees(double ref_s, double got_s) {
  return std::abs(got_s - ref_s) <= std::max(0.05 * std::abs(ref_s), 1e-6);
}
std::string pct(double ref, double got) {
  return ref != 0 ? fmt::format("{:+.2f} %", 100 * (got - ref) / ref) : std::string("n/a");
}

struct PhaseLine {
  std::string name;
  double mujoco_ms = 0, simprof_ms = 0;  // per step of the run: its total over the steps
  double simprof_mean_ms = 0;  // simprof's mean over the steps that ran it (testspeed: per call)
  std::size_t ran = 0;         // steps that ran it
  bool ok = false;
};

struct RunResult {
  double seconds = 0;             // the loop's wall time
  double env_steps_per_s = 0;     // n_envs / mean physics (simprof's stats)
  double mujoco_steps_per_s = 0;  // n_envs * steps / sum of timer[step] (per thread when T > 1)
  double fps = 0;
  std::vector<PhaseLine> phases;
  bool rate_ok = false;
  bool ok = false;
  simprof::examples::Json stages = simprof::examples::Json::array();
};

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
  r.stages = simprof::examples::stage_rows_json(simprof::stage_rows(prof), &prof);
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

// --- mujoco-testspeed -------------------------------------------------------------------------
struct Testspeed {
  double steps_per_s = 0;
  std::vector<std::pair<std::string, double>> phase_ms;  // in its table's order
};

// Both sides of the testspeed comparison on one CPU: a process moved between CPUs (or started on
// a slower one) runs at another speed, and separate processes are compared here.
void pin_to_this_cpu() {
  const int cpu = sched_getcpu();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu >= 0) CPU_SET(cpu, &set);
  if (cpu < 0 || sched_setaffinity(0, sizeof set, &set) != 0)
    fmt::print("mujoco_example: could not pin to one CPU ({}): the runs may move between CPUs\n",
               std::strerror(errno));
  else
    fmt::print("mujoco_example: this process and testspeed's runs pinned to CPU {}\n", cpu);
}

Testspeed run_testspeed(const Args& args) {
  const std::string cmd = fmt::format("'{}' '{}' {} 1 {} 1 2>&1", args.testspeed, args.model,
                                      args.steps, args.ctrl_noise);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr)
    throw std::runtime_error(
        fmt::format("--testspeed {}: {}", args.testspeed, std::strerror(errno)));
  std::string out;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p)) out += buf.data();
  const int rc = pclose(p);
  Testspeed t;
  bool in_table = false;
  std::size_t pos = 0;
  while (pos < out.size()) {
    std::size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) nl = out.size();
    const std::string line = out.substr(pos, nl - pos);
    pos = nl + 1;
    double v = 0;
    char name[64] = "";
    if (std::sscanf(line.c_str(), " Steps per second : %lf", &v) == 1) t.steps_per_s = v;
    if (line.find("Profiler phase") != std::string::npos)
      in_table = true;
    else if (in_table && std::sscanf(line.c_str(), " %63s : %lf", name, &v) == 2)
      t.phase_ms.emplace_back(name, v);
  }
  if (rc != 0 || t.steps_per_s <= 0 || t.phase_ms.empty())
    throw std::runtime_error(
        fmt::format("{} failed or printed no profile (exit {}):\n{}", cmd, rc, out));
  return t;
}

using simprof::examples::median;

// Medians over the testspeed runs and over this example's runs (taken in turn), compared.
bool compare_testspeed(const std::vector<Testspeed>& ts, const std::vector<RunResult>& mine) {
  fmt::print(
      "\nsimprof vs mujoco-testspeed (1 env, 1 thread, same model, steps and ctrl noise): {} "
      "testspeed runs taken in turn with {} runs of this example, all on one CPU; diff: the median "
      "of each example run against the two testspeed runs around it (phases in ms per call, as "
      "testspeed prints them = simprof's mean over the steps that ran them); agreement: within "
      "5 % or 1 us\n",
      ts.size(), mine.size());
  fmt::print("  {:<18} {:>11} {:>23} {:>11} {:>10}  {}\n", "", "testspeed", "(min .. max)",
             "simprof", "paired diff", "verdict");
  // Example run k ran between testspeed runs k and k + 1: each is compared with the mean of the
  // two around it, and the median of those paired differences is the verdict's (a machine that
  // drifts, or switches between a fast and a slow state, moves both sides of a pair together).
  auto line = [](const std::string& name, const std::vector<double>& theirs,
                 const std::vector<double>& ours, bool rate) {
    const double t = median(theirs), o = median(ours);
    std::vector<double> paired;  // rate: ours / theirs; phases: ours - theirs, ms
    for (std::size_t k = 0; k < ours.size() && k + 1 < theirs.size(); ++k) {
      const double around = (theirs[k] + theirs[k + 1]) / 2;
      paired.push_back(rate ? ours[k] / around : ours[k] - around);
    }
    const double d = median(paired);
    const bool ok = rate ? agrees(1 / t, 1 / (t * d)) : agrees(t * 1e-3, (t + d) * 1e-3);
    const auto [lo, hi] = std::minmax_element(theirs.begin(), theirs.end());
    const std::string diff = rate ? fmt::format("{:+.2f} %", 100 * (d - 1)) : pct(t, t + d);
    fmt::print(rate ? "  {:<18} {:>11.0f} {:>10.0f} .. {:>10.0f} {:>11.0f} {:>10}  {}\n"
                    : "  {:<18} {:>11.5f} {:>10.5f} .. {:>10.5f} {:>11.5f} {:>10}  {}\n",
               name, t, *lo, *hi, o, diff, ok ? "ok" : "DIFFERS");
    return ok;
  };
  std::vector<double> theirs, ours;
  for (const auto& t : ts) theirs.push_back(t.steps_per_s);
  for (const auto& r : mine) ours.push_back(r.env_steps_per_s);
  bool ok = line("steps/s", theirs, ours, true);
  for (const auto& phase : ts.front().phase_ms) {
    theirs.clear();
    ours.clear();
    for (const auto& t : ts)
      for (const auto& [n, v] : t.phase_ms)
        if (n == phase.first) theirs.push_back(v);
    for (const auto& r : mine)
      for (const auto& l : r.phases)
        if (l.name == phase.first) ours.push_back(l.simprof_mean_ms);
    if (theirs.empty() || ours.empty()) continue;
    ok = line(phase.first + " ms", theirs, ours, false) && ok;
  }
  fmt::print("comparison with mujoco-testspeed: {}\n",
             ok ? "ok"
                : "DIFFERS (beyond 5 % and 1 us: separate processes timed in turn; rerun "
                  "on an idle machine, or with more --compare-runs)");
  return ok;
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

int main(int argc, char** argv) {
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
      Json j = {
          {"provenance", simprof::examples::provenance("simprof examples/mujoco", args.command)},
          {"example", "mujoco"},
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
          {"fps", simprof::examples::number(r.fps)},
          {"phases_summed_over", "envs"},
          {"stages", r.stages},
          {"agrees", r.ok}};
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
