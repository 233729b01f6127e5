// One weight-stationary matrix unit (functional + timing state, no SystemC).
//
// Protocol (shared/llo/OPCODES.md "MXU protocol"):
//  1. push_weights: each push stages 8 K-rows x `size` output columns (one
//     vreg); pushes stack so that the LAST push holds K rows 0..7. A
//     transposed push stages the transpose of a vreg: its 128 lanes are K rows
//     and its 8 sublanes are 8 output columns (stacked the same way, last push
//     = columns 0..7).
//  2. latch: the staged weights become the active weights (gmra) and the
//     staging registers (msra) empty, so the next tile can be pushed while the
//     current one multiplies (double buffering).
//  3. matmul: an 8 x K LHS vreg times the active weights gives an 8 x size f32
//     result, queued in the result FIFO with the time it is ready.
//  4. pop: results leave in issue order.
//
// Numerics (documented order, bit-exact and reproducible): inputs are rounded
// to bf16 (nearest even); each product of two bf16 values is exact in f32; for
// every output element the products are summed in f32 in increasing K order
// starting from +0.0: acc = ((0 + a0*w0) + a1*w1) + ... . Vectorised across the
// output columns, sequential in K.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "vpu/vreg.hpp"

namespace tpuemu::mxu {

// A program error the core turns into a fault with location.
struct MxuFault {
  std::string message;
};

class Mxu {
 public:
  // `size`: array dimension (128 on v5e); only size == vpu::kLanes is
  // supported for the f32 vreg interface; `fifo_depth`: result FIFO entries.
  Mxu(std::uint32_t size, std::uint32_t fifo_depth);

  void push_weights(const vpu::Vreg& rows, bool transposed);
  void latch();
  // Multiplies `lhs` (8 rows x K lanes) by the active weights. `k_mask`, when
  // given, limits K to the lanes set in sublane 0 of the mask... of each row:
  // only lanes whose mask bit is set in the LHS row take part. Returns a fault
  // if the weights do not cover every K lane used, or no weights are active.
  std::optional<MxuFault> matmul(const vpu::Vreg& lhs, const vpu::Vmask* k_mask, std::uint64_t ready_cycle);
  // The oldest result and when it is ready; nullopt when the FIFO is empty.
  [[nodiscard]] const std::uint64_t* head_ready_cycle() const;
  vpu::Vreg pop();

  [[nodiscard]] std::size_t queued() const { return results_.size(); }
  [[nodiscard]] bool fifo_full() const { return results_.size() >= fifo_depth_; }
  [[nodiscard]] std::uint32_t staged_pushes() const { return static_cast<std::uint32_t>(staged_.size()); }

  // When this unit can accept its next multiply (issue interval) and next push.
  std::uint64_t next_matmul_cycle = 0;
  std::uint64_t busy_cycles = 0;
  std::uint64_t matmuls = 0;

  // Timing-only mode: skip the arithmetic (results are zeros), keep protocol
  // checks and timing identical.
  bool compute_numerics = true;

 private:
  struct Staged {
    vpu::Vreg rows;
    bool transposed;
  };
  struct Result {
    std::uint64_t ready_cycle;
    vpu::Vreg value;
  };
  std::uint32_t size_;
  std::uint32_t fifo_depth_;
  std::vector<Staged> staged_;
  // Active weights as bf16-rounded f32, [k][column], k < active_k_.
  std::vector<float> weights_;
  std::uint32_t active_k_ = 0;        // K rows covered by the active weights
  std::uint32_t active_columns_ = 0;  // output columns covered
  bool has_active_ = false;
  std::deque<Result> results_;
};

}  // namespace tpuemu::mxu
