// Program generators: readable, tiled LLO programs for common kernels.
//
// matmul: C[M,N] (f32) = A[M,K] @ B[K,N], A and B in HBM as bf16 or f32 in
// the TPU's tiled layouts (chip/host_io.hpp). Weight-stationary on all MXUs:
//   for each block of 4 column tiles of C (one per MXU):
//     for each 128-row block kb of B (K direction):
//       DMA A[:, kb] and B[kb, block] into VMEM (double-buffered: the next
//       k-block's DMAs are issued before this one computes);
//       push the B block into the MXUs (one 128x128 tile each);
//       stream A through them 16 rows at a time (8 rows per multiply), popping
//       each result D iterations later (software pipeline covering the MXU
//       latency) and accumulating it into an f32 accumulator in VMEM;
//     DMA the accumulator block to C (double-buffered).
// Accumulation order (what a host reference must reproduce bit for bit):
//   for every C element, for kb = 0, 1, ...: partial = the MXU's sum over the
//   128 k of that block in increasing k from +0.0 of bf16(a)*bf16(b) in f32;
//   acc = partial for kb = 0, acc = acc + partial (f32) afterwards.
//
// add: C[n] = A[n] + B[n] (f32, 1-D): streamed through VMEM in chunks with
// double-buffered DMAs; HBM-bound by construction.
#pragma once

#include <cstdint>
#include <string>

#include "common/chip_config.hpp"

namespace tpuemu::programs {

struct MatmulSpec {
  std::uint64_t m = 0, k = 0, n = 0;
  std::string dtype = "bf16";  // "bf16" or "f32" (inputs; the output is f32)
  bool double_buffer = true;
};

struct AddSpec {
  std::uint64_t n = 0;                  // f32 elements
  std::uint64_t chunk_bytes = 1 << 20;  // bytes of A (and of B, C) per DMA
};

// Throws std::invalid_argument (with the reason) for specs the generator or
// the chip cannot handle (zero sizes, VMEM too small, ...).
std::string generate_matmul(const MatmulSpec& spec, const ChipConfig& chip);
std::string generate_add(const AddSpec& spec, const ChipConfig& chip);

}  // namespace tpuemu::programs
