// SPDX-License-Identifier: MIT
// A small but real batched physics engine: per environment, a handful of rigid spheres in a box
// under gravity, with sphere-sphere and wall contacts (penalty spring-dampers) and semi-implicit
// Euler integration; an IMU-like sensor; a pinhole depth camera; a recorder.
//
// Every function here works on one environment and is SIMPROF_HOST_DEVICE, so the CPU engine calls
// it in a loop over envs and the CUDA engine calls it unchanged from one thread per env. The
// arithmetic is written out in one fixed order (no reductions whose order could differ), so with
// FMA contraction off on both sides the CPU and CUDA engines compute the same numbers.
#pragma once

#include <cstdint>

#include "simprof/base/config.hpp"

#if !defined(__CUDACC__)
#include <cmath>
#endif

namespace simprof::engine {

struct Params {
  int n_spheres = 8;
  float radius = 0.05f;
  float half_width = 0.35f;  // the box spans [-w, w] in x and y, [0, height] in z
  float height = 1.0f;
  float gravity = -9.81f;
  float mass = 0.1f;
  float stiffness = 4000.0f;  // contact spring, N/m
  float damping = 0.8f;       // contact damper, N s/m
  float dt = 0.001f;          // one substep
  int substeps = 4;
  int image_width = 8;  // depth camera
  int image_height = 8;
  int record_frames = 64;     // recorder ring length
  float control_gain = 0.0f;  // a spring pulling every sphere to its env's control target (0: off)
};

/// Structure-of-arrays views over the batch; sphere i of env e is at e * n_spheres + i.
struct State {
  float *px, *py, *pz, *vx, *vy, *vz, *fx, *fy, *fz;
};
struct Sensors {
  float* imu_prev_v;  // 3 per env: sphere 0's velocity at the previous sensor update
  float* imu;         // 6 per env: specific force (3), speed (1), kinetic energy (1), height (1)
  float* depth;       // image_width * image_height per env
  float* record;      // record_frames * 4 per env: x, y, z of sphere 0 and the IMU's |f|
};

SIMPROF_HOST_DEVICE inline float hash01(std::uint32_t x) {
  // PCG-style integer hash to [0, 1): identical on host and device.
  x = x * 747796405u + 2891336453u;
  x = ((x >> ((x >> 28u) + 4u)) ^ x) * 277803737u;
  x = (x >> 22u) ^ x;
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

SIMPROF_HOST_DEVICE inline void init_env(int e, const Params& p, State s, std::uint32_t seed) {
  for (int i = 0; i < p.n_spheres; ++i) {
    const int k = e * p.n_spheres + i;
    const std::uint32_t h = seed ^ (static_cast<std::uint32_t>(k) * 9781u);
    // Spheres on a loose grid with jitter, so none start overlapping.
    const int gx = i % 3, gy = (i / 3) % 3, gz = i / 9;
    s.px[k] = -0.2f + 0.2f * static_cast<float>(gx) + 0.04f * (hash01(h + 1u) - 0.5f);
    s.py[k] = -0.2f + 0.2f * static_cast<float>(gy) + 0.04f * (hash01(h + 2u) - 0.5f);
    s.pz[k] = 0.3f + 0.15f * static_cast<float>(gz) + 0.2f * hash01(h + 3u);
    s.vx[k] = 1.0f * (hash01(h + 4u) - 0.5f);
    s.vy[k] = 1.0f * (hash01(h + 5u) - 0.5f);
    s.vz[k] = 1.0f * (hash01(h + 6u) - 0.5f);
    s.fx[k] = s.fy[k] = s.fz[k] = 0.0f;
  }
}

/// Penalty force along one axis against the walls at lo and hi.
SIMPROF_HOST_DEVICE inline float wall_force(float x, float v, float lo, float hi, const Params& p) {
  float f = 0.0f;
  const float pen_lo = lo - (x - p.radius);
  if (pen_lo > 0.0f) f += p.stiffness * pen_lo - p.damping * v;
  const float pen_hi = (x + p.radius) - hi;
  if (pen_hi > 0.0f) f -= p.stiffness * pen_hi + p.damping * v;
  return f;
}

/// Gravity and the six walls.
SIMPROF_HOST_DEVICE inline void external_forces_env(int e, const Params& p, State s) {
  for (int i = 0; i < p.n_spheres; ++i) {
    const int k = e * p.n_spheres + i;
    s.fx[k] = wall_force(s.px[k], s.vx[k], -p.half_width, p.half_width, p);
    s.fy[k] = wall_force(s.py[k], s.vy[k], -p.half_width, p.half_width, p);
    s.fz[k] = p.mass * p.gravity + wall_force(s.pz[k], s.vz[k], 0.0f, p.height, p);
  }
}

/// Calls f(a, b, dx, dy, dz, d) for every pair of env e's spheres closer than two radii, a < b in
/// a fixed order: (dx, dy, dz) points from a to b, d is its length. Positions are read as they are
/// when the pair is visited (a solver that moves spheres in f sees its own corrections).
template <class F>
SIMPROF_HOST_DEVICE inline void for_each_contact(int e, const Params& p, State s, F&& f) {
  const int base = e * p.n_spheres;
  const float reach = 2.0f * p.radius;
  for (int i = 0; i < p.n_spheres; ++i) {
    for (int j = i + 1; j < p.n_spheres; ++j) {
      const int a = base + i, b = base + j;
      const float dx = s.px[b] - s.px[a], dy = s.py[b] - s.py[a], dz = s.pz[b] - s.pz[a];
      const float d2 = dx * dx + dy * dy + dz * dz;
      if (d2 >= reach * reach || d2 <= 1e-12f) continue;
      f(a, b, dx, dy, dz, sqrtf(d2));
    }
  }
}

/// Sphere-sphere contacts: a spring along the normal plus a damper on the normal relative speed.
SIMPROF_HOST_DEVICE inline void contacts_env(int e, const Params& p, State s) {
  const float reach = 2.0f * p.radius;
  for_each_contact(e, p, s, [&](int a, int b, float dx, float dy, float dz, float d) {
    const float nx = dx / d, ny = dy / d, nz = dz / d;
    const float vn = (s.vx[b] - s.vx[a]) * nx + (s.vy[b] - s.vy[a]) * ny + (s.vz[b] - s.vz[a]) * nz;
    const float mag = p.stiffness * (reach - d) - p.damping * vn;
    const float f = mag > 0.0f ? mag : 0.0f;
    s.fx[a] -= f * nx;
    s.fy[a] -= f * ny;
    s.fz[a] -= f * nz;
    s.fx[b] += f * nx;
    s.fy[b] += f * ny;
    s.fz[b] += f * nz;
  });
}

/// The control: a spring-damper pulling each sphere towards its env's target (3 floats per env).
SIMPROF_HOST_DEVICE inline void control_forces_env(int e, const Params& p, State s,
                                                   const float* target) {
  const float* t = target + 3 * e;
  for (int i = 0; i < p.n_spheres; ++i) {
    const int k = e * p.n_spheres + i;
    s.fx[k] += p.control_gain * (t[0] - s.px[k]) - 0.1f * s.vx[k];
    s.fy[k] += p.control_gain * (t[1] - s.py[k]) - 0.1f * s.vy[k];
    s.fz[k] += p.control_gain * (t[2] - s.pz[k]) - 0.1f * s.vz[k];
  }
}

/// Semi-implicit Euler: velocity from the forces first, then position from the new velocity.
SIMPROF_HOST_DEVICE inline void integrate_env(int e, const Params& p, State s) {
  const float inv_m_dt = p.dt / p.mass;
  for (int i = 0; i < p.n_spheres; ++i) {
    const int k = e * p.n_spheres + i;
    s.vx[k] += s.fx[k] * inv_m_dt;
    s.vy[k] += s.fy[k] * inv_m_dt;
    s.vz[k] += s.fz[k] * inv_m_dt;
    s.px[k] += s.vx[k] * p.dt;
    s.py[k] += s.vy[k] * p.dt;
    s.pz[k] += s.vz[k] * p.dt;
  }
}

/// IMU on sphere 0: specific force (acceleration minus gravity) over the last step, speed, the
/// env's kinetic energy and sphere 0's height.
SIMPROF_HOST_DEVICE inline void imu_env(int e, const Params& p, State s, Sensors out) {
  const int k = e * p.n_spheres;
  const float step_dt = p.dt * static_cast<float>(p.substeps);
  float* prev = out.imu_prev_v + 3 * e;
  float* imu = out.imu + 6 * e;
  imu[0] = (s.vx[k] - prev[0]) / step_dt;
  imu[1] = (s.vy[k] - prev[1]) / step_dt;
  imu[2] = (s.vz[k] - prev[2]) / step_dt - p.gravity;
  prev[0] = s.vx[k];
  prev[1] = s.vy[k];
  prev[2] = s.vz[k];
  imu[3] = sqrtf(s.vx[k] * s.vx[k] + s.vy[k] * s.vy[k] + s.vz[k] * s.vz[k]);
  float ke = 0.0f;
  for (int i = 0; i < p.n_spheres; ++i) {
    const int q = e * p.n_spheres + i;
    ke += 0.5f * p.mass * (s.vx[q] * s.vx[q] + s.vy[q] * s.vy[q] + s.vz[q] * s.vz[q]);
  }
  imu[4] = ke;
  imu[5] = s.pz[k];
}

/// One depth pixel of env e: a pinhole camera outside the box looking at it; nearest sphere or the
/// floor, else the far plane.
SIMPROF_HOST_DEVICE inline float depth_pixel(int e, int u, int v, const Params& p, State s) {
  const float far_plane = 4.0f;
  const float ox = 0.0f, oy = -1.6f, oz = 0.5f;  // camera position
  const float tan_half = 0.45f;
  const float dx =
      (2.0f * (static_cast<float>(u) + 0.5f) / static_cast<float>(p.image_width) - 1.0f) * tan_half;
  const float dz =
      (1.0f - 2.0f * (static_cast<float>(v) + 0.5f) / static_cast<float>(p.image_height)) *
      tan_half;
  const float inv_len = 1.0f / sqrtf(dx * dx + 1.0f + dz * dz);
  const float rx = dx * inv_len, ry = inv_len, rz = dz * inv_len;
  float best = far_plane;
  if (rz < 0.0f) {  // the floor z = 0
    const float t = -oz / rz;
    if (t < best) best = t;
  }
  for (int i = 0; i < p.n_spheres; ++i) {
    const int k = e * p.n_spheres + i;
    const float cx = s.px[k] - ox, cy = s.py[k] - oy, cz = s.pz[k] - oz;
    const float b = cx * rx + cy * ry + cz * rz;
    const float c = cx * cx + cy * cy + cz * cz - p.radius * p.radius;
    const float disc = b * b - c;
    if (disc < 0.0f) continue;
    const float t = b - sqrtf(disc);
    if (t > 0.0f && t < best) best = t;
  }
  return best;
}

SIMPROF_HOST_DEVICE inline void render_env(int e, const Params& p, State s, Sensors out) {
  float* img = out.depth + static_cast<long long>(e) * p.image_width * p.image_height;
  for (int v = 0; v < p.image_height; ++v)
    for (int u = 0; u < p.image_width; ++u) img[v * p.image_width + u] = depth_pixel(e, u, v, p, s);
}

/// Rows of the solver's per-env timers.
enum SolverTimer : int {
  kSolve = 0,
  kForces = 1,
  kContacts = 2,
  kIntegrate = 3,
  kSolverTimers = 4
};

/// A chain whose laps cost nothing: the uninstrumented solver.
struct NoTimers {
  SIMPROF_HOST_DEVICE void lap(int) {}
  SIMPROF_HOST_DEVICE void lap_add(int) {}
  SIMPROF_HOST_DEVICE void total(int) {}
};

/// The whole physics step of one env in one place (all substeps), timed per phase by `chain`
/// (simprof::TimerChain, or NoTimers). Targets may be null when control_gain is 0.
template <class Chain>
SIMPROF_HOST_DEVICE inline void solver_env(int e, const Params& p, State s, const float* target,
                                           Chain& chain) {
  for (int sub = 0; sub < p.substeps; ++sub) {
    external_forces_env(e, p, s);
    if (target) control_forces_env(e, p, s, target);
    sub ? chain.lap_add(kForces) : chain.lap(kForces);
    contacts_env(e, p, s);
    sub ? chain.lap_add(kContacts) : chain.lap(kContacts);
    integrate_env(e, p, s);
    sub ? chain.lap_add(kIntegrate) : chain.lap(kIntegrate);
  }
  chain.total(kSolve);
}

SIMPROF_HOST_DEVICE inline void record_env(int e, long long frame, const Params& p, State s,
                                           Sensors out) {
  const int k = e * p.n_spheres;
  float* r =
      out.record + (static_cast<long long>(e) * p.record_frames + frame % p.record_frames) * 4;
  const float* imu = out.imu + 6 * e;
  r[0] = s.px[k];
  r[1] = s.py[k];
  r[2] = s.pz[k];
  r[3] = sqrtf(imu[0] * imu[0] + imu[1] * imu[1] + imu[2] * imu[2]);
}

// ---------------------------------------------------------------------------------------------
// The iterative contact solver (position-based): predict the positions of a whole frame under
// gravity, then project the contacts in Gauss-Seidel passes until every penetration is below a
// tolerance, then derive the velocities from the corrected positions. The number of passes depends
// on the state: one for a free sphere, more for a cluster. That data-dependent loop is what a CUDA
// conditional while node keeps on the device (contact_solver.hpp).

/// Positions at the start of the frame (3 arrays, like State's).
struct FrameStart {
  float *x0, *y0, *z0;
};

/// The length of one solver frame: all substeps of the penalty engine's step.
SIMPROF_HOST_DEVICE inline float frame_dt(const Params& p) {
  return p.dt * static_cast<float>(p.substeps);
}

SIMPROF_HOST_DEVICE inline void pbd_predict_env(int e, const Params& p, State s, FrameStart q) {
  const float h = frame_dt(p);
  for (int i = 0; i < p.n_spheres; ++i) {
    const int k = e * p.n_spheres + i;
    q.x0[k] = s.px[k];
    q.y0[k] = s.py[k];
    q.z0[k] = s.pz[k];
    s.vz[k] += p.gravity * h;
    s.px[k] += s.vx[k] * h;
    s.py[k] += s.vy[k] * h;
    s.pz[k] += s.vz[k] * h;
  }
}

/// Pushes x back inside [lo + r, hi - r]; returns the penetration it removed.
SIMPROF_HOST_DEVICE inline float pbd_wall(float& x, float lo, float hi, float r) {
  if (x < lo + r) {
    const float pen = lo + r - x;
    x = lo + r;
    return pen;
  }
  if (x > hi - r) {
    const float pen = x - (hi - r);
    x = hi - r;
    return pen;
  }
  return 0.0f;
}

/// One Gauss-Seidel pass over env e's contacts (walls, then sphere pairs in a fixed order).
/// Returns the largest penetration the pass found: the residual the loop converges on.
SIMPROF_HOST_DEVICE inline float pbd_project_env(int e, const Params& p, State s) {
  const int base = e * p.n_spheres;
  const float reach = 2.0f * p.radius;
  float worst = 0.0f;
  for (int i = 0; i < p.n_spheres; ++i) {
    const int k = base + i;
    const float a = pbd_wall(s.px[k], -p.half_width, p.half_width, p.radius);
    const float b = pbd_wall(s.py[k], -p.half_width, p.half_width, p.radius);
    const float c = pbd_wall(s.pz[k], 0.0f, p.height, p.radius);
    worst = fmaxf(worst, fmaxf(a, fmaxf(b, c)));
  }
  for_each_contact(e, p, s, [&](int a, int b, float dx, float dy, float dz, float d) {
    const float pen = reach - d;
    worst = fmaxf(worst, pen);
    const float h = 0.5f * pen / d;  // each sphere moves half the penetration along the normal
    s.px[a] -= h * dx;
    s.py[a] -= h * dy;
    s.pz[a] -= h * dz;
    s.px[b] += h * dx;
    s.py[b] += h * dy;
    s.pz[b] += h * dz;
  });
  return worst;
}

/// Velocities from the corrected positions.
SIMPROF_HOST_DEVICE inline void pbd_finish_env(int e, const Params& p, State s, FrameStart q) {
  const float inv_h = 1.0f / frame_dt(p);
  for (int i = 0; i < p.n_spheres; ++i) {
    const int k = e * p.n_spheres + i;
    s.vx[k] = (s.px[k] - q.x0[k]) * inv_h;
    s.vy[k] = (s.py[k] - q.y0[k]) * inv_h;
    s.vz[k] = (s.pz[k] - q.z0[k]) * inv_h;
  }
}

}  // namespace simprof::engine
