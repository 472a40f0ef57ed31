// SPDX-License-Identifier: MIT
// GraphCache: capture a step's kernels into CUDA graphs, one executable per shape, and replay them.
//
/* clang-format off */
//   simprof::cuda::Stream stream;                            // non-blocking, as capture requires
//   simprof::cuda::GraphCache cache(stream);
//   for (;;) {
//     cache.run({n_envs}, [&](cudaStream_t s) { engine.enqueue_step(s); });
//   }
/* clang-format on */
//
// Each run() executes exactly one step, so a simulation advances the same with or without graphs:
//   * the first `warmup` runs of a key execute the body eagerly on the stream (first-touch costs,
//     lazy module loading and allocator warm-up stay out of the capture);
//   * the next run captures the body (thread-local mode), makes an executable and launches it;
//   * every later run is one cudaGraphLaunch.
// The cache holds at most `capacity` executables. A new key beyond that takes over the least
// recently used executable with cudaGraphExecUpdate when the topology allows it (an update costs a
// fraction of an instantiation), and instantiates a new one only when the update is refused.
// capacity = 1 makes every shape change an update.
//
// A body that cannot be captured (a synchronisation, a synchronous copy or legacy-stream use, an
// allocation, a capture ended on another thread, an invalidated capture) gets a named diagnosis,
// the capture is ended cleanly (no stream left capturing, no graph leaked), one warning is logged
// and the key runs eagerly from then on. Wrap the body's CUDA calls in SIMPROF_CUDA_CHECK so the
// diagnosis can name the offending call; otherwise it is named from the error code alone.
//
// A measuring tool given to the cache (instrumentation.hpp: DeviceStageTimer::instrumentation(),
// GraphKernelTimer::instrumentation(), at construction or through attach()) gets an executable of
// its own per captured key: the graph with its nodes added, launched on the steps it samples; the
// graph as captured is launched on every other step. With several tools attached, a step runs the
// copy of the first (in attach order) that samples it. The cache holds the tools weakly: either
// side may be made or destroyed first. A key captured before a tool was attached is captured again
// (in place) on its next run, so its nodes are in. Run inside a step of a profiler that owns
// graph tools (a GpuProfile made from it), the cache attaches them itself: no wiring.
//
// The addresses a body uses are baked into its graph: keep inputs and outputs in persistent buffers
// (buffer.hpp) and stage new data into them.
//
// A cache belongs to one device, the current one when it is made (its stream's): one process per
// GPU has one cache per device, and run() with another device current throws std::logic_error
// naming both — a graph captured on one device is never replayed on another.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "simprof/cuda/graphs/capture.hpp"
#include "simprof/cuda/graphs/instrumentation.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "simprof/cuda/runtime/stream.hpp"

namespace spdlog {
class logger;
}

namespace simprof::cuda {

/// What a step is keyed by: its batch size and any user value (e.g. a hash of other shapes).
struct GraphKey {
  /// The step's batch size (environments).
  std::int64_t n_envs = 0;
  /// Any other value the step's graph depends on; 0: none.
  std::uint64_t user = 0;
  friend bool operator==(const GraphKey& a, const GraphKey& b) noexcept {
    return a.n_envs == b.n_envs && a.user == b.user;
  }
};

/// How a GraphCache warms up, how many executables it keeps, and how it captures.
struct GraphCacheOptions {
  int warmup = 3;              ///< eager runs of a new key before it is captured (>= 0)
  std::size_t capacity = 8;    ///< executables kept (>= 1)
  bool eager_fallback = true;  ///< false: a failed capture throws CaptureError instead
  /// The capture mode of cudaStreamBeginCapture (thread-local: other threads' calls are not
  /// checked against the capture).
  cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal;
};

/// What a GraphCache did so far, summed over every key (GraphCache::counters()).
struct GraphCacheCounters {
  /// Eager runs of new keys before their capture.
  std::uint64_t warmup_runs = 0;
  std::uint64_t captures = 0;  ///< successful captures
  /// Captures that failed (the key then runs eagerly).
  std::uint64_t failed_captures = 0;
  /// Executables made by cudaGraphInstantiate.
  std::uint64_t instantiations = 0;
  std::uint64_t updates = 0;          ///< executables reused through cudaGraphExecUpdate
  std::uint64_t update_refusals = 0;  ///< updates the driver refused (then instantiated)
  /// Launches of a captured executable.
  std::uint64_t replays = 0;
  std::uint64_t eager_runs = 0;  ///< runs of keys that fell back to eager
  /// Executables taken over or dropped for a new key (capacity).
  std::uint64_t evictions = 0;
  std::uint64_t instrumented_replays = 0;  ///< launches of an instrumented executable (included
                                           ///< in replays)
  ///@{
  /// Seconds spent capturing, instantiating and updating: totals, host wall time.
  double capture_s = 0, instantiate_s = 0, update_s = 0;
  ///@}
  /// Graph-allocation memory (a graph's memory nodes) given back by executables evicted, refused
  /// or cleared, in bytes (the driver's cudaGraphMemAttrUsedMemCurrent, before and after).
  std::uint64_t graph_memory_released = 0;
};

/// The cold start of one key: what its first captured run cost.
struct ColdStart {
  double capture_s = 0;                   ///< recording the body into a graph
  double instantiate_s = 0;               ///< 0 when updated
  double update_s = 0;                    ///< 0 when instantiated (or the refused attempt's time)
  double instrumented_instantiate_s = 0;  ///< the instrumented executable (0: none)
  /// An executable was updated (cudaGraphExecUpdate), not instantiated.
  bool updated = false;
};

/// Runs a step's body eagerly, then captured into a CUDA graph and replayed, one executable per
/// GraphKey, at most `capacity` of them (see the header comment).
class GraphCache {
 public:
  /// A step's work: enqueues its kernels and copies on the stream given.
  using Body = std::function<void(cudaStream_t)>;

