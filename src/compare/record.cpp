// SPDX-License-Identifier: MIT
#include "record.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace simprof::compare {

namespace {

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw BadInput(fmt::format("{}: {}", name, what));
}

// The samples of `row` (a stage row or the fps object) under `key`: finite numbers.
std::vector<double> samples_of(const Json& row, const char* key, const std::string& name,
                               const std::string& where) {
  const auto it = row.find(key);
  if (it == row.end() || !it->is_array())
    bad(name, fmt::format("{} has no \"{}\" array (expected the per-step samples)", where, key));
  std::vector<double> out;
  out.reserve(it->size());
  for (const Json& v : *it) {
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      bad(name, fmt::format("{} has a sample {} (expected a finite number)", where, v.dump()));
    out.push_back(v.get<double>());
  }
  return out;
}

void add_rows(Run& run, const Json& rows, const std::string& clock, const std::string& name) {
  if (!rows.is_array()) bad(name, fmt::format("the {} stages are not an array", clock));
  for (const Json& row : rows) {
    if (!row.is_object() || !row.contains("stage") || !row["stage"].is_string())
      bad(name, fmt::format("a {} stage row has no \"stage\" name", clock));
    Series s;
    // A stage timed on an engine's own clock (set_stage_clock) says so.
    const auto own = row.find("clock");
    s.clock =
        clock == "host" && own != row.end() && own->is_string() ? own->get<std::string>() : clock;
    s.name = row["stage"].get<std::string>();
    s.depth = row.value("depth", 0);
    s.samples = samples_of(row, "samples_s", name, fmt::format("{} stage {}", clock, s.name));
    run.series.push_back(std::move(s));
  }
}

std::string label_of(const Json& workload) {
  std::string out;
  for (const auto& [key, value] : workload.items())
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", key,
                       value.is_string() ? value.get<std::string>() : value.dump());
  return out;
}

Run parse_run(const Json& j, const std::string& name) {
  Run run;
  if (!j.is_object()) bad(name, "a run is not an object");
  run.workload = j.value("workload", Json::object());
  if (!run.workload.is_object()) bad(name, "\"workload\" is not an object");
  run.label = label_of(run.workload);
  if (!j.contains("stages")) bad(name, "no \"stages\" (expected the host stage rows)");
  add_rows(run, j["stages"], "host", name);
  if (const auto d = j.find("device"); d != j.end() && d->is_object() && d->contains("stages")) {
    add_rows(run, (*d)["stages"], "device", name);
    if (const auto l = d->find("launches"); l != d->end() && l->is_string())
      run.launches = l->get<std::string>();
  }
  if (const auto f = j.find("fps"); f != j.end() && f->is_object()) {
    Series s;
    s.clock = "fps";
    const auto on = f->find("clock");
    s.name = on != f->end() && on->is_string() && on->get<std::string>() != "host"
                 ? "rate (" + on->get<std::string>() + " clock)"
                 : "rate";
    s.samples = samples_of(*f, "rates_per_env", name, "the FPS line");
    s.larger_is_slower = false;
    if (!s.samples.empty()) run.series.push_back(std::move(s));
  }
  return run;
}

// A provenance field as text, whatever its JSON type ("unknown" where it is missing).
std::string text_of(const Json& provenance, const char* key) {
  const auto it = provenance.find(key);
  if (it == provenance.end() || it->is_null()) return "unknown";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string gpus_of(const Json& provenance) {
  const auto it = provenance.find("gpus");
  if (it == provenance.end() || !it->is_array()) return text_of(provenance, "gpus");
  if (it->empty()) return "none";
  std::string out;
  for (const Json& g : *it)
    out += (out.empty() ? "" : ", ") + (g.is_string() ? g.get<std::string>() : g.dump());
  return out;
}

}  // namespace

Record parse_record(const std::string& text, const std::string& name) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    bad(name, fmt::format("not JSON ({})", e.what()));
  }
  if (!doc.is_object() || !doc.contains("schema"))
    bad(name, fmt::format("not a simprof run record (no \"schema\"; expected \"{}\")", kSchema));
  if (doc["schema"] != kSchema)
    bad(name, fmt::format("schema {} (expected \"{}\": write it with this simprof)",
                          doc["schema"].dump(), kSchema));
  Record r;
  r.name = name;
  r.provenance = doc.value("provenance", Json::object());
  if (!r.provenance.is_object()) bad(name, "\"provenance\" is not an object");
  try {
    if (const auto runs = doc.find("runs"); runs != doc.end()) {
      if (!runs->is_array() || runs->empty()) bad(name, "\"runs\" is not a non-empty array");
      for (const Json& j : *runs) r.runs.push_back(parse_run(j, name));
    } else {
      r.runs.push_back(parse_run(doc, name));
    }
  } catch (const Json::exception& e) {  // a field of the wrong type
    bad(name, fmt::format("malformed ({})", e.what()));
  }
  return r;
}

Record load_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) bad(path, "cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_record(text.str(), path);
}

bool has_workload(const Record& r, const Json& workload) {
  for (const Run& run : r.runs)
    if (run.workload == workload) return true;
  return false;
}

// Device rows seen through the launch hook and through CUPTI are not one measurement: said for
// the first pair of runs compared (one each, or of one workload) that says both, differently.
std::string launches_differ(const Record& base, const Record& changed) {
  const bool single = base.runs.size() == 1 && changed.runs.size() == 1;
  for (const Run& b : base.runs)
    for (const Run& c : changed.runs)
      if ((single || b.workload == c.workload) && !b.launches.empty() && !c.launches.empty() &&
          b.launches != c.launches)
        return fmt::format(
            "device launches seen through {} vs {} (simprof run --gpu-launches: the same in both)",
            b.launches, c.launches);
  return "";
}

std::vector<std::string> not_comparable(const Record& base, const Record& changed) {
  std::vector<std::string> out;
  if (gpus_of(base.provenance) != gpus_of(changed.provenance))
    out.push_back(
        fmt::format("GPUs: {} vs {}", gpus_of(base.provenance), gpus_of(changed.provenance)));
  const std::string bt = text_of(base.provenance, "build_type");
  const std::string nt = text_of(changed.provenance, "build_type");
  if (bt != nt) out.push_back(fmt::format("build type: {} vs {}", bt, nt));
  if (const std::string l = launches_differ(base, changed); !l.empty()) out.push_back(l);
  if (base.runs.size() == 1 && changed.runs.size() == 1) {
    if (base.runs[0].workload != changed.runs[0].workload)
      out.push_back(
          fmt::format("workload: {{{}}} vs {{{}}}", base.runs[0].label, changed.runs[0].label));
    return out;
  }
  bool shared = false;
  for (const Run& run : base.runs) shared = shared || has_workload(changed, run.workload);
  if (!shared) out.push_back("workload: no run of the one record has a workload of the other");
  return out;
}

}  // namespace simprof::compare
