/* SPDX-License-Identifier: MIT */
/* simprof's C API, the CUDA backend's half (included by simprof/c/simprof.h, which declares the
 * handles and statuses used here): the kernel tracer, NVTX ranges, streams, the pacer, the GPU
 * profile, the device stage and graph kernel timers, the stopwatch and the memory tracker. Without
 * the CUDA backend every call answers SIMPROF_UNAVAILABLE. C99. */
#ifndef SIMPROF_C_SIMPROF_CUDA_H
#define SIMPROF_C_SIMPROF_CUDA_H

#include "simprof/c/simprof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- the CUDA backend (SIMPROF_UNAVAILABLE without it) --------------------------------------
 * From here on every call needs the CUDA backend; without it each answers SIMPROF_UNAVAILABLE. */
/* Every kernel, copy and launch the process makes (torch, Warp, CuPy, ...) in the trace's windows.
 * flags: SIMPROF_TRACE_GRAPH_LAUNCHES for one span per graph launch instead of one per kernel;
 * SIMPROF_TRACE_KERNELS_ONLY for kernels alone (no runtime/driver calls, copies, syncs or CUPTI's
 * overhead records: the cheapest trace). A tracer that cannot have CUPTI (another tool holds it) is
 * made disabled: simprof_kernel_tracer_enabled says so. */
enum {
  SIMPROF_TRACE_GRAPH_LAUNCHES = 1,
  SIMPROF_TRACE_KERNELS_ONLY = 2, /* no runtime, driver, copy or sync records */
  SIMPROF_TRACE_CUPTI_CLOCK = 4,  /* CUPTI's own timestamps, offset once per window (no callback) */
  SIMPROF_TRACE_NO_RUNTIME = 8,   /* no runtime calls (and so no launch flows) */
  SIMPROF_TRACE_NO_DRIVER = 16,   /* no driver calls */
  SIMPROF_TRACE_NO_COPIES = 32,   /* no memcpy / memset records */
  SIMPROF_TRACE_NO_SYNCS = 64,    /* no synchronisation records */
  SIMPROF_TRACE_OVERHEAD = 128    /* CUPTI's overhead records too (off by default: costly) */
};
typedef struct simprof_kernel_tracer simprof_kernel_tracer;
simprof_status simprof_kernel_tracer_new(simprof_profiler* prof, simprof_trace* trace, int flags,
                                         simprof_kernel_tracer** out);
void simprof_kernel_tracer_free(simprof_kernel_tracer* tracer);
int simprof_kernel_tracer_enabled(const simprof_kernel_tracer* tracer);
const char* simprof_kernel_tracer_reason(const simprof_kernel_tracer* tracer);
uint64_t simprof_kernel_tracer_dropped(const simprof_kernel_tracer* tracer);
/* Steps and stages as NVTX ranges (domain "simprof"). */
typedef struct simprof_nvtx simprof_nvtx;
simprof_status simprof_nvtx_new(simprof_profiler* prof, simprof_nvtx** out);
void simprof_nvtx_free(simprof_nvtx* nvtx);

/* --- streams: a cudaStream_t as void* (NULL: the legacy default stream) ----------------------
 * Every call below that makes a handle on a stream checks it first: a handle CUDA refuses or a
 * stream of a device other than the current one is SIMPROF_INVALID_ARGUMENT naming it; no GPU is
 * SIMPROF_CUDA_ERROR naming the call. A destroyed stream cannot be checked (CUDA reads the freed
 * stream: a crash): keep a stream alive while a handle uses it. *device (may be NULL): the
 * stream's device. */
simprof_status simprof_stream_check(void* stream, int* device);

/* --- the step pacer: at most max_in_flight steps queued on the GPU, the FPS line on the GPU clock
 * ("GPU clock" in the line), the steps' device periods and spans (CUDA events on `stream`) --- */
