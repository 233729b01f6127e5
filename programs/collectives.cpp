#include "programs/collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "common/types.hpp"
#include "ici/network.hpp"
#include "programs/collective_algorithm.hpp"
#include "programs/collective_emitter.hpp"
#include "programs/collective_reference.hpp"
#include "programs/llo_writer.hpp"
#include "programs/ring_family.hpp"

namespace tpuemu::programs {
namespace {

using S = SlotClass;
using Op = CollectivePlan::Op;

constexpr std::uint64_t kGranule = kCollectiveGranule;
constexpr std::uint64_t kRowBytes = kCollectiveRowBytes;
constexpr std::uint64_t kGroupBytes = kAddGroupBytes;
constexpr std::uint64_t kGroupRows = kAddGroupRows;
constexpr std::size_t kMaxStreams = 6;

std::string imm(std::int64_t v) {
  return llo_imm(v);
}

std::string axes_text(const std::vector<std::size_t>& axes) {
  std::string out;
  for (std::size_t a : axes) out += std::string(out.empty() ? "" : ",") + ici::axis_name(a);
  return out;
}

// "all-reduce bidir-ring over y of 8x16 (16 chips per group)", for messages.
std::string describe(const CollectiveSpec& spec, const ici::Topology& topology, std::uint64_t n) {
  return fmt::format("{} {} over {} of {} ({} chip{} per group)", spec.op, spec.algorithm, axes_text(spec.axes),
                     topology.shape(), n, n == 1 ? "" : "s");
}

// One phase of a stream: a ring collective along one axis. The chunk a step
// moves is the units of the ranks whose digit on `axis` is the step's chunk
// index, whose digits on `varying` take every value (enumerated in that order,
// fastest first), and whose other digits are this chip's coordinates.
struct Phase {
  bool reduce = false;
  std::size_t axis = 0;
  std::uint32_t length = 0;
  std::vector<std::size_t> varying;
  std::uint64_t units = 1;  // per chunk
};

// The phases of part p (see the header: O_p, and the enumeration orders that
// make a reduce phase's result the next phase's chunks in order).
std::vector<Phase> phases_of(const CollectivePlan& plan, const ici::Topology& topology, std::size_t part) {
  const std::vector<std::size_t>& o = plan.orders[part];
  const std::size_t m = o.size();
  auto make = [&](bool reduce, std::size_t axis, std::vector<std::size_t> varying) {
    Phase ph;
    ph.reduce = reduce;
    ph.axis = axis;
    ph.length = topology.length(axis);
    for (std::size_t a : varying) ph.units *= topology.length(a);
    ph.varying = std::move(varying);
    return ph;
  };
  std::vector<Phase> out;
  if (plan.reduces()) {
    // Reduce phase t: varying o[m-1] (fastest) .. o[t+1] (slowest).
    for (std::size_t t = 0; t < m; ++t) {
      std::vector<std::size_t> v;
      for (std::size_t i = m; i-- > t + 1;) v.push_back(o[i]);
      out.push_back(make(true, o[t], v));
    }
  }
  if (plan.op == Op::kAllGather) {
    for (std::size_t t = 0; t < m; ++t) {
      out.push_back(make(false, o[t], {o.begin(), o.begin() + static_cast<std::ptrdiff_t>(t)}));
    }
  } else if (plan.op == Op::kAllReduce) {
    // Gather phase t: varying o[m-1] (fastest, as the layout) .. o[i+1].
    for (std::size_t t = 0; t < m; ++t) {
      const std::size_t i = m - 1 - t;
      std::vector<std::size_t> v;
      for (std::size_t a = m; a-- > i + 1;) v.push_back(o[a]);
      out.push_back(make(false, o[i], v));
    }
  }
  return out;
}

// Scratch layout of one stream, in granules from the scratch operand: per
// reduce phase, one slot per step (the partial sums received then) and the
// phase's result (all but the last phase, whose result goes to the output).
struct ScratchLayout {
  std::vector<std::uint64_t> slots;   // per reduce phase: first slot; slot k at slots[t] + k * chunk
  std::vector<std::uint64_t> result;  // per reduce phase but the last
  std::uint64_t end = 0;
};

ScratchLayout scratch_layout(const std::vector<Phase>& phases, const std::vector<std::uint32_t>& hops,
                             std::uint64_t unit_granules, std::uint64_t start) {
  ScratchLayout l;
  std::uint64_t at = start;
  std::size_t reduce_phases = 0;
  for (const Phase& ph : phases) reduce_phases += ph.reduce ? 1 : 0;
  for (std::size_t t = 0; t < reduce_phases; ++t) {
    const std::uint64_t chunk = phases[t].units * unit_granules;
    l.slots.push_back(at);
    at += hops[t] * chunk;
    if (t + 1 < reduce_phases) {
      l.result.push_back(at);
      at += chunk;
    }
  }
  l.end = at;
  return l;
}

// A stream of the generator: part p, the units it moves (unit d of every
// rank's part p) and the direction it sends them in, with its hops per phase.
// Full rings: stream (p, d) moves unit d in direction d, L-1 hops per phase.
// Half rings (plan.half_rings): per unit d a long stream in direction d and a
// short one in direction 1-d, ring_hops() hops each, and where the short one
// has hops the long one's last step adds into what the short one stored.
struct StreamShape {
  std::size_t part = 0;
  std::size_t unit = 0;
  std::size_t dir = 0;  // 0: +, 1: -
  bool is_long = true;
  std::vector<Phase> phases;
  std::vector<std::uint32_t> hops;  // per phase
};

std::vector<StreamShape> stream_shapes(const CollectivePlan& plan, const ici::Topology& topology) {
  std::vector<StreamShape> out;
  for (std::size_t p = 0; p < plan.parts; ++p) {
    const auto phases = phases_of(plan, topology, p);
    const std::size_t kinds = plan.half_rings ? 2 : 1;
    for (std::size_t kind = 0; kind < kinds; ++kind) {
      for (std::size_t d = 0; d < plan.directions; ++d) {
        StreamShape st;
        st.part = p;
        st.unit = d;
        st.is_long = kind == 0;
        st.dir = st.is_long ? d : 1 - d;
        st.phases = phases;
        for (const Phase& ph : phases) {
          if (!plan.half_rings) {
            st.hops.push_back(ph.length - 1);
          } else {
            const RingHops h = ring_hops(ph.length, ph.reduce);
            st.hops.push_back(st.is_long ? h.long_hops : h.short_hops);
          }
        }
        out.push_back(std::move(st));
      }
    }
  }
  return out;
}

std::uint64_t total_scratch_granules(const CollectivePlan& plan, const ici::Topology& topology) {
  if (!plan.reduces() || plan.axes.empty()) return 0;
  std::uint64_t at = 0;
  const std::uint64_t ug = plan.unit_bytes / kGranule;
  for (const StreamShape& st : stream_shapes(plan, topology)) at = scratch_layout(st.phases, st.hops, ug, at).end;
  return at;
}

}  // namespace

RingHops ring_hops(std::uint32_t length, bool reduce) {
  if (length < 2) return {};
  if (!reduce || length % 2 == 0) return {length / 2, (length - 1) / 2};
  return {(length + 1) / 2, (length - 3) / 2};
}

bool folded_ring_axis(const ici::Topology& topology, std::size_t axis) {
  return !topology.switched() && !topology.wraps(axis) && topology.length(axis) >= 4;
}

std::uint32_t ring_coordinate(std::uint32_t position, std::uint32_t length, bool folded) {
  if (!folded) return position;
  const std::uint32_t evens = (length + 1) / 2;
  return position < evens ? 2 * position : 2 * (length - 1 - position) + 1;
}

std::uint32_t ring_position(std::uint32_t coordinate, std::uint32_t length, bool folded) {
  if (!folded) return coordinate;
  return coordinate % 2 == 0 ? coordinate / 2 : length - 1 - coordinate / 2;
}

std::vector<ScalarOp> folded_ring_neighbour(const std::string& coord, const std::string& chip, const std::string& dst,
                                            std::uint32_t length, std::uint32_t steps, std::uint64_t stride,
                                            const std::string& t0, const std::string& t1, const std::string& p) {
  const auto l = static_cast<std::int64_t>(length);
  auto op = [](std::string text, std::vector<std::string> reads, std::vector<std::string> writes) {
    return ScalarOp{std::move(text), std::move(reads), std::move(writes)};
  };
  return {
      // t0 = ring_position(c): c / 2 for even c, l - 1 - c / 2 for odd.
      op(fmt::format("%{} = sshrl.u32 %{}, 1", t0, coord), {coord}, {t0}),
      op(fmt::format("%{} = sand.u32 %{}, 1", t1, coord), {coord}, {t1}),
      op(fmt::format("%{} = scmp.eq.s32.totalorder %{}, 1", p, t1), {t1}, {p}),
      op(fmt::format("%{} = ssub.s32 {}, %{}", t1, llo_imm(l - 1), t0), {t0}, {t1}),
      op(fmt::format("%{} = scalar_select /*predicate=*/%{}, /*on_true=*/%{}, /*on_false=*/%{}", t0, p, t1, t0),
         {p, t1, t0}, {t0}),
      // t0 = (t0 + steps) mod l.
      op(fmt::format("%{} = sadd.s32 %{}, {}", t0, t0, steps), {t0}, {t0}),
      op(fmt::format("%{} = sadd.s32 %{}, {}", t1, t0, llo_imm(-l)), {t0}, {t1}),
      op(fmt::format("%{} = scmp.ge.s32.totalorder %{}, {}", p, t0, l), {t0}, {p}),
      op(fmt::format("%{} = scalar_select /*predicate=*/%{}, /*on_true=*/%{}, /*on_false=*/%{}", t0, p, t1, t0),
         {p, t1, t0}, {t0}),
      // t0 = ring_coordinate(t0): 2 t0 for the first ceil(l/2) positions, else 2 (l - 1 - t0) + 1.
      op(fmt::format("%{} = scmp.lt.s32.totalorder %{}, {}", p, t0, (l + 1) / 2), {t0}, {p}),
      op(fmt::format("%{} = sshll.u32 %{}, 1", t0, t0), {t0}, {t0}),
      op(fmt::format("%{} = ssub.s32 {}, %{}", t1, llo_imm(2 * l - 1), t0), {t0}, {t1}),
      op(fmt::format("%{} = scalar_select /*predicate=*/%{}, /*on_true=*/%{}, /*on_false=*/%{}", t0, p, t0, t1),
         {p, t0, t1}, {t0}),
      // dst = chip + (t0 - c) x stride.
      op(fmt::format("%{} = ssub.s32 %{}, %{}", t0, t0, coord), {t0, coord}, {t0}),
      op(fmt::format("%{} = smul.u32 %{}, {}", t0, t0, llo_imm(static_cast<std::int64_t>(stride))), {t0}, {t0}),
      op(fmt::format("%{} = sadd.s32 %{}, %{}", dst, chip, t0), {chip, t0}, {dst}),
  };
}

RingLinkLoads ring_link_loads(std::uint32_t length, bool wraps, bool folded) {
  RingLinkLoads out;
  out.plus.assign(length, 0);
  out.minus.assign(length, 0);
  if (length < 2) return out;
  for (std::uint32_t p = 0; p < length; ++p) {
    const std::uint32_t a = ring_coordinate(p, length, folded);
    const std::uint32_t b = ring_coordinate((p + 1) % length, length, folded);
    std::uint32_t links = 0;
    if (wraps) {
      // The short way round (ties +); on the ring orders used here always one link.
      const std::uint32_t up = (b + length - a) % length;
      if (up <= length - up) {
        for (std::uint32_t i = 0; i < up; ++i) ++out.plus[(a + i) % length];
        links = up;
      } else {
        for (std::uint32_t i = 0; i < length - up; ++i) ++out.minus[(a + length - 1 - i) % length];
        links = length - up;
      }
    } else if (a < b) {
      for (std::uint32_t i = a; i < b; ++i) ++out.plus[i];
      links = b - a;
    } else {
      for (std::uint32_t i = b; i < a; ++i) ++out.minus[i];
      links = a - b;
    }
    out.longest_hop = std::max(out.longest_hop, links);
  }
  for (std::uint32_t i = 0; i < length; ++i) {
    out.one_way = std::max({out.one_way, out.plus[i], out.minus[i]});
    out.both_ways = std::max(out.both_ways, out.plus[i] + out.minus[i]);
  }
  return out;
}

std::uint64_t CollectivePlan::rank(const ici::Coords& coords) const {
  std::uint64_t r = 0;
  for (std::size_t a : axes) r += coords[a] * rank_stride[a];
  return r;
}

namespace {

// plan_collective up to its size: op, dtype, groups, streams (no bytes, no
// layout). Throws std::invalid_argument as plan_collective does.
CollectivePlan plan_groups(const CollectiveSpec& spec, const ici::Topology& topology) {
  CollectivePlan plan;
  if (spec.op == "all-gather") {
    plan.op = Op::kAllGather;
  } else if (spec.op == "reduce-scatter") {
    plan.op = Op::kReduceScatter;
  } else if (spec.op == "all-reduce") {
    plan.op = Op::kAllReduce;
  } else if (spec.op == "all-to-all") {
    plan.op = Op::kAllToAll;
  } else {
    throw std::invalid_argument(
        fmt::format("collective: unknown op '{}' (all-gather, reduce-scatter, all-reduce, all-to-all)", spec.op));
  }
  const CollectiveAlgorithm& algorithm = collective_algorithm(spec.algorithm);
  if (spec.dtype != "f32" && spec.dtype != "bf16") {
    throw std::invalid_argument(fmt::format("collective: unknown dtype '{}' (f32, bf16)", spec.dtype));
  }
  plan.bf16 = spec.dtype == "bf16";
  if (spec.axes.empty()) throw std::invalid_argument("collective: no participating axes given");
  plan.rank_stride.assign(ici::kMaxAxes, 0);
  std::uint64_t n = 1;
  for (std::size_t i = 0; i < spec.axes.size(); ++i) {
    const std::size_t a = spec.axes[i];
    if (a >= topology.axis_count()) {
      throw std::invalid_argument(fmt::format("collective: axis {} is not an axis of topology {} ({} axes)",
                                              a < ici::kMaxAxes ? std::string(1, ici::axis_name(a)) : std::to_string(a),
                                              topology.shape(), topology.axis_count()));
    }
    if (std::find(spec.axes.begin(), spec.axes.begin() + static_cast<std::ptrdiff_t>(i), a) !=
        spec.axes.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw std::invalid_argument(fmt::format("collective: axis {} is listed twice", ici::axis_name(a)));
    }
    if (topology.length(a) == 1) continue;
    plan.rank_stride[a] = n;
    n *= topology.length(a);
    plan.axes.push_back(a);
  }
  plan.group_size = n;
  if (const std::string why = algorithm.refusal(plan.op, plan.axes, topology); !why.empty()) {
    throw std::invalid_argument(fmt::format("collective: {}", why));
  }
  if (plan.op == Op::kAllToAll) {
    plan.parts = 1;
    plan.directions = 1;
  } else {
    plan.parts = algorithm.parts(plan.axes.size());
    plan.directions = algorithm.directions();
    plan.half_rings = algorithm.half_rings();
  }
  return plan;
}

// The sizes a plan can split: 32-byte granules per unit (all-to-all: per block).
std::uint64_t size_multiple(const CollectivePlan& plan) {
  const std::uint64_t n = plan.group_size;
  return plan.op == Op::kAllToAll ? kGranule * n * n : kGranule * n * plan.parts * plan.directions;
}

}  // namespace

std::uint64_t collective_element_bytes(const std::string& dtype) {
  return dtype == "bf16" ? 2 : 4;
}

std::uint64_t padded_collective_bytes(const CollectiveSpec& spec, const ici::Topology& topology) {
  const CollectivePlan plan = plan_groups(spec, topology);
  const std::string what = describe(spec, topology, plan.group_size);
  if (spec.bytes == 0) throw std::invalid_argument(fmt::format("{}: bytes must be positive", what));
  const std::uint64_t element = collective_element_bytes(spec.dtype);
  if (spec.bytes % element != 0) {
    throw std::invalid_argument(fmt::format("{}: bytes {} must be a multiple of the {}-byte {} element", what,
                                            spec.bytes, element, spec.dtype));
  }
  if (plan.op == Op::kAllToAll) return spec.bytes;     // no padding: plan_collective names the multiple
  const std::uint64_t multiple = size_multiple(plan);  // bytes per granule of a unit
  if (spec.bytes % multiple == 0) return spec.bytes;
  // Granules per unit: at least ceil(V / multiple), rounded up to a multiple
  // of the largest power of two <= 1/64 of that, so the generators' pieces
  // (which divide the unit) stay near their target: a unit of a prime
  // number of granules would be moved 32 bytes at a time.
  const std::uint64_t least = spec.bytes / multiple + 1;
  const std::uint64_t align = std::bit_floor(std::max<std::uint64_t>(1, least / 64));
  const std::uint64_t granules = (least + align - 1) / align * align;
  if (granules > std::numeric_limits<std::uint64_t>::max() / multiple) return spec.bytes;  // plan_collective refuses it
  return granules * multiple;
}

std::uint64_t collective_valid_chunk_bytes(std::uint64_t bytes, std::uint64_t padded_bytes, std::uint64_t group_size,
                                           std::uint64_t rank) {
  const std::uint64_t chunk = padded_bytes / group_size;
  const std::uint64_t start = rank * chunk;
  return start >= bytes ? 0 : std::min(chunk, bytes - start);
}

CollectivePlan plan_collective(const CollectiveSpec& spec, const ici::Topology& topology) {
  CollectivePlan plan = plan_groups(spec, topology);
  const std::uint64_t n = plan.group_size;
  plan.bytes = spec.bytes;
  plan.piece_bytes = spec.piece_bytes;
  const std::string what = describe(spec, topology, n);
  if (spec.bytes == 0) throw std::invalid_argument(fmt::format("{}: bytes must be positive", what));
  if (plan.op == Op::kAllToAll) {
    const std::uint64_t multiple = size_multiple(plan);
    if (spec.bytes % multiple != 0) {
      throw std::invalid_argument(
          fmt::format("{}: bytes {} must be a multiple of {} (N^2 = {} blocks of whole 32-byte granules)", what,
                      spec.bytes, multiple, n * n));
    }
    plan.chunk_bytes = spec.bytes / n;
    plan.unit_bytes = spec.bytes / (n * n);
  } else {
    const std::uint64_t multiple = size_multiple(plan);
    if (spec.bytes % multiple != 0) {
      throw std::invalid_argument(fmt::format(
          "{}: bytes {} must be a multiple of {} ({} chips x {} part{} x {} direction{} x 32-byte granules)", what,
          spec.bytes, multiple, n, plan.parts, plan.parts == 1 ? "" : "s", plan.directions,
          plan.directions == 1 ? "" : "s"));
    }
    plan.chunk_bytes = spec.bytes / n;
    plan.unit_bytes = plan.chunk_bytes / (plan.parts * plan.directions);
  }
  if (spec.bytes / kGranule >= (1ULL << 31)) {
    throw std::invalid_argument(
        fmt::format("{}: bytes {} is too large (sync-flag counts of granules must stay "
                    "below 2^31)",
                    what, spec.bytes));
  }
  if (spec.piece_bytes != 0 && plan.op != Op::kAllToAll &&
      (spec.piece_bytes % kGranule != 0 || plan.unit_bytes % spec.piece_bytes != 0)) {
    throw std::invalid_argument(
        fmt::format("{}: piece_bytes {} must be a multiple of 32 that divides the unit of {} bytes (V / (N x parts "
                    "x directions))",
                    what, spec.piece_bytes, plan.unit_bytes));
  }
  for (std::size_t p = 0; p < plan.parts; ++p) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < plan.axes.size(); ++i) order.push_back(plan.axes[(p + i) % plan.axes.size()]);
    plan.orders.push_back(order);
  }
  // Unit layout (header: "Layout").
  const std::uint64_t streams = plan.parts * plan.directions;
  for (std::size_t p = 0; p < plan.parts; ++p) {
    std::vector<std::uint64_t> stride(ici::kMaxAxes, 0);
    if (plan.op == Op::kAllReduce) {
      std::uint64_t s = plan.unit_bytes;
      for (std::size_t i = plan.orders[p].size(); i-- > 0;) {
        stride[plan.orders[p][i]] = s;
        s *= topology.length(plan.orders[p][i]);
      }
    } else {
      for (std::size_t a : plan.axes) stride[a] = plan.rank_stride[a] * plan.chunk_bytes;
    }
    plan.unit_stride.push_back(stride);
    for (std::size_t d = 0; d < plan.directions; ++d) {
      const std::uint64_t k = p * plan.directions + d;
      plan.unit_base.push_back(plan.op == Op::kAllReduce ? k * (plan.bytes / streams) : k * plan.unit_bytes);
    }
  }
  return plan;
}

