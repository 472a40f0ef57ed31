// SPDX-License-Identifier: MIT
#include "simprof/trace/chrome_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "simprof/base/io.hpp"

namespace simprof {

TraceEvent TraceEvent::complete(std::string name, std::string cat, std::int64_t ts_ns,
                                std::int64_t dur_ns, std::int64_t pid, std::int64_t tid) {
  TraceEvent e;
  e.ph = 'X';
  e.name = std::move(name);
  e.cat = std::move(cat);
  e.ts_ns = ts_ns;
  e.dur_ns = dur_ns;
  e.pid = pid;
  e.tid = tid;
  return e;
}

TraceEvent TraceEvent::counter(std::string name, std::int64_t ts_ns, std::int64_t pid,
                               std::vector<std::pair<std::string, TraceValue>> values) {
  TraceEvent e;
  e.ph = 'C';
  e.name = std::move(name);
  e.ts_ns = ts_ns;
  e.pid = pid;
  e.args = std::move(values);
  return e;
}

TraceEvent TraceEvent::instant(std::string name, std::string cat, std::int64_t ts_ns,
                               std::int64_t pid, std::int64_t tid) {
  TraceEvent e = complete(std::move(name), std::move(cat), ts_ns, 0, pid, tid);
  e.ph = 'i';
  return e;
}

namespace {

// One end of a launch -> kernel flow arrow (Kineto's "ac2g" category).
TraceEvent flow(char ph, std::uint64_t id, std::int64_t ts_ns, std::int64_t pid,
                std::int64_t tid) {
  TraceEvent e = TraceEvent::complete("launch", "ac2g", ts_ns, 0, pid, tid);
  e.ph = ph;
  e.id = id;
  return e;
}

}  // namespace

TraceEvent TraceEvent::flow_start(std::uint64_t id, std::int64_t ts_ns, std::int64_t pid,
                                  std::int64_t tid) {
  return flow('s', id, ts_ns, pid, tid);
}

TraceEvent TraceEvent::flow_end(std::uint64_t id, std::int64_t ts_ns, std::int64_t pid,
                                std::int64_t tid) {
  return flow('f', id, ts_ns, pid, tid);
}

TraceEvent TraceEvent::process_name(std::int64_t pid, std::string name) {
  TraceEvent e = complete("process_name", "", 0, 0, pid, 0);
  e.ph = 'M';
  e.args.emplace_back("name", std::move(name));
  return e;
}

TraceEvent TraceEvent::thread_name(std::int64_t pid, std::int64_t tid, std::string name) {
  TraceEvent e = complete("thread_name", "", 0, 0, pid, tid);
  e.ph = 'M';
  e.args.emplace_back("name", std::move(name));
  return e;
}

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

// Microseconds with three decimals from integer nanoseconds, exactly.
void append_us(fmt::memory_buffer& out, std::int64_t ns) {
  const bool neg = ns < 0;
  const std::uint64_t a =
      neg ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  fmt::format_to(std::back_inserter(out), "{}{}.{:03}", neg ? "-" : "", a / 1000, a % 1000);
}

void append_value(fmt::memory_buffer& out, const TraceValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) {
    fmt::format_to(std::back_inserter(out), "{}", *i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    if (std::isfinite(*d))
      fmt::format_to(std::back_inserter(out), "{}", *d);
    else
      out.append(std::string_view("null"));  // JSON has no NaN or infinity
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    fmt::format_to(std::back_inserter(out), "\"{}\"", json_escape(*s));
  } else {
    const auto& vec = std::get<std::vector<std::int64_t>>(v);
    fmt::format_to(std::back_inserter(out), "[{}]", fmt::join(vec, ", "));
  }
}

void append_event(fmt::memory_buffer& out, const TraceEvent& e) {
  fmt::format_to(std::back_inserter(out), "{{\"ph\": \"{}\", \"name\": \"{}\"", e.ph,
                 json_escape(e.name));
  if (!e.cat.empty())
    fmt::format_to(std::back_inserter(out), ", \"cat\": \"{}\"", json_escape(e.cat));
  fmt::format_to(std::back_inserter(out), ", \"pid\": {}, \"tid\": {}", e.pid, e.tid);
  if (e.ph != 'M') {
    out.append(std::string_view(", \"ts\": "));
    append_us(out, e.ts_ns);
  }
  if (e.ph == 'X') {
    out.append(std::string_view(", \"dur\": "));
    append_us(out, e.dur_ns);
  }
  if (e.ph == 's' || e.ph == 'f') fmt::format_to(std::back_inserter(out), ", \"id\": {}", e.id);
  if (e.ph == 'f') out.append(std::string_view(", \"bp\": \"e\""));
  if (e.ph == 'i') out.append(std::string_view(", \"s\": \"t\""));
  if (!e.args.empty()) {
    out.append(std::string_view(", \"args\": {"));
    for (std::size_t i = 0; i < e.args.size(); ++i) {
      fmt::format_to(std::back_inserter(out), "{}\"{}\": ", i ? ", " : "",
                     json_escape(e.args[i].first));
      append_value(out, e.args[i].second);
    }
    out.push_back('}');
  }
  out.push_back('}');
}

}  // namespace

std::string to_chrome_json(const Trace& trace) {
  std::vector<const TraceEvent*> order;
  order.reserve(trace.events.size());
  for (const auto& e : trace.events) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const TraceEvent* a, const TraceEvent* b) {
    if ((a->ph == 'M') != (b->ph == 'M')) return a->ph == 'M';
    return a->ts_ns < b->ts_ns;
  });
  fmt::memory_buffer out;
  out.append(std::string_view("{\"traceEvents\": [\n"));
  for (std::size_t i = 0; i < order.size(); ++i) {
    append_event(out, *order[i]);
    out.append(std::string_view(i + 1 < order.size() ? ",\n" : "\n"));
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
