#include "chip/in_network.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "chip/fault.hpp"
#include "common/numerics.hpp"

namespace tpuemu::chip {

namespace {

// Switch legs go on lanes of the switch's home chip past every core's.
constexpr std::uint32_t kSwitchLaneBase = 64;

// acc[e] = add(acc[e], x[e]) over little-endian f32 or bf16 elements.
void accumulate(std::vector<float>& acc, const std::vector<std::uint8_t>& x, bool bf16) {
  for (std::size_t e = 0; e < acc.size(); ++e) {
    if (bf16) {
      std::uint16_t bits = 0;
      std::memcpy(&bits, x.data() + 2 * e, 2);
      acc[e] = bf16_round(acc[e] + bf16_bits_to_f32(bits));
    } else {
      float v = 0;
      std::memcpy(&v, x.data() + 4 * e, 4);
      acc[e] += v;
    }
  }
}

}  // namespace

void InNetworkCollectives::send(RemoteSend m, bool partitioned) {
  const char* what = m.kind == RemoteSend::Kind::kNvlsReduce ? "dma.nvls.reduce" : "dma.nvls.multicast";
  const ici::Fabric& fabric = network_.fabric();
  const ici::Fabric::Domain* domain = fabric.switched_domain(ChipId(m.src_chip));
  if (domain == nullptr) {
    throw ProgramFault(fmt::format("{} needs a switched fabric (node:N, nvl:N, fat-tree:NODESxN); this pod is a {}",
                                   what, fabric.kind()));
  }
  if (partitioned) {
    throw ProgramFault(fmt::format("{}: in-network ops do not yet run on a pod split over MPI ranks", what));
  }
  const auto rank_of = [&](std::uint32_t chip) -> std::uint32_t {
    const auto it = std::find(domain->chips.begin(), domain->chips.end(), chip);
    return it == domain->chips.end() ? UINT32_MAX : static_cast<std::uint32_t>(it - domain->chips.begin());
  };
  const std::uint32_t n = static_cast<std::uint32_t>(domain->chips.size());
  const std::uint32_t src_rank = rank_of(m.src_chip);
  const double start = static_cast<double>(m.start_cycle);
  if (m.kind == RemoteSend::Kind::kNvlsMulticast) {
    const std::uint64_t id = next_op_++;
    Operation& op = ops_[id];
    op.domain = domain;
    op.bytes = m.bytes;
    op.dst_address = m.dst_address;
    op.dst_flag = m.dst_flag;
    op.dst_credit = m.dst_credit;
    op.parts = network_.split_by_weight(m.bytes, domain->weights);
    op.sent_parts.assign(1, 0);
    op.at_switch.assign(op.parts.size(), 0);
    op.delivered.assign(n, 0);
    op.senders.push_back(std::move(m));
    climb(id, 0, src_rank, start);
    return;
  }
  const std::uint32_t dst_rank = rank_of(m.dst_chip);
  if (dst_rank == UINT32_MAX) {
    throw ProgramFault(fmt::format("dma.nvls.reduce: chip {} is not in chip {}'s switched domain (chips {}..{})",
                                   m.dst_chip, m.src_chip, domain->chips.front(), domain->chips.back()));
  }
  const std::uint64_t round = reduces_issued_[m.src_chip]++;
  const auto key = std::pair{domain->chips.front(), round};
  auto found = rounds_.find(key);
  if (found == rounds_.end()) {
    const std::uint64_t id = next_op_++;
    Operation& op = ops_[id];
    op.reduce = true;
    op.domain = domain;
    op.dst_rank = dst_rank;
    op.bytes = m.bytes;
    op.bf16 = m.bf16;
    op.dst_address = m.dst_address;
    op.dst_flag = m.dst_flag;
    op.dst_credit = m.dst_credit;
    op.parts = network_.split_by_weight(m.bytes, domain->weights);
    op.senders.resize(n);
    op.joined.assign(n, false);
    op.sent_parts.assign(n, 0);
    op.at_switch.assign(op.parts.size(), 0);
    op.delivered.assign(n, 0);
    op.first_chip = m.src_chip;
    found = rounds_.emplace(key, id).first;
  }
  const std::uint64_t id = found->second;
  Operation& op = ops_.at(id);
  if (m.dst_chip != domain->chips[op.dst_rank] || m.bytes != op.bytes || m.bf16 != op.bf16 ||
      m.dst_address != op.dst_address || m.dst_flag != op.dst_flag) {
    throw ProgramFault(fmt::format(
        "dma.nvls.reduce round {} of the domain of chips {}..{}: chip {} reduces {} bytes ({}) to chip {} at 0x{:x} "
        "(flag {}), but chip {} named {} bytes ({}) to chip {} at 0x{:x} (flag {})",
        round, domain->chips.front(), domain->chips.back(), m.src_chip, m.bytes, m.bf16 ? "bf16" : "f32", m.dst_chip,
        m.dst_address, m.dst_flag, op.first_chip, op.bytes, op.bf16 ? "bf16" : "f32", domain->chips[op.dst_rank],
        op.dst_address, op.dst_flag));
  }
  op.joined[src_rank] = true;
  ++op.joined_count;
  if (op.joined_count == n) rounds_.erase(found);
  op.senders[src_rank] = std::move(m);
  climb(id, src_rank, src_rank, start);
}

void InNetworkCollectives::climb(std::uint64_t id, std::uint32_t slot, std::uint32_t rank, double start) {
  Operation& op = ops_.at(id);
  const RemoteSend& m = op.senders[slot];
  for (std::uint32_t p = 0; p < op.parts.size(); ++p) {
    const auto [sw, bytes] = op.parts[p];
    const auto key = network_.send_on_link(op.domain->up[sw][rank], bytes, start, ChipId(m.src_chip), m.src_core);
    legs_.emplace(key, Leg{id, p, slot, true});
  }
}

bool InNetworkCollectives::handle(const ici::Network::Completion& c) {
  const auto it = legs_.find(c.transfer);
  if (it == legs_.end()) return false;
  const Leg leg = it->second;
  Operation& op = ops_.at(leg.op);
  const std::uint32_t n = static_cast<std::uint32_t>(op.domain->chips.size());
  if (c.kind == ici::Network::EventKind::kSent) {  // its arrival is still to come
    if (leg.up && ++op.sent_parts[leg.slot] == op.parts.size() && on_sent) on_sent(op.senders[leg.slot], c.time);
    return true;
  }
  legs_.erase(it);
  if (!leg.up) {
    if (++op.delivered[leg.slot] == op.parts.size()) finish(leg.op, leg.slot, c.time);
    return true;
  }
  // A part reached its switch: with every contribution there (a multicast: at once), it goes down.
  const std::uint16_t sw = op.parts[leg.part].first;
  const std::uint64_t bytes = op.parts[leg.part].second;
  if (++op.at_switch[leg.part] < (op.reduce ? n : 1U)) return true;
  const ici::Fabric& fabric = network_.fabric();
  const ChipId lane_chip(fabric.home_chip(op.domain->switches[sw]));
  const std::uint32_t lane = kSwitchLaneBase + sw;
  if (op.reduce) {
    const auto key = network_.send_on_link(op.domain->down[sw][op.dst_rank], bytes, c.time, lane_chip, lane);
    legs_.emplace(key, Leg{leg.op, leg.part, op.dst_rank, false});
  } else {
    for (std::uint32_t r = 0; r < n; ++r) {
      const auto key = network_.send_on_link(op.domain->down[sw][r], bytes, c.time, lane_chip, lane);
      legs_.emplace(key, Leg{leg.op, leg.part, r, false});
    }
  }
  return true;
}

void InNetworkCollectives::finish(std::uint64_t id, std::uint32_t rank, double time) {
  Operation& op = ops_.at(id);
  const std::uint32_t chip = op.domain->chips[rank];
  std::vector<std::uint8_t> data;
  if (op.reduce) {
    if (!op.senders[0].payload.empty()) {
      const std::size_t element = op.bf16 ? 2 : 4;
      std::vector<float> acc(op.bytes / element, 0.0F);
      // acc = x_0, then add x_1.. (x_0 + 0 would turn -0 into +0: load it instead).
      for (std::size_t e = 0; e < acc.size(); ++e) {
        if (op.bf16) {
          std::uint16_t bits = 0;
          std::memcpy(&bits, op.senders[0].payload.data() + 2 * e, 2);
          acc[e] = bf16_bits_to_f32(bits);
        } else {
          std::memcpy(&acc[e], op.senders[0].payload.data() + 4 * e, 4);
        }
      }
      for (std::size_t r = 1; r < op.senders.size(); ++r) accumulate(acc, op.senders[r].payload, op.bf16);
      data.resize(op.bytes);
      for (std::size_t e = 0; e < acc.size(); ++e) {
        if (op.bf16) {
          const std::uint16_t bits = f32_to_bf16_bits(acc[e]);
          std::memcpy(data.data() + 2 * e, &bits, 2);
        } else {
          std::memcpy(data.data() + 4 * e, &acc[e], 4);
        }
      }
    }
    if (on_delivered) on_delivered(chip, op.dst_address, op.bytes, data, op.dst_flag, op.dst_credit, time);
    ops_.erase(id);
    return;
  }
  if (on_delivered)
    on_delivered(chip, op.dst_address, op.bytes, op.senders[0].payload, op.dst_flag, op.dst_credit, time);
  if (++op.done == op.domain->chips.size()) ops_.erase(id);
}

}  // namespace tpuemu::chip
