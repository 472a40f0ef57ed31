// SPDX-License-Identifier: MIT
#include "demo_engine/cpu_engine.hpp"

#include <chrono>
#include <stdexcept>
#include <string>

namespace simprof::engine {

CpuEngine::CpuEngine(const Params& params, int n_envs, std::uint32_t seed)
    : params_(params), n_envs_(n_envs) {
  if (n_envs <= 0)
    throw std::invalid_argument("CpuEngine: n_envs = " + std::to_string(n_envs) +
                                " (expected > 0)");
  const std::size_t n = static_cast<std::size_t>(n_envs) * params.n_spheres;
  for (auto* v : {&px_, &py_, &pz_, &vx_, &vy_, &vz_, &fx_, &fy_, &fz_}) v->assign(n, 0.0f);
  imu_prev_.assign(3 * static_cast<std::size_t>(n_envs), 0.0f);
  imu_.assign(6 * static_cast<std::size_t>(n_envs), 0.0f);
  depth_.assign(static_cast<std::size_t>(n_envs) * params.image_width * params.image_height, 0.0f);
  record_.assign(static_cast<std::size_t>(n_envs) * params.record_frames * 4, 0.0f);
  targets_.assign(3 * static_cast<std::size_t>(n_envs), 0.0f);
  const State s = state();
  for (int e = 0; e < n_envs; ++e) init_env(e, params_, s, seed);
}

State CpuEngine::state() {
  return State{px_.data(), py_.data(), pz_.data(), vx_.data(), vy_.data(),
               vz_.data(), fx_.data(), fy_.data(), fz_.data()};
}

Sensors CpuEngine::sensors() {
  return Sensors{imu_prev_.data(), imu_.data(), depth_.data(), record_.data()};
}

void CpuEngine::attach(StepProfiler& prof) { prof_ = &prof; }

namespace {

// docs/comparing.md's CI example: a build whose contacts take `percent` longer, on purpose.
#ifndef SIMPROF_DEMO_SLOW_CONTACTS_PERCENT
#define SIMPROF_DEMO_SLOW_CONTACTS_PERCENT 0
#endif
constexpr int kSlowContactsPercent = SIMPROF_DEMO_SLOW_CONTACTS_PERCENT;

// Waits until the time since `start` is (100 + percent) % of what it was when called.
void slow_down(std::chrono::steady_clock::time_point start, int percent) {
  if (percent <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  const auto until = now + (now - start) * percent / 100;
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

void CpuEngine::step() {
  const State s = state();
  {
    SIMPROF_STAGE(prof_, "physics");
    for (int sub = 0; sub < params_.substeps; ++sub) {
      {
        SIMPROF_STAGE(prof_, "physics/forces");
        for (int e = 0; e < n_envs_; ++e) external_forces_env(e, params_, s);
      }
      {
        SIMPROF_STAGE(prof_, "physics/contacts");
        const auto start = std::chrono::steady_clock::now();
        for (int e = 0; e < n_envs_; ++e) contacts_env(e, params_, s);
        slow_down(start, kSlowContactsPercent);
      }
      {
        SIMPROF_STAGE(prof_, "physics/integrate");
        for (int e = 0; e < n_envs_; ++e) integrate_env(e, params_, s);
      }
    }
  }
  sensors_step();
}

void CpuEngine::sensors_step() {
  const State s = state();
  const Sensors out = sensors();
  {
    SIMPROF_STAGE(prof_, "sensors/Imu");
    for (int e = 0; e < n_envs_; ++e) imu_env(e, params_, s, out);
  }
  {
    SIMPROF_STAGE(prof_, "rendering");
    for (int e = 0; e < n_envs_; ++e) render_env(e, params_, s, out);
  }
  {
    SIMPROF_STAGE(prof_, "recorders");
    for (int e = 0; e < n_envs_; ++e) record_env(e, frame_, params_, s, out);
  }
  ++frame_;
}

void CpuEngine::step_solver(const TimerView* timers) {
  const State s = state();
  const float* target = params_.control_gain > 0.0f ? targets_.data() : nullptr;
  {
    SIMPROF_STAGE(prof_, "physics");
    for (int e = 0; e < n_envs_; ++e) {
      if (timers) {
        TimerChain<> chain(*timers, e);
        solver_env(e, params_, s, target, chain);
      } else {
        NoTimers chain;
        solver_env(e, params_, s, target, chain);
      }
    }
  }
  sensors_step();
}

void CpuEngine::set_targets(const std::vector<float>& targets) {
  if (targets.size() != targets_.size())
    throw std::invalid_argument("CpuEngine::set_targets: " + std::to_string(targets.size()) +
                                " floats (expected 3 per env: " + std::to_string(targets_.size()) +
                                ")");
  targets_ = targets;
}

std::vector<float> CpuEngine::snapshot() const {
  std::vector<float> out;
  out.reserve(px_.size() * 6);
  for (const auto* v : {&px_, &py_, &pz_, &vx_, &vy_, &vz_})
    out.insert(out.end(), v->begin(), v->end());
  return out;
}

}  // namespace simprof::engine
