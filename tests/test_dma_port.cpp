// memory::DmaPort against a plain model of its contract (round-robin chunks
// among the ready transfers, idling to the earliest ready one, ties to the
// transfer that started first): the same completion times to the bit, the
// same busy time, whatever the advance_to / completion call pattern.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>
#include <vector>

#include "memory/dma_port.hpp"

namespace {

// The contract, one chunk per step and no shortcuts.
class ReferencePort {
 public:
  ReferencePort(double bytes_per_cycle, double latency, std::uint64_t chunk)
      : bpc_(bytes_per_cycle), latency_(latency), chunk_(chunk) {}
  std::size_t start(double ready, std::uint64_t bytes) {
    advance_to(ready);
    done_.push_back(std::numeric_limits<double>::quiet_NaN());
    if (bytes == 0) {
      done_.back() = std::max(ready, time_) + latency_;
    } else {
      active_.push_back({done_.size() - 1, ready, bytes});
    }
    return done_.size() - 1;
  }
  void advance_to(double cycle) {
    for (;;) {
      if (active_.empty()) return;
      double next = std::numeric_limits<double>::infinity();
      bool ready = false;
      for (const auto& a : active_) {
        ready = ready || a.ready <= time_;
        next = std::min(next, a.ready);
      }
      if (ready) next = time_;
      if (next >= cycle) return;
      serve_one();
    }
  }
  double completion(std::size_t id) {
    while (std::isnan(done_[id])) serve_one();
    return done_[id];
  }
  double busy = 0;

 private:
  struct Active {
    std::size_t id;
    double ready;
    std::uint64_t remaining;
  };
  void serve_one() {
    std::size_t pick = active_.size();
    double earliest = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < active_.size() && pick == active_.size(); ++i) {
      if (active_[i].ready <= time_) pick = i;
      earliest = std::min(earliest, active_[i].ready);
    }
    if (pick == active_.size()) {
      time_ = earliest;
      for (std::size_t i = 0; i < active_.size() && pick == active_.size(); ++i)
        if (active_[i].ready <= time_) pick = i;
    }
    Active a = active_[pick];
    active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(pick));
    const std::uint64_t n = std::min(chunk_, a.remaining);
    const double d = static_cast<double>(n) / bpc_;
    time_ += d;
    busy += d;
    a.remaining -= n;
    if (a.remaining == 0) {
      done_[a.id] = time_ + latency_;
    } else {
      active_.push_back(a);
    }
  }
  double bpc_, latency_;
  std::uint64_t chunk_;
  double time_ = 0;
  std::deque<Active> active_;
  std::vector<double> done_;
};

}  // namespace

TEST_CASE("dma port: completions bit-identical to the round-robin contract", "[memory][dma-port]") {
  struct Row {
    double bytes_per_cycle;
    double latency;
    std::uint64_t chunk;
    unsigned max_in_flight;
    unsigned seed;
  };
  // Fractional rates (v5e HBM: 819e9 B/s at 1.5 GHz = 546 B/cycle) make the
  // additions inexact, so a shortcut that summed differently would show.
  for (const Row row : {Row{546.0, 750.0, 16384, 1, 1}, Row{546.0, 750.0, 16384, 4, 2}, Row{32.7, 3.0, 512, 16, 3},
                        Row{1.0 / 3.0, 0.5, 64, 2, 4}}) {
    INFO("rate " << row.bytes_per_cycle << " chunk " << row.chunk << " in flight " << row.max_in_flight);
    std::mt19937 rng(row.seed);
    std::uniform_int_distribution<std::uint64_t> size(0, 8 * row.chunk + 100);
    std::uniform_real_distribution<double> gap(0.0, 3.0 * static_cast<double>(row.chunk) / row.bytes_per_cycle);
    tpuemu::memory::DmaPort port(row.bytes_per_cycle, row.latency, row.chunk);
    ReferencePort reference(row.bytes_per_cycle, row.latency, row.chunk);
    std::deque<std::pair<tpuemu::memory::DmaPort::TransferId, std::size_t>> open;
    double now = 0;
    for (int i = 0; i < 3000; ++i) {
      now += gap(rng);
      // Ask the port about time in uneven steps, as cores do bundle by bundle.
      port.advance_to(now);
      reference.advance_to(now);
      if (open.size() < row.max_in_flight) {
        const std::uint64_t bytes = size(rng);
        const double ready = now + gap(rng) / 4;
        open.emplace_back(port.start(ready, bytes), reference.start(ready, bytes));
      }
      if (open.size() == row.max_in_flight || rng() % 4 == 0) {
        const auto [id, ref] = open.front();
        open.pop_front();
        const double want = reference.completion(ref);
        REQUIRE(port.completion(id) == want);
        port.forget(id);
      }
    }
    for (const auto& [id, ref] : open) REQUIRE(port.completion(id) == reference.completion(ref));
    CHECK(port.busy_cycles() == reference.busy);
  }
}

TEST_CASE("dma port: behind a horizon, service follows (ready time, source) whatever order the transfers start in",
          "[memory][dma-port]") {
  // Two cores of a chip start transfers on the shared HBM port up to a
  // quantum apart in host order: a transfer ready later may start first, and
  // two ready at the same cycle may start in either order. Every order of the
  // start() calls gives the completions of the (ready, source) order.
  struct Start {
    double ready;
    std::uint64_t bytes;
    std::uint32_t source;
  };
  const std::vector<Start> starts = {{10, 4096, 1}, {10, 4096, 0}, {5, 2048, 1}, {12, 1024, 0}};
  std::vector<std::size_t> order = {0, 1, 2, 3};
  std::vector<double> first;
  do {
    tpuemu::memory::DmaPort port(64, 100, 512);
    port.set_horizon(0);
    std::vector<tpuemu::memory::DmaPort::TransferId> ids(starts.size());
    for (const std::size_t i : order) ids[i] = port.start(starts[i].ready, starts[i].bytes, starts[i].source);
    port.set_horizon(std::numeric_limits<double>::infinity());
    std::vector<double> done;
    for (const auto id : ids) done.push_back(port.completion(id));
    if (first.empty()) first = done;
    INFO("start order " << order[0] << order[1] << order[2] << order[3]);
    CHECK(done == first);
  } while (std::next_permutation(order.begin(), order.end()));
  // Same ready time and size: source 0 goes first in the rotation, so its
  // last chunk is served one chunk before source 1's.
  CHECK(first[1] + 512.0 / 64 == first[0]);
}
