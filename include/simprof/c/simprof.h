/* SPDX-License-Identifier: MIT */
/* simprof's C API (library simprof::c, libsimprof_c.so): the profiler, its options and timings, the
 * FPS line, the running mean, trace sessions, and — where the CUDA backend is built — the CUPTI
 * kernel tracer and NVTX ranges, behind opaque handles. For C programs and for the `simprof` Python
 * package (ctypes).
 *
 *   simprof_profiler* prof = NULL;
 *   if (simprof_profiler_new(NULL, 1024, &prof) != SIMPROF_OK) puts(simprof_last_error());
 *   simprof_step_begin(prof);
 *   simprof_stage_begin(prof, "physics");  ...  simprof_stage_end(prof, "physics");
 *   simprof_step_end(prof, NULL);
 *   simprof_profiler_free(prof);
 *
 * Every function that can fail returns a simprof_status; the message of the last failure on the
 * calling thread (naming the value and what was expected, or the CUDA call) is
 * simprof_last_error(). No exception crosses this boundary. Handles belong to the thread that runs
 * the loop (the FPS switch excepted); free a kernel tracer or NVTX handle before its trace session,
 * and those before their profiler. C99. The CUDA backend's calls are in simprof_cuda.h, which
 * this header includes. */
#ifndef SIMPROF_C_SIMPROF_H
#define SIMPROF_C_SIMPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum simprof_status {
  SIMPROF_OK = 0,
  SIMPROF_INVALID_ARGUMENT = 1, /* a value out of range, a null handle, an unknown stage */
  SIMPROF_LOGIC_ERROR = 2,      /* a call out of order: a stage outside a step, unbalanced scopes */
  SIMPROF_CUDA_ERROR = 3,       /* a CUDA, CUPTI or NVTX call failed: the message names it */
  SIMPROF_UNAVAILABLE = 4,      /* built without the CUDA backend */
  SIMPROF_ERROR = 5             /* anything else (out of memory, a file that cannot be written) */
} simprof_status;

/* The message of the calling thread's last failure ("" when none). */
const char* simprof_last_error(void);
/* "0.1.0"; whether this build has the CUDA backend (kernel tracer, NVTX). */
const char* simprof_version(void);
int simprof_has_cuda(void);

/* --- options (defaults with the SIMPROF_* environment applied; each setter validates) --------- */
typedef struct simprof_options simprof_options;
simprof_status simprof_options_new(simprof_options** out);
void simprof_options_free(simprof_options* options);
simprof_status simprof_options_set_show_fps(simprof_options* options, int show);
simprof_status simprof_options_set_alpha(simprof_options* options, double alpha);
simprof_status simprof_options_set_interval_ms(simprof_options* options, double ms);
simprof_status simprof_options_set_timings_window(simprof_options* options, uint64_t steps);
simprof_status simprof_options_set_stats_window(simprof_options* options, uint64_t steps);

/* --- the profiler --------------------------------------------------------------------------------
 * options: NULL for the defaults. n_envs: the batch size (0: none), for the FPS line. */
typedef struct simprof_profiler simprof_profiler;
simprof_status simprof_profiler_new(const simprof_options* options, int64_t n_envs,
                                    simprof_profiler** out);
void simprof_profiler_free(simprof_profiler* prof);
/* A profiler that reads `clock` (which must outlive it) instead of the system's: every time it
 * reports is the clock's, so a test advances the clock and checks exact values. */
typedef struct simprof_manual_clock simprof_manual_clock;
simprof_status simprof_profiler_new_with_clock(const simprof_options* options, int64_t n_envs,
                                               const simprof_manual_clock* clock,
                                               simprof_profiler** out);

/* --- a manual clock: time moves only when told (at 0 when made) ------------------------------ */
simprof_status simprof_manual_clock_new(simprof_manual_clock** out);
void simprof_manual_clock_free(simprof_manual_clock* clock);
/* ns < 0 is refused (SIMPROF_INVALID_ARGUMENT): time does not run backwards. */
simprof_status simprof_manual_clock_advance_ns(simprof_manual_clock* clock, int64_t ns);
simprof_status simprof_manual_clock_now_ns(const simprof_manual_clock* clock, int64_t* ns);
simprof_status simprof_step_begin(simprof_profiler* prof);
/* published (may be NULL): 1 when the step's times were published, 0 when it was vetoed. */
simprof_status simprof_step_end(simprof_profiler* prof, int* published);
simprof_status simprof_step_veto(simprof_profiler* prof);
/* Stages by name ("sensors/Cam" rolls up into "sensors"); ends must match the innermost begin. */
simprof_status simprof_stage_begin(simprof_profiler* prof, const char* name);
simprof_status simprof_stage_end(simprof_profiler* prof, const char* name);
/* The published timings of the latest step (Genesis's semantics): count, then each by index; a
 * name stays valid until the next simprof_timings_count on this profiler. */
