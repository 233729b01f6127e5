#include "ici/network.hpp"

#include <algorithm>
#include <stdexcept>

// The per-event steps, inlined into the event loop (advance) that calls them.
#define TPUEMU_HOT_INLINE [[gnu::always_inline]] inline

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

TPUEMU_HOT_INLINE void Network::push(double time, TransferId transfer, std::uint32_t packet, std::uint16_t hop,
                                     bool sent) {
  events_.push(time, Event{transfer, packet, hop, sent});
  if (!owned_.empty()) ++this->transfer(transfer).pending;  // one network: the arrival is always last
}

TPUEMU_HOT_INLINE void Network::forward(double time, TransferId id, std::uint32_t packet, std::uint16_t hop) {
  if (!owned_.empty()) {
    const Transfer& t = transfer(id);
    const std::uint32_t chip = hop == t.route->size() ? t.to : (*t.route)[hop] / 6;
    if (!owned_[chip]) {
      outbox_.push_back(Crossing{time, t.key, t.from, t.to, t.bytes, packet, hop});
      return;
    }
  }
  push(time, id, packet, hop, false);
}

std::uint64_t Network::packet_size(const Transfer& t, std::uint32_t packet) const {
  const std::uint64_t offset = std::uint64_t{packet} * config_.packet_bytes;
  return std::min<std::uint64_t>(config_.packet_bytes, t.bytes - offset);
}

Network::TransferId Network::add_transfer(const Transfer& t) {
  const TransferId id = next_id_++;
  transfers_.emplace_back(t);
  ++in_flight_;
  if (!owned_.empty()) by_key_.emplace(t.key, id);
  return id;
}

void Network::retire(TransferId id) {
  std::optional<Transfer>& slot = transfers_[id - first_id_];
  if (!owned_.empty()) by_key_.erase(slot->key);
  slot.reset();
  --in_flight_;
  while (!transfers_.empty() && !transfers_.front()) {
    transfers_.pop_front();
    ++first_id_;
  }
}

Network::TransferKey Network::send(ChipId from, ChipId to, std::uint64_t bytes, double start, std::uint32_t lane) {
  if (bytes == 0) throw std::invalid_argument("an ICI transfer of 0 bytes");
  if (!topology_.contains(from) || !topology_.contains(to))
    throw std::out_of_range("ICI transfer to or from a chip outside the pod");
  if (!owns(from)) throw std::logic_error("an ICI transfer from a chip this partition does not own");
  start = std::max(start, now_);
  if (lane_sends_.empty()) lane_sends_.resize(topology_.chip_count());
  std::vector<std::uint64_t>& lanes = lane_sends_[from.value()];
  if (lanes.size() <= lane) lanes.resize(std::size_t{lane} + 1);
  Transfer t;
  t.route = &route(from, to);
  t.bytes = bytes;
  t.packets = static_cast<std::uint32_t>((bytes + config_.packet_bytes - 1) / config_.packet_bytes);
  t.from = from.value();
  t.to = to.value();
  t.key = TransferKey{from.value(), lane, lanes[lane]++};
  const bool local = t.route->empty();
  if (local) t.packets = 1;
  const TransferId id = add_transfer(t);
  if (local) {
    const double done = start + static_cast<double>(bytes) / config_.bytes_per_cycle;
    push(done, id, 0, 0, true);
    push(done, id, 0, 0, false);  // hop 0 == route size: arrival
  } else {
    push(start, id, 0, 0, false);
  }
  return t.key;
}

std::optional<double> Network::next_event_time() const {
  if (events_.empty()) return std::nullopt;
  return events_.top_time();
}

void Network::set_owned_chips(std::vector<bool> owned) {
  if (owned.size() != topology_.chip_count())
    throw std::invalid_argument("set_owned_chips: one entry per chip of the topology");
  if (next_id_ != 0) throw std::logic_error("set_owned_chips after the first transfer");
  owned_ = std::move(owned);
  if (std::all_of(owned_.begin(), owned_.end(), [](bool b) { return b; })) owned_.clear();
}

