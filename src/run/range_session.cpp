// SPDX-License-Identifier: MIT
#include "range_session.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "range_record.hpp"
#include "range_report.hpp"
#include "run_args.hpp"
#include "simprof/base/io.hpp"
#include "simprof/detail/thread_id.hpp"

namespace simprof::run {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

ProfilingOptions options() {
  ProfilingOptions o;
  o.stats_window = std::size_t{1} << 16;  // p50/p95/p99 over the last 65,536 steps
  return ProfilingOptions::from_env(o);
}

// The calling thread, as RangeSteps and the trace know it: its OS thread id (never 0).
std::uint64_t thread() { return static_cast<std::uint64_t>(detail::os_thread_id()); }

// Ranges open on this thread in each NVTX domain, as NVTX counts them: the first kDomains domains
// a thread uses each, any more share one count. Plain arrays: NVTX may be called after the
// thread's thread_local objects with destructors are gone (at exit).
constexpr int kDomains = 16;
thread_local std::uint64_t depth_domain[kDomains];
thread_local int depth_count[kDomains + 1];
thread_local int depth_domains = 0;
int& depth_in(std::uint64_t domain) {
  for (int i = 0; i < depth_domains; ++i)
    if (depth_domain[i] == domain) return depth_count[i];
  if (depth_domains == kDomains) return depth_count[kDomains];
  depth_domain[depth_domains] = domain;
  return depth_count[depth_domains++];
}

// A start/end range's id: its thread's id in the high bits, so that end() finds the thread (a
// Linux thread id is below 2^22, PID_MAX_LIMIT).
constexpr int kIdBits = 40;

int report_pipe[2] = {-1, -1};  // the report signal -> the reporting thread (the handler writes)
struct sigaction program_action {};  // the program's own handler of that signal, if it had one

void on_report_signal(int sig, siginfo_t* info, void* context) {
  const int saved = errno;
  const char c = 1;
  (void)!write(report_pipe[1], &c, 1);
  errno = saved;
  if (program_action.sa_flags & SA_SIGINFO)
    program_action.sa_sigaction(sig, info, context);
  else if (program_action.sa_handler != SIG_DFL && program_action.sa_handler != SIG_IGN)
    program_action.sa_handler(sig);
}

// The report signal (simprof got SIGUSR1): the report so far, from a thread of its own (nothing
// is printed in the handler). The program's SIGUSR1 is left alone.
void listen_for_reports(RangeSession& session) {
  if (pipe2(report_pipe, O_CLOEXEC) != 0) return;
  std::thread([&session] {
    char c = 0;
    while (read(report_pipe[0], &c, 1) == 1)
      std::fputs(("simprof run: the report so far (SIGUSR1); the run goes on\n" + session.report())
                     .c_str(),
                 stderr);
  }).detach();
  struct sigaction sa {};
  sa.sa_sigaction = on_report_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  sigaction(report_signal(), &sa, &program_action);
}

}  // namespace

// This process's command line (another process of the run than its first).
static std::string own_command() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  return shell_line(args);
}

// The variable as a whole number in [least, most]; `fallback` when it is not set.
long long whole(const char* name, long long fallback, long long least, long long most) {
  const std::string n = env(name);
  if (n.empty()) return fallback;
  long long v = 0;
  if (!parse_whole(n, least, most, v))
    throw std::invalid_argument(
        fmt::format("{} = '{}' (expected a whole number from {} to {})", name, n, least, most));
  return v;
}

std::string process_path(const std::string& path, const std::string& process, bool directory) {
  if (process.empty() || path.empty()) return path;
  if (directory) return path + "/" + process;
  const std::size_t slash = path.rfind('/'), dot = path.rfind('.');
  const bool suffix = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  return suffix ? path.substr(0, dot) + "." + process + path.substr(dot) : path + "." + process;
}

