/* SPDX-License-Identifier: MIT */
/* The C API, compiled as C99: every function, and bad input answered with a status and a message
 * naming the value. Exits non-zero at the first failed check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simprof/c/simprof.h"

#if SIMPROF_TEST_CUDA
#include <cuda_runtime_api.h>
#endif

static int failures = 0;

#define CHECK(cond)                                                                           \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              simprof_last_error());                                                          \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)

/* How often `needle` occurs in the file at `path` (-1: unreadable). */
static int occurrences(const char* path, const char* needle) {
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  const long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = malloc((size_t)size + 1);
  const size_t got = fread(text, 1, (size_t)size, f);
  fclose(f);
  text[got] = '\0';
  int n = 0;
  for (const char* at = strstr(text, needle); at; at = strstr(at + 1, needle)) ++n;
  free(text);
  return n;
}

/* A profiler on a manual clock, through the C API: exact times in seconds from nanoseconds, the
 * period between steps, and the FPS line (env-steps per second of the clock). */
static void manual_clock_gives_exact_times(void) {
  simprof_manual_clock* mc = NULL;
  CHECK(simprof_manual_clock_new(&mc) == SIMPROF_OK);
  CHECK(simprof_manual_clock_advance_ns(mc, -1) == SIMPROF_INVALID_ARGUMENT);
  CHECK(strstr(simprof_last_error(), "advance_ns = -1") != NULL);
  simprof_options* o = NULL;
  CHECK(simprof_options_new(&o) == SIMPROF_OK);
  CHECK(simprof_options_set_show_fps(o, 0) == SIMPROF_OK);
  simprof_profiler* p = NULL;
  CHECK(simprof_profiler_new_with_clock(o, 1000, NULL, &p) == SIMPROF_INVALID_ARGUMENT);
  CHECK(strstr(simprof_last_error(), "clock is NULL") != NULL);
  CHECK(simprof_profiler_new_with_clock(o, 1000, mc, &p) == SIMPROF_OK);
  simprof_profiler* steady = NULL; /* for the FPS line: every step 2 ms */
  CHECK(simprof_profiler_new_with_clock(o, 1000, mc, &steady) == SIMPROF_OK);
  simprof_options_free(o);
  for (int i = 0; i < 2; ++i) { /* physics 3 ms, then 1 ms outside any stage */
    CHECK(simprof_step_begin(p) == SIMPROF_OK);
    CHECK(simprof_stage_begin(p, "physics") == SIMPROF_OK);
    CHECK(simprof_manual_clock_advance_ns(mc, 3000000) == SIMPROF_OK);
    CHECK(simprof_stage_end(p, "physics") == SIMPROF_OK);
    CHECK(simprof_manual_clock_advance_ns(mc, 1000000) == SIMPROF_OK);
    CHECK(simprof_step_end(p, NULL) == SIMPROF_OK);
  }
  double s = -1;
  CHECK(simprof_timing(p, "physics", &s) == SIMPROF_OK && fabs(s - 0.003) < 1e-15);
  CHECK(simprof_timing(p, "step", &s) == SIMPROF_OK && fabs(s - 0.004) < 1e-15);
  CHECK(simprof_timing(p, "period", &s) == SIMPROF_OK && fabs(s - 0.004) < 1e-15);
  int64_t now = 0;
  CHECK(simprof_manual_clock_now_ns(mc, &now) == SIMPROF_OK && now == 8000000);
  /* 1,000 envs every 2 ms for 200 ms: 500,000 env-steps per second, 500 per env. */
  for (int i = 0; i < 100; ++i) {
    CHECK(simprof_step_begin(steady) == SIMPROF_OK);
    CHECK(simprof_manual_clock_advance_ns(mc, 2000000) == SIMPROF_OK);
    CHECK(simprof_step_end(steady, NULL) == SIMPROF_OK);
  }
  CHECK(simprof_fps_flush(steady) == SIMPROF_OK);
  double total = 0, per_env = 0;
  CHECK(simprof_fps(steady, &total, &per_env) == SIMPROF_OK);
  CHECK(fabs(total - 500000.0) < 1e-6 && fabs(per_env - 500.0) < 1e-9);
  CHECK(simprof_fps_reset(steady) == SIMPROF_OK); /* afresh: no rate until the next sample */
  CHECK(simprof_fps(steady, &total, &per_env) == SIMPROF_OK && isnan(total));
  CHECK(simprof_fps_reset(NULL) == SIMPROF_INVALID_ARGUMENT);
  simprof_profiler_free(steady);
  simprof_profiler_free(p);
  simprof_manual_clock_free(mc);
}

