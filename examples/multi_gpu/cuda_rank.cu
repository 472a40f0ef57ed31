// SPDX-License-Identifier: MIT
// A rank on its GPU: the engine's step captured into a CUDA graph (this rank's own GraphCache, on
// this rank's device), then an NCCL all-reduce of a per-env reward across the ranks, inside a
// collective scope so the trace puts the collective's arguments on the NCCL kernel. Paced (at most
// 2 steps in flight, FPS on the GPU clock); throughput from CUDA events.
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "demo_engine/cuda_engine.hpp"
#include "rank.hpp"
#include "simprof/cuda.hpp"

#define NCCL_CHECK(call)                                                                     \
  do {                                                                                       \
    const ncclResult_t nccl_rc_ = (call);                                                    \
    if (nccl_rc_ != ncclSuccess)                                                             \
      throw std::runtime_error(fmt::format("NCCL call {} failed: {} ({}) at {}:{}", #call,   \
                                           ncclGetErrorString(nccl_rc_),                     \
                                           static_cast<int>(nccl_rc_), __FILE__, __LINE__)); \
  } while (0)

namespace simprof::examples {

bool cuda_rank_available(std::string* why) { return cuda::device_available(why); }

namespace {

// Each env's reward: the mean height of its spheres (from the positions the step publishes).
__global__ void reward_kernel(const float* z, int n_envs, int spheres, float* reward) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= n_envs) return;
  float sum = 0;
  for (int s = 0; s < spheres; ++s) sum += z[e * spheres + s];
  reward[e] = sum / static_cast<float>(spheres);
}

// NCCL's unique id from rank 0 to the others through a file: SIMPROF_NCCL_ID_FILE (multi_gpu's
// own launcher sets one per run; under torchrun/mpirun/srun set it to a path every rank sees).
ncclUniqueId exchange_id(const RankInfo& r) {
  const char* env = std::getenv("SIMPROF_NCCL_ID_FILE");
  const std::string path = env && *env ? env : "/tmp/simprof_nccl.id";
  ncclUniqueId id{};
  if (r.rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string tmp = fmt::format("{}.{}", path, ::getpid());
    {
      std::ofstream out(tmp, std::ios::binary);
      out.write(id.internal, sizeof(id.internal));
      if (!out) throw std::runtime_error("multi_gpu: cannot write NCCL's id to " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw std::runtime_error("multi_gpu: cannot rename " + tmp + " to " + path);
    return id;
  }
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(id.internal, sizeof(id.internal))) return id;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60))
      throw std::runtime_error(
          fmt::format("multi_gpu: rank {}: no NCCL id in {} after 60 s (is rank 0 running? set "
                      "SIMPROF_NCCL_ID_FILE to a path every rank sees)",
                      r.rank, path));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The communicator, destroyed with its owner.
