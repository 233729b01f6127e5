// A generated softmax over the rows of an f32 matrix into bf16 (the attention
// workload's P = softmax(S / sqrt(d_head))), and its host reference, bit for bit.
//
// Program: operand 0 S f32 [rows, cols], operand 1 P bf16 [rows, cols], both
// HBM in the tiled layouts (chip/host_io.hpp). S is read into VMEM whole (one
// DMA); then a loop over blocks of 16 rows, two groups of 8 rows (a row of
// (8,128) tiles each: sublane s = row s of the group, lane l = column 128 k + l
// of tile k), unrolled and list-scheduled (programs::LloWriter), both groups
// interleaved so that each one's latencies hide behind the other's:
//   m  = vmax.f32 from -inf over the group's tiles in order; then 7 lane
//        rotations (the group's own XLU, by 64, 32, ..., 1), each followed by
//        m = vmax(m, rotated)
//   e  = vpow2.f32((s - m) * c) per tile (VALU sub, mul; EUP, up to 16 in its
//        FIFO), c = f32(scale x log2 e), stored over S in VMEM;
//        sum = +0.0 + e of tile 0 + e of tile 1 ... (vadd.f32)
//   sum: 7 lane rotations as for m, each followed by sum = sum + rotated (f32):
//        lane l after the rotation by a adds lane (l - a) mod 128's value
//   r  = vrcp.f32(sum) (EUP: 1/x correctly rounded)
//   P  = e * r (f32) per tile, pairs of tiles in the block's order packed to
//        bf16 (vpack.c.bf16, round to nearest even), stored in VMEM
// and P is written with one DMA. Nothing overlaps the two DMAs with the VPU
// passes. Leaves every sync flag at 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/chip_config.hpp"

namespace tpuemu::workloads {

// The exponent's factor c = f32(scale x log2(e)) as the program's immediate.
float softmax_exponent_factor(float scale);

// Throws std::invalid_argument: cols not a multiple of 128, rows not a
// multiple of 16 (whole blocks), S and P not fitting in VMEM, a chip with
// fewer than 2 XLUs or an EUP FIFO under 2.
std::string generate_softmax_bf16(std::uint64_t rows, std::uint64_t cols, float scale, const ChipConfig& chip);

// The program's P, from S row-major [rows, cols], in the order above.
std::vector<float> softmax_bf16_reference(const std::vector<float>& s, std::uint64_t rows, std::uint64_t cols,
                                          float scale);

// VALU-slot, EUP-pop and XLU ops the program issues for [rows, cols] (the phase's prediction).
struct SoftmaxOps {
  std::uint64_t valu = 0, eup = 0, xlu = 0;
};
SoftmaxOps softmax_ops(std::uint64_t rows, std::uint64_t cols);

}  // namespace tpuemu::workloads
