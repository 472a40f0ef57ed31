// SPDX-License-Identifier: MIT
// The library after the stand-in libcuda: its probe is what dlsym(RTLD_NEXT) there must find.
extern "C" __attribute__((visibility("default"))) int simprof_fake_probe() { return 2; }
// Referenced by the test, so that the linker keeps this library after libcuda.so.1.
extern "C" __attribute__((visibility("default"))) int fake_next_loaded() { return 1; }
