// SPDX-License-Identifier: MIT
// What every trace must obey to be the device's own record: check_causality() reads a trace's typed
// spans and names each span that could not have happened.
//
/* clang-format off */
//   const simprof::CausalityReport r = simprof::check_causality(trace);
//   if (!r.ok()) std::fputs(r.summary().c_str(), stderr);
/* clang-format on */
//
// The rules, on each device track (a device and one of its streams):
//   duration  no span ends before it begins;
//   overlap   the track's work never overlaps: a stream runs one thing at a time. The kernels of
//             one graph launch may run side by side (a graph's branches run concurrently on the
//             stream it was launched on), so they count as one block of the track;
//   busy      the track's summed time (a graph launch's kernels as their union) fits in its extent,
//             from its first begin to its last end;
//   launch    device work begins after the call that launched it began (same correlation);
//   sync      device work ends before the first stream or context synchronisation that began after
//             its launch returned, on its stream or its device, itself ended. A synchronisation
//             counts when the host call that made it (same correlation) blocks: a ...Synchronize
//             call (CUPTI also records cudaStreamQuery, which waits for nothing, as one).
// The first three compare device timestamps with each other and are exact. The last two compare
// device with host timestamps, which CUPTI maps onto one clock: they allow `cross_clock_ns`.
// TraceSession checks every window it writes (TraceOptions::check_causality) and says the result in
// the trace's otherData ("causality": "ok, ..." or the violations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "simprof/trace/span.hpp"

namespace simprof {

/// One device track's figures.
struct DeviceTrackCheck {
  /// The track's device.
  std::int32_t device = -1;
  /// The track's stream.
  std::int64_t stream = -1;
  std::size_t spans = 0;       ///< kernels, copies and memsets
  std::int64_t busy_ns = 0;    ///< their summed time (a graph launch's kernels as their union)
  std::int64_t extent_ns = 0;  ///< from the first begin to the last end
  std::size_t overlaps = 0;    ///< blocks that began before the track's previous work ended
};

/// What check_causality() found: per-track figures and the rules a trace broke.
struct CausalityReport {
  /// One entry per device track (device, stream) in the trace.
  std::vector<DeviceTrackCheck> tracks;
  /// Violations found in all (violations lists only the first).
  std::size_t violation_count = 0;
  /// The first violations (at most 20), each "rule: what, where".
  std::vector<std::string> violations;
  /// True when the trace broke no rule.
  bool ok() const noexcept { return violation_count == 0; }
  /// "ok: 200 device spans on 1 track" or "3 violations: overlap: ...; ...".
  std::string summary() const;
};

/// Checks `trace` against the rules above. `cross_clock_ns`: the slack of the two rules that
/// compare device with host timestamps.
CausalityReport check_causality(const Trace& trace, std::int64_t cross_clock_ns = 1000);

}  // namespace simprof
