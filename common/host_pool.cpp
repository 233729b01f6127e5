#include "common/host_pool.hpp"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "common/parse_number.hpp"

namespace tpuemu {
namespace {

// How long an idle worker polls the queue before it sleeps: longer than the
// gap between two multiplies of a busy core, short enough not to burn a
// shared host's core for long after a run.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::atomic<unsigned> g_override{0};
std::atomic<bool> g_forked{false};
std::atomic<bool> g_started{false};
class Pool;
Pool* g_pool = nullptr;  // set once, by Pool::get()

unsigned environment_threads() {
  static const unsigned threads = [] {
    if (const char* env = std::getenv("TPUEMU_HOST_THREADS")) {
      const auto n = parse_unsigned(env);
      if (n && *n >= 1) return static_cast<unsigned>(std::min<std::uint64_t>(*n, 256));
    }
    return std::max(1U, std::thread::hardware_concurrency());
  }();
  return threads;
}

class Pool {
 public:
  // Workers exist for the process's lifetime (the pool is never destroyed,
  // so no exit-time join can race a run still in progress).
  static Pool& get() {
    static Pool* pool = [] {
      auto* created = new Pool;
      g_pool = created;
      // fork() copies only the calling thread: a worker inside malloc at that
      // moment leaves the child an allocator lock that nobody releases
      // (ASan's allocator has no fork handler of its own: a forked child hung
      // in malloc). So a fork waits, holding the queue's lock, until no worker
      // runs a task; waiting workers hold no lock but the queue's.
      pthread_atfork([] { g_pool->quiesce_for_fork(); }, [] { g_pool->resume_after_fork(); },
                     [] {
                       g_forked.store(true);
                       g_pool->resume_after_fork();
                     });
      g_started.store(true);
      return created;
    }();
    return *pool;
  }

  // Also waits for workers still starting: a new thread's start-up allocates
  // (under ASan, in its allocator and thread registry).
  void quiesce_for_fork() {
    mutex_.lock();
    while (running_.load(std::memory_order_acquire) != 0 ||
           alive_.load(std::memory_order_acquire) != started_.load(std::memory_order_relaxed))
      cpu_relax();
  }
  void resume_after_fork() { mutex_.unlock(); }

  void grow_to(unsigned workers) {
    if (started_.load(std::memory_order_relaxed) >= workers) return;
    std::lock_guard lock(mutex_);
    for (unsigned n = started_.load(std::memory_order_relaxed); n < workers; ++n) {
      std::thread([this] { work(); }).detach();
      started_.store(n + 1, std::memory_order_relaxed);
    }
  }

  void submit(HostTask& task) {
    task.state.store(HostTask::kQueued, std::memory_order_relaxed);
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(&task);
      queued_.store(queue_.size(), std::memory_order_relaxed);
      wake = sleepers_ > 0;
    }
    if (wake) wake_.notify_one();
  }

  bool wait(HostTask& task, std::chrono::microseconds patience) {
    std::chrono::steady_clock::time_point running_since{};
    for (unsigned spins = 0;; ++spins) {
      const HostTask::State state = task.state.load(std::memory_order_acquire);
      if (state == HostTask::kDone) return true;
      if (HostTask* other = try_pop()) {
        execute(*other);
        continue;
      }
      cpu_relax();
      if (spins % 1024 == 1023) std::this_thread::yield();  // the worker may share this core
      if (state != HostTask::kRunning || spins % 64 != 0) continue;
      const auto now = std::chrono::steady_clock::now();
      if (running_since == std::chrono::steady_clock::time_point{}) {
        running_since = now;
      } else if (std::chrono::duration_cast<std::chrono::microseconds>(now - running_since) > patience) {
        return false;
      }
    }
  }

 private:
  // Contract: `task` came from pop_locked, which counted it in running_.
  void execute(HostTask& task) {
    task.state.store(HostTask::kRunning, std::memory_order_relaxed);
    task.run(task);
    task.state.store(HostTask::kDone, std::memory_order_release);
    running_.fetch_sub(1, std::memory_order_acq_rel);
  }

  // Counts the task as running from here (under the lock, so quiesce_for_fork sees it).
  HostTask* pop_locked() {
    running_.fetch_add(1, std::memory_order_acq_rel);
    HostTask* task = queue_.front();
    queue_.pop_front();
    queued_.store(queue_.size(), std::memory_order_relaxed);
    return task;
  }

  HostTask* try_pop() {
    if (queued_.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard lock(mutex_);
    return queue_.empty() ? nullptr : pop_locked();
  }

  void work() {
    alive_.fetch_add(1, std::memory_order_acq_rel);
    for (;;) {
      if (HostTask* task = try_pop()) {
        execute(*task);
        continue;
      }
      // 1. Poll for a while: multiplies arrive microseconds apart. Yielding
      //    now and then leaves the core to other runnable threads (the
      //    thread that queues the work, on a loaded host).
      const auto until = std::chrono::steady_clock::now() + kSpin;
      bool found = false;
      while (!found && std::chrono::steady_clock::now() < until) {
        for (int i = 0; i < 256 && !found; ++i) {
          cpu_relax();
          found = queued_.load(std::memory_order_relaxed) != 0;
        }
        if (!found) std::this_thread::yield();
      }
      if (found) continue;
      // 2. Sleep until a task is queued.
      HostTask* task = nullptr;
      {
        std::unique_lock lock(mutex_);
        ++sleepers_;
        wake_.wait(lock, [this] { return !queue_.empty(); });
        --sleepers_;
        task = pop_locked();
      }
      execute(*task);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<HostTask*> queue_;  // guarded by mutex_
  unsigned sleepers_ = 0;        // guarded by mutex_
  std::atomic<std::size_t> queued_{0};
  std::atomic<unsigned> started_{0};  // workers (detached threads); grown under mutex_
  std::atomic<unsigned> running_{0};  // tasks being executed, on any thread
  std::atomic<unsigned> alive_{0};    // workers that reached work()
};

}  // namespace

unsigned host_threads() {
  if (g_forked.load(std::memory_order_relaxed)) return 1;
  const unsigned o = g_override.load(std::memory_order_relaxed);
  return o != 0 ? o : environment_threads();
}

bool host_pool_started() {
  return g_started.load();
}

void set_host_threads(unsigned threads) {
  g_override.store(threads);
}

void submit_host_task(HostTask& task) {
  Pool& pool = Pool::get();
  pool.grow_to(host_threads() - 1);
  pool.submit(task);
}

bool wait_host_task(HostTask& task, std::chrono::microseconds patience) {
  return Pool::get().wait(task, patience);
}

void parallel_for(std::size_t count, const std::function<void(std::size_t)>& body) {
  if (count <= 1 || host_threads() <= 1) {
    for (std::size_t i = 0; i < count; ++i) body(i);
    return;
  }
  struct Call : HostTask {
    const std::function<void(std::size_t)>* body = nullptr;
    std::size_t index = 0;
  };
  std::vector<Call> calls(count - 1);
  for (std::size_t i = 1; i < count; ++i) {
    Call& c = calls[i - 1];
    c.run = [](HostTask& task) {
      auto& call = static_cast<Call&>(task);
      (*call.body)(call.index);
    };
    c.body = &body;
    c.index = i;
    submit_host_task(c);
  }
  body(0);
  for (Call& c : calls) wait_host_task(c, std::chrono::microseconds::max());
}

}  // namespace tpuemu
