// Program generators: readable, tiled LLO programs for common kernels.
//
// matmul: C[M,N] (f32, or bf16: MatmulSpec::out_dtype) = A[M,K] @ B[K,N], A and B in HBM as bf16 or f32 in
// the TPU's tiled layouts (chip/host_io.hpp). Weight-stationary on all MXUs:
//   for each block of 4 column tiles of C (one per MXU):
//     zero an f32 accumulator block in VMEM;
//     for each 128-row block kb of B (K direction):
//       wait for A[:, kb] and B[kb, block] in VMEM (double-buffered: the next
//       k-block's DMAs, or the next column block's first, are issued before
//       this one computes);
//       push the B block into the MXUs (one 128x128 tile each);
//       stream A through them 16 rows per 16-bundle iteration (8 rows per
//       multiply), popping each result D iterations later and adding it to the
//       accumulator; the pipeline runs on across k-blocks, so only the column
//       block's first D iterations pop nothing and only its end drains;
//     DMA the accumulator block to C (double-buffered).
// Prefetch depth (chosen per shape and chip): a k-block's DMAs take the HBM
// latency plus its bytes over the HBM bandwidth; when the k-block before it
// computes for less than that (small M), double buffering leaves HBM idle. The
// generator then keeps P k-blocks in a ring of VMEM slots (P - 1 in flight
// while one computes; P - 1 = ceil((latency + transfer) / max(transfer, the
// row loop's 16 G2 cycles)), bounded by dma.max_in_flight, VMEM and the number
// of k-blocks); the DMAs run in the same k-block order. In the ring schedule,
// with more than one column block, A stays in VMEM (one slot per k-block,
// fetched with column block 0 only) when it fits, instead of being read again
// for every column block. The ring schedule (without accumulate) never zeroes
// its accumulator: the pops of a column block's first k-block add to a block
// of zeros (one row pair's tiles, zeroed once per program) and store into the
// accumulator, the same +0.0 + partial; and where a k-block computes for at
// least its transfer, each k-block computes the next k-block's DMA addresses
// in its weight pushes' free scalar slots, the DMAs going out first thing in
// the next k-block (HBM-bound and accumulating programs issue at the start of
// each k-block). P <= 2 keeps the double-buffered schedule above.
// A column block of a half or a quarter of the MXUs (P w = mxu.count, P = 2
// or 4, G2 a multiple of P, not accumulating) splits its rows over all of
// them: MXU j w + m holds tile m as MXU m does and multiplies row pair t + j
// G2/P while MXU m multiplies t, so its row loop runs G2/P iterations
// (MatmulGen::split_rows).
// One column block (N <= mxu.count x 128) runs in row blocks
// (MatmulSpec::row_blocks): a block's C is stored while the next computes.
// The ring fires a k-block's DMAs after its own operands' wait.
// The program leaves every sync flag at 0 (so it can be a step of a chain
// before a program that expects zeroed flags, such as a collective).
// With accumulate, each accumulator block starts from C's block (its bits)
// and the k-blocks' partials are added to it in the same order; in the ring
// schedule C's next block streams into a staging buffer while this block
// computes and is copied into the accumulator, else it is loaded when its
// column block starts.
// Accumulation order (what a host reference must reproduce bit for bit):
//   for every C element, for kb = 0, 1, ...: partial = the MXU's sum over the
//   128 k of that block in increasing k from +0.0 of bf16(a)*bf16(b) in f32;
//   acc = +0.0 + partial for kb = 0 (the same value: a sum started from +0.0 is
//   never -0.0), acc = acc + partial (f32) afterwards.
//
// On MXUs narrower than a vreg (mxu.size n < 128, the edu preset's 8x8
// array, wired to lanes 0..n-1), f32 inputs only: A, B and C live in VMEM
// whole; for each n-column chunk j of C and each n-row chunk i of K: the n/8
// weight vregs of B[i chunk, j chunk] are rotated (XLU) so its columns sit
// in lanes 0..n-1 and pushed (the next chunk's right after this chunk's
// latching multiply: double buffering); every 8-row tile of A is rotated so
// K lanes i*n.. sit in lanes 0..n-1 and multiplied (up to min(8, FIFO depth)
// in flight); each result is rotated back to lanes j*n.. and added to C's
// tile in VMEM. Accumulation order: as above with n-wide k-blocks (adding the
// +0 lanes of other chunks changes no bit: sums from +0.0 are never -0.0).
//
// add: C[n] = A[n] + B[n] (f32, 1-D): streamed through VMEM in chunks with
// double-buffered DMAs; HBM-bound by construction.
#pragma once

#include <cstdint>
#include <string>

#include "common/chip_config.hpp"
#include "ici/topology.hpp"