typedef struct simprof_step_pacer simprof_step_pacer;
/* max_in_flight >= 1 (2: the GPU runs a step while the host enqueues the next); mark_every >= 1
 * (a timed end event on the steps whose index is a multiple of mark_every and on the spanned ones,
 * an untimed one after the others: the steps between two timed ones share their period); span_every
 * >= 0 (a start event every span_every steps, 0: none); fps_from_device: the FPS line reads the
 * GPU's step-end times. Free before the profiler. */
/** How a step pacer paces and times (simprof_step_pacer_options_init sets the defaults). */
typedef struct simprof_step_pacer_options {
  size_t size;         /**< sizeof(simprof_step_pacer_options): set by _init; lets it grow */
  int max_in_flight;   /**< steps on the GPU at most, >= 1 (2) */
  int mark_every;      /**< a timed end event every this many steps, >= 1 (8) */
  int span_every;      /**< a start event every this many steps; 0: none (8) */
  int fps_from_device; /**< the FPS line from the GPU's step ends (1) */
} simprof_step_pacer_options;
/* The defaults, and `size`. */
void simprof_step_pacer_options_init(simprof_step_pacer_options* options);
simprof_status simprof_step_pacer_new(simprof_profiler* prof, void* stream,
                                      const simprof_step_pacer_options* options,
                                      simprof_step_pacer** out);
void simprof_step_pacer_free(simprof_step_pacer* pacer);
/* Waits for every step recorded, takes in their device times, completes the FPS sample. */
simprof_status simprof_step_pacer_finish(simprof_step_pacer* pacer);
/** What a step pacer did so far. */
typedef struct simprof_pacer_counters {
  uint64_t steps;          /**< steps recorded */
  uint64_t waits;          /**< steps whose start waited for the GPU */
  double wait_s;           /**< host seconds spent waiting */
  uint64_t most_in_flight; /**< most steps in flight seen */
} simprof_pacer_counters;
simprof_status simprof_step_pacer_counters(const simprof_step_pacer* pacer,
                                           simprof_pacer_counters* out);
/* The device times of the steps taken in so far: steps, completed, missed (left no device time),
 * periods taken; mean span and mean period, seconds (NaN when none). */
/** The device times of a pacer's steps. */
typedef struct simprof_device_steps {
  uint64_t steps;       /**< steps taken in */
  uint64_t completed;   /**< of those, steps neither vetoed nor dropped on the host */
  uint64_t missed;      /**< steps that left no device time */
  uint64_t periods;     /**< periods taken (a step whose step before is known) */
  double mean_step_s;   /**< mean span on the GPU, seconds (NaN: none spanned) */
  double mean_period_s; /**< mean end-to-end period on the GPU, seconds (NaN: none) */
} simprof_device_steps;
simprof_status simprof_step_pacer_device_steps(const simprof_step_pacer* pacer,
                                               simprof_device_steps* out);

typedef struct simprof_stamped_graph simprof_stamped_graph;
/* --- the GPU profile: the FPS line on the GPU clock, device stage times, the per-kernel table of
 * replayed graphs and (with a trace session) every kernel in its windows, from one handle. The
 * profiler owns its tools: graph caches and stamped graphs run in its steps get their stamps, and
 * the profiler may be freed first (the handle's calls then fail with SIMPROF_LOGIC_ERROR). ---- */
typedef struct simprof_gpu_profile simprof_gpu_profile;
/** What a GPU profile measures (simprof_gpu_profile_options_init sets the defaults). */
typedef struct simprof_gpu_profile_options {
  size_t size;             /**< sizeof(simprof_gpu_profile_options): set by _init; lets it grow */
  int max_in_flight;       /**< steps on the GPU at most, >= 1 (2) */
  int fps_from_device;     /**< the FPS line from the GPU's step ends (1) */
  int stage_sample_every;  /**< device stage times on one step in this many; 0: none (16) */
  int kernel_sample_every; /**< the kernel table's stamped replays, 1 in this many; 0: none (128) */
} simprof_gpu_profile_options;
/* The defaults, and `size`. */
void simprof_gpu_profile_options_init(simprof_gpu_profile_options* options);
/* `options` NULL: the defaults. `trace` (may be NULL): a session whose windows get every kernel
 * through CUPTI (a kernel tracer made and joined here). One per profiler. */
