// SPDX-License-Identifier: MIT
// GraphKernelTimer's readings: each sampled step's row read back, its replays' node times, the
// counters and the per-stage kernel table.
#include <algorithm>
#include <map>

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
  const cudaError_t e = engine.publish(stream, step, used * sizeof(unsigned long long), what);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    ++n_dropped;
    if (counted) {
      ++window_done;
      ++window_lost;
    }
    say("reading the stamps back failed: {} returned {}", what, cudaGetErrorName(e));
    return;
  }
  p.used = used;
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
    const unsigned long long* t = row + c.offset;
    if (t[kBeginSlot] == 0) continue;  // not launched in that step
    any = true;
    bool complete = true;
    unsigned long long last = t[kBeginSlot];
    for (std::size_t i = kHopSlot; i < c.slots(); ++i) {
      complete = complete && t[i] != 0;
      last = std::max(last, t[i]);
    }
    if (!complete) {
      ++n_dropped;
      if (trace) ++window_lost;
      say("a sampled replay of step {} is left out: one of its stamps did not run", step);
      continue;
    }
    if (trace) {
      try {  // the window's replays, turned into spans when it is collected
        traced.push_back(Traced{step, ci, traced_stamps.size()});
        traced_stamps.insert(traced_stamps.end(), t, t + c.slots());
      } catch (...) {
        ++window_lost;
      }
    }
    ++n_replays;
    // What one stamp added to the chain in this replay: the hop stamp after the begin stamp.
    const double hop = static_cast<double>(t[kHopSlot] - t[kBeginSlot]);
    hop_sum_ns += hop;
    hop_ns = hop_sum_ns / static_cast<double>(n_replays);
    const bool tell = static_cast<bool>(on_replay);
    if (tell) {
      try {
        replay.step = step;
        replay.copy = ci;
        replay.span_s = static_cast<double>(last - t[kBeginSlot]) * 1e-9;
        replay.node_s.resize(c.nodes.size());
      } catch (...) {
      }
    }
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
      NodeInfo& node = c.nodes[i];
      unsigned long long start = 0;
      for (const std::uint32_t s : node.starts) start = std::max(start, t[s]);
      const double d = std::max(
          0.0, (static_cast<double>(t[kFirstNode + i]) - static_cast<double>(start) - hop) * 1e-9);
      node.min_s = node.count == 0 ? d : std::min(node.min_s, d);
      node.max_s = node.count == 0 ? d : std::max(node.max_s, d);
      node.sum_s += d;
      ++node.count;
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
      k.count = n.count;
      k.mean_s = n.count ? n.sum_s / static_cast<double>(n.count) : 0.0;
      k.min_s = n.min_s;
      k.max_s = n.max_s;
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

std::string kernel_table(const GraphKernelTimer& timer, std::size_t top) {
  const std::vector<KernelNodeTime> nodes = timer.nodes();
  struct Group {
    std::string stage;
    double sum_s = 0;
    std::vector<const KernelNodeTime*> kernels;
  };
  std::map<std::string, Group> by_stage;
  double total = 0;
  for (const KernelNodeTime& k : nodes) {
    if (!k.kernel || k.count == 0) continue;
    Group& g = by_stage[k.stage_name];
    g.stage = k.stage_name.empty() ? "(no stage)" : k.stage_name;
    g.sum_s += k.mean_s;
    g.kernels.push_back(&k);
    total += k.mean_s;
  }
  std::vector<Group*> groups;
  for (auto& [name, g] : by_stage) groups.push_back(&g);
  std::sort(groups.begin(), groups.end(), [](const Group* a, const Group* b) {
    return a->sum_s != b->sum_s ? a->sum_s > b->sum_s : a->stage < b->stage;
  });
  std::string out = fmt::format(
      "Kernels of replayed graphs: device time per sampled replay ({} replays; a stamp after every "
      "node, {:.2f} us hop taken off each)\n",
      timer.replays(), timer.hop_ns() * 1e-3);
  out += fmt::format("{:<58} {:>10} {:>9} {:>9} {:>9} {:>7}\n", "stage / kernel", "graph:node",
                     "mean us", "min us", "max us", "share");
  auto cut = [](const std::string& s, std::size_t w) {
    return s.size() <= w ? s : s.substr(0, w - 3) + "...";
  };
  for (Group* g : groups) {
    std::sort(g->kernels.begin(), g->kernels.end(),
              [](const KernelNodeTime* a, const KernelNodeTime* b) {
                return a->mean_s != b->mean_s ? a->mean_s > b->mean_s : a->index < b->index;
              });
    out += fmt::format("{:<58} {:>10} {:>9.2f} {:>9} {:>9} {:>6.1f}%\n", cut(g->stage, 58), "",
                       g->sum_s * 1e6, "", "", total > 0 ? 100 * g->sum_s / total : 0.0);
    double rest = 0;
    std::size_t n_rest = 0;
    for (std::size_t i = 0; i < g->kernels.size(); ++i) {
      const KernelNodeTime& k = *g->kernels[i];
      if (i >= top) {
        rest += k.mean_s;
        ++n_rest;
        continue;
      }
      out += fmt::format("  {:<56} {:>10} {:>9.2f} {:>9.2f} {:>9.2f} {:>6.1f}%\n", cut(k.name, 56),
                         fmt::format("{}:{}", k.graph_id, k.node_id), k.mean_s * 1e6, k.min_s * 1e6,
                         k.max_s * 1e6, total > 0 ? 100 * k.mean_s / total : 0.0);
    }
    if (n_rest)
      out += fmt::format("  {:<56} {:>10} {:>9.2f} {:>9} {:>9} {:>6.1f}%\n",
                         fmt::format("({} more kernels)", n_rest), "", rest * 1e6, "", "",
                         total > 0 ? 100 * rest / total : 0.0);
  }
  if (timer.dropped() || timer.missed() || timer.unstamped())
    out += fmt::format(
        "({} sampled replays left out, {} sampled steps ran no stamped copy, {} graphs "
        "unstamped)\n",
        timer.dropped(), timer.missed(), timer.unstamped());
  return out;
}

}  // namespace simprof::cuda
