// SPDX-License-Identifier: MIT
// The launch hook's dlsym (launch_hook.cpp hands out what it finds): the C library's, and on x86-64
// the exported dlsym that stands in for it.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

#include "launch_hook.hpp"

extern "C" {
// The C library's dlsym (found once; see the x86-64 entry below; read by launch_hook.cpp).
simprof_dlsym simprof_hook_real_dlsym = nullptr;

simprof_dlsym simprof_hook_find_real_dlsym() noexcept {
#if defined(__x86_64__)
  void* f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (f == nullptr) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
#else
  void* f = reinterpret_cast<void*>(&dlsym);  // no stand-in here: dlsym is the C library's
#endif
  if (f == nullptr) {  // no C library's dlsym to stand in for: nothing can go on
    static const char said[] = "libsimprof_launch_hook.so: cannot find the C library's dlsym\n";
    (void)!write(2, said, sizeof said - 1);
    abort();
  }
  simprof_hook_real_dlsym = reinterpret_cast<simprof_dlsym>(f);
  return simprof_hook_real_dlsym;
}
}  // extern "C"

#if defined(__x86_64__)
// dlsym itself. RTLD_NEXT is resolved from dlsym's caller (its return address), so that case jumps
// to the C library's with the caller's return address untouched; every other handle goes through
// simprof_hook_dlsym.
__asm__(R"(
  .pushsection .text
  .globl dlsym
  .type dlsym, @function
dlsym:
  .cfi_startproc
  endbr64
  cmpq $-1, %rdi
  jne simprof_hook_dlsym
  movq simprof_hook_real_dlsym(%rip), %rax
  testq %rax, %rax
  jnz 1f
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call simprof_hook_find_real_dlsym
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
1:
  jmp *%rax
  .cfi_endproc
  .size dlsym, .-dlsym
  .popsection
)");
#endif
