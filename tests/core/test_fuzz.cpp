// SPDX-License-Identifier: MIT
// Seeded random input (a fuzzer's reach, in CI's time): whatever the input, the Chrome JSON writer
// writes JSON that parses and keeps valid names byte for byte; environment variables, options and
// command-line flags are either accepted or refused with std::invalid_argument naming what was
// wrong, never anything else; and a process killed while writing a trace leaves the previous file
// whole under its name. Each test prints its seed; SIMPROF_FUZZ_SEED replays one.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "simprof/base/io.hpp"
#include "simprof/base/manual_clock.hpp"
#include "simprof/base/ranks.hpp"
#include "simprof/profiler/options.hpp"
#include "simprof/profiler/report.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/chrome_json.hpp"
#include "test_util.hpp"

using namespace simprof;
using json = nlohmann::json;

namespace {

std::uint32_t seed() {
  const char* s = std::getenv("SIMPROF_FUZZ_SEED");
  const std::uint32_t v = s ? static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10)) : 20261130u;
  std::printf("seed %u (SIMPROF_FUZZ_SEED replays it)\n", v);
  return v;
}

// Whether `s` is well-formed UTF-8 (an independent check: the writer's own is not used).
bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80           ? 1
                    : (c >> 5) == 0x6  ? 2
                    : (c >> 4) == 0xe  ? 3
                    : (c >> 3) == 0x1e ? 4
                                       : 0;
    if (n == 0 || i + n > s.size()) return false;
    std::uint32_t cp = n == 1 ? c : c & (0xff >> (n + 1));
    for (std::size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    const std::uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n;
  }
  return true;
}

// Up to max_len bytes: one in four draws a whole piece, the others a byte in [lo, hi].
template <std::size_t N>
std::string text_of(std::mt19937& rng, std::size_t max_len, const std::string (&pieces)[N], int lo,
                    int hi) {
  std::uniform_int_distribution<std::size_t> len(0, max_len), which(0, N - 1);
  std::uniform_int_distribution<int> pick(0, 3), byte(lo, hi);
  std::string s;
  for (std::size_t n = len(rng); s.size() < n;) {
    if (pick(rng) == 0)
      s += pieces[which(rng)];
    else
      s.push_back(static_cast<char>(byte(rng)));
  }
  return s;
}

std::string random_text(std::mt19937& rng, std::size_t max_len) {
  static const std::string nasty[] = {"\"",       "\\",           "\n",
                                      "\t",       "\x01",         "\x7f",
                                      "\xc3\xa9", "\xe6\xa8\xa1", "\xf0\x9f\x98\x80",
                                      "\xff",     "\xc3",         "\xed\xa0\x80",
                                      "\\u0000",  "</script>",    "%s%n",
                                      "{}"};
  return text_of(rng, max_len, nasty, 0, 255);
}

// Text that is valid UTF-8 whatever is drawn: ASCII (controls, quotes and backslashes included)
// and two-, three- and four-byte characters, so the byte-exact round trip is checked on long and
// nasty names, not only on the few random ones that happen to be valid.
std::string valid_text(std::mt19937& rng, std::size_t max_len) {
  static const std::string wide[] = {
      "\xc3\xa9", "\xe6\xa8\xa1", "\xf0\x9f\x98\x80", "\\u0000", "</script>", "%s%n", "{}"};
  return text_of(rng, max_len, wide, 1, 127);
}

double random_value(std::mt19937& rng) {
  const double specials[] = {0.0,
                             -0.0,
                             1e308,
                             -1e308,
                             5e-324,
                             std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity()};
  std::uniform_int_distribution<int> pick(0, 9);
  const int p = pick(rng);
  return p < 8 ? specials[p] : std::uniform_real_distribution<double>(-1e12, 1e12)(rng);
}

}  // namespace

