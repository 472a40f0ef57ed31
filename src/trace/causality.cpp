// SPDX-License-Identifier: MIT
#include "simprof/trace/causality.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

namespace simprof {

namespace {

bool on_device(const Span& s) {
  return s.kind == SpanKind::kKernel || s.kind == SpanKind::kMemcpy || s.kind == SpanKind::kMemset;
}

using Track = std::pair<std::int32_t, std::int64_t>;  // device, stream

// Consecutive work of a track: one span, or the kernels of one graph launch.
struct Block {
  std::int64_t begin = 0, end = 0, busy = 0;
  const Span* first = nullptr;
};

// The synchronisations that wait for a track's work, sorted by begin, with the smallest end among
// those at and after each position: the first to end of those that began after a given time.
struct Waits {
  std::vector<std::pair<std::int64_t, std::int64_t>> by_begin;  // begin, end
  std::vector<std::int64_t> min_end_from;
  void seal() {
    std::sort(by_begin.begin(), by_begin.end());
    min_end_from.assign(by_begin.size() + 1, std::numeric_limits<std::int64_t>::max());
    for (std::size_t i = by_begin.size(); i-- > 0;)
      min_end_from[i] = std::min(min_end_from[i + 1], by_begin[i].second);
  }
  std::int64_t first_end_after(std::int64_t t) const {
    const auto it = std::lower_bound(by_begin.begin(), by_begin.end(),
                                     std::make_pair(t, std::numeric_limits<std::int64_t>::min()));
    return min_end_from[static_cast<std::size_t>(it - by_begin.begin())];
  }
};

std::string where(const Span& s) {
  return fmt::format("'{}' (correlation {}) on device {} stream {}", s.name, s.correlation,
                     s.device, s.stream);
}

}  // namespace

std::string CausalityReport::summary() const {
  std::size_t spans = 0;
  for (const auto& t : tracks) spans += t.spans;
  if (ok())
    return fmt::format("ok: {} device spans on {} track{}", spans, tracks.size(),
                       tracks.size() == 1 ? "" : "s");
  std::string s = fmt::format("{} violation{}", violation_count, violation_count == 1 ? "" : "s");
  for (std::size_t i = 0; i < violations.size() && i < 3; ++i)
    s += (i == 0 ? ": " : "; ") + violations[i];
  return s;
}

namespace {

// What the whole trace says before its tracks are checked: each launch call's span, the waits on
// each stream and context, the device work by track.
struct Gathered {
  std::unordered_map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> launch;  // corr -> call
  std::map<Track, Waits> stream_waits;
  std::map<std::int32_t, Waits> context_waits;
  std::map<Track, std::vector<const Span*>> tracks;
};

// The Fail callable counts a violation and keeps its text (the first 20).
template <class Fail>
Gathered gather(const Trace& trace, Fail&& fail) {
  Gathered g;
  std::unordered_set<std::uint64_t> waiting_calls;  // correlations of calls that block the host
  for (const Span& s : trace.spans)
    if (s.kind == SpanKind::kLaunch && s.correlation != 0) {
      auto [it, fresh] = g.launch.try_emplace(s.correlation, s.begin_ns, s.end_ns);
      if (!fresh) it->second.first = std::min(it->second.first, s.begin_ns);
      if (s.or_empty<CallPayload>().waits_for_device) waiting_calls.insert(s.correlation);
    }
  for (const Span& s : trace.spans) {
    // A synchronisation record counts as a wait when the call that made it blocks: CUPTI also
    // writes one for cudaStreamQuery, which returns at once.
    const bool waited = s.kind == SpanKind::kSync && waiting_calls.count(s.correlation) != 0;
    const SyncKind sync = s.or_empty<SyncPayload>().sync;
    if (waited && sync == SyncKind::kStream)
      g.stream_waits[{s.device, s.stream}].by_begin.emplace_back(s.begin_ns, s.end_ns);
    else if (waited && sync == SyncKind::kContext)
      g.context_waits[s.device].by_begin.emplace_back(s.begin_ns, s.end_ns);
    if (on_device(s) || s.kind == SpanKind::kSync || s.kind == SpanKind::kLaunch ||
        s.kind == SpanKind::kCpuStage || s.kind == SpanKind::kRange)
      if (s.end_ns < s.begin_ns)
        fail(fmt::format("duration: {} ends {} ns before it begins", where(s),
                         s.begin_ns - s.end_ns));
    if (on_device(s)) g.tracks[{s.device, s.stream}].push_back(&s);
  }
  for (auto& [track, w] : g.stream_waits) w.seal();
  for (auto& [device, w] : g.context_waits) w.seal();
  return g;
}

// A track's blocks in begin order: the work of one graph launch together (its kernels, and its
// memsets and copies, which share the launch's correlation: a graph's branches run side by side),
// every other span alone.
std::vector<Block> blocks_of(const std::vector<const Span*>& spans) {
  std::vector<Block> blocks;
  std::unordered_map<std::uint64_t, std::vector<const Span*>> graph_launches;
  for (const Span* s : spans)
    if (s->or_empty<KernelPayload>().graph_id != 0 && s->correlation != 0)
      graph_launches[s->correlation];
  for (const Span* s : spans) {
    if (s->correlation != 0 && graph_launches.count(s->correlation))
      graph_launches[s->correlation].push_back(s);
    else
      blocks.push_back(Block{s->begin_ns, s->end_ns, s->duration_ns(), s});
  }
  for (auto& [corr, ks] : graph_launches) {
    std::sort(ks.begin(), ks.end(),
              [](const Span* a, const Span* b) { return a->begin_ns < b->begin_ns; });
    Block b{ks.front()->begin_ns, ks.front()->end_ns, 0, ks.front()};
    std::int64_t run_begin = b.begin, run_end = b.end;  // the union, merged as it goes
    for (const Span* k : ks) {
      if (k->begin_ns > run_end) {
        b.busy += run_end - run_begin;
        run_begin = k->begin_ns;
      }
      run_end = std::max(run_end, k->end_ns);
      b.end = std::max(b.end, k->end_ns);
    }
    b.busy += run_end - run_begin;
    blocks.push_back(b);
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const Block& a, const Block& b) { return a.begin < b.begin; });
  return blocks;
}

// No two blocks of a track overlap; its work fits in its extent.
template <class Fail>
void check_overlaps(const std::vector<Block>& blocks, DeviceTrackCheck& c, Fail&& fail) {
  std::int64_t last_end = std::numeric_limits<std::int64_t>::min();
  const Span* last = nullptr;
  for (const Block& b : blocks) {
    if (last != nullptr && b.begin < last_end) {
      ++c.overlaps;
      fail(fmt::format("overlap: {} begins {} ns before {} ended", where(*b.first),
                       last_end - b.begin, where(*last)));
    }
    if (b.end >= last_end) {
      last_end = b.end;
      last = b.first;
    }
    c.busy_ns += b.busy;
  }
  if (!blocks.empty()) c.extent_ns = last_end - blocks.front().begin;
  if (c.busy_ns > c.extent_ns)
    fail(fmt::format("busy: device {} stream {} sums {} ns of work in an extent of {} ns", c.device,
                     c.stream, c.busy_ns, c.extent_ns));
}

// Each span of a track lies between its launch call and the first synchronisation that waited
// for it.
template <class Fail>
void check_launches(const Gathered& g, const Track& track, const std::vector<const Span*>& spans,
                    std::int64_t cross_clock_ns, Fail&& fail) {
  for (const Span* s : spans) {
    const auto l = g.launch.find(s->correlation);
    if (l == g.launch.end()) continue;  // a trace of kernels alone
    const auto [call_begin, call_end] = l->second;
    if (s->begin_ns + cross_clock_ns < call_begin)
      fail(fmt::format("launch: {} begins {} ns before the call that launched it", where(*s),
                       call_begin - s->begin_ns));
    std::int64_t waited = std::numeric_limits<std::int64_t>::max();
    if (const auto w = g.stream_waits.find(track); w != g.stream_waits.end())
      waited = std::min(waited, w->second.first_end_after(call_end));
    if (const auto w = g.context_waits.find(track.first); w != g.context_waits.end())
      waited = std::min(waited, w->second.first_end_after(call_end));
    if (waited != std::numeric_limits<std::int64_t>::max() && s->end_ns - waited > cross_clock_ns)
      fail(fmt::format("sync: {} ends {} ns after a synchronisation that waited for it ended",
                       where(*s), s->end_ns - waited));
  }
}

}  // namespace

CausalityReport check_causality(const Trace& trace, std::int64_t cross_clock_ns) {
  CausalityReport r;
  auto fail = [&r](std::string what) {
    ++r.violation_count;
    if (r.violations.size() < 20) r.violations.push_back(std::move(what));
  };
  const Gathered g = gather(trace, fail);
  for (const auto& [track, spans] : g.tracks) {
    DeviceTrackCheck c;
    c.device = track.first;
    c.stream = track.second;
    c.spans = spans.size();
    check_overlaps(blocks_of(spans), c, fail);
    check_launches(g, track, spans, cross_clock_ns, fail);
    r.tracks.push_back(c);
  }
  return r;
}

}  // namespace simprof
