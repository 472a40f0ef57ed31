// SPDX-License-Identifier: MIT
#include "run_json.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "simprof/profiler/run_record.hpp"

namespace simprof::record {

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

std::string command_line(int argc, char** argv) {
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  return command;
}

Json provenance(const std::string& tool, const std::string& command) {
  return Json::parse(detail::provenance_json(tool, command));
}

Json record_head(const std::string& tool, const std::string& command, Json workload) {
  return {{"schema", kRunRecordSchema},
          {"provenance", provenance(tool, command)},
          {"workload", std::move(workload)}};
}

Json fps_json(const FpsTracker& fps) { return Json::parse(detail::fps_json(fps)); }

JsonFile::JsonFile(const std::string& path) : path_(path) {
  errno = 0;
  out_.open(path, std::ios::out | std::ios::trunc);
  if (!out_)
    throw std::runtime_error(fmt::format("--json {}: cannot open it for writing ({})", path,
                                         errno ? std::strerror(errno) : "unknown reason"));
}

void JsonFile::write(const Json& doc) {
  out_ << doc.dump(2) << '\n';
  out_.flush();
  if (!out_) throw std::runtime_error(fmt::format("--json {}: the write failed", path_));
}

Json stage_rows_json(const std::vector<StageRow>& rows) {
  return Json::parse(detail::stage_rows_json(rows));
}

}  // namespace simprof::record
