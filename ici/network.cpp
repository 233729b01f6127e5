#include "ici/network.hpp"

#include <algorithm>
#include <stdexcept>

namespace tpuemu::ici {

Network::Network(const Topology& topology, const RoutingPolicy& routing, Config config)
    : topology_(topology), routing_(routing), config_(config), links_(std::size_t{topology.chip_count()} * 6) {
  if (!(config.bytes_per_cycle > 0)) throw std::invalid_argument("ICI link bandwidth must be positive");
  if (config.packet_bytes == 0) throw std::invalid_argument("ICI packet size must be positive");
  if (config.hop_latency_cycles < 0) throw std::invalid_argument("ICI hop latency must not be negative");
}

std::uint32_t Network::link_index(const Link& link) const {
  return link.from.value() * 6 + link.axis * 2U + (link.direction > 0 ? 1U : 0U);
}

const std::vector<std::uint32_t>& Network::route(ChipId from, ChipId to) {
  if (recent_routes_.empty()) recent_routes_.resize(topology_.chip_count());
  std::array<RecentRoute, 2>& recent = recent_routes_[from.value()];
  if (recent[0].to == to.value()) return *recent[0].route;
  if (recent[1].to == to.value()) {
    std::swap(recent[0], recent[1]);
    return *recent[0].route;
  }
  const std::uint64_t key = std::uint64_t{from.value()} << 32 | to.value();
  auto it = routes_.find(key);
  if (it == routes_.end()) {
    std::vector<std::uint32_t> indices;
    for (const Link& l : routing_.route(topology_, from, to)) indices.push_back(link_index(l));
    it = routes_.emplace(key, std::move(indices)).first;
  }
  // Map values stay where they are on rehash (node-based container).
  recent[1] = recent[0];
  recent[0] = RecentRoute{to.value(), &it->second};
  return it->second;
}

void Network::push(double time, TransferId transfer, std::uint32_t packet, std::uint16_t hop, bool sent) {
  events_.push(time, Event{transfer, packet, hop, sent});
}

std::uint64_t Network::packet_size(const Transfer& t, std::uint32_t packet) const {
  const std::uint64_t offset = std::uint64_t{packet} * config_.packet_bytes;
  return std::min<std::uint64_t>(config_.packet_bytes, t.bytes - offset);
}

Network::TransferId Network::send(ChipId from, ChipId to, std::uint64_t bytes, double start) {
  if (bytes == 0) throw std::invalid_argument("an ICI transfer of 0 bytes");
  if (!topology_.contains(from) || !topology_.contains(to))
    throw std::out_of_range("ICI transfer to or from a chip outside the pod");
  start = std::max(start, now_);
  const TransferId id = next_id_++;
  Transfer t;
  t.route = &route(from, to);
  t.bytes = bytes;
  t.packets = static_cast<std::uint32_t>((bytes + config_.packet_bytes - 1) / config_.packet_bytes);
  if (t.route->empty()) {
    const double done = start + static_cast<double>(bytes) / config_.bytes_per_cycle;
    push(done, id, 0, 0, true);
    t.packets = 1;
    push(done, id, 0, 0, false);  // hop 0 == route size: arrival
  } else {
    push(start, id, 0, 0, false);
  }
  transfers_.emplace_back(t);
  ++in_flight_;
  return id;
}

std::optional<double> Network::next_event_time() const {
  if (events_.empty()) return std::nullopt;
  return events_.top_time();
}

void Network::advance_to(double time, std::vector<Completion>& completions) {
  while (!events_.empty() && events_.top_time() <= time) {
    const double at = events_.top_time();
    const Event e = events_.top();
    events_.pop();
    ++events_processed_;
    now_ = at;
    std::optional<Transfer>& slot = transfers_[e.transfer - first_id_];
    Transfer& t = *slot;
    if (e.sent) {
      completions.push_back({e.transfer, EventKind::kSent, at});
      continue;
    }
    if (e.hop == t.route->size()) {  // the last packet reached the destination chip
      completions.push_back({e.transfer, EventKind::kArrived, at});
      slot.reset();
      --in_flight_;
      while (!transfers_.empty() && !transfers_.front()) {
        transfers_.pop_front();
        ++first_id_;
      }
      continue;
    }
    const std::uint32_t link_id = (*t.route)[e.hop];
    LinkState& link = links_[link_id];
    const std::uint64_t size = packet_size(t, e.packet);
    const double start = std::max(at, link.busy_until);
    const double left = start + static_cast<double>(size) / config_.bytes_per_cycle;
    link.busy_until = left;
    link.busy += left - start;
    link.bytes += size;
    link.packets += 1;
    if (on_packet) {
      on_packet(ChipId(link_id / 6), static_cast<std::uint8_t>(link_id % 6 / 2), link_id % 2 == 1 ? 1 : -1, start, left,
                size);
    }
    if (e.hop == 0) {  // the source paces its packets onto the first link
      if (e.packet + 1 < t.packets) {
        push(left, e.transfer, e.packet + 1, 0, false);
      } else {
        push(left, e.transfer, e.packet, 0, true);
      }
    }
    // Packets of a transfer leave every link in order, so only the last one's
    // arrival at the destination chip does anything: the others are not
    // queued (dropping events without effects keeps every other event's order).
    const bool to_destination = e.hop + 1U == t.route->size();
    if (!to_destination || e.packet + 1 == t.packets) {
      push(left + config_.hop_latency_cycles, e.transfer, e.packet, static_cast<std::uint16_t>(e.hop + 1), false);
    }
  }
  now_ = std::max(now_, std::min(time, events_.empty() ? time : events_.top_time()));
}

std::vector<Network::LinkStats> Network::used_links() const {
  std::vector<LinkStats> out;
  for (std::uint32_t chip = 0; chip < topology_.chip_count(); ++chip) {
    for (std::uint8_t axis = 0; axis < kMaxAxes; ++axis) {
      for (int dir : {-1, 1}) {
        const LinkState& s = links_[chip * 6 + axis * 2U + (dir > 0 ? 1U : 0U)];
        if (s.packets == 0) continue;
        const auto to = topology_.neighbour(ChipId(chip), axis, dir);
        out.push_back({Link{ChipId(chip), to.value_or(ChipId(chip)), axis, static_cast<std::int8_t>(dir)}, s.busy,
                       s.bytes, s.packets});
      }
    }
  }
  return out;
}

}  // namespace tpuemu::ici
