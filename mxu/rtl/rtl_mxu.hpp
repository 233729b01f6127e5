// The RTL systolic array (mxu/rtl/systolic_array.sv, verilated with --sc) in a
// small SystemC harness: a cycle-by-cycle twin of the C++ MXU for waveforms
// and co-simulation. See mxu/rtl/README.md.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tpuemu::mxu::rtl {

// The array sizes N verilated into this build (CMake TPUEMU_MXU_RTL_SIZES).
[[nodiscard]] std::span<const std::uint32_t> built_sizes();

// Timing contract of the RTL (tested in tests/test_mxu_rtl.cpp): a row pushed
// at clock edge t is at the result FIFO's head after edge t + 2n (n PE rows +
// n - 1 columns of skew, equalised by the de-skew, + 1 FIFO write), so the
// earliest edge that pops it is t + result_latency(n).
[[nodiscard]] constexpr std::uint64_t result_latency(std::uint32_t n) {
  return 2ULL * n + 1;
}
// Edges from the one that pushes the first of `rows` LHS rows pushed back to
// back (one per cycle) to the one that pops the last result.
[[nodiscard]] constexpr std::uint64_t tile_cycles(std::uint32_t n, std::uint64_t rows) {
  return rows - 1 + result_latency(n);
}
// Edges after a latching push during which w_ready stays low (the shadow
// weights must hold until the last PE has latched), besides the push's own.
[[nodiscard]] constexpr std::uint64_t latch_wave_cycles(std::uint32_t n) {
  return 2ULL * n - 2;
}
// Result FIFO rows (systolic_array.sv FIFO_ROWS): pushes stop while this many
// rows are pushed and not popped.
[[nodiscard]] constexpr std::uint64_t fifo_rows(std::uint32_t n) {
  return 2ULL * n + 2;
}

// The array's inputs for one clock edge; a row holds n bf16 bit patterns
// (element c = output column c for weights, K row k for the LHS) when its
// valid is set.
struct EdgeInputs {
  bool w_valid = false;
  std::vector<std::uint16_t> w_row;
  bool lhs_valid = false;
  bool lhs_latch = false;
  std::vector<std::uint16_t> lhs_row;
  bool res_pop = false;
};

// What one clock edge did, and the outputs after it.
struct EdgeResult {
  bool w_accepted = false;    // w_valid and w_ready at the edge
  bool lhs_accepted = false;  // lhs_valid and lhs_ready at the edge
  bool popped = false;        // res_pop and res_valid at the edge
  bool res_valid = false;     // after the edge: res_row is the FIFO head
  std::vector<float> res_row;
  bool busy = false;
};

struct TileRun {
  std::vector<float> results;       // rows x n f32, results[m * n + column]
  std::uint64_t cycles = 0;         // first push to last pop, see tile_cycles()
  std::uint64_t weight_cycles = 0;  // first weight edge to the last accepted weight row
};

// Contract: one RtlMxu per process, constructed before any other SystemC
// simulation starts (SystemC elaborates once); a second one throws
// std::logic_error. The clock runs at 1 ns per cycle.
class RtlMxu {
 public:
  // `n` must be one of built_sizes() (else std::invalid_argument). A non-empty
  // `vcd_path` makes Verilator trace every RTL signal into that file, written
  // as the simulation runs and closed by the destructor.
  explicit RtlMxu(std::uint32_t n, const std::string& vcd_path = {});
  ~RtlMxu();
  RtlMxu(const RtlMxu&) = delete;
  RtlMxu& operator=(const RtlMxu&) = delete;

  [[nodiscard]] std::uint32_t size() const { return n_; }
  // Clock edges since construction (the 2 reset edges included).
  [[nodiscard]] std::uint64_t cycle() const;

  // Drives the inputs through one rising clock edge. Throws
  // std::invalid_argument when a valid row does not hold n values.
  EdgeResult step(const EdgeInputs& in);

  // Runs one tile on an idle array: loads `weights` (n x n bf16 bit patterns,
  // weights[k * n + column]) one row per cycle, K row n-1 first, then pushes
  // the rows of `lhs` (rows x n bf16 bit patterns, lhs[m * n + k]) back to
  // back, the first one latching the weights, and pops every result in the
  // cycle after it appears. Throws std::invalid_argument on sizes that do not
  // fit, std::runtime_error if the array stops making progress.
  TileRun run_tile(std::span<const std::uint16_t> weights, std::span<const std::uint16_t> lhs);

 private:
  struct Impl;
  std::uint32_t n_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpuemu::mxu::rtl
