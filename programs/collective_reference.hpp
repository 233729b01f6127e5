// Host reference of the generated collectives (programs/collectives.hpp), on
// device bytes, in exactly the order the programs add, so results compare bit
// for bit.
//
// Data movement (all-gather, all-to-all, the all-gather half of all-reduce)
// is exact. Summation order of reduce-scatter and all-reduce, per stream
// (part p, direction d with sign s = +1 for d = 0, -1 for d = 1) and per
// element of its units (unit (r, p, d) at CollectivePlan::unit_offset): with O_p = (b_0, ..., b_{m-1}) and
// partial_{-1}(x, r) = chip x's input element in chunk r,
//   partial_t(x, r) for the chunks r whose digits on b_0..b_t equal x's:
//     let L = length of b_t, j = x's ring position on b_t (its coordinate,
//     but on a folded axis ring_position: programs/collectives.hpp), y_i = x
//     with its b_t coordinate replaced by the one at ring position
//     (j + s*i) mod L (ring_coordinate);
//     acc = partial_{t-1}(y_1, r); acc = add(acc, partial_{t-1}(y_i, r)) for
//     i = 2, ..., L (y_L = x itself);
// and chip x's result for chunk rank(x) is partial_{m-1}(x, rank(x)).
// Half rings (bidir-ring; ring_hops gives h_l, h_s for L): step t instead
//   sums, with y_i as above for the unit's direction sign s,
//     own = partial_{t-1}(x, r), or if h_s > 0: acc = partial_{t-1}(y_{h_s}, r);
//       acc = add(acc, partial_{t-1}(y_i, r)) for i = h_s-1, ..., 1; own = add(acc, partial_{t-1}(x, r));
//     acc = partial_{t-1}(y_{-h_l}, r); acc = add(acc, partial_{t-1}(y_{-i}, r))
//       for i = h_l-1, ..., 1; partial_t(x, r) = add(acc, own).
// add(a, b): f32: a + b in binary32 (round to nearest even); bf16: a and b
// widened to f32, added in f32, rounded to bf16 (nearest even) at every step,
// as vunpack / vadd.f32 / vpack.c.bf16 do. Elements are little-endian f32 or
// bf16 in the device bytes; the layout does not matter, as every operation
// is elementwise.
#pragma once

#include <cstdint>
#include <vector>

#include "ici/topology.hpp"
#include "programs/collectives.hpp"

namespace tpuemu::programs {

// inputs[chip] (input_bytes each, by linear chip id) -> outputs[chip]
// (output_bytes each). Throws std::invalid_argument on a bad spec or inputs of
// the wrong count or size.
// The algorithm's own order (collective_algorithm(spec.algorithm).reference):
// the ring family's is the one above; the others say theirs in their files.
std::vector<std::vector<std::uint8_t>> collective_reference(const CollectiveSpec& spec, const ici::Topology& topology,
                                                            const std::vector<std::vector<std::uint8_t>>& inputs);

// For the algorithms' references.
namespace collective_detail {
// Every group's chips by rank, groups in the order of their rank-0 chips.
std::vector<std::vector<ChipId>> collective_groups(const CollectivePlan& plan, const ici::Topology& topology);
// Elements as floats (bf16 widened exactly) and back (bf16 rounded to nearest even).
std::vector<float> load_elements(const std::uint8_t* p, std::uint64_t bytes, bool bf16);
void store_elements(const std::vector<float>& v, std::uint8_t* p, bool bf16);
// acc[e] = add(acc[e], v[e]) as the programs add (header comment).
void accumulate(std::vector<float>& acc, const std::vector<float>& v, bool bf16);
// Reduce-scatter or all-reduce summing every element over the group in rank
// order (acc = x_0; acc = add(acc, x_i), i = 1..N-1): the direct and the
// in-network algorithms' order.
std::vector<std::vector<std::uint8_t>> rank_order_reference(const CollectivePlan& plan, const ici::Topology& topology,
                                                            const std::vector<std::vector<std::uint8_t>>& inputs);
}  // namespace collective_detail

}  // namespace tpuemu::programs
