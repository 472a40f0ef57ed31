// SPDX-License-Identifier: MIT
// soak_gpu's host allocation hook (where does the host's memory go?): in a .cpp file (nvcc compiles
// a .cu's operator new for the device too, where it cannot throw).
#include "simprof/memory/host_hook.hpp"

SIMPROF_COUNT_HOST_ALLOCATIONS();
