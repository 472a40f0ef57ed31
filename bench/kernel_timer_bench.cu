// SPDX-License-Identifier: MIT
// What per-node timing of a replayed graph costs, and whether it reads what CUPTI reads: a graph of
// 100 elementwise kernels over n_envs x 64 floats (work fixed per step: each 1, 9, 17 or 25
// passes), 1,024 and 30,000 envs, in three loops over one stream, interleaved in every iteration
// and timed with CUDA events:
//   * off      the graph replayed as captured (GraphCache, no tool): the baseline
//   * stamped  a GraphKernelTimer with the default options (a stamped copy on 1 step in 128)
//   * cupti    the same plain graph with simprof's KernelTracer on (per-kernel CUPTI activity)
// Targets: stamped vs off <= 2 % at 1,024 envs and <= 1 % at 30,000. Then the agreement with
// CUPTI, node by node (the share of nodes whose means are within 5 % or 1 us, target 100 %):
//   * separate pass   the timer's means (1 step in 128) against CUPTI's kernel durations of the
//                     plain graph, CUPTI on in a pass of its own
//   * same replays    a timer stamping every step, under CUPTI: its readings against CUPTI's
//                     durations of the same kernels of the same stamped replays
// and beside them what CUPTI's own instrumentation does to the kernels it times: the same stamped
// loop read without CUPTI and under it (its readings' rise), and CUPTI's durations in the stamped
// replays against the plain graph's (what the stamps do to the kernels). --verdicts FILE writes
// the verdicts; a configuration that did not run is "not measured".
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ratio_reporter.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/timers/timer_view.hpp"

namespace {

using namespace simprof;
constexpr int kKernels = 100;
constexpr int kSteps = 256;  // per loop per iteration: 2 sampled steps of the timer's 1 in 128
constexpr int kCompareReplays = 64;

// Tagged by its passes, so that its name says which of the four kernels it is (the node comparisons
// check CUPTI's order against the timer's by it); the code is the same for every tag.
template <int kPasses>
__global__ void elementwise(float* x, int n, float a, int passes) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int p = 0; p < passes; ++p) v = v * 1.0001f + a;
  x[i] = v;
}

// The SM clock while every SM spins: each block's one thread counts clock64() cycles against the
// global timer for `cycles`, and writes its MHz.
__global__ void sm_clock(long long cycles, double* mhz) {
  if (threadIdx.x != 0) return;
  const std::uint64_t t0 = global_timer_ns();
  const long long c0 = clock64();
  long long c1 = c0;
  while (c1 - c0 < cycles) c1 = clock64();
  const std::uint64_t t1 = global_timer_ns();
  // A block whose timer did not move writes NaN: the reading is then not measured.
  mhz[blockIdx.x] = t1 > t0 ? static_cast<double>(c1 - c0) * 1e3 / static_cast<double>(t1 - t0)
                            : __longlong_as_double(0x7ff8000000000000LL);
}

void (*const kElementwise[4])(float*, int, float, int) = {elementwise<1>, elementwise<9>,
                                                          elementwise<17>, elementwise<25>};

// A kernel's tag from its demangled name ("...elementwise<9>(float*, ...)"); -1 where none.
int tag_of(const std::string& name) {
  const std::size_t at = name.find("elementwise<");
  return at == std::string::npos ? -1 : std::atoi(name.c_str() + at + 12);
}

// The step: 100 kernels in 4 stages of 25, each of 1-4 passes.
struct Workload {
  StepProfiler& prof;
  int n;
  cuda::DeviceBuffer<float> x;
  StageId stages[4];
  Workload(StepProfiler& p, int n_envs) : prof(p), n(n_envs * 64), x(static_cast<std::size_t>(n)) {
    const char* names[4] = {"physics/collide", "physics/solve", "physics/integrate", "sensors"};
    for (int s = 0; s < 4; ++s) stages[s] = prof.stage_id(names[s]);
  }
  void enqueue(cudaStream_t s) {
    for (int g = 0; g < 4; ++g) {
      auto st = prof.stage(stages[g]);
      for (int k = 0; k < kKernels / 4; ++k)
        kElementwise[k % 4]<<<(n + 255) / 256, 256, 0, s>>>(x.data(), n, 1e-3f, 1 + (k % 4) * 8);
    }
  }
};

