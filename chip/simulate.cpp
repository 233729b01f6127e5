#include "chip/simulate.hpp"

#include <pthread.h>

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define TPUEMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TPUEMU_ASAN 1
#endif
#endif

#ifdef TPUEMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace tpuemu::chip {
namespace {

// Declares the calling thread's own stack as ASan's current stack (a fiber
// switch onto the stack it is already on).
void declare_host_stack() {
#ifdef TPUEMU_ASAN
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* bottom = nullptr;
  std::size_t size = 0;
  const int got = pthread_attr_getstack(&attr, &bottom, &size);
  pthread_attr_destroy(&attr);
  if (got != 0 || size == 0) return;
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, bottom, size);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

// Also when sc_start throws (an sc_report), so later host throws are cleaned up.
struct HostStackGuard {
  HostStackGuard() = default;
  HostStackGuard(const HostStackGuard&) = delete;
  HostStackGuard& operator=(const HostStackGuard&) = delete;
  ~HostStackGuard() { declare_host_stack(); }
};

}  // namespace

void simulate() {
  const HostStackGuard guard;
  sc_core::sc_start();
}

void simulate(const sc_core::sc_time& duration) {
  const HostStackGuard guard;
  sc_core::sc_start(duration);
}

void forget_simulation_context() {
  sc_core::sc_curr_simcontext = nullptr;
  sc_core::sc_default_global_context = nullptr;
}

}  // namespace tpuemu::chip
