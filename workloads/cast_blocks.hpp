// A generated program that casts blocks of f32 HBM matrices to bf16 blocks
// of other HBM matrices, optionally transposed: the attention workload's
// head slicing (Q, K^T and V of one head out of QKV) and the concatenation
// of the heads' outputs.
//
// Program, for each block in order (operands in the tiled layouts of
// chip/host_io.hpp): one DMA per (8,128) tile row of the source block into
// VMEM (every block's DMAs issued first); for every f32 tile, vpack.c.bf16 of the tile with itself and a store
// of its low half (sublanes 0-3, sm:$0xf) at the bf16 tile's place in a
// staging block laid out as the destination block; transposed, every
// 128x128 sub-block goes through the XLU first (vxpose.xlu0 of its 16 tiles,
// 16 vpop.trf: pop k holds rows 8k..8k+7 of the transpose); one DMA per tile
// row of the destination block out. Rounding: nearest even (vpack.c.bf16),
// as bf16_round. Leaves every sync flag at 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/chip_config.hpp"

namespace tpuemu::workloads {

struct CastOperand {
  std::uint64_t rows = 0, cols = 0;
  std::string dtype;  // "f32" (a source) or "bf16" (a destination)
  bool output = false;
};

struct CastBlock {
  std::uint32_t src = 0;                   // operand index (f32)
  std::uint64_t src_row = 0, src_col = 0;  // element offsets: multiples of 8 and 128
  std::uint64_t rows = 0, cols = 0;        // the source block: multiples of 8 and 128 (both of 128 transposed)
  std::uint32_t dst = 0;                   // operand index (bf16)
  std::uint64_t dst_row = 0, dst_col = 0;  // element offsets of the (transposed) block in the destination
  bool transpose = false;
};

// Throws std::invalid_argument for blocks outside their operands, offsets or
// sizes off the tile grid, a source that is not f32 or a destination that is
// not bf16, VMEM.
std::string generate_cast_blocks(const std::vector<CastOperand>& operands, const std::vector<CastBlock>& blocks,
                                 const ChipConfig& chip);

}  // namespace tpuemu::workloads
