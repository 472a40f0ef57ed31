// SPDX-License-Identifier: MIT
#include "simprof/trace/schedule.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace simprof {

std::string_view to_string(ScheduleAction a) noexcept {
  switch (a) {
    case ScheduleAction::kNone:
      return "none";
    case ScheduleAction::kWarmup:
      return "warmup";
    case ScheduleAction::kRecord:
      return "record";
    case ScheduleAction::kRecordAndSave:
      return "record_and_save";
  }
  return "?";
}

void Schedule::validate() const {
  auto bad = [](const char* f, std::int64_t v, const char* want) {
    throw std::invalid_argument(fmt::format("simprof: Schedule.{} = {} (expected {})", f, v, want));
  };
  if (wait < 0) bad("wait", wait, ">= 0");
  if (warmup < 0) bad("warmup", warmup, ">= 0");
  if (active < 1) bad("active", active, ">= 1");
  if (repeat < 0) bad("repeat", repeat, ">= 0 (0 repeats forever)");
  if (skip_first < 0) bad("skip_first", skip_first, ">= 0");
}

ScheduleAction Schedule::action(std::int64_t step) const noexcept {
  if (step < skip_first) return ScheduleAction::kNone;
  step -= skip_first;
  const std::int64_t cycle = wait + warmup + active;
  if (repeat > 0 && step / cycle >= repeat) return ScheduleAction::kNone;
  const std::int64_t m = step % cycle;
  if (m < wait) return ScheduleAction::kNone;
  if (m < wait + warmup) return ScheduleAction::kWarmup;
  return m < cycle - 1 ? ScheduleAction::kRecord : ScheduleAction::kRecordAndSave;
}

}  // namespace simprof
