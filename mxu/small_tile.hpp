// The C++ MXU's result for a tile smaller than its array (the RTL array's
// sizes, e.g. 8x8): the reference the RTL co-simulation and
// `tpuemu systolic` compare against.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tpuemu::mxu {

// `weights`: n x n bf16 bit patterns, [k * n + column]; `lhs`: rows x n bf16
// bit patterns, [row * n + k]; n <= 128. Returns rows x n f32 bit patterns:
// an n x n C++ Mxu (wired to lanes 0..n-1) with the weights pushed 8 K rows
// per vreg (the last push holding K rows 0..7) and the LHS multiplied 8 rows
// per vreg. Throws std::invalid_argument on bad sizes.
std::vector<std::uint32_t> small_tile_reference(std::uint32_t n, std::span<const std::uint16_t> weights,
                                                std::span<const std::uint16_t> lhs);

}  // namespace tpuemu::mxu