simprof_status simprof_gpu_profile_new(simprof_profiler* prof, void* stream,
                                       const simprof_gpu_profile_options* options,
                                       simprof_trace* trace, simprof_gpu_profile** out);
void simprof_gpu_profile_free(simprof_gpu_profile* gpu);
/* Waits for the GPU and reads everything: call at the end of a run. */
simprof_status simprof_gpu_profile_finish(simprof_gpu_profile* gpu);
/* The device stage table and the kernel table (copy_out rules as simprof_report). */
simprof_status simprof_gpu_profile_report(const simprof_gpu_profile* gpu, char* buf, size_t cap,
                                          size_t* needed);
/* Mean device seconds of `stage` ("step", "period", a stage's name); NaN: not timed. */
simprof_status simprof_gpu_profile_mean(const simprof_gpu_profile* gpu, const char* stage,
                                        double* out);
/** What a GPU profile did so far. */
typedef struct simprof_gpu_profile_counters {
  uint64_t steps;            /**< steps the pacer timed */
  uint64_t stages_joined;    /**< sampled steps whose stage times are in */
  uint64_t stages_dropped;   /**< sampled steps whose readings were lost */
  uint64_t stages_unstamped; /**< sampled steps with no stage and no stamped graph */
  uint64_t kernel_replays;   /**< stamped replays read into the kernel table */
  uint64_t kernel_dropped;   /**< stamped replays left out */
} simprof_gpu_profile_counters;
simprof_status simprof_gpu_profile_counters_get(const simprof_gpu_profile* gpu,
                                                simprof_gpu_profile_counters* out);
/* A framework's capture (begun on capture_stream): capture_begin before the step's first stage,
 * capture_end after its last; then simprof_gpu_profile_stamp with the graph it produced (a
 * simprof_stamped_graph: launch it each step, replaying the framework's own when it says 0). */
simprof_status simprof_gpu_profile_capture_begin(simprof_gpu_profile* gpu, void* capture_stream);
simprof_status simprof_gpu_profile_capture_end(simprof_gpu_profile* gpu);
simprof_status simprof_gpu_profile_stamp(simprof_gpu_profile* gpu, void* graph,
                                         simprof_stamped_graph** out);

/* --- the device stage timer: stage times on the GPU's clock, stamped on one step in sample_every,
 * eager work and replayed graphs alike; it paces the loop too (a pacer, max_in_flight > 0) ---- */
typedef struct simprof_stage_timer simprof_stage_timer;
/** How a stage timer stamps and paces (simprof_stage_timer_options_init sets the defaults). */
typedef struct simprof_stage_timer_options {
  size_t size;         /**< sizeof(simprof_stage_timer_options): set by _init; lets it grow */
  int sample_every;    /**< stamps on one step in this many, >= 1 (16) */
  int max_in_flight;   /**< pacing: steps on the GPU at most; 0: unpaced (2) */
  size_t ring;         /**< steps whose readings may be on their way, max_in_flight + 4 .. 2^20,
                            rounded up to a power of two (64) */
  int fps_from_device; /**< with pacing: the FPS line from the GPU's step ends (1) */
  int merge_within_ns; /**< an eager boundary this soon after the last stamp shares it; 0: off */
} simprof_stage_timer_options;
/* The defaults, and `size`. */
void simprof_stage_timer_options_init(simprof_stage_timer_options* options);
/* `options` NULL: the defaults. Free before the profiler. */
simprof_status simprof_stage_timer_new(simprof_profiler* prof, void* stream,
                                       const simprof_stage_timer_options* options,
                                       simprof_stage_timer** out);