std::uint64_t CollectivePlan::unit_offset(std::uint64_t r, std::size_t part, std::size_t dir,
                                          const ici::Topology& topology) const {
  std::uint64_t at = unit_base[part * directions + dir];
  for (std::size_t a : axes) at += r / rank_stride[a] % topology.length(a) * unit_stride[part][a];
  return at;
}

CollectiveShapes collective_shapes(const CollectiveSpec& spec, const ici::Topology& topology) {
  const CollectivePlan plan = plan_collective(spec, topology);
  CollectiveShapes s;
  s.group_size = plan.group_size;
  switch (plan.op) {
    case Op::kAllGather:
      s.input_bytes = plan.chunk_bytes;
      s.output_bytes = plan.bytes;
      break;
    case Op::kReduceScatter:
      s.input_bytes = plan.bytes;
      s.output_bytes = plan.chunk_bytes;
      break;
    case Op::kAllReduce:
      s.input_bytes = plan.bytes;
      s.output_bytes = plan.bytes;
      break;
    case Op::kAllToAll:
      s.input_bytes = plan.chunk_bytes;
      s.output_bytes = plan.chunk_bytes;
      break;
  }
  // All-to-all and a group of one chip are the same program for every algorithm (no scratch).
  s.scratch_bytes = plan.axes.empty() || plan.op == Op::kAllToAll
                        ? 0
                        : collective_algorithm(spec.algorithm).scratch_bytes(plan, topology);
  return s;
}

std::uint64_t ring_family_scratch_bytes(const CollectivePlan& plan, const ici::Topology& topology) {
  return total_scratch_granules(plan, topology) * kGranule;
}

SwitchedHop switched_hop(const CollectivePlan& plan, const ici::Topology& topology, const ChipConfig& chip) {
  bool spans_nodes = false;
  for (std::size_t a : plan.axes) spans_nodes = spans_nodes || (topology.fabric() == "fat-tree" && a == 1);
  return switched_hop_between(spans_nodes, topology, chip);
}

std::vector<std::uint64_t> member_nodes(const CollectivePlan& plan, const ici::Topology& topology) {
  std::vector<std::uint64_t> nodes;
  if (plan.axes.empty()) return nodes;
  const std::vector<std::vector<ChipId>> groups = collective_detail::collective_groups(plan, topology);
  for (const ChipId c : groups.front()) {
    nodes.push_back(topology.fabric() == "fat-tree" ? topology.coords(c)[1] : 0);
  }
  return nodes;
}

SwitchedHop switched_hop_between(bool across_nodes, const ici::Topology& topology, const ChipConfig& chip) {
  SwitchedHop h;
  h.spans_nodes = across_nodes;
  h.egress = h.spans_nodes ? chip.nic_payload_rate() : chip.switched_egress();
  h.latency = h.spans_nodes ? chip.nic_hop_latency() : chip.switched_hop_latency();
  if (!h.spans_nodes && topology.switched()) {
    for (std::uint64_t w : chip.fabric.links_per_switch()) h.weights.push_back(static_cast<std::uint32_t>(w));
    h.link_rate = chip.link_payload_rate();
    h.packet_bytes = chip.ici.packet_bytes;
  }
  return h;
}

double SwitchedHop::store_and_forward(std::uint64_t bytes, std::uint64_t transfers) const {
  if (weights.empty() || bytes == 0 || transfers == 0 || packet_bytes == 0 || !(link_rate > 0)) return 0;
  double slowest = 0;
  for (const auto& [path, part] : ici::Network::split_by_weight(bytes, weights, packet_bytes)) {
    const double rate = static_cast<double>(weights[path]) * link_rate;
    const auto first = static_cast<double>(std::min(part, packet_bytes));
    slowest = std::max(slowest, (static_cast<double>(transfers * part) + first) / rate);
  }
  return std::max(0.0, slowest - static_cast<double>(transfers * bytes) / egress);
}

namespace {

// The largest DMA of the ring family's program for `spec` (CollectiveGen's
// pieces), 0 if it does not generate.
std::uint64_t ring_family_largest_piece(const CollectiveSpec& spec, const ici::Topology& topology,
                                        const ChipConfig& chip);

// Whether every step of the ring family's program for `spec` is one DMA:
// its largest piece holds the chunk of every phase of every stream.
bool ring_family_steps_are_one_piece(const CollectiveSpec& spec, const CollectivePlan& plan,
                                     const ici::Topology& topology, const ChipConfig& chip) {
  if (plan.axes.empty() || plan.op == Op::kAllToAll) return false;
  const std::uint64_t piece = ring_family_largest_piece(spec, topology, chip);
  if (piece == 0) return false;
  for (const StreamShape& st : stream_shapes(plan, topology)) {
    for (const Phase& ph : st.phases) {
      if (piece < ph.units * plan.unit_bytes) return false;
    }
  }
  return true;
}

bool ring_family_lands_in_vmem(const CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip);
std::uint64_t ring_family_unled_tail_bytes(const CollectiveSpec& spec, const ici::Topology& topology,
                                           const ChipConfig& chip);
// CollectiveGen::round_piece_bytes for `spec`'s program; empty if it does not generate.
std::vector<std::uint64_t> ring_family_round_piece_bytes(const CollectiveSpec& spec, const ici::Topology& topology,
                                                         const ChipConfig& chip);
// CollectiveGen::pipelined_hop_seconds for `spec`'s program; nullopt if it does not generate.
std::optional<double> ring_family_pipelined_hop_seconds(const CollectiveSpec& spec, const ici::Topology& topology,
                                                        const ChipConfig& chip);

// The reductions' tail where a one-hop reduce phase's pieces all arrive at
// the end of its step 0 (ring_family_unled_tail_bytes at the HBM bandwidth):
// v2 4x2's reduce-scatter of 4 MiB over y measured 1.62x its prediction
// without it (its four 512 KiB pieces reduced one after another once all
// had arrived, 24 us after a 37 us transfer), 1.04x with it.
double ring_family_tail_seconds(const CollectiveSpec& spec, const CollectivePlan& plan, const ici::Topology& topology,
                                const ChipConfig& chip) {
  if (!plan.reduces() || plan.axes.empty() || chip.hbm.bandwidth <= 0) return 0;
  return static_cast<double>(ring_family_unled_tail_bytes(spec, topology, chip)) / chip.hbm.bandwidth;
}

// The formula's words for ring_family_load_waits and ring_family_tail_seconds.
std::string ring_family_wait_text(double waits, double tail) {
  std::string text;
  if (waits > 0) {
    text += fmt::format(
        "; + {:g}*L_hbm (the reductions' HBM waits: per step where a step is one DMA, per phase where partial sums "
        "land in VMEM)",
        waits);
  }
  if (tail > 0) {
    text += fmt::format(
        "; + {:g} s (a one-hop reduction's pieces, arrived together, each loaded and stored after: 3 x chunk / HBM "
        "bandwidth)",
        tail);
  }
  return text;
}

// The HBM round trips the ring family's program waits out: in a reduce phase
// of h hops, rounds 1 to h load what arrived and the local operand from HBM
// (both at once) and wait for them before adding and sending; on the stream
// with the most. On a torus also where steps are several pieces: a step's
// first piece still waits for its loads once it has arrived, which the later
// pieces on the link may cover (the pipelining credit of
// CollectiveGen::pipelined_hop_seconds and predict_unwrapped_rings then
// reaches up to T_hop + L_hbm per step): v5e 8x16's multi-axis
// reduce-scatter of 64 KiB over x,y (two pieces of 1 KiB per x step, 24 ns
// each on the link) measured 1.34x its prediction without these waits, 1.04x
// with them (bench/prediction_sweep.sh: 74 of 77 changed runs closer). Not on
// switched fabrics, whose steps' pipelining is not modelled (8 x H100 and
// A100 ring-family runs from 1 MiB came out 5-15 % early with the waits). Where partial sums land in
// VMEM (choose_landing) two per phase where steps are one piece: the first
// phase's second step, which loads what arrived in scratch (hybrid), then
// each phase's last store and the next phase's first local operand loaded
// from it; where steps are several pieces, phases + 1: the hybrid load, and
// each phase's last store before the next phase sends from it, each paid by
// the first piece (the next local operand's load overlaps that phase's first
// hop; traced on v5p 2x2x2, reduce-scatter 64 KiB: 1.57x -> 0.87x).
double ring_family_load_waits(const CollectiveSpec& spec, const CollectivePlan& plan, const ici::Topology& topology,
                              const ChipConfig& chip) {
  if (!plan.reduces()) return 0;
  const bool lands = ring_family_lands_in_vmem(spec, topology, chip);
  const bool one_piece = ring_family_steps_are_one_piece(spec, plan, topology, chip);
  if (!lands && !one_piece && topology.switched()) return 0;
  std::uint32_t most = 0;
  for (const StreamShape& st : stream_shapes(plan, topology)) {
    std::uint32_t waits = 0;
    std::uint32_t phases = 0;
    for (std::size_t t = 0; t < st.phases.size(); ++t) {
      waits += st.phases[t].reduce ? st.hops[t] : 0;
      phases += st.phases[t].reduce && st.hops[t] > 0 ? 1 : 0;
    }
    most = std::max(most, !lands ? waits : one_piece ? 2 * phases : phases + 1);
  }
  return static_cast<double>(most);
}

// Switched fabrics: every chip reaches every other in one chip-to-chip hop
// (switched_hop), its egress B the slowest it uses: all its NVLinks within a
// node, its NIC once the group spans nodes. Ring-style collectives move
// (N-1)/N x V (all-reduce twice that) through every chip's egress; all-to-all
// sends (N-1)/N of its Q = V/N at once. Steps: the rounds in which a stream
// sends (stream_shapes): N-1 per phase on full rings (ring, multi-axis),
// bidir-ring's half rings floor(N/2) (a reduction over an odd group one
// more), each T_hop. Where a step is one DMA (its chunk is one piece), each
// step also pays the store-and-forward of its DMAs through the switch
// (SwitchedHop::store_and_forward, the streams sending in that round at
// once); longer steps are pipelined piece by piece, and their packets'
// second hop overlaps the next pieces (not modelled).
CollectivePrediction predict_switched(const CollectiveSpec& spec, const CollectivePlan& plan,
                                      const ici::Topology& topology, const ChipConfig& chip) {
  CollectivePrediction p;
  const auto v = static_cast<double>(plan.bytes);
  const auto n = static_cast<double>(plan.group_size);
  const SwitchedHop one = switched_hop(plan, topology, chip);
  const bool spans_nodes = one.spans_nodes;
  const double egress = one.egress;
  const double hop = one.latency;
  double steps = 1;
  double forward = 0;  // store-and-forward, summed over the steps
  double cross = -1;   // a fat tree's both axes: the rounds' latencies (else steps x T_hop)
  std::string bw;
  if (plan.op == CollectivePlan::Op::kAllToAll) {
    p.bandwidth_seconds = v / n * (n - 1) / n / egress;
    bw = "(V/N)*(N-1)/N/B";
  } else {
    const double factor = plan.op == CollectivePlan::Op::kAllReduce ? 2 : 1;
    p.bandwidth_seconds = factor * v * (n - 1) / n / egress;
    bw = std::string(factor == 2 ? "2V" : "V") + "*(N-1)/N/B";
    if (!plan.axes.empty()) {
      // Per round: the streams that send in it (a reduce phase of h hops
      // sends in its first h rounds; half rings pad each phase to its longest stream).
      const std::vector<StreamShape> streams = stream_shapes(plan, topology);
      const std::size_t phase_count = streams.front().phases.size();
      std::vector<std::uint64_t> sending;
      for (std::size_t t = 0; t < phase_count; ++t) {
        std::uint32_t longest = 0;
        for (const StreamShape& st : streams) longest = std::max(longest, st.hops[t]);
        for (std::uint32_t u = 0; u < longest; ++u) {
          std::uint64_t count = 0;
          for (const StreamShape& st : streams) count += u < st.hops[t] ? 1 : 0;
          sending.push_back(count);
        }
      }
      steps = static_cast<double>(sending.size());
      if (spans_nodes && plan.axes.size() > 1) {
        // A fat tree's both axes: a phase over x stays in its node (every
        // NVLink of a chip, a switch's T_hop), one over y crosses the NICs.
        // Round by round as the generator runs its streams (stream k's u-th
        // job in round u; a reduce phase of h hops h + 1 jobs, the last only
        // adding): the slower of the two egresses with what each carries,
        // plus the round's T_hop (the NIC's if any stream crosses nodes).
        const double nvl_egress = chip.switched_egress();
        const double nic_egress = chip.nic_payload_rate();
        std::vector<std::vector<int>> jobs(streams.size());
        std::size_t rounds = 0;
        for (std::size_t k = 0; k < streams.size(); ++k) {
          for (std::size_t t = 0; t < phase_count; ++t) {
            const std::uint32_t h = streams[k].hops[t];
            for (std::uint32_t u = 0; u < h; ++u) jobs[k].push_back(static_cast<int>(t));
            if (h > 0 && streams[k].phases[t].reduce) jobs[k].push_back(-1);
          }
          rounds = std::max(rounds, jobs[k].size());
        }
        double bandwidth = 0;
        double latency = 0;
        double sends = 0;
        for (std::size_t u = 0; u < rounds; ++u) {
          double nvl_bytes = 0;
          double nic_bytes = 0;
          for (std::size_t k = 0; k < streams.size(); ++k) {
            if (u >= jobs[k].size() || jobs[k][u] < 0) continue;
            const Phase& ph = streams[k].phases[static_cast<std::size_t>(jobs[k][u])];
            (ph.axis == 1 ? nic_bytes : nvl_bytes) += static_cast<double>(ph.units * plan.unit_bytes);
          }
          if (nvl_bytes == 0 && nic_bytes == 0) continue;
          bandwidth += std::max(nvl_bytes / nvl_egress, nic_bytes / nic_egress);
          latency += nic_bytes > 0 ? chip.nic_hop_latency() : chip.switched_hop_latency();
          sends += 1;
        }
        p.bandwidth_seconds = bandwidth;
        cross = latency;
        steps = sends;
        bw = "sum over rounds of max(bytes in a node / B_nvlink, bytes across nodes / B_nic)";
      } else if (ring_family_steps_are_one_piece(spec, plan, topology, chip)) {
        const std::uint64_t piece = ring_family_largest_piece(spec, topology, chip);
        for (std::uint64_t count : sending) forward += one.store_and_forward(piece, count);
      }
    }
  }
  if (plan.axes.empty()) p.bandwidth_seconds = 0;
  const double waits = ring_family_load_waits(spec, plan, topology, chip);
  const double tail = ring_family_tail_seconds(spec, plan, topology, chip);
  p.latency_seconds =
      plan.axes.empty() ? 0 : (cross >= 0 ? cross : steps * hop) + forward + waits * chip.hbm.latency_s + tail;
  p.seconds = p.bandwidth_seconds + p.latency_seconds;
  p.formula = fmt::format(
      "{} {} on {} (switched): {} + {}*T_hop{}; V = {} B, N = {}, B = {:g} B/s ({}), T_hop = {:g} s{}{}", spec.op,
      spec.algorithm, topology.shape(), bw, steps,
      forward > 0 ? fmt::format(" + store-and-forward through the switch {:g} s (steps of one DMA)", forward) : "",
      plan.bytes, plan.group_size, egress, spans_nodes ? "one NIC per chip" : "every NVLink of a chip", hop,
      cross >= 0 ? fmt::format(" (rounds across nodes; within a node B_nvlink = {:g} B/s, T_hop = {:g} s)",
                               chip.switched_egress(), chip.switched_hop_latency())
                 : "",
      ring_family_wait_text(waits, tail));
  return p;
}

}  // namespace

