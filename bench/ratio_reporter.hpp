// SPDX-License-Identifier: MIT
// The benchmarks' one reporter and main(): Google Benchmark's console table as usual, and each
// run's time and counters kept by run name for the ratio lines a binary prints at the end (ratios
// against a baseline measured in the same binary and run). With --benchmark_repetitions the median
// of the repetitions is kept, else the single run.
#pragma once

#include <benchmark/benchmark.h>

#include "verdicts.hpp"

#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace simprof::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  /// Real time per iteration in the benchmark's unit, by run name ("BM_Step/6/0",
  /// "BM_Eager/100/1024/manual_time"); -1 for a run that did not report.
  double time(const std::string& run) const {
    const auto it = time_.find(run);
    return it == time_.end() ? -1.0 : it->second;
  }
  /// A user counter of a run; -1 when absent.
  double counter(const std::string& run, const std::string& name) const {
    const auto it = counters_.find(run);
    if (it == counters_.end()) return -1.0;
    const auto c = it->second.find(name);
    return c == it->second.end() ? -1.0 : c->second;
  }

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.error_occurred) continue;
      const std::string name = r.run_name.str();
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (median)
        from_median_.insert(name);
      else if (r.run_type != Run::RT_Iteration || from_median_.count(name))
        continue;
      time_[name] = r.GetAdjustedRealTime();
      for (const auto& [k, v] : r.counters) counters_[name][k] = v;
    }
  }

 private:
  std::map<std::string, double> time_;
  std::map<std::string, std::map<std::string, double>> counters_;
  std::set<std::string> from_median_;
};

/// The main() of a benchmark binary: runs the benchmarks that the command line selects with a
/// RatioReporter, then `print(reporter, verdicts)` (or `print(reporter)`) for the lines that
/// compare them. --verdicts FILE and --check: see verdicts.hpp.
template <class Print>
int run_benchmarks(int argc, char** argv, Print&& print) {
  Verdicts verdicts;
  verdicts.take_flags(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  if constexpr (std::is_invocable_v<Print, const RatioReporter&, Verdicts&>)
    print(static_cast<const RatioReporter&>(reporter), verdicts);
  else
    print(static_cast<const RatioReporter&>(reporter));
  benchmark::Shutdown();
  return verdicts.finish();
}

}  // namespace simprof::bench
