// SPDX-License-Identifier: MIT
#include "simprof/cuda/kernel_tracer.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"

namespace simprof::cuda {

namespace {

struct KernelRec {
  std::uint64_t start, end;
  std::uint32_t device, stream, corr, graph_id;
  std::uint64_t graph_node;
  std::int32_t grid[3], block[3];
  int name;
};
struct ApiRec {
  std::uint64_t start, end;
  std::uint32_t cbid, corr, tid;
};
struct CopyRec {
  std::uint64_t start, end, bytes;
  std::uint32_t device, stream, corr;
  std::uint8_t kind;  // copyKind, or 255 for memset
};
struct SyncRec {
  std::uint64_t start, end;
  std::uint32_t type, stream;
};

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : fmt::format("CUPTI error {}", static_cast<int>(r));
}

// CUPTI's callbacks are plain functions: they reach the one tracer through this pointer.
std::atomic<KernelTracer::Impl*> g_impl{nullptr};
Clock g_clock = Clock::steady();
double g_ns_per_tick = 1.0;

uint64_t CUPTIAPI timestamp_cb() {
  // The TraceSession's conversion (to_ns), on the profiler's clock.
  return static_cast<uint64_t>(std::llround(static_cast<double>(g_clock.now()) * g_ns_per_tick));
}

void CUPTIAPI noop_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

}  // namespace

struct KernelTracer::Impl {
  KernelTracerOptions options;
  CUpti_SubscriberHandle subscriber = nullptr;
  bool enabled = false;
  bool running = false;
  std::string reason;
  std::mutex mutex;  // guards everything below: CUPTI completes buffers on its own thread
  std::vector<std::unique_ptr<std::uint8_t[]>> pool;
  std::vector<std::uint8_t*> free_list;
  std::size_t allocated = 0;
  std::vector<KernelRec> kernels;
  std::vector<ApiRec> apis;
  std::vector<CopyRec> copies;
  std::vector<SyncRec> syncs;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> overheads;
  std::vector<std::string> names;
  std::unordered_map<std::string, int> name_ids;
  std::uint64_t dropped = 0;
  std::int64_t offset = 0;  // added to CUPTI timestamps when its clock is not the profiler's

  // Names by CUPTI's (mangled) text; each new one is demangled once, as Kineto writes them.
  int intern(const char* n) {
    const std::string raw = n ? n : "?";
    const auto it = name_ids.find(raw);
    if (it != name_ids.end()) return it->second;
    std::string shown = raw;
    if (raw.rfind("_Z", 0) == 0) {
      int status = 0;
      char* d = abi::__cxa_demangle(raw.c_str(), nullptr, nullptr, &status);
      if (status == 0 && d) shown = d;
      std::free(d);
    }
    names.push_back(std::move(shown));
    return name_ids[raw] = static_cast<int>(names.size() - 1);
  }

  void parse(std::uint8_t* buffer, std::size_t valid) {
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
          kernels.push_back(KernelRec{k->start,
                                      k->end,
                                      k->deviceId,
                                      k->streamId,
                                      k->correlationId,
                                      k->graphId,
                                      k->graphNodeId,
                                      {k->gridX, k->gridY, k->gridZ},
                                      {k->blockX, k->blockY, k->blockZ},
                                      intern(k->name)});
          break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME: {
          const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
          apis.push_back(ApiRec{a->start, a->end, a->cbid, a->correlationId, a->threadId});
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
          copies.push_back(CopyRec{m->start, m->end, m->bytes, m->deviceId, m->streamId,
                                   m->correlationId, m->copyKind});
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
          copies.push_back(
              CopyRec{m->start, m->end, m->bytes, m->deviceId, m->streamId, m->correlationId, 255});
          break;
        }
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
          const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
          syncs.push_back(
              SyncRec{s->start, s->end, static_cast<std::uint32_t>(s->type), s->streamId});
          break;
        }
        case CUPTI_ACTIVITY_KIND_OVERHEAD: {
          const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(rec);
          overheads.emplace_back(o->start, o->end);
          break;
        }
        default:
          break;
      }
    }
  }

  void clear() {
    kernels.clear();
    apis.clear();
    copies.clear();
    syncs.clear();
    overheads.clear();
  }

  std::vector<CUpti_ActivityKind> kinds() const {
    std::vector<CUpti_ActivityKind> k{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
    if (options.runtime_api) k.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
    if (options.memory) {
      k.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
      k.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
    }
    if (options.synchronization) k.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    if (options.overhead) k.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
    return k;
  }

  void disable(std::string why) {
    enabled = false;
    reason = std::move(why);
    default_logger()->warn("simprof: kernel tracing is off: {}. The simulation runs on untraced.",
                           reason);
  }
};

