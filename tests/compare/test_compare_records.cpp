// SPDX-License-Identifier: MIT
// `simprof compare` end to end on run records written by the library (write_run_record) from steps
// on an injected clock: a known 3 % slowdown of one stage is found and nothing else is flagged,
// noise is not, records that differ in what matters are refused, and every bad input is named.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compare_cli.hpp"
#include "outcome.hpp"
#include "record.hpp"
#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/run_record.hpp"

namespace {

using simprof::compare::compare_records;
using simprof::compare::CompareOptions;
using simprof::compare::Json;
using simprof::compare::Outcome;
using simprof::compare::parse_record;
using simprof::compare::Verdict;

struct Sim {
  std::uint64_t seed = 1;
  double contacts = 1.0;  // the factor physics/contacts takes longer by
  int steps = 400;
  std::int64_t n_envs = 4096;
  bool video = false;  // a stage the other run lacks
  // With device: rows on the GPU's clock too (RunRecordInfo::device_stages), one a sampled step
  // in 16: physics/contacts 80 us times this, physics 250 us plus it.
  bool device = false;
  double device_contacts = 1.0;
  simprof::RunRecordInfo info;
};

// Device rows as cuda::device_record_rows() makes them: the samples and their statistics.
std::vector<simprof::StageRow> device_rows(const Sim& r, std::mt19937_64& rng) {
  std::normal_distribution<double> spread(1.0, 0.01);
  simprof::StageRow physics, contacts;
  physics.name = "physics";
  contacts.name = "physics/contacts";
  contacts.depth = 1;
  for (int i = 0; i < r.steps; i += 16) {
    contacts.samples.push_back(80e-6 * r.device_contacts * spread(rng));
    physics.samples.push_back(170e-6 * spread(rng) + contacts.samples.back());
  }
  physics.stats = simprof::summarize(physics.samples);
  contacts.stats = simprof::summarize(contacts.samples);
  return {physics, contacts};
}

// Steps on a manual clock: physics (contacts 60 us, solver 140 us), sensors 100 us, 20 us between
// steps; each time with a 1 % normal spread and one step in 20 taking 30 % longer.
std::string record(const Sim& r) {
  simprof::ManualClock mc;
  simprof::ProfilingOptions o;
  o.show_fps = false;
  o.stats_window = 100000;
  o.fps_sample_interval = std::chrono::milliseconds(2);
  simprof::StepProfiler prof(o, r.n_envs, mc.clock());
  std::mt19937_64 rng(r.seed);
  std::normal_distribution<double> spread(1.0, 0.01);
  std::bernoulli_distribution tail(0.05);
  auto pass = [&](double us) { mc.advance(us * 1e-6 * spread(rng) * (tail(rng) ? 1.3 : 1.0)); };
  for (int i = 0; i < r.steps; ++i) {
    {
      auto step = prof.step();
      {
        auto physics = prof.stage("physics");
        {
          auto contacts = prof.stage("physics/contacts");
          pass(60 * r.contacts);
        }
        auto solver = prof.stage("physics/solver");
        pass(140);
      }
      {
        auto sensors = prof.stage("sensors");
        pass(100);
      }
      if (r.video) {
        auto video = prof.stage("video");
        pass(10);
      }
    }
    pass(20);
  }
  simprof::RunRecordInfo info = r.info;
  if (r.device) info.device_stages = device_rows(r, rng);
  return simprof::run_record_json(prof, info);
}

Outcome compare(const Sim& base, const Sim& changed, const CompareOptions& o = {}) {
  return compare_records(parse_record(record(base), "base.json"),
                         parse_record(record(changed), "new.json"), o);
}

const simprof::compare::Row* row(const Outcome& o, const std::string& clock,
                                 const std::string& name) {
  for (const auto& run : o.runs)
    for (const auto& r : run.rows)
      if (r.clock == clock && r.name == name) return &r;
  return nullptr;
}

// Only `clock`'s `name` is slower in `o` (every other row no change), by about 3 %: its row.
const simprof::compare::Row* only_slower(const Outcome& o, const std::string& clock,
                                         const std::string& name) {
  for (const auto& r : o.runs.at(0).rows) {
    const bool it = r.clock == clock && r.name == name;
    EXPECT_EQ(r.verdict(), it ? Verdict::kSlower : Verdict::kNoChange)
        << r.clock << " " << r.name << " " << r.result.change.change << " p " << r.result.test.p;
  }
  const auto* r = row(o, clock, name);
  EXPECT_NE(r, nullptr) << clock << " " << name;
  if (r != nullptr) {
    EXPECT_NEAR(r->result.change.change, 0.03, 0.006);
  }
  return r;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "compare");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return simprof::compare::compare_main(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST(RunRecord, HoldsTheSchemaWorkloadSamplesAndFpsRates) {
  Sim r;
  r.steps = 50;
  r.info.tool = "test";
  r.info.workload = {{"scene", "spheres"}};
  const Json doc = Json::parse(record(r));
  EXPECT_EQ(doc["schema"], simprof::kRunRecordSchema);
  EXPECT_EQ(doc["provenance"]["tool"], "test");
  EXPECT_TRUE(doc["provenance"]["gpus"].is_array());
  EXPECT_TRUE(doc["provenance"]["gpu_clocks_mhz"].is_array());
  EXPECT_EQ(doc["workload"], Json({{"n_envs", 4096}, {"scene", "spheres"}}));
  ASSERT_EQ(doc["stages"][0]["stage"], "physics");
  EXPECT_EQ(doc["stages"][0]["samples_s"].size(), 50u);
  EXPECT_EQ(doc["stages"][1]["stage"], "physics/contacts");
  EXPECT_NEAR(doc["stages"][1]["samples_s"][0].get<double>(), 60e-6, 60e-6 * 0.35);
  // 50 steps of about 340 us: 17 ms, 7 or 8 full samples of 2 ms (no flush: no tail).
  EXPECT_EQ(doc["fps"]["rates_per_env"].size(), doc["fps"]["samples"].get<std::size_t>());
  EXPECT_GE(doc["fps"]["rates_per_env"].size(), 7u);
  EXPECT_NEAR(doc["fps"]["rates_per_env"][3].get<double>(), 1 / 340e-6, 1 / 340e-6 * 0.2);
}

TEST(RunRecord, KeepsAtMost4096SamplesEvenlySpaced) {
  simprof::ManualClock mc;
  simprof::ProfilingOptions o;
  o.show_fps = false;
  o.stats_window = 10000;
  simprof::StepProfiler prof(o, 0, mc.clock());
  for (int i = 1; i <= 8192; ++i) {
    auto step = prof.step();
    auto s = prof.stage("physics");
    mc.advance_ns(i);  // step i's physics takes i ns: a sample's value is its step
  }
  const Json doc = Json::parse(simprof::run_record_json(prof));
  const Json& samples = doc["stages"][0]["samples_s"];
  ASSERT_EQ(samples.size(), simprof::kRunRecordSamples);
  // The window holds all 8,192 steps; every second one is kept, from the first.
  EXPECT_DOUBLE_EQ(samples[0].get<double>(), 1e-9);
  EXPECT_DOUBLE_EQ(samples[1].get<double>(), 3e-9);
  EXPECT_DOUBLE_EQ(samples[4095].get<double>(), 8191e-9);
}

TEST(RunRecord, RefusesAWorkloadKeyItWritesItselfOrTwice) {
  simprof::ManualClock mc;
  simprof::ProfilingOptions o;
  o.stats_window = 10;
  simprof::StepProfiler prof(o, 0, mc.clock());
  simprof::RunRecordInfo info;
  info.workload = {{"n_envs", "3"}};
  EXPECT_THROW(simprof::run_record_json(prof, info), std::invalid_argument);
  info.workload = {{"scene", "a"}, {"scene", "b"}};
  EXPECT_THROW(simprof::run_record_json(prof, info), std::invalid_argument);
  simprof::ProfilingOptions none;
  simprof::StepProfiler no_stats(none, 0, mc.clock());
  EXPECT_THROW(simprof::run_record_json(no_stats), std::invalid_argument);
}

TEST(CompareRecords, AThreePercentSlowerStageIsFoundAndNothingElseIsFlagged) {
  Sim base, slower;
  slower.seed = 2;
  slower.contacts = 1.03;
  const Outcome o = compare(base, slower);
  ASSERT_TRUE(o.not_comparable.empty());
  ASSERT_TRUE(o.bad_input.empty()) << o.bad_input[0];
  ASSERT_EQ(o.runs.size(), 1u);
  // host: physics, contacts, solver, sensors, step, period; and the FPS rate.
  EXPECT_EQ(o.runs[0].rows.size(), 7u);
  const auto* c = only_slower(o, "host", "physics/contacts");
  ASSERT_NE(c, nullptr);
  // The interval holds the change and lies past the threshold: the verdict is not a near thing.
  EXPECT_LT(c->result.change.low, c->result.change.change);
  EXPECT_GT(c->result.change.high, c->result.change.change);
  EXPECT_GT(c->result.change.low, 0.02);
  EXPECT_EQ(o.status(), 1);
  // The rate is a rate: the slower run's is lower, and "fps rate" reads a drop, not a rise.
  const auto* rate = row(o, "fps", "rate");
  ASSERT_NE(rate, nullptr);
  EXPECT_FALSE(rate->larger_is_slower);
  EXPECT_LT(rate->result.change.change, 0);
  const std::string table = simprof::compare::format_outcome(o, {});
  EXPECT_NE(table.find("physics/contacts"), std::string::npos);
  EXPECT_NE(table.find("exit 1"), std::string::npos);
  // The other way round it is faster, and CI passes.
  const Outcome back = compare(slower, base);
  EXPECT_EQ(row(back, "host", "physics/contacts")->verdict(), Verdict::kFaster);
  EXPECT_EQ(back.status(), 0);
}

// The library's writer with device rows: a "device" object whose stages compare like the host's.
TEST(CompareRecords, DeviceStagesFromTheWriterAreComparedOnTheirOwnClock) {
  Sim base, slower;
  base.device = slower.device = true;
  base.steps = slower.steps = 3200;  // 200 sampled steps
  slower.seed = 2;
  slower.device_contacts = 1.03;
  const Json doc = Json::parse(record(base));
  EXPECT_EQ(doc["device"]["clock"], "GPU");
  ASSERT_EQ(doc["device"]["stages"].size(), 2u);
  EXPECT_EQ(doc["device"]["stages"][1]["stage"], "physics/contacts");
  EXPECT_EQ(doc["device"]["stages"][1]["samples_s"].size(), 200u);
  const Outcome o = compare(base, slower);
  ASSERT_TRUE(o.bad_input.empty()) << o.bad_input[0];
  ASSERT_EQ(o.runs.size(), 1u);
  EXPECT_EQ(o.runs[0].rows.size(), 9u);  // 7 host and FPS rows, 2 device rows
  only_slower(o, "device", "physics/contacts");
  EXPECT_EQ(o.status(), 1);
  // Without device rows there is no "device" object at all.
  EXPECT_FALSE(Json::parse(record(Sim{})).contains("device"));
}

TEST(CompareRecords, APastThresholdSetsWhatIsReported) {
  Sim base, slower;
  slower.seed = 2;
  slower.contacts = 1.03;
  CompareOptions loose;
  loose.threshold = 0.05;
  EXPECT_EQ(compare(base, slower, loose).status(), 0);  // significant, but under 5 %
}

TEST(CompareRecords, NoiseFlagsLessThanAlphaAndNothingPastTheThreshold) {
  int tests = 0, significant = 0, flagged = 0;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    Sim a, b;
    a.seed = seed;
    b.seed = seed + 1000;
    a.steps = b.steps = 200;
    const Outcome o = compare(a, b);
    for (const auto& r : o.runs.at(0).rows) {
      ++tests;
      significant += r.result.test.p < 0.05;
      flagged += r.verdict() != Verdict::kNoChange;
    }
  }
  EXPECT_EQ(tests, 30 * 7);
  EXPECT_LT(significant, tests * 0.05) << significant << " of " << tests;
  EXPECT_EQ(flagged, 0);
}

TEST(CompareRecords, RecordsThatDifferInWhatMattersAreNotComparable) {
  Sim base, other_envs, other_scene;
  other_envs.n_envs = 1024;
  other_scene.info.workload = {{"scene", "go2"}};
  const Outcome envs = compare(base, other_envs);
  ASSERT_EQ(envs.not_comparable.size(), 1u);
  EXPECT_NE(envs.not_comparable[0].find("n_envs=4096"), std::string::npos);
  EXPECT_NE(envs.not_comparable[0].find("n_envs=1024"), std::string::npos);
  EXPECT_EQ(envs.status(), 2);
  EXPECT_TRUE(envs.runs.empty());
  EXPECT_EQ(compare(base, other_scene).status(), 2);

  Json debug = Json::parse(record(base));
  debug["provenance"]["build_type"] = "Debug";
  Json gpu = Json::parse(record(base));
  gpu["provenance"]["gpus"] = {"NVIDIA H200"};
  Json release = Json::parse(record(base));
  release["provenance"]["build_type"] = "Release";
  release["provenance"]["gpus"] = Json::array();
  const auto base_rec = parse_record(release.dump(), "base.json");
  const Outcome build = compare_records(base_rec, parse_record(debug.dump(), "new.json"), {});
  ASSERT_EQ(build.not_comparable.size(), 1u);
  EXPECT_EQ(build.not_comparable[0], "build type: Release vs Debug");
  debug["provenance"]["build_type"] = "Release";
  gpu["provenance"]["build_type"] = "Release";
  const Outcome gpus = compare_records(base_rec, parse_record(gpu.dump(), "new.json"), {});
  ASSERT_EQ(gpus.not_comparable.size(), 1u);
  EXPECT_EQ(gpus.not_comparable[0], "GPUs: none vs NVIDIA H200");

  // Device rows seen through the launch hook and through CUPTI; a record that does not say (one
  // written before `launches` existed) is compared.
  Json hook = release, cupti = release, unsaid = release;
  hook["device"] = {{"stages", Json::array()}, {"launches", "hook"}};
  cupti["device"] = {{"stages", Json::array()}, {"launches", "cupti"}};
  unsaid["device"] = {{"stages", Json::array()}};
  const Outcome seen = compare_records(parse_record(hook.dump(), "base.json"),
                                       parse_record(cupti.dump(), "new.json"), {});
  ASSERT_EQ(seen.not_comparable.size(), 1u);
  EXPECT_EQ(seen.not_comparable[0],
            "device launches seen through hook vs cupti (simprof run --gpu-launches: the same in "
            "both)");
  EXPECT_TRUE(compare_records(parse_record(hook.dump(), "base.json"),
                              parse_record(unsaid.dump(), "new.json"), {})
                  .not_comparable.empty());
}

TEST(CompareRecords, AStageInOneRunOnlyIsNamed) {
  Sim base, with_video;
  with_video.video = true;
  const Outcome o = compare(base, with_video);
  ASSERT_EQ(o.bad_input.size(), 1u);
  EXPECT_EQ(o.bad_input[0], "host video is in the new run only (n_envs=4096)");
  EXPECT_EQ(o.status(), 2);
  EXPECT_EQ(o.runs.at(0).rows.size(), 7u);  // the others are still compared
}

TEST(CompareRecords, BadFilesAreNamedNotThrownAtTheUser) {
  using simprof::compare::BadInput;
  auto says = [](const std::string& text, const std::string& what) {
    try {
      parse_record(text, "x.json");
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("x.json: ", 0), 0u) << e.what();
      return;
    }
    ADD_FAILURE() << "no BadInput for " << text;
  };
  says("not json", "not JSON");
  says("{\"traceEvents\": []}", "not a simprof run record");
  says("{\"schema\": \"simprof.run/1\", \"stages\": []}", "schema \"simprof.run/1\"");
  says("{\"schema\": \"simprof.run/2\"}", "no \"stages\"");
  says("{\"schema\": \"simprof.run/2\", \"stages\": [{\"stage\": \"step\"}]}",
       "host stage step has no \"samples_s\"");
  says(
      "{\"schema\": \"simprof.run/2\", \"stages\": [{\"stage\": \"step\", "
      "\"samples_s\": [1, \"a\"]}]}",
      "a sample \"a\"");
  says("{\"schema\": \"simprof.run/2\", \"runs\": []}", "\"runs\" is not a non-empty array");
  EXPECT_THROW(simprof::compare::load_record(testing::TempDir() + "missing.json"), BadInput);
}

