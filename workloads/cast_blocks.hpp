// A generated program that casts blocks of f32 HBM matrices to bf16 blocks
// of other HBM matrices, optionally transposed: the attention workload's
// head slicing (Q, K^T and V of one head out of QKV) and the concatenation
// of the heads' outputs.
//
// Program (operands in the tiled layouts of chip/host_io.hpp): the blocks
// read and write whole-width row bands of their operands; each source band is
// read into VMEM with one DMA (all issued first), every f32 tile of every
// block is packed with itself (vpack.c.bf16) and the low half (sublanes 0-3,
// sm:$0xf) stored at its bf16 tile's place in its destination band, and each
// destination band is written with one DMA. Transposed blocks go through the
// XLU in 128x128 sub-blocks (vxpose.xlu0 of 16 tiles, 16 vpop.trf: pop k holds
// rows 8k..8k+7 of the transpose). The blocks into a destination band must
// cover its columns (a band is written whole). Rounding: nearest even
// (vpack.c.bf16), as bf16_round. Leaves every sync flag at 0.
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
// not bf16, a destination band the blocks do not cover, more than 60
// operands, VMEM.
std::string generate_cast_blocks(const std::vector<CastOperand>& operands, const std::vector<CastBlock>& blocks,
                                 const ChipConfig& chip);

// A program that rounds an f32 [rows, cols] HBM operand (operand 0) to bf16
// into operand 1, element by element (nearest even). Both layouts tile the
// matrix in the same (8,128) grid, f32 tile t at t x 4 KiB and bf16 tile t at
// t x 2 KiB, so f32 tiles 2j and 2j+1 become one vreg (vpack.c.bf16: the
// first operand to sublanes 4-7) stored at 4 KiB x j. Streamed through VMEM
// in chunks of up to 1 MiB of f32, double-buffered as
// programs::generate_add. Leaves every sync flag at 0. Used by the
// inference-layer workload (its h).
// Throws std::invalid_argument when a chunk does not fit in VMEM.
std::string generate_cast_bf16(std::uint64_t rows, std::uint64_t cols, const ChipConfig& chip);

}  // namespace tpuemu::workloads
