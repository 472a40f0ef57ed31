// SPDX-License-Identifier: MIT
#include "simprof/trace/chrome_json.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "simprof/base/io.hpp"

namespace simprof {

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04x}", c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      // A UTF-8 sequence passes through when it is well formed; anything else becomes U+FFFD.
      const std::size_t len = c >= 0xf0 && c <= 0xf4  ? 4
                              : c >= 0xe0             ? 3
                              : c >= 0xc2 && c < 0xe0 ? 2
                                                      : 0;
      bool ok = len != 0 && i + len <= s.size();
      for (std::size_t k = 1; ok && k < len; ++k)
        ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      if (ok) {
        out.append(s.substr(i, len));
        i += len;
        continue;
      }
      out += "\xef\xbf\xbd";
    }
    ++i;
  }
  return out;
}

namespace {

using Buffer = fmt::memory_buffer;

// Microseconds with three decimals from integer nanoseconds, exactly.
void append_us(Buffer& out, std::int64_t ns) {
  const bool neg = ns < 0;
  const std::uint64_t a =
      neg ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  fmt::format_to(std::back_inserter(out), "{}{}.{:03}", neg ? "-" : "", a / 1000, a % 1000);
}

// The args object of an event, written field by field.
class Args {
 public:
  explicit Args(Buffer& out) : out_(out) {}
  ~Args() {
    if (open_) out_.push_back('}');
  }
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;

  Args& integer(std::string_view key, std::int64_t v) {
    fmt::format_to(std::back_inserter(key_(key)), "{}", v);
    return *this;
  }
  Args& number(std::string_view key, double v) {
    if (std::isfinite(v))
      fmt::format_to(std::back_inserter(key_(key)), "{}", v);
    else
      key_(key).append(std::string_view("null"));  // JSON has no NaN or infinity
    return *this;
  }
  Args& dim3(std::string_view key, const Dim3& d) {
    fmt::format_to(std::back_inserter(key_(key)), "[{}, {}, {}]", d.x, d.y, d.z);
    return *this;
  }