void simprof_stage_timer_free(simprof_stage_timer* timer);
/* The stream the step runs on, from now on (stamps and pacing events go there). */
simprof_status simprof_stage_timer_set_stream(simprof_stage_timer* timer, void* stream);
/* Joins the steps whose readings are in (no wait) / waits for the GPU and joins every step. */
simprof_status simprof_stage_timer_poll(simprof_stage_timer* timer);
simprof_status simprof_stage_timer_synchronize(simprof_stage_timer* timer);
/* The device seconds per stage of the latest sampled step joined ("step", "period" too): count,
 * then each by index (a name stays valid until the next count on this timer). */
simprof_status simprof_stage_timer_timings_count(simprof_stage_timer* timer, size_t* count);
simprof_status simprof_stage_timer_timings_get(const simprof_stage_timer* timer, size_t index,
                                               const char** name, double* seconds);
/* Mean device seconds of a stage over the sampled steps that ran it ("step" and "period": over
 * the unsampled steps, when pacing); sampled: over the stamped steps only. NaN when none. */
simprof_status simprof_stage_timer_mean(const simprof_stage_timer* timer, const char* stage,
                                        int sampled, double* seconds);
uint64_t simprof_stage_timer_joined(const simprof_stage_timer* timer);
uint64_t simprof_stage_timer_dropped(const simprof_stage_timer* timer);
uint64_t simprof_stage_timer_unpaired(const simprof_stage_timer* timer);
/* Sampled steps replayed without the timer's stamps (a graph not stamped by it): in no mean. */
uint64_t simprof_stage_timer_unstamped(const simprof_stage_timer* timer);
/* Host and device stage times side by side (text, as simprof_stage_table). */
simprof_status simprof_device_stage_table(const simprof_profiler* prof,
                                          const simprof_stage_timer* timer, char* buf, size_t cap,
                                          size_t* needed);
/* simprof_write_run_record with the timer's device stages and their samples (the record's
 * "device", which simprof compare tests like the host stages). timer must be made on prof. */
simprof_status simprof_write_device_run_record(const simprof_profiler* prof,
                                               const simprof_stage_timer* timer, const char* path,
                                               const char* tool, const char* const* workload_keys,
                                               const char* const* workload_values,
                                               size_t n_workload);
/* A graph another framework captures (torch.cuda.graph, Warp, CuPy): capture_begin once the
 * framework's capture is active on capture_stream and before the step's first stage; capture_end
 * after its last stage. Then simprof_stamped_graph_new with the graph the capture produced. */
simprof_status simprof_stage_timer_capture_begin(simprof_stage_timer* timer, void* capture_stream);
simprof_status simprof_stage_timer_capture_end(simprof_stage_timer* timer);
/* The timer's stamped copy of a captured graph (a cudaGraph_t, not owned, not changed), made
 * executable. Each step, simprof_stamped_graph_launch launches the copy on `stream` when the
 * timer samples the step (*launched = 1); else *launched = 0 and the caller replays its own
 * graph. instrumented: 0 when the capture had no stage (nothing to launch). */
simprof_status simprof_stamped_graph_new(simprof_stage_timer* timer, void* graph,
                                         simprof_stamped_graph** out);
void simprof_stamped_graph_free(simprof_stamped_graph* graph);
simprof_status simprof_stamped_graph_launch(simprof_stamped_graph* graph, void* stream,
                                            int* launched);
int simprof_stamped_graph_instrumented(const simprof_stamped_graph* graph);
uint64_t simprof_stamped_graph_launches(const simprof_stamped_graph* graph);

/* --- the graph kernel timer: every node of a replayed graph on the GPU's clock, from a stamped
 * copy launched on the steps it samples (step % sample_every == sample_offset) -------------- */