struct Loop {
  StepProfiler prof;
  Workload work;
  cuda::GraphCache cache;
  Loop(int n_envs, cudaStream_t s) : prof(quiet(), n_envs), work(prof, n_envs), cache(s) {}
  static ProfilingOptions quiet() {
    ProfilingOptions o;
    o.show_fps = false;
    return o;
  }
  void steps(int k) {
    for (int i = 0; i < k; ++i) {
      auto step = prof.step();
      cache.run({work.n}, [&](cudaStream_t s) { work.enqueue(s); });
    }
  }
};

// One reading's per-node means against another's: how many within 5 % or 1 us of the other's.
struct Agreement {
  int agree = 0, compared = 0;
  double worst_us = 0, bias_us = 0;  // |a - b| at worst, mean of a - b over the nodes
  double min_us = 0, max_us = 0;     // the smallest and the largest a - b
  int worst_node = -1;
  std::string cell() const {
    return compared ? fmt::format("{}/{} {:.2f} {:+.2f}", agree, compared, worst_us, bias_us)
                    : std::string("not measured");
  }
};

Agreement compare(const std::vector<double>& a_us, const std::vector<double>& b_us) {
  Agreement g;
  if (a_us.size() != static_cast<std::size_t>(kKernels) || a_us.size() != b_us.size()) return g;
  for (int k = 0; k < kKernels; ++k) {
    const double a = a_us[static_cast<std::size_t>(k)], b = b_us[static_cast<std::size_t>(k)];
    const double diff = std::abs(a - b);
    g.bias_us += (a - b) / kKernels;
    g.min_us = k == 0 ? a - b : std::min(g.min_us, a - b);
    g.max_us = k == 0 ? a - b : std::max(g.max_us, a - b);
    ++g.compared;
    if (diff <= std::max(1.0, 0.05 * b)) ++g.agree;
    if (diff > g.worst_us) {
      g.worst_us = diff;
      g.worst_node = k;
    }
  }
  return g;
}

struct Result {
  double us_off = 0, us_stamped = 0, us_cupti = 0;
  double stamped_pct = 0, cupti_pct = 0;  // medians over iterations of per-iteration ratios
  std::uint64_t replays = 0, dropped = 0;
  double hop_ns = 0;
  // Node means, us: the timer's (1 in 128), CUPTI's of the plain graph; a timer stamping every
  // step without CUPTI and under it, and CUPTI's of those stamped replays.
  std::vector<double> ours, cupti, every, every_cupti, cupti_stamped;
  Agreement separate, same, rise, stamps;  // ours/cupti, every_cupti/cupti_stamped,
                                           // every_cupti/every, cupti_stamped/cupti
  // Pearson's r of (CUPTI's - ours) in the separate pass against the readings' rise under CUPTI,
  // node by node: how much of the separate pass's difference is CUPTI lengthening what it times.
  double r_rise = simprof::bench::kNotMeasured;
  std::string ids;             // the first kernel's graph and node ids, the timer's and CUPTI's
  bool order_differs = false;  // CUPTI's kernels did not come in the timer's node order
  // The SM clock, MHz, probed after each pass of the every-step timer: without CUPTI, under it.
  double mhz_off = simprof::bench::kNotMeasured, mhz_on = simprof::bench::kNotMeasured;
};

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = a.size();
  if (n < 2 || b.size() != n) return simprof::bench::kNotMeasured;
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ma += a[i] / static_cast<double>(n);
    mb += b[i] / static_cast<double>(n);
  }
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ab += (a[i] - ma) * (b[i] - mb);
    aa += (a[i] - ma) * (a[i] - ma);
    bb += (b[i] - mb) * (b[i] - mb);
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : simprof::bench::kNotMeasured;
}
std::map<int, Result> g_results;

