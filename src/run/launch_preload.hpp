// SPDX-License-Identifier: MIT
// `simprof run --gpu-launches`: whether libsimprof_launch_hook.so is preloaded into the program,
// and what the tool is told (SIMPROF_RUN_GPU_LAUNCHES; SIMPROF_RUN_HOOK_UNUSED: why auto chose
// CUPTI before the program started). Private to src/run.
#pragma once

#include <string>

#include "run_args.hpp"

namespace simprof::run {

/// The sanitizer runtime `program` (a path, or a name found on PATH) links that must be the first
/// library loaded ("libasan.so", "libtsan.so", "libhwasan.so"); empty for none, or a script.
std::string first_loaded_runtime(const std::string& program);

/// Sets the program's environment for `a`'s launches, the hook beside `tool`. False, said on
/// stderr, where --gpu-launches hook cannot be had (the hook not built).
bool set_launches(const RunArgs& a, const std::string& tool);

}  // namespace simprof::run
