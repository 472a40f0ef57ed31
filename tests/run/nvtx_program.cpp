// SPDX-License-Identifier: MIT
// A program that knows nothing of simprof: NVTX3 ranges around its steps and stages (push/pop,
// and a domain's registered strings, as libraries mark theirs). `nvtx_program N [crash]`.
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace {
void work(int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}
}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  const bool crash = argc > 2 && std::string(argv[2]) == "crash";
  nvtxDomainHandle_t engine = nvtxDomainCreateA("engine");
  nvtxStringHandle_t contacts = nvtxDomainRegisterStringA(engine, "contacts");
  nvtxRangePushA("setup");
  work(100);
  nvtxRangePop();
  for (int i = 0; i < steps; ++i) {
    nvtxRangePushA("step");
    nvtxRangePushA("physics");
    work(200);
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = contacts;
    nvtxDomainRangePushEx(engine, &a);
    work(100);
    nvtxDomainRangePop(engine);
    nvtxRangePop();
    nvtxRangePushA("sensors");
    work(50);
    nvtxRangePop();
    nvtxRangePop();
    if (crash && i == steps / 2) std::abort();
  }
  std::thread([] {
    nvtxRangePushA("loader");
    nvtxRangePop();
  }).join();
  return 3;  // an exit status simprof run must pass on
}
