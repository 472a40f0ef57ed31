// SPDX-License-Identifier: MIT
// memory_bench's host allocation hook: in a .cpp file (nvcc compiles a .cu's operator new for the
// device too, where it cannot throw).
#include "simprof/memory/host_hook.hpp"

SIMPROF_COUNT_HOST_ALLOCATIONS();
