// A process-wide pool of host worker threads for work whose result is a pure
// function of its inputs: the MXU's deferred multiplies, host layout I/O.
//
// Contract: a submitted task runs exactly once, on a worker or on a thread
// that waits for some task, and its state becomes kDone (release) after it
// returns.
// Which thread runs it, and how many threads exist, cannot change what it
// computes, so results never depend on them. The pool does not exist until
// the first submit (timing-only runs and single-threaded runs never create
// it); its workers live as long as the process. In a child made by fork()
// there are no workers and host_threads() is 1.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace tpuemu {

struct HostTask {
  enum State : std::uint8_t { kQueued, kRunning, kDone };
  void (*run)(HostTask& task) = nullptr;
  std::atomic<State> state{kDone};
  [[nodiscard]] bool done() const { return state.load(std::memory_order_acquire) == kDone; }
};

// Threads MXU arithmetic may use, the calling thread included:
// TPUEMU_HOST_THREADS if set (a number >= 1), else the host's hardware
// concurrency. 1 = no workers: multiplies run at issue on the calling thread.
unsigned host_threads();
// Overrides host_threads() from now on (tests, benchmarks); 0 restores the
// environment's or the default value. The pool grows to match; it never shrinks,
// idle workers sleep.
void set_host_threads(unsigned threads);

// Whether the pool exists (some work was queued since the process started).
bool host_pool_started();

// Queues `task` (its `run` set) for a worker. Only when host_threads() > 1.
void submit_host_task(HostTask& task);
// Returns true once `task` is done, running queued tasks on this thread
// meanwhile; or false when a worker has been running it for `patience`
// without finishing (on a loaded host the worker may have lost its core): the
// caller may then compute the same result itself, and must not reuse the task
// until done().
bool wait_host_task(HostTask& task, std::chrono::microseconds patience);

// Runs body(i) for i = 0..count-1, spread over host_threads() threads (this
// one included), and returns when all have run. Contract: the calls touch
// disjoint outputs, do not depend on each other or on the thread, and do not
// throw.
void parallel_for(std::size_t count, const std::function<void(std::size_t)>& body);

}  // namespace tpuemu