typedef struct simprof_kernel_timer simprof_kernel_timer;
/** Which replays a kernel timer stamps (simprof_kernel_timer_options_init sets the defaults). */
typedef struct simprof_kernel_timer_options {
  size_t size;       /**< sizeof(simprof_kernel_timer_options): set by _init; lets it grow */
  int sample_every;  /**< stamped replays, 1 in this many, >= 1 (128) */
  int sample_offset; /**< -1 (8 when sample_every > 8, else 0) or 0 .. sample_every - 1 (-1) */
  size_t ring;       /**< stamped replays whose readings may be on their way, >= 1 (8) */
  size_t max_stamps; /**< stamps of all the stamped copies alive, >= 1 (16384) */
} simprof_kernel_timer_options;
/* The defaults, and `size`. */
void simprof_kernel_timer_options_init(simprof_kernel_timer_options* options);
/* `options` NULL: the defaults. Free before the profiler. */
simprof_status simprof_kernel_timer_new(simprof_profiler* prof, void* stream,
                                        const simprof_kernel_timer_options* options,
                                        simprof_kernel_timer** out);
void simprof_kernel_timer_free(simprof_kernel_timer* timer);
/* Makes the timer a source of `trace`: every step of its windows runs the stamped copies, each node
 * a device span on the stream's track (left to CUPTI's records where a kernel tracer traces the
 * same window). Once per timer; the two may be freed in either order. */
simprof_status simprof_kernel_timer_join(simprof_kernel_timer* timer, simprof_trace* trace);
/* Reads the sampled replays whose stamps are in (no wait) / waits for them and reads them. */
simprof_status simprof_kernel_timer_poll(simprof_kernel_timer* timer);
simprof_status simprof_kernel_timer_synchronize(simprof_kernel_timer* timer);
/* A framework's capture, as for the stage timer: capture_begin once the capture is active on
 * capture_stream, capture_end after the step's last stage; then simprof_kernel_timer_stamp. */
simprof_status simprof_kernel_timer_capture_begin(simprof_kernel_timer* timer,
                                                  void* capture_stream);
simprof_status simprof_kernel_timer_capture_end(simprof_kernel_timer* timer);
/* The timer's stamped copy of a captured graph (a simprof_stamped_graph: launch it as above). */
simprof_status simprof_kernel_timer_stamp(simprof_kernel_timer* timer, void* graph,
                                          simprof_stamped_graph** out);
/** One timed node of a replayed graph (GraphKernelTimer::nodes()). */
typedef struct simprof_kernel_node {
  const char* name;  /**< the kernel's demangled name, or the node's kind ("memset", ...) */
  const char* stage; /**< the stage it was captured in ("" when none) */
  int kernel;        /**< 1 for a kernel node */
  uint64_t graph_id; /**< CUPTI's id of the graph as captured (0: unknown) */
  uint64_t node_id;  /**< CUPTI's id of the node (0: unknown) */
  uint32_t copy;     /**< which stamped copy */
  uint32_t index;    /**< the node's place in its graph's node list */
  uint64_t count;    /**< sampled replays that timed it */
  double mean_s;     /**< mean device seconds */
  double min_s;      /**< shortest */
  double max_s;      /**< longest */
} simprof_kernel_node;
/* The timed nodes: count (a snapshot), then each by index (strings valid until the next count). */
simprof_status simprof_kernel_timer_nodes_count(simprof_kernel_timer* timer, size_t* count);
simprof_status simprof_kernel_timer_node(const simprof_kernel_timer* timer, size_t index,
                                         simprof_kernel_node* out);
/** What a kernel timer read and left out. */
typedef struct simprof_kernel_timer_counters {
  uint64_t replays;   /**< sampled replays read */
  uint64_t missed;    /**< sampled steps that ran no stamped copy */
  uint64_t dropped;   /**< replays left out (a stamp that did not run, the ring full) */
  uint64_t unstamped; /**< graphs that got no stamped copy */
  double hop_ns;      /**< what one stamp adds to a chain: taken off every reading */
} simprof_kernel_timer_counters;
simprof_status simprof_kernel_timer_counters_get(const simprof_kernel_timer* timer,
                                                 simprof_kernel_timer_counters* out);
/* The kernels by stage (text; top: kernels shown per stage). */
simprof_status simprof_kernel_table(const simprof_kernel_timer* timer, size_t top, char* buf,
                                    size_t cap, size_t* needed);

