#include "chip/stop_request.hpp"

#include <atomic>
#include <csignal>

namespace tpuemu::chip {
namespace {

std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "request_stop runs in signal handlers");

}  // namespace

void request_stop(int signal_number) noexcept {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, signal_number, std::memory_order_relaxed);
}

int stop_requested() noexcept {
  return g_stop_signal.load(std::memory_order_relaxed);
}

void install_stop_signal_handlers(bool second_kills) {
  struct sigaction action {};
  action.sa_handler = [](int signal_number) { request_stop(signal_number); };
  // No SA_RESTART: a process waiting on a child sees EINTR and passes the signal on.
  action.sa_flags = second_kills ? SA_RESETHAND : 0;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace tpuemu::chip
