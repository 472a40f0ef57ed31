// SPDX-License-Identifier: MIT
#include "simprof/cuda/gpu_profile.hpp"

#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "simprof/cuda/graphs/instrumentation.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/cuda/timing/step_pacer.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"

namespace simprof::cuda {

namespace {

const GpuProfileOptions& checked(const GpuProfileOptions& o) {
  if (o.max_in_flight < 1)
    throw std::invalid_argument(fmt::format(
        "simprof: GpuProfileOptions.max_in_flight = {} (expected >= 1)", o.max_in_flight));
  if (o.stage_sample_every < 0)
    throw std::invalid_argument(
        fmt::format("simprof: GpuProfileOptions.stage_sample_every = {} (expected >= 0; 0: no "
                    "device stage times)",
                    o.stage_sample_every));
  if (o.trace && o.trace_session != nullptr)
    throw std::invalid_argument(
        "simprof: GpuProfileOptions: both trace (a session of its own) and trace_session (yours) "
        "are set (expected one of them)");
  if (o.kernel_sample_every < 0)
    throw std::invalid_argument(
        fmt::format("simprof: GpuProfileOptions.kernel_sample_every = {} (expected >= 0; 0: no "
                    "kernel table)",
                    o.kernel_sample_every));
  return o;
}

// The kernel timer's steps (i % k == offset) never the stage timer's (i % s == 0) where that can
// be: they meet when offset is a multiple of gcd(k, s). A step both sample runs the stage timer's
// copy (attached first), and the kernel timer reads nothing from it.
int kernel_offset(int k, int s) {
  if (s <= 0) return 0;
  const int g = std::gcd(k, s);
  return g > 1 ? g / 2 : 0;
}

}  // namespace

// Owned by the profiler; made in the order the header gives, destroyed in reverse.
struct GpuProfile::Tools final : GraphTools {
  StepProfiler& prof;
  cudaStream_t stream_;
  std::optional<DeviceStageTimer> stages;  // owns the pacer when there is one
  std::optional<StepPacer> own_pacer;      // without a stage timer
  std::optional<GraphKernelTimer> kernels;
  std::optional<TraceSession> session;
  std::optional<KernelTracer> tracer;
  SourceRegistration joined;  // leaves the session first

  Tools(StepProfiler& p, cudaStream_t stream, const GpuProfileOptions& o)
      : prof(p), stream_(stream) {
    if (o.stage_sample_every > 0) {
      DeviceStageTimerOptions so;
      so.sample_every = o.stage_sample_every;
      so.max_in_flight = o.max_in_flight;
      so.fps_from_device = o.fps_from_device;
      stages.emplace(prof, stream, so);
    } else {
      StepPacerOptions po;
      po.max_in_flight = o.max_in_flight;
      po.fps_from_device = o.fps_from_device;
      own_pacer.emplace(prof, stream, po);
    }
    if (o.kernel_sample_every > 0) {
      GraphKernelTimerOptions ko;
      ko.sample_every = o.kernel_sample_every;
      ko.sample_offset = kernel_offset(o.kernel_sample_every, o.stage_sample_every);
      kernels.emplace(prof, stream, ko);
    }
    if (o.trace) {
      TraceOptions to = *o.trace;
      to.background = true;  // the window's spans made and written beside the loop
      session.emplace(prof, to);
    }
    if (TraceSession* s = session ? &*session : o.trace_session) {
      tracer.emplace(prof);
      joined = s->add_source(&*tracer);
    }
  }

  cudaStream_t stream() const noexcept override { return stream_; }

  std::vector<std::shared_ptr<GraphInstrumentation>> graph_tools() const override {
    std::vector<std::shared_ptr<GraphInstrumentation>> out;
    if (stages) out.push_back(stages->instrumentation());
    if (kernels) out.push_back(kernels->instrumentation());
    return out;
  }

