// SPDX-License-Identifier: MIT
#include "simprof/profiler/run_record.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "simprof/base/io.hpp"

#ifndef SIMPROF_GIT_COMMIT
#define SIMPROF_GIT_COMMIT "unknown"
#endif
#ifndef SIMPROF_BUILD_TYPE
#define SIMPROF_BUILD_TYPE "unknown"
#endif

namespace simprof {

namespace {

using Out = fmt::memory_buffer;

std::string quoted(std::string_view s) { return "\"" + json_escape(s) + "\""; }

std::string number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("unknown");
}

// /proc/cpuinfo's first "model name"; "unknown" where there is none.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  return "unknown";
}

// /proc/self/cmdline: the arguments, NUL-separated, joined by spaces.
std::string own_command() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && s.back() == '\0') s.pop_back();
  for (char& c : s)
    if (c == '\0') c = ' ';
  return s;
}

// Up to kRunRecordSamples of `v`, evenly spaced over it.
void samples(Out& out, const std::vector<double>& v) {
  const std::size_t n = v.size(), k = std::min(n, kRunRecordSamples);
  out.push_back('[');
  for (std::size_t i = 0; i < k; ++i)
    fmt::format_to(std::back_inserter(out), "{}{}", i ? "," : "", number(v[i * n / k]));
  out.push_back(']');
}

template <class... Args>
void put(Out& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

}  // namespace

std::string detail::provenance_json(const std::string& tool, const std::string& command) {
  const std::string driver = nvidia_driver_version();
  std::string gpus, clocks;
  for (const std::string& g : nvidia_gpu_models()) gpus += (gpus.empty() ? "" : ",") + quoted(g);
  const auto mhz = [](int v) { return v > 0 ? std::to_string(v) : std::string("null"); };
  for (const GpuClocks& c : nvidia_gpu_clocks())
    clocks += fmt::format("{}{{\"sm\":{},\"max_sm\":{},\"memory\":{}}}", clocks.empty() ? "" : ",",
                          mhz(c.sm_mhz), mhz(c.max_sm_mhz), mhz(c.memory_mhz));
  return fmt::format(
      "{{\"tool\":{},\"simprof_commit\":{},\"build_type\":{},\"compiler\":{},\"date_utc\":{},"
      "\"host\":{},\"cpu\":{},\"cpus\":{},\"nvidia_driver\":{},\"gpus\":[{}],"
      "\"gpu_clocks_mhz\":[{}],\"command\":{}}}",
      quoted(tool), quoted(SIMPROF_GIT_COMMIT), quoted(SIMPROF_BUILD_TYPE), quoted(compiler()),
      quoted(utc_now()), quoted(host_name()), quoted(cpu_model()),
      std::thread::hardware_concurrency(), driver.empty() ? "null" : quoted(driver), gpus, clocks,
      quoted(command.empty() ? own_command() : command));
}

std::string detail::stage_rows_json(const std::vector<StageRow>& rows) {
  Out out;
  out.push_back('[');
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const StageRow& r = rows[i];
    const LatencyStats& s = r.stats;
    put(out,
        "{}{{\"stage\":{},\"depth\":{},\"steps\":{},\"mean_s\":{},\"sd_s\":{},\"p50_s\":{},"
        "\"p95_s\":{},\"p99_s\":{},\"share_percent\":{},\"ran_in_fewer_steps\":{}",
        i ? "," : "", quoted(r.name), r.depth, s.count, number(s.mean), number(s.stddev),
        number(s.p50), number(s.p95), number(s.p99), number(r.share), r.partial);
    if (!r.clock.empty()) put(out, ",\"clock\":{}", quoted(r.clock));
    put(out, ",\"samples_s\":");
    samples(out, r.samples);
    out.push_back('}');
  }
  out.push_back(']');
  return fmt::to_string(out);
}

std::string detail::fps_json(const FpsTracker& fps) {
  Out out;
  put(out, "{{\"clock\":\"{}\",\"total_fps\":{},\"fps_per_env\":{},\"samples\":{},",
      fps.clock_kind() == FpsClock::kDevice ? "GPU" : "host", number(fps.total_fps()),
      number(fps.fps_per_env()), fps.num_samples());
  put(out, "\"rates_per_env\":");
  samples(out, fps.sample_rates());
  out.push_back('}');
  return fmt::to_string(out);
}

std::string run_record_json(const StepProfiler& prof, const RunRecordInfo& info) {
  for (std::size_t i = 0; i < info.workload.size(); ++i) {
    const std::string& key = info.workload[i].first;
    if (key.empty() || key == "n_envs")
      throw std::invalid_argument(fmt::format(
          "simprof: run record workload key '{}' (expected a name other than n_envs, which the "
          "record writes itself)",
          key));
    for (std::size_t j = 0; j < i; ++j)
      if (info.workload[j].first == key)
        throw std::invalid_argument(
            fmt::format("simprof: run record workload key '{}' given twice", key));
  }
  Out out;
  put(out, "{{\"schema\":{},\"provenance\":{},\"workload\":{{\"n_envs\":{}",
      quoted(kRunRecordSchema), detail::provenance_json(info.tool, info.command), prof.n_envs());
  for (const auto& [key, value] : info.workload) put(out, ",{}:{}", quoted(key), quoted(value));
  put(out, "}},\"n_envs\":{},\"steps\":{},\"clock\":\"host\",\"stages\":{},\"fps\":{}",
      prof.n_envs(), prof.steps(), detail::stage_rows_json(stage_rows(prof)),
      detail::fps_json(prof.fps()));
  if (!info.device_stages.empty())
    put(out, ",\"device\":{{\"clock\":\"GPU\",\"stages\":{}}}",
        detail::stage_rows_json(info.device_stages));
  put(out, "}}\n");
  return fmt::to_string(out);
}

void write_run_record(const StepProfiler& prof, const std::string& path,
                      const RunRecordInfo& info) {
  write_file_atomic(path, run_record_json(prof, info));
}

}  // namespace simprof
