// SPDX-License-Identifier: MIT
#include "outcome.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "simprof/base/stats.hpp"
#include "simprof/profiler/fps_tracker.hpp"

namespace simprof::compare {

namespace {

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return percentile_sorted(v, q);
}

const Series* find(const Run& run, const Series& s) {
  for (const Series& x : run.series)
    if (x.clock == s.clock && x.name == s.name) return &x;
  return nullptr;
}

std::string where(const Series& s) { return fmt::format("{} {}", s.clock, s.name); }

// What a series left out of the comparison is: bad input for a stage; for the FPS rate a note (a
// run shorter than a few FPS samples has too few, which is no fault of the records).
std::vector<std::string>& left_out(const Series& s, Outcome& out) {
  return s.larger_is_slower ? out.bad_input : out.notes;
}

void compare_run(const Run& base, const Run& changed, const CompareOptions& options, Outcome& out) {
  RunResult result;
  result.label = base.label;
  for (const Series& b : base.series) {
    const Series* n = find(changed, b);
    if (n == nullptr) {
      left_out(b, out).push_back(fmt::format("{} is in the base run only{}", where(b),
                                             base.label.empty() ? "" : " (" + base.label + ")"));
      continue;
    }
    if (b.samples.size() < 2 || n->samples.size() < 2) {
      left_out(b, out).push_back(
          fmt::format("{} has {} samples in the base run and {} in the new "
                      "(expected at least 2 in each)",
                      where(b), b.samples.size(), n->samples.size()));
      continue;
    }
    Row row;
    row.clock = b.clock;
    row.name = b.name;
    row.depth = b.depth;
    row.larger_is_slower = b.larger_is_slower;
    row.base = b.samples;
    row.changed = n->samples;
    row.base_p50 = quantile(b.samples, 0.5);
    row.base_p95 = quantile(b.samples, 0.95);
    row.new_p50 = quantile(n->samples, 0.5);
    row.new_p95 = quantile(n->samples, 0.95);
    try {
      row.result =
          compare(b.samples, n->samples, options.alpha, options.threshold, b.larger_is_slower);
    } catch (const std::invalid_argument& e) {  // a median of 0: nothing ran
      out.bad_input.push_back(fmt::format("{}: {}", where(b), e.what()));
      continue;
    }
    result.rows.push_back(std::move(row));
  }
  for (const Series& n : changed.series)
    if (find(base, n) == nullptr)
      left_out(n, out).push_back(fmt::format("{} is in the new run only{}", where(n),
                                             base.label.empty() ? "" : " (" + base.label + ")"));
  out.runs.push_back(std::move(result));
}

std::string value(const Row& r, double v) {
  return r.larger_is_slower ? fmt::format("{:.2f} us", v * 1e6)
                            : fmt::format("{}/s", format_thousands(v));
}

std::string percent(double v) { return fmt::format("{:+.1f} %", 100 * v); }

}  // namespace

int Outcome::status() const noexcept {
  if (!not_comparable.empty() || !bad_input.empty()) return 2;
  for (const RunResult& run : runs)
    for (const Row& row : run.rows)
      if (row.verdict() == Verdict::kSlower) return 1;
  return 0;
}

Outcome compare_records(const Record& base, const Record& changed, const CompareOptions& options) {
  Outcome out;
  out.base = base.name;
  out.changed = changed.name;
  out.not_comparable = not_comparable(base, changed);
  if (!out.not_comparable.empty()) return out;
  for (const Run& b : base.runs) {
    if (!has_workload(changed, b.workload))
      out.bad_input.push_back(fmt::format("workload {{{}}} is in the base record only", b.label));
    for (const Run& n : changed.runs)
      if (b.workload == n.workload) compare_run(b, n, options, out);
  }
  for (const Run& n : changed.runs)
    if (!has_workload(base, n.workload))
      out.bad_input.push_back(fmt::format("workload {{{}}} is in the new record only", n.label));
  return out;
}

