// SPDX-License-Identifier: MIT
#include "range_report.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "simprof/profiler/report.hpp"

namespace simprof::run {

namespace {

// "physics (200), step (100), ..." : the ranges seen, most pushed first (at most 12).
std::string seen_list(const RangeSteps& steps) {
  std::vector<std::pair<std::uint64_t, std::string>> v;
  for (const auto& [name, n] : steps.seen()) v.emplace_back(n, name);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < 12; ++i)
    out += fmt::format("{}\"{}\" ({})", i ? ", " : "", v[i].second, v[i].first);
  if (v.size() > 12) out += fmt::format(", and {} more", v.size() - 12);
  return out;
}

void problems(const RangeSteps& steps, const std::string& asked, bool final, std::string& out) {
  const RangeCounts& c = steps.counts();
  if (c.pushes == 0) {
    out +=
        "simprof run: the program pushed no NVTX ranges (nvtxRangePush, "
        "torch.cuda.nvtx.range, nvtx3::scoped_range): nothing to profile.\n";
    return;
  }
  if (!asked.empty() && steps.seen().count(asked) == 0)
    out +=
        fmt::format("simprof run: --step {}: no range of that name was pushed. Ranges seen: {}.\n",
                    asked, seen_list(steps));
  else if (!steps.step_chosen())
    out += fmt::format(
        "simprof run: no range repeated, so there are no steps (--step NAME to "
        "choose one). Ranges seen: {}.\n",
        seen_list(steps));
  if (c.unmatched_pops)
    out += fmt::format(
        "simprof run: {} pops (or ends) had no such range open on their thread (unbalanced "
        "push/pop).\n",
        c.unmatched_pops);
  if (steps.nests_itself())
    out += fmt::format(
        "simprof run: the step range \"{}\" is also pushed inside its steps (ranges of its name "
        "within it): those are stages, and the statistics start after the step that showed it.\n",
        steps.step_name());
  if (c.unclosed)
    out += fmt::format(
        "simprof run: {} ranges were never popped: their step range was pushed again while they "
        "were open (unbalanced push/pop); those steps are dropped, the run goes on.\n",
        c.unclosed);
  if (c.crossed)
    out += fmt::format(
        "simprof run: {} times a range ended while a range opened after it was still open (NVTX "
        "domains and start/end ranges need not nest): a started range above it ended with it, a "
        "pushed one lost its stage there and stayed open for its own pop.\n",
        c.crossed);
  if (c.unnamed)
    out += fmt::format(
        "simprof run: {} pushes had a name past the first {} distinct ones (names that change "
        "every push): counted, not steps or stages.\n",
        c.unnamed, RangeSteps::kMostNames);
  if (const auto open = final ? steps.open_at_end() : 0)
    out += fmt::format(
        "simprof run: {} ranges were still open at the end (a step in progress "
        "is not counted).\n",
        open);
  if (c.other_threads)
    out += fmt::format(
        "simprof run: {} ranges on {} other threads are not stages: a step and its "
        "stages are the step range's thread.\n",
        c.other_threads, steps.threads() - 1);
  if (c.left_out)
    out += fmt::format("simprof run: {} stage ranges left out: {}.\n", c.left_out,
                       steps.first_refusal());
  if (c.step_changes)
    out += fmt::format(
        "simprof run: the steps were \"{}\"{} until \"{}\", {}, "
        "repeated ({} change{}, the last said); the statistics are \"{}\"'s (--step NAME to "
        "choose).\n",
        steps.previous_step(),
        steps.previous_step() == steps.step_name() ? " on another thread" : "", steps.step_name(),
        steps.change_why(), c.step_changes, c.step_changes == 1 ? "" : "s", steps.step_name());
}

}  // namespace

std::string range_report(const StepProfiler& prof, const RangeSteps& steps,
                         const std::string& asked, bool final) {
  std::string out;
  if (steps.step_chosen() && steps.steps() > 0) {
    out += fmt::format("simprof run: {} steps of the NVTX range \"{}\" (host clock)\n",
                       steps.steps(), steps.step_name());
    out += stage_table(prof);
  }
  problems(steps, asked, final, out);
  return out;
}

}  // namespace simprof::run
