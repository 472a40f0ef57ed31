// SPDX-License-Identifier: MIT
// CUPTI's activity calls, interposed for test_cupti_faults (cupti_interpose.cpp): they forward to
// libcupti until armed; armed, the chosen call fails as if CUPTI had been lost mid-run.
#pragma once

namespace simprof::cuda::cuptifault {

enum Call { kActivityEnable, kActivityFlushAll };

/// From now on every call of `call` fails (CUPTI_ERROR_NOT_INITIALIZED).
void arm(Call call);
void disarm();
/// How many calls failed because armed.
long failed();

}  // namespace simprof::cuda::cuptifault