TEST(CompareRecords, TooFewSamplesAreNamed) {
  Sim one, base;
  one.steps = 1;
  base.steps = 1;
  const Outcome o = compare(base, one);
  ASSERT_FALSE(o.bad_input.empty());
  EXPECT_NE(o.bad_input[0].find("expected at least 2"), std::string::npos) << o.bad_input[0];
  EXPECT_EQ(o.status(), 2);
}

TEST(CompareRecords, AShortRunsMissingFpsRatesAreANoteNotAFailure) {
  Sim base, shorter;
  shorter.seed = 2;
  shorter.steps = 5;  // 1.7 ms: no full FPS sample of 2 ms
  const Outcome o = compare(base, shorter);
  EXPECT_TRUE(o.bad_input.empty());
  ASSERT_EQ(o.notes.size(), 1u);
  EXPECT_EQ(o.notes[0], "fps rate is in the base run only (n_envs=4096)");
  EXPECT_EQ(o.status(), 0);
}

TEST(CompareRecords, DeviceStagesEngineClocksAndRunsArePairedByName) {
  Sim second;
  second.seed = 2;
  Json a = Json::parse(record(Sim())), b = Json::parse(record(second));
  for (Json* d : {&a, &b}) {
    (*d)["device"] = {{"stages", (*d)["stages"]}};  // the same rows, as a GPU clock's
    (*d)["stages"][1]["clock"] = "mjcb_time";       // contacts timed by the engine
    (*d)["fps"]["clock"] = "GPU";
  }
  const Outcome o = compare_records(parse_record(a.dump(), "a"), parse_record(b.dump(), "b"), {});
  ASSERT_TRUE(o.bad_input.empty()) << o.bad_input[0];
  EXPECT_NE(row(o, "device", "physics/contacts"), nullptr);
  EXPECT_NE(row(o, "mjcb_time", "physics/contacts"), nullptr);
  EXPECT_NE(row(o, "fps", "rate (GPU clock)"), nullptr);
  EXPECT_EQ(o.runs.at(0).rows.size(), 13u);  // 6 host, 6 device, the rate

  // Several runs in a record (speed_benchmark's): paired by workload; the unpaired are named.
  Json many_a = {
      {"schema", "simprof.run/2"}, {"provenance", a["provenance"]}, {"runs", Json::array()}};
  Json many_b = many_a;
  for (const char* mode : {"eager", "graph"}) {
    Json run = a;
    run["workload"]["mode"] = mode;
    many_a["runs"].push_back(run);
  }
  Json run = b;
  run["workload"]["mode"] = "graph";
  many_b["runs"].push_back(run);
  run["workload"]["mode"] = "threads";
  many_b["runs"].push_back(run);
  const Outcome m =
      compare_records(parse_record(many_a.dump(), "a"), parse_record(many_b.dump(), "b"), {});
  EXPECT_TRUE(m.not_comparable.empty());
  ASSERT_EQ(m.runs.size(), 1u);
  EXPECT_EQ(m.runs[0].label, "n_envs=4096, mode=graph");
  ASSERT_EQ(m.bad_input.size(), 2u);
  EXPECT_EQ(m.bad_input[0], "workload {n_envs=4096, mode=eager} is in the base record only");
  EXPECT_EQ(m.bad_input[1], "workload {n_envs=4096, mode=threads} is in the new record only");
  EXPECT_EQ(m.status(), 2);
}

