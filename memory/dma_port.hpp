// A memory port (HBM, a core's VMEM port) serving the DMA transfers that use
// it round-robin, one chunk at a time, so concurrent transfers share its
// bandwidth the way interleaved DMA engines do (a large output DMA does not
// block the prefetches issued after it). Service is simulated lazily: the
// port serves chunks only as far as a caller asks (advance_to, completion).
// Times are (fractional) cycles of the chip clock. Deterministic: ties go to
// the transfer that started first.
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>

namespace tpuemu::memory {

class DmaPort {
 public:
  using TransferId = std::uint64_t;

  DmaPort(double bytes_per_cycle, double latency_cycles, std::uint64_t chunk_bytes);

  // A transfer of `bytes` that may start at `ready`. Chunks of earlier
  // transfers that start before `ready` are served first. `source` (e.g. the
  // issuing core) orders transfers with the same ready time that wait for
  // the horizon (set_horizon): lower first, whichever was started first.
  TransferId start(double ready, std::uint64_t bytes, std::uint32_t source = 0);
  // A transfer whose completion nobody asks for (remote DMA traffic through
  // the port: what a send reads, what an arrival writes): it takes its turns
  // like any other, and the port keeps no record of it.
  void start_untracked(double ready, std::uint64_t bytes, std::uint32_t source = 0) {
    forget(start(ready, bytes, source));
  }
  // Serves every chunk that starts before `cycle`.
  void advance_to(double cycle);
  // When the transfer's last byte is delivered, serving as far as needed.
  double completion(TransferId id);
  // The completion time if already known.
  [[nodiscard]] std::optional<double> completed_at(TransferId id) const;
  // Serving stops short of `cycle` (never lowered; +inf by default): a chunk
  // that would start at or after it waits, since transfers may still be
  // started with a ready time before it (a pod's arrivals, README "ICI
  // traffic and the HBM port"). Transfers started with a later ready time
  // than what was served wait too and join the rotation in ready order (ties:
  // the one started first) once service reaches them, as they would have if
  // they had been started then; so the order of service is that of the
  // ready times (ties: by source), whenever start() was called. completion()
  // ignores it.
  void set_horizon(double cycle) {
    horizon_ = bounded_ ? std::max(horizon_, cycle) : cycle;
    bounded_ = true;
  }
  [[nodiscard]] double horizon() const { return horizon_; }
  // The transfer's completion, final when its last chunk starts before the
  // horizon (served up to it first); otherwise what it would be if nothing
  // else were started before the horizon moves (a lower bound: what starts
  // later only delays it), computed on a copy.
  struct Estimate {
    double time = 0;
    bool final = true;
  };
  Estimate estimate(TransferId id);
  // A time the transfer cannot complete before (its completion once known):
  // its next chunk starts no earlier than the port is free and it is ready.
  [[nodiscard]] double completion_lower_bound(TransferId id) const;
  // Drops what the port knows of a transfer (its completion was read).
  void forget(TransferId id);

  [[nodiscard]] double busy_cycles() const { return busy_; }
  // Called for every chunk served (begin, end, bytes), e.g. by a trace's
  // bandwidth counter; unset by default.
  std::function<void(double, double, std::uint64_t)> on_chunk;
  [[nodiscard]] std::uint64_t bytes() const { return bytes_; }

 private:
  struct Active {
    TransferId id;
    double ready;
    std::uint64_t remaining;
    std::uint32_t source;
  };
  // Serves one chunk; false if nothing is active.
  bool serve_one();
  // When the next chunk of the active transfers starts (+inf: none).
  [[nodiscard]] double next_start() const;
  // Moves deferred transfers whose ready time the next chunk has reached
  // (and, with `before`, that are ready before it) into the rotation.
  void join_deferred(double before);
  // One chunk of `a` from time_ on (its time, the port's busy time).
  void serve_chunk(Active& a);

  double bytes_per_cycle_;
  double latency_;
  std::uint64_t chunk_;
  double time_ = 0;              // the port is busy until here
  std::deque<Active> active_;    // round-robin order
  std::deque<Active> deferred_;  // started beyond what was served: by ready time, source, start order
  double horizon_ = std::numeric_limits<double>::infinity();
  bool bounded_ = false;  // set_horizon was called
  // Completion time by id - first_id_: NaN while in service, -inf once forgotten
  // (ids are handed out in order; forgotten ones at the front are dropped).
  std::deque<double> done_;
  TransferId first_id_ = 0;
  void set_done(TransferId id, double time) {
    // A forgotten transfer (-inf) stays forgotten: its entry may be dropped.
    if (id >= first_id_ && !std::isinf(done_[id - first_id_])) done_[id - first_id_] = time;
  }
  TransferId next_id_ = 0;
  double busy_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace tpuemu::memory
