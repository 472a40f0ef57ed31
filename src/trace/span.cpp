// SPDX-License-Identifier: MIT
#include "simprof/trace/span.hpp"

#include "simprof/trace/collective_args.hpp"

#include <iterator>
#include <utility>

namespace simprof {

namespace {

// Names by enumerator value, in declaration order.
constexpr std::string_view kKindNames[] = {"cpu stage", "launch",   "kernel", "memcpy",  "memset",
                                           "sync",      "overhead", "flow",   "counter", "range"};
constexpr std::string_view kCopyNames[] = {
    "Memcpy ?",    "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH", "Memcpy AtoA",
    "Memcpy AtoD", "Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
static_assert(std::size(kKindNames) == static_cast<std::size_t>(SpanKind::kRange) + 1);
static_assert(std::size(kCopyNames) == static_cast<std::size_t>(CopyKind::kPtoP) + 1);

template <std::size_t N, class E>
std::string_view name_of(const std::string_view (&names)[N], E e) noexcept {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : std::string_view("?");
}

}  // namespace

std::string_view to_string(SpanKind kind) noexcept { return name_of(kKindNames, kind); }
std::string_view to_string(CopyKind kind) noexcept { return name_of(kCopyNames, kind); }
std::string_view to_string(SyncKind kind) noexcept {
  static constexpr std::string_view kNames[] = {"Synchronize", "Event Synchronize",
                                                "Stream Wait Event", "Stream Synchronize",
                                                "Context Synchronize"};
  return name_of(kNames, kind);
}

namespace {

Span at(SpanKind kind, std::string name, std::int64_t begin_ns, std::int64_t end_ns) {
  Span s;
  s.kind = kind;
  s.name = std::move(name);
  s.begin_ns = begin_ns;
  s.end_ns = end_ns;
  return s;
}

Span on_host(SpanKind kind, std::string name, std::int64_t begin_ns, std::int64_t end_ns,
             std::int64_t pid, std::int64_t tid) {
  Span s = at(kind, std::move(name), begin_ns, end_ns);
  s.pid = pid;
  s.tid = tid;
  return s;
}

Span on_device(SpanKind kind, std::string name, std::int64_t begin_ns, std::int64_t end_ns,
               std::int32_t device, std::int64_t stream, std::uint64_t correlation) {
  Span s = at(kind, std::move(name), begin_ns, end_ns);
  s.device = device;
  s.stream = stream;
  s.correlation = correlation;
  return s;
}

}  // namespace

Span Span::cpu_stage(std::string name, StageId stage, std::uint64_t step, std::int64_t begin_ns,
                     std::int64_t end_ns, std::int64_t pid, std::int64_t tid) {
  Span s = on_host(SpanKind::kCpuStage, std::move(name), begin_ns, end_ns, pid, tid);
  StagePayload p;
  p.stage = stage;
  p.step = step;
  s.payload = std::move(p);
  return s;
}

Span Span::launch(std::string name, std::int64_t begin_ns, std::int64_t end_ns, std::int64_t pid,
                  std::int64_t tid, std::uint64_t correlation, CallPayload call) {
  Span s = on_host(SpanKind::kLaunch, std::move(name), begin_ns, end_ns, pid, tid);
  s.correlation = correlation;
  s.payload = call;
  return s;
}

Span Span::kernel(std::string name, std::int64_t begin_ns, std::int64_t end_ns, std::int32_t device,
                  std::int64_t stream, std::uint64_t correlation) {
  KernelPayload k;
  k.communication = name.rfind("nccl", 0) == 0;  // NCCL's kernels, by the name CUPTI gives them
  Span s =
      on_device(SpanKind::kKernel, std::move(name), begin_ns, end_ns, device, stream, correlation);
  s.payload = std::move(k);
  return s;
}

Span Span::memcpy(CopyKind copy, std::uint64_t bytes, std::int64_t begin_ns, std::int64_t end_ns,
                  std::int32_t device, std::int64_t stream, std::uint64_t correlation) {
  Span s = on_device(SpanKind::kMemcpy, std::string(to_string(copy)), begin_ns, end_ns, device,
                     stream, correlation);
  s.payload = TransferPayload{copy, bytes};
  return s;
}

Span Span::memset(std::uint64_t bytes, std::int64_t begin_ns, std::int64_t end_ns,
                  std::int32_t device, std::int64_t stream, std::uint64_t correlation) {
  Span s = on_device(SpanKind::kMemset, "Memset", begin_ns, end_ns, device, stream, correlation);
  s.payload = TransferPayload{CopyKind::kUnknown, bytes};
  return s;
}

Span Span::synchronization(SyncKind sync, std::int64_t begin_ns, std::int64_t end_ns,
                           std::int32_t device, std::int64_t stream, std::uint64_t correlation) {
  Span s = on_device(SpanKind::kSync, std::string(to_string(sync)), begin_ns, end_ns, device,
                     stream, correlation);
  s.payload = SyncPayload{sync};
  return s;
}

Span Span::overhead(std::string name, std::int64_t begin_ns, std::int64_t end_ns, std::int64_t pid,
                    std::int64_t tid) {
  return on_host(SpanKind::kOverhead, std::move(name), begin_ns, end_ns, pid, tid);
}

Span Span::flow(std::uint64_t correlation, std::int64_t from_ns, std::int64_t pid, std::int64_t tid,
                std::int64_t to_ns, std::int32_t device, std::int64_t stream) {
  Span s = on_host(SpanKind::kFlow, "ac2g", from_ns, to_ns, pid, tid);
  s.device = device;
  s.stream = stream;
  s.correlation = correlation;
  return s;
}

Span Span::counter(std::string name, std::int64_t ts_ns, std::int64_t pid, double value) {
  Span s = on_host(SpanKind::kCounter, std::move(name), ts_ns, ts_ns, pid, 0);
  s.payload = CounterPayload{value};
  return s;
}

Span Span::range(std::string name, std::int64_t begin_ns, std::int64_t end_ns, std::int64_t pid,
                 std::int64_t tid) {
  return on_host(SpanKind::kRange, std::move(name), begin_ns, end_ns, pid, tid);
}

const CollectiveArgs* Span::collective() const noexcept {
  if (const auto* k = as<KernelPayload>()) return k->collective.get();
  if (const auto* c = as<StagePayload>()) return c->collective.get();
  return nullptr;
}

}  // namespace simprof
