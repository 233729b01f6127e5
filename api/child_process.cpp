#include "api/child_process.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

#include "chip/stop_request.hpp"
#include "dist/child_ranks.hpp"

namespace tpuemu::api {

ChildOutcome run_in_child(const std::function<std::string()>& work, bool quiet) {
  ChildOutcome outcome;
  int fds[2];
  if (pipe(fds) != 0) {
    outcome.death = "pipe() failed";
    return outcome;
  }
  // Under mpirun the child reaches the other ranks through this process.
  dist::Ranks& ranks = dist::world();
  const std::uint32_t rank = ranks.rank();
  const std::uint32_t rank_count = ranks.size();
  int channel[2] = {-1, -1};
  if (rank_count > 1 && socketpair(AF_UNIX, SOCK_STREAM, 0, channel) != 0) {
    close(fds[0]);
    close(fds[1]);
    outcome.death = "socketpair() failed";
    return outcome;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    if (channel[0] >= 0) {
      close(channel[0]);
      close(channel[1]);
    }
    outcome.death = "fork() failed";
    return outcome;
  }
  if (pid == 0) {
    close(fds[0]);
    // Die with the parent, even if it was killed before this line ran.
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(1);
    chip::install_stop_signal_handlers(/*second_kills=*/false);
    if (channel[0] >= 0) {
      close(channel[0]);
      dist::replace_world(std::make_unique<dist::ChildRanks>(channel[1], rank, rank_count));
    }
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
  if (channel[1] >= 0) close(channel[1]);
  std::string text;
  bool forwarded = false;
  char buffer[4096];
  // [0]: the result pipe; [1]: the child's calls to the ranks (fd -1: none,
  // or closed; poll ignores it).
  pollfd watched[2] = {{fds[0], POLLIN, 0}, {channel[0], POLLIN, 0}};
  while (watched[0].fd >= 0 || watched[1].fd >= 0) {
    if (poll(watched, 2, -1) < 0) {
      if (errno != EINTR) break;
      if (const int signal_number = chip::stop_requested(); signal_number != 0 && !forwarded) {
        // The child stops at its next quantum and reports as a fault would.
        kill(pid, signal_number);
        forwarded = true;
      }
      continue;
    }
    if (watched[1].fd >= 0 && watched[1].revents != 0 && !dist::serve_child_request(watched[1].fd, ranks)) {
      close(watched[1].fd);
      watched[1].fd = -1;
    }
    if (watched[0].fd >= 0 && watched[0].revents != 0) {
      const ssize_t n = read(watched[0].fd, buffer, sizeof buffer);
      if (n > 0) {
        text.append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(watched[0].fd);
        watched[0].fd = -1;
      }
    }
  }
  for (const pollfd& w : watched) {
    if (w.fd >= 0) close(w.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !text.empty()) {
    outcome.output = std::move(text);
  } else {
    outcome.death = WIFSIGNALED(status) ? fmt::format("the emulation died of signal {}", WTERMSIG(status))
                                        : std::string("the emulation ended without a result");
    // The other ranks may be waiting for this one's next call: end them all
    // rather than leave them hanging.
    if (rank_count > 1) {
      dist::rank_message(outcome.death);
      ranks.abort(kDeadChildExitCode);
    }
  }
  return outcome;
}

}  // namespace tpuemu::api
