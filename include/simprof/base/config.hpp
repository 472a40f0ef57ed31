// SPDX-License-Identifier: MIT
// Portability macros shared by host and device code. Empty without nvcc, so the same small structs
// and inline functions compile with a plain C++ compiler (the CCCL/CUTLASS habit).
#pragma once

#define SIMPROF_VERSION_MAJOR 0
#define SIMPROF_VERSION_MINOR 1
#define SIMPROF_VERSION_PATCH 0

#if defined(__CUDACC__) || defined(__HIPCC__)
#define SIMPROF_HOST_DEVICE __host__ __device__
#define SIMPROF_DEVICE __device__
#else
#define SIMPROF_HOST_DEVICE
#define SIMPROF_DEVICE
#endif

#if defined(_MSC_VER)
#define SIMPROF_FORCE_INLINE __forceinline
#elif defined(__GNUC__) || defined(__clang__)
#define SIMPROF_FORCE_INLINE inline __attribute__((always_inline))
#else
#define SIMPROF_FORCE_INLINE inline
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SIMPROF_LIKELY(x) __builtin_expect(!!(x), 1)
#define SIMPROF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define SIMPROF_LIKELY(x) (x)
#define SIMPROF_UNLIKELY(x) (x)
#endif
