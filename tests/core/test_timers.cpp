// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "simprof/base/io.hpp"
#include "simprof/timers/plots.hpp"
#include "simprof/timers/timer_stats.hpp"

using simprof::testing::error_of;
using namespace simprof;

namespace {

// A frame over caller-owned ticks, 1e6 ticks per second (1 tick = 1 us).
TimerFrame frame(const TimerLabels& labels, const std::vector<std::uint64_t>& ticks, int n_envs) {
  return TimerFrame{&labels, ticks.data(), labels.rows(), n_envs, TimerUnit::kNanoseconds, 1e6};
}

}  // namespace

TEST(TimerLabels, NamesRowsAndRejectsBadOnes) {
  TimerLabels l({"solve", "contacts"});
  EXPECT_EQ(l.row("contacts"), 1);
  EXPECT_EQ(l.name(0), "solve");
  const std::string msg = error_of<std::invalid_argument>([&] { l.row("nope"); });
  EXPECT_NE(msg.find("'nope'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("solve, contacts"), std::string::npos) << msg;
  EXPECT_NE(error_of<std::out_of_range>([&] { l.name(2); }).find("row 2"), std::string::npos);
  EXPECT_THROW(TimerLabels({}), std::invalid_argument);
  EXPECT_THROW(TimerLabels({"a", ""}), std::invalid_argument);
  EXPECT_NE(error_of<std::invalid_argument>([] {
              TimerLabels({"a", "a"});
            }).find("rows 0 and 1"),
            std::string::npos);
}

TEST(TimerBuffer, LayoutAndRangeChecks) {
  TimerBuffer b({"a", "b"}, 3);
  TimerView v = b.view();
  EXPECT_EQ(v.rows, 2);
  EXPECT_EQ(v.n_envs, 3);
  v.record(1, 2, 42);
  v.add(1, 2, 8);
  EXPECT_EQ(b.read().ticks(1, 2), 50u);
  EXPECT_EQ(v.data[1 * 3 + 2], 50u);  // row-major: consecutive envs are adjacent
  EXPECT_NE(error_of<std::out_of_range>([&] { b.read().ticks(2, 0); }).find("row 2"),
            std::string::npos);
  EXPECT_NE(error_of<std::out_of_range>([&] { b.read().ticks(0, 3); }).find("env 3"),
            std::string::npos);
  b.reset();
  EXPECT_EQ(b.read().ticks(1, 2), 0u);
  EXPECT_THROW(TimerBuffer({"a"}, 0), std::invalid_argument);
  EXPECT_GT(b.ticks_per_second(), 0.0);
  EXPECT_EQ(b.unit(), simprof::TimerUnit::kCycles);
  EXPECT_EQ(b.read().ticks_per_second, b.ticks_per_second());
  const TimerBuffer ns({"a"}, 1, simprof::TimerUnit::kNanoseconds);
  EXPECT_EQ(ns.ticks_per_second(), 1e9);
  EXPECT_EQ(ns.unit(), simprof::TimerUnit::kNanoseconds);
}

#if SIMPROF_TIMER_CHECKS
TEST(TimerBufferDeathTest, ViewChecksBoundsInDebugBuilds) {
  TimerBuffer b({"a", "b"}, 3);
  EXPECT_DEATH(b.view().record(2, 0, 1), "timer row 2 out of range");
  EXPECT_DEATH(b.view().record(0, 3, 1), "timer env 3 out of range");
}
#endif

TEST(TimerChain, LapsChainAndTheTotalIsTheirExactSum) {
  TimerBuffer b({"total", "p1", "p2"}, 4);
  for (int e = 0; e < 4; ++e) {
    TimerChain<> c(b.view(), e);
    volatile double x = 0;
    for (int i = 0; i < 1000 * (e + 1); ++i) x = x + 1.0;
    c.lap(1);
    for (int k = 0; k < 3; ++k) {
      for (int i = 0; i < 100; ++i) x = x + 1.0;
      c.lap_add(2);
    }
    c.total(0);
  }
  const TimerFrame f = b.read();
  for (int e = 0; e < 4; ++e) {
    EXPECT_EQ(f.ticks(0, e), f.ticks(1, e) + f.ticks(2, e)) << e;
    EXPECT_GT(f.ticks(1, e), 0u) << e;
  }
}

TEST(TimerStats, LastMeanSortedPercentilesSlowest) {
  TimerLabels labels({"solve"});
  TimerStats s(labels, 5);
  s.update(frame(labels, {10, 50, 20, 40, 30}, 5));
  s.update(frame(labels, {30, 50, 40, 20, 10}, 5));
  EXPECT_EQ(s.frames(), 2u);
  const auto last = s.last(0);
  EXPECT_DOUBLE_EQ(last[0], 30e-6);
  const auto mean = s.mean(0);
  EXPECT_DOUBLE_EQ(mean[0], 20e-6);
  EXPECT_DOUBLE_EQ(mean[1], 50e-6);
  EXPECT_DOUBLE_EQ(mean[4], 20e-6);
  const auto sorted = s.sorted_mean(0);
  EXPECT_DOUBLE_EQ(sorted.front(), 20e-6);
  EXPECT_DOUBLE_EQ(sorted.back(), 50e-6);
  const auto a = s.across_envs(0);  // means: 20 50 30 30 20
  EXPECT_DOUBLE_EQ(a.p50, 30e-6);
  EXPECT_DOUBLE_EQ(a.max, 50e-6);
  EXPECT_NEAR(a.p99, 49.2e-6, 1e-12);  // sorted 20 20 30 30 50: 30 + 0.96 * 20
  EXPECT_DOUBLE_EQ(s.across_envs(0, /*latest=*/true).max, 50e-6);
  EXPECT_EQ(s.slowest(0, 3), (std::vector<int>{1, 2, 3}));  // ties: the lower env first
  EXPECT_EQ(s.slowest(0, 99).size(), 5u);
  EXPECT_THROW(s.slowest(0, -1), std::invalid_argument);
  EXPECT_THROW(s.last(1), std::out_of_range);
  TimerLabels two({"a", "b"});
  std::vector<std::uint64_t> t(10, 1);
  EXPECT_THROW(s.update(frame(two, t, 5)), std::invalid_argument);
}

TEST(TimerStats, EmaMode) {
  TimerLabels labels({"x"});
  TimerStats s(labels, 1, 0.9);
  s.update(frame(labels, {100}, 1));
  EXPECT_DOUBLE_EQ(s.mean(0)[0], 100e-6);  // seeded with the first frame
  s.update(frame(labels, {200}, 1));
  EXPECT_NEAR(s.mean(0)[0], 110e-6, 1e-15);
  EXPECT_THROW(TimerStats(labels, 1, 1.5), std::invalid_argument);
}

TEST(TimerPlots, TerminalPanels) {
  TimerLabels labels({"solve"});
  TimerStats s(labels, 100);
  std::vector<std::uint64_t> t(100);
  for (int e = 0; e < 100; ++e)
    t[static_cast<std::size_t>(e)] = static_cast<std::uint64_t>(e == 7 ? 1000 : 10 + e);
  s.update(frame(labels, t, 100));
  PlotOptions o;
  o.width = 64;  // 50 columns of bars
  o.height = 4;
  o.unicode = false;
  const std::string p = terminal_plot(s, 0, o);
  EXPECT_NE(p.find("timer 'solve' over 100 envs"), std::string::npos) << p;
  EXPECT_NE(p.find("slowest envs 7, 99, 98"), std::string::npos) << p;
  EXPECT_NE(p.find("last step per env"), std::string::npos);
  EXPECT_NE(p.find("mean per env, sorted"), std::string::npos);
  int lines = 0;
  for (char c : p) lines += c == '\n';
  EXPECT_EQ(lines, 1 + 3 * (1 + 4 + 1));
  EXPECT_NE(p.find("1000.00 us |"), std::string::npos) << p;  // the panel's top
  EXPECT_NE(p.find("   10.45 us |"), std::string::npos)
      << p;  // just under the smallest bin (11 us)
  EXPECT_THROW(terminal_plot(s, 1), std::out_of_range);
  o.height = 0;
  EXPECT_THROW(terminal_plot(s, 0, o), std::invalid_argument);
}

TEST(TimerPlots, SvgAndAtomicWrite) {
  TimerLabels labels({"solve", "contacts<&>"});
  TimerStats s(labels, 3);
  s.update(frame(labels, {1, 2, 3, 4, 5, 6}, 3));
  const std::string svg = timers_svg(s, "run \"A\"");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>\n"), std::string::npos);
  EXPECT_NE(svg.find("contacts&lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(svg.find("run &quot;A&quot;"), std::string::npos);
  const std::string path = ::testing::TempDir() + "simprof_timers_test.svg";
  write_file_atomic(path, svg);
  std::ifstream in(path);
  std::stringstream back;
  back << in.rdbuf();
  EXPECT_EQ(back.str(), svg);
  std::remove(path.c_str());
  const std::string bad =
      error_of<std::runtime_error>([&] { write_file_atomic("/nonexistent-dir/x.svg", "x"); });
  EXPECT_NE(bad.find("/nonexistent-dir/x.svg"), std::string::npos) << bad;
}
