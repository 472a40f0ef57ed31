// SPDX-License-Identifier: MIT
// The soaks' one reading of host memory: this process's resident set, in KiB (/proc/self/statm).
#pragma once

#include <unistd.h>

#include <fstream>

namespace simprof::bench {

inline long resident_kb() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace simprof::bench
