// A shared resource with a bandwidth and a latency (an HBM port, a VMEM port,
// one direction of an ICI link). Requests are served in the order they are
// made (FIFO): start = max(ready, free_at), free_at = start + bytes/bandwidth,
// done = free_at + latency. Times are in (fractional) cycles of the chip clock.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tpuemu::memory {

class BandwidthServer {
 public:
  BandwidthServer() = default;
  BandwidthServer(double bytes_per_cycle, double latency_cycles)
      : bytes_per_cycle_(bytes_per_cycle), latency_cycles_(latency_cycles) {}

  struct Slot {
    double start;
    double end;   // the port is free again
    double done;  // data delivered (end + latency)
  };

  // Contract: `ready` is when the request can start at the earliest.
  Slot reserve(double ready, std::uint64_t bytes) {
    const double start = std::max(ready, free_at_);
    const double duration = static_cast<double>(bytes) / bytes_per_cycle_;
    free_at_ = start + duration;
    busy_cycles_ += duration;
    bytes_ += bytes;
    return Slot{start, free_at_, free_at_ + latency_cycles_};
  }

  [[nodiscard]] double busy_cycles() const { return busy_cycles_; }
  [[nodiscard]] std::uint64_t bytes() const { return bytes_; }
  [[nodiscard]] double free_at() const { return free_at_; }
  [[nodiscard]] double bytes_per_cycle() const { return bytes_per_cycle_; }

 private:
  double bytes_per_cycle_ = 1;
  double latency_cycles_ = 0;
  double free_at_ = 0;
  double busy_cycles_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace tpuemu::memory