std::string format_outcome(const Outcome& o, const CompareOptions& options) {
  fmt::memory_buffer out;
  auto line = [&](auto&&... args) {
    fmt::format_to(std::back_inserter(out), std::forward<decltype(args)>(args)...);
  };
  line("simprof compare: {} -> {} (two-sided Mann-Whitney U, alpha {}; threshold {:.1f} %)\n",
       o.base, o.changed, options.alpha, 100 * options.threshold);
  for (const std::string& why : o.not_comparable) line("  not comparable: {}\n", why);
  int slower = 0, faster = 0, same = 0;
  for (const RunResult& run : o.runs) {
    if (!run.label.empty()) line("run {}\n", run.label);
    line("{:<7} {:<28} {:>14} {:>14} {:>14} {:>14} {:>8}  {:<18} {:>8}  {}\n", "clock", "stage",
         "base p50", "new p50", "base p95", "new p95", "change", "95% interval", "p", "verdict");
    for (const Row& r : run.rows) {
      const Comparison& c = r.result;
      slower += c.verdict == Verdict::kSlower;
      faster += c.verdict == Verdict::kFaster;
      same += c.verdict == Verdict::kNoChange;
      line("{:<7} {:<28} {:>14} {:>14} {:>14} {:>14} {:>8}  {:<18} {:>8.2g}  {}\n", r.clock,
           std::string(2 * static_cast<std::size_t>(r.depth), ' ') + r.name, value(r, r.base_p50),
           value(r, r.new_p50), value(r, r.base_p95), value(r, r.new_p95), percent(c.change.change),
           fmt::format("[{}, {}]", percent(c.change.low), percent(c.change.high)), c.test.p,
           to_string(c.verdict));
    }
  }
  for (const std::string& why : o.bad_input) line("  bad input: {}\n", why);
  for (const std::string& why : o.notes) line("  not compared: {}\n", why);
  const int status = o.status();
  line("verdict: {} ({} slower, {} faster, {} no change); exit {}\n",
       status == 2   ? "cannot compare"
       : status == 1 ? "slower"
                     : "no significant slowdown",
       slower, faster, same, status);
  return fmt::to_string(out);
}

Json outcomes_json(const std::vector<Outcome>& outcomes, const CompareOptions& options) {
  Json list = Json::array();
  int worst = 0;
  for (const Outcome& o : outcomes) {
    Json runs = Json::array();
    for (const RunResult& run : o.runs) {
      Json rows = Json::array();
      for (const Row& r : run.rows)
        rows.push_back({{"clock", r.clock},
                        {"stage", r.name},
                        {"depth", r.depth},
                        {"unit", r.larger_is_slower ? "s" : "steps/s per env"},
                        {"base", {{"n", r.base.size()}, {"p50", r.base_p50}, {"p95", r.base_p95}}},
                        {"new", {{"n", r.changed.size()}, {"p50", r.new_p50}, {"p95", r.new_p95}}},
                        {"change", r.result.change.change},
                        {"interval", {r.result.change.low, r.result.change.high}},
                        {"u", r.result.test.u},
                        {"p", r.result.test.p},
                        {"verdict", to_string(r.result.verdict)}});
      runs.push_back({{"workload", run.label}, {"rows", std::move(rows)}});
    }
    worst = std::max(worst, o.status());
    list.push_back({{"base", o.base},
                    {"new", o.changed},
                    {"not_comparable", o.not_comparable},
                    {"bad_input", o.bad_input},
                    {"not_compared", o.notes},
                    {"runs", std::move(runs)},
                    {"status", o.status()}});
  }
  return {{"schema", "simprof.compare/1"},  {"test", "two-sided Mann-Whitney U"},
          {"alpha", options.alpha},         {"threshold", options.threshold},
          {"comparisons", std::move(list)}, {"status", worst}};
}

}  // namespace simprof::compare
