// SPDX-License-Identifier: MIT
#include "simprof/timers/timer_buffer.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "simprof/base/clock.hpp"

namespace simprof {

TimerLabels::TimerLabels(std::vector<std::string> names) : names_(std::move(names)) {
  if (names_.empty())
    throw std::invalid_argument("simprof: timer labels are empty (expected >= 1 row)");
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (names_[i].empty())
      throw std::invalid_argument(fmt::format("simprof: timer label of row {} is empty", i));
    for (std::size_t j = 0; j < i; ++j)
      if (names_[j] == names_[i])
        throw std::invalid_argument(
            fmt::format("simprof: timer label '{}' names rows {} and {}", names_[i], j, i));
  }
}

const std::string& TimerLabels::name(int row) const {
  if (row < 0 || row >= rows())
    throw std::out_of_range(fmt::format("simprof: timer row {} (expected 0..{})", row, rows() - 1));
  return names_[static_cast<std::size_t>(row)];
}

int TimerLabels::row(std::string_view name) const {
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  throw std::invalid_argument(
      fmt::format("simprof: no timer row named '{}' (rows: {})", name, fmt::join(names_, ", ")));
}

std::uint64_t TimerFrame::ticks(int row, int env) const {
  if (row < 0 || row >= rows)
    throw std::out_of_range(fmt::format("simprof: timer row {} (expected 0..{})", row, rows - 1));
  if (env < 0 || env >= n_envs)
    throw std::out_of_range(fmt::format("simprof: timer env {} (expected 0..{})", env, n_envs - 1));
  return data[static_cast<std::size_t>(row) * static_cast<std::size_t>(n_envs) +
              static_cast<std::size_t>(env)];
}

namespace {

int checked_envs(const char* owner, int n_envs) {
  if (n_envs < 1)
    throw std::invalid_argument(
        fmt::format("simprof: {} n_envs = {} (expected >= 1)", owner, n_envs));
  return n_envs;
}

}  // namespace

TimerLayout::TimerLayout(const char* owner, std::vector<std::string> labels, int n_envs,
                         TimerUnit unit)
    : labels_(std::move(labels)), n_envs_(checked_envs(owner, n_envs)), unit_(unit) {}

TimerBuffer::TimerBuffer(std::vector<std::string> labels, int n_envs, TimerUnit unit)
    : TimerLayout("timer buffer", std::move(labels), n_envs, unit), data_(elements(), 0) {
  set_cycles_per_second(tsc_available() ? tsc_frequency_hz() : 1e9);  // else steady-clock ns
}

void TimerBuffer::reset() noexcept { std::fill(data_.begin(), data_.end(), 0); }

}  // namespace simprof