CollectivePrediction predict_collective(const CollectiveSpec& spec, const ici::Topology& topology,
                                        const ChipConfig& chip) {
  // All-to-all is one program whatever the algorithm (each block straight to
  // its destination), so one prediction: the ring family's (the book's
  // V max(L) / (4 N W), or the switched fabric's egress), or, on a torus with
  // an axis that does not wrap (which that formula takes as wrapped), one-shot's
  // link loads along the actual routes (v5e 4x4 measured 1.5-2.0x the book's
  // terms, 1.01-1.05x one-shot's).
  CollectiveSpec predicted = spec;
  if (spec.op == "all-to-all") {
    bool wrapped = true;
    for (std::size_t a : spec.axes) wrapped = wrapped && (topology.length(a) < 2 || topology.wraps(a));
    predicted.algorithm = topology.switched() || wrapped ? "ring" : "one-shot";
  }
  const CollectivePlan plan = plan_collective(predicted, topology);
  CollectivePrediction p = collective_algorithm(predicted.algorithm).predict(predicted, plan, topology, chip);
  if (predicted.algorithm != spec.algorithm) {
    p.formula += fmt::format(
        "; all-to-all runs the same program for every --algo (each block straight to its destination), predicted "
        "as {}'s",
        predicted.algorithm);
  }
  // The NCCL protocol's base latency: the program waits it out first (generate_collective).
  if (const double launch = chip.launch_latency(); launch > 0 && !plan.axes.empty()) {
    p.latency_seconds += launch;
    p.seconds += launch;
    p.formula += fmt::format("; + {} base latency {:g} s", chip.fabric.protocol, launch);
  }
  return p;
}

namespace {

// An axis whose rings have no wrap link, every axis of 2 chips included (it
// cannot wrap: ici/topology.cpp): the book's W = 2 x W_oneway per axis does
// not hold there (a pair of chips has one link each way).
bool unwrapped_ring_axis(const ici::Topology& topology, std::size_t axis) {
  return !topology.wraps(axis) && topology.length(axis) >= 2;
}

// Appends an axis's name to a comma-separated list.
void append_axis(std::string& list, std::size_t axis) {
  list += std::string(list.empty() ? "" : ",") + ici::axis_name(axis);
}

// The ring family over axes of which some lack wraparound (collectives.hpp,
// the comment on CollectivePrediction): what the links carry, round by round as the generator
// runs its streams (stream_shapes; a reduce phase of h hops takes h + 1
// rounds, the last only adding, a gather phase h; half rings pad each phase
// to its longest stream). In a round every stream that sends moves its chunk
// over each hop of its ring at once, crossing the links of its axis as
// ring_link_loads says (a stream going - crosses them the other way); the
// round lasts as long as the busiest direction of a link takes at the one-way
// payload rate, W_oneway. Latency: T_min per link of the longest hop sent in
// a round, per round that sends.
CollectivePrediction predict_unwrapped_rings(const CollectiveSpec& spec, const CollectivePlan& plan,
                                             const ici::Topology& topology, const ChipConfig& chip) {
  CollectivePrediction p;
  const double w_one = chip.link_payload_rate();
  std::vector<RingLinkLoads> loads(ici::kMaxAxes);
  for (std::size_t a : plan.axes) {
    loads[a] = ring_link_loads(topology.length(a), topology.wraps(a), folded_ring_axis(topology, a));
  }
  // Per stream, per round: the phase whose step it sends (-1: none).
  const std::vector<StreamShape> streams = stream_shapes(plan, topology);
  const std::size_t phase_count = streams.front().phases.size();
  auto rounds_of = [](const StreamShape& st, std::size_t t) {
    return st.hops[t] == 0 ? 0U : st.hops[t] + (st.phases[t].reduce ? 1U : 0U);
  };
  std::vector<std::uint32_t> padded(phase_count, 0);
  for (const StreamShape& st : streams) {
    for (std::size_t t = 0; t < phase_count; ++t) padded[t] = std::max(padded[t], rounds_of(st, t));
  }
  std::vector<std::vector<int>> sends(streams.size());
  for (std::size_t k = 0; k < streams.size(); ++k) {
    const StreamShape& st = streams[k];
    for (std::size_t t = 0; t < phase_count; ++t) {
      const std::uint32_t own = rounds_of(st, t);
      for (std::uint32_t step = 0; step < (plan.half_rings ? padded[t] : own); ++step) {
        sends[k].push_back(step < st.hops[t] ? static_cast<int>(t) : -1);
      }
    }
  }
  std::size_t rounds = 0;
  for (const auto& s : sends) rounds = std::max(rounds, s.size());
  std::uint64_t links = 0;
  // Pipelining (as CollectiveGen::pipelined_hop_seconds): in a round whose
  // busiest link carries more than its first piece, that link is busy with
  // the later pieces while the first crosses the round's longest hop; each
  // round that forwards its pieces in the next (the same phase) pays T_min
  // per link less that time, each stream's first piece sharing the busiest
  // link with the others'.
  const std::vector<std::uint64_t> round_pieces = ring_family_round_piece_bytes(spec, topology, chip);
  const bool lands = ring_family_lands_in_vmem(spec, topology, chip);
  double hidden = 0;
  for (std::size_t u = 0; u < rounds; ++u) {
    // Bytes per link direction: [axis][link][0 +, 1 -].
    std::vector<std::vector<std::array<double, 2>>> bytes(ici::kMaxAxes);
    std::uint32_t longest = 0;
    for (std::size_t k = 0; k < streams.size(); ++k) {
      if (u >= sends[k].size() || sends[k][u] < 0) continue;
      const Phase& ph = streams[k].phases[static_cast<std::size_t>(sends[k][u])];
      const RingLinkLoads& l = loads[ph.axis];
      const double chunk = static_cast<double>(ph.units * plan.unit_bytes);
      auto& b = bytes[ph.axis];
      b.resize(l.plus.size(), {0, 0});
      const std::size_t fwd = streams[k].dir;  // a stream going - crosses a + hop's links the other way
      for (std::size_t i = 0; i < l.plus.size(); ++i) {
        b[i][fwd] += chunk * l.plus[i];
        b[i][1 - fwd] += chunk * l.minus[i];
      }
      longest = std::max(longest, l.longest_hop);
    }
    double busiest = 0;
    for (const auto& axis : bytes) {
      for (const auto& link : axis) busiest = std::max({busiest, link[0], link[1]});
    }
    p.bandwidth_seconds += busiest / w_one;
    links += longest;
    // Only where every stream sending now sends the next step of the same
    // phase in the next round (a phase's last step pays its whole latency).
    bool forwards = longest > 0 && u < round_pieces.size();
    bool reduces = false;
    std::size_t sharing = 0;  // streams sending in this round
    for (std::size_t k = 0; k < streams.size() && forwards; ++k) {
      if (u >= sends[k].size() || sends[k][u] < 0) continue;
      ++sharing;
      forwards = u + 1 < sends[k].size() && sends[k][u + 1] == sends[k][u];
      const bool reduce = streams[k].phases[static_cast<std::size_t>(sends[k][u])].reduce;
      reduces = reduces || reduce;
      // A reduce phase's step 0 sends all its pieces at once: none hides.
      if (reduce && (u == 0 || sends[k][u - 1] != sends[k][u])) forwards = false;
    }
    if (forwards) {
      // Each stream's first piece shares the busiest link with the others';
      // in a reduce phase the later pieces also cover the next step's HBM load
      // (where partial sums land in HBM, that wait is counted in `waits`, and
      // the pieces hide up to a hop's latency plus it).
      const double first = std::min(busiest, static_cast<double>(sharing * round_pieces[u]));
      if (reduces && !lands) {
        hidden += std::clamp((busiest - first) / w_one, 0.0, chip.ici.hop_latency_s * longest + chip.hbm.latency_s);
      } else {
        const double wait = reduces ? chip.hbm.latency_s : 0;
        hidden += std::clamp((busiest - first) / w_one - wait, 0.0, chip.ici.hop_latency_s * longest);
      }
    }
  }
  std::string lengths;
  std::string unwrapped;
  std::string folded;
  for (std::size_t a : plan.axes) {
    const std::uint32_t l = topology.length(a);
    lengths += fmt::format("{}{} = {}{}", lengths.empty() ? "" : ", ", ici::axis_name(a), l,
                           topology.wraps(a) ? " wrapped" : "");
    if (unwrapped_ring_axis(topology, a)) append_axis(unwrapped, a);
    if (folded_ring_axis(topology, a)) append_axis(folded, a);
  }
  const double waits = ring_family_load_waits(spec, plan, topology, chip);
  const double tail = ring_family_tail_seconds(spec, plan, topology, chip);
  p.latency_seconds = chip.ici.hop_latency_s * static_cast<double>(links) - hidden + waits * chip.hbm.latency_s + tail;
  p.seconds = p.bandwidth_seconds + p.latency_seconds;
  p.formula = fmt::format(
      "{} {}: link loads, sum over rounds of the busiest link direction's bytes / W_oneway + T_min x sum over "
      "rounds of the longest hop's links{}; {} without wraparound{}; V = {} B, N = {}, W_oneway = {:g} B/s "
      "(payload), T_min = {:g} s, {}",
      spec.op, spec.algorithm,
      hidden > 0 ? fmt::format(" less what a round's later pieces keep its busiest link busy while its first crosses "
                               "(each round but a phase's last and a reduce phase's first; {:g} s hidden)",
                               hidden)
                 : "",
      unwrapped,
      folded.empty() ? ": one link between neighbours, no wrap link"
                     : fmt::format(": {} rings folded (hops of up to 2 links, a ring going one way crosses each link "
                                   "direction once, rings going both ways twice)",
                                   folded),
      plan.bytes, plan.group_size, w_one, chip.ici.hop_latency_s, lengths);
  p.formula += ring_family_wait_text(waits, tail);
  return p;
}

}  // namespace

CollectivePrediction ring_family_predict(const CollectiveSpec& spec, const CollectivePlan& plan,
                                         const ici::Topology& topology, const ChipConfig& chip) {
  if (topology.switched()) return predict_switched(spec, plan, topology, chip);
  if (plan.op != Op::kAllToAll) {
    // From the link loads wherever an axis lacks wraparound (v5e 2x2's
    // multi-axis all-gather took 1.48x the book's terms).
    for (std::size_t a : plan.axes) {
      if (unwrapped_ring_axis(topology, a)) return predict_unwrapped_rings(spec, plan, topology, chip);
    }
  }
  CollectivePrediction p;
  const auto v = static_cast<double>(plan.bytes);
  // The payload rate: ici.link_bandwidth x ici.payload_efficiency.
  const double w_one = chip.link_payload_rate();
  const double w = 2 * w_one;
  const auto n = static_cast<double>(plan.group_size);
  const auto k = static_cast<double>(plan.axes.size());
  std::uint64_t hops = 0;
  std::uint32_t max_len = 1;
  std::string lengths;
  std::string unwrapped;
  for (std::size_t a : plan.axes) {
    const std::uint32_t l = topology.length(a);
    if (plan.half_rings && plan.op != Op::kAllToAll) {
      // The long stream's hops (ring_hops); all-reduce counts both halves below.
      hops += plan.op == Op::kAllGather ? ring_hops(l, false).long_hops : ring_hops(l, true).long_hops;
      if (plan.op == Op::kAllReduce) hops += ring_hops(l, false).long_hops;
    } else {
      // Full rings (ring, multi-axis: stream_shapes) take L-1 steps per axis;
      // all-to-all's program floor(L/2).
      hops += plan.op != Op::kAllToAll ? l - 1 : l / 2;
    }
    max_len = std::max(max_len, l);
    lengths += fmt::format("{}{} = {}", lengths.empty() ? "" : ", ", ici::axis_name(a), l);
    if (!topology.wraps(a) && l > 2) append_axis(unwrapped, a);
  }
  std::string bw;
  std::string lat = plan.op == Op::kAllToAll || plan.half_rings ? "T_min*sum(floor(L/2))" : "T_min*sum(L-1)";
  if (plan.op == Op::kAllToAll) {
    p.bandwidth_seconds = v * max_len / (4 * n * w);
    bw = "V*max(L)/(4*N*W)";
  } else {
    const double factor = plan.op == Op::kAllReduce ? 2 : 1;
    const std::string f = plan.op == Op::kAllReduce ? "2V" : "V";
    if (spec.algorithm == "ring") {
      p.bandwidth_seconds = factor * v / w_one * (n - 1) / n;
      bw = f + "/W_oneway*(N-1)/N";
    } else if (spec.algorithm == "bidir-ring") {
      // (N-1)/N: what the rings move of V, which the book's terms drop (on
      // v5p's rings of 4 they measured 0.75-0.8 of the prediction without it).
      p.bandwidth_seconds = factor * v / w * (n - 1) / n;
      bw = f + "/W*(N-1)/N";
    } else {
      p.bandwidth_seconds = factor * v / (w * k) * (n - 1) / n;
      bw = f + "/(W*N_axes)*(N-1)/N";
    }
    if (plan.half_rings) {
      // Reductions over an odd axis take one hop more (ring_hops).
      if (plan.op == Op::kReduceScatter) lat = "T_min*sum(floor(L/2) + (L odd))";
      if (plan.op == Op::kAllReduce) lat = "T_min*sum(2*floor(L/2) + (L odd))";
    } else if (plan.op == Op::kAllReduce) {
      hops *= 2;
      lat = "2*" + lat;
    }
  }
  if (plan.axes.empty()) p.bandwidth_seconds = 0;
  const double waits = plan.op == Op::kAllToAll ? 0 : ring_family_load_waits(spec, plan, topology, chip);
  const double tail = ring_family_tail_seconds(spec, plan, topology, chip);
  // The hops and HBM waits paid whole, and what steps of several pieces hide
  // of them (CollectiveGen::pipelined_hop_seconds, which counts the waits
  // itself where partial sums land in HBM).
  const double book = chip.ici.hop_latency_s * static_cast<double>(hops) + waits * chip.hbm.latency_s;
  const std::optional<double> pipelined = plan.op == Op::kAllToAll || plan.axes.empty()
                                              ? std::nullopt
                                              : ring_family_pipelined_hop_seconds(spec, topology, chip);
  const double pipelined_waits =
      plan.reduces() && ring_family_lands_in_vmem(spec, topology, chip) ? waits * chip.hbm.latency_s : 0;
  const double paid = pipelined && *pipelined + pipelined_waits < book ? *pipelined + pipelined_waits : book;
  if (paid < book) {
    lat += fmt::format(
        " less what a step's later pieces keep the link busy while its first crosses (each step but a phase's "
        "last and a reduce phase's first; {:g} s of {:g} s{})",
        paid, book, waits > 0 ? ", HBM waits included" : "");
  }
  p.latency_seconds = paid + tail;
  p.seconds = p.bandwidth_seconds + p.latency_seconds;
  p.formula = fmt::format("{} {}: {} + {}; V = {} B, N = {}, W = 2 x {:g} B/s (payload), T_min = {:g} s, {}", spec.op,
                          spec.algorithm, bw, lat, plan.bytes, plan.group_size, w_one, chip.ici.hop_latency_s,
                          lengths.empty() ? "no axis longer than 1" : lengths);
  p.formula += ring_family_wait_text(waits, tail);
  if (!unwrapped.empty()) {
    p.formula +=
        fmt::format("; {} without wraparound: predicted as if wrapped (the book: about twice as long)", unwrapped);
  }
  return p;
}