 private:
  Buffer& key_(std::string_view key) {
    out_.append(std::string_view(open_ ? ", " : ", \"args\": {"));
    open_ = true;
    fmt::format_to(std::back_inserter(out_), "\"{}\": ", key);
    return out_;
  }
  Buffer& out_;
  bool open_ = false;
};

void write_args(Buffer& out, const Span& s) {
  Args a(out);
  switch (s.kind) {
    case SpanKind::kCpuStage:
      a.integer("step", static_cast<std::int64_t>(s.step));
      break;
    case SpanKind::kLaunch:
      a.integer("correlation", static_cast<std::int64_t>(s.correlation)).integer("cbid", s.cbid);
      break;
    case SpanKind::kKernel:
      a.integer("device", s.device)
          .integer("stream", s.stream)
          .integer("correlation", static_cast<std::int64_t>(s.correlation));
      if (s.grid.x > 0) a.dim3("grid", s.grid).dim3("block", s.block);
      if (s.graph_id) a.integer("graph id", static_cast<std::int64_t>(s.graph_id));
      if (s.graph_id && s.kernels == 0)
        a.integer("graph node id", static_cast<std::int64_t>(s.graph_node_id));
      if (s.kernels) a.integer("kernels", static_cast<std::int64_t>(s.kernels));
      break;
    case SpanKind::kMemcpy:
    case SpanKind::kMemset:
      a.integer("bytes", static_cast<std::int64_t>(s.bytes))
          .integer("correlation", static_cast<std::int64_t>(s.correlation));
      break;
    case SpanKind::kSync:
      a.integer("type", static_cast<std::int64_t>(s.sync)).integer("stream", s.stream);
      break;
    case SpanKind::kCounter:
      a.number("value", s.value);
      break;
    case SpanKind::kOverhead:
    case SpanKind::kFlow:
      break;
  }
}

std::string_view category(const Span& s) {
  switch (s.kind) {
    case SpanKind::kCpuStage:
      return s.is_step() ? "user_annotation" : "cpu_op";
    case SpanKind::kLaunch:
      return "cuda_runtime";
    case SpanKind::kKernel:
      return "kernel";
    case SpanKind::kMemcpy:
      return "gpu_memcpy";
    case SpanKind::kMemset:
      return "gpu_memset";
    case SpanKind::kSync:
      return "cuda_sync";
    case SpanKind::kOverhead:
      return "overhead";
    case SpanKind::kFlow:
      return "ac2g";
    case SpanKind::kCounter:
      break;
  }
  return {};
}

bool on_device_track(SpanKind k) {
  return k == SpanKind::kKernel || k == SpanKind::kMemcpy || k == SpanKind::kMemset;
}

// One Chrome event: a span, one end of a flow, or a name.
struct Record {
  char ph;
  std::int64_t ts;
  const Span* span;  // null for names
  std::int64_t pid, tid;
  std::string label;  // names only
};

void append_header(Buffer& out, char ph, std::string_view name, std::string_view cat,
                   std::int64_t pid, std::int64_t tid) {
  fmt::format_to(std::back_inserter(out), "{{\"ph\": \"{}\", \"name\": \"{}\"", ph,
                 json_escape(name));
  if (!cat.empty()) fmt::format_to(std::back_inserter(out), ", \"cat\": \"{}\"", cat);
  fmt::format_to(std::back_inserter(out), ", \"pid\": {}, \"tid\": {}", pid, tid);
}

void append_record(Buffer& out, const Record& r) {
  if (r.span == nullptr) {  // a process or thread name
    append_header(out, 'M', r.tid < 0 ? "process_name" : "thread_name", {}, r.pid,
                  r.tid < 0 ? 0 : r.tid);
    fmt::format_to(std::back_inserter(out), ", \"args\": {{\"name\": \"{}\"}}}}",
                   json_escape(r.label));
    return;
  }
  const Span& s = *r.span;
  append_header(out, r.ph, s.name, category(s), r.pid, r.tid);
  out.append(std::string_view(", \"ts\": "));
  append_us(out, r.ts);
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

// Process and thread names: the loop's host process and thread, one process per device with one
// thread per stream, as Kineto lays them out.
void add_names(const Trace& trace, std::vector<Record>& out) {
  std::set<std::int64_t> hosts;
  std::set<std::pair<std::int64_t, std::int64_t>> loops;
  std::map<std::int32_t, std::set<std::int64_t>> devices;
  for (const Span& s : trace.spans) {
    if (s.kind == SpanKind::kCpuStage) {
      hosts.insert(s.pid);
      loops.emplace(s.pid, s.tid);
    } else if (on_device_track(s.kind)) {
      devices[s.device].insert(s.stream);
    }
  }
  for (const auto pid : hosts) out.push_back(Record{'M', 0, nullptr, pid, -1, "simprof host"});
  for (const auto& [pid, tid] : loops)
    out.push_back(Record{'M', 0, nullptr, pid, tid, "step loop"});
  for (const auto& [dev, streams] : devices) {
    out.push_back(Record{'M', 0, nullptr, dev, -1, fmt::format("GPU {}", dev)});
    for (const auto s : streams)
      out.push_back(Record{'M', 0, nullptr, dev, s, fmt::format("stream {}", s)});
  }
}

}  // namespace

std::string to_chrome_json(const Trace& trace) {
  std::vector<Record> names;
  add_names(trace, names);
  std::vector<Record> events;
  events.reserve(trace.spans.size() + 16);
  for (const Span& s : trace.spans) {
    switch (s.kind) {
      case SpanKind::kFlow:
        events.push_back(Record{'s', s.begin_ns, &s, s.pid, s.tid, {}});
        events.push_back(Record{'f', s.end_ns, &s, s.device, s.stream, {}});
        break;
      case SpanKind::kCounter:
        events.push_back(Record{'C', s.begin_ns, &s, s.pid, s.tid, {}});
        break;
      default:
        if (on_device_track(s.kind))
          events.push_back(Record{'X', s.begin_ns, &s, s.device, s.stream, {}});
        else
          events.push_back(Record{'X', s.begin_ns, &s, s.pid, s.tid, {}});
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Record& a, const Record& b) { return a.ts < b.ts; });
  Buffer out;
  out.append(std::string_view("{\"traceEvents\": [\n"));
  const std::size_t n = names.size() + events.size();
  std::size_t i = 0;
  for (const auto* list : {&names, &events})
    for (const Record& r : *list) {
      append_record(out, r);
      out.append(std::string_view(++i < n ? ",\n" : "\n"));
    }
  out.append(std::string_view("],\n\"displayTimeUnit\": \"ns\",\n\"otherData\": {"));
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
