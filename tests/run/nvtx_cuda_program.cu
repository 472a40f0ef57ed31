// SPDX-License-Identifier: MIT
// A GPU program that knows nothing of simprof: NVTX3 ranges around steps that launch spin kernels
// of known length (physics 100 us, physics/contacts 50 us, sensors 30 us) on a stream of its own,
// never waiting for the GPU inside the loop. With `graph`, physics's two kernels are one captured
// graph replayed inside "physics" (no contacts range) and sensors's another. It times itself with
// CUDA events at every step's end and prints "events period_us=<mean device period>".
// With `cupti` it holds CUPTI itself first (a subscriber of its own, as torch.profiler or nsys
// would), so simprof's device side cannot have it; with `cupti-late` it takes CUPTI halfway
// through (as a torch.profiler started mid-run would), trying once a step until it has it.
// With `launches` the steps are bound by their launches, as an eager Python loop is: 100 empty
// kernels a step (physics 40, physics/contacts 20, sensors 40) in the same ranges.
// `nvtx_cuda_program STEPS [graph | cupti | cupti-late | launches]`; exit status 0, or 2 when CUDA
// fails (named) or CUPTI refuses `cupti`, 77 without a GPU.
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../cuda/spin.cuh"

namespace {

void check(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "nvtx_cuda_program: %s failed: %s\n", call, cudaGetErrorString(e));
  std::exit(2);
}

cudaGraphExec_t captured(cudaStream_t s, std::initializer_list<unsigned long long> lengths) {
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (const auto ns : lengths) spin<<<1, 1, 0, s>>>(ns);
  check(cudaStreamEndCapture(s, &g), "cudaStreamEndCapture");
  check(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate");
  check(cudaGraphDestroy(g), "cudaGraphDestroy");
  return exec;
}

void CUPTIAPI ignore(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// CUPTI's one subscriber, this program's; null with the reason said.
CUpti_SubscriberHandle subscribe(bool say_failure) {
  CUpti_SubscriberHandle own = nullptr;
  if (const CUptiResult r = cuptiSubscribe(&own, ignore, nullptr); r != CUPTI_SUCCESS) {
    const char* what = nullptr;
    cuptiGetResultString(r, &what);
    if (say_failure)
      std::fprintf(stderr, "nvtx_cuda_program: cuptiSubscribe failed: %s\n", what ? what : "?");
    return nullptr;
  }
  return own;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 100;
  const std::string mode = argc > 2 ? argv[2] : "";
  const bool graph = mode == "graph";
  const bool launch_bound = mode == "launches";
  const auto empties = [&](cudaStream_t on, int n) {
    for (int k = 0; k < n; ++k) spin<<<1, 1, 0, on>>>(0);
  };
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("nvtx_cuda_program: no GPU visible");
    return 77;
  }
  CUpti_SubscriberHandle own = nullptr;
  if (mode == "cupti") {
    own = subscribe(true);
    if (own == nullptr) return 2;
    std::puts("nvtx_cuda_program: CUPTI is this program's");
  }
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaGraphExec_t physics = graph ? captured(s, {100'000, 50'000}) : nullptr;
  cudaGraphExec_t sensors = graph ? captured(s, {30'000}) : nullptr;
  std::vector<cudaEvent_t> ends(static_cast<std::size_t>(steps));
  for (auto& e : ends) check(cudaEventCreate(&e), "cudaEventCreate");
  for (int i = 0; i < steps; ++i) {
    if (mode == "cupti-late" && own == nullptr && i >= steps / 2) {
      own = subscribe(false);
      if (own != nullptr)
        std::printf("nvtx_cuda_program: CUPTI is this program's from step %d\n", i);
    }
    nvtxRangePushA("step");
    nvtxRangePushA("physics");
    if (graph) {
      check(cudaGraphLaunch(physics, s), "cudaGraphLaunch");
    } else if (launch_bound) {
      empties(s, 40);
      nvtxRangePushA("contacts");
      empties(s, 20);
      nvtxRangePop();
    } else {
      spin<<<1, 1, 0, s>>>(100'000);
      nvtxRangePushA("contacts");
      spin<<<1, 1, 0, s>>>(50'000);
      nvtxRangePop();
    }
    nvtxRangePop();
    nvtxRangePushA("sensors");
    if (graph)
      check(cudaGraphLaunch(sensors, s), "cudaGraphLaunch");
    else if (launch_bound)
      empties(s, 40);
    else
      spin<<<1, 1, 0, s>>>(30'000);
    nvtxRangePop();
    check(cudaEventRecord(ends[static_cast<std::size_t>(i)], s), "cudaEventRecord");
    nvtxRangePop();
    // Once CUPTI is the program's, each step waits for the GPU: simprof's windows are read, so its
    // next window finds a free slot and asks CUPTI (and is refused).
    if (mode == "cupti-late" && own != nullptr)
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  // The mean device period from step 3 on (simprof run --gpu --gpu-every 4 samples steps 2 and 3
  // first: its device rate is from there).
  const int from = steps > 4 ? 3 : 0;
  float ms = 0;
  check(cudaEventElapsedTime(&ms, ends[static_cast<std::size_t>(from)], ends.back()),
        "cudaEventElapsedTime");
  std::printf("events period_us=%.3f\n", 1e3 * ms / (steps - 1 - from));
  for (auto& e : ends) cudaEventDestroy(e);
  if (graph) {
    cudaGraphExecDestroy(physics);
    cudaGraphExecDestroy(sensors);
  }
  cudaStreamDestroy(s);
  if (own != nullptr) cuptiUnsubscribe(own);
  return 0;
}
