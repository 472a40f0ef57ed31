// SPDX-License-Identifier: MIT
#include "cupti_records.hpp"

#include <cupti.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "../runtime/demangle.hpp"

namespace simprof::cuda::detail {

bool waits_for_device(LaunchApi api, std::uint32_t cbid) noexcept {
  if (api == LaunchApi::kDriver)
    return cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize;
  return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020;
}

int ActivityRecords::intern(const char* mangled) {
  const std::string raw = mangled ? mangled : "?";
  const auto it = name_ids_.find(raw);
  if (it != name_ids_.end()) return it->second;
  names_.push_back(detail::demangle(raw.c_str()));  // once per name, as Kineto writes them
  return name_ids_[raw] = static_cast<int>(names_.size() - 1);
}

void ActivityRecords::parse(std::uint8_t* buffer, std::size_t valid) {
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        kernels_.push_back(
            KernelRecord{k->start, k->end, k->deviceId, k->contextId, k->streamId, k->correlationId,
                         k->graphId, k->graphNodeId, Dim3{k->gridX, k->gridY, k->gridZ},
                         Dim3{k->blockX, k->blockY, k->blockZ}, k->registersPerThread,
                         static_cast<std::uint32_t>(k->staticSharedMemory) + k->dynamicSharedMemory,
                         intern(k->name)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
        launches_.push_back(LaunchRecord{
            a->start, a->end, a->cbid, a->correlationId, a->threadId,
            rec->kind == CUPTI_ACTIVITY_KIND_DRIVER ? LaunchApi::kDriver : LaunchApi::kRuntime});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        const auto kind = m->copyKind <= CUPTI_ACTIVITY_MEMCPY_KIND_PTOP
                              ? static_cast<CopyKind>(m->copyKind)
                              : CopyKind::kUnknown;
        copies_.push_back(CopyRecord{m->start, m->end, m->bytes, m->deviceId, m->contextId,
                                     m->streamId, m->correlationId, false, kind});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        copies_.push_back(CopyRecord{m->start, m->end, m->bytes, m->deviceId, m->contextId,
                                     m->streamId, m->correlationId, true, CopyKind::kUnknown});
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
        const auto kind = s->type <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
                              ? static_cast<SyncKind>(s->type)
                              : SyncKind::kUnknown;
        syncs_.push_back(
            SyncRecord{s->start, s->end, kind, s->contextId, s->streamId, s->correlationId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(rec);
        overheads_.emplace_back(o->start, o->end);
        break;
      }
      default:
        break;
    }
  }
}

void ActivityRecords::clear() noexcept {
  kernels_.clear();
  launches_.clear();
  copies_.clear();
  syncs_.clear();
  overheads_.clear();
}

namespace {

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel"; "cuLaunchKernelEx" as it is.
std::string call_name(LaunchApi api, std::uint32_t cbid) {
  const char* name = nullptr;
  const auto domain =
      api == LaunchApi::kDriver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name)
    return api == LaunchApi::kDriver ? "cu?" : "cuda?";
  std::string n = name;
  if (const auto v = n.find("_v"); v != std::string::npos && v + 2 < n.size() &&
                                   std::isdigit(static_cast<unsigned char>(n[v + 2])))
    n.resize(v);
  return n;
}

// Where each correlation's device work starts: the end of its launch's flow arrow.
struct DeviceStarts {
  struct At {
    std::int64_t ts;
    std::int32_t device;
    std::int64_t stream;
  };
  std::unordered_map<std::uint32_t, At> first;
  void note(std::uint32_t corr, std::int64_t ts, std::uint32_t dev, std::uint32_t stream) {
    auto it = first.find(corr);
    if (it == first.end() || ts < it->second.ts)
      first[corr] = At{ts, static_cast<std::int32_t>(dev), stream};
  }
};

// CUPTI's timestamps on the trace's timebase.
struct Shift {
  std::int64_t offset_ns;
  std::int64_t operator()(std::uint64_t t) const {
    return static_cast<std::int64_t>(t) + offset_ns;
  }
};

// Which correlation a device record is the window's by. Device work without a correlation belongs
// by where it ran; most windows hold none, and then those places are not worked out (the window's
// records are only filtered by correlation).
class Owners {
 public:
  Owners(const std::vector<KernelRecord>& kernels, const std::vector<CopyRecord>& copies,
         const CorrelationWindow& window)
      : window_(window) {
    const auto uncorrelated = [](const auto& r) { return r.correlation == 0; };
    if (window.all || (std::none_of(kernels.begin(), kernels.end(), uncorrelated) &&
                       std::none_of(copies.begin(), copies.end(), uncorrelated)))
      return;
    for (const auto& k : kernels) bound(k.correlation, k.device, k.stream, k.start);
    for (const auto& c : copies) bound(c.correlation, c.device, c.stream, c.start);
    graph_runs(kernels, copies);
  }

  // The correlation the record is the window's by (a conditional body's kernel: its launch's).
  std::optional<std::uint32_t> of(std::uint32_t corr, std::uint32_t dev, std::uint32_t stream,
                                  std::uint64_t start, std::uint32_t graph = 0) const {
    if (corr != 0 || window_.all)
      return window_.contains(corr) ? std::optional<std::uint32_t>(corr) : std::nullopt;
    if (graph != 0) {
      for (auto it = runs_.lower_bound({graph, 0}); it != runs_.end() && it->first.first == graph;
           ++it)
        if (start >= it->second.begin && start < it->second.limit) return it->first.second;
      return std::nullopt;
    }
    const auto b = bounds_.find({dev, stream});
    if (b != bounds_.end() && start >= b->second.first_in && start < b->second.first_later)
      return corr;
    return std::nullopt;
  }

 private:
  // Per stream, the window's first begin and the first begin of work launched after the window.
  struct StreamBounds {
    std::uint64_t first_in = UINT64_MAX, first_later = UINT64_MAX;
  };
  struct GraphRun {
    std::uint64_t begin = UINT64_MAX, limit = UINT64_MAX;
    std::uint32_t device = 0, stream = 0;
  };
  using Key = std::pair<std::uint32_t, std::uint32_t>;

  void bound(std::uint32_t corr, std::uint32_t dev, std::uint32_t stream, std::uint64_t start) {
    if (corr == 0) return;
    StreamBounds& b = bounds_[{dev, stream}];
    if (window_.contains(corr)) b.first_in = std::min(b.first_in, start);
    if (window_.later(corr)) b.first_later = std::min(b.first_later, start);
  }

  // The window's launches of each graph: a conditional body's kernels (no correlation, on a stream
  // of their own, with their graph's id) ran inside one of them, between its first begin and the
  // next numbered work on its stream (graph launches on one stream run one after another).
  void graph_runs(const std::vector<KernelRecord>& kernels, const std::vector<CopyRecord>& copies) {
    for (const auto& k : kernels)
      if (k.graph_id != 0 && k.correlation != 0 && window_.contains(k.correlation)) {
        GraphRun& r = runs_[{k.graph_id, k.correlation}];
        r.begin = std::min(r.begin, k.start);
        r.device = k.device;
        r.stream = k.stream;
      }
    if (runs_.empty()) return;
    std::map<Key, std::vector<std::pair<std::uint64_t, std::uint32_t>>> numbered;  // sorted
    for (const auto& k : kernels)
      if (k.correlation != 0) numbered[{k.device, k.stream}].emplace_back(k.start, k.correlation);
    for (const auto& c : copies)
      if (c.correlation != 0) numbered[{c.device, c.stream}].emplace_back(c.start, c.correlation);
    for (auto& [key, v] : numbered) std::sort(v.begin(), v.end());
    for (auto& [key, r] : runs_) {
      const auto& v = numbered[{r.device, r.stream}];
      for (auto it = std::upper_bound(v.begin(), v.end(), std::make_pair(r.begin, UINT32_MAX));
           it != v.end(); ++it)
        if (it->second != key.second) {
          r.limit = it->first;
          break;
        }
    }
  }

  const CorrelationWindow& window_;
  std::map<Key, StreamBounds> bounds_;  // (device, stream)
  std::map<Key, GraphRun> runs_;        // (graph, correlation)
};

// kGraphLaunch: one span per graph launch, over its kernels.
void add_graph_launches(const std::vector<KernelRecord>& kernels, const Owners& owners, Shift ns,
                        std::vector<Span>& out, DeviceStarts& starts) {
  struct Launch {
    std::int64_t begin, end;
    std::uint32_t device, stream, graph;
    std::uint64_t nodes;
  };
  std::map<std::uint32_t, Launch> launches;  // by correlation
  for (const auto& k : kernels) {
    if (k.graph_id == 0) continue;
    const auto corr = owners.of(k.correlation, k.device, k.stream, k.start, k.graph_id);
    if (!corr) continue;
    auto [it, fresh] = launches.try_emplace(
        *corr, Launch{ns(k.start), ns(k.end), k.device, k.stream, k.graph_id, 0});
    it->second.begin = std::min(it->second.begin, ns(k.start));
    it->second.end = std::max(it->second.end, ns(k.end));
    ++it->second.nodes;
  }
  for (const auto& [corr, l] : launches) {
    Span s = Span::kernel(fmt::format("graph {}", l.graph), l.begin, l.end,
                          static_cast<std::int32_t>(l.device), l.stream, corr);
    KernelPayload& kp = s.get<KernelPayload>();
    kp.graph_id = l.graph;
    kp.kernels = l.nodes;
    out.push_back(std::move(s));
    starts.note(corr, l.begin, l.device, l.stream);
  }
}

Span kernel_span(const KernelRecord& k, const std::string& name, std::uint32_t corr, Shift ns,
                 const std::unordered_map<std::uint64_t, std::string>* node_stages) {
  Span s = Span::kernel(name, ns(k.start), ns(k.end), static_cast<std::int32_t>(k.device), k.stream,
                        corr);
  s.context = k.context;
  KernelPayload& kp = s.get<KernelPayload>();
  kp.grid = k.grid;
  kp.block = k.block;
  kp.registers = k.registers;
  kp.shared_memory = k.shared_memory;
  kp.graph_id = k.graph_id;
  kp.graph_node_id = k.graph_node;
  if (node_stages != nullptr && k.graph_node != 0)
    if (const auto it = node_stages->find(k.graph_node); it != node_stages->end())
      kp.stage = it->second;
  return s;
}

void add_copies(const std::vector<CopyRecord>& copies, const Owners& owners, Shift ns,
                std::vector<Span>& out, DeviceStarts& starts) {
  for (const auto& c : copies) {
    if (!owners.of(c.correlation, c.device, c.stream, c.start)) continue;
    const auto dev = static_cast<std::int32_t>(c.device);
    Span s = c.memset ? Span::memset(c.bytes, ns(c.start), ns(c.end), dev, c.stream, c.correlation)
                      : Span::memcpy(c.kind, c.bytes, ns(c.start), ns(c.end), dev, c.stream,
                                     c.correlation);
    s.context = c.context;
    out.push_back(std::move(s));
    starts.note(c.correlation, ns(c.start), c.device, c.stream);
  }
}

}  // namespace

std::vector<std::uint32_t> ActivityRecords::devices(const CorrelationWindow& window) const {
  std::vector<std::uint32_t> d;
  for (const auto& k : kernels_)
    if (k.correlation == 0 || window.contains(k.correlation)) d.push_back(k.device);
  for (const auto& c : copies_)
    if (c.correlation == 0 || window.contains(c.correlation)) d.push_back(c.device);
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  return d;
}

void ActivityRecords::to_spans(
    TraceMode mode, const CorrelationWindow& window, std::int64_t offset_ns, std::int64_t pid,
    std::int32_t default_device, std::vector<Span>& out,
    const std::unordered_map<std::uint64_t, std::string>* node_stages) const {
  const Shift ns{offset_ns};
  const Owners owners(kernels_, copies_, window);
  DeviceStarts starts;
  // The device's work first: the launches' flow arrows end where it started.
  if (mode == TraceMode::kGraphLaunch) add_graph_launches(kernels_, owners, ns, out, starts);
  for (const auto& k : kernels_) {
    if (mode == TraceMode::kGraphLaunch && k.graph_id != 0) continue;
    const auto corr = owners.of(k.correlation, k.device, k.stream, k.start, k.graph_id);
    if (!corr) continue;
    out.push_back(kernel_span(k, names_[static_cast<std::size_t>(k.name)], *corr, ns, node_stages));
    starts.note(*corr, ns(k.start), k.device, k.stream);
  }
  add_copies(copies_, owners, ns, out, starts);
  for (const auto& a : launches_) {
    if (!window.contains(a.correlation)) continue;
    const auto it = starts.first.find(a.correlation);
    if (a.api == LaunchApi::kDriver && it == starts.first.end()) continue;  // launched nothing
    out.push_back(Span::launch(call_name(a.api, a.cbid), ns(a.start), ns(a.end), pid, a.tid,
                               a.correlation,
                               CallPayload{a.cbid, a.api, waits_for_device(a.api, a.cbid)}));
    if (it != starts.first.end())
      out.push_back(Span::flow(a.correlation, ns(a.start), pid, a.tid, it->second.ts,
                               it->second.device, it->second.stream));
  }
  std::unordered_map<std::uint32_t, std::int32_t> device_of;  // context -> device
  for (const auto& k : kernels_) device_of[k.context] = static_cast<std::int32_t>(k.device);
  for (const auto& c : copies_) device_of[c.context] = static_cast<std::int32_t>(c.device);
  for (const auto& s : syncs_) {
    if (!window.contains(s.correlation)) continue;
    const auto dev = device_of.find(s.context);
    // CUPTI marks "no stream" (a context synchronisation) with all bits set: Kineto writes -1.
    Span span = Span::synchronization(s.kind, ns(s.start), ns(s.end),
                                      dev == device_of.end() ? default_device : dev->second,
                                      static_cast<std::int32_t>(s.stream), s.correlation);
    span.context = s.context;
    out.push_back(std::move(span));
  }
  for (const auto& [b, e] : overheads_)
    if (window.all || (ns(b) >= window.from_ns && ns(b) < window.until_ns))
      out.push_back(Span::overhead("CUPTI overhead", ns(b), ns(e), pid, 0));
}

}  // namespace simprof::cuda::detail
