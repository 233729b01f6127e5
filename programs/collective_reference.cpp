#include "programs/collective_reference.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "common/numerics.hpp"
#include "programs/collective_algorithm.hpp"
#include "programs/ring_family.hpp"

namespace tpuemu::programs {

namespace collective_detail {

std::vector<std::vector<ChipId>> collective_groups(const CollectivePlan& plan, const ici::Topology& topology) {
  std::vector<std::vector<ChipId>> groups;
  for (std::uint32_t id = 0; id < topology.chip_count(); ++id) {
    const ici::Coords base = topology.coords(ChipId(id));
    bool leader = true;
    for (std::size_t a : plan.axes) leader = leader && base[a] == 0;
    if (!leader) continue;
    std::vector<ChipId> members;
    for (std::uint64_t r = 0; r < plan.group_size; ++r) {
      ici::Coords c = base;
      for (std::size_t a : plan.axes) c[a] = static_cast<std::uint32_t>(r / plan.rank_stride[a] % topology.length(a));
      members.push_back(topology.linear_id(c));
    }
    groups.push_back(std::move(members));
  }
  return groups;
}

std::vector<float> load_elements(const std::uint8_t* p, std::uint64_t bytes, bool bf16) {
  std::vector<float> out(bytes / (bf16 ? 2 : 4));
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (bf16) {
      std::uint16_t bits = 0;
      std::memcpy(&bits, p + 2 * i, 2);
      out[i] = bf16_bits_to_f32(bits);
    } else {
      std::memcpy(&out[i], p + 4 * i, 4);
    }
  }
  return out;
}

void store_elements(const std::vector<float>& v, std::uint8_t* p, bool bf16) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (bf16) {
      const std::uint16_t bits = f32_to_bf16_bits(v[i]);
      std::memcpy(p + 2 * i, &bits, 2);
    } else {
      std::memcpy(p + 4 * i, &v[i], 4);
    }
  }
}

void accumulate(std::vector<float>& acc, const std::vector<float>& v, bool bf16) {
  for (std::size_t e = 0; e < acc.size(); ++e) acc[e] = bf16 ? bf16_round(acc[e] + v[e]) : acc[e] + v[e];
}

std::vector<std::vector<std::uint8_t>> rank_order_reference(const CollectivePlan& plan, const ici::Topology& topology,
                                                            const std::vector<std::vector<std::uint8_t>>& inputs) {
  const bool all_reduce = plan.op == CollectivePlan::Op::kAllReduce;
  const std::uint64_t out_bytes = all_reduce ? plan.bytes : plan.chunk_bytes;
  std::vector<std::vector<std::uint8_t>> outputs(inputs.size(), std::vector<std::uint8_t>(out_bytes));
  for (const std::vector<ChipId>& members : collective_groups(plan, topology)) {
    // The rank-order sum of the whole array, then each rank's part of it.
    std::vector<float> acc = load_elements(inputs[members[0].value()].data(), plan.bytes, plan.bf16);
    for (std::size_t i = 1; i < members.size(); ++i) {
      accumulate(acc, load_elements(inputs[members[i].value()].data(), plan.bytes, plan.bf16), plan.bf16);
    }
    std::vector<std::uint8_t> sum(plan.bytes);
    store_elements(acc, sum.data(), plan.bf16);
    for (std::size_t r = 0; r < members.size(); ++r) {
      std::uint8_t* out = outputs[members[r].value()].data();
      std::memcpy(out, sum.data() + (all_reduce ? 0 : r * plan.chunk_bytes), out_bytes);
    }
  }
  return outputs;
}

}  // namespace collective_detail

