// SPDX-License-Identifier: MIT
#include "run_record.hpp"

#include "run_json.hpp"

#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace simprof::examples {

namespace {

Json run_json(const RunRecord& r) {
  Json j = {// What decides a step's work: `simprof compare` pairs runs by it.
            {"workload", {{"backend", r.backend}, {"mode", r.mode}, {"n_envs", r.n_envs}}},
            {"backend", r.backend},
            {"mode", r.mode},
            {"n_envs", r.n_envs},
            {"warmup_steps", r.warmup},
            {"steps", r.steps},
            {"seconds", number(r.seconds)},
            {"throughput_env_steps_per_s", number(r.throughput)},
            {"throughput_clock", r.throughput_clock},
            {"stages", stage_rows_json(r.host)}};
  // The FPS line as every record writes it, and how it compares with the measured throughput.
  j["fps"] = r.fps_line;
  j["fps"]["ratio_to_throughput"] = r.throughput > 0 ? number(r.fps / r.throughput) : Json(nullptr);
  if (!r.host_warmup.empty()) j["host_stages_warmup_and_capture"] = stage_rows_json(r.host_warmup);
  if (!r.device.empty())  // the stage timer's: `simprof compare` tests these like the host's
    j["device"] = {{"clock", "GPU"},
                   {"sample_every", r.device_sample_every},
                   {"sampled_steps_joined", r.device_joined},
                   {"sampled_steps_lost", r.device_untimed},
                   {"stages", stage_rows_json(r.device)}};
  if (r.graph_cache) {
    const GraphCacheRecord& g = *r.graph_cache;
    j["graph_cache"] = {
        {"warmup_runs", g.warmup_runs},
        {"captures", g.captures},
        {"instantiations", g.instantiations},
        {"replays", g.replays},
        {"cold_start", {{"capture_s", g.capture_s}, {"instantiate_s", g.instantiate_s}}}};
  }
  if (r.pacer)
    j["steps_in_flight"] = {{"max", r.pacer->max_in_flight},
                            {"waits", r.pacer->waits},
                            {"wait_s", r.pacer->wait_s},
                            {"most_in_flight", r.pacer->most_in_flight}};
  if (r.memory) {
    const MemoryRecord& m = *r.memory;
    Json rows = Json::array();
    for (const MemoryRow& row : m.stages)
      rows.push_back({{"stage", row.name},
                      {"depth", row.depth},
                      {"device_allocs_per_step", number(row.device_allocs)},
                      {"device_bytes_per_step", number(row.device_bytes)},
                      {"host_allocs_per_step", number(row.host_allocs)},
                      {"host_bytes_per_step", number(row.host_bytes)}});
    auto known = [](std::int64_t v) { return v < 0 ? Json(nullptr) : Json(v); };
    j["memory"] = {{"device_peak_bytes", known(m.device_peak_bytes)},
                   {"device_in_use_bytes", known(m.device_in_use_bytes)},
                   {"graph_memory_bytes", m.graph_memory_bytes},
                   {"steady_allocating_steps", m.steady_allocating_steps},
                   {"host_peak_resident_kib", known(m.host_peak_resident_kib)},
                   {"stages", rows}};
  }
  return j;
}

// The process's resident peak (VmHWM in /proc/self/status), KiB; -1 where there is none.
std::int64_t peak_resident_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

}  // namespace

MemoryRecord memory_record(const StepProfiler& prof, const MemoryTracker& memory,
                           std::int64_t graph_memory_bytes) {
  MemoryRecord m;
  for_each_stage_row(prof, [&](StageId id, int depth) {
    if (id == kPeriodStage) return;
    const std::string name(prof.stage_name(id));
    if (memory.steps(name) == 0) return;
    m.stages.push_back({name, depth, memory.allocs_per_step(name, MemorySide::kDevice),
                        memory.bytes_per_step(name, MemorySide::kDevice),
                        memory.allocs_per_step(name, MemorySide::kHost),
                        memory.bytes_per_step(name, MemorySide::kHost)});
  });
  m.device_peak_bytes = memory.device_peak_bytes();
  m.device_in_use_bytes = memory.device_in_use_bytes();
  m.graph_memory_bytes = graph_memory_bytes;
  m.steady_allocating_steps = memory.steady_allocating_steps();
  m.host_peak_resident_kib = peak_resident_kib();
  return m;
}

