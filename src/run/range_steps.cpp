// SPDX-License-Identifier: MIT
#include "range_steps.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace simprof::run {

RangeSteps::RangeSteps(StepProfiler& prof, RangeStepsOptions options)
    : prof_(prof), options_(std::move(options)), step_(options_.step) {}

void RangeSteps::choose(std::uint64_t thread, std::string_view name, std::size_t depth,
                        const char* why) {
  if (step_chosen()) {
    ++counts_.step_changes;
    change_why_ = why;
    previous_ = step_;
    prof_.reset_stats();  // the steps so far were another range's
    steps_ = 0;
    if (on_change_) on_change_();
  }
  step_.assign(name);
  step_thread_ = thread;
  step_depth_ = depth;
  have_step_thread_ = true;
  dropped_ = nests_itself_ = false;  // what was learned of the old range
  confirmed_ = 0;
  pending_.set = false;
}

// Choosing the step: a name pushed again at the depth it closed at (under the same frame below)
// repeats. The first repeat chooses it; a shallower one takes over while the choice is young.
void RangeSteps::learn(Thread& t, std::uint64_t thread, std::string_view name) {
  const std::size_t depth = t.stack.size();
  if (depth >= t.closed.size()) return;
  const auto& closed = t.closed[depth];
  if (std::find(closed.begin(), closed.end(), name) == closed.end()) return;
  if (step_chosen()) {
    const bool young = steps_ < kLearningSteps && name != step_;
    const bool shallower = thread == step_thread_ && depth < step_depth_;
    // The choice has had no stage (a leaf: a loader thread's range), this one had ranges inside.
    const bool fuller = prof_.num_stages() == kPeriodStage + 1 &&
                        std::find(t.parents.begin(), t.parents.end(), name) != t.parents.end();
    // The main thread's range from another thread's (a loader's or decoder's that repeated first):
    // while that choice is young, or later for a range with ranges inside it (the main thread's
    // first steps may come late: its first NVTX call waits while the tool loads). A main thread's
    // leaf range (a checkpoint) never takes a long-standing choice.
    const bool to_main = off_main() && thread == options_.main_thread &&
                         (steps_ < kLearningSteps ||
                          std::find(t.parents.begin(), t.parents.end(), name) != t.parents.end());
    if (!((young && (shallower || fuller)) || to_main)) return;
    const char* why = to_main     ? "the main thread's range"
                      : shallower ? "a shallower range"
                                  : "a range with ranges inside it";
    if (prof_.in_step()) {  // the chosen range is open (on another thread): at its step's end
      // A deeper range of the same thread does not replace a takeover already waiting.
      if (pending_.set && pending_.thread == thread && depth >= pending_.depth) return;
      pending_ = Pending{true, thread, name, depth, why};
      return;
    }
    choose(thread, name, depth, why);
    return;
  }
  choose(thread, name, depth);
}

StageId RangeSteps::stage_for(const Thread& t, std::string_view name) {
  // Each range's name after its parents'; a name that is already the path (simprof's own
  // NvtxRanges name "physics/contacts" inside "physics") replaces it.
  const auto add = [this](std::string_view n) {
    if (!path_.empty() && n.size() > path_.size() && n.compare(0, path_.size(), path_) == 0)
      path_.clear();
    path_ += n;
  };
  path_.clear();
  bool inside = false;
  for (const Frame& f : t.stack) {
    if (inside) {
      add(f.name);
      path_ += '/';
    }
    inside = inside || f.step;
  }
  add(name);
  const StageId known = prof_.find_stage(path_);
  if (known != kNoStage && known > kPeriodStage) return known;  // "step", "period": refused below
  if (known == kNoStage && prof_.num_stages() >= kMostStages)
    throw std::length_error(
        fmt::format("more than {} stage paths (range names that change every step, such as torch's "
                    "\"seq = N\", each make one); \"{}\" and the new paths after it are left out",
                    kMostStages, path_));
  return prof_.stage_id(path_);
}

