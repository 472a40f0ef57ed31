// SPDX-License-Identifier: MIT
// The rules that Holistic Trace Analysis (hta/common/trace_file.py, trace_parser.py, trace.py,
// trace_filter.py, utils.py, configs/event_args_*.yaml) and Kineto's writer
// (libkineto/src/output_json.cpp, CuptiActivity.cpp) put on a per-rank trace, as one checker.
// HTA is Python and cannot run in CI; this holds our traces to its rules instead, and the tests
// hold torch.profiler's own traces of a 2-GPU NCCL step (tests/data/kineto-2gpu) to the same rules,
// so the rules are the reference's, not ours. Returns the violations, each naming its rule.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace simprof::testing {

struct ContractOptions {
  bool collectives = true;  ///< communication kernels must carry Kineto's collective args
};

inline bool host_category(const std::string& cat) {
  return cat == "cpu_op" || cat == "user_annotation" || cat == "cuda_runtime" ||
         cat == "cuda_driver" || cat == "overhead" || cat == "python_function";
}
inline bool device_category(const std::string& cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}

/// Host events on one thread (pid, tid) that cross the one they began in: HTA builds one call
/// stack per thread (call_stack.py), and Perfetto draws a thread's slices as one stack.
inline std::vector<std::string> host_nesting_violations(const nlohmann::json& j) {
  using json = nlohmann::json;
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::int64_t, std::int64_t>>>
      host;
  for (const auto& e : j["traceEvents"])
    if (e.value("ph", "") == "X" && host_category(e.value("cat", "")) && e.contains("ts") &&
        e.contains("dur")) {
      const auto ns = [](const json& v) { return std::llround(v.get<double>() * 1000); };
      const std::int64_t b = ns(e["ts"]);
      host[{e["pid"].dump(), e["tid"].dump()}].emplace_back(b, b + ns(e["dur"]));
    }
  std::vector<std::string> bad;
  for (auto& [track, spans] : host) {
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<std::int64_t> open;  // the ends of the enclosing events
    for (const auto& [b, e] : spans) {
      while (!open.empty() && open.back() <= b) open.pop_back();
      if (!open.empty() && open.back() < e)
        bad.push_back("an event on thread " + track.first + "/" + track.second + " at " +
                      std::to_string(b) + " ns crosses the one it began in");
      open.push_back(e);
    }
  }
  return bad;
}

/// The ProfilerStep numbers of a trace (for "the same N on every rank").
// HTA's iteration marker (trace.py's add_iteration): "ProfilerStep#N".
inline const std::regex& profiler_step_re() {
  static const std::regex re(R"(ProfilerStep\s*#\s*(\d+))");
  return re;
}

inline std::set<int> profiler_steps(const nlohmann::json& j) {
  std::set<int> steps;
  for (const auto& e : j["traceEvents"]) {
    std::smatch m;
    const std::string name = e.value("name", "");
    if (e.value("ph", "") == "X" && std::regex_match(name, m, profiler_step_re()))
      steps.insert(std::stoi(m[1].str()));
  }
  return steps;
}

