// SPDX-License-Identifier: MIT
// Per-rank traces that Holistic Trace Analysis and Perfetto read together. kineto_contract.hpp
// encodes HTA's and Kineto's rules; torch.profiler's own 2-GPU NCCL traces pass them (so the rules
// are the reference's), two simprof "ranks" pass them, and each rule catches its violation.
#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kineto_contract.hpp"
#include "simprof/base/manual_clock.hpp"
#include "simprof/base/ranks.hpp"
#include "simprof/profiler/collective.hpp"
#include "simprof/trace/chrome_json.hpp"
#include "simprof/trace/session.hpp"
#include "test_util.hpp"

using namespace simprof;
using json = nlohmann::json;
using simprof::testing::kineto_violations;
using simprof::testing::profiler_steps;
using simprof::testing::quiet;
using simprof::testing::slurp;
namespace fs = std::filesystem;

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

// What the CUDA tracer would report for a step, in the session's timebase: the program calls
// launch() where it launches, and each launch becomes a host launch span (on this thread) and a
// kernel 5 us later on stream 7 of this rank's device; each step also copies, sets and
// synchronises.
struct FakeCuda : TraceSource {
  int device = 0;
  TimeBase tb;
  std::vector<Span> window;
  std::uint64_t next_correlation = 100;
  bool running = false;
  void bind(const TimeBase& t) override { tb = t; }
  void start() override {
    running = true;
    window.clear();
  }
  void discard() override { window.clear(); }
  std::uint64_t stop_and_collect(std::vector<Span>& out) override {
    running = false;
    out.insert(out.end(), window.begin(), window.end());
    return 0;
  }
  void describe(Trace& t) const override {
    DeviceProperties d;
    d.id = device;
    d.name = "Fake GPU";
    t.devices.push_back(d);
    t.versions["cuda_driver_version"] = 13000;
  }
  void launch(const std::string& kernel, LaunchApi api) {
    if (!running) return;
    const std::int64_t now = tb.now_ns();
    const auto corr = next_correlation++;
    const auto pid = static_cast<std::int64_t>(::getpid());
    const auto tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
    window.push_back(
        Span::launch(api == LaunchApi::kDriver ? "cuLaunchKernelEx" : "cudaLaunchKernel", now,
                     now + 2000, pid, tid, corr, CallPayload{0, api, false}));
    // NCCL's kernels run on a stream of their own, beside the compute stream.
    const std::int64_t stream = api == LaunchApi::kDriver ? 9 : 7;
    window.push_back(Span::kernel(kernel, now + 5000, now + 15000, device, stream, corr));
    window.push_back(Span::flow(corr, now, pid, tid, now + 5000, device, stream));
  }
  void copy_and_sync() {
    if (!running) return;
    const std::int64_t now = tb.now_ns();
    const auto corr = next_correlation++;
    const auto pid = static_cast<std::int64_t>(::getpid());
    const auto tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
    window.push_back(Span::launch("cudaMemcpyAsync", now, now + 1000, pid, tid, corr));
    window.push_back(Span::memcpy(CopyKind::kDtoH, 4096, now + 2000, now + 3000, device, 7, corr));
    window.push_back(Span::launch("cudaMemsetAsync", now, now + 1000, pid, tid, corr + 1000));
    window.push_back(Span::memset(64, now + 3000, now + 3500, device, 7, corr + 1000));
    window.push_back(
        Span::synchronization(SyncKind::kStream, now + 3500, now + 4000, device, 7, corr + 2000));
  }
};

