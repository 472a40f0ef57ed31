// SPDX-License-Identifier: MIT
// A program's own ranges as steps and stages (`simprof run`): each thread's pushes and pops, in the
// order it made them, turned into a StepProfiler's steps (the step range) and stages (the ranges
// nested in it, named by their path: "physics", "physics/contacts"). Not thread-safe: the caller
// serialises the calls. Private to src/run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "simprof/profiler/step_profiler.hpp"

namespace simprof::run {

struct RangeStepsOptions {
  // The step's range name; empty: the outermost range that repeats (chosen while the first steps
  // run: a shallower range that repeats later, within kLearningSteps steps, takes over; so does a
  // range with ranges inside it from a choice that has none, such as a loader thread's; and a
  // range of the main thread from another thread's: while young, and later if it has ranges
  // inside).
  std::string step;
  // The process's main thread (0: none known): where the steps are when threads race to repeat.
  std::uint64_t main_thread = 0;
};

// What was seen, for the summary at exit and the run record.
struct RangeCounts {
  std::uint64_t pushes = 0, pops = 0;
  std::uint64_t unmatched_pops = 0;  // a pop (or end) with no such range open on its thread
  std::uint64_t crossed = 0;         // a range that closed while one opened after it was still open
  std::uint64_t unclosed = 0;  // ranges open when their step range was pushed again (never popped)
  std::uint64_t other_threads = 0;  // ranges pushed on a thread other than the steps'
  std::uint64_t left_out = 0;       // stages the profiler refused (past kMaxDepth, a reserved name)
  std::uint64_t step_changes = 0;   // the chosen step range gave way to a shallower one
  std::uint64_t unnamed = 0;        // pushes of a name past RangeSteps::kMostNames distinct ones
};

class RangeSteps {
 public:
  // Steps of a chosen range within which a shallower repeating range still takes over (substeps
  // repeat fewer times in a step than steps do in an epoch).
  static constexpr std::uint64_t kLearningSteps = 64;
  // Names and stage paths kept: names that change every push (torch's "seq = N") must not grow
  // the session without bound. Past kMostNames, a new name is one of kManyNames: no step, no
  // stage; past kMostStages, a new stage path is left out (counted).
  static constexpr std::size_t kMostNames = 4096;
  static constexpr std::size_t kMostStages = 512;
  static constexpr std::string_view kManyNames = "(more names)";

  RangeSteps(StepProfiler& prof, RangeStepsOptions options);

  // A range named `name` opened on `thread` / the innermost one closed there. Ranges of an NVTX
  // domain (`domain`: its handle, 0 for the default domain) nest among themselves, as NVTX keeps
  // them; a start/end range has an `id` of its own (non-zero) and is closed by end().
  void push(std::uint64_t thread, std::string_view name, std::uint64_t domain = 0,
            std::uint64_t id = 0);
  void pop(std::uint64_t thread, std::uint64_t domain = 0);
  void end(std::uint64_t thread, std::uint64_t id);

  // The step range: the one asked for, or the one chosen (empty until one is).
  const std::string& step_name() const noexcept { return step_; }
  bool step_chosen() const noexcept { return !step_.empty(); }
  // The choice stands against a deeper or a fuller range: named by --step, or kLearningSteps steps
  // of it counted (the main thread's range with ranges inside it may still take over a choice on
  // another thread).
  bool settled() const noexcept {
    return step_chosen() && (!options_.step.empty() || steps_ >= kLearningSteps);
  }
  // Whether a push of `name` on `thread` now begins a step of the chosen range, between steps:
  // where `simprof run` starts its device side. While the choice is young, only with no range
  // open on the thread: a substage chosen first (it repeats first) would put that start inside the
  // program's real step, where the GPU's wait for it lands in a stage.
  bool at_step_boundary(std::uint64_t thread, std::string_view name) const;
  // Steps of that range counted (since it was chosen).
  std::uint64_t steps() const noexcept { return steps_; }
  const RangeCounts& counts() const noexcept { return counts_; }
  // The range the steps were of before the latest change ("" when none).
  const std::string& previous_step() const noexcept { return previous_; }
  // What made the last change: "a shallower range", "a range with ranges inside it" or "the main
  // thread's range".
  const char* change_why() const noexcept { return change_why_; }
  // Why the first stage left out was refused.
  const std::string& first_refusal() const noexcept { return first_refusal_; }
  // Ranges seen, by name, with how many times each was pushed (for "what was seen").
  const std::map<std::string, std::uint64_t, std::less<>>& seen() const noexcept { return seen_; }
  // Threads that pushed ranges, and the one the steps are on (0 before a step is chosen).
  std::size_t threads() const noexcept { return threads_.size(); }
  std::uint64_t step_thread() const noexcept { return step_thread_; }
  // Ranges still open at the end (a step in progress is ended without its stages' time lost).
  std::uint64_t open_at_end() const;
  // Whether the step range is also pushed inside its steps (substeps of its name: stages then).
  bool nests_itself() const noexcept { return nests_itself_; }
  // Called when a shallower range takes over, before its first step begins.
  void on_change(std::function<void()> f) { on_change_ = std::move(f); }
  // Called when a range that is no stage of a step closes (another thread's, one between steps, one
  // refused as a stage): its thread, name and ticks of the profiler's clock. None while unset.
  using RangeFn = std::function<void(std::uint64_t thread, std::string_view name,
                                     std::int64_t begin, std::int64_t end)>;
  void on_range(RangeFn f) { on_range_ = std::move(f); }
  // At exit: a step in progress is dropped like a vetoed one, its open stages closed.
  void finish();