simprof_status simprof_timings_count(simprof_profiler* prof, size_t* count);
simprof_status simprof_timings_get(const simprof_profiler* prof, size_t index, const char** name,
                                   double* seconds);
/* One stage's published time; SIMPROF_INVALID_ARGUMENT naming the stages present when absent. */
simprof_status simprof_timing(const simprof_profiler* prof, const char* stage, double* seconds);
/* stage_table() into buf (NUL-terminated, truncated to cap); *needed (may be NULL): bytes with
 * the NUL. Needs stats_window > 0. */
simprof_status simprof_stage_table(const simprof_profiler* prof, char* buf, size_t cap,
                                   size_t* needed);
/* The run record `simprof compare` reads (schema simprof.run/2), written to path atomically. tool
 * names the writer (NULL: "simprof"); the n_workload key/value pairs say what decides a step's
 * work besides n_envs (compare refuses records whose workloads differ). Needs stats_window > 0. */
simprof_status simprof_write_run_record(const simprof_profiler* prof, const char* path,
                                        const char* tool, const char* const* workload_keys,
                                        const char* const* workload_values, size_t n_workload);
uint64_t simprof_steps(const simprof_profiler* prof);
/* The FPS line: the smoothed rate (NaN before the first sample), switched at run time (from any
 * thread), completed to the last step, and each sample handed to a callback. */
simprof_status simprof_fps(const simprof_profiler* prof, double* total_fps, double* fps_per_env);
simprof_status simprof_set_show_fps(simprof_profiler* prof, int show);
simprof_status simprof_fps_flush(simprof_profiler* prof);
/* Starts the FPS line afresh (no sample, no average): a rate from now on, after a warm-up. */
simprof_status simprof_fps_reset(simprof_profiler* prof);
typedef void (*simprof_fps_callback)(double total_fps, double fps_per_env, int64_t n_envs,
                                     void* user);
simprof_status simprof_set_fps_callback(simprof_profiler* prof, simprof_fps_callback callback,
                                        void* user);

/* --- the running mean ----------------------------------------------------------------------- */
typedef struct simprof_running_mean simprof_running_mean;
simprof_status simprof_running_mean_new_window(size_t window, simprof_running_mean** out);
simprof_status simprof_running_mean_new_ema(double alpha, simprof_running_mean** out);
void simprof_running_mean_free(simprof_running_mean* mean);
simprof_status simprof_running_mean_update(simprof_running_mean* mean, double x);
/* NaN until the window is full (window) or before the first value (EMA). */
double simprof_running_mean_value(const simprof_running_mean* mean);
uint64_t simprof_running_mean_count(const simprof_running_mean* mean);

/* --- per-env timer statistics and plots for a (rows, n_envs) array of ticks -------------------
 * read back from any framework (torch, Warp, CuPy, NumPy): the same report and SVG as in C++. */
typedef struct simprof_timer_stats simprof_timer_stats;
/* labels: `rows` row names. alpha < 0: the running mean of every frame; in [0, 1): an EMA. */
simprof_status simprof_timer_stats_new(const char* const* labels, int rows, int n_envs,
                                       double alpha, simprof_timer_stats** out);
void simprof_timer_stats_free(simprof_timer_stats* stats);
/* One frame, row-major (rows * n_envs ticks); ticks_per_second converts (1e9 for nanoseconds). */
simprof_status simprof_timer_stats_update(simprof_timer_stats* stats, const uint64_t* ticks,
                                          int rows, int n_envs, double ticks_per_second);
uint64_t simprof_timer_stats_frames(const simprof_timer_stats* stats);
/* Across envs of the running means (latest: of the latest frame), seconds: out[6] = min, p50,
 * p95, p99, max, mean. */
simprof_status simprof_timer_stats_across_envs(const simprof_timer_stats* stats, int row,
                                               int latest, double* out6);
/* The k slowest envs by running mean, slowest first: envs[k] (fewer when n_envs < k). */
simprof_status simprof_timer_stats_slowest(const simprof_timer_stats* stats, int row, int k,
                                           int* envs, int* count);
