// SPDX-License-Identifier: MIT
// GraphKernelTimer's readings: each sampled step's row read back, its replays' node times
// (node_stamps.*) and the counters. Its table: timer_tables.cpp.
#include <algorithm>

#include "kernel_timer_impl.hpp"
#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

void GraphKernelTimer::Impl::on_step_end(std::uint64_t step, std::int64_t, StepOutcome) {
  begun = false;
  if (!sampled || step != sampled_step) {
    if (engine.readings().in_flight() > 0) {  // a sample's row is on its way
      const std::lock_guard<std::mutex> lock(mu);
      poll_locked();
    }
    return;
  }
  const std::lock_guard<std::mutex> lock(mu);
  finish_sample(step);
}

void GraphKernelTimer::Impl::finish_sample(std::uint64_t step) noexcept {
  sampled = false;
  const bool counted = sampled_traced && sampled_gen == window_gen;  // in window_sampled
  // The row, once the step's work is done, into its reading (the engine's next: nothing else
  // sends); read at a later poll.
  const std::size_t slot = engine.readings().next();
  Pending& p = pending[slot];
  const char* what = nullptr;
  const cudaError_t e =
      engine.publish(stream, step, ranges.used() * sizeof(unsigned long long), what);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    ++n_dropped;
    if (counted) {
      ++window_done;
      ++window_lost;
    }
    voice.warn_counted(said, "reading the stamps back failed: {} returned {}", what,
                       cudaGetErrorName(e));
    return;
  }
  p.used = ranges.used();
  p.traced = sampled_traced;
  p.gen = sampled_gen;
  poll_locked();
}

void GraphKernelTimer::Impl::poll_locked() noexcept {
  engine.readings().poll([this](std::size_t slot, std::uint64_t step, bool arrived) {
    const Pending& p = pending[slot];
    const bool counted = p.traced && p.gen == window_gen;
    if (!arrived) {
      ++n_dropped;
      if (counted) ++window_lost;
    } else {
      read(slot, step, p);
    }
    if (counted) ++window_done;
    return true;
  });
}

void GraphKernelTimer::Impl::read(std::size_t slot, std::uint64_t step, const Pending& p) noexcept {
  const std::size_t n = p.used;
  const bool trace = p.traced && p.gen == window_gen;
  const unsigned long long* row = engine.readings().host<const unsigned long long>(slot);
  bool any = false;
  for (std::uint32_t ci = 0; ci < copies.size(); ++ci) {
    Copy& c = copies[ci];
    // Retired, made after that step, or beyond the row read: not this step's.
    if (step >= c.retired_from || c.made_in > step || c.offset + c.slots() > n) continue;
    const detail::ReplayStamps t{row + c.offset, c.slots()};
    if (!t.ran()) continue;  // not launched in that step
    any = true;
    if (!t.complete()) {
      ++n_dropped;
      if (trace) ++window_lost;
      voice.warn_counted(
          said, "a sampled replay of step {} is left out: one of its stamps did not run", step);
      continue;
    }
    if (trace) {
      try {  // the window's replays, turned into spans when it is collected
        traced.push_back(Traced{step, ci, traced_stamps.size()});
        traced_stamps.insert(traced_stamps.end(), t.t, t.t + t.slots);
      } catch (...) {
        ++window_lost;
      }
    }
    ++n_replays;
    // What one stamp added to the chain in this replay: the hop stamp after the begin stamp.
    hop_sum_ns += static_cast<double>(t.hop());
    hop_ns = hop_sum_ns / static_cast<double>(n_replays);
    const bool tell = static_cast<bool>(on_replay);
    if (tell) {
      try {
        replay.step = step;
        replay.copy = ci;
        replay.span_s = static_cast<double>(t.span()) * 1e-9;
        replay.node_s.resize(c.nodes.size());
      } catch (...) {
      }
    }
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
      NodeInfo& node = c.nodes[i];
      const double d = t.seconds(i, node.starts);
      node.time.add(d);
      if (tell && i < replay.node_s.size()) replay.node_s[i] = d;
    }
    if (tell) {
      try {
        on_replay(replay);
      } catch (...) {  // a callback's failure is not the timer's
      }
    }
  }
  if (!any) {
    ++n_missed;
    if (trace) ++window_missed;
  }
}

void GraphKernelTimer::poll() noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->poll_locked();
}
void GraphKernelTimer::synchronize() {
  std::vector<cudaEvent_t> wait;
  {
    const std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->engine.readings().arrivals(wait, [](std::size_t) { return true; });
  }
  for (cudaEvent_t e : wait) SIMPROF_CUDA_CHECK(cudaEventSynchronize(e));
  poll();
}

std::vector<KernelNodeTime> GraphKernelTimer::nodes() const {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<KernelNodeTime> out;
  for (std::uint32_t ci = 0; ci < impl_->copies.size(); ++ci) {
    const Copy& c = impl_->copies[ci];
    if (c.retired()) continue;  // its executable is gone: a recapture's copy took its place
    for (const NodeInfo& n : c.nodes) {
      KernelNodeTime k;
      k.name = n.name;
      k.kernel = n.kernel;
      k.stage = n.stage;
      k.stage_name = n.stage_name;
      k.graph_id = c.graph_id;
      k.node_id = n.node_id;
      k.copy = ci;
      k.index = n.index;
      k.count = n.time.count;
      k.mean_s = n.time.count ? n.time.mean() : 0.0;
      k.min_s = n.time.min;
      k.max_s = n.time.max;
      out.push_back(std::move(k));
    }
  }
  return out;
}

std::uint64_t GraphKernelTimer::replays() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->n_replays;
}
std::uint64_t GraphKernelTimer::missed() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->n_missed;
}
std::uint64_t GraphKernelTimer::dropped() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->n_dropped;
}
std::uint64_t GraphKernelTimer::unstamped() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->n_unstamped;
}
double GraphKernelTimer::hop_ns() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->hop_ns;
}
StampCost GraphKernelTimer::stamp_cost() const { return cuda::stamp_cost(impl_->device_id); }
double GraphKernelTimer::clock_error_ns() const noexcept {
  return impl_->clock_error.load(std::memory_order_relaxed);
}
std::uint64_t GraphKernelTimer::trace_dropped() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->trace_lost;
}
void GraphKernelTimer::set_on_replay(std::function<void(const KernelReplay&)> fn) {
  impl_->on_replay = std::move(fn);
}
const GraphKernelTimerOptions& GraphKernelTimer::options() const noexcept { return impl_->options; }

}  // namespace simprof::cuda
