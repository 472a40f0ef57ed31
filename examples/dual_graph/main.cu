// SPDX-License-Identifier: MIT
// Physics and rendering as two graphs on two streams (simprof::cuda::FramePipeline): the physics
// graph solves frame k + 1 while the render graph draws frame k from a double-buffered snapshot of
// the positions, joined by events. Compared with the same two graphs serialised on one stream:
// throughput and end-to-end latency per frame (physics start to image done: mean, sigma, p95,
// p99), and a check that both orders draw the same images.
//
//   dual_graph --n-envs 30000 --image 32 --frames 1000
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "demo_engine/cuda_engine.hpp"
#include "demo_engine/render_pipeline.hpp"
#include "gpu.hpp"
#include "simprof/base/stats.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"

namespace {

using namespace simprof;

struct Args {
  std::vector<int> n_envs = {4096, 30000};
  int image = 32;
  int frames = 1000;
  int warmup = 20;
};

constexpr const char* kUsage =
    "dual_graph [--n-envs N[,N...]] [--image PIXELS] [--frames F] [--warmup W]\n";

Args parse(int argc, char** argv) {
  Args a;
  cli::Flags(kUsage)
      .ints("--n-envs", a.n_envs, 1)
      .integer("--image", a.image, 1, 256)
      .integer("--frames", a.frames, 1)
      .integer("--warmup", a.warmup, 4)
      .parse(argc, argv);
  return a;
}

struct Result {
  double us_per_frame = 0;
  LatencyStats latency;
  std::vector<float> depth;
};

enum class Order { kSerial, kOverlap, kOverlapPriority };
const char* name(Order o) {
  return o == Order::kSerial ? "serialised" : o == Order::kOverlap ? "overlapped" : "overlap+prio";
}

Result run(const engine::Params& params, int n_envs, Order order, const Args& a) {
  cuda::Stream init;
  engine::CudaEngine eng(params, n_envs, init);
  cuda::FramePipelineOptions o;
  o.overlap = order != Order::kSerial;
  o.prioritize_producer = order == Order::kOverlapPriority;
  engine::RenderPipeline pipe(eng, o);
  for (int i = 0; i < a.warmup; ++i) pipe.submit();
  pipe.drain();
  pipe.frames().clear_latencies();
  // From the first physics frame's start to the last image's end, on the GPU's clock.
  cuda::Stopwatch watch(pipe.frames().producer_stream());
  watch.start();
  for (int i = 0; i < a.frames; ++i) pipe.submit();
  watch.stop(pipe.frames().consumer_stream());
  pipe.drain();
  Result r;
  r.us_per_frame = watch.last_s() * 1e6 / a.frames;
  r.latency = summarize(pipe.frames().latencies());
  r.depth = pipe.depth();
  return r;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  if (!simprof::examples::gpu_or_say_why("dual_graph")) return 0;
  engine::Params params;
  params.image_width = params.image_height = a.image;
  fmt::print(
      "physics graph + render graph ({}x{} depth per env), {} frames after {} warm-up; us/frame "
      "and latency on the GPU's clock (CUDA events; latency: a frame's physics start to its image "
      "done)\n",
      a.image, a.image, a.frames, a.warmup);
  fmt::print("{:>7} {:>12} | {:>9} {:>9} | {:>9} {:>8} {:>9} {:>9} | {}\n", "n_envs", "order",
             "us/frame", "frames/s", "lat mean", "sigma", "p95", "p99", "images");
  for (int n : a.n_envs) {
    std::vector<Result> results;
    for (Order order : {Order::kSerial, Order::kOverlap, Order::kOverlapPriority}) {
      results.push_back(run(params, n, order, a));
      const Result& r = results.back();
      const bool same = r.depth == results.front().depth;
      fmt::print("{:>7} {:>12} | {:>9.1f} {:>9.0f} | {:>9.1f} {:>8.1f} {:>9.1f} {:>9.1f} | {}\n", n,
                 name(order), r.us_per_frame, 1e6 / r.us_per_frame, r.latency.mean * 1e6,
                 r.latency.stddev * 1e6, r.latency.p95 * 1e6, r.latency.p99 * 1e6,
                 order == Order::kSerial ? "" : (same ? "identical" : "DIFFER"));
      if (!same) return 1;
    }
    fmt::print(
        "{:>7} throughput vs serialised: overlapped {:.2f}x, with producer priority {:.2f}x\n", n,
        results[0].us_per_frame / results[1].us_per_frame,
        results[0].us_per_frame / results[2].us_per_frame);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "dual_graph: %s\n", e.what());
  return 2;
}
