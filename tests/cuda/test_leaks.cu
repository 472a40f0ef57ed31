// SPDX-License-Identifier: MIT
// Every class that owns CUDA handles, made to throw in the middle of its constructor at each CUDA
// call the constructor makes, leaks nothing.
//
// This binary links the shared CUDA runtime and defines the runtime's create and destroy calls
// itself: those definitions take the place of libcudart's for every caller in the executable (the
// library's static code included), count the handles alive per kind, forward to the real calls
// (dlsym RTLD_NEXT), and can make the N-th call fail. For N = 1, 2, ... until the constructor
// makes fewer than N calls, the test arms the failure, constructs, and checks that every kind is
// back to the count it had before — after the throw, and after a normal destruction too.
//
// Its own binary: the definitions replace the runtime's for the whole process.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "cuda_interpose.hpp"
#include "demo_engine/contact_solver.hpp"
#include "demo_engine/cuda_engine.hpp"
#include "demo_engine/mixed_engine.hpp"
#include "gpu_test.hpp"
#include "simprof/cuda/graphs/frame_pipeline.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/graphs/step_graph.hpp"
#include "simprof/cuda/graphs/while_loop.hpp"
#include "simprof/cuda/precision/device_comparer.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/device_timer_buffer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "test_util.hpp"

// --- the sweep ----------------------------------------------------------------------------------

using simprof::testing::quiet;

namespace {

using namespace simprof;
using namespace simprof::cuda;
using namespace simprof::cuda::leaktest;
namespace gt = simprof::cuda::gputest;

// Runs `body` (which constructs an owner and lets it go) with the 1st, 2nd, ... interposed call
// failing, until the body makes fewer calls than that. Returns how many calls a full run made.
// `absorbs`: a failure may be handled inside without a throw (a capture falling back to eager).
template <class Body>
long sweep(const char* what, Body&& body, bool absorbs = false) {
  for (long n = 1; n < 500; ++n) {
    const Live before = live();
    arm(n);
    bool threw = false;
    std::string message;
    try {
      body();
    } catch (const CudaError& e) {
      threw = true;
      message = e.what();
    }
    disarm();
    const bool fired = leaktest::fired();
    cudaDeviceSynchronize();
    EXPECT_EQ(diff(before, live()), "") << what << ": leaked with call " << n << " failing ("
                                        << (threw ? message : "no throw") << ")";
    if (!fired) return n - 1;  // the body made n - 1 calls, every one failed once
    if (!threw && !absorbs) {
      ADD_FAILURE() << what << ": call " << n << " failed and the constructor did not throw";
      return n;
    }
  }
  ADD_FAILURE() << what << ": more than 500 calls";
  return 500;
}

class Leaks : public gt::GpuTest {};

}  // namespace

TEST_F(Leaks, HandleOwnersReleaseEverythingWhenConstructionFails) {
  EXPECT_EQ(sweep("Stream", [] { Stream s; }), 1);
  EXPECT_EQ(sweep("blocking Stream", [] { Stream s(cudaStreamDefault, 0); }), 1);
  EXPECT_EQ(sweep("Event", [] { Event e(cudaEventDisableTiming); }), 1);
  EXPECT_EQ(sweep("DeviceBuffer", [] { DeviceBuffer<float> b(1024); }), 1);
  EXPECT_EQ(sweep("PinnedBuffer",
                  [] {
                    PinnedBuffer<float> b(1024, cudaHostAllocMapped);
                    (void)b.device_pointer();
                  }),
            2);
}

TEST_F(Leaks, GraphOwnersReleaseEverythingWhenConstructionFails) {
  Stream stream;
  DeviceBuffer<float> x(256);
  gt::fill(x, 0.0f, stream);  // read before written otherwise (initcheck)
  auto body = [&](cudaStream_t s) { gt::axpb(x.data(), 256, 1.0f, s); };
  EXPECT_GE(sweep("GraphCache", [&] { GraphCache c(stream); }), 3);
  EXPECT_GE(sweep("StepGraph", [&] { StepGraph g(stream, body); }), 3);
  for (const bool overlap : {true, false}) {
    FramePipelineOptions o;
    o.overlap = overlap;
    o.in_flight = 4;
    const long calls =
        sweep(overlap ? "FramePipeline (overlapped)" : "FramePipeline (serial)", [&] {
          FramePipeline p([&](cudaStream_t s, int) { body(s); },
                          [&](cudaStream_t s, int) { body(s); }, o);
        });
    EXPECT_GE(calls, 2 * 3 + 4 + 2 * 4) << "streams, two caches, four events, the timing ring";
  }
  EXPECT_GE(sweep("WhileLoop", [] { WhileLoop loop; }), 3);
}

TEST_F(Leaks, CaptureAndInstantiationFailuresLeaveNoGraph) {
  // The failing call can be any of the cache's own (its stream and events), the capture's end (it
  // then falls back to eager, absorbing the failure) or the instantiation (it throws).
  Stream stream;
  DeviceBuffer<float> x(256);
  gt::fill(x, 0.0f, stream);  // read before written otherwise (initcheck)
  GraphCacheOptions o;
  o.warmup = 0;
  const long calls = sweep(
      "GraphCache::run",
      [&] {
        GraphCache c(stream, o);
        c.run({1}, [&](cudaStream_t s) { gt::axpb(x.data(), 256, 1.0f, s); });
        c.run({1}, [&](cudaStream_t s) { gt::axpb(x.data(), 256, 1.0f, s); });
        stream.synchronize();
      },
      /*absorbs=*/true);
  EXPECT_EQ(calls, 3 + 2) << "stream, two events, the capture's end, the instantiation";
}

TEST_F(Leaks, MeasuringToolsReleaseEverythingWhenConstructionFails) {
  Stream stream;
  {
    // The device's stamp costs measured first (once per device): the sweep then fails each of
    // the constructor's own calls in turn.
    StepProfiler prof(quiet(), 0);
    DeviceStageTimer warm(prof, stream);
    EXPECT_TRUE(std::isfinite(warm.stamp_cost().eager_ns));
  }
  EXPECT_GE(sweep("DeviceStageTimer",
                  [&] {
                    StepProfiler prof(quiet(), 0);
                    DeviceStageTimerOptions o;
                    o.ring = 8;
                    DeviceStageTimer t(prof, stream, o);
                  }),
            5);
  EXPECT_GE(sweep("DeviceTimerBuffer (cycles)",
                  [] {
                    DeviceTimerBuffer t({"a", "b"}, 64, TimerUnit::kCycles);
                  }),
            5);
  EXPECT_GE(sweep("DeviceComparer", [] { DeviceComparer c; }), 2);
}

TEST_F(Leaks, DemoEngineReleasesEverythingWhenConstructionFails) {
  Stream stream;
  const engine::Params params;
  EXPECT_GE(sweep("CudaEngine", [&] { engine::CudaEngine e(params, 64, stream); }), 14);
  EXPECT_GE(sweep("MixedEngine",
                  [&] { engine::MixedEngine e(params, 64, engine::Storage::kFp16, stream); }),
            14 + 6);
  engine::CudaEngine eng(params, 64, stream);
  EXPECT_GE(sweep("ContactSolver", [&] { engine::ContactSolver s(eng, 8, 1e-4f); }), 4);
}