std::string memory_line(const MemoryRecord& m) {
  constexpr double kMiB = 1024.0 * 1024.0;
  const MemoryRow* step = nullptr;
  for (const MemoryRow& r : m.stages)
    if (r.name == "step") step = &r;
  std::string device = "no device allocations counted";
  if (m.device_peak_bytes >= 0)
    device = fmt::format(
        "device peak {:.1f} MiB (CUDA allocations counted since the run began; {:.1f} MiB in use "
        "at the end{}), {:.2f} allocations per timed step, {} timed steps allocated after the "
        "warm-up",
        static_cast<double>(m.device_peak_bytes) / kMiB,
        static_cast<double>(m.device_in_use_bytes) / kMiB,
        m.graph_memory_bytes ? fmt::format(", graph memory {:.1f} MiB",
                                           static_cast<double>(m.graph_memory_bytes) / kMiB)
                             : std::string(),
        step ? step->device_allocs : 0.0, m.steady_allocating_steps);
  return fmt::format(
      "memory: {}; host {:.2f} allocations ({:.1f} KiB) per step, resident peak "
      "{:.1f} MiB\n",
      device, step ? step->host_allocs : 0.0, step ? step->host_bytes / 1024.0 : 0.0,
      static_cast<double>(m.host_peak_resident_kib) / 1024.0);
}

JsonReport::JsonReport(const std::string& path, const Args& args, int argc, char** argv)
    : file_(path), args_(args) {
  command_ = command_line(argc, argv);
}

JsonReport::~JsonReport() = default;

void JsonReport::write() {
  Json prov = provenance("simprof speed_benchmark", command_);
  prov["options"] = {
      {"backend", args_.backend},     {"n_envs", args_.n_envs}, {"steps", args_.steps},
      {"warmup", args_.warmup},       {"eager", args_.eager},   {"sweep", args_.sweep},
      {"in_flight", args_.in_flight}, {"trace", args_.trace},   {"sync", args_.sync}};
  if (gpu_)
    prov["gpu"] = {{"name", gpu_->name},
                   {"compute_capability", fmt::format("{}.{}", gpu_->compute_capability / 10,
                                                      gpu_->compute_capability % 10)},
                   {"driver_version", prov.at("nvidia_driver")},       // "580.159.04", read once
                   {"cuda_driver_api_version", gpu_->driver_version},  // 13000: CUDA 13.0
                   {"runtime_version", gpu_->runtime_version},
                   {"sm_clock_mhz_at_start", number(gpu_->sm_clock_mhz)},
                   {"sm_clock_nominal_mhz", number(gpu_->sm_clock_nominal_mhz)}};
  Json root = {{"schema", kRunRecordSchema}, {"provenance", prov}};
  Json runs = Json::array();
  for (const RunRecord& r : runs_) {
    Json j = run_json(r);
    j["workload"]["in_flight"] = args_.in_flight;
    j["workload"]["sync"] = args_.sync;
    runs.push_back(std::move(j));
  }
  root["runs"] = runs;
  if (!sweep_.empty()) {
    Json rows = Json::array();
    for (const SweepRow& s : sweep_)
      rows.push_back(
          {{"n_envs", s.n_envs},
           {"eager_us_per_step", s.eager_us},
           {"graph_us_per_step", s.graph_us},
           {"clock", "cuda events"},
           {"speedup", s.graph_us > 0 ? number(s.eager_us / s.graph_us) : Json(nullptr)}});
    root["sweep"] = rows;
  }
  file_.write(root);
}

}  // namespace simprof::examples
