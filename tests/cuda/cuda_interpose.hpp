// SPDX-License-Identifier: MIT
// The CUDA runtime's create and destroy calls, interposed for test_leaks (cuda_interpose.cpp): live
// handles counted per kind, and a call that can be made to fail.
#pragma once

#include <array>
#include <string>

namespace simprof::cuda::leaktest {

enum Kind { kDeviceMemory, kHostMemory, kStreams, kEvents, kGraphs, kGraphExecs, kKinds };
using Live = std::array<long, kKinds>;

/// Handles alive now, per kind (made through the interposed calls and not yet destroyed).
Live live();
/// "streams 3 -> 4, ..." for the kinds that differ; "" when none does.
std::string diff(const Live& before, const Live& after);
/// From now on the `n`-th interposed create call (counted from here) fails.
void arm(long n);
void disarm();
/// Whether the armed call came and failed.
bool fired();

}  // namespace simprof::cuda::leaktest
