// SPDX-License-Identifier: MIT
// The example engine behind speed_benchmark: deterministic, physically sane, and instrumented with
// the stages the benchmark reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "demo_engine/cpu_engine.hpp"
#include "simprof/base/manual_clock.hpp"
#include "simprof/timers/timer_stats.hpp"

using simprof::engine::CpuEngine;
using simprof::engine::Params;

TEST(Engine, SameSeedSameTrajectory) {
  Params p;
  CpuEngine a(p, 16, 7), b(p, 16, 7), c(p, 16, 8);
  for (int i = 0; i < 200; ++i) {
    a.step();
    b.step();
    c.step();
  }
  EXPECT_EQ(a.snapshot(), b.snapshot());
  EXPECT_NE(a.snapshot(), c.snapshot());
}

TEST(Engine, FreeFallMatchesSemiImplicitEuler) {
  Params p;
  p.n_spheres = 1;
  CpuEngine e(p, 1);
  auto s = e.state();
  s.px[0] = s.py[0] = 0.0f;
  s.pz[0] = 0.8f;
  s.vx[0] = s.vy[0] = s.vz[0] = 0.0f;
  const int n = 10 * p.substeps;  // 10 steps, no contact yet
  for (int i = 0; i < 10; ++i) e.step();
  // v_k = k g dt; z_n = z0 + g dt^2 n (n + 1) / 2
  const double g = p.gravity, dt = p.dt;
  EXPECT_NEAR(s.vz[0], g * dt * n, 1e-5);
  EXPECT_NEAR(s.pz[0], 0.8 + g * dt * dt * n * (n + 1) / 2.0, 1e-5);
  EXPECT_FLOAT_EQ(s.px[0], 0.0f);
}

TEST(Engine, SpheresStayInTheBoxAndSettle) {
  Params p;
  CpuEngine e(p, 32);
  auto energy = [&] {  // kinetic + gravitational
    double sum = 0;
    auto s = e.state();
    for (int k = 0; k < 32 * p.n_spheres; ++k)
      sum += 0.5 * p.mass * (s.vx[k] * s.vx[k] + s.vy[k] * s.vy[k] + s.vz[k] * s.vz[k]) -
             p.mass * p.gravity * s.pz[k];
    return sum;
  };
  const double start = energy();
  for (int i = 0; i < 2000; ++i) e.step();
  auto s = e.state();
  const float slack = 0.5f * p.radius;  // penalty contacts allow some penetration
  for (int k = 0; k < 32 * p.n_spheres; ++k) {
    ASSERT_TRUE(std::isfinite(s.px[k]) && std::isfinite(s.vz[k])) << k;
    EXPECT_GE(s.pz[k], p.radius - slack) << k;
    EXPECT_LE(std::fabs(s.px[k]), p.half_width - p.radius + slack) << k;
    EXPECT_LE(std::fabs(s.py[k]), p.half_width - p.radius + slack) << k;
  }
  // The contact dampers only take energy out: no contact may create it.
  EXPECT_LT(energy(), start);
}

TEST(Engine, DepthCameraSeesASphereInFront) {
  Params p;
  p.n_spheres = 1;
  p.radius = 0.2f;
  CpuEngine e(p, 1);
  auto s = e.state();
  s.px[0] = 0.0f;
  s.py[0] = 0.0f;
  s.pz[0] = 0.5f;  // straight ahead of the camera at (0, -1.6, 0.5)
  simprof::engine::render_env(0, p, s, e.sensors());
  const float* img = e.sensors().depth;
  const float centre = img[(p.image_height / 2) * p.image_width + p.image_width / 2];
  EXPECT_GT(centre, 1.6f - p.radius - 1e-4f);  // on the sphere's near half
  EXPECT_LT(centre, 1.6f);
  EXPECT_FLOAT_EQ(img[0], 4.0f);  // top-left corner: nothing there
}

TEST(Engine, ReportsTheGenesisStages) {
  simprof::ManualClock mc;
  simprof::ProfilingOptions o;
  o.show_fps = false;
  simprof::StepProfiler prof(o, 4, mc.clock());
  CpuEngine e(Params{}, 4);
  e.attach(prof);
  for (int i = 0; i < 2; ++i) {
    auto step = prof.step();
    e.step();
  }
  for (const char* stage : {"physics", "physics/forces", "physics/contacts", "physics/integrate",
                            "sensors", "sensors/Imu", "rendering", "recorders", "step", "period"})
    EXPECT_TRUE(prof.timings().contains(stage)) << stage;
}

