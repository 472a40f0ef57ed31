// SPDX-License-Identifier: MIT
#include "simprof/base/ranks.hpp"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace simprof {

namespace {

// One launcher's variables: rank, size, and where the local rank is (may be null).
struct Launcher {
  const char* rank;
  const char* size;
  const char* local;
  const char* name;
};
constexpr Launcher kLaunchers[] = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK/WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_*"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_*"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_*"},
};

int parse_int(const char* var, const char* value, const char* expected) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || errno == ERANGE || v < 0 || v > 1'000'000)
    throw std::invalid_argument(
        fmt::format("simprof: environment {}='{}' (expected {})", var, value, expected));
  return static_cast<int>(v);
}

}  // namespace

void RankInfo::validate() const {
  if (world_size < 1)
    throw std::invalid_argument(
        fmt::format("simprof: RankInfo.world_size = {} (expected >= 1)", world_size));
  if (rank < 0 || rank >= world_size)
    throw std::invalid_argument(fmt::format(
        "simprof: RankInfo.rank = {} (expected 0 <= rank < world_size = {})", rank, world_size));
  if (local_rank < 0)
    throw std::invalid_argument(
        fmt::format("simprof: RankInfo.local_rank = {} (expected >= 0)", local_rank));
}

RankInfo RankInfo::explicit_ranks(int rank, int world_size, int local_rank) {
  RankInfo r;
  r.rank = rank;
  r.world_size = world_size;
  r.local_rank = local_rank < 0 ? rank : local_rank;
  r.source = "explicit";
  r.validate();
  return r;
}

RankInfo RankInfo::from_env(const std::function<const char*(const char*)>& getenv) {
  auto get = [&](const char* name) -> const char* {
    const char* v = getenv ? getenv(name) : std::getenv(name);
    return v && *v ? v : nullptr;
  };
  for (const Launcher& l : kLaunchers) {
    const char* rank = get(l.rank);
    const char* size = get(l.size);
    if (!rank && !size) continue;
    if (!rank || !size)
      throw std::invalid_argument(
          fmt::format("simprof: environment {} is set but {} is not (a launcher sets both)",
                      rank ? l.rank : l.size, rank ? l.size : l.rank));
    RankInfo r;
    r.rank = parse_int(l.rank, rank, "a rank >= 0");
    r.world_size = parse_int(l.size, size, "a world size >= 1");
    const char* local = get(l.local);
    r.local_rank = local ? parse_int(l.local, local, "a local rank >= 0") : r.rank;
    r.source = l.name;
    if (r.world_size < 1)
      throw std::invalid_argument(
          fmt::format("simprof: environment {}='{}' (expected a world size >= 1)", l.size, size));
    if (r.rank >= r.world_size)
      throw std::invalid_argument(fmt::format(
          "simprof: environment {}='{}' with {}='{}' (expected a rank below the world size)",
          l.rank, rank, l.size, size));
    return r;
  }
  return RankInfo{};
}

}  // namespace simprof