TEST(Fuzz, ChromeJsonWriterAlwaysWritesJsonAndKeepsValidNames) {
  std::mt19937 rng(seed());
  std::uniform_int_distribution<int> kind(0, 8), small(0, 20), coin(0, 1);
  std::size_t round_trips = 0, long_round_trips = 0;
  std::uniform_int_distribution<std::int64_t> t(-1'000'000'000'000, 1'000'000'000'000);
  for (int round = 0; round < 300; ++round) {
    Trace tr;
    std::vector<std::string> names;
    for (int i = 0, n = small(rng); i < n; ++i) {
      const std::size_t max_len = round % 50 == 0 ? 20000 : 64;  // and a huge one
      std::string name = coin(rng) ? random_text(rng, max_len) : valid_text(rng, max_len);
      const std::int64_t b = t(rng), e = b + std::abs(t(rng)) % 1'000'000;
      Span s;
      switch (kind(rng)) {
        case 0:
          s = Span::cpu_stage(name, 3, 7, b, e, 100, 101);
          break;
        case 1:
          s = Span::launch(name, b, e, 100, 101, 5);
          break;
        case 2:
          s = Span::kernel(name, b, e, 0, 7, 5);
          break;
        case 3:
          s = Span::memcpy(CopyKind::kDtoH, 4096, b, e, 0, 7, 6);
          break;
        case 4:
          s = Span::memset(64, b, e, 0, 7, 7);
          break;
        case 5:
          s = Span::synchronization(SyncKind::kStream, b, e, 0, -1, 8);
          break;
        case 6:
          s = Span::overhead(name, b, e, 100, 0);
          break;
        case 7:
          s = Span::flow(5, b, 100, 101, e, 0, 7);
          break;
        default:
          s = Span::counter(name, b, 100, random_value(rng));
          break;
      }
      if (s.kind != SpanKind::kFlow && s.kind != SpanKind::kMemcpy && s.kind != SpanKind::kMemset &&
          s.kind != SpanKind::kSync)
        names.push_back(name);
      tr.spans.push_back(std::move(s));
    }
    tr.metadata[random_text(rng, 16)] = random_text(rng, 64);
    tr.ranks.rank = 0;
    tr.backend = random_text(rng, 8);
    tr.base_time_ns = t(rng);
    const std::string text = to_chrome_json(tr);
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << "round " << round << ": the output does not parse";
    std::multiset<std::string> written;
    for (const auto& e : j["traceEvents"])
      if (e["ph"] != "M" && e["ph"] != "s" && e["ph"] != "f") written.insert(e["name"]);
    for (const std::string& n : names)  // a valid name round-trips byte for byte
      if (valid_utf8(n)) {
        ++round_trips;
        long_round_trips += n.size() >= 1000;
        EXPECT_GE(written.count(n), 1u) << "round " << round;
      }
  }
  // Half the names are drawn valid (788 round trips with the default seed): the round trip ran on
  // hundreds, long ones among them, whatever the seed.
  EXPECT_GE(round_trips, 400u);
  EXPECT_GE(long_round_trips, 1u) << "a name of 1,000 bytes or more made the round trip";
}