namespace {

// The generator: a fixed register plan (see `Regs`), one sflag allocation and,
// for reductions, two VMEM allocations of double-buffered pieces per stream.
class CollectiveGen : CollectiveEmitter {
 public:
  CollectiveGen(const CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip)
      : CollectiveEmitter(chip, kFlags),
        spec_(spec),
        topo_(topology),
        chip_(chip),
        plan_(plan_collective(spec, topology)) {
    if (plan_.op != Op::kAllToAll && !plan_.axes.empty()) {
      for (StreamShape& shape : stream_shapes(plan_, topo_)) streams_.push_back(Stream{std::move(shape), {}, {}, {}});
      if (streams_.size() > kMaxStreams) throw std::logic_error("collective: more streams than registers planned");
      ug_ = plan_.unit_bytes / kGranule;
      std::uint64_t at = 0;
      for (Stream& st : streams_) {
        st.scratch = scratch_layout(st.phases, st.hops, ug_, at);
        at = st.scratch.end;
      }
      // Steps per phase: a reduce phase of h hops has h + 1 (step 0 only
      // sends), a gather phase h. Half rings pad every stream's phase with
      // idle rounds to the longest, so a phase starts in the same round for
      // all streams (its chunks hold what every stream received before).
      const std::size_t phase_count = streams_.front().phases.size();
      std::vector<std::uint32_t> rounds(phase_count, 0);
      auto steps = [](const Stream& st, std::size_t t) {
        return st.hops[t] == 0 ? 0U : st.hops[t] + (st.phases[t].reduce ? 1U : 0U);
      };
      for (const Stream& st : streams_) {
        for (std::size_t t = 0; t < phase_count; ++t) rounds[t] = std::max(rounds[t], steps(st, t));
      }
      for (std::size_t k = 0; k < streams_.size(); ++k) {
        Stream& st = streams_[k];
        for (std::size_t t = 0; t < phase_count; ++t) {
          const std::uint32_t own = steps(st, t);
          const std::uint32_t total = plan_.half_rings ? rounds[t] : own;
          for (std::uint32_t s = 0; s < total; ++s) st.jobs.push_back({t, s, s >= own});
        }
        st.combine.assign(phase_count, false);
        if (!plan_.half_rings || !st.is_long) continue;
        // The short stream of this unit (stream_shapes: long streams first).
        Stream& partner = streams_[k + plan_.directions];
        for (std::size_t t = 0; t < phase_count; ++t) st.combine[t] = st.phases[t].reduce && partner.hops[t] > 0;
        partner.scratch.result = st.scratch.result;
      }
      for (const Stream& st : streams_) {
        arrive_base_.push_back(arrive_flags_);
        arrive_flags_ += st.jobs.size();
      }
      choose_piece();
      choose_landing();
      choose_leads();
      choose_depths();
    }
    if (flag_count() > chip_.sflag.count) {
      throw std::invalid_argument(fmt::format("{}: needs {} sync flags, {} has {} (sflag.count)",
                                              describe(spec_, topo_, plan_.group_size), flag_count(), chip_.name,
                                              chip_.sflag.count));
    }
  }

  // Whether partial sums land in VMEM (choose_landing).
  [[nodiscard]] bool lands_in_vmem() const { return landing_; }

  // HBM bytes of the reductions that run after every piece of their step
  // arrived: the last step of a one-hop reduce phase (an axis of 2 chips)
  // whose step 0 did not lead (choose_leads). That step 0 sent all its
  // pieces at once, so they arrive together, and each is then loaded (what
  // arrived, the local operand) and stored, one after another.
  [[nodiscard]] std::uint64_t unled_tail_bytes() const {
    std::uint64_t bytes = 0;
    for (std::size_t u = 1; u < lead_.size(); ++u) {
      if (lead_[u - 1]) continue;
      std::uint64_t round = 0;
      bool all_end = true;  // a stream still sending in round u (a half ring's long stream) hides the tail
      for (const Stream& st : streams_) {
        if (u >= st.jobs.size() || st.jobs[u].idle) continue;
        const Job& j = st.jobs[u];
        const Phase& ph = st.phases[j.phase];
        all_end = all_end && final_step(st, j);
        if (ph.reduce && j.step == 1 && st.hops[j.phase] == 1) round += 3 * ph.units * plan_.unit_bytes;
      }
      if (all_end) bytes += round;
    }
    return bytes;
  }

  // The hop latencies on the critical path (for the predictions), the most
  // of any stream: a step's pieces are forwarded one by one (a piece leaves
  // as soon as its predecessor arrived), so while a step's first piece
  // crosses its hop the link carries the step's later pieces; a sending
  // step pays the hop latency less that time (link rate
  // `link_bytes_per_second`), but a phase's last step pays the whole latency
  // (the next phase's pieces are not this one's). In a reduce phase
  // the next step loads its local operand from HBM once the first piece has
  // arrived (traced: v5p 4x4x4 multi-axis all-reduce of 1 MiB over z, 0.56 us
  // after each arrival), so the later pieces must also cover
  // `hbm_latency_seconds`. Steps of one piece pay it whole: hops x
  // `hop_seconds`. Where partial sums land in HBM (not landing_), every
  // reduce step after the first (the last, which only adds, included) waits
  // `hbm_latency_seconds` for what arrived, which is then counted here, per
  // stream (ring_family_load_waits counts the same steps), and the later
  // pieces hide up to `hop_seconds` + `hbm_latency_seconds` of a step.
  [[nodiscard]] double pipelined_hop_seconds(double hop_seconds, double link_bytes_per_second,
                                             double hbm_latency_seconds) const {
    double most = 0;
    for (const Stream& st : streams_) {
      double total = 0;
      for (std::size_t r = 0; r < st.jobs.size(); ++r) {
        const Job& j = st.jobs[r];
        if (j.idle) continue;
        if (st.phases[j.phase].reduce && !landing_ && j.step >= 1) total += hbm_latency_seconds;
        if (j.step >= st.hops[j.phase]) continue;  // sends in steps 0 .. hops-1
        total += hop_seconds;
        // Hidden only where the stream's next step forwards this step's
        // pieces (the same phase); a phase's last step pays it whole.
        if (j.step + 1 >= st.hops[j.phase]) continue;
        // A reduce phase's step 0 sends all its pieces at once (choose_leads
        // leads only one-hop phases): they share the link, the first arrives
        // with the last.
        if (st.phases[j.phase].reduce && j.step == 0) continue;
        const auto chunk = static_cast<double>(st.phases[j.phase].units * plan_.unit_bytes);
        const double piece = std::min(chunk, static_cast<double>(round_pieces_[r].pg * kGranule));
        const double later = (chunk - piece) / link_bytes_per_second;
        if (st.phases[j.phase].reduce && !landing_) {
          total -= std::clamp(later, 0.0, hop_seconds + hbm_latency_seconds);
        } else {
          const double wait = st.phases[j.phase].reduce ? hbm_latency_seconds : 0;
          total -= std::clamp(later - wait, 0.0, hop_seconds);
        }
      }
      most = std::max(most, total);
    }
    return most;
  }

  // Per round: the bytes of one DMA of a ring step (a piece), before any
  // cap at a stream's chunk.
  [[nodiscard]] std::vector<std::uint64_t> round_piece_bytes() const {
    std::vector<std::uint64_t> bytes;
    for (const RoundPiece& rp : round_pieces_) bytes.push_back(rp.pg * kGranule);
    return bytes;
  }

  // The largest piece of any round (bytes; 0 for all-to-all or no axis):
  // what one DMA of a ring step moves.
  [[nodiscard]] std::uint64_t largest_piece_bytes() const {
    std::uint64_t most = 0;
    for (const RoundPiece& rp : round_pieces_) most = std::max(most, rp.pg * kGranule);
    return most;
  }

  std::string run() {
    header();
    prologue();
    if (plan_.axes.empty()) {
      local_copy_program();
    } else if (plan_.op == Op::kAllToAll) {
      all_to_all();
    } else {
      rings();
    }
    w_.label("done");
    w_.bundle({});
    return w_.text();
  }

 private:
  struct Job {
    std::size_t phase;
    std::uint32_t step;
    bool idle;  // a half ring's padding round: the stream sits it out
  };
  struct Stream : StreamShape {
    std::vector<Job> jobs;
    ScratchLayout scratch;  // a short stream's `result` is its long partner's
    // Per phase: the last step adds the received partial sum into what the
    // short partner stored at the phase's result, not into the local operand.
    std::vector<bool> combine;
  };
  [[nodiscard]] static bool final_step(const Stream& st, const Job& j) { return j.step == st.hops[j.phase]; }
  // Landing (choose_landing): the first phase's first step still sends into
  // the successor's HBM scratch (it may not be ready), and its second step
  // loads those pieces into their landing slots itself (`hybrid`); every
  // later send goes into the successor's landing slot.
  [[nodiscard]] bool hybrid(const Stream& st, const Job& j) const {
    return landing_ && st.phases[j.phase].reduce && j.phase == 0 && j.step == 1;
  }
  [[nodiscard]] bool sends_to_landing(const Stream& st, const Job& j) const {
    return landing_ && st.phases[j.phase].reduce && !final_step(st, j) && (j.phase > 0 || j.step > 0);
  }
  // Where a reduce part finds its buffer: the registers holding the buffer's
  // VMEM row offset and its flag offset (buffer x streams), and how many
  // granules its piece lies before s13.
  struct BufferRegs {
    std::string rows;
    std::string flags;
    std::int64_t back;
  };

  // Register plan. s0..s2 operands (512-byte units); s3..s5 the same in
  // granules; s6 chip id; s7..s9 coordinates x, y, z; s10 this chip's chunk in
  // the output (granules); s11 piece counter i, s12 piece in unit q, s13
  // granule offset of piece i; s14 VMEM row offset and s16 flag offset of
  // buffer i % 2 (s15); s17..s23 temporaries; per stream k: s24+3k successor
  // chip, s25+3k chunk pointer, s26+3k fastest varying digit; s42..s44 the add
  // loop; s45+k stream k's send pointer in a lead round's trail (choose_leads).
  // p0..p4 shared, p5 stream guards, p6 and p7 temporaries.
  static std::string coord(std::size_t axis) { return fmt::format("s{}", 7 + axis); }
  static std::string succ(std::size_t k) { return fmt::format("s{}", 24 + 3 * k); }
  static std::string ptr(std::size_t k) { return fmt::format("s{}", 25 + 3 * k); }
  static std::string digit(std::size_t k) { return fmt::format("s{}", 26 + 3 * k); }
  // A lead round's send pointer of stream k (see choose_leads): s45..s50.
  static std::string send_ptr(std::size_t k) { return fmt::format("s{}", 45 + k); }

  // Allocation ids.
  static constexpr int kAllocA = 0, kAllocB = 1, kFlags = 2;

  // Flag indices: arrivals per (stream, job) (one flag per ring step, so only
  // transfers of one kind and size share a flag), then per stream the sends
  // from HBM, the loads, the VMEM buffers (buffers_ of them), the loads per
  // buffer (prefetched rounds only, where several pieces' loads are in
  // flight and one count could not tell whose arrived), then the local copy.
  // A stream's flags of buffers b and b + 1 are S (streams) apart, so one
  // offset register b x S addresses both kinds.
  [[nodiscard]] std::uint64_t f_arrive(std::size_t k, std::size_t job) const { return arrive_base_[k] + job; }
  [[nodiscard]] std::uint64_t f_hbm_send(std::size_t k) const { return arrive_flags_ + k; }
  [[nodiscard]] std::uint64_t f_load(std::size_t k) const { return arrive_flags_ + streams_.size() + k; }
  [[nodiscard]] std::uint64_t f_buffer(std::size_t k, std::size_t b) const {
    return arrive_flags_ + (2 + b) * streams_.size() + k;
  }
  [[nodiscard]] std::uint64_t f_buffer_load(std::size_t k, std::size_t b) const {
    return arrive_flags_ + (2 + buffers_ + b) * streams_.size() + k;
  }
  [[nodiscard]] std::uint64_t f_copy() const {
    return arrive_flags_ + (2 + buffers_ + (buffers_ > 2 ? buffers_ : 0)) * streams_.size();
  }
  // Landing (choose_landing): per stream and phase, the successor's word
  // that its landing zones are free; per stream, the final steps' stores.
  [[nodiscard]] std::uint64_t f_ready(std::size_t k, std::size_t phase) const {
    return f_copy() + 1 + k * phase_count_ + phase;
  }
  [[nodiscard]] std::uint64_t f_stored(std::size_t k) const {
    return f_copy() + 1 + streams_.size() * phase_count_ + k;
  }
  [[nodiscard]] std::uint64_t flag_count() const {
    if (plan_.op == Op::kAllToAll) return 3;
    return f_copy() + 1 + (landing_ ? streams_.size() * (phase_count_ + 1) : 0);
  }

  // The stream's first unit and a unit's distance per digit on `axis`, in
  // granules (CollectivePlan::unit_offset).
  [[nodiscard]] std::uint64_t unit_offset(const Stream& st) const {
    return plan_.unit_base[st.part * plan_.directions + st.unit] / kGranule;
  }
  [[nodiscard]] std::uint64_t unit_stride(const Stream& st, std::size_t axis) const {
    return plan_.unit_stride[st.part][axis] / kGranule;
  }
  // Bidirectional all-gather past its first phase: a step's chunk is a
  // block of whole rank chunks (every rank's units, both directions, arrived
  // in the phases before), so direction d carries half d of the block, one
  // contiguous range, instead of every rank's unit d.
  [[nodiscard]] bool halves(const Stream& st, const Job& j) const {
    return plan_.op == Op::kAllGather && plan_.directions == 2 && plan_.parts == 1 &&
           !st.phases[j.phase].varying.empty();
  }
  // The stream's offset in a step's chunk block, granules.
  [[nodiscard]] std::uint64_t chunk_offset(const Stream& st, const Job& j) const {
    return halves(st, j) ? st.unit * st.phases[j.phase].units * ug_ : unit_offset(st);
  }
  // Whether the chunk of job j is one contiguous range of units in
  // enumeration order (then pieces may span units).
  [[nodiscard]] bool contiguous(const Stream& st, const Job& j) const {
    if (halves(st, j)) return true;
    const Phase& ph = st.phases[j.phase];
    std::uint64_t expected = ug_;
    for (std::size_t a : ph.varying) {
      if (unit_stride(st, a) != expected) return false;
      expected *= topo_.length(a);
    }
    return true;
  }
  [[nodiscard]] std::uint64_t q_granules() const { return plan_.chunk_bytes / kGranule; }
  static std::int64_t sign(const Stream& st) { return st.dir == 0 ? 1 : -1; }

  // Piece size: the given one, or about a quarter of a unit, at most 1 MiB,
  // always dividing the unit. All-gather pieces are at least 4 KiB. A
  // reduction piece waits for its HBM -> VMEM loads before it is added and
  // sent, so its pieces must be long enough on the link to cover that:
  // share P / B >= 1.5 (HBM latency + 0.1 us per stream) + 2 S P / HBM
  // bandwidth (S streams loading two operands each per piece; share 1, but
  // with an axis without wraparound of 3 chips or more the streams of a part,
  // which all cross each of its link directions). Reduction buffers
  // (2 x 2 per stream) take at most half of VMEM.
  void choose_piece() {
    const std::uint64_t u = plan_.unit_bytes;
    const std::uint64_t g = u / kGranule;
    const auto streams = static_cast<double>(streams_.size());
    auto vmem_bytes = [&](std::uint64_t piece) {
      return 4 * streams_.size() * ceil_div(piece, kGroupBytes) * kGroupBytes;
    };
    auto fits = [&](std::uint64_t piece) { return !plan_.reduces() || vmem_bytes(piece) <= chip_.vmem.size_bytes / 2; };
    constexpr std::uint64_t kMax = 1 << 20;
    std::uint64_t target = u;
    std::uint64_t least = 4096;
    if (plan_.reduces()) {
      // On an axis without wraparound every stream of a part crosses every
      // link direction (rings going both ways are folded over the same
      // links), so a piece there takes `share` times as long on its link.
      double share = 1;
      for (std::size_t a : plan_.axes) {
        if (!topo_.wraps(a) && topo_.length(a) >= 3) share = streams / static_cast<double>(plan_.parts);
      }
      link_seconds_per_byte_ = share / chip_.ici.link_bandwidth;
      const double per_byte = share / chip_.ici.link_bandwidth - 2 * streams / chip_.hbm.bandwidth;
      const double cover = 1.5 * (chip_.hbm.latency_s + 1e-7 * streams);
      least = per_byte <= 0
                  ? kMax
                  : std::min(kMax, ceil_div(static_cast<std::uint64_t>(cover / per_byte), kGroupBytes) * kGroupBytes);
    }
    if (plan_.piece_bytes != 0) {
      piece_ = plan_.piece_bytes;
      if (!fits(piece_)) {
        throw std::invalid_argument(fmt::format(
            "{}: piece_bytes {} needs {} bytes of VMEM buffers ({} streams x 4 pieces), more than half of {}'s {}",
            describe(spec_, topo_, plan_.group_size), piece_, vmem_bytes(piece_), streams_.size(), chip_.name,
            chip_.vmem.size_bytes));
      }
    } else {
      target = std::min(std::max(u / 4, least), kMax);
      std::uint64_t d = ceil_div(u, target);
      while (g % d != 0 || !fits(u / d)) ++d;
      piece_ = u / d;
    }
    std::uint64_t largest = piece_;
    // Rounds whose chunks are contiguous and equal for every stream, where a
    // unit is below the target: pieces of about half the target that divide
    // the chunk (so a 128-byte unit no longer means 128-byte DMAs). Half, not
    // the whole target: all-reduce on v5e 4x4 and 16x16, v5p 4x4x4 and 8x8x8
    // at 32 KiB, 1 MiB and 4 MiB was never slower than with unit-sized
    // pieces that way, and at most 15 % slower than the better of the two.
    // (Contiguous chunks: all-reduce's layout, ring all-gather.)
    std::size_t rounds = 0;
    for (const Stream& st : streams_) rounds = std::max(rounds, st.jobs.size());
    for (std::size_t r = 0; r < rounds; ++r) {
      RoundPiece rp{piece_ / kGranule, ug_ / (piece_ / kGranule), false, 0};
      std::uint64_t chunk = 0;
      bool same = plan_.piece_bytes == 0;
      for (const Stream& st : streams_) {
        if (r >= st.jobs.size() || st.jobs[r].idle) continue;
        const std::uint64_t c = st.phases[st.jobs[r].phase].units * u;
        same = same && contiguous(st, st.jobs[r]) && (chunk == 0 || chunk == c);
        chunk = c;
      }
      // About half the target where units are below it, and at least an
      // eighth of the chunk: 8 pieces per step keep the links as busy as more
      // (v5e 16x16 all-reduce 256 MiB 6043.0 us with 16, 6015.3 us with 8;
      // v5p 4x4x4 64 MiB 805.3 / 777.1 us; v5p 8x8x8 all-gather 1 MiB 22.40 /
      // 22.68 us, the one case measured slower), and each piece costs issue
      // overhead (that run: 40.0 M / 27.7 M bundles).
      const std::uint64_t span = std::min(kMax, std::max(u < target ? target / 2 : 0, chunk / 8));
      if (same && chunk > u && span > u) {
        const std::uint64_t cg = chunk / kGranule;
        std::uint64_t d = ceil_div(chunk, span);
        while (cg % d != 0 || !fits(chunk / d)) ++d;
        if (chunk / d > u) {
          rp = RoundPiece{cg / d, 1, true, 0};
          largest = std::max(largest, chunk / d);
        }
      }
      if (const std::uint64_t m = strided_units(r, std::max(span, u), fits); m > 1) {
        rp = RoundPiece{m * ug_, 1, false, m};
        largest = std::max(largest, m * u);
      }
      round_pieces_.push_back(rp);
    }
    rows_pad_ = ceil_div(largest, kGroupBytes) * kGroupRows;
  }

