// SPDX-License-Identifier: MIT
// Mixed-precision replay validation: the engine's state stored in FP16 or BF16 (computed in FP32)
// replayed as one graph, the FP32 engine replayed as the reference graph, both from the same
// initial state; every N replays PrecisionChecker compares positions and velocities (state
// arrays), the batch's velocity norm (a norm) and the total kinetic energy (a scalar) against their
// tolerances, and prints a row. By default the variant is then re-synchronised to the reference,
// so every row measures the error that N replays accumulate; --no-resync lets it drift. The errors
// are reduced on the GPU (cuda::DeviceComparer); --host-check copies both states to the host.
//
//   mixed_precision --storage fp16 --n-envs 30000 --replays 1000 --validate-every 50
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "demo_engine/cuda_engine.hpp"
#include "demo_engine/mixed_engine.hpp"
#include "gpu.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/precision/device_comparer.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"
#include "simprof/precision/checker.hpp"

namespace {

using namespace simprof;

struct Args {
  engine::Storage storage = engine::Storage::kFp16;
  int n_envs = 30000;
  int replays = 1000;
  int every = 50;
  bool resync = true;
  bool on_device = true;  // the error sums reduced on the GPU (false: copy both states to the host)
  double state_tol = 1e-2, norm_tol = 5e-3, scalar_tol = 1e-3;
};

constexpr const char* kUsage =
    "mixed_precision [--storage fp16|bf16|fp32] [--n-envs N] [--replays R]\n"
    "                [--validate-every N] [--no-resync] [--state-tol X] [--norm-tol X]\n"
    "                [--scalar-tol X] [--host-check]\n";

Args parse(int argc, char** argv) {
  Args a;
  cli::Flags(kUsage)
      .custom("--storage", [&](const std::string& v) { a.storage = engine::parse_storage(v); })
      .integer("--n-envs", a.n_envs, 1)
      .integer("--replays", a.replays, 1)
      .integer("--validate-every", a.every, 1)
      .flag("--no-resync", a.resync, false)
      .flag("--host-check", a.on_device, false)
      .real("--state-tol", a.state_tol, 0, 1e30)
      .real("--norm-tol", a.norm_tol, 0, 1e30)
      .real("--scalar-tol", a.scalar_tol, 0, 1e30)
      .parse(argc, argv);
  return a;
}

// Microseconds per replay of `n` back-to-back replays, on the GPU's clock.
double time_replays(cuda::GraphCache& cache, const cuda::GraphKey& key,
                    const cuda::GraphCache::Body& body, cudaStream_t stream, int n) {
  cache.run(key, body);  // captured before timing, if it is not yet
  cuda::Stopwatch watch(stream);
  return watch.time([&] {
    for (int i = 0; i < n; ++i) cache.run(key, body);
  }) * 1e6 /
         n;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  if (!simprof::examples::gpu_or_say_why("mixed_precision")) return 0;
  engine::Params params;
  cuda::Stream stream;
  engine::CudaEngine ref(params, a.n_envs, stream);
  engine::MixedEngine var(params, a.n_envs, a.storage, stream);
  cuda::GraphCache cache(stream);
  const cuda::GraphKey ref_key{a.n_envs, 0}, var_key{a.n_envs, 1};
  const cuda::GraphCache::Body ref_step = [&](cudaStream_t s) { ref.enqueue_solver(s, nullptr); };
  const cuda::GraphCache::Body var_step = [&](cudaStream_t s) { var.enqueue_step(s); };

  PrecisionChecker check;
  check.set_tolerance(QuantityClass::kState, {a.state_tol});
  check.set_tolerance(QuantityClass::kNorm, {a.norm_tol});
  check.set_tolerance(QuantityClass::kScalar, {a.scalar_tol});
  fmt::print("{} state vs FP32 reference, {} envs, validated every {} replays ({})\n",
             engine::to_string(a.storage), a.n_envs, a.every,
             a.resync ? "re-synchronised after each check" : "drifting, no re-sync");
  fmt::print("{:>7} | {:>11} {:>11} | {:>11} {:>11} | {:>10} {:>10} | {:>4} | {}\n", "replay",
             "pos rel L2", "pos max", "vel rel L2", "vel max", "|v| rel", "KE rel", "NaN",
             "verdict");
  int first_failure = -1, checks = 0, failures = 0;
  // A validation's time on the GPU's clock: from the moment the GPU has finished the replays queued
  // before it (a host clock started here would count them) to the checker's verdict on the host.
  cuda::Stopwatch validation(stream);
  cuda::DeviceComparer cmp;
  for (int r = 1; r <= a.replays; ++r) {
    cache.run(ref_key, ref_step);
    cache.run(var_key, var_step);
    if (r % a.every != 0) continue;
    validation.start();
    check.clear();
    // Reduced where the state lives (a few bytes come back), or through the host (--host-check).
    const engine::StateSums sums =
        engine::state_sums(ref, var, stream, a.on_device ? &cmp : nullptr);
    check.record("positions", QuantityClass::kState, sums.positions);
    check.record("velocities", QuantityClass::kState, sums.velocities);
    // The norm and the energy follow from the velocity sums: |v| = sqrt(sum v^2), KE = m/2 sum v^2.
    const double v2_ref = sums.velocities.ref2, v2_var = sums.velocities.var2;
    const float norm_r = static_cast<float>(std::sqrt(v2_ref));
    const float norm_v = static_cast<float>(std::sqrt(v2_var));
    const float ke_r = static_cast<float>(0.5 * params.mass * v2_ref);
    const float ke_v = static_cast<float>(0.5 * params.mass * v2_var);
    check.compare("velocity norm", QuantityClass::kNorm, &norm_r, &norm_v, 1);
    check.compare("kinetic energy", QuantityClass::kScalar, &ke_r, &ke_v, 1);
    validation.stop();  // the verdict is in (read lazily, at the end)
    const PrecisionResult pos = check.results()[0], vel = check.results()[1];
    const PrecisionResult norm = check.results()[2], ke = check.results()[3];
    const bool ok = check.all_passed();
    ++checks;
    if (!ok) {
      ++failures;
      if (first_failure < 0) first_failure = r;
    }
    fmt::print(
        "{:>7} | {:>11.3e} {:>11.3e} | {:>11.3e} {:>11.3e} | {:>10.3e} {:>10.3e} | {:>4} | {}\n", r,
        pos.rel_l2, pos.max_abs, vel.rel_l2, vel.max_abs, norm.rel_l2, ke.rel_l2, pos.nan + vel.nan,
        ok ? "pass" : "FAIL");
    if (a.resync) var.load_from(ref, stream);
  }
  fmt::print("\nlast check:\n{}", check.table());
  fmt::print("{} checks, {} failed{}\n", checks, failures,
             first_failure > 0 ? fmt::format(" (first at replay {})", first_failure) : "");
  // Replay times. The FP32 reference keeps forces in global memory between phases; the variant's
  // kernel keeps an env in registers. FP32 storage through the same kernel separates the two
  // effects: kernel structure (reference vs fp32 storage) and storage width (fp32 vs fp16/bf16).
  engine::MixedEngine fp32(params, a.n_envs, engine::Storage::kFp32, stream);
  const cuda::GraphCache::Body fp32_step = [&](cudaStream_t s) { fp32.enqueue_step(s); };
  const cuda::GraphKey fp32_key{a.n_envs, 2};
  const int timed = 200;
  const double ref_us = time_replays(cache, ref_key, ref_step, stream, timed);
  const double fp32_us = time_replays(cache, fp32_key, fp32_step, stream, timed);
  const double var_us = time_replays(cache, var_key, var_step, stream, timed);
  fmt::print(
      "replay, per replay of {} back to back ({}): FP32 reference {:.1f} us; same kernel as the "
      "variant with FP32 storage {:.1f} us; {} storage {:.1f} us ({:.2f}x the FP32-storage "
      "kernel); state {:.1f} MB vs {:.1f} MB\n",
      timed, cuda::to_string(cuda::StopwatchClock::kDevice), ref_us, fp32_us,
      engine::to_string(a.storage), var_us, fp32_us / var_us,
      static_cast<double>(fp32.state_bytes()) / 1e6, static_cast<double>(var.state_bytes()) / 1e6);
  fmt::print(
      "one validation {:.0f} us, mean of {} ({}; {}: from the end of the replays queued before it "
      "to the verdict on the host)\n",
      validation.mean_s() * 1e6, validation.laps(),
      a.on_device ? "reduced on the GPU" : "through the host", validation.clock_label());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "mixed_precision: %s\n", e.what());
  return 2;
}