namespace tpuemu::programs {

struct MatmulSpec {
  std::uint64_t m = 0, k = 0, n = 0;
  std::string dtype = "bf16";  // "bf16" or "f32" (inputs)
  bool double_buffer = true;
  // A in HBM as this many column blocks [M, K / a_column_blocks], each in
  // A's tiled layout, one after another (what an all-gather of A's column
  // shards leaves); 1 = A's own layout. Above 1: K / a_column_blocks is a
  // multiple of 128 whose number of 128-column tiles is a power of two.
  std::uint64_t a_column_blocks = 1;
  // C = C + A @ B: every accumulator block starts from C's block in HBM
  // (operand 2 is read, then written) instead of +0.0.
  bool accumulate = false;
  // Split the work over the chip's TensorCores (megacore): 1 = no split
  // (every core that runs the program computes the whole C, as on a one-core
  // chip), else the chip's tensorcores_per_chip. See "Core split" below.
  std::uint64_t split_cores = 1;
  // C's dtype: "f32", or "bf16" (C rounded to nearest even from the f32
  // accumulator, as an XLA dot with f32 accumulation and a bf16 result: each
  // column block's accumulator is packed in place, f32 tiles 2j and 2j+1 to
  // one vreg by vpack.c.bf16, before its DMA to C). bf16 needs 128x128 MXUs,
  // M a multiple of 16, and neither accumulate nor a collective matmul.
  std::string out_dtype = "f32";
  // Row blocks: 1 = none; R > 1 computes C in R blocks of M / R rows, one
  // after another, so that a block's C is stored while the next computes
  // (with one column block, N <= mxu.count x 128, nothing else hides C's
  // store); B is read once per block. Needs one column block, M's row tiles
  // of 8 in R equal blocks (an even number each for a bf16 C), the prefetch
  // ring, and neither accumulate, A in column blocks nor a collective matmul.
  // 0 (the default): the generator picks R in {1, 2, 4} by its estimate of
  // each one's time (generators.cpp, auto_row_blocks).
  std::uint64_t row_blocks = 0;
};

// Core split (MatmulSpec::split_cores = S > 1, the chip's
// tensorcores_per_chip): the program's operands are the whole A, B and C (the
// bindings declare the whole shapes), and core c < S computes a 1/S share of
// C that no other core needs:
//   columns: C[:, c N/S .. (c+1) N/S) = A @ B[:, same columns], when N is S
//            whole 128-column tiles per core (every core reads all of A and
//            its own column block of B; preferred when each core keeps at
//            least mxu.count column tiles, so it uses all of its MXUs);
//   rows:    C[c M/S .. (c+1) M/S, :] = A[same rows, :] @ B, when M is a
//            multiple of 16 S and A is one column block (every core reads
//            all of B and its own rows of A);
// (matmul_core_split says which). Every C element's k-order is the unsplit
// program's, so the bits are the same.
// Both cores share the chip's HBM and its bandwidth; each has its own VMEM,
// MXUs and DMA queue. Two barriers over the chip's cores order the split
// against the chain's other steps, which may run on core 0 alone (the
// collectives): on entry, before any core reads an operand, and on exit,
// after every core's last output DMA has landed, so a step after it (on any
// core) sees the whole C. A barrier: each core adds 1 to the barrier flag of
// every other core of its chip (vsyncadd.remote to its own chip), waits for
// its own to reach cores - 1 and subtracts that. The entry and the exit
// barrier have a flag each, at sflag.count - 4 and - 3 (below the ring
// shift's two), which no program zeroes at its start: an early arrival from
// a core already at the next split matmul waits there. Needs a pod (the
// barrier messages go through the chip's fabric port).
enum class CoreSplit { kNone, kColumns, kRows };
// How generate_matmul splits `spec` over spec.split_cores cores (kNone when
// split_cores is 1 or the shape does not split evenly).
CoreSplit matmul_core_split(const MatmulSpec& spec, const ChipConfig& chip);
// The sync flags of the core split's entry and exit barriers.
inline std::uint64_t core_barrier_flag(const ChipConfig& chip, bool exit) {
  return chip.sflag.count - 4 + (exit ? 1 : 0);
}

// Collective matmul (the book's jax-stuff.md example) as one program per
// chip: C[M,N] (f32) = sum over the chunks t = 0 .. T-1 of A_t[M,KC] @
// B[t KC .. (t+1) KC, N], bf16, where A_t is the A chunk in hand at step t:
// chunk 0 is the chip's own, chunk t+1 is the chunk the chip one step up
// `axis` (c + 1 mod L; on a folded axis the next ring position,
// programs::folded_ring_axis) held at step t. The chip sends each chunk it
// holds (t < T-1) to the chip one step down (c - 1 mod L, or the previous
// ring position) with one remote DMA,
// issued as soon as the chunk is in hand, while it multiplies.
// Operands: 0 = A, bf16 [M, T KC] in HBM as T column blocks [M, KC] one after
// another (MatmulSpec::a_column_blocks' layout), block 0 the chip's own chunk
// (input) and blocks 1.. receiving the shifts (each written once, by the
// neighbour's DMA); 1 = B, bf16 [T KC, N] (row block t multiplies A_t);
// 2 = C, f32 [M, N] (output).
// Schedule: the generated matmul's ring schedule (generate_matmul) with the
// loops turned around: for each chunk t, for each column block of 4 MXUs,
// for each of the chunk's k-blocks; every column block's accumulator stays
// in VMEM across the chunks (one per column block, never read from or
// written to HBM before the last chunk, whose column blocks DMA it to C).
// A's k-blocks stay in VMEM (one slot per k-block of K = T KC), read from
// HBM with column block 0 of their chunk. Before the prefetch ring issues the
// first DMA of chunk t >= 1's k-blocks, the program waits for chunk t to have
// arrived, and then forwards it (t < T-1). Flags: the ring's, and the two at
// the top of the flag space (sent, arrived) as the ring shift's; all end at 0.
// Accumulation order (bit for bit what a host reference must reproduce): for
// every C element, for t = 0, 1, ..., T-1, for the chunk's k-blocks kb in
// increasing order: acc = +0.0 + partial (t = 0, first k-block), else acc =
// acc + partial (f32), partial as in generate_matmul. That is generate_matmul's
// order over K = T KC with B's rows in chunk order (programs::matmul_reference
// over the chunks one after another with c_in).
// Limits (std::invalid_argument): T >= 2, KC a multiple of 128, N a multiple
// of 128 x min(mxu.count, N / 128) (whole column blocks), M / 16 row pairs x
// KC / 128 k-blocks at least the MXU pipeline's depth, VMEM for the
// accumulators, A and the ring.
struct CollectiveMatmulSpec {
  std::uint64_t m = 0, k_chunk = 0, n = 0;  // per chip: A_t [m, k_chunk], C [m, n]
  std::uint64_t chunks = 0;                 // T: the ring's length (the axis' length)
  std::size_t axis = 1;                     // the topology axis the chunks shift along
};

struct AddSpec {
  std::uint64_t n = 0;                  // f32 elements
  std::uint64_t chunk_bytes = 1 << 20;  // bytes of B and C (and of an f32 A) per DMA
  // "bf16": A is bf16, in the tiled layout of a bf16 matrix of the same
  // shape as B and C (chip/host_io.hpp: bf16 tile j's 4 KiB vreg holds f32
  // tiles 2j, 2j + 1, the second in sublanes 4-7), widened exactly before
  // the f32 add; n must cover whole pairs of f32 tiles (a multiple of 2048).
  std::string a_dtype = "f32";
};

// Throws std::invalid_argument (with the reason) for specs the generator or
// the chip cannot handle (zero sizes, VMEM too small, ...).
std::string generate_matmul(const MatmulSpec& spec, const ChipConfig& chip);
// The mxu.size < 128 schedule above (generate_matmul picks it by itself).
std::string generate_small_matmul(const MatmulSpec& spec, const ChipConfig& chip);
std::string generate_add(const AddSpec& spec, const ChipConfig& chip);
std::string generate_collective_matmul(const CollectiveMatmulSpec& spec, const ici::Topology& topology,
                                       const ChipConfig& chip);

// A ring shift (ppermute) of `bytes` along one topology axis, in two
// programs so that other steps of a chain can run while it travels:
//   send: core 0 of the chip at coordinate c on `axis` issues one remote DMA
//         of operand 0 (its HBM bytes) to operand 1 of core 0 of the chip at
//         (c - 1) mod L (on a folded axis, programs::folded_ring_axis, the
//         chip at the previous ring position) and ends without waiting;
//   wait: core 0 waits until its own send has left and the neighbour's has
//         arrived, and sets both flags back to 0.
// Both use the two sync flags at the top of the chip's flag space
// (sflag.count - 2 and - 1), which no other generated program uses, so the
// steps between them may use flags freely. Operands of send: 0 and 1, HBM,
// bf16 [rows, cols] (bytes = rows * cols * 2, whole 32-byte granules); wait
// has none. Throws std::invalid_argument for a bad axis or size.
struct RingShiftSpec {
  std::uint64_t rows = 0, cols = 0;  // bf16
  std::size_t axis = 0;
};
std::string generate_ring_shift_send(const RingShiftSpec& spec, const ici::Topology& topology, const ChipConfig& chip);
std::string generate_ring_shift_wait(const RingShiftSpec& spec, const ChipConfig& chip);

}  // namespace tpuemu::programs