// CUPTI's mean duration of each of the graph's kernels in `sink` (the k-th elementwise kernel of
// each replay is node k); empty unless exactly `replays` whole replays are there (a record lost or
// one too many would put every later kernel on another node), and unless the k-th kernel of every
// replay has the tag of the timer's node k (`nodes`; else *order_differs is set).
std::vector<double> cupti_means(const std::vector<Span>& sink, int replays,
                                const std::vector<cuda::KernelNodeTime>& nodes,
                                bool* order_differs) {
  std::vector<const Span*> kernels;
  for (const Span& s : sink)
    if (s.kind == SpanKind::kKernel && s.name.find("elementwise") != std::string::npos)
      kernels.push_back(&s);
  std::sort(kernels.begin(), kernels.end(),
            [](const Span* x, const Span* y) { return x->begin_ns < y->begin_ns; });
  if (replays <= 0 || kernels.size() != static_cast<std::size_t>(replays) * kKernels) return {};
  std::vector<double> us(kKernels, 0.0);
  for (int i = 0; i < replays * kKernels; ++i) {
    const Span& k = *kernels[static_cast<std::size_t>(i)];
    if (nodes.size() != static_cast<std::size_t>(kKernels) ||
        tag_of(k.name) != tag_of(nodes[static_cast<std::size_t>(i % kKernels)].name)) {
      *order_differs = true;
      return {};
    }
    us[static_cast<std::size_t>(i % kKernels)] +=
        static_cast<double>(k.end_ns - k.begin_ns) * 1e-3 / replays;
  }
  return us;
}

// The timer's node means, us; empty unless every node was read (a node no replay timed has no
// mean) and the copy has one node a kernel.
std::vector<double> node_means(const std::vector<cuda::KernelNodeTime>& nodes) {
  std::vector<double> us;
  for (const cuda::KernelNodeTime& k : nodes) {
    if (k.count == 0 || k.name.find("elementwise") == std::string::npos) return {};
    us.push_back(k.mean_s * 1e6);
  }
  return us;
}

