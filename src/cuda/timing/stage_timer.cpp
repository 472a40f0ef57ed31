// SPDX-License-Identifier: MIT
// DeviceStageTimer's steps: which are stamped, their tags and eager stamps, and each stamped step's
// publication. Its kernels are in stage_kernels.cu, its stamped copies in stage_stamps.cpp, its
// joining in stage_join.cpp.
#include "simprof/cuda/timing/stage_timer.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "simprof/cuda/runtime/error.hpp"
#include "stage_timer_impl.hpp"
#include "stamp_cost.hpp"

namespace simprof::cuda {

namespace {

using detail::kNotTimed;
using detail::StepRecord;

detail::SampleSchedule schedule_of(const DeviceStageTimerOptions& o) {
  return detail::SampleSchedule::checked("DeviceStageTimerOptions", o.sample_every, 0);
}

// The options, validated; the ring rounded up to a power of two (a replayed graph's stamps find
// their record by the step's low 32 bits modulo the ring, the host by the whole step: the two agree
// only for a ring that divides 2^32).
DeviceStageTimerOptions checked(DeviceStageTimerOptions o) {
  if (o.merge_within_ns < 0)
    throw std::invalid_argument(
        fmt::format("simprof: DeviceStageTimerOptions.merge_within_ns = {} (expected >= 0)",
                    o.merge_within_ns));
  (void)schedule_of(o);
  // Paced, the pacer's times of a step arrive up to max_in_flight + mark_every (2) steps late.
  const std::size_t least =
      o.max_in_flight > 0 ? static_cast<std::size_t>(o.max_in_flight) + 4 : std::size_t{2};
  constexpr std::size_t kMostRing = std::size_t{1} << 20;
  if (o.max_in_flight < 0 || o.ring < least || o.ring > kMostRing)
    throw std::invalid_argument(
        fmt::format("simprof: DeviceStageTimerOptions ring = {} with max_in_flight = {} (expected "
                    "max_in_flight >= 0 and max_in_flight + 4 <= ring <= {}, or ring >= 2 "
                    "unpaced)",
                    o.ring, o.max_in_flight, kMostRing));
  std::size_t ring = 1;
  while (ring < o.ring) ring *= 2;
  o.ring = ring;
  return o;
}

// The timer's pacer: spans on every sampled step (its share's denominator) and one unsampled step
// between two; timed end events on the spanned steps only (a timed event costs the GPU a little
// between two steps, an untimed one nothing), the steps between sharing their period. Its times
// arrive up to max_in_flight + mark_every steps late: within the ring.
StepPacerOptions pacer_options(const DeviceStageTimerOptions& o) {
  StepPacerOptions po;
  po.max_in_flight = o.max_in_flight;
  po.fps_from_device = o.fps_from_device;
  po.span_every = std::max(1, o.sample_every / 2);
  const auto room = static_cast<int>(o.ring) - o.max_in_flight - 3;
  po.mark_every = std::max(1, std::min(po.span_every, room));
  return po;
}

// A record per step of the ring, published beside the step into a reading of its own.
detail::RingShape ring_shape(const DeviceStageTimerOptions& o) {
  return {o.ring, sizeof(StepRecord), o.ring, sizeof(StepRecord), detail::Publish::kBeside};
}

}  // namespace

DeviceStageTimer::Impl::Impl(StepProfiler& profiler, cudaStream_t s, DeviceStageTimerOptions o)
    : StampTimer("DeviceStageTimer", profiler, s, schedule_of(checked(o)), ring_shape(checked(o))),
      options(checked(o)),
      slots(options.ring),
      latest(profiler),
      scratch(profiler) {
  measure_costs();
  set_publication();
  if (options.max_in_flight > 0) {
    pacer.emplace(prof, stream, pacer_options(options), StepPacer::Driven{});
    pacer->set_on_step([this](const DeviceStep& d) { device_step(d); });
  }
  ties.emplace(*this);
}

// The device's eager stamp costs, measured once per device: launched as eager stamps are
// (programmatic dependents where the GPU has them and the stamp's code, compiled for 9.0 and up,
// waits for them), and as plain launches (steps a kernel tracer traces).
void DeviceStageTimer::Impl::measure_costs() {
  int major = 0;
  SIMPROF_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_id));
  cudaFuncAttributes stamp_code{};
  SIMPROF_CUDA_CHECK(cudaFuncGetAttributes(&stamp_code, detail::eager_stamp_kernel_fn()));
  dependent_launch = major >= 9 && stamp_code.ptxVersion >= 90;
  detail::set_dependent_launch(device_id, dependent_launch);
  eager_stamp_ns =
      detail::measured_once(device_id, &StampCost::eager_ns, [this] { return calibrate(); });
  eager_stamp_plain_ns = detail::measured_once(device_id, &StampCost::eager_plain_ns, [this] {
    if (!dependent_launch) return eager_stamp_ns;
    plain_now = true;
    struct Reset {
      bool& plain;
      ~Reset() { plain = false; }
    } reset{plain_now};
    return calibrate();
  });
}