TEST(Fuzz, EnvironmentAndOptionsAreAcceptedOrRefusedByName) {
  std::mt19937 rng(seed());
  const char* vars[] = {"SIMPROF_SHOW_FPS",       "SIMPROF_FPS_ALPHA",    "SIMPROF_FPS_INTERVAL_MS",
                        "SIMPROF_TIMINGS_WINDOW", "SIMPROF_STATS_WINDOW", "SIMPROF_CLOCK"};
  const std::string plausible[] = {"0",
                                   "1",
                                   "true",
                                   "off",
                                   "0.5",
                                   "-1",
                                   "1e300",
                                   "nan",
                                   "inf",
                                   "tsc",
                                   "steady",
                                   "",
                                   " 3",
                                   "3 ",
                                   "0x10",
                                   "1e-9",
                                   "99999999999999999999",
                                   "auto",
                                   "1.5"};
  std::uniform_int_distribution<std::size_t> var(0, std::size(vars) - 1),
      pick(0, std::size(plausible) - 1);
  std::uniform_int_distribution<int> coin(0, 2);
  int accepted = 0, refused = 0;
  for (int round = 0; round < 500; ++round) {
    for (const char* v : vars) ::unsetenv(v);
    const char* chosen = vars[var(rng)];
    std::string value = coin(rng) ? plausible[pick(rng)] : random_text(rng, 12);
    value.erase(std::remove(value.begin(), value.end(), '\0'), value.end());
    ::setenv(chosen, value.c_str(), 1);
    try {
      ProfilingOptions::from_env().validate();
      ++accepted;
    } catch (const std::invalid_argument& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find(chosen), std::string::npos)
          << "the error does not name " << chosen << ": " << e.what();
    }
    ::unsetenv(chosen);
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);
  // Options set in code: validate() accepts them or names the field.
  for (int round = 0; round < 500; ++round) {
    ProfilingOptions o;
    o.fps_tracker_alpha = random_value(rng);
    o.fps_sample_interval = std::chrono::nanoseconds(
        std::uniform_int_distribution<std::int64_t>(-10, 1'000'000'000'000)(rng));
    o.timings_window = std::uniform_int_distribution<std::size_t>(0, 1u << 30)(rng);
    o.stats_window = std::uniform_int_distribution<std::size_t>(0, 1u << 30)(rng);
    try {
      o.validate();
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_TRUE(m.find("fps_tracker_alpha") != std::string::npos ||
                  m.find("fps_sample_interval") != std::string::npos ||
                  m.find("timings_window") != std::string::npos ||
                  m.find("stats_window") != std::string::npos)
          << m;
    }
  }
}