/* --- the stopwatch: sections of the work on a stream, lap by lap ---------------------------- */
enum { SIMPROF_CLOCK_DEVICE = 0, SIMPROF_CLOCK_HOST_DRAINED = 1 };
typedef struct simprof_stopwatch simprof_stopwatch;
/* clock: SIMPROF_CLOCK_DEVICE (CUDA events: the GPU's time for the section) or
 * SIMPROF_CLOCK_HOST_DRAINED (the host's clock, the stream drained at each end); pending >= 1. */
simprof_status simprof_stopwatch_new(void* stream, int clock, int pending, simprof_stopwatch** out);
void simprof_stopwatch_free(simprof_stopwatch* watch);
simprof_status simprof_stopwatch_start(simprof_stopwatch* watch);
simprof_status simprof_stopwatch_stop(simprof_stopwatch* watch);
/* Seconds of the last lap, of every lap, their mean (each waits for the laps it reads). */
simprof_status simprof_stopwatch_seconds(simprof_stopwatch* watch, double* last_s, double* total_s,
                                         double* mean_s);
uint64_t simprof_stopwatch_laps(const simprof_stopwatch* watch);
simprof_status simprof_stopwatch_reset(simprof_stopwatch* watch);
/* "CUDA events" or "host clock, stream drained". */
const char* simprof_stopwatch_clock_label(const simprof_stopwatch* watch);

/* --- the memory tracker: device allocations per step and stage (every CUDA allocation call of
 * the process, through CUPTI), device memory in use and its peak, and one warning for a step that
 * allocates after the warm-up ------------------------------------------------------------------
 * trace (may be NULL): adds the counter tracks to that session's windows. A tracker whose CUPTI
 * callbacks cannot be had (another tool holds CUPTI) counts nothing: enabled 0, reason says why.
 * Free before the trace and the profiler. */
typedef struct simprof_memory_tracker simprof_memory_tracker;
simprof_status simprof_memory_tracker_new(simprof_profiler* prof, simprof_trace* trace,
                                          uint64_t warmup_steps, simprof_memory_tracker** out);
void simprof_memory_tracker_free(simprof_memory_tracker* tracker);
int simprof_memory_tracker_enabled(const simprof_memory_tracker* tracker);
const char* simprof_memory_tracker_reason(const simprof_memory_tracker* tracker);
/** Device allocations of a stage, summed over the completed steps it ran in. */
typedef struct simprof_alloc_counts {
  uint64_t allocs;      /**< allocation calls */
  uint64_t alloc_bytes; /**< bytes they allocated */
  uint64_t frees;       /**< free calls */
  uint64_t free_bytes;  /**< bytes they freed (0 for a free that does not say) */
  uint64_t steps;       /**< completed steps the stage ran in */
} simprof_alloc_counts;
/* What `stage` ("step": whole steps) allocated on the device, summed over the steps it ran in. */
simprof_status simprof_memory_tracker_total(const simprof_memory_tracker* tracker,
                                            const char* stage, simprof_alloc_counts* out);
/* Device bytes in use at the last step end and the peak (-1: unknown); steps after the warm-up
 * that allocated, and the first of them (its step, innermost stage, allocations and bytes). */
/** A memory tracker's device memory and steady-state allocations. */
typedef struct simprof_memory_state {
  int64_t in_use_bytes;             /**< at the last step end (-1: unknown) */
  int64_t peak_bytes;               /**< the most seen (-1: unknown) */
  uint64_t steady_allocating_steps; /**< steps after the warm-up that allocated */
  uint64_t first_step;              /**< the first of them */
  uint64_t first_allocs;            /**< its allocations (in its innermost allocating stage) */
  uint64_t first_bytes;             /**< their bytes */
  const char* first_stage; /**< that stage ("" outside any); valid until the next call here */
} simprof_memory_state;
simprof_status simprof_memory_tracker_state(simprof_memory_tracker* tracker,
                                            simprof_memory_state* out);

#ifdef __cplusplus
}
#endif

#endif /* SIMPROF_C_SIMPROF_CUDA_H */