void RangeSteps::push(std::uint64_t thread, std::string_view name, std::uint64_t domain,
                      std::uint64_t id) {
  ++counts_.pushes;
  auto it = seen_.find(name);
  if (it == seen_.end()) {
    if (seen_.size() >= kMostNames) {  // one more name of many: counted, and no step or stage
      ++counts_.unnamed;
      name = kManyNames;
      it = seen_.find(name);
    }
    if (it == seen_.end()) it = seen_.emplace(std::string(name), 0).first;
  }
  ++it->second;
  name = it->first;  // the session's copy
  Thread& t = threads_[thread];
  if (options_.step.empty() &&
      (!step_chosen() || steps_ < kLearningSteps ||
       (off_main() && thread == options_.main_thread)) &&
      name != kManyNames)
    learn(t, thread, name);
  if (!have_step_thread_ && step_chosen() && name == step_) {
    step_thread_ = thread;  // --step NAME: the first thread that pushes it
    have_step_thread_ = true;
  }
  Frame f;
  f.name = name;
  f.domain = domain;
  f.id = id;
  if (have_step_thread_ && thread == step_thread_) {
    // The step's name again in the open step's domain: a missing pop, unless the step range nests
    // its own name (then only far more of them than a step had). In another domain it is another
    // range (NVTX pops each domain's own): a stage.
    if (prof_.in_step() && name == step_ && domain == step_domain_ &&
        (!nests_itself_ || ++nested_now_ > 2 * nested_most_ + 2))
      drop_open_step(t, domain);
    if (!prof_.in_step() && name == step_) {
      f.step = true;
      step_domain_ = domain;
      nested_now_ = 0;
      prof_.begin_step();
    } else if (prof_.in_step() && name != kManyNames) {
      try {
        f.stage = stage_for(t, name);
        prof_.begin_stage(f.stage);
      } catch (const std::exception& e) {  // past kMaxDepth, or a name it refuses
        f.stage = kNoStage;
        if (counts_.left_out++ == 0) first_refusal_ = e.what();
      }
    }
  } else if (have_step_thread_) {
    ++counts_.other_threads;
  }
  t.id = thread;
  f.no_stage = !f.step && f.stage == kNoStage;
  if (on_range_) f.begin = prof_.clock().now();
  const std::size_t depth = t.stack.size();
  if (depth > 0) t.stack.back().parent = true;
  if (t.closed.size() < depth + 2) t.closed.resize(depth + 2);
  t.closed[depth + 1].clear();  // its children start afresh
  t.stack.push_back(std::move(f));
}

void RangeSteps::pop(std::uint64_t thread, std::uint64_t domain) {
  ++counts_.pops;
  const auto it = threads_.find(thread);
  if (it != threads_.end()) {
    // The innermost range of the domain that was pushed (not started) and is still open.
    Thread& t = it->second;
    for (std::size_t i = t.stack.size(); i-- > 0;) {
      const Frame& f = t.stack[i];
      if (f.domain == domain && f.id == 0) return close(t, i);
    }
  }
  // The step range's own pop (its domain's) soon after a step was dropped at its push: that push
  // was a range of the step's name inside the step (substeps), not a missing pop. Seen twice, it
  // is a stage from then on, and the statistics start again.
  if (dropped_ && thread == step_thread_ && domain == dropped_domain_ &&
      steps_ - steps_at_drop_ < kLearningSteps) {
    dropped_ = false;
    nested_most_ = std::max(nested_most_, steps_ - steps_at_drop_);  // its inner ones, as steps
    if (++confirmed_ < 2) return;
    nests_itself_ = true;
    counts_.unclosed = 0;
    prof_.reset_stats();
    steps_ = 0;
    return;
  }
  ++counts_.unmatched_pops;
}

void RangeSteps::end(std::uint64_t thread, std::uint64_t id) {
  ++counts_.pops;
  const auto it = threads_.find(thread);
  if (it != threads_.end()) {
    Thread& t = it->second;
    for (std::size_t i = t.stack.size(); i-- > 0;)
      if (t.stack[i].id == id) return close(t, i);
  }
  const auto g =
      std::find_if(gone_.begin(), gone_.end(), [id](const Gone& x) { return x.id == id; });
  if (g != gone_.end()) {  // closed already, with the range it crossed: its real end, traced
    if (g->no_stage && on_range_) on_range_(thread, g->name, g->begin, prof_.clock().now());
    gone_.erase(g);
    return;
  }
  ++counts_.unmatched_pops;
}

void RangeSteps::forget(const Frame& f) {
  if (f.id == 0) return;
  if (gone_.size() >= kMostGone) gone_.erase(gone_.begin(), gone_.begin() + kMostGone / 2);
  gone_.push_back(Gone{f.id, f.name, f.begin, f.no_stage});
}

