// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "gpu_test.hpp"

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
