// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include "simprof/base/io.hpp"
#include "simprof/profiler/options.hpp"
#include "test_util.hpp"

using simprof::ProfilingOptions;

namespace {

// The message of the std::invalid_argument that `f` throws, or "" when it does not throw.
template <class F>
std::string error_of(F&& f) {
  return simprof::testing::error_of<std::invalid_argument>(std::forward<F>(f));
}

// Sets an environment variable for the scope of one test.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~EnvVar() { ::unsetenv(name_); }

 private:
  const char* name_;
};

}  // namespace

TEST(ProfilingOptions, DefaultsMatchGenesis) {
  ProfilingOptions o;
  EXPECT_TRUE(o.show_fps);
  EXPECT_DOUBLE_EQ(o.fps_tracker_alpha, 0.95);
  EXPECT_EQ(o.fps_sample_interval, std::chrono::milliseconds(50));
  EXPECT_EQ(o.timings_window, 1u);
  EXPECT_NO_THROW(o.validate());
}

TEST(ProfilingOptions, RejectsWhatGenesisAccepts) {
  for (double alpha : {1.5, -3.0, std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity()}) {
    ProfilingOptions o;
    o.fps_tracker_alpha = alpha;
    const std::string msg = error_of([&] { o.validate(); });
    EXPECT_NE(msg.find("fps_tracker_alpha"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[0, 1]"), std::string::npos) << msg;
  }
  ProfilingOptions o;
  o.fps_tracker_alpha = 1.5;
  EXPECT_NE(error_of([&] { o.validate(); }).find("= 1.5"), std::string::npos);
}

TEST(ProfilingOptions, AcceptsTheEndsOfAlpha) {
  ProfilingOptions o;
  o.fps_tracker_alpha = 0.0;
  EXPECT_NO_THROW(o.validate());
  o.fps_tracker_alpha = 1.0;
  EXPECT_NO_THROW(o.validate());
}

TEST(ProfilingOptions, RejectsNonPositiveIntervalAndZeroWindow) {
  ProfilingOptions o;
  o.fps_sample_interval = std::chrono::nanoseconds(0);
  EXPECT_NE(error_of([&] { o.validate(); }).find("fps_sample_interval = 0 ns"), std::string::npos);
  o.fps_sample_interval = std::chrono::milliseconds(-5);
  EXPECT_NE(error_of([&] { o.validate(); }).find("fps_sample_interval"), std::string::npos);
  o = ProfilingOptions{};
  o.timings_window = 0;
  EXPECT_NE(error_of([&] { o.validate(); }).find("timings_window = 0"), std::string::npos);
  o = ProfilingOptions{};
  o.stats_window = std::size_t{1} << 30;
  EXPECT_NE(error_of([&] { o.validate(); }).find("stats_window"), std::string::npos);
  o = ProfilingOptions{};
  o.clock = static_cast<simprof::ClockSource>(42);
  EXPECT_NE(error_of([&] { o.validate(); }).find("clock = 42"), std::string::npos);
}

TEST(ProfilingOptions, EnvironmentOverrides) {
  EnvVar a("SIMPROF_SHOW_FPS", "off");
  EnvVar b("SIMPROF_FPS_ALPHA", "0.5");
  EnvVar c("SIMPROF_FPS_INTERVAL_MS", "100");
  EnvVar d("SIMPROF_TIMINGS_WINDOW", "10");
  EnvVar e("SIMPROF_STATS_WINDOW", "0");
  EnvVar f("SIMPROF_CLOCK", "Steady");
  const auto o = ProfilingOptions::from_env();
  EXPECT_FALSE(o.show_fps);
  EXPECT_DOUBLE_EQ(o.fps_tracker_alpha, 0.5);
  EXPECT_EQ(o.fps_sample_interval, std::chrono::milliseconds(100));
  EXPECT_EQ(o.timings_window, 10u);
  EXPECT_EQ(o.stats_window, 0u);
  EXPECT_EQ(o.clock, simprof::ClockSource::kSteady);
}

TEST(ProfilingOptions, EnvironmentKeepsBaseWhereUnset) {
  ProfilingOptions base;
  base.fps_tracker_alpha = 0.7;
  EXPECT_DOUBLE_EQ(ProfilingOptions::from_env(base).fps_tracker_alpha, 0.7);
}

TEST(ProfilingOptions, EnvironmentIsValidated) {
  {
    EnvVar v("SIMPROF_FPS_ALPHA", "1.5");
    const auto msg = error_of([] { ProfilingOptions::from_env(); });
    EXPECT_NE(msg.find("SIMPROF_FPS_ALPHA='1.5'"), std::string::npos) << msg;
  }
  {
    EnvVar v("SIMPROF_FPS_ALPHA", "nan");
    EXPECT_NE(error_of([] { ProfilingOptions::from_env(); }).find("SIMPROF_FPS_ALPHA"),
              std::string::npos);
  }
  {
    EnvVar v("SIMPROF_FPS_ALPHA", "0.9x");
    EXPECT_NE(error_of([] { ProfilingOptions::from_env(); }).find("a number"), std::string::npos);
  }
  {
    EnvVar v("SIMPROF_SHOW_FPS", "maybe");
    EXPECT_NE(error_of([] { ProfilingOptions::from_env(); }).find("SIMPROF_SHOW_FPS='maybe'"),
              std::string::npos);
  }
  {
    EnvVar v("SIMPROF_FPS_INTERVAL_MS", "-1");
    EXPECT_NE(error_of([] { ProfilingOptions::from_env(); }).find("SIMPROF_FPS_INTERVAL_MS"),
              std::string::npos);
  }
  {
    EnvVar v("SIMPROF_TIMINGS_WINDOW", "0");
    EXPECT_NE(error_of([] { ProfilingOptions::from_env(); }).find("SIMPROF_TIMINGS_WINDOW='0'"),
              std::string::npos);
  }
  {
    EnvVar v("SIMPROF_TIMINGS_WINDOW", "-4");
    EXPECT_NE(error_of([] { ProfilingOptions::from_env(); }).find("unsigned integer"),
              std::string::npos);
  }
  {
    EnvVar v("SIMPROF_CLOCK", "sundial");
    EXPECT_NE(error_of([] { ProfilingOptions::from_env(); }).find("auto, steady, tsc"),
              std::string::npos);
  }
}

TEST(ProfilingOptions, ToStringNamesEveryField) {
  const std::string s = ProfilingOptions{}.to_string();
  for (const char* f : {"show_fps=true", "fps_tracker_alpha=0.95", "fps_sample_interval=50ms",
                        "timings_window=1", "stats_window=0", "clock=auto"})
    EXPECT_NE(s.find(f), std::string::npos) << s;
}

// The driver's own version, as users compare it (nvidia-smi's), from /proc/driver/nvidia/version.
TEST(HostInfo, NvidiaDriverVersionFromProcText) {
  EXPECT_EQ(simprof::parse_nvidia_driver_version(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct 30 10:01:02 "
                "UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
            "580.159.04");
  EXPECT_EQ(simprof::parse_nvidia_driver_version(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release "
                "Build  (dvs-builder@U16)  Thu Oct 30 UTC 2025\n"),
            "580.159.04");
  EXPECT_EQ(simprof::parse_nvidia_driver_version(""), "");
  EXPECT_EQ(simprof::parse_nvidia_driver_version("GCC version: 12\n"), "");
  EXPECT_EQ(simprof::parse_nvidia_driver_version("NVRM version: NVIDIA UNIX Kernel Module\n"), "");
  EXPECT_EQ(simprof::parse_nvidia_driver_version("NVRM version: Kernel Module  beta-1 x\n"), "");
  // Where no driver is loaded (CI), "": never a made-up value.
  const std::string v = simprof::nvidia_driver_version();
  EXPECT_TRUE(v.empty() || v.find_first_not_of("0123456789.") == std::string::npos) << v;
}

// The GPUs' clocks in a run record's provenance, from nvidia-smi's CSV: three numbers a GPU.
TEST(HostInfo, NvidiaSmiClocksFromItsCsv) {
  const auto c = simprof::parse_nvidia_smi_clocks("1980, 1980, 3201\n345, 1980, 3201\n");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].sm_mhz, 1980);
  EXPECT_EQ(c[1].sm_mhz, 345);
  EXPECT_EQ(c[1].max_sm_mhz, 1980);
  EXPECT_EQ(c[1].memory_mhz, 3201);
  // A GPU whose line is not three numbers ([N/A], a fourth field) keeps its place, unknown (0),
  // so the clocks stay beside the right GPU; output with no GPU's line (an error) is none.
  const auto gap = simprof::parse_nvidia_smi_clocks(
      "1980, 1980, 3201\n[N/A], 1980, 3201\n"
      "1, 2, 3, 4\n1410, 1980, 3201\n");
  ASSERT_EQ(gap.size(), 4u);
  EXPECT_EQ(gap[1].sm_mhz, 0);
  EXPECT_EQ(gap[1].max_sm_mhz, 0);
  EXPECT_EQ(gap[2].memory_mhz, 0);
  EXPECT_EQ(gap[3].sm_mhz, 1410);
  EXPECT_TRUE(simprof::parse_nvidia_smi_clocks("").empty());
  EXPECT_TRUE(simprof::parse_nvidia_smi_clocks("NVIDIA-SMI has failed\n").empty());
  EXPECT_TRUE(simprof::parse_nvidia_smi_clocks("[N/A], [N/A], [N/A]\n").empty());
  // Where no driver is loaded (CI), none: never a made-up value.
  for (const auto& g : simprof::nvidia_gpu_clocks()) EXPECT_GT(g.max_sm_mhz, 0);
}
