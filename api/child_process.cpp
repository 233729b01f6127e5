#include "api/child_process.hpp"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

#include "chip/stop_request.hpp"

namespace tpuemu::api {

ChildOutcome run_in_child(const std::function<std::string()>& work, bool quiet) {
  ChildOutcome outcome;
  int fds[2];
  if (pipe(fds) != 0) {
    outcome.death = "pipe() failed";
    return outcome;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    outcome.death = "fork() failed";
    return outcome;
  }
  if (pid == 0) {
    close(fds[0]);
    // Die with the parent, even if it was killed before this line ran.
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(1);
    chip::install_stop_signal_handlers(/*second_kills=*/false);
    if (quiet &&
        (std::freopen("/dev/null", "w", stdout) == nullptr || std::freopen("/dev/null", "w", stderr) == nullptr)) {
      _exit(1);
    }
    std::string text;
    try {
      text = work();
    } catch (...) {
      _exit(1);
    }
    std::size_t written = 0;
    while (written < text.size()) {
      const ssize_t n = write(fds[1], text.data() + written, text.size() - written);
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    close(fds[1]);
    _exit(written == text.size() ? 0 : 1);
  }
  close(fds[1]);
  std::string text;
  bool forwarded = false;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) {
      if (const int signal_number = chip::stop_requested(); signal_number != 0 && !forwarded) {
        // The child stops at its next quantum and reports as a fault would.
        kill(pid, signal_number);
        forwarded = true;
      }
      continue;
    }
    break;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !text.empty()) {
    outcome.output = std::move(text);
  } else {
    outcome.death = WIFSIGNALED(status) ? fmt::format("the emulation died of signal {}", WTERMSIG(status))
                                        : std::string("the emulation ended without a result");
  }
  return outcome;
}

}  // namespace tpuemu::api
