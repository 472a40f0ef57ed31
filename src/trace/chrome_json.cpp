// SPDX-License-Identifier: MIT
#include "simprof/trace/chrome_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chrome_args.hpp"
#include "host_lanes.hpp"
#include "simprof/base/io.hpp"

namespace simprof {

namespace {

using chrome::append_us;
using chrome::Buffer;
using chrome::category;
using chrome::host_tids;
using chrome::kLaneStride;
using chrome::on_device_track;
using chrome::write_args;

// Kineto's metadata records: which one decides the record's name and what its args hold.
enum class Meta : std::uint8_t {
  kNone,  // not metadata: a span
  kProcessName,
  kProcessLabels,
  kProcessSortIndex,
  kThreadName,
  kThreadSortIndex
};

std::string_view name_of(Meta m) noexcept {
  switch (m) {
    case Meta::kProcessName:
      return "process_name";
    case Meta::kProcessLabels:
      return "process_labels";
    case Meta::kProcessSortIndex:
      return "process_sort_index";
    case Meta::kThreadName:
      return "thread_name";
    case Meta::kThreadSortIndex:
      return "thread_sort_index";
    case Meta::kNone:
      break;
  }
  return {};
}

// One Chrome event: a span, one end of a flow, or a metadata record.
struct Record {
  char ph;
  std::int64_t ts;
  const Span* span;  // null for metadata
  std::int64_t pid, tid;
  Meta meta = Meta::kNone;
  std::string label;       // metadata: the name or label
  std::int64_t index = 0;  // metadata: the sort index
};

void append_header(Buffer& out, char ph, std::string_view name, std::string_view cat,
                   std::int64_t pid, std::int64_t tid) {
  fmt::format_to(std::back_inserter(out), "{{\"ph\": \"{}\", \"name\": \"{}\"", ph,
                 json_escape(name));
  if (!cat.empty()) fmt::format_to(std::back_inserter(out), ", \"cat\": \"{}\"", cat);
  fmt::format_to(std::back_inserter(out), ", \"pid\": {}, \"tid\": {}", pid, tid);
}

void append_record(Buffer& out, const Record& r, std::int64_t base_ns) {
  if (r.span == nullptr) {  // metadata, as Kineto writes it
    append_header(out, 'M', name_of(r.meta), {}, r.pid, r.tid);
    if (r.meta == Meta::kProcessSortIndex || r.meta == Meta::kThreadSortIndex)
      fmt::format_to(std::back_inserter(out), ", \"args\": {{\"sort_index\": {}}}}}", r.index);
    else
      fmt::format_to(std::back_inserter(out), ", \"args\": {{\"{}\": \"{}\"}}}}",
                     r.meta == Meta::kProcessLabels ? "labels" : "name", json_escape(r.label));
    return;
  }
  const Span& s = *r.span;
  append_header(out, r.ph, s.name, category(s), r.pid, r.tid);
  out.append(std::string_view(", \"ts\": "));
  append_us(out, r.ts - base_ns);
  if (r.ph == 'X') {
    out.append(std::string_view(", \"dur\": "));
    append_us(out, s.duration_ns());
  }
  if (r.ph == 's' || r.ph == 'f')
    fmt::format_to(std::back_inserter(out), ", \"id\": {}", s.correlation);
  if (r.ph == 'f') out.append(std::string_view(", \"bp\": \"e\""));
  write_args(out, s);
  out.push_back('}');
}

Record meta(std::int64_t pid, std::int64_t tid, Meta what, std::string label,
            std::int64_t index = 0) {
  return Record{'M', 0, nullptr, pid, tid, what, std::move(label), index};
}

// Process and thread names, labels and sort indices as Kineto lays them out: the host process
// (labels "CPU", sorted by pid) with its threads (sorted by tid; the thread with the steps named
// "step loop"), one process per device (labels "GPU <d>", sorted after every host) with one thread
// per stream. `tids`: each span's track on the host (host_tids()).
void add_names(const Trace& trace, const std::vector<std::int64_t>& tids,
               std::vector<Record>& out) {
  std::set<std::int64_t> hosts;
  std::set<std::pair<std::int64_t, std::int64_t>> loops, threads;
  std::map<std::int32_t, std::set<std::int64_t>> devices;
  for (std::size_t i = 0; i < trace.spans.size(); ++i) {
    const Span& s = trace.spans[i];
    if (on_device_track(s.kind)) {
      devices[s.device].insert(s.stream);
    } else if (s.kind != SpanKind::kCounter) {
      hosts.insert(s.pid);
      threads.emplace(s.pid, tids[i]);
      if (s.is_step()) loops.emplace(s.pid, s.tid);
    }
  }
  const std::string process = trace.ranks.distributed()
                                  ? fmt::format("simprof rank {}", trace.ranks.rank)
                                  : std::string("simprof");
  for (const auto pid : hosts) {
    out.push_back(meta(pid, 0, Meta::kProcessName, process));
    out.push_back(meta(pid, 0, Meta::kProcessLabels, "CPU"));
    out.push_back(meta(pid, 0, Meta::kProcessSortIndex, {}, pid));
  }
  for (const auto& [pid, tid] : threads) {
    const std::int64_t lane = tid / kLaneStride, thread = tid % kLaneStride;
    std::string name = loops.count({pid, tid}) ? fmt::format("step loop (thread {})", thread)
                       : lane > 0 ? fmt::format("thread {} (ranges that cross, {})", thread, lane)
                                  : fmt::format("thread {}", thread);
    out.push_back(meta(pid, tid, Meta::kThreadName, std::move(name)));
    out.push_back(meta(pid, tid, Meta::kThreadSortIndex, {}, thread));  // beside its thread
  }
  for (const auto& [dev, streams] : devices) {
    out.push_back(meta(dev, 0, Meta::kProcessName, process));
    out.push_back(meta(dev, 0, Meta::kProcessLabels, fmt::format("GPU {}", dev)));
    out.push_back(meta(dev, 0, Meta::kProcessSortIndex, {}, 5'000'000 + dev));
    for (const auto s : streams) {
      if (s < 0) continue;  // a context synchronisation: no stream to name
      out.push_back(meta(dev, s, Meta::kThreadName, fmt::format("stream {}", s)));
      out.push_back(meta(dev, s, Meta::kThreadSortIndex, {}, s));
    }
  }
}

// Everything before "traceEvents", as Kineto writes it: HTA reads the rank from the raw text with
// `"rank":\s+(\d+)`, so every colon is followed by a space.
void append_preamble(Buffer& out, const Trace& t) {
  out.append(std::string_view("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": ["));
  for (std::size_t i = 0; i < t.devices.size(); ++i) {
    const DeviceProperties& d = t.devices[i];
    fmt::format_to(std::back_inserter(out),
                   "{}\n    {{\"id\": {}, \"name\": \"{}\", \"totalGlobalMem\": {}, "
                   "\"computeMajor\": {}, \"computeMinor\": {}, \"maxThreadsPerBlock\": {}, "
                   "\"maxThreadsPerMultiprocessor\": {}, \"regsPerBlock\": {}, \"warpSize\": {}, "
                   "\"sharedMemPerBlock\": {}, \"numSms\": {}}}",
                   i ? "," : "", d.id, json_escape(d.name), d.total_global_mem, d.compute_major,
                   d.compute_minor, d.max_threads_per_block, d.max_threads_per_multiprocessor,
                   d.regs_per_block, d.warp_size, d.shared_mem_per_block, d.num_sms);
  }
  out.append(std::string_view(t.devices.empty() ? "],\n" : "\n  ],\n"));
  fmt::format_to(std::back_inserter(out),
                 "  \"distributedInfo\": {{\"backend\": \"{}\", \"rank\": {}, \"local_rank\": {}, "
                 "\"world_size\": {}}},\n",
                 json_escape(t.backend), t.ranks.rank, t.ranks.local_rank, t.ranks.world_size);
  for (const auto& [k, v] : t.versions)
    fmt::format_to(std::back_inserter(out), "  \"{}\": {},\n", json_escape(k), v);
  fmt::format_to(std::back_inserter(out),
                 "  \"displayTimeUnit\": \"ns\",\n  \"baseTimeNanoseconds\": {},\n",
                 t.base_time_ns);
}

}  // namespace

std::string to_chrome_json(const Trace& trace) {
  const std::vector<std::int64_t> tids = host_tids(trace);
  std::vector<Record> names;
  add_names(trace, tids, names);
  std::vector<Record> events;
  events.reserve(trace.spans.size() + 16);
  for (std::size_t i = 0; i < trace.spans.size(); ++i) {
    const Span& s = trace.spans[i];
    switch (s.kind) {
      case SpanKind::kFlow:
        events.push_back(Record{'s', s.begin_ns, &s, s.pid, s.tid, {}, {}});
        events.push_back(Record{'f', s.end_ns, &s, s.device, s.stream, {}, {}});
        break;
      case SpanKind::kCounter:
        events.push_back(Record{'C', s.begin_ns, &s, s.pid, s.tid, {}, {}});
        break;
      default:
        if (on_device_track(s.kind))
          events.push_back(Record{'X', s.begin_ns, &s, s.device, s.stream, {}, {}});
        else
          events.push_back(Record{'X', s.begin_ns, &s, s.pid, tids[i], {}, {}});
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Record& a, const Record& b) { return a.ts < b.ts; });
  Buffer out;
  append_preamble(out, trace);
  out.append(std::string_view("  \"traceEvents\": [\n"));
  const std::size_t n = names.size() + events.size();
  std::size_t i = 0;
  for (const auto* list : {&names, &events})
    for (const Record& r : *list) {
      append_record(out, r, trace.base_time_ns - trace.wall_offset_ns);
      out.append(std::string_view(++i < n ? ",\n" : "\n"));
    }
  out.append(std::string_view("  ],\n  \"otherData\": {"));
  fmt::format_to(std::back_inserter(out), "\"producer\": \"simprof\", \"dropped_events\": \"{}\"",
                 trace.dropped);
  for (const auto& [k, v] : trace.metadata)
    fmt::format_to(std::back_inserter(out), ", \"{}\": \"{}\"", json_escape(k), json_escape(v));
  out.append(std::string_view("}\n}\n"));
  return fmt::to_string(out);
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
  write_file_atomic(path, to_chrome_json(trace));
}

}  // namespace simprof