TEST(CompareRecords, MalformedProvenanceIsNamedNotACrash) {
  Json odd = Json::parse(record(Sim()));
  odd["provenance"]["build_type"] = nullptr;
  odd["provenance"]["gpus"] = {1};
  const auto base = parse_record(record(Sim()), "a");
  const Outcome o = compare_records(base, parse_record(odd.dump(), "b"), {});
  ASSERT_EQ(o.not_comparable.size(), 2u);
  EXPECT_EQ(o.not_comparable[0], "GPUs: none vs 1");
  EXPECT_NE(o.not_comparable[1].find("vs unknown"), std::string::npos) << o.not_comparable[1];
  odd["provenance"] = Json::array();
  EXPECT_THROW(parse_record(odd.dump(), "b"), simprof::compare::BadInput);
}

TEST(CompareCommand, ExitStatusTableJsonAndPicture) {
  Sim base, slower, same;
  slower.seed = 2;
  slower.contacts = 1.03;
  same.seed = 3;
  const std::string b = write_temp("b.json", record(base));
  const std::string s = write_temp("s.json", record(slower));
  const std::string n = write_temp("n.json", record(same));
  EXPECT_EQ(run_cli({b, n}), 0);
  EXPECT_EQ(run_cli({b, s}), 1);
  const std::string json = testing::TempDir() + "out.json", svg = testing::TempDir() + "out.svg";
  EXPECT_EQ(run_cli({"--json", json, "--svg", svg, b, n, s}), 1);  // the worst of both
  const Json out = Json::parse(read_file(json));
  EXPECT_EQ(out["status"], 1);
  ASSERT_EQ(out["comparisons"].size(), 2u);
  EXPECT_EQ(out["comparisons"][0]["status"], 0);
  EXPECT_EQ(out["comparisons"][1]["status"], 1);
  const std::string pic = read_file(svg);
  EXPECT_EQ(pic.rfind("<svg", 0), 0u);
  EXPECT_NE(pic.find("physics/contacts"), std::string::npos);
  EXPECT_NE(pic.find("slower"), std::string::npos);
  EXPECT_NE(pic.find("</svg>"), std::string::npos);
  // Bad input and refused lines: 2.
  EXPECT_EQ(run_cli({b, write_temp("bad.json", "{}")}), 2);
  EXPECT_EQ(run_cli({b}), 2);
  EXPECT_EQ(run_cli({"--threshold", "-1", b, n}), 2);
  EXPECT_EQ(run_cli({"--alpha", "1", b, n}), 2);
  EXPECT_EQ(run_cli({"--bogus", b, n}), 2);
  EXPECT_EQ(run_cli({"--help"}), 0);
  EXPECT_EQ(run_cli({"--json", "-", "--svg", "-", b, n}), 2);
  Sim other;
  other.n_envs = 64;
  EXPECT_EQ(run_cli({b, write_temp("o.json", record(other))}), 2);  // not comparable
  EXPECT_EQ(run_cli({"--threshold", "5", b, s}), 0);
}

TEST(CompareCommand, RefusedLinesNameTheValue) {
  simprof::compare::CompareArgs a;
  std::string error;
  const char* threshold[] = {"compare", "--threshold", "two", "a", "b"};
  EXPECT_FALSE(simprof::compare::parse_compare_args(5, threshold, a, error));
  EXPECT_NE(error.find("--threshold 'two'"), std::string::npos) << error;
  const char* one[] = {"compare", "a.json"};
  EXPECT_FALSE(simprof::compare::parse_compare_args(2, one, a, error));
  EXPECT_NE(error.find("1 run record given"), std::string::npos) << error;
  const char* ok[] = {"compare", "--threshold", "3.5", "--alpha", "0.01", "a", "b", "c"};
  simprof::compare::CompareArgs good;
  ASSERT_TRUE(simprof::compare::parse_compare_args(8, ok, good, error)) << error;
  EXPECT_DOUBLE_EQ(good.options.threshold, 0.035);
  EXPECT_DOUBLE_EQ(good.options.alpha, 0.01);
  EXPECT_EQ(good.files.size(), 3u);
}
