// SPDX-License-Identifier: MIT
// The bullet example's worlds, its thread pool, and the zone hooks Bullet calls (into EngineZones,
// the reference profile, or a counter). Included by main.cpp only.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <btBulletDynamicsCommon.h>
#include <fmt/format.h>

#include "args.hpp"
#include "reference.hpp"
#include "simprof/profiler/engine_zones.hpp"

namespace simprof::examples::bullet {

// One world: its own configuration, dispatcher, broadphase and solver, so worlds share nothing and
// can step on different threads. The pile never sleeps (DISABLE_DEACTIVATION): every step does
// the same kind of work.
class World {
 public:
  World(int bodies, unsigned seed) {
    world_.setGravity(btVector3(0, -10, 0));
    add(&ground_, 0, btVector3(0, 0, 0));
    unsigned s = seed;
    auto jitter = [&s]() {  // a small LCG: the piles differ, the run is reproducible
      s = s * 1664525u + 1013904223u;
      return static_cast<btScalar>((s >> 8) % 1000u) * btScalar(1e-4);  // [0, 0.1)
    };
    for (int i = 0; i < bodies; ++i) {
      const btScalar x = static_cast<btScalar>(i % 5 - 2) * btScalar(1.1) + jitter();
      const btScalar z = static_cast<btScalar>((i / 5) % 5 - 2) * btScalar(1.1) + jitter();
      const btScalar y = btScalar(0.6) + static_cast<btScalar>(i / 25) * btScalar(1.1);
      add(i % 2 == 0 ? static_cast<btCollisionShape*>(&sphere_) : &box_, 1, btVector3(x, y, z));
    }
  }
  ~World() {
    for (auto& b : bodies_) world_.removeRigidBody(b.get());
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  void step() { world_.stepSimulation(btScalar(1) / 60, 0); }  // one internal step of 1/60 s

 private:
  void add(btCollisionShape* shape, btScalar mass, const btVector3& at) {
    btVector3 inertia(0, 0, 0);
    if (mass > 0) shape->calculateLocalInertia(mass, inertia);
    btTransform t;
    t.setIdentity();
    t.setOrigin(at);
    states_.push_back(std::make_unique<btDefaultMotionState>(t));
    btRigidBody::btRigidBodyConstructionInfo info(mass, states_.back().get(), shape, inertia);
    bodies_.push_back(std::make_unique<btRigidBody>(info));
    if (mass > 0) bodies_.back()->setActivationState(DISABLE_DEACTIVATION);
    world_.addRigidBody(bodies_.back().get());
  }
  btDefaultCollisionConfiguration config_;
  btCollisionDispatcher dispatcher_{&config_};
  btDbvtBroadphase broadphase_;
  btSequentialImpulseConstraintSolver solver_;
  btDiscreteDynamicsWorld world_{&dispatcher_, &broadphase_, &solver_, &config_};
  btStaticPlaneShape ground_{btVector3(0, 1, 0), 0};
  btSphereShape sphere_{btScalar(0.5)};
  btBoxShape box_{btVector3(btScalar(0.5), btScalar(0.5), btScalar(0.5))};
  std::vector<std::unique_ptr<btDefaultMotionState>> states_;
  std::vector<std::unique_ptr<btRigidBody>> bodies_;
};

// T threads that step the worlds: run() hands them one step and returns when all are done.
class Pool {
 public:
  Pool(int threads, std::vector<std::unique_ptr<World>>& worlds) : worlds_(worlds) {
    for (int i = 0; i < threads; ++i)
      threads_.emplace_back([this, i, threads] { work(i, threads); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    go_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  void run() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++generation_;
      pending_ = static_cast<int>(threads_.size());
    }
    go_.notify_all();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void work(int index, int threads) {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        go_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      for (std::size_t w = static_cast<std::size_t>(index); w < worlds_.size();
           w += static_cast<std::size_t>(threads))
        worlds_[w]->step();
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
  std::vector<std::unique_ptr<World>>& worlds_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable go_, done_;
  std::uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Bullet's zone functions are process-global: these forward to whatever is set here (set on the
// loop's thread between steps; the pool's lock orders it before the workers' next step).
inline EngineZones* g_zones = nullptr;
inline ReferenceProfile* g_reference = nullptr;
// Which of the two profilers is outside the other in this step. The outer one's interval holds the
// inner one's clock reads and bookkeeping, so the order swaps every step
// (between steps only: a zone's enter and leave see the same order) and neither is always the one
// that holds the other's cost.
inline std::atomic<bool> g_reference_outside{false};
inline void enter_both(const char* name) {
  if (g_reference_outside.load(std::memory_order_relaxed)) {
    g_reference->enter(name);
    g_zones->enter(name);
  } else {
    g_zones->enter(name);
    g_reference->enter(name);
  }
}
inline void leave_both() {  // the reverse order: the inner zone ends first
  if (g_reference_outside.load(std::memory_order_relaxed)) {
    g_zones->leave();
    g_reference->leave();
  } else {
    g_reference->leave();
    g_zones->leave();
  }
}
inline void enter_simprof(const char* name) { g_zones->enter(name); }
inline void leave_simprof() { g_zones->leave(); }
inline std::atomic<long> g_zone_count{0};  // --cost: zones per step, counted in one step
inline void enter_count(const char*) { g_zone_count.fetch_add(1, std::memory_order_relaxed); }
inline void leave_count() {}

// Nanoseconds per zone (enter + leave, two nested names) through EngineZones on the calling
// thread, the best of 5 runs of `pairs` pairs: the hook's own cost, away from Bullet's noise.
inline double zone_ns(int pairs) {
  double best = 1e300;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < pairs; ++i) {
      enter_simprof("internalSingleStepSimulation");
      enter_simprof("solveConstraints");
      leave_simprof();
      leave_simprof();
    }
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ns / (2.0 * pairs));
  }
  return best;
}

// The functions Bullet had before (its defaults, empty in Debian's build), put back when this
// goes: declared after the EngineZones and the reference, so Bullet never calls into them gone.
struct Hooks {
  Hooks() = default;
  Hooks(const Hooks&) = delete;
  Hooks& operator=(const Hooks&) = delete;
  ~Hooks() { restore(); }
  btEnterProfileZoneFunc* enter = btGetCurrentEnterProfileZoneFunc();
  btLeaveProfileZoneFunc* leave = btGetCurrentLeaveProfileZoneFunc();
  void restore() const {
    btSetCustomEnterProfileZoneFunc(enter);
    btSetCustomLeaveProfileZoneFunc(leave);
  }
};

inline std::vector<std::unique_ptr<World>> make_worlds(const Args& a) {
  std::vector<std::unique_ptr<World>> worlds;
  for (int i = 0; i < a.n_envs; ++i)
    worlds.push_back(std::make_unique<World>(a.bodies, 12345u + static_cast<unsigned>(i)));
  return worlds;
}

// One step of every world: on the loop's thread (no pool) or over the pool.
inline void step_all(std::vector<std::unique_ptr<World>>& worlds, Pool* pool) {
  if (pool)
    pool->run();
  else
    for (auto& w : worlds) w->step();
}

inline std::string bullet_version() {  // 324: "3.24"
  return fmt::format("{}.{:02}", btGetVersion() / 100, btGetVersion() % 100);
}

inline bool cprofile_manager_linked() {  // Bullet built with BT_ENABLE_PROFILE exports it
  return dlsym(RTLD_DEFAULT, "_ZN15CProfileManager13Start_ProfileEPKc") != nullptr;
}

}  // namespace simprof::examples::bullet
