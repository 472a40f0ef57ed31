// SPDX-License-Identifier: MIT
// A one-thread kernel that runs `ns` nanoseconds of the GPU's global timer: device work of known
// length for the tests and test programs that check device times.
#pragma once

__global__ inline void spin(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