TEST(Engine, FusedSolverMatchesStagedStepAndTimingDoesNotChangePhysics) {
  Params p;
  CpuEngine staged(p, 8, 3), fused(p, 8, 3), timed(p, 8, 3);
  simprof::TimerBuffer timers({"solve", "forces", "contacts", "integrate"}, 8);
  simprof::TimerView v = timers.view();
  for (int i = 0; i < 100; ++i) {
    staged.step();
    fused.step_solver(nullptr);
    timed.step_solver(&v);
  }
  EXPECT_EQ(staged.snapshot(), fused.snapshot());
  EXPECT_EQ(fused.snapshot(), timed.snapshot());
  const simprof::TimerFrame f = timers.read();
  for (int e = 0; e < 8; ++e)
    EXPECT_EQ(f.ticks(simprof::engine::kSolve, e), f.ticks(simprof::engine::kForces, e) +
                                                       f.ticks(simprof::engine::kContacts, e) +
                                                       f.ticks(simprof::engine::kIntegrate, e));
}

// The iterative contact solver's per-env functions (physics.hpp pbd_*), on the host: the loop
// ContactSolver runs on the GPU (tests/cuda/test_techniques.cu checks the device side).
namespace {

struct PbdEnv {
  Params p;
  std::vector<float> a[12];  // px py pz vx vy vz fx fy fz x0 y0 z0
  explicit PbdEnv(int spheres) {
    p.n_spheres = spheres;
    for (auto& v : a) v.assign(static_cast<std::size_t>(spheres), 0.0f);
  }
  simprof::engine::State state() {
    return {a[0].data(), a[1].data(), a[2].data(), a[3].data(), a[4].data(),
            a[5].data(), a[6].data(), a[7].data(), a[8].data()};
  }
  simprof::engine::FrameStart start() { return {a[9].data(), a[10].data(), a[11].data()}; }
  // Passes until a pass finds no penetration above tol (as ContactSolver's loop), at most max.
  int solve(float tol, int max) {
    int passes = 0;
    float residual = 0;
    do {
      residual = simprof::engine::pbd_project_env(0, p, state());
      ++passes;
    } while (residual > tol && passes < max);
    return passes;
  }
};

}  // namespace

TEST(ContactSolver, AFreeSphereConvergesInOnePass) {
  PbdEnv env(1);
  env.a[2][0] = 0.5f;  // mid-air
  simprof::engine::pbd_predict_env(0, env.p, env.state(), env.start());
  EXPECT_EQ(env.solve(1e-5f, 32), 1);
  simprof::engine::pbd_finish_env(0, env.p, env.state(), env.start());
  const float h = simprof::engine::frame_dt(env.p);
  EXPECT_NEAR(env.a[5][0], env.p.gravity * h, 1e-5) << "free fall: v = g h";
}

TEST(ContactSolver, AnOverlappingPairIsSeparatedAndTheFloorHolds) {
  PbdEnv env(2);
  // Two spheres overlapping by half a radius, one resting on the floor.
  env.a[2][0] = env.p.radius;
  env.a[2][1] = env.p.radius + 1.5f * env.p.radius;
  simprof::engine::pbd_predict_env(0, env.p, env.state(), env.start());
  const int passes = env.solve(1e-6f, 64);
  EXPECT_GT(passes, 2) << "the floor and the pair push against each other: several passes";
  EXPECT_LT(passes, 64) << "and converge";
  const float gap = env.a[2][1] - env.a[2][0];
  EXPECT_GE(gap, 2.0f * env.p.radius - 1e-5f);
  EXPECT_GE(env.a[2][0], env.p.radius - 1e-6f);
  simprof::engine::pbd_finish_env(0, env.p, env.state(), env.start());
  EXPECT_GT(env.a[5][1], 0.0f) << "the upper sphere was pushed up, so it moves up";
}

TEST(ContactSolver, PassCountsAreDeterministic) {
  auto run = [] {
    PbdEnv env(8);
    for (int i = 0; i < 8; ++i) {  // a tight column: every pass moves something
      env.a[0][static_cast<std::size_t>(i)] = 0.01f * static_cast<float>(i % 2);
      env.a[2][static_cast<std::size_t>(i)] = 0.05f + 0.08f * static_cast<float>(i);
    }
    std::vector<int> passes;
    for (int f = 0; f < 20; ++f) {
      simprof::engine::pbd_predict_env(0, env.p, env.state(), env.start());
      passes.push_back(env.solve(1e-5f, 64));
      simprof::engine::pbd_finish_env(0, env.p, env.state(), env.start());
    }
    return passes;
  };
  const std::vector<int> a = run();
  EXPECT_EQ(a, run());
  EXPECT_GT(*std::max_element(a.begin(), a.end()), 1);
}