namespace {

using Op = CollectivePlan::Op;
using collective_detail::accumulate;

std::vector<float> load(const std::uint8_t* p, std::uint64_t bytes, bool bf16) {
  return collective_detail::load_elements(p, bytes, bf16);
}
void store(const std::vector<float>& v, std::uint8_t* p, bool bf16) {
  collective_detail::store_elements(v, p, bf16);
}

// The linear ids of one group by rank, from its rank-0 chip.
std::vector<ChipId> group_members(const CollectivePlan& plan, const ici::Topology& topology, ici::Coords base) {
  std::vector<ChipId> out;
  for (std::uint64_t r = 0; r < plan.group_size; ++r) {
    ici::Coords c = base;
    for (std::size_t a : plan.axes) c[a] = static_cast<std::uint32_t>(r / plan.rank_stride[a] % topology.length(a));
    out.push_back(topology.linear_id(c));
  }
  return out;
}

std::uint32_t digit(const CollectivePlan& plan, const ici::Topology& topology, std::uint64_t rank, std::size_t axis) {
  return static_cast<std::uint32_t>(rank / plan.rank_stride[axis] % topology.length(axis));
}

// One stream's units of one group through the reduce phases (header order).
// partial[x * N + r]: chip of rank x, chunk r; empty where not defined.
std::vector<std::vector<float>> reduce_stream(const CollectivePlan& plan, const ici::Topology& topology,
                                              const std::vector<const std::uint8_t*>& inputs, std::size_t part,
                                              std::size_t dir) {
  const std::uint64_t n = plan.group_size;
  std::vector<std::vector<float>> partial(n * n);
  for (std::uint64_t x = 0; x < n; ++x) {
    for (std::uint64_t r = 0; r < n; ++r)
      partial[x * n + r] = load(inputs[x] + plan.unit_offset(r, part, dir, topology), plan.unit_bytes, plan.bf16);
  }
  const std::int64_t s = dir == 0 ? 1 : -1;
  const std::vector<std::size_t>& order = plan.orders[part];
  for (std::size_t t = 0; t < order.size(); ++t) {
    const std::size_t b = order[t];
    const std::int64_t l = topology.length(b);
    const auto stride = static_cast<std::int64_t>(plan.rank_stride[b]);
    const bool folded = folded_ring_axis(topology, b);
    const auto len = static_cast<std::uint32_t>(l);
    std::vector<std::vector<float>> next(n * n);
    for (std::uint64_t x = 0; x < n; ++x) {
      const std::int64_t own_digit = digit(plan, topology, x, b);
      // x's ring position; y(i) is the chip i positions on in direction s.
      const std::int64_t j = ring_position(static_cast<std::uint32_t>(own_digit), len, folded);
      for (std::uint64_t r = 0; r < n; ++r) {
        bool mine = true;
        for (std::size_t i = 0; i <= t; ++i)
          mine = mine && digit(plan, topology, r, order[i]) == digit(plan, topology, x, order[i]);
        if (!mine) continue;
        auto y = [&](std::int64_t i) {
          const auto at = static_cast<std::uint32_t>(((j + s * i) % l + l) % l);
          const std::int64_t c = ring_coordinate(at, len, folded);
          return static_cast<std::uint64_t>(static_cast<std::int64_t>(x) + (c - own_digit) * stride);
        };
        if (!plan.half_rings) {
          std::vector<float> acc = partial[y(1) * n + r];
          for (std::int64_t i = 2; i <= l; ++i) {
            const std::vector<float>& v = partial[y(i) * n + r];
            accumulate(acc, v, plan.bf16);
          }
          next[x * n + r] = std::move(acc);
          continue;
        }
        // Half rings: the long chain comes from x - s*h_l towards x, the short
        // one from x + s*h_s; x adds its own element to the short chain's sum
        // (or takes it alone), then the long chain's sum to that.
        const RingHops h = ring_hops(static_cast<std::uint32_t>(l), true);
        const auto hl = static_cast<std::int64_t>(h.long_hops);
        const auto hs = static_cast<std::int64_t>(h.short_hops);
        std::vector<float> own = partial[x * n + r];
        if (hs > 0) {
          std::vector<float> chain = partial[y(hs) * n + r];
          for (std::int64_t i = hs - 1; i >= 1; --i) accumulate(chain, partial[y(i) * n + r], plan.bf16);
          accumulate(chain, own, plan.bf16);
          own = std::move(chain);
        }
        std::vector<float> acc = partial[y(-hl) * n + r];
        for (std::int64_t i = hl - 1; i >= 1; --i) accumulate(acc, partial[y(-i) * n + r], plan.bf16);
        accumulate(acc, own, plan.bf16);
        next[x * n + r] = std::move(acc);
      }
    }
    partial = std::move(next);
  }
  return partial;
}

}  // namespace