  const StepPacer& pacer() const { return stages ? *stages->pacer() : *own_pacer; }
};

GpuProfile::GpuProfile(StepProfiler& prof, cudaStream_t stream, GpuProfileOptions options)
    : prof_(&prof), options_(checked(options)) {
  // Refused before anything is made: a second profile's pacer would take the FPS line's clock
  // from the first one's, and give it back to the host as it went.
  if (prof.tools() != nullptr)
    throw std::logic_error(
        "simprof: this StepProfiler owns device tools already (a GpuProfile made from it): one "
        "GpuProfile per profiler; destroy the first before making another");
  auto tools = std::make_shared<Tools>(prof, stream, options_);
  tools_ = tools;
  prof.own_tools(std::move(tools));
}

GpuProfile::~GpuProfile() {
  if (const auto t = tools_.lock()) prof_->release_tools(t.get());  // destroyed with `t`
}

bool GpuProfile::alive() const noexcept { return !tools_.expired(); }

GpuProfile::Tools& GpuProfile::tools() const {
  // The profiler holds the only other reference, and lives on the loop's thread: while it is
  // there, so are they.
  Tools* t = tools_.lock().get();
  if (t == nullptr)
    throw std::logic_error(
        "simprof: GpuProfile: its StepProfiler was destroyed, and its tools with it");
  return *t;
}

DeviceStageTimer& GpuProfile::stages() const {
  Tools& t = tools();
  if (!t.stages)
    throw std::logic_error(
        "simprof: GpuProfile::stages(): device stage times are off (stage_sample_every = 0)");
  return *t.stages;
}

GraphKernelTimer& GpuProfile::kernels() const {
  Tools& t = tools();
  if (!t.kernels)
    throw std::logic_error(
        "simprof: GpuProfile::kernels(): the kernel table is off (kernel_sample_every = 0)");
  return *t.kernels;
}

const StepPacer& GpuProfile::pacer() const { return tools().pacer(); }

TraceSession* GpuProfile::trace() const {
  Tools& t = tools();
  return t.session ? &*t.session : options_.trace_session;
}

void GpuProfile::finish() {
  Tools& t = tools();
  if (t.stages)
    t.stages->synchronize();  // finishes its pacer too
  else
    t.own_pacer->finish();
  if (t.kernels) t.kernels->synchronize();
}

double GpuProfile::mean(std::string_view stage) const {
  Tools& t = tools();
  if (t.stages) return t.stages->mean(stage);
  if (stage == "period") return t.own_pacer->device_steps().mean_period_s();
  if (stage == "step") return t.own_pacer->device_steps().mean_step_s();
  return std::numeric_limits<double>::quiet_NaN();
}

std::string GpuProfile::report() const {
  Tools& t = tools();
  const DeviceSteps& d = t.pacer().device_steps();
  std::string out = fmt::format(
      "GPU: {} steps paced ({} in flight at most), mean period {:.2f} us on the GPU clock\n",
      d.steps(), t.pacer().options().max_in_flight, d.mean_period_s() * 1e6);
  if (t.stages) out += device_stage_table(t.prof, *t.stages);
  if (t.kernels) out += kernel_table(*t.kernels);
  return out;
}

ProfiledCapture GpuProfile::capturing(cudaStream_t stream) const {
  ProfiledCapture c;
  for (auto& tool : tools().graph_tools())
    c.notes_.push_back(std::make_unique<ForeignCapture>(tool, stream));
  return c;
}

ProfiledGraph GpuProfile::stamp(cudaGraph_t captured) const {
  std::vector<InstrumentedGraph> copies;
  for (auto& tool : tools().graph_tools()) copies.emplace_back(tool, captured);
  return ProfiledGraph(std::move(copies));
}

bool ProfiledGraph::launch(cudaStream_t stream) {
  for (InstrumentedGraph& c : copies_)
    if (c.launch(stream)) return true;
  return false;
}

bool ProfiledGraph::instrumented() const noexcept {
  for (const InstrumentedGraph& c : copies_)
    if (c.instrumented()) return true;
  return false;
}

std::uint64_t ProfiledGraph::launches() const noexcept {
  std::uint64_t n = 0;
  for (const InstrumentedGraph& c : copies_) n += c.launches();
  return n;
}

}  // namespace simprof::cuda
