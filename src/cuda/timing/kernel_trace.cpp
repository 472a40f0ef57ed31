// SPDX-License-Identifier: MIT
// GraphKernelTimer as a trace source: windows of stamped steps, the GPU's clock aligned to the
// trace's (ClockProbe, ClockMap), and each window's replays as device spans.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "../cupti/cupti_hub.hpp"
#include "../cupti/describe_devices.hpp"
#include "../runtime/on_device.hpp"
#include "kernel_timer_impl.hpp"

namespace simprof::cuda {

// The window's replays as device spans: a node ends at its stamp and lasts its reading (so it
// starts after its predecessors' stamps and the hop), on the timer's stream; one correlation id a
// replay. Device nanoseconds go onto the timebase through the two clock points (interpolated: the
// GPU's timer and the host's clock may run at slightly different rates), or one where the other
// failed.
void GraphKernelTimer::Impl::add_spans(std::vector<Span>& out) {
  const detail::ClockMap clock(clock_from, clock_to);
  for (const Traced& r : traced) {
    const Copy& c = copies[r.copy];
    const detail::ReplayStamps t{traced_stamps.data() + r.at, c.slots()};
    const unsigned long long hop = t.hop();
    // Process-wide: two timers' spans in one trace never share an id.
    static std::atomic<std::uint64_t> next_correlation{std::uint64_t{1} << 32};
    const std::uint64_t correlation = next_correlation.fetch_add(1, std::memory_order_relaxed);
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
      const NodeInfo& node = c.nodes[i];
      if (node.traced == SpanKind::kCpuStage) continue;
      const unsigned long long end = t.end(i);
      const unsigned long long begin = std::min(end, t.start(node.starts) + hop);  // 0 clamped
      const std::int64_t b_ns = clock.to_host(begin), e_ns = clock.to_host(end);
      if (node.traced == SpanKind::kMemset) {
        out.push_back(Span::memset(node.bytes, b_ns, e_ns, device_id, stream_id, correlation));
        continue;
      }
      if (node.traced == SpanKind::kMemcpy) {
        out.push_back(
            Span::memcpy(node.copy, node.bytes, b_ns, e_ns, device_id, stream_id, correlation));
        continue;
      }
      out.push_back(Span::kernel(node.name, b_ns, e_ns, device_id, stream_id, correlation));
      KernelPayload& k = out.back().get<KernelPayload>();
      k.graph_id = c.graph_id;
      k.graph_node_id = node.node_id;
      k.stage = node.stage_name;
      k.grid = node.grid;
      k.block = node.block;
      k.registers = node.registers;
      k.shared_memory = node.shared_memory;
    }
  }
}

void GraphKernelTimer::bind(const TimeBase& time_base) {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->window_open)
    throw std::logic_error("simprof: GraphKernelTimer::bind inside a trace window (bind before)");
  impl_->time_base = time_base;
}

// A window's (or warm-up's) first step: the GPU's clock aligned, and from now every step stamped.
// The session starts its sources from its own step begin: where ours ran first, this step is
// stamped here.
void GraphKernelTimer::start() {
  Impl& m = *impl_;
  const detail::OnDevice on_device(m.device_id);
  m.clock_from = m.probe.probe(m.time_base);
  m.clock_to = ClockPoint{};
  const std::lock_guard<std::mutex> lock(m.mu);
  m.window_open = true;
  m.next_generation();
  // Sampled on the usual schedule already, or stamped now.
  if (!m.adopt_sampled_step() && m.begun && !m.sampled && m.options.trace_every_step &&
      !detail::kernel_tracer_window_open())
    m.begin_sample(m.step_now);
}

void GraphKernelTimer::Impl::next_generation() noexcept {
  ++window_gen;
  window_sampled = window_done = window_lost = window_missed = 0;
  traced.clear();
  traced_stamps.clear();
}

bool GraphKernelTimer::Impl::adopt_sampled_step() noexcept {
  if (!(begun && sampled && sampled_step == step_now)) return false;
  sampled_traced = true;
  sampled_gen = window_gen;
  ++window_sampled;
  return true;
}

