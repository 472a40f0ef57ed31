// SPDX-License-Identifier: MIT
#include "simprof/base/io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace simprof {

void write_file_atomic(const std::string& path, std::string_view text) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw std::runtime_error(
        fmt::format("simprof: cannot write '{}': {}", tmp, std::strerror(errno)));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    throw std::runtime_error(
        fmt::format("simprof: cannot write '{}': {}", tmp, std::strerror(err)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(
        fmt::format("simprof: cannot rename '{}' to '{}': {}", tmp, path, std::strerror(e)));
  }
}

}  // namespace simprof
