// SPDX-License-Identifier: MIT
// The `simprof` command. `simprof run [options] -- COMMAND [ARGS...]` runs COMMAND with simprof's
// NVTX tool injected (NVTX_INJECTION64_PATH): its own NVTX ranges become steps and stages, with the
// FPS line while it runs and the stage table when it exits. Nothing in the program changes.
// `simprof compare BASE.json NEW.json` tests two run records against each other (src/compare); it
// is built without NVTX's headers too, `run` then says why it cannot run.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "compare_cli.hpp"
#include "launch_preload.hpp"
#include "run_args.hpp"

namespace {

pid_t child = -1;
char mark_path[64] = "/tmp/simprof-run-XXXXXX";

// SIGUSR1 to simprof: the tool's report signal to the process that took the run's record (the
// pid in the mark: the program, or its child under a launcher), once the tool's handler is there
// (before that, the signal's default would end the program). Async-signal-safe calls only.
void forward_usr1(int) {
  const int fd = open(mark_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char text[64] = {};
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  pid_t pid = 0;
  for (ssize_t i = 0; i < n; ++i)
    if (text[i] >= '0' && text[i] <= '9') pid = pid * 10 + (text[i] - '0');
  if (pid > 0) kill(pid, simprof::run::report_signal());  // none: no tool took the run yet
}

bool exists(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// What the tool wrote in the mark file: "started", "refused", or "" (it never ran).
std::string mark_says(const char* path) {
  std::ifstream in(path);
  std::string word;
  in >> word;
  return word;
}

// libsimprof_nvtx.so: SIMPROF_NVTX_LIB, else beside this executable (the build tree), else in the
// install's library directory (SIMPROF_TOOL_DIR, relative to the executable's).
std::string find_tool(std::string& looked) {
  if (const char* v = std::getenv("SIMPROF_NVTX_LIB"); v && *v) {
    looked = v;
    return exists(v) ? v : "";
  }
  std::vector<char> self(4096);
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  std::string dir = n > 0 ? std::string(self.data(), static_cast<std::size_t>(n)) : "";
  dir = dir.substr(0, dir.rfind('/') + 1);
  for (const char* rel : {"", SIMPROF_TOOL_DIR "/"}) {
    const std::string p = dir + rel + "libsimprof_nvtx.so";
    looked += (looked.empty() ? "" : ", ") + p;
    if (exists(p)) return p;
  }
  return "";
}

// `path` from the working directory (the program may change its own).
std::string absolute(const std::string& path) {
  if (path.front() == '/') return path;
  std::vector<char> cwd(4096);
  if (getcwd(cwd.data(), cwd.size()) == nullptr) return path;
  return std::string(cwd.data()) + "/" + path;
}

// --json FILE as an absolute path, checked writable before the run: "" with a message when it is
// not.
std::string record_path(const std::string& file) {
  const std::string path = absolute(file);
  if (is_directory(path)) {
    std::fprintf(stderr, "simprof run: --json %s: is a directory (expected a file to write)\n",
                 file.c_str());
    return "";
  }
  const std::string probe = path + ".tmp";
  FILE* f = std::fopen(probe.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "simprof run: --json %s: cannot write there (%s)\n", file.c_str(),
                 std::strerror(errno));
    return "";
  }
  std::fclose(f);
  std::remove(probe.c_str());
  std::remove(path.c_str());  // a record from an earlier run is not this run's
  return path;
}

// What became of the run record.
void say_record(const std::string& path, bool crashed) {
  if (path.empty()) return;
  if (access(path.c_str(), R_OK) != 0)
    std::fprintf(stderr, "simprof run: no run record was written to %s (%s)\n", path.c_str(),
                 crashed ? "no snapshot was taken before the crash: one every "
                           "SIMPROF_RUN_JSON_EVERY_MS, 1000 by default"
                         : "see above");
  else if (crashed)
    std::fprintf(stderr, "simprof run: %s holds the record's last snapshot before the crash\n",
                 path.c_str());
  else
    std::fprintf(stderr, "simprof run: the run record: %s\n", path.c_str());
}

// Why there is no NVTX tool to run a program with: not found, or not built.
void say_no_tool(const std::string& looked) {
#ifdef SIMPROF_RUN_TOOL
  std::fprintf(stderr,
               "simprof run: cannot find libsimprof_nvtx.so (looked at %s; set SIMPROF_NVTX_LIB "
               "to its path)\n",
               looked.c_str());
#else
  std::fprintf(stderr,
               "simprof run: this simprof was built without NVTX's headers (nvtx3/nvToolsExt.h), "
               "so without the NVTX tool it runs a program with (looked at %s); simprof compare "
               "works. Build it where the CUDA toolkit or NVTX3 is, or set SIMPROF_NVTX_LIB to a "
               "libsimprof_nvtx.so\n",
               looked.c_str());
#endif
}

int run(const simprof::run::RunArgs& a) {
  std::string looked;
  const std::string tool = find_tool(looked);
  if (tool.empty()) {
    say_no_tool(looked);
    return 2;
  }
  const std::string json = a.json.empty() ? "" : record_path(a.json);
  if ((!a.json.empty() && json.empty()) || !simprof::run::set_launches(a, tool)) return 2;
  char* mark = mark_path;
  const int fd = mkstemp(mark);
  if (fd < 0) {
    std::perror("simprof run: mkstemp");
    return 2;
  }
  close(fd);
  unlink(mark);  // the tool writes it again when it starts
  if (const char* old = std::getenv("NVTX_INJECTION64_PATH"); old && *old && tool != old)
    std::fprintf(stderr,
                 "simprof run: NVTX_INJECTION64_PATH was %s; simprof's tool takes its "
                 "place for this run\n",
                 old);
  setenv("NVTX_INJECTION64_PATH", tool.c_str(), 1);
  setenv("SIMPROF_RUN_MARK", mark, 1);
  setenv("SIMPROF_RUN_STEP", a.step.c_str(), 1);
  setenv("SIMPROF_RUN_N_ENVS", std::to_string(a.n_envs).c_str(), 1);
  setenv("SIMPROF_RUN_JSON", json.c_str(), 1);
  setenv("SIMPROF_RUN_COMMAND", simprof::run::shell_line(a.command).c_str(), 1);
  if (!a.fps) setenv("SIMPROF_SHOW_FPS", "0", 1);
  setenv("SIMPROF_RUN_GPU", a.gpu < 0 ? "auto" : a.gpu ? "1" : "0", 1);
  if (a.gpu_every > 0) setenv("SIMPROF_RUN_GPU_EVERY", std::to_string(a.gpu_every).c_str(), 1);
  if (a.gpu_interval_ms >= 0)
    setenv("SIMPROF_RUN_GPU_INTERVAL_MS", std::to_string(a.gpu_interval_ms).c_str(), 1);
  if (a.trace_to > 0) {
    setenv("SIMPROF_RUN_TRACE_FROM", std::to_string(a.trace_from).c_str(), 1);
    setenv("SIMPROF_RUN_TRACE_TO", std::to_string(a.trace_to).c_str(), 1);
    setenv("SIMPROF_RUN_TRACE_DIR", absolute(a.trace_dir).c_str(), 1);
  }
  child = fork();
  if (child < 0) {
    std::perror("simprof run: fork");
    return 2;
  }
  if (child == 0) {
    std::vector<char*> argv;
    for (const std::string& s : a.command) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "simprof run: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  std::signal(SIGINT, SIG_IGN);  // Ctrl-C reaches the program; we wait for it to end
  std::signal(SIGUSR1, forward_usr1);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string said = mark_says(mark);
  const bool started = said == "started";
  unlink(mark);
  unlink((std::string(mark) + ".first").c_str());  // the first process's claim (the tool's)
  int rc = 0;
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "simprof run: %s was killed by signal %d (%s)\n", a.command[0].c_str(),
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    rc = 128 + WTERMSIG(status);
  } else {
    rc = WEXITSTATUS(status);
  }
  if (started) say_record(json, WIFSIGNALED(status));
  if (said.empty() && rc != 127)
    std::fprintf(stderr,
                 "simprof run: %s made no NVTX call, so nothing was profiled (is it built with "
                 "NVTX ranges? Built with NVTX_DISABLE defined, its NVTX calls compile to "
                 "nothing. Or something it runs, such as nsys, set NVTX_INJECTION64_PATH to a "
                 "tool of its own)\n",
                 a.command[0].c_str());
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "compare")
    return simprof::compare::compare_main(argc - 1, argv + 1);
  simprof::run::RunArgs a;
  std::string error;
  if (!simprof::run::parse_run_args(argc, argv, a, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return a.help ? 0 : 2;
  }
  return run(a);
}
