// SPDX-License-Identifier: MIT
#include "run_json.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
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

namespace simprof::record {

namespace {

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

}  // namespace

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

std::string command_line(int argc, char** argv) {
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  return command;
}

Json provenance(const std::string& tool, const std::string& command) {
  const std::string driver = nvidia_driver_version();  // "": none here (null: no GPU driver)
  return {{"tool", tool},
          {"simprof_commit", SIMPROF_GIT_COMMIT},
          {"build_type", SIMPROF_BUILD_TYPE},
          {"compiler", compiler()},
          {"date_utc", utc_now()},
          {"host", host_name()},
          {"cpu", cpu_model()},
          {"cpus", std::thread::hardware_concurrency()},
          {"nvidia_driver", driver.empty() ? Json(nullptr) : Json(driver)},
          {"command", command}};
}

JsonFile::JsonFile(const std::string& path) : path_(path) {
  errno = 0;
  out_.open(path, std::ios::out | std::ios::trunc);
  if (!out_)
    throw std::runtime_error(fmt::format("--json {}: cannot open it for writing ({})", path,
                                         errno ? std::strerror(errno) : "unknown reason"));
}

void JsonFile::write(const Json& doc) {
  out_ << doc.dump(2) << '\n';
  out_.flush();
  if (!out_) throw std::runtime_error(fmt::format("--json {}: the write failed", path_));
}

Json stage_rows_json(const std::vector<StageRow>& rows, const StepProfiler* prof) {
  Json out = Json::array();
  for (const StageRow& r : rows) {
    Json row = {{"stage", r.name},
                {"depth", r.depth},
                {"steps", r.stats.count},
                {"mean_s", number(r.stats.mean)},
                {"sd_s", number(r.stats.stddev)},
                {"p50_s", number(r.stats.p50)},
                {"p95_s", number(r.stats.p95)},
                {"p99_s", number(r.stats.p99)},
                {"share_percent", number(r.share)},
                {"ran_in_fewer_steps", r.partial}};
    if (prof != nullptr) {
      const std::string_view clock = prof->stage_clock(r.id);
      if (!clock.empty()) row["clock"] = std::string(clock);
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace simprof::record
