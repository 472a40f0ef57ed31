// SPDX-License-Identifier: MIT
// A program that knows nothing of simprof: NVTX3 ranges around its steps and stages (push/pop,
// and a domain's registered strings, as libraries mark theirs).
//   nvtx_program N [crash | startend | interleave | unbalanced | usr1 | threads]
// crash: aborts halfway; startend: its steps ("frame") and stages are start/end ranges (Warp's
// ScopedTimer marks its scopes so), one of them ending in the next frame; interleave: a domain's
// range opens before "physics" and closes first; unbalanced: one "physics" is never popped; usr1:
// has a SIGUSR1 handler of its own, sends itself SIGUSR1 halfway and its parent (simprof run, as
// a user asking for the report so far) too, and says at exit how often its handler ran; threads:
// a decoder thread
// marks its own ranges, one round inside each step, one of them (another domain's) outlasting the
// range it began in.
// workers: runs itself (fork and exec) for 9 steps beside its own loop, as a launcher's worker;
// forked: at its halfway step forks a copy that pushes ranges and exits through exit().
#include <nvtx3/nvToolsExt.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {
volatile sig_atomic_t own_usr1 = 0;  // usr1: the program's own handler ran

void work(int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

nvtxEventAttributes_t named(nvtxStringHandle_t s) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = s;
  return a;
}
}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  const std::string mode = argc > 2 ? argv[2] : "";
  nvtxDomainHandle_t engine = nvtxDomainCreateA("engine");
  const nvtxEventAttributes_t contacts = named(nvtxDomainRegisterStringA(engine, "contacts"));
  const nvtxEventAttributes_t kernel = named(nvtxDomainRegisterStringA(engine, "kernel"));
  nvtxRangeId_t upload = 0;
  if (mode == "usr1") signal(SIGUSR1, [](int) { own_usr1 = own_usr1 + 1; });
  nvtxRangePushA("setup");
  work(100);
  nvtxRangePop();
  pid_t other = -1;  // workers: the worker; forked: the copy
  if (mode == "workers" && (other = fork()) == 0) {
    execl(argv[0], argv[0], "9", static_cast<char*>(nullptr));
    _exit(127);
  }
  // threads: the decoder runs one round in each step, while the step waits for it (so each traced
  // step holds exactly one round, however the threads are scheduled).
  std::atomic<int> asked{0}, decoded{0};
  std::atomic<bool> done{false};
  std::thread decoder;
  if (mode == "threads")
    decoder = std::thread([&] {
      for (int round = 1;; ++round) {
        while (asked.load() < round) {
          if (done.load()) return;
          std::this_thread::yield();
        }
        nvtxRangePushA("decode");
        nvtxRangePushA("parse");
        work(30);
        nvtxRangePop();
        nvtxDomainRangePushEx(engine, &kernel);  // "kernel" outlasts "decode"
        work(20);
        nvtxRangePop();
        work(20);
        nvtxDomainRangePop(engine);
        decoded.store(round);
      }
    });
  for (int i = 0; i < steps; ++i) {
    if (mode == "startend") {
      const nvtxRangeId_t frame = nvtxRangeStartA("frame");
      if (upload != 0) nvtxRangeEnd(upload);  // the last frame's upload ends in this one
      const nvtxRangeId_t collide = nvtxDomainRangeStartEx(engine, &contacts);
      work(200);
      nvtxDomainRangeEnd(engine, collide);
      upload = nvtxRangeStartA("upload");
      work(50);
      nvtxRangeEnd(frame);
      continue;
    }
    nvtxRangePushA("step");
    if (mode == "interleave") nvtxDomainRangePushEx(engine, &kernel);
    nvtxRangePushA("physics");
    work(200);
    if (mode == "interleave") nvtxDomainRangePop(engine);  // kernel's: before physics's
    nvtxDomainRangePushEx(engine, &contacts);
    work(100);
    nvtxDomainRangePop(engine);
    if (!(mode == "unbalanced" && i == 3)) nvtxRangePop();
    if (mode == "threads") {  // the decoder's round, inside this step
      asked.store(i + 1);
      while (decoded.load() < i + 1) std::this_thread::yield();
    }
    nvtxRangePushA("sensors");
    work(50);
    nvtxRangePop();
    nvtxRangePop();
    if (mode == "crash" && i == steps / 2) std::abort();
    if (mode == "forked" && i == steps / 2 && (other = fork()) == 0) {
      for (int k = 0; k < 5; ++k) {
        nvtxRangePushA("step");
        nvtxRangePop();
      }
      std::exit(0);  // its atexit handlers run: simprof's tool writes nothing for a copy
    }
    if (mode == "usr1" && i == steps / 2) {
      kill(getpid(), SIGUSR1);                                       // the program's own
      kill(getppid(), SIGUSR1);                                      // the report so far
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the report is written
    }
  }
  done = true;
  if (decoder.joinable()) decoder.join();
  std::thread([] {
    nvtxRangePushA("loader");
    nvtxRangePop();
  }).join();
  if (other > 0) waitpid(other, nullptr, 0);
  if (mode == "usr1") std::printf("own SIGUSR1 handler ran %d time(s)\n", int(own_usr1));
  return 3;  // an exit status simprof run must pass on
}