// The window will not be collected (its session ended, or the timer left it, inside it).
void GraphKernelTimer::abandon() noexcept {
  Impl& m = *impl_;
  const std::lock_guard<std::mutex> lock(m.mu);
  m.window_open = false;
  m.next_generation();  // readings on their way are no window's
}

// The warm-up's replays are not kept; this step is the window's (it was stamped as the warm-up's).
void GraphKernelTimer::discard() {
  Impl& m = *impl_;
  const std::lock_guard<std::mutex> lock(m.mu);
  m.next_generation();
  if (m.sampled_traced) m.adopt_sampled_step();
}

// The window's last step ends: its row goes back now (the session may collect before our own step
// end runs), and later steps are not the window's.
void GraphKernelTimer::stop() {
  Impl& m = *impl_;
  const std::lock_guard<std::mutex> lock(m.mu);
  if (!m.window_open) return;
  if (m.begun && m.sampled && m.sampled_step == m.step_now) m.finish_sample(m.step_now);
  m.window_open = false;
  m.window_cupti = detail::kernel_tracer_window_open();
}

// Waits (never holding the lock) for the window's readings, aligns the clock again, and appends
// the window's spans. On the loop's thread, or on a background session's writer.
std::uint64_t GraphKernelTimer::stop_and_collect(std::vector<Span>& out) {
  Impl& m = *impl_;
  stop();
  const detail::OnDevice on_device(m.device_id);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::vector<cudaEvent_t> wait;
    {
      const std::lock_guard<std::mutex> lock(m.mu);
      if (m.window_done >= m.window_sampled) break;
      m.engine.readings().arrivals(wait, [&m](std::size_t i) {
        return m.pending[i].traced && m.pending[i].gen == m.window_gen;
      });
      if (wait.empty() && std::chrono::steady_clock::now() > deadline) {
        m.window_lost += m.window_sampled - m.window_done;  // never read back
        m.window_done = m.window_sampled;
        break;
      }
    }
    if (wait.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    for (cudaEvent_t e : wait)
      if (cudaEventSynchronize(e) != cudaSuccess) (void)cudaGetLastError();
    const std::lock_guard<std::mutex> lock(m.mu);
    m.poll_locked();
  }
  m.clock_to = m.probe.probe(m.time_base);
  const std::lock_guard<std::mutex> lock(m.mu);
  std::uint64_t lost = m.window_lost;
  if (m.window_cupti) {
    // CUPTI's records of the window's replays are in the trace: none of ours.
  } else if (!m.clock_from.ok && !m.clock_to.ok) {
    lost += m.traced.size();  // nowhere to put them
    m.voice.warn_counted(m.said,
                         "a trace window's device spans are left out: the GPU's clock could not be "
                         "aligned");
  } else {
    const std::size_t before = out.size();
    try {
      m.add_spans(out);
    } catch (const std::bad_alloc&) {
      out.resize(before);
      lost += m.traced.size();
    }
  }
  m.clock_error.store(static_cast<double>(std::max(m.clock_from.ok ? m.clock_from.error_ns : 0,
                                                   m.clock_to.ok ? m.clock_to.error_ns : 0)),
                      std::memory_order_relaxed);
  m.trace_lost += lost;
  m.last_window = {m.traced.size(), m.window_missed, lost, m.window_cupti};
  m.traced.clear();
  m.traced_stamps.clear();
  m.window_lost = 0;
  return lost;
}

void GraphKernelTimer::describe(Trace& trace) const {
  const Impl& m = *impl_;
  std::string what;
  {
    const std::lock_guard<std::mutex> lock(impl_->mu);
    const auto& w = m.last_window;
    what = w.cupti ? fmt::format(
                         "{} stamped replays; their device spans are CUPTI's records "
                         "(a kernel tracer traced the window)",
                         w.replays)
                   : fmt::format(
                         "{} stamped replays as device spans (correlation ids from 2^32: no "
                         "launch records), placed within {:.0f} ns; {} steps ran no "
                         "stamped copy; {} replays lost",
                         w.replays, m.clock_error.load(), w.missed, w.lost);
  }
  trace.metadata["graph_kernel_timer"] = what;
  detail::describe_devices(trace, {static_cast<std::uint32_t>(m.device_id)});
}

}  // namespace simprof::cuda
