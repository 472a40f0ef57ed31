// SPDX-License-Identifier: MIT
// The MuJoCo example's batch: MuJoCo's clock (mjcb_time), the model, one mjData an env, the
// threads stepping them, the phases recorded as stages, and what a run's agreement holds.
// Included by main.cpp only.
#pragma once

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

#include "args.hpp"
#include "cli.hpp"
#include "simprof/simprof.hpp"

namespace simprof::examples::mujoco {

// --- MuJoCo's clock: mjcb_time, as mujoco-testspeed installs it ---------------------------------
// testspeed returns seconds since its start from std::chrono::system_clock; steady_clock reads the
// same vDSO clock_gettime at the same cost and never jumps.
inline std::chrono::steady_clock::time_point g_t0 = std::chrono::steady_clock::now();
inline mjtNum mj_clock() {
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
  /// not every environment's timers.
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
inline bool agrees(double ref_s, double got_s) {
  return std::abs(got_s - ref_s) <= std::max(0.05 * std::abs(ref_s), 1e-6);
}
inline std::string pct(double ref, double got) {
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
  simprof::examples::Json fps_line;  // the FPS line and its unsmoothed rates
};

}  // namespace simprof::examples::mujoco