ChipId Network::crossing_chip(const Crossing& c) {
  const auto& r = route(ChipId(c.from), ChipId(c.to));
  return ChipId(c.hop == r.size() ? c.to : r.at(c.hop) / 6);
}

void Network::inject(const Crossing& c) {
  if (c.time < now_) {
    throw std::logic_error("an ICI crossing arrived after its time had passed (partitions out of step)");
  }
  if (!owns(crossing_chip(c))) throw std::logic_error("an ICI crossing for a chip this partition does not own");
  TransferId id = 0;
  const auto known = by_key_.find(c.key);
  if (known != by_key_.end()) {
    id = known->second;
  } else {
    Transfer t;
    t.route = &route(ChipId(c.from), ChipId(c.to));
    t.bytes = c.bytes;
    t.packets = static_cast<std::uint32_t>((c.bytes + config_.packet_bytes - 1) / config_.packet_bytes);
    t.from = c.from;
    t.to = c.to;
    t.key = c.key;
    id = add_transfer(t);
  }
  push(c.time, id, c.packet, c.hop, false);
}

TPUEMU_HOT_INLINE void Network::process(double at, const Event& e, std::vector<Completion>& completions) {
  ++events_processed_;
  Transfer& t = transfer(e.transfer);
  // One network: a transfer's arrival is its last event (its kSent marker
  // comes first). Partitions count what is queued here (pending).
  const bool partitioned = !owned_.empty();
  const bool last_event = partitioned && --t.pending == 0;
  if (e.sent) {
    completions.push_back({t.key, EventKind::kSent, at});
    if (last_event) retire(e.transfer);
    return;
  }
  if (e.hop == t.route->size()) {  // the last packet reached the destination chip
    completions.push_back({t.key, EventKind::kArrived, at});
    if (!partitioned || last_event) retire(e.transfer);
    return;
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
    forward(left + config_.hop_latency_cycles, e.transfer, e.packet, static_cast<std::uint16_t>(e.hop + 1));
  }
  if (partitioned && t.pending == 0) retire(e.transfer);  // its next event is another partition's
}

void Network::advance(double time, bool inclusive, std::vector<Completion>& completions) {
  const auto due = [&](double t) { return inclusive ? t <= time : t < time; };
  while (!events_.empty() && due(events_.top_time())) {
    const double at = events_.top_time();
    now_ = at;
    const Event first = events_.top();
    events_.pop();
    if (events_.empty() || events_.top_time() != at) {  // the common case: alone at its time
      process(at, first, completions);
      continue;
    }
    // Several events at this time: in key order (a transfer is sent before
    // it arrives: kSent markers sort before packets of the same packet index).
    batch_.clear();
    const auto add = [this](const Event& e) {
      const TransferKey& k = transfer(e.transfer).key;
      batch_.push_back({std::uint64_t{k.chip} << 32 | k.lane, k.sequence,
                        std::uint64_t{e.packet} << 17 | std::uint64_t{e.hop} << 1 | (e.sent ? 0U : 1U), e});
    };
    add(first);
    while (!events_.empty() && events_.top_time() == at) {
      add(events_.top());
      events_.pop();
    }
    if (!std::is_sorted(batch_.begin(), batch_.end())) std::sort(batch_.begin(), batch_.end());
    // Processing an event queues only later ones (a packet holds a link for
    // a positive time), so the batch is every event of this time.
    for (const Ordered& o : batch_) process(at, o.event, completions);
  }
  if (inclusive) now_ = std::max(now_, std::min(time, events_.empty() ? time : events_.top_time()));
}

void Network::advance_to(double time, std::vector<Completion>& completions) {
  advance(time, true, completions);
}

void Network::advance_before(double time, std::vector<Completion>& completions) {
  advance(time, false, completions);
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