  // Strided pieces. The first phase of a reduce-scatter reduces, per step, a
  // chunk of units that lie apart in the input (one per rank of the other
  // axes, rank-addressed): pieces of one unit each cost three DMAs per unit
  // (two loads, a send), and dma.max_in_flight of them at hbm.latency each
  // bound the round (v5p 4x4x4 multi-axis: 6 streams x 16 units per step,
  // ~45 us from 64 KiB to 4 MiB against the book's 9.1-16.6 us). Where every
  // stream of round r runs step 0.. of such a phase and units are below the
  // target, a piece is m consecutive units of the fastest varying digit: one
  // strided DMA loads the local operand (block: a unit, stride: the digit's),
  // step 0 sends them by m unit DMAs, and the partial sums stay contiguous
  // where they land, as before. m: the largest common divisor of the streams'
  // digit lengths with m units at most `limit` bytes that fit VMEM (0: none).
  // When the DMA queue can hold every stream's prefetched loads and sends
  // (choose_depths), pieces stay short enough to be prefetched, or unit
  // pieces are kept: a one-stream ring's reduce-scatter of 1 MiB on v5e 8x16
  // took 61.14 us with pieces of 2 units (not prefetched) against 54.14
  // with unit pieces prefetched.
  template <class Fits>
  [[nodiscard]] std::uint64_t strided_units(std::size_t r, std::uint64_t limit, const Fits& fits) const {
    if (plan_.piece_bytes != 0) return 0;
    std::uint64_t lengths = 0;
    std::uint64_t streams = 0;
    for (const Stream& st : streams_) {
      if (r >= st.jobs.size() || st.jobs[r].idle) continue;
      const Job& j = st.jobs[r];
      const Phase& ph = st.phases[j.phase];
      if (!ph.reduce || j.phase != 0 || ph.varying.empty() || contiguous(st, j)) return 0;
      lengths = std::gcd(lengths, std::uint64_t{topo_.length(ph.varying[0])});
      ++streams;
    }
    if (3 * kPrefetchDepth * streams <= chip_.dma.max_in_flight && link_seconds_per_byte_ > 0) {
      limit = std::min(limit, static_cast<std::uint64_t>(chip_.hbm.latency_s / (2 * link_seconds_per_byte_)));
    }
    for (std::uint64_t m = lengths; m > 1; --m) {
      if (lengths % m == 0 && m * plan_.unit_bytes <= limit && fits(m * plan_.unit_bytes)) return m;
    }
    return 0;
  }

  // Landing. By default a step's partial sums land in the receiver's HBM
  // scratch, and each piece is loaded from there into VMEM before it is
  // added: hbm.latency once per step on the critical path, and a DMA more
  // per piece. Where every partial sum the program receives fits in a
  // quarter of VMEM with the local operands' buffers (larger collectives'
  // pieces are long enough on the link to hide the loads), each (stream,
  // reduce step) gets its own landing zone there, a slot of rows_pad_ rows
  // per piece: the predecessor writes each piece into its slot
  // (dma.remote.hbm_to_vmem from a later phase's step 0,
  // dma.remote.vmem_to_vmem after it), and the receiver adds the local
  // operand (loaded kPrefetchDepth pieces ahead: nothing to wait for) into
  // the slot and sends it on from there, or stores it (a phase's last
  // step). Zones are never reused, so no credits. But the previous program
  // on a chip (a workload's matmul) may still be using its VMEM when a
  // neighbour starts, so each chip first tells the predecessor of each of
  // its streams' landing phases that it is ready (vsyncadd.remote), a
  // phase's first landing send waits for that word, and the first phase's
  // step 0 still sends into HBM scratch, its step 1 loading those pieces
  // into their slots (`hybrid`): by then the words have arrived. Needs the
  // same piece size in a step and the step it receives from (slots are
  // indexed by piece), a torus (a GPU's NVLink writes land in HBM), and
  // the sync flags. Measured on the 594 collectives of choose_depths
  // against the same generator without landing: 372 faster by more than 1 %,
  // down to 0.64x (v5p 4x4x4 multi-axis reduce-scatter of 2 MiB: 27.32 ->
  // 17.58 us), none slower (without the hybrid first step, v2 4x2 at 64 KiB
  // took up to 1.13x: the ready word's hop before the first send).
  void choose_landing() {
    if (!plan_.reduces() || streams_.empty() || topo_.switched()) return;
    phase_count_ = 0;
    for (const Stream& st : streams_) phase_count_ = std::max(phase_count_, st.phases.size());
    std::vector<std::vector<std::uint64_t>> zones(streams_.size());
    std::uint64_t rows = 0;
    for (std::size_t k = 0; k < streams_.size(); ++k) {
      const Stream& st = streams_[k];
      zones[k].assign(st.jobs.size(), 0);
      for (std::size_t u = 0; u < st.jobs.size(); ++u) {
        const Job& j = st.jobs[u];
        if (j.idle || !uses_buffers(st, j)) continue;
        if (u == 0 || round_pieces_[u].pg != round_pieces_[u - 1].pg) return;
        zones[k][u] = rows;
        rows += st.phases[j.phase].units * ug_ / round_pieces_[u].pg * rows_pad_;
      }
    }
    const std::uint64_t saved = buffers_;
    buffers_ = kPrefetchBuffers;
    landing_ = true;
    const std::uint64_t vmem = (rows + 2 * kGroupRows) * kRowBytes + vmem_allocation_bytes();
    if (vmem > chip_.vmem.size_bytes / 4 || flag_count() > chip_.sflag.count) {
      buffers_ = saved;
      landing_ = false;
      return;
    }
    zone_rows_ = std::move(zones);
    landing_rows_ = rows;
  }
  // Round u's landing zone of stream k plus `rows` (a register), as a VMEM
  // granule address in `dst`.
  void zone_address(const std::string& dst, std::size_t k, std::size_t u, const std::string& rows) {
    emit(S::kSalu, fmt::format("%{} = scalar_lea.vmem {}, %{}", dst, allocation_at(kAllocA, zone_rows_[k][u]), rows));
    emit(S::kSalu, fmt::format("%{0} = sshll.u32 %{0}, 4", dst));
  }

  // Lead rounds. A round u in which every stream it runs sends step 0 of a
  // one-hop reduce phase (a 2-chip axis), followed by round u + 1 running
  // step 1, the phase's last, of those phases for the same streams with the
  // same pieces, would otherwise issue all its sends first: the DMA queue
  // (dma.max_in_flight) fills, the core stalls until the last of them is on
  // its way, and step 1's reductions (loads, add, store) start only then,
  // after nearly all of the transfer (the v2 4x2 ReduceScatter of 128 MiB
  // took 1.92 ms for a link time of 1.18 ms). Such a round leads: it issues
  // its first kLeadPieces pieces only, and round u + 1's loop issues step
  // 0's piece i + kLeadPieces just before it reduces piece i, so each piece
  // is added while the next ones are on the link. The sends, their sizes,
  // flags and destinations are those of the unled round; only their issue
  // is interleaved (the sums are the same). Longer reduce phases are left as
  // they are: their later steps' forwards keep the links busy while the
  // reductions run, and leading their first round (two pieces ahead)
  // measured up to 3 % slower (v5p 4x4x4 ring, h100 node:8). Needs step 0's
  // source to advance by one piece per piece (a later phase's result block,
  // or phase 0 without varying digits or with pieces spanning units) and the
  // same piece count for every stream, more than 2 x kLeadPieces of them
  // (with fewer the lead gains little: v5p 2x2x2 mlp tp's all-reduce at
  // batch 4096 measured 6 ns slower with four pieces). Three pieces ahead
  // is the fewest that measured never slower than the unled round (v5e 2,
  // 2x4, 4x2; v5p 2x2x2; v6e 2x2; h100 and a100 node:2; 256 KiB to 256 MiB):
  // with one, h100 node:2's ring reduce-scatter of 1 MiB took 17.14 us
  // against 15.93 unled (its fast links need more sends in flight), with
  // three 15.93 (256 MiB: 574.7 unled, 539.5 with one, 385.5 with three);
  // v2 4x2 128 MiB: 1199.0, 1204.4, 1204.9, 1208.7 us with 1, 2, 3, 4
  // (1920.2 unled).
  static constexpr std::uint64_t kLeadPieces = 3;
  void choose_leads() {
    std::size_t rounds = 0;
    for (const Stream& st : streams_) rounds = std::max(rounds, st.jobs.size());
    lead_.assign(rounds, false);
    if (!plan_.reduces() || landing_) return;
    for (std::size_t u = 0; u + 1 < rounds; ++u) {
      const RoundPiece& a = round_pieces_[u];
      const RoundPiece& b = round_pieces_[u + 1];
      if (a.pg != b.pg || a.per_unit != b.per_unit || a.spans != b.spans) continue;
      bool ok = true;
      std::uint64_t n = 0;
      for (const Stream& st : streams_) {
        const bool sends = u < st.jobs.size() && !st.jobs[u].idle;
        const bool reduces = u + 1 < st.jobs.size() && !st.jobs[u + 1].idle;
        if (!sends && !reduces) continue;
        if (sends != reduces) {
          ok = false;
          break;
        }
        const Job& j0 = st.jobs[u];
        const Job& j1 = st.jobs[u + 1];
        const Phase& ph = st.phases[j0.phase];
        const std::uint64_t pieces = ph.units * ug_ / a.pg;
        ok = ok && ph.reduce && j1.phase == j0.phase && j0.step == 0 && j1.step == 1 && final_step(st, j1) &&
             (j0.phase > 0 || ph.varying.empty() || a.spans) && (n == 0 || n == pieces);
        n = pieces;
      }
      lead_[u] = ok && n > 2 * kLeadPieces;
    }
  }

  // Prefetched rounds. In a reduce step each piece waits for its two HBM ->
  // VMEM loads (the partial sum that arrived, the local operand) before it
  // is added and sent. Loading and reducing piece i in the same iteration
  // puts hbm.latency on the core's critical path once per piece, which a
  // piece long on its link hides but a short one does not. A round whose
  // pieces take at most half of hbm.latency on their link issues piece i's
  // loads kPrefetchDepth pieces before it reduces piece i, into a ring of
  // kPrefetchBuffers buffers per stream (each with its own load flag), when
  // VMEM and the sync flags allow; other rounds keep one loop. The cost: a
  // piece is reduced only after piece i + depth - 1 arrived (the core waits
  // in order), a delay of (depth - 1) piece times per step, hence the limit
  // (with pieces up to hbm.latency long, v5e 16's ring reduce-scatter of 2
  // MiB took 57.24 us instead of 48.87; with the limit no case of the sweep
  // below is more than 0.3 % slower). Measured over 594 collectives (v5e 4x4,
  // 16, 8x16; v5p 4x4x4 on one and three axes, 2x2x2; v6e 4x4; v2 4x2; h100
  // node:8; reduce-scatter and all-reduce; ring, bidir-ring, multi-axis; 64
  // KiB to 64 MiB): 61 faster by more than 1 %, down to 0.57x (v5p 4x4x4 ring
  // reduce-scatter over x,y,z of 64 KiB: 39.40 -> 22.61 us).
  static constexpr std::uint64_t kPrefetchDepth = 3;
  static constexpr std::uint64_t kPrefetchBuffers = 4;
  void choose_depths() {
    depth_.assign(round_pieces_.size(), 0);
    if (!plan_.reduces()) return;
    if (landing_) {  // loads that wait for nothing: always ahead
      for (std::size_t u = 0; u < round_pieces_.size(); ++u) {
        for (const Stream& st : streams_) {
          if (u < st.jobs.size() && !st.jobs[u].idle && uses_buffers(st, st.jobs[u])) depth_[u] = kPrefetchDepth;
        }
      }
      return;
    }
    bool any = false;
    for (std::size_t u = 0; u < round_pieces_.size(); ++u) {
      const double link_time = static_cast<double>(round_pieces_[u].pg * kGranule) * link_seconds_per_byte_;
      if (2 * link_time > chip_.hbm.latency_s) continue;
      for (const Stream& st : streams_) {
        if (u < st.jobs.size() && !st.jobs[u].idle && uses_buffers(st, st.jobs[u])) {
          depth_[u] = kPrefetchDepth;
          any = true;
        }
      }
    }
    if (!any) return;
    buffers_ = kPrefetchBuffers;
    if (vmem_allocation_bytes() > chip_.vmem.size_bytes / 2 || flag_count() > chip_.sflag.count) {
      buffers_ = 2;
      depth_.assign(round_pieces_.size(), 0);
    }
  }
  // Bytes of each of the two VMEM allocations (received partial sums, local
  // operands): every stream's buffers, + 32 KiB: the software-pipelined add
  // loop reads one iteration past a piece.
  [[nodiscard]] std::uint64_t vmem_allocation_bytes() const {
    return (streams_.size() * buffers_ * rows_pad_ + 2 * kGroupRows) * kRowBytes;
  }

  void header() {
    const std::string dt = plan_.bf16 ? "bf16" : "f32";
    const CollectiveShapes shapes = collective_shapes(spec_, topo_);
    w_.raw(fmt::format("// Generated by tpuemu (programs/collectives.cpp) for {}: {} {} {} of {} bytes over {} of {}",
                       chip_.name, spec_.op, spec_.algorithm, dt, plan_.bytes, axes_text(spec_.axes), topo_.shape()));
    w_.raw(fmt::format("// ({} chips per group). Contract and schedule: programs/collectives.hpp.", plan_.group_size));
    if (!streams_.empty()) {
      w_.raw(fmt::format("// {} stream{} ({} part{} x {} direction{}), units of {} bytes, pieces of {} bytes.",
                         streams_.size(), streams_.size() == 1 ? "" : "s", plan_.parts, plan_.parts == 1 ? "" : "s",
                         plan_.directions, plan_.directions == 1 ? "" : "s", plan_.unit_bytes, piece_));
    }
    if (plan_.reduces() && !streams_.empty()) {
      const std::uint64_t bytes = vmem_allocation_bytes();
      if (landing_) {
        const std::uint64_t zones = (landing_rows_ + 2 * kGroupRows) * kRowBytes;
        w_.raw(
            fmt::format("#allocation{} [shape = 'f32[{}]', space=vmem, size = 0x{:x}, tag = 'landing zones of the "
                        "received partial sums (stream x step x piece)']",
                        kAllocA, zones / 4, zones));
      } else {
        w_.raw(
            fmt::format("#allocation{} [shape = 'f32[{}]', space=vmem, size = 0x{:x}, tag = 'received partial sums "
                        "(stream x buffer)']",
                        kAllocA, bytes / 4, bytes));
      }
      w_.raw(fmt::format(
          "#allocation{} [shape = 'f32[{}]', space=vmem, size = 0x{:x}, tag = 'local operand (stream x buffer)']",
          kAllocB, bytes / 4, bytes));
    }
    w_.raw(fmt::format("#allocation{} [shape = 's32[{}]', space=sflag, size = 0x{:x}, tag = 'sync flags']", kFlags,
                       flag_count(), flag_count() * 4));
    operand_bindings(plan_.bf16, shapes);
  }

  // Core check, topology check, identity, base addresses, buffer credits.
  void prologue() {
    identity_checks(topo_);
    static constexpr const char* kCoordOps[] = {"sid.x", "sid.y", "sid.z"};
    for (std::size_t a : plan_.axes) emit(S::kSalu, fmt::format("%{} = {}", coord(a), kCoordOps[a]));
    emit(S::kSalu, "%s3 = sshll.u32 %s0, 4");
    emit(S::kSalu, "%s4 = sshll.u32 %s1, 4");
    if (plan_.reduces() && !streams_.empty()) emit(S::kSalu, "%s5 = sshll.u32 %s2, 4");
    // s10: output + this chip's unit of part 0 without its stream base
    // (rank * Q but for all-reduce), in granules.
    emit(S::kSalu, "%s10 = sadd.s32 %s4, 0");
    for (std::size_t a : plan_.axes) {
      emit(S::kSalu, fmt::format("%s17 = smul.u32 %{}, {}", coord(a), plan_.unit_stride[0][a] / kGranule));
      emit(S::kSalu, "%s10 = sadd.s32 %s10, %s17");
    }
    if (plan_.reduces()) {
      // A buffer's flag holds one piece when it is free (see part 1 of a
      // piece): the piece of the stream's first round that uses the buffers.
      for (std::size_t k = 0; k < streams_.size(); ++k) {
        credit_.push_back(piece_ / kGranule);
        for (std::size_t u = 0; u < streams_[k].jobs.size(); ++u) {
          if (!streams_[k].jobs[u].idle && uses_buffers(streams_[k], streams_[k].jobs[u])) {
            credit_[k] = round_pieces_[u].pg;
            break;
          }
        }
        if (landing_) continue;  // no buffer credits
        for (std::size_t b = 0; b < buffers_; ++b)
          emit(S::kSync, fmt::format("{} = vsyncadd {}, {}", token(), flag(f_buffer(k, b)), credit_[k]));
      }
    }
    if (landing_) ready_words();
    w_.flush();
  }

