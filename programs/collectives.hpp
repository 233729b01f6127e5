// Collectives on a pod: one SPMD LLO program per collective (all-gather,
// reduce-scatter, all-reduce, all-to-all) over some torus axes, the book's
// time prediction, and the sizes the runtime must bind.
//
// Groups and ranks. The participating axes, in the order listed, have lengths
// L_0, L_1, ...; N = L_0 * L_1 * ... Chips that agree on every other
// coordinate form one group; every group runs the same collective on its own.
// A chip's group rank is the mixed-radix number of its coordinates on the
// participating axes, the first listed axis fastest: r = c_0 + L_0*(c_1 +
// L_1*c_2). The array of V bytes is N chunks of Q = V/N bytes, chunk r at byte
// r*Q; sizes (nccl-tests convention):
//   all-gather      input Q (this chip's chunk)      output V (chunk r from rank r)
//   reduce-scatter  input V                          output Q (sum over the group of chunk r)
//   all-reduce      input V                          output V (sum over the group)
//   all-to-all      input Q = N blocks of V/N^2      output Q: block i <- block r of rank i
//
// Algorithms are a registry (programs/collective_algorithm.hpp, one file each
// under programs/collective_algorithms/): the ring family below
// (ring_family.cpp), and the direct "one-shot" and "two-shot" (direct.cpp,
// which describes their schedule and rank-order summation). Axes of length 1
// take no part; with none left the program copies input to output. The ring
// family:
//   ring        one stream (direction +) going through the axes one by one;
//   bidir-ring  each chunk split in two halves, each half on two half rings
//               through the axes one by one: half d's long stream goes
//               direction d (+ for half 0, - for half 1) and its short stream
//               the other way (ring_hops: floor(L/2) steps per axis, one more
//               for reductions over an odd L, instead of L-1), so both
//               directions of every link carry L-1 units per phase;
//   multi-axis  each chunk split into K parts (K = participating axes of
//               length > 1), each in two halves; part p runs the bidir-ring
//               collective through the axes in the order rotated to start at
//               listed axis p, all parts concurrently (the book's V / (W K)).
// A stream is (part p, direction d); it moves only its own units (r, p, d),
// one per rank r, of u = Q / (K*D) bytes each (D directions). Under half
// rings there are two streams per unit d, the long one (direction d) and the
// short one (direction 1-d), each moving units (r, p, d).
// Layout. all-gather and reduce-scatter: unit (r, p, d) is the bytes
// [r*Q + (p*D + d)*u, +u) (chunk r is rank r's, so a stream's units are
// u bytes every Q). all-reduce, where which rank holds which sum on the way
// is the program's own business: stream (p, d) owns the contiguous bytes
// [(p*D + d)*V/(K*D), +V/(K*D)), its units in the order of the mixed-radix
// number of r's digits on O_p's axes with O_p's last axis fastest, so every
// ring step's chunk (below) is one contiguous range. Axis order of part p: O_p = (a_p, a_{p+1}, ...,
// a_{p-1}), indices mod K; reduce-scatter and all-gather go through O_p;
// all-reduce is the reduce-scatter through O_p followed by the all-gather
// through O_p reversed. The streams run in lockstep rounds, round i being the
// i-th ring step of every stream, their pieces interleaved in one loop (with
// axes of unequal length a stream whose step has fewer pieces sits out the
// rest of the loop). Ring positions, not coordinates, are what the ring
// steps below count: on an axis without wraparound of 4 or more chips the
// ring is folded (ring_coordinate: 0, 2, 4, ..., 5, 3, 1), so no hop spans
// more than 2 links, instead of closing with a hop back over the whole axis;
// both directions of every link then carry each ring direction once, so
// rings going both ways (bidir-ring, multi-axis) share them: such an axis
// moves half the bytes per second of a wrapped one, the book's "about twice
// as long", but no longer waits on hops of L-1 links.
// all-to-all is the same program for every algorithm: a direct remote DMA of
// every block to its destination, in the order of destination rank r+1, r+2,
// ... (mod N), the routes doing the rest.
//
// Ring steps on an axis of L chips, chip ring position c (its coordinate
// unless the axis is folded), direction sign s_d (+1, -1), chunks indexed by
// ring position (chunk j is the one of the rank whose digit on the axis is
// ring_coordinate(j)):
//   reduce-scatter step k = 0..L-2: send the partial sum of chunk c - s_d*(k+1);
//     the chunk received at step k is added to the local one and sent on at
//     step k+1; after step L-2 chunk c is complete (summation order:
//     programs/collective_reference.hpp).
//   all-gather step k = 0..L-2: send chunk c - s_d*k (own chunk first), receive
//     chunk c - s_d*(k+1).
// Half rings: a stream of h hops runs those steps truncated. Gather step
//   k = 0..h-1 as above; reduce step k = 0..h sends (k < h) or completes
//   (k = h) the partial sum of chunk c + s*(h-k), whose chain started h hops
//   back. The short stream of a unit ends its phase first and stores
//   own + its chain at the phase's result; the long stream's last step adds
//   its chain to that (summation order: programs/collective_reference.hpp).
//   Every stream's phase is padded with idle rounds to the longest, so a
//   phase's first round sees everything the previous phase delivered.
// Bidirectional all-gather past its first phase: a step's chunk is a block of
// whole rank chunks (both directions' units arrived in the phases before), so
// direction d carries half d of the block (one contiguous range) instead of
// every rank's unit d.
// Pipelining: every step moves its chunk as pieces of piece_bytes (dividing
// u; where a round's chunks are contiguous for every stream and a unit is
// smaller than half the generator's target piece or than an eighth of the
// chunk, pieces span several units and divide the chunk instead); a piece is
// forwarded as soon as its predecessor piece has arrived, so the links stay
// busy. A reduce phase of one hop (a 2-chip axis: step 0 sends, step 1
// adds and stores) does not issue all of step 0 first: step 1's loop issues
// step 0's piece i + 3 just before it adds piece i, so each piece is reduced
// while the next ones are on the link (lead rounds, programs/collectives.cpp).
// A reduce-scatter's first phase, whose chunk is units lying apart in the
// input (one per rank of the other axes), moves pieces of several units of
// the fastest digit: one strided DMA loads their local operand.
// Received partial sums land in VMEM where all of them fit a quarter of it
// with the local operands' buffers: a landing zone per (stream, step), a
// slot per piece, never reused (no back-pressure); the receiver adds the
// local operand (loaded three pieces ahead) into the slot and sends it on
// from there. Each chip first tells its streams' predecessors that its zones
// are ready (the previous program may still use its VMEM), and the first
// phase's step 0 sends into HBM scratch instead. Otherwise partial sums land
// in an HBM scratch slot per step (never reused), are staged into VMEM with
// the local operand (double-buffered per stream, or four buffers loaded
// three pieces ahead where pieces are short on the link), added on the VPU
// and sent on from VMEM. The VMEM buffers and slots are padded to whole
// add-loop iterations (16 KiB), plus 32 KiB at the end for the
// software-pipelined loop's over-read, so pieces need only be whole 32-byte
// granules, for reductions too. The schedule's choices and their measured
// effect: programs/collectives.cpp (choose_piece, strided_units,
// choose_landing, choose_leads, choose_depths).
//
// Program contract (what the pod runtime provides):
//   * operands: index 0 input, 1 output, 2 HBM scratch of scratch_bytes
//     (reduce-scatter and all-reduce only; contents ignored), each at the
//     same HBM address on every chip, and the program's VMEM allocations at
//     the same VMEM address on every chip (landing zones are written by the
//     predecessor);
//   * sync flags start at 0; the program leaves them at 0;
//   * equal-sized DMAs of one kind from one core to one destination arrive in
//     the order they were issued: a ring step's pieces share one arrival flag,
//     awaited piece by piece as counts (every step has its own flag);
//   * core 0 of each chip does the work; other cores go straight to the end;
//     the program halts with an error (shalt.err) if sid.dim_* differ from the
//     topology it was generated for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/chip_config.hpp"
#include "ici/topology.hpp"

