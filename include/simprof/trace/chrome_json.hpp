// SPDX-License-Identifier: MIT
// The Chrome Trace Event JSON writer: a Trace of typed spans as the JSON that Perfetto,
// chrome://tracing and the tools that read PyTorch/Kineto traces load.
//
/* clang-format off */
//   simprof::write_chrome_trace(trace, "step.json");   // atomic: a temporary file, then rename
/* clang-format on */
//
// Kineto's header comes first (schemaVersion, deviceProperties, distributedInfo with the rank
// written "rank": R as HTA's raw-text regex needs, the CUDA versions, baseTimeNanoseconds), then
// the events. Each span kind has its Kineto category (cpu_op, user_annotation, cuda_runtime,
// cuda_driver, kernel, gpu_memcpy, gpu_memset, cuda_sync, overhead, ac2g flows) and its typed
// fields as args. Host spans go on (pid, tid) and never carry a stream; device spans (kernels,
// copies, memsets, syncs) on pid = device, tid = stream. Process and thread names, labels and sort
// indices are derived from the spans as Kineto writes them. Times are printed as microseconds with
// three decimals, exactly (integer arithmetic), as Kineto does: ts = (ns + wall offset - base) /
// 1000.
#pragma once

#include <string>
#include <string_view>

#include "simprof/base/io.hpp"  // json_escape
#include "simprof/trace/span.hpp"

namespace simprof {

/// The trace as Chrome Trace Event JSON: {Kineto's header, "traceEvents": [...],
/// "otherData": {...}}. Metadata events first, then by time (stable: equal times keep the spans'
/// order; a flow's end follows the spans before it).
std::string to_chrome_json(const Trace& trace);

/// Writes to_chrome_json() to `path` atomically. Throws std::runtime_error naming the path.
void write_chrome_trace(const Trace& trace, const std::string& path);

}  // namespace simprof