RunConfig RunConfig::from_env() {
  RunConfig c;
  c.step = env("SIMPROF_RUN_STEP");
  c.mark = env("SIMPROF_RUN_MARK");
  c.json = env("SIMPROF_RUN_JSON");
  c.command = env("SIMPROF_RUN_COMMAND");
  c.n_envs = whole("SIMPROF_RUN_N_ENVS", 0, 0, std::numeric_limits<std::int64_t>::max());
  c.json_every_ms = static_cast<int>(whole("SIMPROF_RUN_JSON_EVERY_MS", 1000, 1, 3'600'000));
  constexpr long long kMost = std::numeric_limits<std::int64_t>::max();
  c.trace_from = whole("SIMPROF_RUN_TRACE_FROM", 0, 0, kMost);
  c.trace_to = whole("SIMPROF_RUN_TRACE_TO", 0, 0, kMost);
  if (c.trace_to != 0 && c.trace_to <= c.trace_from)
    throw std::invalid_argument(
        fmt::format("SIMPROF_RUN_TRACE_FROM = {}, _TO = {} (expected from "
                    "< to)",
                    c.trace_from, c.trace_to));
  if (const std::string d = env("SIMPROF_RUN_TRACE_DIR"); !d.empty()) c.trace_dir = d;
  if (const std::string g = env("SIMPROF_RUN_GPU"); g == "1" || g == "0")
    c.gpu = g == "1" ? GpuMode::kOn : GpuMode::kOff;
  else if (!g.empty() && g != "auto")
    throw std::invalid_argument(fmt::format("SIMPROF_RUN_GPU = '{}' (expected 1, 0 or auto)", g));
  c.gpu_sampling.every = whole("SIMPROF_RUN_GPU_EVERY", 64, 2, 1'000'000'000);
  c.gpu_sampling.interval_ms = whole("SIMPROF_RUN_GPU_INTERVAL_MS", 100, 0, 3'600'000);
  if (const std::string l = env("SIMPROF_RUN_GPU_LAUNCHES");
      !l.empty() && !parse_launches(l, c.gpu_sampling.launches))
    throw std::invalid_argument(
        fmt::format("SIMPROF_RUN_GPU_LAUNCHES = '{}' (expected auto, hook or cupti)", l));
  c.gpu_sampling.hook_unused = env("SIMPROF_RUN_HOOK_UNUSED");
  // The run's first process with NVTX calls takes the record; a program's other processes (its
  // workers, or the program under a launcher) write their own beside it.
  if (!c.mark.empty()) {
    const int fd = open((c.mark + ".first").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      close(fd);
    } else if (errno == EEXIST) {
      c.process = fmt::format("pid{}", getpid());
      c.command = own_command();  // this process's, not the run's
      c.json = process_path(c.json, c.process, false);
      c.trace_dir = process_path(c.trace_dir, c.process, true);
    }
  }
  return c;
}

// The record's snapshots while the program runs: a crash leaves the latest one.
void snapshot_every(RangeSession& session, int ms) {
  std::thread([&session, ms] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      session.write_record(false);
    }
  }).detach();
}

RangeSession& RangeSession::get() {
  static RangeSession* const session = [] {
    auto* s = new RangeSession();  // never destroyed: NVTX may call until the process is gone
    std::atexit([] { RangeSession::get().finish(); });
    // A copy made by fork() (no exec) holds this process's steps: it profiles nothing more and
    // writes nothing (no lock is taken in it: another thread may have held one at the fork). The
    // handler never calls get(): a fork while it is still making the session would wait on it.
    static std::atomic<RangeSession*> made{nullptr};
    made.store(s);
    pthread_atfork(nullptr, nullptr, [] {
      if (RangeSession* copy = made.load()) copy->forked_.store(true);
    });
    listen_for_reports(*s);
    if (!s->config_.json.empty()) snapshot_every(*s, s->config_.json_every_ms);
    // Once the report signal is handled: simprof run forwards SIGUSR1 to this pid from now on.
    if (!s->config_.mark.empty() && s->config_.process.empty()) {
      try {  // whole or not at all: simprof run reads the pid from it
        write_file_atomic(s->config_.mark, fmt::format("started {}\n", getpid()));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "simprof run: %s\n", e.what());
      }
    }
    return s;
  }();
  return *session;
}

RangeSession::RangeSession()
    : config_(RunConfig::from_env()),
      prof_(options(), config_.n_envs),
      steps_(prof_, RangeStepsOptions{config_.step, static_cast<std::uint64_t>(getpid())}),
      device_(std::make_unique<RangeDevice>(prof_, config_.gpu, config_.gpu_sampling)) {
  if (config_.trace_to > 0) {
    start_trace();
    steps_.on_range(
        [this](std::uint64_t thread, std::string_view name, std::int64_t begin, std::int64_t end) {
          other_ranges_.add(static_cast<std::int64_t>(thread), name, begin, end);
        });
  }
  steps_.on_change([this] {  // the steps so far were another range's: said again, traced afresh
    said_step_ = false;
    if (trace_) start_trace();
    device_->restart();
  });
  // The record's GPU clocks (nvidia-smi: another process, once) read now, before
  // the program's first range, not by a snapshot under the lock its NVTX calls wait on mid-loop.
  if (!config_.json.empty()) (void)nvidia_gpu_clocks();
}

int RangeSession::push(std::string_view name, std::uint64_t domain) {
  int& depth = depth_in(domain);
  if (!forked_.load(std::memory_order_relaxed)) open(thread(), name, domain, 0);
  return depth++;
}

std::uint64_t RangeSession::start(std::string_view name, std::uint64_t domain) {
  if (forked_.load(std::memory_order_relaxed)) return 0;
  const std::uint64_t t = thread();
  const std::uint64_t n = started_.fetch_add(1, std::memory_order_relaxed) + 1;
  const std::uint64_t id = t << kIdBits | (n & ((std::uint64_t{1} << kIdBits) - 1));
  open(t, name, domain, id);
  return id;
}