namespace tpuemu::programs {

struct CollectiveSpec {
  std::string op;                 // "all-gather" | "reduce-scatter" | "all-reduce" | "all-to-all"
  std::string algorithm;          // a registered algorithm: "ring", "bidir-ring", "multi-axis", "one-shot", ...
  std::string dtype;              // "f32" | "bf16"
  std::uint64_t bytes = 0;        // V
  std::vector<std::size_t> axes;  // participating axes (0 = x, 1 = y, 2 = z), distinct
  std::uint64_t piece_bytes = 0;  // 0: the generator picks
};

// The validated spec, shared by the generator and the host reference.
struct CollectivePlan {
  enum class Op { kAllGather, kReduceScatter, kAllReduce, kAllToAll };
  Op op = Op::kAllGather;
  bool bf16 = false;
  std::uint64_t bytes = 0;                       // V
  std::vector<std::size_t> axes;                 // participating axes of length > 1, as listed
  std::uint64_t group_size = 1;                  // N
  std::uint64_t chunk_bytes = 0;                 // Q = V / N
  std::uint64_t parts = 1;                       // K
  std::uint64_t directions = 1;                  // D
  bool half_rings = false;                       // each unit on two half rings (ring_hops): bidir-ring
  std::uint64_t unit_bytes = 0;                  // u = Q / (K * D); all-to-all: a block, V / N^2
  std::uint64_t piece_bytes = 0;                 // as given (0: the generator picks)
  std::vector<std::vector<std::size_t>> orders;  // O_p per part, topology axis ids
  std::vector<std::uint64_t> rank_stride;        // per topology axis; 0 if not participating
  // Where unit (r, p, d) lives in the input and output arrays (bytes):
  // unit_base[p*D + d] + sum over the participating axes a of digit_a(r) *
  // unit_stride[p][a] (see "Layout" in the header comment).
  std::vector<std::uint64_t> unit_base;                 // per stream p*D + d
  std::vector<std::vector<std::uint64_t>> unit_stride;  // per part, per topology axis; 0 if not participating