 private:
  struct Frame {
    std::string_view name;     // a key of seen_ (kept for the session: no allocation per push)
    StageId stage = kNoStage;  // the stage it opened, kNoStage outside a step
    bool step = false;         // it is the step range
    std::uint64_t domain = 0;  // its NVTX domain (0: the default one)
    std::uint64_t id = 0;      // a start/end range's id (0: pushed)
    bool parent = false;       // a range was opened inside it
    bool no_stage = false;     // no stage (none, or it lost it), nor the step: on_range() at close
    std::int64_t begin = 0;    // when (read only for on_range())
  };
  struct Thread {
    std::uint64_t id = 0;
    std::vector<Frame> stack;
    // Names closed at each depth since the frame below was pushed: a push of one of them again
    // is a repeat at that depth.
    std::vector<std::vector<std::string_view>> closed;
    std::vector<std::string_view> parents;  // names closed with a range inside them
  };

  void learn(Thread& t, std::uint64_t thread, std::string_view name);
  void close(Thread& t, std::size_t at);  // the frame at `at` closed (by its pop or end)
  // `traced`: on_range() now (false: a started range closed early, traced at its own end).
  void close_at(Thread& t, std::size_t at, bool traced = true);
  static void remember(std::vector<std::string_view>& names, std::string_view name,
                       std::size_t most);
  // The step range pushed again (in `domain`) while a step of it is open.
  void drop_open_step(Thread& t, std::uint64_t domain);
  void drop_step(Thread& t, std::size_t from);
  void end_stages(Thread& t, std::size_t from);
  void forget(const Frame& f);  // a started range closed early: its end() is quiet (traced)
  // `why`: what made a later range take over ("a shallower range", ...).
  void choose(std::uint64_t thread, std::string_view name, std::size_t depth, const char* why = "");
  const char* change_why_ = "";  // the last takeover's why
  // The step is another thread's than the main one's (where that is known).
  bool off_main() const noexcept {
    return options_.main_thread != 0 && step_chosen() && step_thread_ != options_.main_thread;
  }
  StageId stage_for(const Thread& t, std::string_view name);

  StepProfiler& prof_;
  RangeStepsOptions options_;
  std::string step_;
  std::size_t step_depth_ = 0;  // the depth the step range was chosen at (learning only)
  std::uint64_t step_thread_ = 0;
  std::uint64_t step_domain_ = 0;  // the open step's NVTX domain
  std::uint64_t steps_ = 0;
  bool have_step_thread_ = false;
  std::unordered_map<std::uint64_t, Thread> threads_;
  std::map<std::string, std::uint64_t, std::less<>> seen_;
  std::string path_;  // scratch: a stage's path
  RangeCounts counts_;
  std::string first_refusal_;
  std::string previous_;
  std::function<void()> on_change_;
  RangeFn on_range_;
  // Started ranges closed before their end() (kept for it: at most kMostGone, the oldest go).
  static constexpr std::size_t kMostGone = 1024;
  static constexpr std::size_t kMostClosed = 256;  // names kept per depth (and as parents)
  struct Gone {
    std::uint64_t id;
    std::string_view name;
    std::int64_t begin;
    bool no_stage;
  };
  std::vector<Gone> gone_;
  // A missing pop or a range of the step's name inside the step? A step dropped at its push; its
  // own pop (its domain's) arriving soon after, twice, settles it: the step range nests its own
  // name. Then a step holding far more of them than earlier steps did is a missing pop after all.
  bool dropped_ = false;
  bool nests_itself_ = false;
  int confirmed_ = 0;
  std::uint64_t dropped_domain_ = 0;
  std::uint64_t steps_at_drop_ = 0;
  std::uint64_t nested_now_ = 0, nested_most_ = 0;  // ranges of its name inside a step
  // A takeover found while the chosen range's step is open (on another thread): at its end.
  struct Pending {
    bool set = false;
    std::uint64_t thread = 0;
    std::string_view name;
    std::size_t depth = 0;
    const char* why = "";
  } pending_;
};

}  // namespace simprof::run