  /// `stream` must be a non-blocking stream of the current device that outlives the cache;
  /// `instrumentation`, when given, is attached (attach()). Throws std::invalid_argument for
  /// warmup < 0, capacity 0 or a stream of another device.
  explicit GraphCache(cudaStream_t stream, GraphCacheOptions options = {},
                      const std::shared_ptr<GraphInstrumentation>& instrumentation = nullptr);
  ~GraphCache();
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  /// Executes one step for `key` (see the header comment). A replay is a lookup and one
  /// cudaGraphLaunch.
  void run(const GraphKey& key, const Body& body);
  /// Recaptures `key` (its buffers moved, a parameter baked into the graph changed) and updates its
  /// executable in place when the topology allows it. Executes one step.
  void recapture(const GraphKey& key, const Body& body);
  /// Drops every executable and diagnosis (synchronises the stream first).
  void clear();
  /// A measuring tool whose nodes the cache's captures get, beside those attached before (held
  /// weakly: it may go first; a tool that is gone is never called; null or attached already: no
  /// change). Keys captured without it are captured again on their next run. The tool's nodes must
  /// go to this cache's stream.
  void attach(const std::shared_ptr<GraphInstrumentation>& tool);
  /// Stops asking every attached tool: each key runs its graph as captured from now on (the
  /// executables with the tools' nodes are dropped; nothing is captured again).
  void detach() noexcept;
  /// Stops asking `tool`: its executables are dropped, the other tools' stay (no recapture).
  void detach(const std::shared_ptr<GraphInstrumentation>& tool) noexcept;
  /// The first attached tool still alive, or null.
  std::shared_ptr<GraphInstrumentation> instrumentation() const noexcept;
  /// Whether `key` currently replays a graph.
  bool captured(const GraphKey& key) const noexcept;
  /// Whether `key` fell back to eager execution.
  bool fell_back(const GraphKey& key) const noexcept;
  /// Why `key`'s capture failed, or nothing when it did not (or was never tried).
  std::optional<CaptureDiagnosis> diagnosis(const GraphKey& key) const;
  /// What `key`'s first captured run cost, or nothing when it was not captured yet.
  std::optional<ColdStart> cold_start(const GraphKey& key) const;
  /// Executables held.
  std::size_t size() const noexcept;
  /// What the cache did so far, summed over every key.
  const GraphCacheCounters& counters() const noexcept { return counters_; }
  /// Device memory the executables hold in graph allocations (memory nodes: cudaMallocAsync
  /// captured into the step), all of them or one key's: what the driver's count of graph memory
  /// grew by when the executable was made and first launched. 0 for a graph without memory nodes.
  std::int64_t graph_memory() const noexcept;
  /// The graph-allocation memory of `key`'s executable (0: none, or not captured).
  std::int64_t graph_memory(const GraphKey& key) const noexcept;
  /// The stream every step runs on (given at construction).
  cudaStream_t stream() const noexcept { return stream_; }
  /// The device the cache belongs to.
  int device() const noexcept { return device_; }
  /// Counters and cold starts are logged at debug level here (default: the "simprof" logger).
  void set_logger(std::shared_ptr<spdlog::logger> logger);