double median(std::vector<double> v) {
  if (v.empty()) return simprof::bench::kNotMeasured;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void BM_KernelTimer(benchmark::State& state) {
  std::string why;
  if (!cuda::device_available(&why)) {
    state.SkipWithError(("no GPU: " + why).c_str());
    return;
  }
  const int n = static_cast<int>(state.range(0));
  cuda::Stream stream;
  Loop off(n, stream), stamped(n, stream), traced(n, stream);
  cuda::GraphKernelTimer timer(stamped.prof, stream);
  stamped.cache.attach(timer.instrumentation());
  cuda::KernelTracerOptions ko;
  ko.runtime_api = ko.driver_api = ko.memory = ko.synchronization = false;  // kernels only
  cuda::KernelTracer tracer(traced.prof, ko);
  for (Loop* l : {&off, &stamped, &traced}) l->steps(16);
  stream.synchronize();
  cuda::Stopwatch w_off(stream), w_stamped(stream), w_cupti(stream);
  std::vector<double> r_stamped, r_cupti;
  double t_off = 0, t_stamped = 0, t_cupti = 0;
  std::vector<Span> sink;
  int rotation = 0;
  for (auto _ : state) {
    for (int k = 0; k < 3; ++k) {
      switch ((k + rotation) % 3) {
        case 0:
          w_off.time([&] { off.steps(kSteps); });
          break;
        case 1:
          w_stamped.time([&] { stamped.steps(kSteps); });
          break;
        default:
          if (tracer.enabled()) {
            tracer.start();
            w_cupti.time([&] { traced.steps(kSteps); });
            tracer.stop();
            tracer.stop_and_collect(sink);
            sink.clear();
          }
      }
    }
    rotation = (rotation + 1) % 3;
    const double a = w_off.last_s(), b = w_stamped.last_s();
    const double c = tracer.enabled() ? w_cupti.last_s() : 0.0;
    t_off += a;
    t_stamped += b;
    t_cupti += c;
    r_stamped.push_back(b / a - 1.0);
    if (tracer.enabled()) r_cupti.push_back(c / a - 1.0);
    state.SetIterationTime((a + b) / (2.0 * kSteps));
  }
  timer.synchronize();
  Result r;
  const double steps = static_cast<double>(state.iterations()) * kSteps;
  r.us_off = t_off * 1e6 / steps;
  r.us_stamped = t_stamped * 1e6 / steps;
  r.us_cupti = tracer.enabled() ? t_cupti * 1e6 / steps : simprof::bench::kNotMeasured;
  r.stamped_pct = 100.0 * median(r_stamped);
  r.cupti_pct = 100.0 * median(r_cupti);
  r.replays = timer.replays();
  r.dropped = timer.dropped();
  r.hop_ns = timer.hop_ns();
  // Agreement, the separate pass: the timer's per-node means against CUPTI's durations of the
  // same nodes of the plain graph, CUPTI on in a pass of its own.
  if (tracer.enabled()) {
    tracer.start();
    traced.steps(kCompareReplays);
    tracer.stop();
    const std::uint64_t lost = tracer.stop_and_collect(sink);
    const std::vector<cuda::KernelNodeTime> nodes = timer.nodes();
    r.ours = node_means(nodes);
    // CUPTI's kernels, replay by replay, must come in the timer's node order (by their tags).
    if (lost == 0) r.cupti = cupti_means(sink, kCompareReplays, nodes, &r.order_differs);
    // The ids each side gives the first kernel: the timer's, of the graph as captured; CUPTI's
    // records', of the replayed one.
    const Span* first = nullptr;
    for (const Span& sp : sink)
      if (sp.kind == SpanKind::kKernel && tag_of(sp.name) >= 0 &&
          (first == nullptr || sp.begin_ns < first->begin_ns))
        first = &sp;
    if (!nodes.empty() && first != nullptr)
      r.ids = fmt::format("timer graph {} node {}, CUPTI's record graph {} node {}",
                          nodes.front().graph_id, nodes.front().node_id,
                          first->or_empty<KernelPayload>().graph_id,
                          first->or_empty<KernelPayload>().graph_node_id);
    sink.clear();
    // The same replays: a timer stamping every step (its ring holds a whole pass, so that no
    // replay goes unstamped), read without CUPTI and under it in turn: off, on, on, off, so that
    // a drift over the four passes cancels between the two.
    Loop all(n, stream);
    cuda::GraphKernelTimerOptions every;
    every.sample_every = 1;
    every.ring = kCompareReplays + 8;
    cuda::GraphKernelTimer each(all.prof, stream, every);
    all.cache.attach(each.instrumentation());
    all.steps(16);
    each.synchronize();
    std::vector<double> sum_off(kKernels, 0.0), sum_on(kKernels, 0.0);
    int sms = 0;
    int device = 0;
    SIMPROF_CUDA_CHECK(cudaGetDevice(&device));
    SIMPROF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    cuda::DeviceBuffer<double> mhz(static_cast<std::size_t>(sms));
    double mhz_sum[2] = {0, 0};
    std::vector<double>* into = nullptr;
    int read = 0, read_off = 0, read_on = 0;
    std::uint64_t lost_on = 0;
    bool traced_all = true;  // every "on" pass really traced (the tracer may turn itself off)
    each.set_on_replay([&](const cuda::KernelReplay& rp) {
      if (into == nullptr || rp.node_s.size() != static_cast<std::size_t>(kKernels)) return;
      for (std::size_t k = 0; k < rp.node_s.size(); ++k) (*into)[k] += rp.node_s[k] * 1e6;
      ++read;
    });
    const std::uint64_t dropped_before = each.dropped() + each.missed();
    for (const bool cupti : {false, true, true, false}) {
      into = cupti ? &sum_on : &sum_off;
      read = 0;
      if (cupti) tracer.start();
      all.steps(kCompareReplays);
      sm_clock<<<sms, 32, 0, stream>>>(40000, mhz.data());  // ~20 us, right behind the replays
      SIMPROF_CUDA_CHECK(cudaGetLastError());
      each.synchronize();
      for (const double m : mhz.to_host(stream)) mhz_sum[cupti ? 1 : 0] += m / (2.0 * sms);
      if (cupti) {
        tracer.stop();
        lost_on += tracer.stop_and_collect(sink);
        traced_all = traced_all && tracer.enabled();
      }
      into = nullptr;
      (cupti ? read_on : read_off) += read;
    }
    // Every replay of the four passes read, none dropped: else "not measured".
    if (traced_all && read_off == 2 * kCompareReplays && read_on == 2 * kCompareReplays &&
        each.dropped() + each.missed() == dropped_before) {
      for (double& o : sum_off) o /= read_off;
      for (double& o : sum_on) o /= read_on;
      r.every = sum_off;
      r.every_cupti = sum_on;
      if (lost_on == 0)
        r.cupti_stamped = cupti_means(sink, 2 * kCompareReplays, each.nodes(), &r.order_differs);
      r.mhz_off = mhz_sum[0];
      r.mhz_on = mhz_sum[1];
    }
    sink.clear();
    r.separate = compare(r.ours, r.cupti);
    r.same = compare(r.every_cupti, r.cupti_stamped);
    r.rise = compare(r.every_cupti, r.every);
    r.stamps = compare(r.cupti_stamped, r.cupti);
    if (r.ours.size() == r.cupti.size() && r.every.size() == r.every_cupti.size()) {
      std::vector<double> short_by, rise;
      for (std::size_t k = 0; k < r.ours.size() && k < r.every.size(); ++k) {
        short_by.push_back(r.cupti[k] - r.ours[k]);
        rise.push_back(r.every_cupti[k] - r.every[k]);
      }
      r.r_rise = correlation(short_by, rise);
    }
  }
  state.counters["stamped_pct"] = r.stamped_pct;
  g_results[n] = r;
}
BENCHMARK(BM_KernelTimer)
    ->ArgName("n_envs")
    ->Arg(1024)
    ->Arg(30000)
    ->Iterations(12)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void print(const simprof::bench::RatioReporter&, simprof::bench::Verdicts& v) {
  using Goal = simprof::bench::Verdicts::Goal;
  if (std::string why; !cuda::device_available(&why))
    std::printf("\nno GPU: nothing measured (%s)\n", why.c_str());
  std::printf(
      "\n--- per-node timing of a replayed %d-kernel graph: us per step on the GPU (CUDA events), "
      "%d-step loops interleaved ---\n%8s %9s %9s %9s %9s %9s %9s %9s %14s %9s %9s\n",
      kKernels, kSteps, "n_envs", "off", "stamped", "cupti", "stamped", "cupti", "replays",
      "hop ns", "within 5%/1us", "worst us", "bias us");
  const auto num = [](double x, const char* f) {
    return std::isnan(x) ? std::string("-") : fmt::format(fmt::runtime(f), x);
  };
  for (const auto& [n, r] : g_results)
    std::printf(
        "%8d %9.2f %9.2f %9s %9s %9s %9llu %9.0f %14s %9s %9s\n", n, r.us_off, r.us_stamped,
        num(r.us_cupti, "{:.2f}").c_str(), num(r.stamped_pct, "{:.2f}%").c_str(),
        num(r.cupti_pct, "{:.2f}%").c_str(), static_cast<unsigned long long>(r.replays), r.hop_ns,
        r.separate.compared ? fmt::format("{}/{}", r.separate.agree, r.separate.compared).c_str()
                            : "-",
        r.separate.compared ? fmt::format("{:.2f}", r.separate.worst_us).c_str() : "-",
        r.separate.compared ? fmt::format("{:+.2f}", r.separate.bias_us).c_str() : "-");
  std::printf(
      "(medians over iterations of per-iteration ratios against off; stamped: GraphKernelTimer, "
      "1 step in 128; cupti: KernelTracer, kernels only; within: nodes whose mean agrees with "
      "CUPTI's, separate pass; bias: the mean of ours - CUPTI's over the nodes)\n");
  std::printf(
      "\n--- node by node (within 5 %%/1 us, worst us, mean difference us) ---\n%8s %22s %22s "
      "%22s %36s %13s %6s %15s\n",
      "n_envs", "separate pass", "same replays", "stamps: CUPTI's", "CUPTI on: our readings",
      "CUPTI/kernel", "r", "SM MHz off/on");
  for (const auto& [n, r] : g_results) {
    double every = 0;
    for (const double u : r.every) every += u;
    const std::string rise =
        r.rise.compared
            ? fmt::format("{:+.2f} us [{:+.2f}, {:+.2f}] {:+.1f} %", r.rise.bias_us, r.rise.min_us,
                          r.rise.max_us, 100.0 * r.rise.bias_us * kKernels / every)
            : std::string("not measured");
    std::printf("%8d %22s %22s %22s %36s %13s %6s %15s\n", n, r.separate.cell().c_str(),
                r.same.cell().c_str(), r.stamps.cell().c_str(), rise.c_str(),
                num((r.us_cupti - r.us_off) / kKernels, "{:.2f} us").c_str(),
                num(r.r_rise, "{:.2f}").c_str(),
                (num(r.mhz_off, "{:.0f}") + "/" + num(r.mhz_on, "{:.0f}")).c_str());
  }
  for (const auto& [n, r] : g_results)
    if (!r.ids.empty()) std::printf("%8d the first kernel's ids: %s\n", n, r.ids.c_str());
  for (const auto& [n, r] : g_results)
    if (r.order_differs)
      std::printf(
          "%8d CUPTI's kernels do not come in the timer's node order (by their tags): not "
          "measured\n",
          n);
  std::printf(
      "(separate pass: the timer's means, 1 step in 128, against CUPTI's durations of the plain "
      "graph traced alone; same replays: a timer stamping every step (no replay unstamped), "
      "under CUPTI, against CUPTI's durations of the same kernels of the same replays; stamps: "
      "CUPTI's durations in those stamped replays against the plain graph's; CUPTI on: how much "
      "that timer's readings rise when CUPTI traces (passes off, on, on, off), mean [least, most] "
      "over the nodes, and the mean against the untraced readings; CUPTI/kernel: what tracing "
      "adds to the replay a kernel, CUDA events (host-bound at 1,024 envs); r: Pearson's r, node "
      "by node, of CUPTI's durations less ours in the separate pass against that rise; SM MHz: "
      "clock64 against the global timer on every SM right after each pass)\n");
  if (const char* path = std::getenv("KERNEL_TIMER_BENCH_NODES")) {  // node by node, for a look
    if (std::FILE* f = std::fopen(path, "w")) {
      std::fprintf(f, "n_envs,node,ours,cupti,every,every_cupti,cupti_stamped\n");
      for (const auto& [n, r] : g_results)
        for (std::size_t k = 0; k < r.ours.size(); ++k)
          if (k < r.cupti.size() && k < r.every.size() && k < r.every_cupti.size() &&
              k < r.cupti_stamped.size())
            std::fprintf(f, "%d,%zu,%.4f,%.4f,%.4f,%.4f,%.4f\n", n, k, r.ours[k], r.cupti[k],
                         r.every[k], r.every_cupti[k], r.cupti_stamped[k]);
      std::fclose(f);
    }
  }
  for (const int n : {1024, 30000}) {
    const auto it = g_results.find(n);
    const bool ran = it != g_results.end();
    const std::string where = n == 1024 ? "1,024 envs" : "30,000 envs";
    const double target = n == 1024 ? 2.0 : 1.0;
    const double pct = ran ? it->second.stamped_pct : simprof::bench::kNotMeasured;
    std::printf(
        "per-node timing vs the plain replay, %s: %+.2f %% [target <= %.0f%%: %s]\n", where.c_str(),
        pct, target,
        v.judge(fmt::format("kernel_timer_{}", n), "stamped loop / plain loop - 1, " + where, pct,
                "%", Goal::kAtMost, target));
    const auto share = [](const Agreement& g) {
      return g.compared > 0 ? 100.0 * g.agree / g.compared : simprof::bench::kNotMeasured;
    };
    // The issue's comparison (CUPTI traced alone), then the same replays under CUPTI.
    for (const bool same : {false, true}) {
      const Agreement none;
      const Agreement& g = !ran ? none : same ? it->second.same : it->second.separate;
      const double agreed = share(g);
      std::printf(
          "nodes within 5 %% or 1 us of CUPTI, %s, %s: %.0f %% [target >= 100%%: %s]\n",
          same ? "same replays" : "separate pass", where.c_str(), agreed,
          v.judge(
              fmt::format("kernel_timer_agree_{}{}", same ? "same_" : "", n),
              fmt::format("share of nodes whose mean is within 5 % or 1 us of "
                          "CUPTI's, {}, {}",
                          same ? "the same stamped replays" : "CUPTI on in a separate pass", where),
              agreed, "%", Goal::kAtLeast, 100.0));
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return simprof::bench::run_benchmarks(argc, argv, print); }