double DeviceStageTimer::Impl::calibrate() {
  return detail::measure_eager(
      stream, [this](unsigned long long* at) { return launch_eager_stamp(at, nullptr, 0); });
}

void DeviceStageTimer::Impl::set_publication() {
  publication.recs = engine.record<StepRecord>(0);
  publication.ring = static_cast<unsigned>(options.ring);
  engine.set_publication({detail::publish_kernel_fn(), detail::kPublishThreads, publication.args});
}

void DeviceStageTimer::Impl::set_stream(cudaStream_t s) noexcept {
  stream = s;
  if (pacer) pacer->set_stream(s);
}

void DeviceStageTimer::Impl::on_step_begin(std::uint64_t step, std::int64_t ticks) {
  if (pacer) pacer->on_step_begin(step, ticks);  // its begin event before the step's tag
  began_eagerly = false;
  step_boundaries = step_copy = false;
  step_tag = static_cast<unsigned>(step);
  const bool sampled = schedule.sampled(step);
  slot_now = step % options.ring;
  slots[slot_now].stamped = false;
  skip = true;
  if (!sampled) return;
  // The slot's step ring steps ago is still unread: without pacing the GPU can fall a whole ring
  // behind. Leave this step untimed rather than wait.
  if (slots[slot_now].unread) poll();
  skip = slots[slot_now].unread;
  if (skip) ++dropped;
  slots[slot_now].stamped = !skip;
  if (!skip) {  // the slot's last step is joined or passed over (the ring check above)
    slots[slot_now].eager_stamps = 0;
    slots[slot_now].eager_lost = false;
    slots[slot_now].n_aliases = 0;
  }
  // The step's index, written by the stream itself before the step's work: every stamp of a
  // replayed graph in the step finds its record through it (an eager stamp is told where its time
  // goes).
  const auto value = skip ? kNotTimed : static_cast<unsigned>(step);
  const int r = engine.write_tag(stream, value);
  if (r != 0) failed_with("cuStreamWriteValue32", [r] { return describe_driver(r); });
}

cudaError_t DeviceStageTimer::Impl::launch_eager_stamp(unsigned long long* at,
                                                       detail::StepRecord* begin,
                                                       unsigned tag) noexcept {
  cudaLaunchAttribute dependent{};
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t c{};
  c.gridDim = dim3(1);
  c.blockDim = dim3(1);
  c.stream = stream;
  c.attrs = &dependent;
  c.numAttrs = dependent_launch && !plain_now ? 1 : 0;
  void* args[] = {&at, &begin, &tag};
  return cudaLaunchKernelExC(&c, detail::eager_stamp_kernel_fn(), args);
}

void DeviceStageTimer::Impl::on_step_end(std::uint64_t step, std::int64_t ticks,
                                         StepOutcome outcome) {
  if (pacer) pacer->on_step_end(step, ticks, outcome);  // its end event before the publication
  const std::size_t slot = step % options.ring;
  if (!skip && !step_boundaries && !step_copy && seen_boundaries &&
      outcome == StepOutcome::kCompleted)
    note_unstamped(step);
  seen_boundaries = seen_boundaries || step_boundaries;
  // An unstamped step leaves the slot alone: it may still hold an unread step's publication.
  if (skip) return;
  slots[slot].completed = outcome == StepOutcome::kCompleted;
  // Never full here: a stamped step's slot was free at its begin (slots[...].unread), and each
  // unread step holds one reading.
  publication.step = step;
  publication.eager = slots[slot].eager_stamps;
  publication.to = engine.next_reading<StepRecord>();
  const char* what = nullptr;
  if (const cudaError_t e = engine.publish(stream, step, 0, what); e != cudaSuccess)
    return lost_publication(what, e);
  slots[slot].unread = true;
  poll();
}

}  // namespace simprof::cuda

namespace simprof::cuda {

DeviceStageTimer::DeviceStageTimer(StepProfiler& prof, cudaStream_t stream,
                                   DeviceStageTimerOptions options)
    : impl_(std::make_unique<Impl>(prof, stream, options)) {}
DeviceStageTimer::~DeviceStageTimer() = default;
std::shared_ptr<GraphInstrumentation> DeviceStageTimer::instrumentation() const noexcept {
  return impl_->ties->hook();
}
void DeviceStageTimer::set_stream(cudaStream_t stream) noexcept { impl_->set_stream(stream); }

}  // namespace simprof::cuda
