// SPDX-License-Identifier: MIT
#include "chrome_args.hpp"

#include <iterator>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "simprof/trace/chrome_json.hpp"
#include "simprof/trace/collective_args.hpp"

namespace simprof::chrome {

// Microseconds with three decimals from integer nanoseconds, exactly.
void append_us(Buffer& out, std::int64_t ns) {
  const bool neg = ns < 0;
  const std::uint64_t a =
      neg ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  fmt::format_to(std::back_inserter(out), "{}{}.{:03}", neg ? "-" : "", a / 1000, a % 1000);
}

namespace {

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
  Args& text(std::string_view key, std::string_view v) {
    fmt::format_to(std::back_inserter(key_(key)), "\"{}\"", json_escape(v));
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

// "[0, 1]": Kineto writes lists of ranks and split sizes as strings.
std::string list_text(const std::vector<int>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

// Kineto's collective arguments (those of torch's record_param_comms).
void collective_args(Args& a, const CollectiveArgs& c) {
  a.text("Collective name", to_string(c.op))
      .integer("In msg nelems", c.in_nelems)
      .integer("Out msg nelems", c.out_nelems)
      .integer("Group size", static_cast<std::int64_t>(c.group.ranks.size()))
      .text("dtype", to_string(c.dtype))
      .text("In split size", "[]")
      .text("Out split size", "[]")
      .text("Process Group Name", c.group.name)
      .text("Process Group Description", c.group.desc)
      .text("Process Group Ranks", list_text(c.group.ranks))
      .integer("Rank", c.rank);
}

// Where a device span ran: Kineto's device, context, stream and correlation.
void device_args(Args& a, const Span& s) {
  a.integer("device", s.device).integer("context", s.context).integer("stream", s.stream);
  a.integer("correlation", static_cast<std::int64_t>(s.correlation));
}

}  // namespace

void write_args(Buffer& out, const Span& s) {
  Args a(out);
  switch (s.kind) {
    case SpanKind::kCpuStage:
      a.integer("step", static_cast<std::int64_t>(s.step()));
      if (const auto* p = s.as<StagePayload>(); p && !p->clock.empty()) a.text("clock", p->clock);
      if (s.collective()) collective_args(a, *s.collective());
      break;
    case SpanKind::kLaunch:  // a host event: never a stream, or HTA counts it as GPU work
      a.integer("cbid", s.or_empty<CallPayload>().cbid)
          .integer("correlation", static_cast<std::int64_t>(s.correlation));
      break;
    case SpanKind::kKernel: {
      const KernelPayload& k = s.or_empty<KernelPayload>();
      device_args(a, s);
      if (k.registers) a.integer("registers per thread", k.registers);
      if (k.grid.x > 0) a.integer("shared memory", k.shared_memory);
      if (k.grid.x > 0) a.dim3("grid", k.grid).dim3("block", k.block);
      if (k.graph_id) a.integer("graph id", static_cast<std::int64_t>(k.graph_id));
      if (k.graph_id && k.kernels == 0)
        a.integer("graph node id", static_cast<std::int64_t>(k.graph_node_id));
      if (!k.stage.empty()) a.text("stage", k.stage);
      if (k.kernels) a.integer("kernels", static_cast<std::int64_t>(k.kernels));
      if (k.collective) collective_args(a, *k.collective);
      break;
    }
    case SpanKind::kMemcpy:
    case SpanKind::kMemset: {
      const std::uint64_t bytes = s.or_empty<TransferPayload>().bytes;
      device_args(a, s);
      a.integer("bytes", static_cast<std::int64_t>(bytes));
      if (s.duration_ns() > 0)  // bytes per ns are GB/s
        a.number("memory bandwidth (GB/s)",
                 static_cast<double>(bytes) / static_cast<double>(s.duration_ns()));
      break;
    }
    case SpanKind::kSync:
      a.text("cuda_sync_kind", to_string(s.or_empty<SyncPayload>().sync));
      device_args(a, s);
      break;
    case SpanKind::kCounter:
      a.number("value", s.or_empty<CounterPayload>().value);
      break;
    case SpanKind::kOverhead:
    case SpanKind::kFlow:
    case SpanKind::kRange:
      break;
  }
}

std::string_view category(const Span& s) {
  switch (s.kind) {
    case SpanKind::kCpuStage:
      return s.is_step() ? "user_annotation" : "cpu_op";
    case SpanKind::kLaunch:
      return s.or_empty<CallPayload>().api == LaunchApi::kDriver ? "cuda_driver" : "cuda_runtime";
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
    case SpanKind::kRange:
      return "user_annotation";  // as Kineto writes a program's own annotations
    case SpanKind::kCounter:
      break;
  }
  return {};
}

}  // namespace simprof::chrome
