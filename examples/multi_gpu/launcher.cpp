// SPDX-License-Identifier: MIT
#include "launcher.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

extern char** environ;

namespace simprof::examples {

LaunchResult launch_local_ranks(int ranks, const std::vector<std::string>& argv,
                                const std::vector<std::string>& extra_env) {
  std::vector<pid_t> children;
  auto stop_all = [&] {
    for (pid_t c : children) ::kill(c, SIGTERM);
  };
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string v = *e;
      const bool ours = v.rfind("RANK=", 0) == 0 || v.rfind("LOCAL_RANK=", 0) == 0 ||
                        v.rfind("WORLD_SIZE=", 0) == 0;
      if (!ours) env.push_back(v);
    }
    env.push_back(fmt::format("RANK={}", r));
    env.push_back(fmt::format("LOCAL_RANK={}", r));
    env.push_back(fmt::format("WORLD_SIZE={}", ranks));
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> envp, args;
    for (auto& v : env) envp.push_back(v.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& a : argv_copy) args.push_back(a.data());
    args.push_back(nullptr);
    pid_t pid = 0;
    if (const int rc =
            ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, args.data(), envp.data());
        rc != 0) {
      stop_all();
      throw std::runtime_error(
          fmt::format("multi_gpu: posix_spawn of rank {} failed: {}", r, std::strerror(rc)));
    }
    children.push_back(pid);
  }
  LaunchResult result;
  for (std::size_t left = children.size(); left > 0; --left) {
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, 0);
    if (done < 0) {
      if (errno == EINTR) {
        ++left;
        continue;
      }
      break;
    }
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) {
      if (result.failed++ == 0) {
        result.first_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        for (pid_t c : children)
          if (c != done) ::kill(c, SIGTERM);  // one rank down: the others would wait for it
      }
    }
  }
  return result;
}

}  // namespace simprof::examples