std::vector<std::vector<std::uint8_t>> collective_reference(const CollectiveSpec& spec, const ici::Topology& topology,
                                                            const std::vector<std::vector<std::uint8_t>>& inputs) {
  const CollectivePlan plan = plan_collective(spec, topology);
  const CollectiveShapes shapes = collective_shapes(spec, topology);
  if (inputs.size() != topology.chip_count()) {
    throw std::invalid_argument(
        fmt::format("collective reference: {} inputs for {} chips", inputs.size(), topology.chip_count()));
  }
  for (std::size_t c = 0; c < inputs.size(); ++c) {
    if (inputs[c].size() != shapes.input_bytes) {
      throw std::invalid_argument(fmt::format("collective reference: input of chip {} has {} bytes, expected {}", c,
                                              inputs[c].size(), shapes.input_bytes));
    }
  }
  // Data movement (all-gather, all-to-all, a group of one chip) is exact
  // whatever the algorithm: only reductions have an algorithm's own order.
  if (!plan.reduces() || plan.axes.empty()) return ring_family_reference(plan, topology, inputs);
  return collective_algorithm(spec.algorithm).reference(plan, topology, inputs);
}

std::vector<std::vector<std::uint8_t>> ring_family_reference(const CollectivePlan& plan, const ici::Topology& topology,
                                                             const std::vector<std::vector<std::uint8_t>>& inputs) {
  CollectiveShapes shapes;
  switch (plan.op) {
    case Op::kAllGather:
      shapes.output_bytes = plan.bytes;
      break;
    case Op::kReduceScatter:
    case Op::kAllToAll:
      shapes.output_bytes = plan.chunk_bytes;
      break;
    case Op::kAllReduce:
      shapes.output_bytes = plan.bytes;
      break;
  }
  std::vector<std::vector<std::uint8_t>> outputs(inputs.size(), std::vector<std::uint8_t>(shapes.output_bytes));
  const std::uint64_t n = plan.group_size;
  const std::uint64_t q = plan.chunk_bytes;
  for (std::uint32_t id = 0; id < topology.chip_count(); ++id) {
    const ici::Coords base = topology.coords(ChipId(id));
    bool leader = true;
    for (std::size_t a : plan.axes) leader = leader && base[a] == 0;
    if (!leader) continue;
    const std::vector<ChipId> members = group_members(plan, topology, base);
    auto in = [&](std::uint64_t rank) { return inputs[members[rank].value()].data(); };
    auto out = [&](std::uint64_t rank) { return outputs[members[rank].value()].data(); };
    if (plan.axes.empty()) {
      std::memcpy(out(0), in(0), shapes.output_bytes);
      continue;
    }
    switch (plan.op) {
      case Op::kAllGather:
        for (std::uint64_t x = 0; x < n; ++x) {
          for (std::uint64_t r = 0; r < n; ++r) std::memcpy(out(x) + r * q, in(r), q);
        }
        break;
      case Op::kAllToAll:
        for (std::uint64_t i = 0; i < n; ++i) {
          for (std::uint64_t j = 0; j < n; ++j) {
            std::memcpy(out(j) + i * plan.unit_bytes, in(i) + j * plan.unit_bytes, plan.unit_bytes);
          }
        }
        break;
      case Op::kReduceScatter:
      case Op::kAllReduce: {
        std::vector<const std::uint8_t*> group_inputs;
        for (std::uint64_t x = 0; x < n; ++x) group_inputs.push_back(in(x));
        for (std::size_t p = 0; p < plan.parts; ++p) {
          for (std::size_t d = 0; d < plan.directions; ++d) {
            const auto partial = reduce_stream(plan, topology, group_inputs, p, d);
            for (std::uint64_t x = 0; x < n; ++x) {
              if (plan.op == Op::kReduceScatter) {
                store(partial[x * n + x], out(x) + (p * plan.directions + d) * plan.unit_bytes, plan.bf16);
              } else {
                for (std::uint64_t r = 0; r < n; ++r)
                  store(partial[r * n + r], out(x) + plan.unit_offset(r, p, d, topology), plan.bf16);
              }
            }
          }
        }
        break;
      }
    }
  }
  return outputs;
}

}  // namespace tpuemu::programs