/* The GPU's own numbers from C: the pacer, the device stage timer (eager and a graph captured by
 * "another framework"), the stopwatch and the memory tracker; without a GPU, each says why. */
static void cuda_timers(int gpu) {
  simprof_options* o = NULL;
  CHECK(simprof_options_new(&o) == SIMPROF_OK);
  CHECK(simprof_options_set_show_fps(o, 0) == SIMPROF_OK);
  simprof_profiler* p = NULL;
  CHECK(simprof_profiler_new(o, 8, &p) == SIMPROF_OK);
  simprof_options_free(o);
  simprof_step_pacer* pacer = NULL;
  simprof_stage_timer* timer = NULL;
  simprof_stopwatch* watch = NULL;
  simprof_memory_tracker* mem = NULL;
  int device = -1;
  simprof_stage_timer_options so;
  simprof_stage_timer_options_init(&so);
  CHECK(so.size == sizeof so && so.sample_every == 16 && so.max_in_flight == 2 && so.ring == 64);
  CHECK(so.fps_from_device == 1 && so.merge_within_ns == 0);
  simprof_kernel_timer_options ko;
  simprof_kernel_timer_options_init(&ko);
  CHECK(ko.size == sizeof ko && ko.sample_every == 128 && ko.sample_offset == -1 && ko.ring == 8);
  CHECK(ko.max_stamps == 16384);
  simprof_step_pacer_options po;
  simprof_step_pacer_options_init(&po);
  CHECK(po.size == sizeof po && po.max_in_flight == 2 && po.mark_every == 8);
  CHECK(po.span_every == 8 && po.fps_from_device == 1);
  if (!simprof_has_cuda()) {
    CHECK(simprof_stream_check(NULL, &device) == SIMPROF_UNAVAILABLE);
    CHECK(simprof_step_pacer_new(p, NULL, &po, &pacer) == SIMPROF_UNAVAILABLE);
    CHECK(pacer == NULL);
    CHECK(simprof_stage_timer_new(p, NULL, NULL, &timer) == SIMPROF_UNAVAILABLE);
    CHECK(simprof_stopwatch_new(NULL, SIMPROF_CLOCK_DEVICE, 4, &watch) == SIMPROF_UNAVAILABLE);
    CHECK(simprof_memory_tracker_new(p, NULL, 0, &mem) == SIMPROF_UNAVAILABLE);
    CHECK(strstr(simprof_last_error(), "without the CUDA backend") != NULL);
    simprof_profiler_free(p);
    return;
  }
  CHECK(simprof_stopwatch_new(NULL, 7, 4, &watch) == SIMPROF_INVALID_ARGUMENT);
  CHECK(strstr(simprof_last_error(), "clock = 7") != NULL);
  if (!gpu) { /* CUDA built, no GPU: the call that failed is named */
    CHECK(simprof_stream_check(NULL, &device) == SIMPROF_CUDA_ERROR);
    CHECK(strstr(simprof_last_error(), "cudaStreamGetDevice") != NULL);
    CHECK(simprof_step_pacer_new(p, NULL, NULL, &pacer) == SIMPROF_CUDA_ERROR);
    po.size = 4; /* a struct this library does not know: said before anything is made */
    CHECK(simprof_step_pacer_new(p, NULL, &po, &pacer) == SIMPROF_INVALID_ARGUMENT);
    CHECK(strstr(simprof_last_error(), "simprof_step_pacer_options.size = 4") != NULL);
    po.size = sizeof po;
    CHECK(simprof_stage_timer_new(p, NULL, NULL, &timer) == SIMPROF_CUDA_ERROR);
    so.size = 8; /* a struct this library does not know: said before anything is made */
    CHECK(simprof_stage_timer_new(p, NULL, &so, &timer) == SIMPROF_INVALID_ARGUMENT);
    CHECK(strstr(simprof_last_error(), "simprof_stage_timer_options.size = 8") != NULL);
    ko.size = 8;
    simprof_kernel_timer* kt = NULL;
    CHECK(simprof_kernel_timer_new(p, NULL, &ko, &kt) == SIMPROF_INVALID_ARGUMENT && kt == NULL);
    CHECK(strstr(simprof_last_error(), "simprof_kernel_timer_options.size = 8") != NULL);
    CHECK(simprof_stopwatch_new(NULL, SIMPROF_CLOCK_DEVICE, 4, &watch) == SIMPROF_CUDA_ERROR);
    CHECK(pacer == NULL && timer == NULL && watch == NULL);
    simprof_profiler_free(p);
    return;
  }
#if SIMPROF_TEST_CUDA
  CHECK(simprof_stream_check(NULL, &device) == SIMPROF_OK && device == 0);
  po.max_in_flight = 0;
  CHECK(simprof_step_pacer_new(p, NULL, &po, &pacer) == SIMPROF_INVALID_ARGUMENT);
  po.max_in_flight = 2;
  so.sample_every = 0;
  CHECK(simprof_stage_timer_new(p, NULL, &so, &timer) == SIMPROF_INVALID_ARGUMENT);
  CHECK(strstr(simprof_last_error(), "sample_every = 0") != NULL);

  cudaStream_t s = NULL, cap = NULL;
  CHECK(cudaStreamCreate(&s) == cudaSuccess);
  CHECK(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking) == cudaSuccess);
  device = -1;
  CHECK(simprof_stream_check(cap, &device) == SIMPROF_OK && device == 0);
  void* bytes = NULL;
  CHECK(cudaMalloc(&bytes, 1 << 20) == cudaSuccess);
  CHECK(simprof_memory_tracker_new(p, NULL, 2, &mem) == SIMPROF_OK);
  CHECK(simprof_memory_tracker_enabled(mem)); /* CUPTI is ours under ctest */
  so.sample_every = 2;
  CHECK(simprof_stage_timer_new(p, s, &so, &timer) == SIMPROF_OK);
  CHECK(simprof_stopwatch_new(s, SIMPROF_CLOCK_DEVICE, 4, &watch) == SIMPROF_OK);
  CHECK(strcmp(simprof_stopwatch_clock_label(watch), "CUDA events") == 0);
  CHECK(simprof_stopwatch_stop(watch) == SIMPROF_LOGIC_ERROR);
  /* Steps 0-3 eager; step 4 captures on `cap` as torch.cuda.graph would; steps 5-12 replay. */
  cudaGraph_t graph = NULL;
  cudaGraphExec_t plain = NULL;
  simprof_stamped_graph* stamped = NULL;
  int replays = 0;
  for (int i = 0; i < 13; ++i) {
    CHECK(simprof_step_begin(p) == SIMPROF_OK);
    if (i < 4) {
      CHECK(simprof_stage_begin(p, "physics") == SIMPROF_OK);
      CHECK(cudaMemsetAsync(bytes, i, 1 << 20, s) == cudaSuccess);
      CHECK(simprof_stage_end(p, "physics") == SIMPROF_OK);
      if (i == 3) { /* a step that allocates after the warm-up */
        CHECK(simprof_stage_begin(p, "grow") == SIMPROF_OK);
        void* more = NULL;
        CHECK(cudaMalloc(&more, 4096) == cudaSuccess);
        CHECK(cudaFree(more) == cudaSuccess);
        CHECK(simprof_stage_end(p, "grow") == SIMPROF_OK);
      }
    } else if (i == 4) {
      CHECK(simprof_stage_timer_capture_begin(timer, cap) == SIMPROF_LOGIC_ERROR);
      CHECK(strstr(simprof_last_error(), "not capturing") != NULL);
      CHECK(cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal) == cudaSuccess);
      CHECK(simprof_stage_timer_capture_begin(timer, cap) == SIMPROF_OK);
      CHECK(simprof_stage_begin(p, "physics") == SIMPROF_OK);
      CHECK(cudaMemsetAsync(bytes, 1, 1 << 20, cap) == cudaSuccess);
      CHECK(simprof_stage_end(p, "physics") == SIMPROF_OK);
      CHECK(simprof_stage_timer_capture_end(timer) == SIMPROF_OK);
      CHECK(simprof_stage_timer_capture_end(timer) == SIMPROF_LOGIC_ERROR);
      CHECK(cudaStreamEndCapture(cap, &graph) == cudaSuccess);
      CHECK(simprof_stamped_graph_new(timer, NULL, &stamped) == SIMPROF_INVALID_ARGUMENT);
      CHECK(simprof_stamped_graph_new(timer, graph, &stamped) == SIMPROF_OK);
      CHECK(simprof_stamped_graph_instrumented(stamped) == 1);
      CHECK(cudaGraphInstantiate(&plain, graph, 0) == cudaSuccess);
    } else {
      int launched = -1;
      CHECK(simprof_stamped_graph_launch(stamped, s, &launched) == SIMPROF_OK);
      if (!launched) {
        CHECK(cudaGraphLaunch(plain, s) == cudaSuccess);
        ++replays;
      }
    }
    if (i == 12) {
      CHECK(simprof_stopwatch_start(watch) == SIMPROF_OK);
      CHECK(cudaMemsetAsync(bytes, 2, 1 << 20, s) == cudaSuccess);
      CHECK(simprof_stopwatch_stop(watch) == SIMPROF_OK);
    }
    CHECK(simprof_step_end(p, NULL) == SIMPROF_OK);
  }
  CHECK(simprof_stage_timer_synchronize(timer) == SIMPROF_OK);
  CHECK(simprof_stamped_graph_launches(stamped) == 4 && replays == 4); /* 6, 8, 10, 12 sampled */
  CHECK(simprof_stage_timer_joined(timer) >= 6 && simprof_stage_timer_dropped(timer) == 0);
  double sec = -1;
  CHECK(simprof_stage_timer_mean(timer, "physics", 0, &sec) == SIMPROF_OK && sec > 0);
  CHECK(simprof_stage_timer_mean(timer, "nosuch", 0, &sec) == SIMPROF_OK && isnan(sec));
  size_t n = 0;
  CHECK(simprof_stage_timer_timings_count(timer, &n) == SIMPROF_OK && n >= 3);
  const char* name = NULL;
  CHECK(simprof_stage_timer_timings_get(timer, 0, &name, &sec) == SIMPROF_OK && name != NULL);
  CHECK(simprof_stage_timer_timings_get(timer, n, &name, &sec) == SIMPROF_INVALID_ARGUMENT);
  size_t needed = 0;
  CHECK(simprof_device_stage_table(p, timer, NULL, 0, &needed) == SIMPROF_OK && needed > 1);
  double last = -1, total = -1, mean = -1;
  CHECK(simprof_stopwatch_seconds(watch, &last, &total, &mean) == SIMPROF_OK);
  CHECK(last > 0 && total == last && mean == last && simprof_stopwatch_laps(watch) == 1);
  CHECK(simprof_stopwatch_reset(watch) == SIMPROF_OK && simprof_stopwatch_laps(watch) == 0);
  simprof_alloc_counts grow;
  CHECK(simprof_memory_tracker_total(mem, "grow", &grow) == SIMPROF_OK);
  CHECK(grow.allocs == 1 && grow.alloc_bytes == 4096 && grow.frees == 1 && grow.steps == 1);
  simprof_memory_state state;
  CHECK(simprof_memory_tracker_state(mem, &state) == SIMPROF_OK);
  CHECK(state.steady_allocating_steps == 1 && state.first_step == 3);
  CHECK(strcmp(state.first_stage, "grow") == 0 && state.first_bytes == 4096);

  /* The pacer alone, on a second profiler: the FPS line and step times from the GPU. */
  simprof_profiler* q = NULL;
  CHECK(simprof_profiler_new(NULL, 8, &q) == SIMPROF_OK);
  CHECK(simprof_set_show_fps(q, 0) == SIMPROF_OK);
  po.mark_every = 1;
  po.span_every = 1;
  CHECK(simprof_step_pacer_new(q, s, &po, &pacer) == SIMPROF_OK);
  for (int i = 0; i < 6; ++i) {
    CHECK(simprof_step_begin(q) == SIMPROF_OK);
    CHECK(cudaMemsetAsync(bytes, i, 1 << 20, s) == cudaSuccess);
    CHECK(simprof_step_end(q, NULL) == SIMPROF_OK);
  }
  CHECK(simprof_step_pacer_finish(pacer) == SIMPROF_OK);
  simprof_pacer_counters pc;
  CHECK(simprof_step_pacer_counters(pacer, &pc) == SIMPROF_OK && pc.steps == 6);
  CHECK(pc.most_in_flight >= 1 && pc.most_in_flight <= 2);
  simprof_device_steps ds;
  CHECK(simprof_step_pacer_device_steps(pacer, &ds) == SIMPROF_OK);
  CHECK(ds.steps == 6 && ds.periods == 5 && ds.mean_period_s > 0 && ds.mean_step_s > 0);

  simprof_step_pacer_free(pacer);
  simprof_profiler_free(q);
  simprof_stamped_graph_free(stamped);
  cudaGraphExecDestroy(plain);
  cudaGraphDestroy(graph);
  simprof_stopwatch_free(watch);
  simprof_stage_timer_free(timer);
  simprof_memory_tracker_free(mem);
  cudaFree(bytes);
  cudaStreamDestroy(cap);
  cudaStreamDestroy(s);