TEST(Fuzz, LauncherVariablesAreAcceptedOrRefusedByName) {
  std::mt19937 rng(seed());
  const char* names[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS"};
  const std::string plausible[] = {"0", "1", "2", "-1", "", "x", "4096", "1e3", "99999999999"};
  std::uniform_int_distribution<std::size_t> pick(0, std::size(plausible) - 1);
  std::uniform_int_distribution<int> coin(0, 3);
  for (int round = 0; round < 1000; ++round) {
    std::map<std::string, std::string> env;
    for (const char* n : names)
      if (coin(rng)) env[n] = coin(rng) ? plausible[pick(rng)] : random_text(rng, 6);
    auto get = [&](const char* n) -> const char* {
      const auto it = env.find(n);
      return it == env.end() ? nullptr : it->second.c_str();
    };
    try {
      const RankInfo r = RankInfo::from_env(get);
      r.validate();
      EXPECT_LT(r.rank, r.world_size);
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      bool named = false;
      for (const char* n : names) named = named || m.find(n) != std::string::npos;
      EXPECT_TRUE(named) << m;
    }
  }
}

TEST(Fuzz, ExampleFlagsAreAcceptedOrRefusedByName) {
  std::mt19937 rng(seed());
  const std::string flags[] = {"--n-envs", "--steps", "--ratio", "--backend", "--trace",
                               "--quiet",  "--bogus", "-x",      "",          "--"};
  const std::string values[] = {"1",    "0",   "-5",  "1e9", "abc",         "cpu",
                                "cuda", "gpu", "2.5", "nan", "99999999999", ""};
  std::uniform_int_distribution<std::size_t> f(0, std::size(flags) - 1),
      v(0, std::size(values) - 1);
  std::uniform_int_distribution<int> count(0, 6), coin(0, 3);
  int accepted = 0, refused = 0;
  for (int round = 0; round < 1000; ++round) {
    int n_envs = 0, steps = 0;
    double ratio = 0;
    std::string backend, trace;
    bool quiet = false;
    cli::Flags parser("usage\n");
    parser.integer("--n-envs", n_envs, 1)
        .integer("--steps", steps, 0, 1000000)
        .real("--ratio", ratio, 0, 1)
        .choice("--backend", backend, {"cpu", "cuda"})
        .text("--trace", trace)
        .flag("--quiet", quiet);
    std::vector<std::string> args = {"prog"};
    for (int i = 0, n = count(rng); i < n; ++i) {
      args.push_back(coin(rng) ? flags[f(rng)] : random_text(rng, 8));
      if (args.back() == "--help" || args.back() == "-h") args.back() = "--quiet";  // exits
      if (coin(rng)) args.push_back(values[v(rng)]);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    try {
      parser.parse(static_cast<int>(argv.size()), argv.data());
      ++accepted;
      EXPECT_TRUE(n_envs == 0 || n_envs >= 1);
      EXPECT_TRUE(ratio >= 0 && ratio <= 1);
    } catch (const std::invalid_argument& e) {
      ++refused;
      // Refused by name: the message is one of the parser's shapes, naming an argument given.
      const std::string what = e.what();
      bool named = false;
      for (std::size_t i = 1; i < args.size() && !named; ++i) {
        const std::string a = args[i].c_str();  // what the program got: argv ends at a NUL
        named = what == "unknown flag " + a + " (try --help)" || what == a + " needs a value" ||
                (what.rfind(a + " ", 0) == 0 && !a.empty() &&
                 what.find(" (expected ", a.size()) != std::string::npos);
      }
      EXPECT_TRUE(named) << "round " << round << ": '" << what << "' names no argument given";
    }
  }
  EXPECT_GT(accepted, 50) << "both outcomes were drawn";
  EXPECT_GT(refused, 50);
}

// A writer killed at a random moment: the file under the final name is always a whole trace (the
// old one or the new one), never a partial one.
TEST(Fuzz, AKilledWriterLeavesTheFinalFileWhole) {
  std::mt19937 rng(seed());
  const std::string dir = ::testing::TempDir() + "simprof_kill_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/trace.json";
  Trace small;
  small.spans.push_back(Span::cpu_stage("old", 2, 0, 0, 1000, 1, 1));
  write_chrome_trace(small, path);
  Trace big;
  for (int i = 0; i < 200000; ++i)
    big.spans.push_back(Span::kernel("kernel_with_a_long_name_" + std::to_string(i), i * 10,
                                     i * 10 + 5, 0, 7, static_cast<std::uint64_t>(i)));
  std::uniform_int_distribution<int> delay_us(0, 40000);
  for (int round = 0; round < 8; ++round) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (;;) write_chrome_trace(big, path);  // until killed
    }
    ::usleep(static_cast<useconds_t>(delay_us(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    const std::string text = simprof::testing::slurp(path);
    EXPECT_TRUE(json::accept(text))
        << "round " << round << ": a partial file under the final name (" << text.size()
        << " bytes)";
  }
  std::filesystem::remove_all(dir);
}

// The stage table's shares, for random step and stage lengths: "step" is exactly 100 % and no
// stage inside it is above (a share computed as 100 * t / t once read 100.00000000000001).
TEST(Fuzz, StageSharesNeverExceedTheStep) {
  std::mt19937 rng(seed());
  std::uniform_int_distribution<std::int64_t> ns(1, 10'000'000);
  for (int round = 0; round < 200; ++round) {
    ManualClock mc;
    ProfilingOptions o = simprof::testing::quiet();
    o.stats_window = 37;
    StepProfiler prof(o, 64, mc.clock());
    for (int i = 0; i < 37; ++i) {
      auto step = prof.step();
      {
        auto s = prof.stage("physics");
        mc.advance_ns(ns(rng));
      }
      mc.advance_ns(ns(rng));
    }
    for (const StageRow& r : stage_rows(prof)) {
      if (r.name == "step") {
        EXPECT_EQ(r.share, 100.0) << "round " << round;
      } else if (r.name == "physics") {
        EXPECT_LE(r.share, 100.0) << "round " << round;
      }
    }
  }
}