// A range closes. Ranges opened after it and still open: started ones end with it (they need not
// nest); a pushed one (another domain's) loses its stage here and stays open for its own pop.
// Nothing waits: a step ends at its own pop.
void RangeSteps::close(Thread& t, std::size_t at) {
  if (at + 1 != t.stack.size()) {
    ++counts_.crossed;
    while (t.stack.size() > at + 1 && t.stack.back().id != 0) {
      forget(t.stack.back());
      close_at(t, t.stack.size() - 1, /*traced=*/false);  // its span waits for its own end
    }
    end_stages(t, at + 1);
  }
  close_at(t, at);
}

// The frame at `at` ends (its stage innermost by now): its stage or step, its name among those
// closed at its depth; the frames above it, if any, move down a depth.
void RangeSteps::close_at(Thread& t, std::size_t at, bool traced) {
  Frame& f = t.stack[at];
  if (f.stage != kNoStage && prof_.in_step()) prof_.end_stage(f.stage);
  if (traced && f.no_stage && on_range_) on_range_(t.id, f.name, f.begin, prof_.clock().now());
  const bool step_ended = f.step && prof_.in_step();
  if (step_ended && prof_.end_step()) {
    ++steps_;
    nested_most_ = std::max(nested_most_, nested_now_);
  }
  remember(t.closed[at], f.name, kMostClosed);
  if (f.parent) remember(t.parents, f.name, kMostClosed);
  if (at + 1 != t.stack.size())
    t.closed.erase(t.closed.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  t.stack.erase(t.stack.begin() + static_cast<std::ptrdiff_t>(at));
  if (step_ended && pending_.set) {  // a takeover that waited for this step's end
    pending_.set = false;
    choose(pending_.thread, pending_.name, pending_.depth, pending_.why);
  }
}

// `name` added to a list of names (once; past `most`, the oldest half goes).
void RangeSteps::remember(std::vector<std::string_view>& names, std::string_view name,
                          std::size_t most) {
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  if (names.size() >= most)
    names.erase(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(most / 2));
  names.push_back(name);
}

// The step range again while a step of it is open: the open step's range (and those above it not
// closed yet) were never popped (a missing pop). That step is dropped like a vetoed one, and
// counted; the run goes on.
void RangeSteps::drop_open_step(Thread& t, std::uint64_t domain) {
  const auto it =
      std::find_if(t.stack.begin(), t.stack.end(), [](const Frame& f) { return f.step; });
  if (it == t.stack.end()) return;
  const auto at = static_cast<std::size_t>(it - t.stack.begin());
  drop_step(t, at);  // every stage above it closed
  // The step's range and the ranges of its domain pushed above it were never popped; another
  // domain's or a started range stays open (its own pop or end closes it), without a stage now.
  const std::uint64_t own = t.stack[at].domain;
  const auto gone = std::stable_partition(
      t.stack.begin() + static_cast<std::ptrdiff_t>(at), t.stack.end(),
      [&](const Frame& f) { return !f.step && (f.domain != own || f.id != 0); });
  counts_.unclosed += static_cast<std::uint64_t>(t.stack.end() - gone);
  t.stack.erase(gone, t.stack.end());
  dropped_ = true;
  dropped_domain_ = domain;
  steps_at_drop_ = steps_;
}

// The stages of the frames from `from` up closed, innermost first; the frames keep no stage.
void RangeSteps::end_stages(Thread& t, std::size_t from) {
  for (std::size_t i = t.stack.size(); i-- > from;)
    if (t.stack[i].stage != kNoStage) {
      prof_.end_stage(t.stack[i].stage);
      t.stack[i].stage = kNoStage;
      t.stack[i].no_stage = true;  // open on without it: a range, traced whole at its close
    }
}

// The step in progress dropped like a vetoed one, the stages of the frames from `from` up closed
// first.
void RangeSteps::drop_step(Thread& t, std::size_t from) {
  end_stages(t, from);
  prof_.veto_step();
  prof_.end_step();
}

std::uint64_t RangeSteps::open_at_end() const {
  std::uint64_t n = 0;
  for (const auto& [id, t] : threads_) n += t.stack.size();
  return n;
}

void RangeSteps::finish() {
  if (!prof_.in_step()) return;
  // The step in progress did not end: its open stages closed, the step dropped like a vetoed one.
  auto it = threads_.find(step_thread_);
  if (it != threads_.end()) end_stages(it->second, 0);
  prof_.veto_step();
  prof_.end_step();
}

bool RangeSteps::at_step_boundary(std::uint64_t thread, std::string_view name) const {
  if (!have_step_thread_ || thread != step_thread_ || prof_.in_step() || name != step_)
    return false;
  const auto it = threads_.find(thread);
  return it == threads_.end() || it->second.stack.empty() || settled();
}

}  // namespace simprof::run