 private:
  struct Entry {
    GraphKey key;
    GraphExecHandle exec;
    /// An executable with a measuring tool's nodes (instrumentation.hpp); its tool is told when
    /// it goes (GraphInstrumentation::copy_released).
    struct Copy {
      /// The tool's copy of the graph, kept while its executable is.
      GraphHandle graph;
      /// The copy, instantiated.
      GraphExecHandle exec;
      /// The tool that made it (held weakly).
      std::weak_ptr<GraphInstrumentation> tool;
      /// Empty.
      Copy() = default;
      /// Takes `o`'s copy (`o` then tells no one).
      Copy(Copy&& o) noexcept = default;
      /// Takes `o`'s copy, telling the tool of the one held before (vector::erase moves over it).
      Copy& operator=(Copy&& o) noexcept {
        if (this != &o) {
          released();
          graph = std::move(o.graph);
          exec = std::move(o.exec);
          tool = std::move(o.tool);
        }
        return *this;
      }
      /// Tells the tool its copy is launched no more.
      ~Copy() { released(); }
      /// Tells the tool (once: the graph goes with the call).
      void released() noexcept {
        if (!graph) return;
        if (const auto t = tool.lock()) t->copy_released(graph.get());
        exec.reset();
        graph.reset();
      }
    };
    std::vector<Copy> instrumented;  // in attach order
    std::uint64_t epoch = 0;         // the cache's attach epoch its executables were made in
    int runs = 0;                    // runs so far (warm-up counting)
    std::uint64_t last_use = 0;
    bool fallback = false;
    std::optional<CaptureDiagnosis> diagnosis;
    std::optional<ColdStart> cold;
    std::int64_t graph_memory = 0;  // bytes its executable holds in graph allocations
  };
  void release(Entry& e);  // destroys its executables, counting the graph memory given back
  Entry* find(const GraphKey& key) noexcept;
  const Entry* find(const GraphKey& key) const noexcept;
  using Tools = std::vector<std::shared_ptr<GraphInstrumentation>>;
  using ToolCopies = std::vector<std::pair<GraphHandle, std::weak_ptr<GraphInstrumentation>>>;
  void capture_and_launch(Entry& e, const Body& body, bool in_place);
  // The body captured on the stream, the tools told when it begins and ends (graph_capture.cpp).
  // Null, with `failed` set, when it could not be.
  GraphHandle capture(const Body& body, const Tools& tools,
                      std::optional<CaptureDiagnosis>& failed);
  // `e`'s executable updated to `graph`: its own (in_place), or the least recently used one when
  // the cache is full. False: none to update, or the driver refused.
  bool update_exec(Entry& e, cudaGraph_t graph, bool in_place, ColdStart& cold);
  void instantiate_copies(Entry& e, ToolCopies& copies, ColdStart& cold);
  void fall_back(Entry& e, CaptureDiagnosis d, const Body& body);
  Entry* lru_with_exec(const Entry* except) noexcept;
  void launch(Entry& e);

  cudaStream_t stream_;
  int device_;
  // The replay path's device check: the driver's current context, compared with the one the cache
  // was made in (cuCtxGetCurrent through the runtime's entry point: no runtime call to trace).
  void* context_ = nullptr;
  void* get_context_ = nullptr;
  void check_device() const;
  Stream sentinel_{cudaStreamDefault};  // blocking: exposes legacy-stream work during capture
  Event fork_{cudaEventDisableTiming}, join_{cudaEventDisableTiming};
  Entry* last_ = nullptr;  // the entry run last: the replay fast path
  GraphCacheOptions options_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::uint64_t tick_ = 0;
  GraphCacheCounters counters_;
  std::shared_ptr<spdlog::logger> logger_;
  std::vector<std::weak_ptr<GraphInstrumentation>> tools_;  // attach(), in its order
  std::uint64_t epoch_ = 0;                                 // attach() and detach() count here
  std::uint64_t step_tools_ = 0;  // serial of the step tools attached last (StepTools::serial)
  void adopt_step_tools() noexcept;
};

}  // namespace simprof::cuda