#endif
  simprof_profiler_free(p);
}

static int samples = 0;
static void on_fps(double total, double per_env, int64_t n_envs, void* user) {
  (void)per_env;
  (void)user;
  if (total > 0 && n_envs == 64) ++samples;
}

int main(void) {
  CHECK(strcmp(simprof_version(), "0.1.0") == 0);
  manual_clock_gives_exact_times();

  int gpu = 0; /* a visible GPU: device work must reach the trace */
#if SIMPROF_TEST_CUDA
  int devices = 0;
  gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  void* device_bytes = NULL;
  if (gpu) CHECK(cudaMalloc(&device_bytes, 4096) == cudaSuccess);
#endif
  if (!gpu) puts("c api: no GPU visible: the check that device work reaches a trace is skipped");

  simprof_options* o = NULL;
  CHECK(simprof_options_new(&o) == SIMPROF_OK);
  CHECK(simprof_options_set_alpha(o, 1.5) == SIMPROF_INVALID_ARGUMENT);
  CHECK(strstr(simprof_last_error(), "fps_tracker_alpha = 1.5") != NULL);
  CHECK(simprof_options_set_alpha(o, 0.9) == SIMPROF_OK);
  CHECK(simprof_options_set_show_fps(o, 0) == SIMPROF_OK);
  CHECK(simprof_options_set_interval_ms(o, 0.001) == SIMPROF_OK);
  CHECK(simprof_options_set_interval_ms(o, -1) == SIMPROF_INVALID_ARGUMENT);
  CHECK(simprof_options_set_interval_ms(o, 1e300) == SIMPROF_INVALID_ARGUMENT);
  CHECK(simprof_options_set_interval_ms(o, NAN) == SIMPROF_INVALID_ARGUMENT);
  CHECK(strstr(simprof_last_error(), "fps_sample_interval") != NULL);
  CHECK(simprof_options_set_timings_window(o, 1) == SIMPROF_OK);
  CHECK(simprof_options_set_timings_window(o, 0) == SIMPROF_INVALID_ARGUMENT);
  CHECK(simprof_options_set_stats_window(o, 8) == SIMPROF_OK);

  simprof_profiler* p = NULL;
  CHECK(simprof_profiler_new(o, 64, &p) == SIMPROF_OK);
  simprof_options_free(o);
  CHECK(simprof_profiler_new(NULL, 0, NULL) == SIMPROF_INVALID_ARGUMENT);
  CHECK(simprof_stage_begin(p, "physics") == SIMPROF_LOGIC_ERROR);
  CHECK(strstr(simprof_last_error(), "outside a step") != NULL);
  CHECK(simprof_set_fps_callback(p, on_fps, NULL) == SIMPROF_OK);

  simprof_trace* t = NULL;
  simprof_trace_options to;
  simprof_trace_options_init(&to);
  CHECK(to.size == sizeof to && to.wait == 0 && to.warmup == 0 && to.active == 1);
  CHECK(to.repeat == 1 && to.skip_first == 0 && to.dir == NULL && to.flags == 0);
  to.active = 2;
  to.dir = "c_api_trace";
  to.flags = 2;
  CHECK(simprof_trace_new(p, &to, &t) == SIMPROF_INVALID_ARGUMENT);
  CHECK(strstr(simprof_last_error(), "flags = 2") != NULL);
  to.size = 3;
  to.flags = SIMPROF_SESSION_BACKGROUND;
  CHECK(simprof_trace_new(p, &to, &t) == SIMPROF_INVALID_ARGUMENT && t == NULL);
  CHECK(strstr(simprof_last_error(), "simprof_trace_options.size = 3") != NULL);
  to.size = sizeof to;
  CHECK(simprof_trace_new(p, &to, &t) == SIMPROF_OK);
  simprof_kernel_tracer* k = NULL;
  simprof_nvtx* nv = NULL;
  if (simprof_has_cuda()) {
    CHECK(simprof_kernel_tracer_new(p, t, 256, &k) == SIMPROF_INVALID_ARGUMENT);
    CHECK(strstr(simprof_last_error(), "flags = 256") != NULL);
    CHECK(simprof_kernel_tracer_new(p, t, 0, &k) == SIMPROF_OK);
    if (gpu) CHECK(simprof_kernel_tracer_enabled(k)); /* CUPTI is ours under ctest */
    if (!simprof_kernel_tracer_enabled(k)) CHECK(strlen(simprof_kernel_tracer_reason(k)) > 0);
    CHECK(simprof_kernel_tracer_dropped(k) == 0);
    CHECK(simprof_nvtx_new(p, &nv) == SIMPROF_OK);
  } else {
    CHECK(simprof_kernel_tracer_new(p, t, 0, &k) == SIMPROF_UNAVAILABLE);
    CHECK(simprof_kernel_tracer_enabled(k) == 0);
    CHECK(strlen(simprof_kernel_tracer_reason(k)) > 0);
    CHECK(simprof_kernel_tracer_dropped(k) == 0);
    CHECK(simprof_nvtx_new(p, &nv) == SIMPROF_UNAVAILABLE);
  }

  for (int i = 0; i < 4; ++i) {
    int published = -1;
    CHECK(simprof_step_begin(p) == SIMPROF_OK);
    CHECK(simprof_stage_begin(p, "physics") == SIMPROF_OK);
#if SIMPROF_TEST_CUDA
    if (gpu) { /* device work in each step; steps 0 and 1 are the trace window */
      CHECK(cudaMemsetAsync(device_bytes, i, 4096, 0) == cudaSuccess);
      CHECK(cudaDeviceSynchronize() == cudaSuccess);
    }
#endif
    CHECK(simprof_stage_end(p, "physics") == SIMPROF_OK);
    if (i == 0) { /* a collective in the window: a CPU span with Kineto's arguments */
      const int ranks[2] = {0, 1};
      simprof_collective* c = NULL;
      simprof_collective_info info;
      simprof_collective_info_init(&info);
      CHECK(info.size == sizeof(info) && info.op == NULL && info.n_ranks == 0);
      CHECK(simprof_collective_begin(p, &info, &c) == SIMPROF_INVALID_ARGUMENT);
      CHECK(strstr(simprof_last_error(), "collective op is NULL") != NULL);
      info.op = "all_sum";
      info.in_nelems = info.out_nelems = 8;
      info.dtype = "Float";
      info.ranks = ranks;
      info.n_ranks = 2;
      CHECK(simprof_collective_begin(p, &info, &c) == SIMPROF_INVALID_ARGUMENT);
      CHECK(strstr(simprof_last_error(), "op 'all_sum' (expected one of allreduce") != NULL);
      info.op = "allreduce";
      info.dtype = "float";
      CHECK(simprof_collective_begin(p, &info, &c) == SIMPROF_INVALID_ARGUMENT);
      CHECK(strstr(simprof_last_error(), "dtype 'float'") != NULL);
      info.op = "all_reduce";
      info.dtype = "Float";
      info.ranks = NULL;
      CHECK(simprof_collective_begin(p, &info, &c) == SIMPROF_INVALID_ARGUMENT);
      CHECK(c == NULL);
      info.size = 8;
      CHECK(simprof_collective_begin(p, &info, &c) == SIMPROF_INVALID_ARGUMENT);
      CHECK(strstr(simprof_last_error(), "simprof_collective_info.size = 8") != NULL);
      simprof_collective_info_init(&info);
      info.op = "all_reduce";
      info.in_nelems = info.out_nelems = 1024;
      info.dtype = "Float";
      info.group_name = "0";
      info.group_desc = "default_pg";
      info.ranks = ranks;
      info.n_ranks = 2;
      CHECK(simprof_collective_begin(p, &info, &c) == SIMPROF_OK);
      simprof_collective_end(c);
      simprof_collective_end(NULL);
    }
    CHECK(simprof_stage_begin(p, "sensors/Cam") == SIMPROF_OK);
    CHECK(simprof_stage_end(p, "sensors/Cam") == SIMPROF_OK);
    CHECK(simprof_step_end(p, &published) == SIMPROF_OK);
    CHECK(published == 1);
  }
  CHECK(simprof_stage_end(p, "never") == SIMPROF_INVALID_ARGUMENT);
  CHECK(strstr(simprof_last_error(), "no stage named 'never'") != NULL);
  CHECK(simprof_steps(p) == 4);

  size_t n = 0;
  CHECK(simprof_timings_count(p, &n) == SIMPROF_OK);
  CHECK(n == 5); /* physics, sensors, sensors/Cam, step, period */
  for (size_t i = 0; i < n; ++i) {
    const char* name = NULL;
    double s = -1;
    CHECK(simprof_timings_get(p, i, &name, &s) == SIMPROF_OK);
    CHECK(name != NULL && s >= 0);
  }
  CHECK(simprof_timings_get(p, n, NULL, NULL) == SIMPROF_INVALID_ARGUMENT);
  double s = -1;
  CHECK(simprof_timing(p, "physics", &s) == SIMPROF_OK && s >= 0);
  CHECK(simprof_timing(p, "nosuch", &s) == SIMPROF_INVALID_ARGUMENT);
  CHECK(strstr(simprof_last_error(), "nosuch") != NULL);

  size_t needed = 0;
  CHECK(simprof_stage_table(p, NULL, 0, &needed) == SIMPROF_OK && needed > 1);
  char* table = malloc(needed);
  CHECK(simprof_stage_table(p, table, needed, NULL) == SIMPROF_OK);
  CHECK(strstr(table, "physics") != NULL);
  free(table);

  CHECK(simprof_fps_flush(p) == SIMPROF_OK);
  double total = 0, per_env = 0;
  CHECK(simprof_fps(p, &total, &per_env) == SIMPROF_OK);
  CHECK(total > 0 && fabs(total - 64 * per_env) <= 1e-6 * total);
  CHECK(samples >= 1);
  CHECK(simprof_set_show_fps(p, 0) == SIMPROF_OK);

  CHECK(simprof_step_begin(p) == SIMPROF_OK);
  CHECK(simprof_step_veto(p) == SIMPROF_OK);
  int published = -1;
  CHECK(simprof_step_end(p, &published) == SIMPROF_OK && published == 0);

  CHECK(simprof_trace_wait(t) == SIMPROF_OK); /* the window is written beside the loop */
  CHECK(simprof_trace_wait(NULL) == SIMPROF_INVALID_ARGUMENT);
  CHECK(simprof_trace_windows(t) == 1);
  CHECK(simprof_trace_dropped(t) == 0);
  CHECK(simprof_trace_files_count(t, &n) == SIMPROF_OK && n == 1);
  const char* path = NULL;
  CHECK(simprof_trace_file(t, 0, &path) == SIMPROF_OK && strstr(path, "rank0.json") != NULL);
  CHECK(simprof_trace_file(t, 1, &path) == SIMPROF_INVALID_ARGUMENT);
  CHECK(occurrences(path, "\"Collective name\": \"allreduce\"") == 1);
  CHECK(occurrences(path, "\"In msg nelems\": 1024") == 1);
  if (gpu) { /* the window's two memsets reached the trace, which the session found possible */
    CHECK(occurrences(path, "\"cat\": \"gpu_memset\"") == 2);
    CHECK(occurrences(path, "\"causality\": \"ok: 2 device spans on 1 track\"") == 1);
  }

  const char* labels[2] = {"solve", "forces"};
  simprof_timer_stats* ts = NULL;
  CHECK(simprof_timer_stats_new(labels, 0, 4, -1, &ts) == SIMPROF_INVALID_ARGUMENT);
  CHECK(simprof_timer_stats_new(labels, 2, 4, -1, &ts) == SIMPROF_OK);
  const uint64_t frame[8] = {1000, 2000, 3000, 40000, 10, 20, 30, 40};
  CHECK(simprof_timer_stats_update(ts, frame, 2, 4, 1e9) == SIMPROF_OK);
  CHECK(simprof_timer_stats_update(ts, frame, 1, 4, 1e9) == SIMPROF_INVALID_ARGUMENT);
  CHECK(simprof_timer_stats_frames(ts) == 1);
  double across[6] = {0};
  CHECK(simprof_timer_stats_across_envs(ts, 0, 0, across) == SIMPROF_OK);
  CHECK(fabs(across[4] - 40e-6) < 1e-12);
  int slow[2] = {-1, -1}, count = 0;
  CHECK(simprof_timer_stats_slowest(ts, 0, 2, slow, &count) == SIMPROF_OK);
  CHECK(count == 2 && slow[0] == 3 && slow[1] == 2);
  CHECK(simprof_timer_plot(ts, 0, 60, NULL, 0, &needed) == SIMPROF_OK && needed > 1);
  CHECK(simprof_timer_svg(ts, "t", NULL, 0, &needed) == SIMPROF_OK && needed > 1);
  char small[8];
  CHECK(simprof_timer_svg(ts, "t", small, sizeof small, NULL) == SIMPROF_OK);
  CHECK(strlen(small) == sizeof small - 1);
  simprof_timer_stats_free(ts);

  simprof_running_mean* m = NULL;
  CHECK(simprof_running_mean_new_window(0, &m) == SIMPROF_INVALID_ARGUMENT);
  CHECK(simprof_running_mean_new_window(2, &m) == SIMPROF_OK);
  CHECK(simprof_running_mean_update(m, 1.0) == SIMPROF_OK);
  CHECK(isnan(simprof_running_mean_value(m)));
  CHECK(simprof_running_mean_update(m, 3.0) == SIMPROF_OK);
  CHECK(simprof_running_mean_value(m) == 2.0);
  CHECK(simprof_running_mean_update(m, NAN) == SIMPROF_INVALID_ARGUMENT);
  CHECK(simprof_running_mean_count(m) == 2);
  simprof_running_mean_free(m);
  CHECK(simprof_running_mean_new_ema(0.5, &m) == SIMPROF_OK);
  simprof_running_mean_free(m);

  simprof_nvtx_free(nv);
  simprof_kernel_tracer_free(k);
  simprof_trace_free(t);
  simprof_profiler_free(p);
  cuda_timers(gpu);
#if SIMPROF_TEST_CUDA
  if (gpu) cudaFree(device_bytes);
#endif
  if (failures) return 1;
  puts("c api ok");
  return 0;
}