inline std::vector<std::string> kineto_violations(const std::string& raw, int rank,
                                                  const ContractOptions& o = {}) {
  using json = nlohmann::json;
  std::vector<std::string> bad;
  auto fail = [&](const std::string& rule, const std::string& what) {
    if (bad.size() < 20) bad.push_back(rule + ": " + what);
  };
  const json j = json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return {"json: the file does not parse"};

  // 1. The header, before traceEvents (HTA's metadata reader stops at "traceEvents").
  const auto events_at = raw.find("\"traceEvents\"");
  for (const char* key :
       {"schemaVersion", "deviceProperties", "distributedInfo", "baseTimeNanoseconds"}) {
    const auto at = raw.find(std::string("\"") + key + "\"");
    if (!j.contains(key))
      fail("header", std::string("no \"") + key + "\"");
    else if (at == std::string::npos || at > events_at)
      fail("header", std::string("\"") + key + "\" comes after \"traceEvents\"");
  }
  // 2. The rank: HTA reads it from the raw text with "rank":\s+(\d+), and from distributedInfo.
  static const std::regex rank_re(R"re("rank":\s+(\d+))re");
  std::smatch m;
  if (!std::regex_search(raw, m, rank_re))
    fail("rank", "no match for \"rank\":\\s+(\\d+) in the raw text");
  else if (std::stoi(m[1].str()) != rank)
    fail("rank", "the raw text says rank " + m[1].str());
  if (j.contains("distributedInfo")) {
    const json& d = j["distributedInfo"];
    if (!d.contains("rank") || !d["rank"].is_number_integer() || d["rank"] != rank)
      fail("rank", "distributedInfo.rank is not " + std::to_string(rank));
    if (!d.contains("world_size") || !d["world_size"].is_number_integer() ||
        d["world_size"].get<int>() <= rank)
      fail("rank", "distributedInfo.world_size missing or not above the rank");
    if (!d.contains("backend")) fail("rank", "distributedInfo.backend missing");
  }
  if (!j.contains("traceEvents") || !j["traceEvents"].is_array()) {
    fail("events", "no traceEvents array");
    return bad;
  }

  // Index the events.
  std::map<std::int64_t, std::string> host_launch;  // correlation -> cat
  std::set<std::pair<std::string, std::string>> named_threads, sorted_threads;
  std::set<std::string> named_processes, sorted_processes;
  std::set<std::pair<std::string, std::string>> tracks;
  std::set<std::string> processes;
  int steps = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e.value("ph", "");
    const std::string pid = e.contains("pid") ? e["pid"].dump() : "";
    const std::string tid = e.contains("tid") ? e["tid"].dump() : "";
    if (ph == "M") {
      const std::string what = e.value("name", "");
      if (what == "process_name") named_processes.insert(pid);
      if (what == "process_sort_index") sorted_processes.insert(pid);
      if (what == "thread_name") named_threads.emplace(pid, tid);
      if (what == "thread_sort_index") sorted_threads.emplace(pid, tid);
      continue;
    }
    if (ph != "X") continue;
    const std::string cat = e.value("cat", "");
    if (cat == "Trace") continue;  // Kineto's own span; HTA drops it
    const std::string name = e.value("name", "");
    // 3. A complete event has what HTA's parser keeps (it drops rows without dur or cat).
    if (cat.empty() || !e.contains("dur") || !e.contains("ts") || name.empty())
      fail("complete", "an X event without cat, ts, dur or name: " + name);
    else if (e["dur"].get<double>() < 0)
      fail("complete", "negative dur: " + name);
    // Tracks that must be named: the device's and the host's stage threads (Kineto leaves the
    // tracks of its own overhead and of NCCL's helper threads unnamed).
    if (device_category(cat) || cat == "cpu_op" || cat == "user_annotation") {
      processes.insert(pid);
      tracks.emplace(pid, tid);
    }
    const json args = e.contains("args") ? e["args"] : json::object();
    if (host_category(cat)) {
      // 5. Host events never carry a stream: HTA's CPU filter is stream == -1, its GPU filter
      // stream > 0 (a host sync with a stream counted as GPU compute).
      if (args.contains("stream") && args["stream"] != -1)
        fail("host", cat + " event '" + name + "' carries a stream");
      if ((cat == "cuda_runtime" || cat == "cuda_driver") && args.contains("correlation"))
        host_launch[args["correlation"].get<std::int64_t>()] = cat;
      if (std::regex_match(name, profiler_step_re())) ++steps;
    } else if (device_category(cat)) {
      // 4. GPU events on pid = device, tid = stream, with device, stream and correlation.
      for (const char* key : {"device", "stream", "correlation"})
        if (!args.contains(key)) fail("device", cat + " '" + name + "' has no " + key);
      if (args.contains("stream") && args["stream"].get<std::int64_t>() <= 0)
        fail("device", cat + " '" + name + "' on stream <= 0 (HTA's GPU filter is stream > 0)");
      if (args.contains("device") && e["pid"] != args["device"])
        fail("device", cat + " '" + name + "' not on pid = its device");
      if (args.contains("stream") && e["tid"] != args["stream"])
        fail("device", cat + " '" + name + "' not on tid = its stream");
    } else if (cat == "cuda_sync") {
      // 6. Kineto's sync shape: on the device, with its kind.
      if (!args.contains("cuda_sync_kind") || !args.contains("device"))
        fail("sync", "cuda_sync '" + name + "' without cuda_sync_kind or device");
      else if (e["pid"] != args["device"])
        fail("sync", "cuda_sync '" + name + "' not on pid = its device");
    }
  }
  // 7-8. Every kernel has a host launch of the same correlation (HTA drops kernels without one);
  // communication kernels (HTA: names starting "nccl") carry the collective's arguments.
  for (const auto& e : j["traceEvents"]) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "kernel") continue;
    const json args = e.contains("args") ? e["args"] : json::object();
    const std::string name = e.value("name", "");
    if (args.contains("correlation") && !host_launch.count(args["correlation"].get<std::int64_t>()))
      fail("launch", "kernel '" + name + "' has no cuda_runtime/cuda_driver launch");
    if (name.rfind("nccl", 0) == 0 && o.collectives)
      for (const char* key : {"Collective name", "In msg nelems", "Out msg nelems", "Group size",
                              "dtype", "Process Group Name", "Process Group Ranks"})
        if (!args.contains(key)) fail("collective", "'" + name + "' has no \"" + key + "\"");
  }
  // 9. Steps: HTA splits iterations at ProfilerStep#N and needs two to filter kernels.
  if (steps < 2) fail("steps", "fewer than two ProfilerStep#N events");
  // 10. Metadata: the processes and threads of device work and CPU stages named and ordered.
  for (const auto& p : processes) {
    if (!named_processes.count(p)) fail("metadata", "process " + p + " has no process_name");
    if (!sorted_processes.count(p)) fail("metadata", "process " + p + " has no process_sort_index");
  }
  // 11. A host thread's events nest (host_nesting_violations()).
  for (const std::string& v : host_nesting_violations(j)) fail("nest", v);
  // 12. Perfetto reads a tid as a uint32 and puts a larger one on the process's main thread.
  for (const auto& e : j["traceEvents"])
    if (e.contains("tid") && e["tid"].is_number_integer() &&
        e["tid"].get<std::int64_t>() > std::int64_t{0xffffffff})
      fail("tid", "tid " + e["tid"].dump() + " does not fit in 32 bits");
  for (const auto& t : tracks) {
    if (t.second == "-1") continue;  // a context synchronisation: no stream
    if (!named_threads.count(t))
      fail("metadata", "thread " + t.first + "/" + t.second + " has no thread_name");
    if (!sorted_threads.count(t))
      fail("metadata", "thread " + t.first + "/" + t.second + " has no thread_sort_index");
  }
  return bad;
}

}  // namespace simprof::testing