// One simulated rank: a profiler on a manual clock, a trace session (window: steps 2-4 after a
// warm-up step) with the fake tracer, a per-step compute kernel and an all-reduce in a collective
// scope. Returns the files written.
std::vector<std::string> run_rank(int rank, int world, const std::string& dir) {
  ManualClock mc;
  StepProfiler prof(quiet(), 1024, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{1, 1, 3, 1, 0};
  o.dir = dir;
  o.ranks = RankInfo::explicit_ranks(rank, world);
  o.backend = "nccl";
  TraceSession session(prof, o);
  FakeCuda cuda;
  cuda.device = rank;
  auto joined = session.add_source(&cuda);
  const ProcessGroup world_group = ProcessGroup::world(world);
  for (int i = 0; i < 6; ++i) {
    auto step = prof.step();
    {
      auto s = prof.stage("physics");
      mc.advance_ns(1000);
      cuda.launch("integrate_kernel", LaunchApi::kRuntime);
      mc.advance_ns(20'000);
    }
    {
      auto c = collective(prof, CollectiveOp::kAllReduce, 1024, DType::kFloat, world_group);
      mc.advance_ns(1000);
      cuda.launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL", LaunchApi::kDriver);
      mc.advance_ns(3000);
    }
    cuda.copy_and_sync();
    mc.advance_ns(10'000);
  }
  return session.files();
}

std::string kineto_reference(int rank) {
  return slurp(std::string(SIMPROF_TEST_DATA_DIR) + "/kineto-2gpu/rank" + std::to_string(rank) +
               ".json");
}

}  // namespace

TEST(KinetoContract, TorchProfilersOwnTracesPassIt) {
  for (int rank : {0, 1}) {
    const std::string raw = kineto_reference(rank);
    ASSERT_FALSE(raw.empty()) << "tests/data/kineto-2gpu/rank" << rank << ".json is missing";
    EXPECT_TRUE(kineto_violations(raw, rank).empty())
        << "rank " << rank << ":" << joined(kineto_violations(raw, rank));
  }
  EXPECT_EQ(profiler_steps(json::parse(kineto_reference(0))),
            profiler_steps(json::parse(kineto_reference(1))));
}

TEST(KinetoContract, TwoSimprofRanksPassItAndLineUp) {
  const std::string dir = ::testing::TempDir() + "simprof_contract";
  fs::remove_all(dir);
  const auto files0 = run_rank(0, 2, dir);
  const auto files1 = run_rank(1, 2, dir);
  ASSERT_EQ(files0.size(), 1u);
  ASSERT_EQ(files1.size(), 1u);
  // One directory per window holding only rank<R>.json (HTA takes any .json there as a rank).
  EXPECT_EQ(files0[0], dir + "/simprof_trace_0/rank0.json");
  EXPECT_EQ(files1[0], dir + "/simprof_trace_0/rank1.json");
  std::set<std::string> listed;
  for (const auto& f : fs::directory_iterator(dir + "/simprof_trace_0"))
    listed.insert(f.path().filename().string());
  EXPECT_EQ(listed, (std::set<std::string>{"rank0.json", "rank1.json"}));

  json traces[2];
  for (int r : {0, 1}) {
    const std::string raw = slurp(r ? files1[0] : files0[0]);
    EXPECT_TRUE(kineto_violations(raw, r).empty())
        << "rank " << r << ":" << joined(kineto_violations(raw, r));
    traces[r] = json::parse(raw);
    EXPECT_EQ(traces[r]["distributedInfo"]["world_size"], 2);
    EXPECT_EQ(traces[r]["distributedInfo"]["backend"], "nccl");
    EXPECT_EQ(traces[r]["deviceProperties"][0]["id"], r);
    // The session checked the window's physics (trace/causality.hpp): 3 steps of a kernel, an
    // all-reduce, a copy and a memset, on the compute and the NCCL stream.
    EXPECT_EQ(traces[r]["otherData"]["causality"], "ok: 12 device spans on 2 tracks");
  }
  // ProfilerStep#N: the profiler's own step numbers, the same on every rank.
  EXPECT_EQ(profiler_steps(traces[0]), (std::set<int>{2, 3, 4}));
  EXPECT_EQ(profiler_steps(traces[1]), profiler_steps(traces[0]));
  // One time base: ts * 1000 + baseTimeNanoseconds is wall-clock time (HTA's conversion), so the
  // two processes' files line up; here both were written within the same test.
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  for (const json& t : traces) {
    EXPECT_EQ(t["baseTimeNanoseconds"], kTraceBaseTimeNs);
    for (const auto& e : t["traceEvents"])
      if (e.value("name", "") == "ProfilerStep#2") {
        const double unix_ns = e["ts"].get<double>() * 1e3 + static_cast<double>(kTraceBaseTimeNs);
        EXPECT_LT(std::abs(unix_ns - static_cast<double>(now_ns)), 3600e9) << "not wall-clock";
      }
  }
  // The all-reduce's arguments are on the NCCL kernel it launched, under Kineto's names.
  int nccl = 0;
  for (const auto& e : traces[1]["traceEvents"])
    if (e.value("cat", "") == "kernel" && e.value("name", "").rfind("nccl", 0) == 0) {
      ++nccl;
      const json& a = e["args"];
      EXPECT_EQ(a["Collective name"], "allreduce");
      EXPECT_EQ(a["In msg nelems"], 1024);
      EXPECT_EQ(a["Out msg nelems"], 1024);
      EXPECT_EQ(a["Group size"], 2);
      EXPECT_EQ(a["dtype"], "Float");
      EXPECT_EQ(a["Process Group Name"], "0");
      EXPECT_EQ(a["Process Group Ranks"], "[0, 1]");
      EXPECT_EQ(a["Rank"], 1);
    }
  EXPECT_EQ(nccl, 3);  // one per traced step
  fs::remove_all(dir);
}

TEST(KinetoContract, EachRuleCatchesItsViolation) {
  const std::string dir = ::testing::TempDir() + "simprof_contract_bad";
  fs::remove_all(dir);
  const std::string good = slurp(run_rank(1, 2, dir).at(0));
  ASSERT_TRUE(kineto_violations(good, 1).empty()) << joined(kineto_violations(good, 1));
  auto broken = [&](auto&& edit) {
    json j = json::parse(good);
    edit(j);
    return j.dump();  // compact: "rank":1 has no space after the colon
  };
  auto has = [](const std::vector<std::string>& v, const std::string& rule) {
    for (const auto& x : v)
      if (x.rfind(rule + ":", 0) == 0) return true;
    return false;
  };
  // Written compactly, the raw-text rank regex of HTA no longer matches.
  EXPECT_TRUE(has(kineto_violations(json::parse(good).dump(), 1), "rank"));
  const std::string no_info = broken([](json& j) { j.erase("distributedInfo"); });
  EXPECT_TRUE(has(kineto_violations(no_info, 1), "header"));
  const std::string memcpy_without_stream = broken([](json& j) {
    for (auto& e : j["traceEvents"])
      if (e.value("cat", "") == "gpu_memcpy") e["args"].erase("stream");
  });
  EXPECT_TRUE(has(kineto_violations(memcpy_without_stream, 1), "device"));
  const std::string host_with_stream = broken([](json& j) {
    for (auto& e : j["traceEvents"])
      if (e.value("cat", "") == "cuda_runtime") e["args"]["stream"] = 7;
  });
  EXPECT_TRUE(has(kineto_violations(host_with_stream, 1), "host"));
  const std::string no_driver = broken([](json& j) {
    auto& ev = j["traceEvents"];
    ev.erase(std::remove_if(ev.begin(), ev.end(),
                            [](const json& e) { return e.value("cat", "") == "cuda_driver"; }),
             ev.end());
  });
  EXPECT_TRUE(has(kineto_violations(no_driver, 1), "launch"));
  const std::string no_collective = broken([](json& j) {
    for (auto& e : j["traceEvents"])
      if (e.value("name", "").rfind("nccl", 0) == 0 && e.value("cat", "") == "kernel")
        e["args"].erase("Collective name");
  });
  EXPECT_TRUE(has(kineto_violations(no_collective, 1), "collective"));
  const std::string sync_on_host = broken([](json& j) {
    for (auto& e : j["traceEvents"])
      if (e.value("cat", "") == "cuda_sync") e["pid"] = 12345;
  });
  EXPECT_TRUE(has(kineto_violations(sync_on_host, 1), "sync"));
  const std::string unnamed = broken([](json& j) {
    auto& ev = j["traceEvents"];
    ev.erase(std::remove_if(ev.begin(), ev.end(),
                            [](const json& e) { return e.value("name", "") == "thread_name"; }),
             ev.end());
  });
  EXPECT_TRUE(has(kineto_violations(unnamed, 1), "metadata"));
  const std::string crossing = broken([](json& j) {  // a stage outlasting its step by 1 s
    double step = -1;
    for (auto& e : j["traceEvents"]) {
      if (e.value("ph", "") != "X") continue;
      const double ts = e["ts"].get<double>();
      if (step < 0 && e.value("name", "").rfind("ProfilerStep#", 0) == 0) step = ts;
      if (step >= 0 && ts > step && e.value("cat", "") == "cpu_op") {
        e["dur"] = e["dur"].get<double>() + 1e6;
        break;
      }
    }
  });
  EXPECT_TRUE(has(kineto_violations(crossing, 1), "nest"));
  const std::string wide_tid = broken([](json& j) {
    for (auto& e : j["traceEvents"])
      if (e.value("cat", "") == "cpu_op") e["tid"] = std::int64_t{1} << 32;
  });
  EXPECT_TRUE(has(kineto_violations(wide_tid, 1), "tid"));
  EXPECT_TRUE(has(kineto_violations(good, 0), "rank"));  // rank 1's file is not rank 0's
  fs::remove_all(dir);
}

TEST(RankInfo, FromTheLaunchersEnvironment) {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  const RankInfo none = RankInfo::from_env(env({}));
  EXPECT_EQ(none.rank, 0);
  EXPECT_EQ(none.world_size, 1);
  EXPECT_EQ(none.source, "default");
  const RankInfo torchrun =
      RankInfo::from_env(env({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}}));
  EXPECT_EQ(torchrun.rank, 3);
  EXPECT_EQ(torchrun.world_size, 8);
  EXPECT_EQ(torchrun.local_rank, 1);
  EXPECT_EQ(torchrun.source, "RANK/WORLD_SIZE");
  const RankInfo ompi = RankInfo::from_env(env({{"OMPI_COMM_WORLD_RANK", "1"},
                                                {"OMPI_COMM_WORLD_SIZE", "2"},
                                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  EXPECT_EQ(ompi.rank, 1);
  EXPECT_EQ(ompi.source, "OMPI_COMM_WORLD_*");
  const RankInfo slurm = RankInfo::from_env(
      env({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "1"}}));
  EXPECT_EQ(slurm.rank, 5);
  EXPECT_EQ(slurm.local_rank, 1);
  const RankInfo pmi = RankInfo::from_env(env({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}}));
  EXPECT_EQ(pmi.local_rank, 2);  // no local rank given: the rank
  // torchrun's variables win over Slurm's (torchrun inside an allocation).
  EXPECT_EQ(
      RankInfo::from_env(
          env({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}))
          .rank,
      1);
  using simprof::testing::error_of;
  EXPECT_EQ(error_of<std::invalid_argument>([&] {
              RankInfo::from_env(env({{"RANK", "one"}, {"WORLD_SIZE", "2"}}));
            }),
            "simprof: environment RANK='one' (expected a rank >= 0)");
  EXPECT_EQ(error_of<std::invalid_argument>([&] {
              RankInfo::from_env(env({{"RANK", "2"}, {"WORLD_SIZE", "2"}}));
            }),
            "simprof: environment RANK='2' with WORLD_SIZE='2' (expected a rank below the world "
            "size)");
  EXPECT_EQ(error_of<std::invalid_argument>([&] {
              RankInfo::from_env(env({{"RANK", "0"}}));
            }),
            "simprof: environment RANK is set but WORLD_SIZE is not (a launcher sets both)");
  EXPECT_EQ(error_of<std::invalid_argument>([&] {
              RankInfo::from_env(env({{"RANK", "0"}, {"WORLD_SIZE", "0"}}));
            }),
            "simprof: environment WORLD_SIZE='0' (expected a world size >= 1)");
  EXPECT_EQ(error_of<std::invalid_argument>([] { RankInfo::explicit_ranks(2, 2); }),
            "simprof: RankInfo.rank = 2 (expected 0 <= rank < world_size = 2)");
  EXPECT_EQ(error_of<std::invalid_argument>([] { ProcessGroup::world(0); }),
            "simprof: ProcessGroup::world(0) (expected a world size >= 1)");
}