void RangeSession::open(std::uint64_t thread, std::string_view name, std::uint64_t domain,
                        std::uint64_t id) {
  const std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  // Between steps on the step's thread: the device side starts, or changes session (a listener
  // attaches only outside a step).
  if (steps_.at_step_boundary(thread, name)) device_->step(trace_.get());
  try {
    steps_.push(thread, name, domain, id);
  } catch (const std::exception& e) {  // the profiler refused a step: said, the run goes on
    std::fprintf(stderr, "simprof run: %s\n", e.what());
  }
  if (!said_step_ && steps_.step_chosen() && steps_.step_thread() != 0) {
    said_step_ = true;
    std::fputs(
        tagged(fmt::format("simprof run: steps are the NVTX range \"{}\"{}\n", steps_.step_name(),
                           config_.step.empty()
                               ? " (the outermost range that repeats; --step NAME to choose)"
                               : ""))
            .c_str(),
        stderr);
  }
}

int RangeSession::pop(std::uint64_t domain) {
  const std::uint64_t t = thread();
  if (!forked_.load(std::memory_order_relaxed)) {
    const std::lock_guard<std::mutex> lock(mu_);
    if (!finished_) {
      try {
        steps_.pop(t, domain);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "simprof run: %s\n", e.what());
      }
    }
  }
  int& depth = depth_in(domain);
  if (depth == 0) return -1;
  return --depth;
}

void RangeSession::end(std::uint64_t id) {
  if (forked_.load(std::memory_order_relaxed)) return;
  const std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  try {
    steps_.end(id >> kIdBits, id);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "simprof run: %s\n", e.what());
  }
}

const char* RangeSession::intern(std::string_view s) {
  if (forked_.load(std::memory_order_relaxed)) return "";  // a forked copy names nothing
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = interned_.find(s);
  if (it == interned_.end()) it = interned_.emplace(s).first;
  return it->c_str();
}

void RangeSession::start_trace() {
  other_joined_.reset();
  trace_.reset();  // first: one session attached at a time
  TraceOptions o;
  o.schedule.skip_first = config_.trace_from;
  o.schedule.active = config_.trace_to - config_.trace_from;
  o.dir = config_.trace_dir;
  trace_ = std::make_unique<TraceSession>(prof_, o);
  other_joined_ = trace_->add_source(&other_ranges_);
}

std::string RangeSession::report(bool final) {
  if (forked_.load(std::memory_order_relaxed)) return "";
  const std::lock_guard<std::mutex> lock(mu_);
  std::string out = range_report(prof_, steps_, config_.step, final) + device_->report();
  if (trace_) {
    const auto files = trace_->files();
    if (files.empty())
      out += fmt::format("simprof run: --trace-steps {}:{}: no trace window ended ({} steps ran)\n",
                         config_.trace_from, config_.trace_to, prof_.steps());
    for (const std::string& f : files) out += fmt::format("simprof run: the trace: {}\n", f);
  }
  if (final && !config_.process.empty() && !config_.json.empty())
    out += fmt::format("simprof run: this process's run record: {}\n", config_.json);
  return tagged(std::move(out));
}

std::string RangeSession::tagged(std::string out) const {
  if (config_.process.empty()) return out;
  // Another process of the run: every line says whose it is.
  const std::string tag = "simprof run (" + config_.process + "):";
  for (std::size_t at = out.find("simprof run:"); at != std::string::npos;
       at = out.find("simprof run:", at + tag.size()))
    out.replace(at, 12, tag);
  return out;
}

void RangeSession::write_record(bool final) {
  if (config_.json.empty() || forked_.load(std::memory_order_relaxed)) return;
  const std::lock_guard<std::mutex> writing(write_mu_);
  record::Json doc;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (!final && (finished_ || steps_.steps() == written_steps_)) return;  // nothing new
    written_steps_ = steps_.steps();
    try {
      doc = range_record(prof_, steps_, config_.step, config_.command, final);
      doc["device"] = device_->json();
    } catch (const std::exception& e) {
      if (!said_write_error_) std::fprintf(stderr, "simprof run: the run record: %s\n", e.what());
      said_write_error_ = true;
      return;
    }
  }
  try {
    write_file_atomic(config_.json, doc.dump(2) + "\n");
  } catch (const std::exception& e) {
    if (!said_write_error_) std::fprintf(stderr, "simprof run: %s\n", e.what());
    said_write_error_ = true;
  }
}

void RangeSession::finish() {
  if (forked_.load(std::memory_order_relaxed)) return;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    steps_.finish();
    device_->finish();
  }
  std::fputs(report(true).c_str(), stderr);
  write_record(true);
}

}  // namespace simprof::run
