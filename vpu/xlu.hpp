// Functional semantics of the cross-lane units (XLU): lane rotation, lane
// permutation and the 32-bit transpose. Timing, FIFOs and unit selection
// belong to the XLU model that calls these.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/op_table.hpp"
#include "vpu/vreg.hpp"

namespace tpuemu::vpu {

// vrot.lane.b32: the element in lane j moves to lane (j + amount) mod 128, in
// every sublane. Evidence: the reshape kernels rotate by 128 - 8m to bring
// lanes 8m..8m+7 to lanes 0..7 before a lanes-0..7 masked store, and annotate
// amount 88 as `aligned_sublanes <<< 40` (a left rotation by 40).
Vreg rotate_lanes(const Vreg& source, std::uint32_t amount);

// vperm: result(s, l) = source(s, pattern(s, l) & 127). Only the low 7 bits of
// a pattern element are used (tpuemu's choice; the dumps only use patterns
// below 128: the sublane index, to broadcast element s across sublane s).
Vreg permute_lanes(const Vreg& source, const Vreg& pattern);

// One chunk of a 32-bit transpose, as printed in
// `vxpose.xlu0.b32.cont [2/16] (narrow) /*vx=*/%v17, /*width=*/8`.
struct TransposeChunk {
  isa::OpId op = isa::OpId::kVxposeStartEnd;  // kVxposeStart / Cont / End / StartEnd
  std::uint32_t index = 1;                    // 1-based position, the "2" of [2/16]
  std::uint32_t count = 1;                    // chunks in the transpose, the "16"
  std::uint32_t width = 128;                  // valid columns (lanes) of every chunk
  bool narrow = false;                        // (narrow) rather than (short)
};

// Collects the chunks of one 32-bit transpose and produces what vpop.trf pops.
//
// Contract: the chunks, in order, stack into a matrix M of 8 * count rows
// (chunk k = rows 8k..8k+7, one per sublane) and `width` columns (lanes
// 0..width-1; lanes >= width of a chunk are ignored). The result is M's
// transpose, popped in ceil(width / 8) vregs: pop k holds rows 8k..8k+7 of M^T
// (columns 8k..8k+7 of M) in its sublanes, so pop k's element (s, j) =
// M(j, 8k + s) = chunk j/8's element (j mod 8, 8k + s). Lanes >= 8 * count, and
// sublanes whose column is >= width, are zero (tpuemu's choice: no kernel reads
// them). That gives the three shapes the dumps use: one 8x128 chunk (short,
// width 128) -> 16 pops, lanes 0..7 valid; two chunks (16x128) -> 16 pops,
// lanes 0..15 valid; 16 narrow chunks of width 8 -> 1 pop, all lanes valid.
// Evidence: reduce_row_f32 and lane_reduce_bf16 sum the pops and fold the
// sublanes, so lane j must hold row j (lane_reduce_bf16's bf16[16] output
// pins rows 8..15 of the second chunk to lanes 8..15);
// matmul_bf16_rhs_transpose pushes the pops as MXU weights last pop first
// (the last push is K rows 0..7), so pop k holds K rows 8k..8k+7 = columns
// 8k..8k+7 of y; linear_f32's copy kernel turns w f32[128,8] (16 narrow chunks)
// into the one (8,128) tile of w.T. The tests reproduce all four.
//
// feed() checks the chunk against the sequence so far and throws
// std::runtime_error, leaving the transposer unchanged, when: the op is not
// the one the position calls for (start = [1/n] with n > 1, cont = neither
// first nor last, end = [n/n] with n > 1, start.end = [1/1]); the index is not
// the next one; count is not 1..16 (more than 128 rows) or index is not
// 1..count; width is not 1..128; or count, width or the flag differ from the
// first chunk's. An op that is not a vxpose throws std::invalid_argument.
class Transposer {
 public:
  // Holds nothing until the first chunk (a core's XLUs cost no memory while idle).
  // The pops, in vpop.trf order, when `chunk` completes the transpose (the
  // transposer is then empty again); an empty vector before that.
  std::vector<Vreg> feed(const TransposeChunk& chunk, const Vreg& data);

  [[nodiscard]] bool in_progress() const { return !chunks_.empty(); }
  // Discards a partial transpose.
  void reset() { chunks_.clear(); }

 private:
  void check(const TransposeChunk& chunk) const;
  [[nodiscard]] std::vector<Vreg> transpose() const;

  TransposeChunk first_{};
  std::vector<Vreg> chunks_;
};

}  // namespace tpuemu::vpu