  // Landing: tells the predecessor of every stream's reduce phases that this
  // chip's zones are free (choose_landing). Uses s17..s23, p3.
  void ready_words() {
    for (std::size_t k = 0; k < streams_.size(); ++k) {
      const Stream& st = streams_[k];
      for (std::size_t t = 0; t < st.phases.size(); ++t) {
        const Phase& ph = st.phases[t];
        if (!ph.reduce || st.hops[t] < (t == 0 ? 2U : 1U)) continue;  // no landing sends in this phase
        const std::int64_t l = ph.length;
        const auto stride = static_cast<std::int64_t>(topo_stride(ph.axis));
        const std::string coordinate = coord(ph.axis);
        if (folded_ring_axis(topo_, ph.axis)) {
          // The chip at the previous ring position (see setup's successor).
          position_plus("s22", ring_position(ph), sign(st) > 0 ? l - 1 : 1, l);
          folded_coordinate("s22", "s22", l);
          emit(S::kSalu, fmt::format("%s22 = ssub.s32 %s22, %{}", coordinate));
          emit(S::kSalu, fmt::format("%s22 = smul.u32 %s22, {}", imm(stride)));
          emit(S::kSalu, "%s23 = sadd.s32 %s6, %s22");
        } else {
          emit(S::kSalu, fmt::format("%p3 = scmp.eq.s32.totalorder %{}, {}", coordinate, sign(st) > 0 ? 0 : l - 1));
          sel("s17", "p3", imm(sign(st) > 0 ? (l - 1) * stride : -(l - 1) * stride),
              imm(sign(st) > 0 ? -stride : stride));
          emit(S::kSalu, "%s23 = sadd.s32 %s6, %s17");
        }
        emit(S::kSync, fmt::format("{} = vsyncadd.remote /*chip=*/%s23, /*core=*/0, /*flag=*/{}, /*value=*/1", token(),
                                   flag(f_ready(k, t))));
        w_.flush();
      }
    }
  }

  // Group of one chip: the output is the input.
  void local_copy_program() {
    const std::uint64_t granules = plan_.bytes / kGranule;
    w_.comment("a group of one chip: copy the input to the output");
    emit(S::kDma, fmt::format("{} = dma.hbm_to_hbm [thread:$0] /*src=*/%s3, /*size_in_granules=*/{}, /*dst=*/%s4, "
                              "/*dst_syncflagno=*/{}",
                              token(), granules, flag(0)));
    wait(flag(0), granules);
    w_.flush();
  }

  // ---------------------------------------------------------------- all-to-all
  // Block r of the input to this chip's output, then block j (j = r+1, r+2,
  // ... mod N) to rank j's output block r. The digits of j on the axes run as
  // an odometer in s24.. (fastest listed axis first); s30 = j, s31 = the id
  // of the group's rank-0 chip, s22 = this chip's output block.
  void all_to_all() {
    const std::uint64_t bg = plan_.unit_bytes / kGranule;
    const std::uint64_t n = plan_.group_size;
    const std::uint64_t f_send = 0;
    const std::uint64_t f_in = 1;
    const std::uint64_t f_local = 2;
    w_.comment(fmt::format("all-to-all: {} blocks of {} bytes, one remote DMA each", n - 1, plan_.unit_bytes));
    emit(S::kSalu, "%s30 = smov 0");
    emit(S::kSalu, "%s31 = sadd.s32 %s6, 0");
    for (std::size_t i = 0; i < plan_.axes.size(); ++i) {
      const std::size_t a = plan_.axes[i];
      const std::string d = fmt::format("s{}", 24 + i);
      emit(S::kSalu, fmt::format("%{} = sadd.s32 %{}, 0", d, coord(a)));
      emit(S::kSalu, fmt::format("%s17 = smul.u32 %{}, {}", coord(a), plan_.rank_stride[a]));
      emit(S::kSalu, "%s30 = sadd.s32 %s30, %s17");
      emit(S::kSalu, fmt::format("%s17 = smul.u32 %{}, {}", coord(a), topo_stride(a)));
      emit(S::kSalu, "%s31 = ssub.s32 %s31, %s17");
    }
    emit(S::kSalu, fmt::format("%s17 = smul.u32 %s30, {}", bg));
    emit(S::kSalu, "%s22 = sadd.s32 %s4, %s17");
    emit(S::kSalu, "%s23 = sadd.s32 %s3, %s17");
    emit(S::kDma, fmt::format("{} = dma.hbm_to_hbm [thread:$0] /*src=*/%s23, /*size_in_granules=*/{}, /*dst=*/%s22, "
                              "/*dst_syncflagno=*/{}",
                              token(), bg, flag(f_local)));
    odometer_step();
    emit(S::kSalu, "%s11 = smov 0");
    const std::string loop = label("block");
    w_.label(loop);
    emit(S::kSalu, "%s18 = sadd.s32 %s31, 0");
    for (std::size_t i = 0; i < plan_.axes.size(); ++i) {
      emit(S::kSalu, fmt::format("%s17 = smul.u32 %s{}, {}", 24 + i, topo_stride(plan_.axes[i])));
      emit(S::kSalu, "%s18 = sadd.s32 %s18, %s17");
    }
    emit(S::kSalu, fmt::format("%s19 = smul.u32 %s30, {}", bg));
    emit(S::kSalu, "%s19 = sadd.s32 %s3, %s19");
    emit(S::kDma, fmt::format("{} = dma.remote.hbm_to_hbm [thread:$0] /*src=*/%s19, /*size_in_granules=*/{}, "
                              "/*chip=*/%s18, /*core=*/0, /*dst=*/%s22, /*src_syncflagno=*/{}, /*dst_syncflagno=*/{}",
                              token(), bg, flag(f_send), flag(f_in)));
    odometer_step();
    emit(S::kSalu, "%s11 = sadd.s32 %s11, 1");
    emit(S::kSalu, fmt::format("%p1 = scmp.lt.s32.totalorder %s11, {}", n - 1));
    branch("%p1", loop);
    w_.comment("wait for every block to arrive and leave");
    wait(flag(f_in), (n - 1) * bg);
    wait(flag(f_send), (n - 1) * bg);
    wait(flag(f_local), bg);
    w_.flush();
  }

  // j += 1 (mod N) with its digits in s24.. (mixed radix, first axis fastest).
  void odometer_step() {
    std::vector<std::uint32_t> lengths;
    for (std::size_t a : plan_.axes) lengths.push_back(topo_.length(a));
    group_odometer_step(lengths, plan_.group_size);
  }

  [[nodiscard]] std::uint64_t topo_stride(std::size_t axis) const { return topology_stride(topo_, axis); }

  // --------------------------------------------------------------------- rings
  // Rounds: round u runs the u-th job (phase, step) of every stream, its pieces
  // interleaved stream by stream in one loop (guards skip a stream whose job
  // has fewer pieces, when axis lengths differ).
  void rings() {
    const bool all_gather = plan_.op == Op::kAllGather;
    if (all_gather) {
      w_.comment("this chip's chunk to its place in the output");
      emit(S::kDma, fmt::format("{} = dma.hbm_to_hbm [thread:$0] /*src=*/%s3, /*size_in_granules=*/{}, /*dst=*/%s10, "
                                "/*dst_syncflagno=*/{}",
                                token(), q_granules(), flag(f_copy())));
    }
    std::size_t rounds = 0;
    for (const Stream& st : streams_) rounds = std::max(rounds, st.jobs.size());
    for (std::size_t u = 0; u < rounds; ++u) {
      round(u);
      // Later phases send from the output, this chip's chunk included.
      if (all_gather && u == 0) wait(flag(f_copy()), q_granules());
    }
    w_.comment("wait for the last sends to leave; release the buffer credits");
    for (std::size_t k = 0; k < streams_.size(); ++k) {
      if (const std::uint64_t total = hbm_send_total(streams_[k]); total > 0) wait(flag(f_hbm_send(k)), total);
      if (plan_.reduces() && !landing_) {
        for (std::size_t b = 0; b < buffers_; ++b) wait(flag(f_buffer(k, b)), credit_[k]);
      }
    }
    w_.flush();
  }

  // Granules a stream sends from HBM: every all-gather piece and the first
  // step of every reduce phase; landing, every send (its flag counts all).
  [[nodiscard]] std::uint64_t hbm_send_total(const Stream& st) const {
    std::uint64_t total = 0;
    for (const Job& j : st.jobs) {
      const Phase& ph = st.phases[j.phase];
      if (!j.idle && (!ph.reduce || j.step == 0 || (landing_ && !final_step(st, j)))) total += ph.units * ug_;
    }
    return total;
  }

  [[nodiscard]] std::uint64_t pieces(const Stream& st, const Job& j) const {
    return st.phases[j.phase].units * ug_ / pg_;
  }
  [[nodiscard]] static bool uses_buffers(const Stream& st, const Job& j) {
    return st.phases[j.phase].reduce && j.step > 0;
  }
  [[nodiscard]] static bool mixed_pointer(const Job& j, const Stream& st) {
    return !st.phases[j.phase].reduce || j.phase == 0;
  }
  [[nodiscard]] bool from_input(const Job& j, const Stream& st) const {
    return plan_.op == Op::kAllGather && j.phase == 0 && j.step == 0 && !st.phases[0].reduce;
  }

  void round(std::size_t u) {
    pg_ = round_pieces_[u].pg;
    pieces_per_unit_ = round_pieces_[u].per_unit;
    spans_ = round_pieces_[u].spans;
    strided_ = round_pieces_[u].strided;
    std::vector<std::size_t> active;
    std::uint64_t n_max = 0;
    std::string what;
    for (std::size_t k = 0; k < streams_.size(); ++k) {
      if (u >= streams_[k].jobs.size() || streams_[k].jobs[u].idle) continue;
      active.push_back(k);
      const Job& j = streams_[k].jobs[u];
      const Phase& ph = streams_[k].phases[j.phase];
      n_max = std::max(n_max, pieces(streams_[k], j));
      what +=
          fmt::format("{}stream {} ({}{}{}): {} {} step {}", what.empty() ? "" : "; ", k, streams_[k].part,
                      plan_.half_rings ? fmt::format("u{}", streams_[k].unit) : "", streams_[k].dir == 0 ? "+" : "-",
                      ph.reduce ? "reduce" : "gather", ici::axis_name(ph.axis), j.step);
    }
    w_.comment(fmt::format("=== round {}: {}{}{}", u, what,
                           spans_     ? fmt::format(" (pieces of {} bytes)", pg_ * kGranule)
                           : strided_ ? fmt::format(" (pieces of {} strided units)", strided_)
                                      : "",
                           lead_[u] ? fmt::format(" (leads: its first {} piece{} here, the rest from round {}'s loop)",
                                                  kLeadPieces, kLeadPieces == 1 ? "" : "s", u + 1)
                                    : ""));
    // A stream whose buffers held pieces of another size: both free, then
    // their credit changed to this round's piece.
    for (std::size_t k : active) {
      if (landing_ || !uses_buffers(streams_[k], streams_[k].jobs[u]) || credit_[k] == pg_) continue;
      for (std::size_t b = 0; b < buffers_; ++b) {
        wait(flag(f_buffer(k, b)), credit_[k], false);
        emit(S::kSync, fmt::format("{} = vsyncadd {}, {}", token(), flag(f_buffer(k, b)),
                                   imm(static_cast<std::int64_t>(pg_) - static_cast<std::int64_t>(credit_[k]))));
      }
      credit_[k] = pg_;
    }
    for (std::size_t k : active) setup(k, streams_[k].jobs[u]);
    for (std::size_t k : active) {  // landing: a phase's first landing sends wait for the successor's word
      const Job& j = streams_[k].jobs[u];
      if (sends_to_landing(streams_[k], j) && j.step == (j.phase == 0 ? 1U : 0U)) wait(flag(f_ready(k, j.phase)), 1);
    }
    emit(S::kSalu, "%s11 = smov 0");
    emit(S::kSalu, "%s12 = smov 0");
    emit(S::kSalu, "%s13 = smov 0");
    const bool lead = lead_[u];
    const std::uint64_t issued = lead ? kLeadPieces : n_max;
    const std::uint64_t depth = std::min(depth_[u], n_max);
    if (depth == 0) {
      round_loop(u, active, n_max, 0, issued, true, true, 0);
    } else {
      // Loads run `depth` pieces ahead: issue only, then reduce piece i -
      // depth and issue piece i, then reduce only (choose_depths).
      round_loop(u, active, n_max, 0, depth, true, false, depth);
      round_loop(u, active, n_max, depth, n_max, true, true, depth);
      round_loop(u, active, n_max, n_max, n_max + depth, false, true, depth);
    }
    if (lead) {
      // Where the next round's loop resumes this round's sends: piece
      // kLeadPieces of step 0's source.
      for (std::size_t k : active) {
        const bool rank_addressed = streams_[k].jobs[u].phase == 0;  // advanced piece by piece
        emit(S::kSalu, fmt::format("%{} = sadd.s32 %{}, {}", send_ptr(k), ptr(k), rank_addressed ? "0" : "%s13"));
      }
    }
    // Phase ends: an all-gather phase's last arrivals (not forwarded), a
    // reduce phase's last stores (both buffers free).
    for (std::size_t k : active) {
      const Stream& st = streams_[k];
      const Job& j = st.jobs[u];
      if (u + 1 < st.jobs.size() && st.jobs[u + 1].phase == j.phase && !st.jobs[u + 1].idle) continue;
      const Phase& ph = st.phases[j.phase];
      if (ph.reduce && landing_) {
        if (j.step > 0) wait(flag(f_stored(k)), ph.units * ug_);
      } else if (ph.reduce) {
        for (std::size_t b = 0; b < buffers_; ++b) wait(flag(f_buffer(k, b)), credit_[k], false);
      } else {
        wait(flag(f_arrive(k, u)), ph.units * ug_);
      }
    }
    w_.flush();
  }

  // One loop of round u over pieces i = s11 from `from` to `to` - 1: the
  // issue part of piece i (when `issue`) and the reduce part of piece i -
  // `lag` (when `reduce`; lag 0: issue first, in one buffer; else reduce
  // first, into buffer (i - lag) mod buffers_ while piece i's loads go to
  // buffer i mod buffers_). s13 is piece i's granule offset throughout.
  void round_loop(std::size_t u, const std::vector<std::size_t>& active, std::uint64_t n_max, std::uint64_t from,
                  std::uint64_t to, bool issue, bool reduce, std::uint64_t lag) {
    if (from >= to) return;
    const std::string loop = label("round");
    w_.label(loop);
    bool buffers = false;
    for (std::size_t k : active) buffers = buffers || uses_buffers(streams_[k], streams_[k].jobs[u]);
    const std::uint64_t mask = lag == 0 ? 1 : buffers_ - 1;
    if (buffers && issue) {
      emit(S::kSalu, fmt::format("%s15 = sand.u32 %s11, {}", mask));
      emit(S::kSalu, fmt::format("%s14 = smul.u32 %s15, {}", rows_pad_));
      emit(S::kSalu, fmt::format("%s16 = smul.u32 %s15, {}", streams_.size()));
    }
    if (landing_ && issue) emit(S::kSalu, fmt::format("%s54 = smul.u32 %s11, {}", rows_pad_));  // piece i's slot
    BufferRegs reduce_regs{"s14", "s16", 0};
    if (buffers && reduce && lag > 0) {
      reduce_regs = BufferRegs{"s52", "s53", static_cast<std::int64_t>(lag * pg_)};
      add_imm("s51", "s11", -static_cast<std::int64_t>(lag));
      if (landing_) emit(S::kSalu, fmt::format("%s55 = smul.u32 %s51, {}", rows_pad_));  // piece i - lag's slot
      emit(S::kSalu, fmt::format("%s51 = sand.u32 %s51, {}", mask));
      emit(S::kSalu, fmt::format("%s52 = smul.u32 %s51, {}", rows_pad_));
      emit(S::kSalu, fmt::format("%s53 = smul.u32 %s51, {}", streams_.size()));
    }
    const bool trail = issue && u > 0 && lead_[u - 1];
    if (trail) {
      // The lead round's piece i + kLeadPieces (choose_leads).
      const std::string skip = label("led");
      emit(S::kSalu, fmt::format("%p5 = scmp.ge.s32.totalorder %s11, {}", n_max - kLeadPieces));
      branch("%p5", skip);
      for (std::size_t k : active) {
        const Stream& st = streams_[k];
        const Job& j = st.jobs[u - 1];
        scratch_address("s20", st.scratch.slots[j.phase] + kLeadPieces * pg_);
        remote_dma("hbm_to_hbm", "%" + send_ptr(k), k, "%s20", flag(f_hbm_send(k)), flag(f_arrive(k, u - 1)));
        add_imm(send_ptr(k), send_ptr(k), static_cast<std::int64_t>(pg_));
      }
      w_.label(skip);
    }
    auto reduce_all = [&] {
      for (std::size_t k : active) {
        if (!uses_buffers(streams_[k], streams_[k].jobs[u])) continue;
        guarded(k, u, n_max, lag, [&] { piece_reduce(k, u, reduce_regs, lag > 0); });
      }
    };
    if (reduce && lag > 0) reduce_all();
    if (issue) {
      for (std::size_t k : active) guarded(k, u, n_max, 0, [&] { piece_issue(k, u, lag > 0); });
    }
    if (reduce && lag == 0) reduce_all();
    // Next piece: q, the pointers, i.
    if (issue) {
      if (pieces_per_unit_ > 1)
        emit(S::kSalu, fmt::format("%p2 = scmp.eq.s32.totalorder %s12, {}", pieces_per_unit_ - 1));
      for (std::size_t k : active) {
        const Job& j = streams_[k].jobs[u];
        if (!mixed_pointer(j, streams_[k])) continue;
        if (halves(streams_[k], j)) {
          add_imm(ptr(k), ptr(k), static_cast<std::int64_t>(pg_));  // a contiguous half block
        } else {
          advance(k, streams_[k].phases[j.phase]);
        }
      }
      if (pieces_per_unit_ > 1) {
        emit(S::kSalu, "%s17 = sadd.s32 %s12, 1");
        sel("s12", "p2", "0", "%s17");
      }
    }
    add_imm("s13", "s13", static_cast<std::int64_t>(pg_));
    emit(S::kSalu, "%s11 = sadd.s32 %s11, 1");
    if (to - from > 1) {
      emit(S::kSalu, fmt::format("%p1 = scmp.lt.s32.totalorder %s11, {}", to));
      branch("%p1", loop);
    }
  }

