// SPDX-License-Identifier: MIT
#include "stage_walk.hpp"

#include <algorithm>

namespace simprof::cuda::detail {

StageWalk::StageWalk(std::size_t most) { items_.reserve(most); }

// Stamps of a graph land in any order: all of them in time order, each merged boundary right after
// the eager stamp whose instant it took.
void StageWalk::sort(const StepStamps& s) {
  items_.clear();
  for (unsigned i = 0; i < s.n_graph; ++i) {
    const StampEntry& e = s.graph[i];
    items_.push_back(Item{e.t, Source::kGraph, i, 0, e.stage, e.kind});
  }
  for (unsigned j = 0; j < s.n_eager; ++j)
    items_.push_back(Item{s.eager[j], Source::kEager, j, 0, s.marks[j].stage, s.marks[j].kind});
  for (unsigned k = 0; k < s.n_merged; ++k) {
    const MergedMark& m = s.merged[k];
    if (m.source == 0 || m.source > s.n_eager) continue;  // its stamp's time was not published
    items_.push_back(
        Item{s.eager[m.source - 1], Source::kEager, m.source - 1, k + 1, m.stage, m.kind});
  }
  std::sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.source != b.source) return a.source < b.source;
    return a.place != b.place ? a.place < b.place : a.sub < b.sub;
  });
}

void StageWalk::walk(const StepStamps& s, const StepProfiler& prof, TimingsSnapshot& out) {
  const std::size_t n = prof.num_stages();
  if (open_.size() < n) {
    open_.resize(n);
    unpaired_.reserve(n);  // a stage is unpaired once a step at the most
  }
  for (std::size_t i = 0; i < n; ++i) open_[i].state = OpenState::kClosed;
  unpaired_.clear();
  sort(s);
  unsigned eager_before = 0;  // eager stamps before the item in time order (its own excluded)
  for (const Item& e : items_) {
    const bool eager = e.source == Source::kEager;
    // A merged boundary comes right after its stamp, which it is: not before it.
    const unsigned at = eager && e.sub != 0 ? eager_before - 1 : eager_before;
    if (eager && e.sub == 0) ++eager_before;
    const auto id = static_cast<StageId>(e.stage);
    if (id >= n) continue;
    Open& o = open_[id];
    if (e.kind == kStageBegin) {
      if (o.state == OpenState::kEndFirst) continue;  // already counted as unpaired
      o = Open{static_cast<std::int64_t>(e.t), at, OpenState::kOpen};
    } else if (o.state == OpenState::kOpen) {
      o.state = OpenState::kClosed;
      // Each eager stamp on the stream adds eager_ns to the stages around it: those from the
      // stage's begin (included) to its end (excluded) are taken out.
      const double stamps = static_cast<double>(at - o.eager);
      const double ns = static_cast<double>(static_cast<std::int64_t>(e.t) - o.at);
      const double d = std::max(0.0, (ns - stamps * s.eager_ns) * 1e-9);
      out.add(id, d);
      for (StageId p = prof.stage_parent(id); p != kNoStage && open_[p].state != OpenState::kOpen;
           p = prof.stage_parent(p))
        out.add(p, d);
    } else if (o.state == OpenState::kClosed) {
      o.state = OpenState::kEndFirst;  // its end ran before its begin (or its begin's was lost)
      unpaired_.push_back(id);
    }
  }
  for (std::size_t id = 0; id < n; ++id)
    if (open_[id].state == OpenState::kOpen) unpaired_.push_back(static_cast<StageId>(id));
}

}  // namespace simprof::cuda::detail
