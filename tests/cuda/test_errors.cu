// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "gpu_test.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/trace/session.hpp"
#include "test_util.hpp"

using namespace simprof::cuda;

TEST(CudaError, NamesTheCallTheCodeAndThePlace) {
  // Needs no GPU: only the runtime's error names.
  try {
    SIMPROF_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "expected a CudaError";
  } catch (const CudaError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("cudaErrorInvalidValue"), std::string::npos) << w;
    EXPECT_NE(w.find("invalid argument"), std::string::npos) << w;
    EXPECT_NE(w.find("test_errors.cu:"), std::string::npos) << w;
    EXPECT_EQ(e.call(), "cudaErrorInvalidValue");
    EXPECT_EQ(e.code(), cudaErrorInvalidValue);
  }
}

namespace {
__global__ void write_through_null(float* p) { p[threadIdx.x] = 1.0f; }

[[noreturn]] void illegal_address_then_exit() {
  Stream s;
  write_through_null<<<1, 32, 0, s>>>(nullptr);
  simprof::cuda::gputest::synchronize_or_exit(s);
}
}  // namespace

using StickyErrors = simprof::cuda::gputest::GpuTest;

TEST_F(StickyErrors, IllegalAddressSurfacesAsAnErrorNotAHang) {
  // A sticky error poisons the process's context: run it in a child.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(illegal_address_then_exit(), ::testing::ExitedWithCode(3),
              "cudaStreamSynchronize.*cudaErrorIllegalAddress");
}

namespace {

// Writes through the pointer found in device memory when it runs: one graph, and a fault at the
// replay that finds a null there.
__global__ void write_through(float* const* where) { (*where)[threadIdx.x] = 1.0f; }

// Windows of 3 active steps after 2 waiting and 1 warming up: steps 3-5 (window 0) and 9-11
// (window 1). The graph cache captures at step 3 and replays from step 4; step 10 faults.
constexpr int kFaultStep = 10;

[[noreturn]] void fault_in_a_replayed_traced_timed_step(const std::string& dir) {
  try {
    Stream s;
    DeviceBuffer<float> data(32);
    DeviceBuffer<float*> where(1);
    float* const target = data.data();
    where.copy_from_host(&target, 1, s);
    simprof::StepProfiler prof(simprof::testing::quiet(), 0);
    DeviceStageTimerOptions o;
    o.sample_every = 1;
    DeviceStageTimer timer(prof, s, o);
    simprof::TraceOptions to;
    to.schedule = simprof::Schedule{2, 1, 3, 0, 0};
    to.dir = dir;
    simprof::TraceSession session(prof, to);
    KernelTracer kernels(prof);
    auto joined = session.add_source(&kernels);
    GraphCache cache(s);
    for (int i = 0; i < 20; ++i) {
      if (i == kFaultStep) {
        float* const null = nullptr;
        where.copy_from_host(&null, 1, s);
      }
      auto step = prof.step();
      cache.run({1}, [&](cudaStream_t st) {
        auto stage = prof.stage("physics");
        write_through<<<1, 32, 0, st>>>(where.data());
      });
    }
    s.synchronize();
  } catch (const CudaError& e) {  // every owner above has been destroyed by now
    std::fprintf(stderr, "CudaError from %s: %s\n", e.call().c_str(), e.what());
    if (std::FILE* f = std::fopen((dir + ".error").c_str(), "w")) {  // for the parent to show
      std::fprintf(f, "%s", e.what());
      std::fclose(f);
    }
    std::exit(3);
  }
  std::exit(0);
}

}  // namespace

// A kernel that faults inside a replayed graph, while the step is traced (CUPTI) and timed on the
// device: the fault surfaces as a CudaError naming the call, every owner unwinds without a second
// error, and the trace written so far (window 0, whole; window 1, what it had) is valid JSON.
TEST_F(StickyErrors, FaultInAReplayedTracedTimedStepIsACudaErrorAndTheTraceStaysValid) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string dir = ::testing::TempDir() + "simprof_fault_trace";
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".error");
  EXPECT_EXIT(fault_in_a_replayed_traced_timed_step(dir), ::testing::ExitedWithCode(3),
              "CudaError from cuda[A-Za-z]+.*cudaErrorIllegalAddress");
  const std::string whole = dir + "/simprof_trace_0/rank0.json";
  ASSERT_TRUE(std::filesystem::exists(whole)) << "window 0 was written before the fault";
  const auto w0 = nlohmann::json::parse(simprof::testing::slurp(whole));
  EXPECT_FALSE(w0["otherData"].contains("incomplete"));
  int kernels = 0;
  for (const auto& e : w0["traceEvents"]) kernels += e.value("cat", "") == "kernel";
  EXPECT_GT(kernels, 0) << "window 0 holds its kernels (CUPTI was there)";
  std::printf("the fault surfaced as: %s\n", simprof::testing::slurp(dir + ".error").c_str());
  // Window 1 held the fault: written when it ended, it says the device failed; or, had the error
  // ended the loop inside it, written by the session's destructor marked incomplete.
  const std::string faulted = dir + "/simprof_trace_1/rank0.json";
  ASSERT_TRUE(std::filesystem::exists(faulted));
  const auto w1 = nlohmann::json::parse(simprof::testing::slurp(faulted));
  const std::string device_error = w1["otherData"].value("device_error", "");
  EXPECT_TRUE(device_error.find("cudaErrorIllegalAddress") != std::string::npos ||
              w1["otherData"].value("incomplete", "") == "true")
      << w1["otherData"].dump();
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.is_regular_file()) {
      EXPECT_EQ(f.path().extension(), ".json") << "no temporary left: " << f.path();
      EXPECT_TRUE(nlohmann::json::accept(simprof::testing::slurp(f.path().string()))) << f.path();
    }
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".error");
}

TEST(DeviceBuffer, RejectsOversizedCopies) {
  std::string why;
  if (!device_available(&why)) GTEST_SKIP() << "GPU test skipped: " << why;
  Stream s;
  DeviceBuffer<float> b(4);
  std::vector<float> h(8);
  try {
    b.copy_from_host(h.data(), 8, s);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("8 elements"), std::string::npos) << e.what();
  }
}