  // Runs `body` for stream k only while i - lag < its piece count.
  template <class F>
  void guarded(std::size_t k, std::size_t u, std::uint64_t n_max, std::uint64_t lag, F&& body) {
    const std::uint64_t n = pieces(streams_[k], streams_[k].jobs[u]);
    if (n == n_max) {
      body();
      return;
    }
    const std::string skip = label("skip");
    emit(S::kSalu, fmt::format("%p5 = scmp.ge.s32.totalorder %s11, {}", n + lag));
    branch("%p5", skip);
    body();
    w_.label(skip);
  }

  // Before a round's loop: stream k's successor (at a phase's first step),
  // chunk pointer and digit counter.
  void setup(std::size_t k, const Job& j) {
    const Stream& st = streams_[k];
    const Phase& ph = st.phases[j.phase];
    const std::int64_t l = ph.length;
    const std::string coordinate = coord(ph.axis);
    const bool folded = folded_ring_axis(topo_, ph.axis);
    const std::string c = ring_position(ph);
    if (j.step == 0) {
      const auto t = static_cast<std::int64_t>(topo_stride(ph.axis));
      if (folded) {
        // The chip at the next ring position in this stream's direction.
        position_plus("s22", c, sign(st) > 0 ? 1 : l - 1, l);
        folded_coordinate("s22", "s22", l);
        emit(S::kSalu, fmt::format("%s22 = ssub.s32 %s22, %{}", coordinate));
        emit(S::kSalu, fmt::format("%s22 = smul.u32 %s22, {}", imm(t)));
        emit(S::kSalu, fmt::format("%{} = sadd.s32 %s6, %s22", succ(k)));
      } else {
        // Successor along the axis in this stream's direction (the ring closes over the ends).
        emit(S::kSalu, fmt::format("%p3 = scmp.eq.s32.totalorder %{}, {}", c, sign(st) > 0 ? l - 1 : 0));
        sel("s17", "p3", imm(sign(st) > 0 ? -(l - 1) * t : (l - 1) * t), imm(sign(st) > 0 ? t : -t));
        emit(S::kSalu, fmt::format("%{} = sadd.s32 %s6, %s17", succ(k)));
      }
    }
    if (from_input(j, st)) {
      emit(S::kSalu, fmt::format("%{} = sadd.s32 %s10, {}", ptr(k), unit_offset(st)));
      return;
    }
    if (plan_.op == Op::kAllReduce && st.part > 0 && ph.reduce && j.phase + 1 == st.scratch.slots.size() &&
        final_step(st, j)) {
      // This chip's unit of the part (its last reduce phase has no varying
      // digit, so the digit register is free).
      const std::string d = digit(k);
      emit(S::kSalu, fmt::format("%{} = sadd.s32 %s4, 0", d));
      for (std::size_t a : plan_.axes) {
        emit(S::kSalu, fmt::format("%s19 = smul.u32 %{}, {}", coord(a), unit_stride(st, a)));
        emit(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s19", d));
      }
    }
    // The step's chunk index, mod L: c - sign*step (gather), c + sign*(h -
    // step) (reduce over h hops; a full ring's h = L-1 makes it c - sign*(step+1)).
    const std::int64_t h = st.hops[j.phase];
    const std::int64_t add = ph.reduce ? ((sign(st) * (h - j.step)) % l + l) % l : ((-sign(st) * j.step) % l + l) % l;
    std::string jr = c;
    if (add != 0) {
      position_plus("s17", c, add, l);
      jr = "s17";
    }
    if (folded) {
      // The chunk's digit: the coordinate at ring position jr.
      folded_coordinate("s17", jr, l);
      jr = "s17";
    }
    const std::string p = ptr(k);
    if (ph.reduce && j.phase > 0) {
      // The previous phase's result, block j (this phase's enumeration order).
      emit(S::kSalu, fmt::format("%{} = smul.u32 %{}, {}", p, jr, ph.units * ug_));
      emit(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s5", p));
      add_imm(p, p, static_cast<std::int64_t>(st.scratch.result[j.phase - 1]));
      return;
    }
    // By rank: base + (sum of own digits on the fixed axes + j on the phase's axis) * Q + unit offset.
    emit(S::kSalu, fmt::format("%{} = smul.u32 %{}, {}", p, jr, unit_stride(st, ph.axis)));
    emit(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %{1}", p, ph.reduce ? "s3" : "s4"));
    for (std::size_t a : plan_.axes) {
      if (a == ph.axis || std::find(ph.varying.begin(), ph.varying.end(), a) != ph.varying.end()) continue;
      emit(S::kSalu, fmt::format("%s19 = smul.u32 %{}, {}", coord(a), unit_stride(st, a)));
      emit(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s19", p));
    }
    if (chunk_offset(st, j) != 0) add_imm(p, p, static_cast<std::int64_t>(chunk_offset(st, j)));
    if (ph.varying.size() == 2 && !halves(st, j)) emit(S::kSalu, fmt::format("%{} = smov 0", digit(k)));
  }

  // This chip's ring position on phase ph's axis: its coordinate's register,
  // or where the ring is folded its position (ring_position) computed into
  // s20 (clobbers s21 and p3).
  std::string ring_position(const Phase& ph) {
    const std::string coordinate = coord(ph.axis);
    if (!folded_ring_axis(topo_, ph.axis)) return coordinate;
    emit(S::kSalu, fmt::format("%s20 = sshrl.u32 %{}, 1", coordinate));
    emit(S::kSalu, fmt::format("%s21 = sand.u32 %{}, 1", coordinate));
    emit(S::kSalu, "%p3 = scmp.eq.s32.totalorder %s21, 1");
    emit(S::kSalu, fmt::format("%s21 = ssub.s32 {}, %s20", imm(static_cast<std::int64_t>(ph.length) - 1)));
    sel("s20", "p3", "%s21", "%s20");
    return "s20";
  }

  // dst = (src + add) mod l, for 0 <= src, add < l (clobbers s18 and p3).
  void position_plus(const std::string& dst, const std::string& src, std::int64_t add, std::int64_t l) {
    add_imm(dst, src, add);
    add_imm("s18", dst, -l);
    emit(S::kSalu, fmt::format("%p3 = scmp.ge.s32.totalorder %{}, {}", dst, l));
    sel(dst, "p3", "%s18", "%" + dst);
  }
  // dst = ring_coordinate(src, l, folded): 2 src for the first ceil(l/2)
  // positions, else 2 (l - 1 - src) + 1 (clobbers s18, s19 and p3).
  void folded_coordinate(const std::string& dst, const std::string& src, std::int64_t l) {
    emit(S::kSalu, fmt::format("%p3 = scmp.lt.s32.totalorder %{}, {}", src, (l + 1) / 2));
    emit(S::kSalu, fmt::format("%s18 = sshll.u32 %{}, 1", src));
    emit(S::kSalu, fmt::format("%s19 = ssub.s32 {}, %s18", imm(2 * l - 1)));
    sel(dst, "p3", "%s18", "%s19");
  }

  // Moves stream k's rank-addressed pointer to its next piece: +1 piece within
  // a unit, else to the next unit of the enumeration (p2: the piece was the
  // unit's last).
  void advance(std::size_t k, const Phase& ph) {
    const std::string p = ptr(k);
    const auto pg = static_cast<std::int64_t>(pg_);
    const std::int64_t back = static_cast<std::int64_t>(pieces_per_unit_ - 1) * pg;
    const bool multi = pieces_per_unit_ > 1;
    if (ph.varying.empty() || spans_) {
      add_imm(p, p, pg);
      return;
    }
    const Stream& st = streams_[k];
    if (strided_ > 0) {
      // The next m units of the fastest digit, or the next cycle of it.
      const auto s0 = static_cast<std::int64_t>(unit_stride(st, ph.varying[0]));
      const auto m = static_cast<std::int64_t>(strided_);
      if (ph.varying.size() == 1) {
        add_imm(p, p, m * s0);
        return;
      }
      const std::int64_t l0 = topo_.length(ph.varying[0]);
      const std::int64_t wrap = static_cast<std::int64_t>(unit_stride(st, ph.varying[1])) - (l0 - m) * s0;
      if (l0 == m) {
        add_imm(p, p, wrap);
        return;
      }
      const std::string d = digit(k);
      emit(S::kSalu, fmt::format("%p6 = scmp.eq.s32.totalorder %{}, {}", d, l0 / m - 1));
      sel("s17", "p6", imm(wrap), imm(m * s0));
      emit(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s17", p));
      add_imm(d, d, 1);
      sel(d, "p6", "0", "%" + d);
      return;
    }
    const auto s0 = static_cast<std::int64_t>(unit_stride(st, ph.varying[0]));
    const std::int64_t j1 = s0 - back;
    if (ph.varying.size() == 1) {
      if (!multi) {
        add_imm(p, p, j1);
      } else {
        sel("s17", "p2", imm(j1), imm(pg));
        emit(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s17", p));
      }
      return;
    }
    const std::int64_t l0 = topo_.length(ph.varying[0]);
    const auto s1 = static_cast<std::int64_t>(unit_stride(st, ph.varying[1]));
    const std::int64_t j2 = s1 - (l0 - 1) * s0 - back;
    const std::string d = digit(k);
    emit(S::kSalu, fmt::format("%p6 = scmp.eq.s32.totalorder %{}, {}", d, l0 - 1));
    if (!multi) {
      sel("s17", "p6", imm(j2), imm(j1));
      emit(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s17", p));
      add_imm(d, d, 1);
      sel(d, "p6", "0", "%" + d);
      return;
    }
    emit(S::kSalu, "%p7 = pnand %p2, %p6");  // p7: not the last unit of a digit cycle
    sel("s17", "p7", imm(j1), imm(j2));
    sel("s17", "p2", "%s17", imm(pg));
    emit(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s17", p));
    add_imm("s18", d, 1);
    sel(d, "p2", "%s18", "%" + d);
    sel(d, "p7", "%" + d, "0");
  }

  // Where the last step of stream k's reduce job j stores piece s13: the
  // phase's result in scratch, or for the last phase the output (this chip's
  // unit of it for all-reduce: s10 for part 0, the digit register for the
  // others).
  // `back`: granules the piece lies before s13.
  void result_address(std::size_t k, const Job& j, const std::string& dst, std::int64_t back = 0) {
    const Stream& st = streams_[k];
    if (j.phase + 1 < st.scratch.slots.size()) {
      scratch_address(dst, st.scratch.result[j.phase], back);
      return;
    }
    const std::string own = plan_.op != Op::kAllReduce ? "s4" : st.part == 0 ? "s10" : digit(k);
    emit(S::kSalu, fmt::format("%{} = sadd.s32 %{}, %s13", dst, own));
    if (const std::int64_t off = static_cast<std::int64_t>(unit_offset(st)) - back; off != 0) add_imm(dst, dst, off);
  }

  // Scratch + s13 + offset - back, into `dst`.
  void scratch_address(const std::string& dst, std::uint64_t offset, std::int64_t back = 0) {
    emit(S::kSalu, fmt::format("%{} = sadd.s32 %s5, %s13", dst));
    if (const std::int64_t off = static_cast<std::int64_t>(offset) - back; off != 0) add_imm(dst, dst, off);
  }
  // The local operand of reduce job j: the rank-addressed input pointer
  // (phase 0) or the previous result block + s13.
  void local_address(std::size_t k, const Job& j, const std::string& dst) {
    if (j.phase == 0) {
      emit(S::kSalu, fmt::format("%{} = sadd.s32 %{}, 0", dst, ptr(k)));
    } else {
      emit(S::kSalu, fmt::format("%{} = sadd.s32 %{}, %s13", dst, ptr(k)));
    }
  }
  [[nodiscard]] std::uint64_t vmem_row_offset(std::size_t k) const { return k * buffers_ * rows_pad_; }
  [[nodiscard]] std::string vmem_sym(int alloc, std::size_t k) const {
    return allocation_at(alloc, vmem_row_offset(k));
  }
  // VMEM allocation `alloc` plus `rows`, as an address operand.
  static std::string allocation_at(int alloc, std::uint64_t rows) {
    return rows == 0 ? fmt::format("[#allocation{}]", alloc) : fmt::format("[#allocation{} + $0x{:x}]", alloc, rows);
  }

  // Part 1 of piece i of stream k: a gather forwards it (after its arrival);
  // a reduce step 0 sends the local piece; a later reduce step waits for the
  // partial sum and a free buffer and loads both operands into VMEM.
  // `per_buffer_loads`: the loads credit buffer (s15)'s own load flag.
  void piece_issue(std::size_t k, std::size_t u, bool per_buffer_loads) {
    const Stream& st = streams_[k];
    const Job& j = st.jobs[u];
    const Phase& ph = st.phases[j.phase];
    const std::string arrive = flag(f_arrive(k, u));
    const std::string arrived = j.step > 0 ? flag(f_arrive(k, u - 1)) : "";
    if (!ph.reduce) {
      if (j.step > 0) wait(arrived, pg_);
      std::string src = "%" + ptr(k);
      if (from_input(j, st)) {
        emit(S::kSalu, "%s19 = sadd.s32 %s3, %s13");
        if (unit_offset(st) != 0) add_imm("s19", "s19", static_cast<std::int64_t>(unit_offset(st)));
        src = "%s19";
      }
      remote_dma("hbm_to_hbm", src, k, "%" + ptr(k), flag(f_hbm_send(k)), arrive);
      return;
    }
    const std::uint64_t chunk = ph.units * ug_;
    if (j.step == 0) {
      local_address(k, j, "s19");
      const bool lands = sends_to_landing(st, j);
      if (lands) {
        zone_address("s20", k, u + 1, "s54");  // the successor's slot of piece i
      } else {
        scratch_address("s20", st.scratch.slots[j.phase]);
      }
      const std::string kind = lands ? "hbm_to_vmem" : "hbm_to_hbm";
      if (strided_ == 0) {
        remote_dma(kind, "%s19", k, "%s20", flag(f_hbm_send(k)), arrive);
        return;
      }
      for (std::uint64_t m = 0; m < strided_; ++m) {  // a strided piece's units, one DMA each
        if (m > 0) {
          add_imm("s19", "s19", static_cast<std::int64_t>(unit_stride(st, ph.varying[0])));
          add_imm("s20", "s20", static_cast<std::int64_t>(ug_));
        }
        remote_dma(kind, "%s19", k, "%s20", flag(f_hbm_send(k)), arrive, ug_);
      }
      return;
    }
    if (landing_) {  // the local operand only, into buffer i (the partial sum lands in VMEM)
      emit(S::kSalu, fmt::format("%s22 = scalar_lea.sflag {}, %s16", flag(f_buffer_load(k, 0))));
      if (hybrid(st, j)) {  // ... or arrived in scratch: into its landing slot, crediting the same flag
        wait(arrived, pg_);
        scratch_address("s19", st.scratch.slots[j.phase] + (j.step - 1) * chunk);
        zone_address("s18", k, u, "s54");
        emit(S::kDma, fmt::format("{} = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s19, /*size_in_granules=*/{}, "
                                  "/*vmem=*/%s18, /*dst_syncflagno=*/%s22",
                                  token(), pg_));
      }
      emit(S::kSalu, fmt::format("%s20 = scalar_lea.vmem {}, %s14", vmem_sym(kAllocB, k)));
      emit(S::kSalu, "%s20 = sshll.u32 %s20, 4");
      local_operand_load(k, u, "%s22");
      return;
    }
    wait(arrived, pg_);
    emit(S::kSalu, fmt::format("%s17 = scalar_lea.sflag {}, %s16", flag(f_buffer(k, 0))));
    wait("%s17", pg_);
    std::string loaded = flag(f_load(k));
    if (per_buffer_loads) {
      emit(S::kSalu, fmt::format("%s22 = scalar_lea.sflag {}, %s16", flag(f_buffer_load(k, 0))));
      loaded = "%s22";
    }
    emit(S::kSalu, fmt::format("%s18 = scalar_lea.vmem {}, %s14", vmem_sym(kAllocA, k)));
    emit(S::kSalu, "%s18 = sshll.u32 %s18, 4");
    scratch_address("s19", st.scratch.slots[j.phase] + (j.step - 1) * chunk);
    emit(S::kDma, fmt::format("{} = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s19, /*size_in_granules=*/{}, /*vmem=*/%s18, "
                              "/*dst_syncflagno=*/{}",
                              token(), pg_, loaded));
    emit(S::kSalu, fmt::format("%s20 = scalar_lea.vmem {}, %s14", vmem_sym(kAllocB, k)));
    emit(S::kSalu, "%s20 = sshll.u32 %s20, 4");
    local_operand_load(k, u, loaded);
  }

  // The local operand of reduce piece s13 of stream k's job u into VMEM at
  // s20 (granules), crediting `loaded`: the phase's result stored by the
  // short partner (combine), else the input or the previous result.
  void local_operand_load(std::size_t k, std::size_t u, const std::string& loaded) {
    const Stream& st = streams_[k];
    const Job& j = st.jobs[u];
    const Phase& ph = st.phases[j.phase];
    if (final_step(st, j) && st.combine[j.phase]) {
      result_address(k, j, "s21");
    } else if (strided_ > 0) {
      local_address(k, j, "s21");
      emit(S::kDma, fmt::format("{} = dma.hbm_to_vmem.strided [thread:$0] /*hbm=*/%s21, /*size_in_granules=*/{}, "
                                "/*vmem=*/%s20, /*dst_syncflagno=*/{}, /*block_granules=*/{}, /*hbm_stride=*/{}",
                                token(), pg_, loaded, ug_, unit_stride(st, ph.varying[0])));
      return;
    } else {
      local_address(k, j, "s21");
    }
    emit(S::kDma, fmt::format("{} = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s21, /*size_in_granules=*/{}, /*vmem=*/%s20, "
                              "/*dst_syncflagno=*/{}",
                              token(), pg_, loaded));
  }

  // Part 2 of a reduce piece (step >= 1): add the local operand into the
  // partial sum in VMEM, then send it on, or store the phase's result.
  void piece_reduce(std::size_t k, std::size_t u, const BufferRegs& at, bool per_buffer_loads) {
    const Stream& st = streams_[k];
    const Job& j = st.jobs[u];
    const Phase& ph = st.phases[j.phase];
    if (landing_) {
      // Piece i - lag: its partial sum in its slot (s55 rows into the
      // zone), its local operand in buffer s52; the sum in the slot.
      if (!hybrid(st, j)) wait(flag(f_arrive(k, u - 1)), pg_);
      emit(S::kSalu, fmt::format("%s17 = scalar_lea.sflag {}, %{}", flag(f_buffer_load(k, 0)), at.flags));
      wait("%s17", hybrid(st, j) ? 2 * pg_ : pg_);
      add_loop_at(allocation_at(kAllocA, zone_rows_[k][u]), "s55", vmem_sym(kAllocB, k), at.rows);
      zone_address("s18", k, u, "s55");
      if (!final_step(st, j)) {
        zone_address("s19", k, u + 1, "s55");
        remote_dma("vmem_to_vmem", "%s18", k, "%s19", flag(f_hbm_send(k)), flag(f_arrive(k, u)));
        return;
      }
      result_address(k, j, "s19", at.back);
      emit(S::kDma,
           fmt::format("{} = dma.vmem_to_hbm [thread:$0] /*vmem=*/%s18, /*size_in_granules=*/{}, /*hbm=*/%s19, "
                       "/*dst_syncflagno=*/{}",
                       token(), pg_, flag(f_stored(k))));
      return;
    }
    if (per_buffer_loads) {
      emit(S::kSalu, fmt::format("%s17 = scalar_lea.sflag {}, %{}", flag(f_buffer_load(k, 0)), at.flags));
      wait("%s17", 2 * pg_);
    } else {
      wait(flag(f_load(k)), 2 * pg_);
    }
    add_loop(k, at.rows);
    emit(S::kSalu, fmt::format("%s17 = scalar_lea.sflag {}, %{}", flag(f_buffer(k, 0)), at.flags));
    emit(S::kSalu, fmt::format("%s18 = scalar_lea.vmem {}, %{}", vmem_sym(kAllocA, k), at.rows));
    emit(S::kSalu, "%s18 = sshll.u32 %s18, 4");
    const std::uint64_t chunk = ph.units * ug_;
    if (!final_step(st, j)) {
      scratch_address("s19", st.scratch.slots[j.phase] + j.step * chunk, at.back);
      remote_dma("vmem_to_hbm", "%s18", k, "%s19", "%s17", flag(f_arrive(k, u)));
      return;
    }
    result_address(k, j, "s19", at.back);
    emit(S::kDma, fmt::format("{} = dma.vmem_to_hbm [thread:$0] /*vmem=*/%s18, /*size_in_granules=*/{}, /*hbm=*/%s19, "
                              "/*dst_syncflagno=*/%s17",
                              token(), pg_));
  }

  // `granules`: 0 for the current piece's.
  void remote_dma(const std::string& kind, const std::string& src, std::size_t k, const std::string& dst,
                  const std::string& src_flag, const std::string& dst_flag, std::uint64_t granules = 0) {
    emit(S::kDma, fmt::format("{} = dma.remote.{} [thread:$0] /*src=*/{}, /*size_in_granules=*/{}, /*chip=*/%{}, "
                              "/*core=*/0, /*dst=*/{}, /*src_syncflagno=*/{}, /*dst_syncflagno=*/{}",
                              token(), kind, src, granules == 0 ? pg_ : granules, succ(k), dst, src_flag, dst_flag));
  }

  // A += B over stream k's current buffers, 4 vregs (16 KiB) per iteration;
  // bf16 is widened, added in f32 and rounded back (vpack's first operand is
  // the high half, so the positions round-trip).
  void add_loop(std::size_t k, const std::string& rows) {
    add_loop_at(vmem_sym(kAllocA, k), rows, vmem_sym(kAllocB, k), rows);
  }
  // A at VMEM `a` + register a_rows, B at `b` + register b_rows.
  void add_loop_at(const std::string& a, const std::string& a_rows, const std::string& b, const std::string& b_rows) {
    emit(S::kSalu, fmt::format("%s42 = scalar_lea.vmem {}, %{}", a, a_rows));
    emit(S::kSalu, fmt::format("%s43 = scalar_lea.vmem {}, %{}", b, b_rows));
    const std::uint64_t groups = ceil_div(pg_ * kGranule, kGroupBytes);
    if (!plan_.bf16 && pipelined_add_fits() && groups % 2 == 0 && groups >= 4 && chip_.vpu.vregs >= 24) {
      emit(S::kSalu, fmt::format("%s44 = smov {}", groups / 2));
      software_pipelined_add_loop();
      return;
    }
    if (!plan_.bf16 && pipelined_add_fits()) {
      emit(S::kSalu, fmt::format("%s44 = smov {}", groups));
      pipelined_add_loop();
      return;
    }
    scheduled_add_loop(groups, plan_.bf16);
  }

  // The f32 add loop placed by hand: six bundles per 16 KiB (the one store
  // slot is the limit: four vst, plus a load bundle before and the last store
  // after), its branch early enough that the delay slots are the rest of the
  // body. p4 says "the iteration after this one runs": set before the loop and
  // in each iteration after s44 (iterations left) is decremented, read by the
  // next iteration's branch. Needs one-cycle loads, adds and stores, 3 load
  // slots, 2 scalar slots and at most 5 delay slots (every preset has them);
  // otherwise the scheduled loop below is used.
  [[nodiscard]] bool pipelined_add_fits() const {
    const auto one = [&](LatencyClass c) { return chip_.latency(c).value() <= 1; };
    return one(LatencyClass::kVectorLoad) && one(LatencyClass::kValu) && one(LatencyClass::kVectorStore) &&
           one(LatencyClass::kSalu) && one(LatencyClass::kBranch) && chip_.slot_capacity_of(S::kLoad) >= 3 &&
           chip_.slot_capacity_of(S::kSalu) >= 2 && chip_.slot_capacity_of(S::kValu) >= 1 &&
           chip_.slot_capacity_of(S::kStore) >= 1 && chip_.slot_capacity_of(S::kBranch) >= 1 &&
           chip_.branch_delay_slots <= 5;
  }
  void pipelined_add_loop() {
    emit(S::kSalu, "%p4 = scmp.gt.s32.totalorder %s44, 1");
    const std::string loop = label("add");
    w_.label(loop);
    auto vld = [](int v, const char* base, int g) {
      return fmt::format("%v{} = vld [vmem:[%{} + $0x{:x}] sm:$0xff]", v, base, 8 * g);
    };
    auto vadd = [](int g) { return fmt::format("%v{} = vadd.f32 %v{}, %v{}", 8 + g, 2 * g, 2 * g + 1); };
    auto vst = [&](int g) {
      return fmt::format("{} = vst [vmem:[%s42 + $0x{:x}] sm:$0xff] /*vst_source=*/%v{}", token(), 8 * g, 8 + g);
    };
    std::vector<std::vector<std::string>> body = {
        {vld(0, "s42", 0), vld(1, "s43", 0), vld(2, "s42", 1), "%s44 = ssub.s32 %s44, 1"},
        {vld(3, "s43", 1), vld(4, "s42", 2), vld(5, "s43", 2), vadd(0)},
        {vld(6, "s42", 3), vld(7, "s43", 3), vadd(1), vst(0)},
        {vadd(2), vst(1)},
        {vadd(3), vst(2)},
        {vst(3), fmt::format("%s42 = sadd.s32 %s42, {}", kGroupRows),
         fmt::format("%s43 = sadd.s32 %s43, {}", kGroupRows)},
    };
    const std::size_t at = body.size() - 1 - chip_.branch_delay_slots;  // the branch's bundle
    // The compare reads s44 after bundle 0's decrement and, in the branch's
    // bundle or later, leaves this iteration's branch the old p4.
    body[std::max<std::size_t>(at, 1)].push_back("%p4 = scmp.gt.s32.totalorder %s44, 1");
    body[at].push_back(fmt::format("{} = sbr.rel (%p4) target = {}", token(), loop));
    for (const auto& b : body) w_.bundle(b);
  }

  // The f32 add loop for pieces of an even number (>= 4) of 16 KiB groups:
  // 32 KiB (8 vreg pairs) per iteration in eight bundles, one vst each (the
  // store slot's limit). Iteration i stores sum j in bundle j, adds pair j+1
  // (in bundle 7: pair 0 of iteration i+1) and loads pair j of iteration i+1
  // (64 rows on), so before the loop every pair of iteration 0 is loaded and
  // sum 0 added, and the last iteration reads one iteration past the piece
  // (the buffers carry that much padding; nothing read there is stored).
  // Branch, compare and counter as in pipelined_add_loop; s44 counts 32 KiB.
  void software_pipelined_add_loop() {
    auto vld = [](int v, const char* base, int row) {
      return fmt::format("%v{} = vld [vmem:[%{} + $0x{:x}] sm:$0xff]", v, base, row);
    };
    auto vadd = [](int j) { return fmt::format("%v{} = vadd.f32 %v{}, %v{}", 16 + j, 2 * j, 2 * j + 1); };
    for (int j = 0; j < 8; ++j) {
      emit(S::kLoad, vld(2 * j, "s42", 8 * j));
      emit(S::kLoad, vld(2 * j + 1, "s43", 8 * j));
    }
    emit(S::kValu, vadd(0));
    emit(S::kSalu, "%p4 = scmp.gt.s32.totalorder %s44, 1");
    const std::string loop = label("add");
    w_.label(loop);
    std::vector<std::vector<std::string>> body(8);
    for (int j = 0; j < 8; ++j) {
      std::vector<std::string>& b = body[static_cast<std::size_t>(j)];
      b.push_back(fmt::format("{} = vst [vmem:[%s42 + $0x{:x}] sm:$0xff] /*vst_source=*/%v{}", token(), 8 * j, 16 + j));
      b.push_back(vadd((j + 1) % 8));
      b.push_back(vld(2 * j, "s42", static_cast<int>(2 * kGroupRows) + 8 * j));
      b.push_back(vld(2 * j + 1, "s43", static_cast<int>(2 * kGroupRows) + 8 * j));
    }
    body[0].push_back("%s44 = ssub.s32 %s44, 1");
    body[7].push_back(fmt::format("%s42 = sadd.s32 %s42, {}", 2 * kGroupRows));
    body[7].push_back(fmt::format("%s43 = sadd.s32 %s43, {}", 2 * kGroupRows));
    const std::size_t at = body.size() - 1 - chip_.branch_delay_slots;
    body[std::max<std::size_t>(at, 1)].push_back("%p4 = scmp.gt.s32.totalorder %s44, 1");
    body[at].push_back(fmt::format("{} = sbr.rel (%p4) target = {}", token(), loop));
    for (const auto& b : body) w_.bundle(b);
  }

  const CollectiveSpec& spec_;
  const ici::Topology& topo_;
  const ChipConfig& chip_;
  CollectivePlan plan_;
  std::vector<Stream> streams_;
  std::vector<std::uint64_t> arrive_base_;
  std::uint64_t arrive_flags_ = 0;
  std::uint64_t ug_ = 0;  // unit, granules
  // Piece of one round: granules, pieces per unit (1 where pieces span
  // units) and whether they do.
  struct RoundPiece {
    std::uint64_t pg;
    std::uint64_t per_unit;
    bool spans;
    std::uint64_t strided;  // units per strided piece (strided_units), 0: none
  };
  std::vector<RoundPiece> round_pieces_;
  std::vector<bool> lead_;                             // per round (choose_leads)
  std::vector<std::uint64_t> credit_;                  // per stream: granules a free buffer's flag holds
  std::uint64_t piece_ = 0;                            // bytes, within a unit
  std::uint64_t pg_ = 0;                               // the current round's piece, granules
  std::uint64_t pieces_per_unit_ = 0;                  // the current round's Pu
  bool spans_ = false;                                 // the current round's pieces span units
  std::uint64_t strided_ = 0;                          // the current round's units per strided piece (0: none)
  std::uint64_t rows_pad_ = 0;                         // VMEM rows of one buffer (whole add-loop iterations)
  std::uint64_t buffers_ = 2;                          // VMEM buffers per stream (choose_depths)
  bool landing_ = false;                               // partial sums land in VMEM zones (choose_landing)
  std::vector<std::vector<std::uint64_t>> zone_rows_;  // [stream][round]: its zone's first row
  std::uint64_t landing_rows_ = 0;                     // rows of every zone
  std::size_t phase_count_ = 0;                        // the most phases of a stream
  std::vector<std::uint64_t> depth_;                   // per round: pieces its loads run ahead (choose_depths)
  double link_seconds_per_byte_ = 0;                   // a piece's time on its link per byte (choose_piece)
};

}  // namespace

std::string generate_collective(const CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip) {
  const CollectivePlan plan = plan_collective(spec, topology);
  // All-to-all (direct DMAs) and a group of one chip (a copy) are the same
  // program for every algorithm: the ring family's generator writes them.
  std::string text = plan.op == Op::kAllToAll || plan.axes.empty()
                         ? ring_family_generate(spec, topology, chip)
                         : collective_algorithm(spec.algorithm).generate(spec, plan, topology, chip);
  if (plan.axes.empty()) return text;
  return with_launch_latency(std::move(text), chip);
}

std::string with_launch_latency(std::string text, const ChipConfig& chip) {
  const double launch = chip.launch_latency();
  if (!(launch > 0)) return text;
  // Iterations of 6 bundles (the compare-and-decrement, the branch, its 4
  // delay slots) after the smov: 1 + 6 x iterations cycles. It ends with s63
  // = 0 and p15 false, as every register starts, so the program after it
  // sees what it would have without it.
  const double cycles = std::ceil(launch * chip.clock_hz);
  const auto iterations = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround((cycles - 1) / 6)));
  std::string loop = fmt::format("// {} base latency {:g} s (launch and set-up): {} x 6 bundles\n",
                                 chip.fabric.protocol, launch, iterations);
  loop += fmt::format("{{ %s63 = smov {} }}\n", iterations);
  loop += "launch_wait:\n";
  loop += "{ %s63 = ssub.s32 %s63, 1 ;; %p15 = scmp.gt.s32.totalorder %s63, 1 }\n";
  loop += "{ %999999 = sbr.rel (%p15) target = launch_wait }\n{}\n{}\n{}\n{}\n";
  // After the first bundle (the operand bindings).
  std::size_t at = 0;
  while (at < text.size() && text[at] != '{') {
    const std::size_t end = text.find('\n', at);
    at = end == std::string::npos ? text.size() : end + 1;
  }
  const std::size_t end = text.find('\n', at);
  text.insert(end == std::string::npos ? text.size() : end + 1, loop);
  return text;
}

namespace {

// What the generator decides for `spec` (`query` of it), for the
// predictions; `refused` where it cannot generate the collective.
template <class T, class Query>
T ask_generator(const CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip, T refused,
                const Query& query) {
  try {
    return query(CollectiveGen(spec, topology, chip));
  } catch (const std::invalid_argument&) {
    return refused;
  }
}

bool ring_family_lands_in_vmem(const CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip) {
  return ask_generator(spec, topology, chip, false, [](const CollectiveGen& g) { return g.lands_in_vmem(); });
}

std::uint64_t ring_family_largest_piece(const CollectiveSpec& spec, const ici::Topology& topology,
                                        const ChipConfig& chip) {
  return ask_generator(spec, topology, chip, std::uint64_t{0},
                       [](const CollectiveGen& g) { return g.largest_piece_bytes(); });
}

std::vector<std::uint64_t> ring_family_round_piece_bytes(const CollectiveSpec& spec, const ici::Topology& topology,
                                                         const ChipConfig& chip) {
  return ask_generator(spec, topology, chip, std::vector<std::uint64_t>{},
                       [](const CollectiveGen& g) { return g.round_piece_bytes(); });
}

std::optional<double> ring_family_pipelined_hop_seconds(const CollectiveSpec& spec, const ici::Topology& topology,
                                                        const ChipConfig& chip) {
  return ask_generator(spec, topology, chip, std::optional<double>{}, [&chip](const CollectiveGen& g) {
    return std::optional<double>(
        g.pipelined_hop_seconds(chip.ici.hop_latency_s, chip.link_payload_rate(), chip.hbm.latency_s));
  });
}

std::uint64_t ring_family_unled_tail_bytes(const CollectiveSpec& spec, const ici::Topology& topology,
                                           const ChipConfig& chip) {
  return ask_generator(spec, topology, chip, std::uint64_t{0},
                       [](const CollectiveGen& g) { return g.unled_tail_bytes(); });
}

}  // namespace

std::string ring_family_generate(const CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip) {
  CollectiveGen gen(spec, topology, chip);
  return gen.run();
}

}  // namespace tpuemu::programs
