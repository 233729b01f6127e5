// Writing LLO programs from C++ (the program generators): ops are appended in
// program order with their slot class and the registers they read and write;
// `flush` packs them into bundles with a greedy in-order list scheduler that
// respects slot capacities, one-cycle result latency (a reader goes at least
// one bundle after its writer) and write-after-read order (a writer may share
// the bundle of an earlier reader, since all ops of a bundle read first).
// Loop bodies whose timing matters are placed by hand with `bundle`.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/chip_config.hpp"

namespace tpuemu::programs {

// 32-bit two's complement of -v, as LLO prints negative immediates.
inline std::uint64_t negated_immediate(std::uint64_t v) {
  return (1ULL << 32) - v;
}

class LloWriter {
 public:
  explicit LloWriter(const ChipConfig& chip) : chip_(chip) {}

  void comment(const std::string& text);  // "// text" (flushes first)
  void label(const std::string& name);    // flushes first
  void raw(const std::string& line);      // a line as is (allocations, bindings)
  // Queues an op for the scheduler. `reads`/`writes` name registers ("s3", "v12", "p0", "vm1").
  void op(SlotClass slot, const std::string& text, std::vector<std::string> reads, std::vector<std::string> writes);
  // Packs the queued ops into bundles.
  void flush();
  // One bundle placed by hand (flushes first). Empty ops = an empty bundle.
  void bundle(const std::vector<std::string>& ops, const std::string& note = "");

  [[nodiscard]] std::string text() const { return out_; }
  [[nodiscard]] std::size_t bundles() const { return bundles_; }

 private:
  struct Queued {
    SlotClass slot;
    std::string text;
    std::vector<std::string> reads;
    std::vector<std::string> writes;
  };
  const ChipConfig& chip_;
  std::vector<Queued> queue_;
  std::string out_;
  std::size_t bundles_ = 0;
};

}  // namespace tpuemu::programs