class Comm {
 public:
  Comm(int world, const ncclUniqueId& id, int rank) {
    NCCL_CHECK(ncclCommInitRank(&comm_, world, id, rank));
  }
  ~Comm() {
    if (comm_) ncclCommDestroy(comm_);
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ncclComm_t get() const noexcept { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
};

}  // namespace

int run_cuda_rank(const Args& a, const RankInfo& r) {
  int devices = 0;
  SIMPROF_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (r.local_rank >= devices)
    throw std::invalid_argument(
        fmt::format("rank {} has local rank {} but this host has {} GPU(s): one process per GPU",
                    r.rank, r.local_rank, devices));
  SIMPROF_CUDA_CHECK(cudaSetDevice(r.local_rank));  // before anything CUDA is made
  const int n_envs = envs_of_rank(a, r, 30000);
  const int steps = a.steps ? a.steps : 1000;
  const Comm comm(r.world_size, exchange_id(r), r.rank);
  int nccl_version = 0;
  NCCL_CHECK(ncclGetVersion(&nccl_version));

  ProfilingOptions o = ProfilingOptions::from_env();
  if (a.quiet) o.show_fps = false;
  StepProfiler prof(o, n_envs);  // "[rank R/W] Running at ..."
  cuda::Stream stream;
  engine::CudaEngine eng(engine::Params{}, n_envs, stream);
  eng.attach(prof);
  cuda::StepPacer pacer(prof, stream);  // before the cache: at most 2 steps in flight
  cuda::GraphCache cache(stream);       // this rank's graphs, on this rank's device
  const std::size_t bodies = eng.bodies();
  cuda::DeviceBuffer<float> x(bodies), y(bodies), z(bodies), reward(n_envs);
  const int spheres = eng.params().n_spheres;
  const ProcessGroup world = ProcessGroup::world(r.world_size);

  std::optional<TraceSession> trace;
  std::optional<cuda::KernelTracer> tracer;
  SourceRegistration tracer_joined;  // after the tracer: leaves the session before it goes
  if (!a.trace.empty()) {
    TraceOptions t;
    t.schedule = Schedule{a.warmup + steps / 2, 2, 3, 1, 0};
    t.dir = a.trace;
    t.ranks = r;
    t.backend = "nccl";
    trace.emplace(prof, t);
    tracer.emplace(prof);
    tracer_joined = trace->add_source(&*tracer);
    trace->on_trace_ready([&](const Trace& tr, std::uint64_t w) {
      const std::string path = trace->write(tr, w);
      const TraceAnalysis an = analyze(tr);
      double comm_us = 0, span = 0, overlap = 0;
      int n = 0;
      for (const auto& s : an.steps)
        if (s.kernels > 0) {
          comm_us += s.comm_us;
          span += s.gpu_span_us;
          overlap += std::isnan(s.comm_overlap) ? 0.0 : s.comm_overlap;
          ++n;
        }
      fmt::print(
          "rank {}: wrote {} ({} spans, {} dropped); all-reduce {:.1f} us per step, {:.1f}% of "
          "the step's GPU span, {:.0f}% of it overlapped computation\n",
          r.rank, path, tr.spans.size(), tr.dropped, n ? comm_us / n : 0.0,
          span > 0 ? 100 * comm_us / span : 0.0, n ? 100 * overlap / n : 0.0);
    });
  }

  auto one = [&] {
    auto step = prof.step();
    {  // the engine's stages (physics, sensors, ...) are its own
      auto body = [&](cudaStream_t s) {
        eng.enqueue_step(s);
        eng.publish_positions(s, x.data(), y.data(), z.data());
        reward_kernel<<<(n_envs + 255) / 256, 256, 0, s>>>(z.data(), n_envs, spheres,
                                                           reward.data());
        SIMPROF_CUDA_CHECK_LAUNCH("reward_kernel");
      };
      if (a.eager)
        body(stream);
      else
        cache.run({n_envs}, body);
    }
    auto st = prof.stage("allreduce");
    auto c = collective(prof, CollectiveOp::kAllReduce, n_envs, DType::kFloat, world);
    NCCL_CHECK(ncclAllReduce(reward.data(), reward.data(), static_cast<std::size_t>(n_envs),
                             ncclFloat, ncclSum, comm.get(), stream));
  };
  for (int i = 0; i < a.warmup; ++i) one();
  pacer.finish();
  prof.reset_stats();
  prof.fps().reset();
  cuda::Stopwatch watch(stream);
  watch.start();
  for (int i = 0; i < steps; ++i) one();
  watch.stop();
  pacer.finish();
  const double seconds = watch.last_s();
  const double mine = static_cast<double>(n_envs) * steps / seconds;
  // Every rank's throughput, summed across ranks (a second, tiny all-reduce after the run).
  cuda::DeviceBuffer<double> sum(1);
  sum.copy_from_host(&mine, 1, stream);
  NCCL_CHECK(ncclAllReduce(sum.data(), sum.data(), 1, ncclDouble, ncclSum, comm.get(), stream));
  double all = 0;
  sum.copy_to_host(&all, 1, stream);
  stream.synchronize();
  fmt::print(
      "rank {}/{} (GPU {}, {} envs, {} steps, {}): {} env-steps/s on the GPU ({:.1f} us per "
      "step, {}); FPS line {} (GPU clock)\n",
      r.rank, r.world_size, r.local_rank, n_envs, steps, a.eager ? "eager" : "graph replay",
      format_thousands(mine, 0), seconds / steps * 1e6, watch.clock_label(),
      format_thousands(prof.fps().total_fps(), 0));
  if (r.rank == 0)
    fmt::print("all {} ranks: {} env-steps/s (rank 0: {} envs; NCCL {}.{}.{})\n", r.world_size,
               format_thousands(all, 0), n_envs, nccl_version / 10000, nccl_version / 100 % 100,
               nccl_version % 100);
  return 0;
}

}  // namespace simprof::examples