/* terminal_plot(stats, row) (width 0: the terminal's) and timers_svg(stats, title), as text into
 * buf (NUL-terminated, truncated to cap); *needed (may be NULL): bytes with the NUL. */
simprof_status simprof_timer_plot(const simprof_timer_stats* stats, int row, int width, char* buf,
                                  size_t cap, size_t* needed);
simprof_status simprof_timer_svg(const simprof_timer_stats* stats, const char* title, char* buf,
                                 size_t cap, size_t* needed);

/* --- collectives: a scope around a collective call (NCCL, torch.distributed) so the trace gives
 * the communication kernel launched inside it Kineto's collective arguments ----------------------
 * op: torch.distributed's name as Kineto writes it ("allreduce", "allgather", "reduce_scatter",
 * "broadcast", "reduce", "all_to_all", "send", "recv", "barrier"; "all_reduce", "all_gather" are
 * taken too). dtype: torch's name ("Float", "Double", "Half", "BFloat16", "Int", "Long", "Byte",
 * "Bool"). The scope ends (and its handle is freed) with simprof_collective_end; free it before
 * the profiler. */
typedef struct simprof_collective simprof_collective;
/** A collective call (simprof_collective_info_init: no op or dtype, 0 elements, the default
 * group). */
typedef struct simprof_collective_info {
  size_t size;            /**< sizeof(simprof_collective_info), set by _init */
  const char* op;         /**< torch.distributed's or Kineto's name (required) */
  int64_t in_nelems;      /**< elements in */
  int64_t out_nelems;     /**< elements out */
  const char* dtype;      /**< torch's name (required) */
  const char* group_name; /**< NULL: "0" */
  const char* group_desc; /**< NULL: "default_pg" */
  const int* ranks;       /**< the group's global ranks (NULL with n_ranks 0: none given) */
  size_t n_ranks;         /**< how many */
} simprof_collective_info;
void simprof_collective_info_init(simprof_collective_info* info);
simprof_status simprof_collective_begin(simprof_profiler* prof, const simprof_collective_info* info,
                                        simprof_collective** out);
/* Ends the scope and frees the handle (NULL: nothing). */
void simprof_collective_end(simprof_collective* collective);

/* --- trace sessions (torch.profiler's schedule; Perfetto/HTA JSON, one file per window) ------- */
/* flags: SIMPROF_SESSION_BACKGROUND hands each window over beside the loop: at a window's last
 * step the loop only stops the kernel tracer; waiting for the window's kernels, converting and
 * writing run on a thread of the session's own. windows and files grow once a window is written;
 * simprof_trace_wait waits for it (freeing the session, or a tracer of it, waits too). */
enum { SIMPROF_SESSION_BACKGROUND = 1 };
typedef struct simprof_trace simprof_trace;
/** A trace session's schedule and output (simprof_trace_options_init sets the defaults). */
typedef struct simprof_trace_options {
  size_t size;        /**< sizeof(simprof_trace_options): set by _init; lets it grow */
  int64_t wait;       /**< steps skipped at the start of each cycle (0) */
  int64_t warmup;     /**< steps traced and discarded before recording (0) */
  int64_t active;     /**< steps recorded per cycle, >= 1 (1) */
  int64_t repeat;     /**< cycles; 0 repeats forever (1) */
  int64_t skip_first; /**< steps skipped once, before the first cycle (0) */
  const char* dir;    /**< where rank<R>.json files go; NULL: "." (NULL) */
  int flags;          /**< 0 or SIMPROF_SESSION_BACKGROUND (0) */
} simprof_trace_options;
/* The defaults, and `size`. */
void simprof_trace_options_init(simprof_trace_options* options);
/* `options` NULL: the defaults. */
simprof_status simprof_trace_new(simprof_profiler* prof, const simprof_trace_options* options,
                                 simprof_trace** out);
void simprof_trace_free(simprof_trace* trace);
/* Returns once every window ended so far is written (at once without SIMPROF_SESSION_BACKGROUND).
 */
simprof_status simprof_trace_wait(simprof_trace* trace);
uint64_t simprof_trace_windows(const simprof_trace* trace);
uint64_t simprof_trace_dropped(const simprof_trace* trace);
/* The files written so far: count, then each path (valid until the next count). */
simprof_status simprof_trace_files_count(simprof_trace* trace, size_t* count);
simprof_status simprof_trace_file(const simprof_trace* trace, size_t index, const char** path);

#ifdef __cplusplus
}
#endif

#include "simprof/c/simprof_cuda.h" /* the CUDA backend's half */

#endif /* SIMPROF_C_SIMPROF_H */