namespace {

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = nullptr;
  *size = 0;
  KernelTracer::Impl* impl = g_impl.load();
  if (!impl) return;
  std::lock_guard<std::mutex> lock(impl->mutex);
  if (impl->free_list.empty() && impl->allocated < impl->options.max_buffers) {
    impl->pool.push_back(std::make_unique<std::uint8_t[]>(impl->options.buffer_bytes + 8));
    impl->free_list.push_back(impl->pool.back().get());
    ++impl->allocated;
  }
  if (impl->free_list.empty()) return;  // CUPTI drops records and counts them
  std::uint8_t* raw = impl->free_list.back();
  impl->free_list.pop_back();
  *buffer =
      raw + ((8 - reinterpret_cast<std::uintptr_t>(raw) % 8) % 8);  // CUPTI wants 8-byte alignment
  *size = impl->options.buffer_bytes;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t,
                               size_t valid) {
  KernelTracer::Impl* impl = g_impl.load();
  if (!impl || !buffer) return;
  std::lock_guard<std::mutex> lock(impl->mutex);
  if (impl->running) impl->parse(buffer, valid);  // a flush outside a window only recycles
  size_t lost = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &lost) == CUPTI_SUCCESS)
    impl->dropped += lost;
  for (auto& p : impl->pool) {
    const std::uint8_t* raw = p.get();
    if (buffer >= raw && buffer < raw + 8) {
      impl->free_list.push_back(p.get());
      break;
    }
  }
}

}  // namespace

KernelTracer::KernelTracer(const StepProfiler& prof, KernelTracerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  Impl* expected = nullptr;
  if (!g_impl.compare_exchange_strong(expected, impl_.get()))
    throw std::logic_error("simprof: a KernelTracer already exists (CUPTI allows one per process)");
  g_clock = prof.clock();
  g_ns_per_tick = 1e9 / prof.clock().ticks_per_second();
  if (const CUptiResult r = cuptiSubscribe(&impl_->subscriber, noop_callback, nullptr);
      r != CUPTI_SUCCESS) {
    impl_->subscriber = nullptr;
    impl_->disable(fmt::format("cuptiSubscribe failed: {} (another profiler or tool holds CUPTI?)",
                               cupti_error(r)));
    return;
  }
  if (options.align_clock) {
    if (const CUptiResult r = cuptiActivityRegisterTimestampCallback(timestamp_cb);
        r != CUPTI_SUCCESS) {
      impl_->disable(
          fmt::format("cuptiActivityRegisterTimestampCallback failed: {}", cupti_error(r)));
      return;
    }
  }
  if (const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
      r != CUPTI_SUCCESS) {
    impl_->disable(fmt::format("cuptiActivityRegisterCallbacks failed: {}", cupti_error(r)));
    return;
  }
  impl_->enabled = true;
}

