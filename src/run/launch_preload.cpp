// SPDX-License-Identifier: MIT
#include "launch_preload.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace simprof::run {

namespace {

// `program` as exec would find it: itself where it names a directory, else the first on PATH.
std::string on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string p = (dir.empty() ? "." : dir) + "/" + program;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

// The sanitizer runtime named in `text` that must be the first library loaded (empty: none).
std::string runtime_in(const std::string& text) {
  for (const char* runtime : {"libasan.so", "libtsan.so", "libhwasan.so"})
    if (text.find(runtime) != std::string::npos) return runtime;
  return "";
}

}  // namespace

std::string first_loaded_runtime(const std::string& program) {
  std::ifstream f(on_path(program), std::ios::binary);
  std::string head(std::size_t{4} << 20, '\0');  // the dynamic string table is near the start
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(f.gcount()));
  if (head.compare(0, 4,
                   "\x7f"
                   "ELF") != 0)
    return "";
  return runtime_in(head);
}

bool set_launches(const RunArgs& a, const std::string& tool) {
  using cuda::LaunchSource;
  if (a.gpu == 0) return true;
  const std::string hook = tool.substr(0, tool.rfind('/') + 1) + "libsimprof_launch_hook.so";
  std::string unused;  // auto: why the hook is not preloaded
  if (a.launches == LaunchSource::kAuto) {
#if !defined(__x86_64__)
    unused = "the launch hook works on x86-64 only";
#endif
    if (unused.empty() && !a.command.empty())
      if (const std::string rt = first_loaded_runtime(a.command[0]); !rt.empty())
        unused = a.command[0] + " links " + rt + ", which must be the first library loaded";
    if (unused.empty() && access(hook.c_str(), R_OK) != 0)
      unused = "the launch hook is not beside the tool (" + hook + ")";
  } else if (a.launches == LaunchSource::kHook && access(hook.c_str(), R_OK) != 0) {
    std::fprintf(stderr,
                 "simprof run: --gpu-launches hook: cannot find %s (it is built with the CUDA "
                 "backend)\n",
                 hook.c_str());
    return false;
  }
  const bool preload = a.launches != LaunchSource::kCupti && unused.empty();
  setenv("SIMPROF_RUN_GPU_LAUNCHES", launches_name(preload ? a.launches : LaunchSource::kCupti), 1);
  if (unused.empty())
    unsetenv("SIMPROF_RUN_HOOK_UNUSED");
  else
    setenv("SIMPROF_RUN_HOOK_UNUSED", unused.c_str(), 1);
  if (!preload) return true;
  // In front of the program's own, unless those begin with a sanitizer's runtime.
  const char* own = std::getenv("LD_PRELOAD");
  const std::string old = own != nullptr ? own : "";
  const std::string first = old.substr(0, old.find_first_of(": "));
  const bool runtime_first = !runtime_in(first.substr(first.rfind('/') + 1)).empty();
  setenv("LD_PRELOAD",
         (old.empty()     ? hook
          : runtime_first ? old + ":" + hook
                          : hook + ":" + old)
             .c_str(),
         1);
  return true;
}

}  // namespace simprof::run