  [[nodiscard]] bool reduces() const { return op == Op::kReduceScatter || op == Op::kAllReduce; }
  // Group rank of a chip (coordinates on the participating axes).
  [[nodiscard]] std::uint64_t rank(const ici::Coords& coords) const;
  // Byte offset of unit (rank, part, dir) in the input (reduce-scatter,
  // all-reduce) or output (all-gather, all-reduce) array.
  [[nodiscard]] std::uint64_t unit_offset(std::uint64_t rank, std::size_t part, std::size_t dir,
                                          const ici::Topology& topology) const;
};

// Hops of the two streams of one unit on an axis of L chips under half rings
// (bidir-ring): the long stream goes the unit's own direction, the short one
// the other way, and together they cover the other L-1 chips. A gather phase
// takes floor(L/2) and floor((L-1)/2). A reduce phase takes L/2 and L/2 - 1
// for even L, (L+1)/2 and (L-3)/2 for odd L: the short chain always ends
// before the long one (its sum is what the long one's last step adds into),
// and each link direction carries L-1 units per phase either way.
struct RingHops {
  std::uint32_t long_hops = 0;
  std::uint32_t short_hops = 0;
};
RingHops ring_hops(std::uint32_t length, bool reduce);

// Ring order on one axis of L chips (the ring family's rings, and their host
// reference). An axis without wraparound of at least 4 chips is folded: ring
// positions 0, 1, 2, ... are the coordinates 0, 2, 4, ..., then the odd ones
// descending, ..., 5, 3, 1 (L = 8: 0 2 4 6 7 5 3 1), so every hop spans at
// most 2 links and a ring going one way crosses each direction of each link
// exactly once (ring_link_loads). Elsewhere position p is coordinate p: a
// wrapping axis closes through its wraparound link, an axis of 2 over its one
// link, an unwrapped axis of 3 over 2 links (the fold would only reverse it).
[[nodiscard]] bool folded_ring_axis(const ici::Topology& topology, std::size_t axis);
// The coordinate at ring position `position` (< length), and its inverse.
[[nodiscard]] std::uint32_t ring_coordinate(std::uint32_t position, std::uint32_t length, bool folded);
[[nodiscard]] std::uint32_t ring_position(std::uint32_t coordinate, std::uint32_t length, bool folded);

// Scalar LLO computing, on a folded axis of `length` chips, the chip `steps`
// ring positions on from this one (steps in 1 .. length-1; length-1 is the
// one before): `dst` = `chip` + (ring_coordinate((ring_position(c) + steps)
// mod length) - c) x `stride`, c the chip's coordinate in register `coord`.
// Registers without their %; the ops clobber `t0`, `t1` and predicate `p`
// and are one scalar op each, in order.
struct ScalarOp {
  std::string text;
  std::vector<std::string> reads, writes;
};
[[nodiscard]] std::vector<ScalarOp> folded_ring_neighbour(const std::string& coord, const std::string& chip,
                                                          const std::string& dst, std::uint32_t length,
                                                          std::uint32_t steps, std::uint64_t stride,
                                                          const std::string& t0, const std::string& t1,
                                                          const std::string& p);

// What the ring over one axis of L chips asks of its links, each hop routed
// the short way along the axis (an unwrapped axis has one route; a wrapping
// one's hops are single links). plus[i] / minus[i]: the hops of a ring going
// one way (position p to p + 1) that cross link i (between coordinates i and
// i + 1; i = L - 1 the wraparound link) in direction + / -. A ring going the
// other way crosses the same links the other way, so rings going both ways
// at once (bidir-ring, multi-axis) put plus[i] + minus[i] hops on each
// direction of link i.
struct RingLinkLoads {
  std::vector<std::uint32_t> plus;
  std::vector<std::uint32_t> minus;
  std::uint32_t longest_hop = 0;  // links
  std::uint32_t one_way = 0;      // max over links and directions, one ring
  std::uint32_t both_ways = 0;    // max over links of plus[i] + minus[i]
};
[[nodiscard]] RingLinkLoads ring_link_loads(std::uint32_t length, bool wraps, bool folded);

// Throws std::invalid_argument as collective_shapes does.
CollectivePlan plan_collective(const CollectiveSpec& spec, const ici::Topology& topology);

struct CollectiveShapes {
  std::uint64_t input_bytes = 0;
  std::uint64_t output_bytes = 0;
  std::uint64_t scratch_bytes = 0;  // 0: the program binds no scratch operand
  std::uint64_t group_size = 0;     // N
};

// Throws std::invalid_argument naming the problem: unknown op, algorithm or
// dtype; no axes, a repeated axis or one the topology lacks; V = 0 or V not a
// multiple of 32 bytes per unit (N * K * D * 32; all-to-all: 32 * N^2); a
// piece_bytes that is not a multiple of 32 dividing the unit u.
CollectiveShapes collective_shapes(const CollectiveSpec& spec, const ici::Topology& topology);

// Padded collectives. The program above needs V a multiple of its split M =
// N x parts x directions x 32 bytes (32 bytes per unit granule); a size that
// is not runs, as XLA runs it, on the buffer padded with zeros to V_pad, and
// the padded bytes really travel (the program is the one of V_pad: its time
// is V_pad's). V_pad = g x M with g the least number of granules per unit,
// ceil(V / M), rounded up to a multiple of the largest power of two <= g/64:
// the generators' pipelining pieces divide the unit, and a unit of a prime
// number of granules would move 32 bytes at a time (h100 node:6 ring
// all-reduce of 1 MiB padded to the bare multiple, 1048704 B: 7164 us); the
// rounding adds less than 1/64 of the unit.
// Semantics on the user's V bytes, with Q_pad = V_pad / N:
//   all-reduce      input V, zero-padded to V_pad; output the first V bytes.
//                   Zero padding is exact: the padded elements are sums of
//                   zeros and reach no other element; each of the first V
//                   bytes is summed in the order of V_pad's plan (its unit's
//                   ring order, programs/collective_reference.hpp).
//   all-gather      unequal pieces: rank r's input is the bytes [r*Q_pad,
//                   min((r+1)*Q_pad, V)) of the gathered array (possibly
//                   empty for the last ranks; collective_valid_chunk_bytes),
//                   zero-padded to Q_pad; output the first V bytes.
//   reduce-scatter  input V, zero-padded; rank r's output is the sum of those
//                   same bytes of the array (its valid chunk bytes).
//   all-to-all      not padded (its N^2 blocks have no unequal form here):
//                   plan_collective names the multiple it needs.
// The element size of `dtype` ("f32" 4 bytes, "bf16" 2).
std::uint64_t collective_element_bytes(const std::string& dtype);
// V_pad for spec.bytes (spec.bytes itself when it divides, and for
// all-to-all). Throws std::invalid_argument for the spec's op, algorithm,
// dtype or axes as plan_collective does, for V = 0, and for V not a multiple
// of the element size.
std::uint64_t padded_collective_bytes(const CollectiveSpec& spec, const ici::Topology& topology);
// The bytes of rank r's Q_pad chunk that hold user data: min(Q_pad, V - r x
// Q_pad), 0 when r x Q_pad >= V (all-gather's input, reduce-scatter's output).
std::uint64_t collective_valid_chunk_bytes(std::uint64_t bytes, std::uint64_t padded_bytes, std::uint64_t group_size,
                                           std::uint64_t rank);

// The LLO program. Throws std::invalid_argument as collective_shapes does, when
// the VMEM buffers of an explicit piece_bytes do not fit the chip, and when the
// chip has too few sync flags (sflag.count: one per stream and ring step).
// Under an NCCL protocol (chip.fabric.protocol) the program first waits out
// its base latency (with_launch_latency).
std::string generate_collective(const CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip);
// `text` with a countdown loop of chip.launch_latency() after its first
// bundle (unchanged without one).
std::string with_launch_latency(std::string text, const ChipConfig& chip);

// The book's prediction ("How to Scale Your Model", facts.md): bandwidth term
// + latency term, with W = 2 x chip.ici.link_bandwidth (both directions of an
// axis) and N the group size:
//   bidir-ring  all-gather, reduce-scatter V/W * (N-1)/N; all-reduce twice that
//   ring        all-gather, reduce-scatter V/(W/2) * (N-1)/N; all-reduce twice that
//   multi-axis  the bidir-ring terms divided by K
//   all-to-all  V * max(L_i) / (4 * N * W) (1-D: V / (4W))
// ((N-1)/N: what a ring moves of V; the book drops it.)
// Latency: T_min = chip.ici.hop_latency per hop, the steps its program takes
// per axis: bidir-ring's half rings floor(L_i/2) (reductions over an odd axis
// one more), the full rings of ring and multi-axis L_i - 1, all-to-all
// floor(L_i/2); summed over the axes, twice for all-reduce. Less what
// pipelining hides: a step whose pieces the next step forwards pays T_min
// less the link time of its later pieces (in a reduce phase less also the
// HBM latency); a phase's last step, a reduce phase's step 0 and steps of one
// piece pay T_min whole (CollectiveGen::pipelined_hop_seconds). With an axis
// without wraparound of 3 chips or more, the ring family is predicted from
// what its links carry instead: round by round as the generator runs its
// streams, the busiest link direction's bytes at the one-way payload rate,
// plus T_min per link of the round's longest hop (2 on a folded ring; the
// one-way ring keeps the wrapped ring's bandwidth term, bidir-ring's halves),
// less what pipelining hides as above, round by round;
// `formula` says so. All-to-all on such an axis is predicted as if it
// wrapped (the book: about twice as long), and `formula` says that.
struct CollectivePrediction {
  double seconds = 0;
  double bandwidth_seconds = 0;
  double latency_seconds = 0;
  std::string formula;
};
// One chip-to-chip transfer of a group on a switched fabric: whether the
// group spans a fat tree's nodes, the chip's egress B (its NIC across nodes,
// ChipConfig::nic_payload_rate, else all its NVLinks) and the latency T_hop
// (ChipConfig::nic_hop_latency across nodes: 4 NIC link latencies or the NCCL
// protocol's net hop latency if more; else ChipConfig::switched_hop_latency:
// 2 x ici.hop_latency + fabric.switch_latency, or the protocol's hop latency
// if more).
struct SwitchedHop {
  bool spans_nodes = false;
  double egress = 0;
  double latency = 0;
  // Within one domain: the paths' weights (fabric.links_per_switch), one
  // NVLink's payload rate and the packet size (ici.packet_size); empty
  // weights across nodes.
  std::vector<std::uint32_t> weights;
  double link_rate = 0;
  std::uint64_t packet_bytes = 0;
  // The store-and-forward through the switch: what `transfers` transfers of
  // `bytes` each, leaving a chip at once for other chips of its domain, take
  // beyond transfers x bytes / egress when nothing else is on the links. Each
  // is dealt over the paths as the network deals it
  // (ici::Network::split_by_weight); a path of weight w (rate w x link_rate)
  // carries its parts of all the transfers over the chip -> switch link, then
  // the last packet again over the switch -> chip link (a packet is
  // forwarded once it has wholly arrived): max over paths of (parts + that
  // packet) / rate, less transfers x bytes / egress. So a transfer sprayed
  // in one packet per path crosses twice, a long one pays one packet per
  // path once, and a path's share above its weight's shows too. 0 across
  // nodes (not modelled).
  [[nodiscard]] double store_and_forward(std::uint64_t bytes, std::uint64_t transfers = 1) const;
};
SwitchedHop switched_hop(const CollectivePlan& plan, const ici::Topology& topology, const ChipConfig& chip);
// One hop between two chips of a switched fabric: across nodes (a fat
// tree's NICs) or within a node (its NVLinks, with the paths' weights).
SwitchedHop switched_hop_between(bool across_nodes, const ici::Topology& topology, const ChipConfig& chip);
// The node of each member of the plan's first group (collective_groups'
// order): its coordinate along a fat tree's node axis (axis 1); 0 for every
// member on other fabrics. Members of different nodes talk through their NICs.
std::vector<std::uint64_t> member_nodes(const CollectivePlan& plan, const ici::Topology& topology);

CollectivePrediction predict_collective(const CollectiveSpec& spec, const ici::Topology& topology,
                                        const ChipConfig& chip);

}  // namespace tpuemu::programs