KernelTracer::~KernelTracer() {
  if (impl_->enabled) {
    for (auto k : impl_->kinds()) cuptiActivityDisable(k);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  if (impl_->subscriber) cuptiUnsubscribe(impl_->subscriber);
  g_impl.store(nullptr);
}

bool KernelTracer::enabled() const noexcept { return impl_->enabled; }
const std::string& KernelTracer::disabled_reason() const noexcept { return impl_->reason; }
std::uint64_t KernelTracer::dropped() const noexcept {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->dropped;
}

void KernelTracer::start() {
  if (!impl_->enabled) return;
  if (!impl_->options.align_clock) {
    uint64_t cupti_now = 0;
    cuptiGetTimestamp(&cupti_now);
    impl_->offset =
        static_cast<std::int64_t>(timestamp_cb()) - static_cast<std::int64_t>(cupti_now);
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->clear();
    impl_->running = true;
  }
  for (auto k : impl_->kinds())
    if (const CUptiResult r = cuptiActivityEnable(k); r != CUPTI_SUCCESS) {
      impl_->disable(
          fmt::format("cuptiActivityEnable({}) failed: {}", static_cast<int>(k), cupti_error(r)));
      for (auto k2 : impl_->kinds()) cuptiActivityDisable(k2);
      return;
    }
}

void KernelTracer::discard() {
  if (!impl_->enabled) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->clear();
}

std::uint64_t KernelTracer::stop_and_collect(std::vector<TraceEvent>& out) {
  if (!impl_->enabled) return 0;
  // The window's kernels must have finished before CUPTI can report them.
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
    default_logger()->error("simprof: kernel tracer: cudaDeviceSynchronize failed: {}",
                            cudaGetErrorName(e));
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (auto k : impl_->kinds()) cuptiActivityDisable(k);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->running = false;
  Impl& d = *impl_;
  const auto pid = static_cast<std::int64_t>(::getpid());
  const std::int64_t offset = d.offset;
  auto ns = [offset](std::uint64_t t) { return static_cast<std::int64_t>(t) + offset; };

  // Tracks: one process per device, one thread per stream, as Kineto lays them out.
  std::map<std::uint32_t, std::map<std::uint32_t, bool>> tracks;
  for (const auto& k : d.kernels) tracks[k.device][k.stream] = true;
  for (const auto& c : d.copies) tracks[c.device][c.stream] = true;
  for (const auto& [dev, streams] : tracks) {
    out.push_back(TraceEvent::process_name(dev, fmt::format("GPU {}", dev)));
    for (const auto& [s, _] : streams)
      out.push_back(TraceEvent::thread_name(dev, s, fmt::format("stream {}", s)));
  }
  // Where each correlation's device work starts, for the flow arrows.
  std::unordered_map<std::uint32_t,
                     std::pair<std::int64_t, std::pair<std::uint32_t, std::uint32_t>>>
      first;
  auto note = [&](std::uint32_t corr, std::int64_t ts, std::uint32_t dev, std::uint32_t stream) {
    auto it = first.find(corr);
    if (it == first.end() || ts < it->second.first) first[corr] = {ts, {dev, stream}};
  };
  if (d.options.mode == TraceMode::kGraphLaunch) {
    struct Launch {
      std::int64_t b, e;
      std::uint32_t dev, stream, graph;
      std::int64_t nodes;
    };
    std::map<std::uint32_t, Launch> launches;  // by correlation
    for (const auto& k : d.kernels) {
      if (k.graph_id == 0) continue;
      auto [it, fresh] = launches.try_emplace(
          k.corr, Launch{ns(k.start), ns(k.end), k.device, k.stream, k.graph_id, 0});
      it->second.b = std::min(it->second.b, ns(k.start));
      it->second.e = std::max(it->second.e, ns(k.end));
      ++it->second.nodes;
    }
    for (const auto& [corr, l] : launches) {
      TraceEvent e = TraceEvent::complete(fmt::format("graph {}", l.graph), "kernel", l.b,
                                          l.e - l.b, l.dev, l.stream);
      e.args = {{"device", std::int64_t{l.dev}},
                {"stream", std::int64_t{l.stream}},
                {"correlation", std::int64_t{corr}},
                {"graph id", std::int64_t{l.graph}},
                {"kernels", l.nodes}};
      out.push_back(std::move(e));
      note(corr, l.b, l.dev, l.stream);
    }
  }
  for (const auto& k : d.kernels) {
    if (d.options.mode == TraceMode::kGraphLaunch && k.graph_id != 0) continue;
    TraceEvent e = TraceEvent::complete(d.names[static_cast<std::size_t>(k.name)], "kernel",
                                        ns(k.start), ns(k.end) - ns(k.start), k.device, k.stream);
    e.args = {{"device", std::int64_t{k.device}},
              {"stream", std::int64_t{k.stream}},
              {"correlation", std::int64_t{k.corr}},
              {"grid", std::vector<std::int64_t>{k.grid[0], k.grid[1], k.grid[2]}},
              {"block", std::vector<std::int64_t>{k.block[0], k.block[1], k.block[2]}}};
    if (k.graph_id) {
      e.args.emplace_back("graph id", std::int64_t{k.graph_id});
      e.args.emplace_back("graph node id", static_cast<std::int64_t>(k.graph_node));
    }
    out.push_back(std::move(e));
    note(k.corr, ns(k.start), k.device, k.stream);
  }
  for (const auto& c : d.copies) {
    static const char* kinds[] = {"Memcpy ?",    "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA",
                                  "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA",
                                  "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
    const char* name = c.kind == 255 ? "Memset" : c.kind < 11 ? kinds[c.kind] : "Memcpy";
    TraceEvent e = TraceEvent::complete(name, c.kind == 255 ? "gpu_memset" : "gpu_memcpy",
                                        ns(c.start), ns(c.end) - ns(c.start), c.device, c.stream);
    e.args = {{"bytes", static_cast<std::int64_t>(c.bytes)}, {"correlation", std::int64_t{c.corr}}};
    out.push_back(std::move(e));
    note(c.corr, ns(c.start), c.device, c.stream);
  }
  for (const auto& a : d.apis) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a.cbid, &name) != CUPTI_SUCCESS || !name)
      name = "cuda?";
    std::string n = name;
    if (const auto v = n.find("_v"); v != std::string::npos && v + 2 < n.size() &&
                                     std::isdigit(static_cast<unsigned char>(n[v + 2])))
      n.resize(v);  // cudaLaunchKernel_v7000 -> cudaLaunchKernel
    TraceEvent e =
        TraceEvent::complete(n, "cuda_runtime", ns(a.start), ns(a.end) - ns(a.start), pid, a.tid);
    e.args = {{"correlation", std::int64_t{a.corr}}, {"cbid", std::int64_t{a.cbid}}};
    out.push_back(std::move(e));
    if (auto it = first.find(a.corr); it != first.end()) {
      out.push_back(TraceEvent::flow_start(a.corr, ns(a.start), pid, a.tid));
      out.push_back(TraceEvent::flow_end(a.corr, it->second.first, it->second.second.first,
                                         it->second.second.second));
    }
  }
  for (const auto& s : d.syncs) {
    TraceEvent e = TraceEvent::complete("cuda synchronisation", "cuda_sync", ns(s.start),
                                        ns(s.end) - ns(s.start), pid, 0);
    e.args = {{"type", std::int64_t{s.type}}, {"stream", std::int64_t{s.stream}}};
    out.push_back(std::move(e));
  }
  for (const auto& [b, e] : d.overheads)
    out.push_back(TraceEvent::complete("CUPTI overhead", "overhead", ns(b), ns(e) - ns(b), pid, 0));
  const std::uint64_t lost = d.dropped;
  d.dropped = 0;
  d.clear();
  return lost;
}

}  // namespace simprof::cuda
