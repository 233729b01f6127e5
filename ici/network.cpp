#include "ici/network.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

// The per-event steps, inlined into the event loop (advance) that calls them.
#define TPUEMU_HOT_INLINE [[gnu::always_inline]] inline

namespace tpuemu::ici {

Network::Network(std::unique_ptr<const Fabric> fabric, double clock_hz, std::uint64_t packet_bytes)
    : fabric_(std::move(fabric)), packet_bytes_(packet_bytes) {
  if (!(clock_hz > 0)) throw std::invalid_argument("the network's clock must be positive");
  if (packet_bytes == 0) throw std::invalid_argument("ICI packet size must be positive");
  const auto links = fabric_->links();
  links_.resize(links.size());
  lookahead_ = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < links.size(); ++i) {
    const Fabric::LinkInfo& l = links[i];
    LinkState& state = links_[i];
    state.bytes_per_cycle = l.bytes_per_second / clock_hz;
    state.latency_cycles = l.latency_s * clock_hz;
    state.packet_cycles = static_cast<double>(packet_bytes) / state.bytes_per_cycle;
    state.home_chip = fabric_->home_chip(l.from);
    if (!l.exists) continue;
    if (!(state.bytes_per_cycle > 0)) throw std::invalid_argument("ICI link bandwidth must be positive");
    if (state.latency_cycles < 0) throw std::invalid_argument("ICI hop latency must not be negative");
    lookahead_ = std::min(lookahead_, state.latency_cycles);
  }
  if (links.empty()) lookahead_ = 0;
  local_bytes_per_cycle_ = links.empty() ? 1.0 : links_[0].bytes_per_cycle;
}

Network::Network(const Topology& topology, const RoutingPolicy& routing, Config config)
    : Network(
          [&] {
            if (!(config.bytes_per_cycle > 0)) throw std::invalid_argument("ICI link bandwidth must be positive");
            if (config.hop_latency_cycles < 0) throw std::invalid_argument("ICI hop latency must not be negative");
            return make_torus_fabric(topology, routing, config.bytes_per_cycle, config.hop_latency_cycles);
          }(),
          1.0, config.packet_bytes) {}

const Network::RouteSet& Network::route(ChipId from, ChipId to) {
  if (recent_routes_.empty()) recent_routes_.resize(fabric_->chip_count());
  std::array<RecentRoute, 2>& recent = recent_routes_[from.value()];
  if (recent[0].to == to.value()) return *recent[0].route;
  if (recent[1].to == to.value()) {
    std::swap(recent[0], recent[1]);
    return *recent[0].route;
  }
  const std::uint64_t key = std::uint64_t{from.value()} << 32 | to.value();
  auto it = routes_.find(key);
  if (it == routes_.end()) {
    RouteSet set;
    if (from != to) {
      std::vector<Fabric::Path> paths;
      fabric_->paths(from, to, paths);
      for (Fabric::Path& p : paths) {
        set.paths.push_back(std::move(p.links));
        set.weights.push_back(p.weight);
      }
    }
    if (set.paths.empty()) {  // a chip to itself: no link
      set.paths.emplace_back();
      set.weights.push_back(1);
    }
    it = routes_.emplace(key, std::move(set)).first;
  }
  // Map values stay where they are on rehash (node-based container).
  recent[1] = recent[0];
  recent[0] = RecentRoute{to.value(), &it->second};
  return it->second;
}

void Network::plan_parts(std::uint64_t bytes, const RouteSet& routes, std::vector<PartPlan>& out) const {
  out.clear();
  if (routes.paths.size() == 1) {
    out.push_back({0, bytes});
    return;
  }
  for (const auto& [path, part] : split_by_weight(bytes, routes.weights)) out.push_back({path, part});
}

std::vector<std::pair<std::uint16_t, std::uint64_t>> Network::split_by_weight(std::uint64_t bytes,
                                                                              const std::vector<std::uint32_t>& weights,
                                                                              std::uint64_t packet_bytes) {
  std::vector<std::pair<std::uint16_t, std::uint64_t>> out;
  const std::size_t n = weights.size();
  if (n == 1) {
    out.emplace_back(0, bytes);
    return out;
  }
  std::uint64_t total_weight = 0;
  for (std::uint32_t w : weights) total_weight += w;
  // The unit dealt: a packet, or for a transfer of fewer packets than paths,
  // an equal share of it per weight (rounded up to 32 bytes): the hardware
  // sprays a message over every link in small flits, so a short message
  // crosses all paths at once, not as one packet on one path.
  std::uint64_t unit = packet_bytes;
  if (bytes < packet_bytes * n) {
    unit = std::min<std::uint64_t>(packet_bytes, ((bytes + total_weight - 1) / total_weight + 31) / 32 * 32);
  }
  const std::uint64_t packets = (bytes + unit - 1) / unit;
  // Largest remainders: floor shares first, then one more packet to the paths
  // with the largest remainders (ties to the lower path).
  std::vector<std::uint64_t> share(n);
  std::vector<std::pair<std::uint64_t, std::size_t>> remainders(n);
  std::uint64_t dealt = 0;
  for (std::size_t p = 0; p < n; ++p) {
    // packets < 2^37 (sizes stay below 2^31 granules) and weights <= 4096: no overflow.
    const std::uint64_t scaled = packets * weights[p];
    share[p] = static_cast<std::uint64_t>(scaled / total_weight);
    remainders[p] = {static_cast<std::uint64_t>(scaled % total_weight), p};
    dealt += share[p];
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; dealt < packets; ++i, ++dealt) ++share[remainders[i].second];
  std::uint64_t left = bytes;
  for (std::size_t p = 0; p < n; ++p) {
    if (share[p] == 0) continue;
    const std::uint64_t part = std::min(left, share[p] * unit);
    out.emplace_back(static_cast<std::uint16_t>(p), part);
    left -= part;
  }
  // The short last packet sits in the last used part: the full packets went first.
  if (left != 0) throw std::logic_error("split_by_weight: bytes left over");
  return out;
}

Network::TransferKey Network::send_on_link(std::uint32_t link, std::uint64_t bytes, double start, ChipId lane_chip,
                                           std::uint32_t lane) {
  if (bytes == 0) throw std::invalid_argument("an ICI transfer of 0 bytes");
  if (link >= links_.size() || !fabric_->links()[link].exists) throw std::out_of_range("no such link");
  if (!owns(lane_chip)) throw std::logic_error("an ICI transfer from a chip this partition does not own");
  start = std::max(start, now_);
  if (single_links_.empty()) {
    single_links_.resize(links_.size());
    for (std::uint32_t l = 0; l < links_.size(); ++l) single_links_[l] = {l};
  }
  if (lane_sends_.empty()) lane_sends_.resize(fabric_->chip_count());
  std::vector<std::uint64_t>& lanes = lane_sends_[lane_chip.value()];
  if (lanes.size() <= lane) lanes.resize(std::size_t{lane} + 1);
  Transfer t;
  set_route(t, single_links_[link]);
  t.bytes = bytes;
  t.packets = static_cast<std::uint32_t>((bytes + packet_bytes_ - 1) / packet_bytes_);
  t.from = lane_chip.value();
  t.to = fabric_->home_chip(fabric_->links()[link].to);
  t.key = TransferKey{lane_chip.value(), lane, lanes[lane]++};
  push(start, add_transfer(t), 0, 0, EventType::kPacket);
  return t.key;
}

bool Network::group_done(const TransferKey& key, EventKind kind) {
  auto it = groups_.find(key);
  Group& g = it->second;
  std::uint32_t& left = kind == EventKind::kSent ? g.sent_left : g.arrived_left;
  const bool done = --left == 0;
  if (g.sent_left == 0 && g.arrived_left == 0) groups_.erase(it);
  return done;
}

TPUEMU_HOT_INLINE void Network::push(double time, TransferId transfer, std::uint32_t packet, std::uint16_t hop,
                                     EventType type) {
  events_.push(time, Event{transfer, packet, hop, type});
  if (!owned_.empty()) ++this->transfer(transfer).pending;  // one network: the arrival is always last
}

TPUEMU_HOT_INLINE void Network::forward(double time, TransferId id, std::uint32_t packet, std::uint16_t hop) {
  if (!owned_.empty()) {
    const Transfer& t = transfer(id);
    const std::uint32_t chip = hop == t.route_length ? t.to : links_[link_at(t, hop)].home_chip;
    if (!owned_[chip]) {
      outbox_.push_back(Crossing{time, t.key, t.from, t.to, t.bytes, packet, hop, t.part, t.parts, t.path});
      return;
    }
  }
  push(time, id, packet, hop, EventType::kPacket);
}

std::uint64_t Network::packet_size(std::uint64_t part_bytes, std::uint32_t packet) const {
  const std::uint64_t offset = std::uint64_t{packet} * packet_bytes_;
  return std::min<std::uint64_t>(packet_bytes_, part_bytes - offset);
}

Network::TransferId Network::add_transfer(const Transfer& t) {
  const TransferId id = next_id_++;
  transfers_.emplace_back(t);
  ++in_flight_;
  if (!owned_.empty()) by_key_.emplace(std::pair{t.key, t.part}, id);
  return id;
}

void Network::retire(TransferId id) {
  Transfer& slot = transfers_[id - first_id_];
  if (!owned_.empty()) by_key_.erase(std::pair{slot.key, slot.part});
  slot.live = false;
  --in_flight_;
  while (!transfers_.empty() && !transfers_.front().live) {
    transfers_.pop_front();
    ++first_id_;
  }
}

Network::TransferKey Network::send(ChipId from, ChipId to, std::uint64_t bytes, double start, std::uint32_t lane) {
  if (bytes == 0) throw std::invalid_argument("an ICI transfer of 0 bytes");
  if (!topology().contains(from) || !topology().contains(to))
    throw std::out_of_range("ICI transfer to or from a chip outside the pod");
  if (!owns(from)) throw std::logic_error("an ICI transfer from a chip this partition does not own");
  start = std::max(start, now_);
  if (lane_sends_.empty()) lane_sends_.resize(fabric_->chip_count());
  std::vector<std::uint64_t>& lanes = lane_sends_[from.value()];
  if (lanes.size() <= lane) lanes.resize(std::size_t{lane} + 1);
  const RouteSet& routes = route(from, to);
  const TransferKey key{from.value(), lane, lanes[lane]++};
  Transfer t;
  t.from = from.value();
  t.to = to.value();
  t.key = key;
  if (from == to) {
    set_route(t, routes.paths[0]);
    t.bytes = bytes;
    t.packets = 1;
    const TransferId id = add_transfer(t);
    const double done = start + static_cast<double>(bytes) / local_bytes_per_cycle_;
    push(done, id, 0, 0, EventType::kSent);
    push(done, id, 0, 0, EventType::kPacket);  // hop 0 == route size: arrival
    return key;
  }
  plan_parts(bytes, routes, plan_);
  t.parts = static_cast<std::uint16_t>(plan_.size());
  if (plan_.size() > 1) groups_[key] = Group{t.parts, owns(to) ? t.parts : 0U};
  for (std::size_t p = 0; p < plan_.size(); ++p) {
    t.part = static_cast<std::uint16_t>(p);
    t.path = plan_[p].path;
    set_route(t, routes.paths[plan_[p].path]);
    t.bytes = plan_[p].bytes;
    t.packets = static_cast<std::uint32_t>((t.bytes + packet_bytes_ - 1) / packet_bytes_);
    push(start, add_transfer(t), 0, 0, EventType::kPacket);
  }
  return key;
}

std::optional<double> Network::next_event_time() const {
  if (events_.empty()) return std::nullopt;
  return events_.top_time();
}

void Network::set_owned_chips(std::vector<bool> owned) {
  if (owned.size() != fabric_->chip_count())
    throw std::invalid_argument("set_owned_chips: one entry per chip of the topology");
  if (next_id_ != 0) throw std::logic_error("set_owned_chips after the first transfer");
  owned_ = std::move(owned);
  if (std::all_of(owned_.begin(), owned_.end(), [](bool b) { return b; })) owned_.clear();
}

ChipId Network::crossing_chip(const Crossing& c) {
  const auto& r = route(ChipId(c.from), ChipId(c.to)).paths.at(c.path);
  return ChipId(c.hop == r.size() ? c.to : links_.at(r.at(c.hop)).home_chip);
}

void Network::inject(const Crossing& c) {
  if (c.time < now_) {
    throw std::logic_error("an ICI crossing arrived after its time had passed (partitions out of step)");
  }
  if (!owns(crossing_chip(c))) throw std::logic_error("an ICI crossing for a chip this partition does not own");
  TransferId id = 0;
  const auto known = by_key_.find(std::pair{c.key, c.part});
  if (known != by_key_.end()) {
    id = known->second;
  } else {
    Transfer t;
    set_route(t, route(ChipId(c.from), ChipId(c.to)).paths.at(c.path));
    t.bytes = c.bytes;
    t.packets = static_cast<std::uint32_t>((c.bytes + packet_bytes_ - 1) / packet_bytes_);
    t.from = c.from;
    t.to = c.to;
    t.part = c.part;
    t.parts = c.parts;
    t.path = c.path;
    t.key = c.key;
    id = add_transfer(t);
    // The destination's partition counts the parts that arrive (their sends
    // are counted where they started).
    if (c.parts > 1 && owns(ChipId(c.to)) && !owns(ChipId(c.from)) && !groups_.contains(c.key)) {
      groups_[c.key] = Group{0, c.parts};
    }
  }
  push(c.time, id, c.packet, c.hop, EventType::kPacket);
}

TPUEMU_HOT_INLINE double Network::serve_packet(std::uint32_t link_id, double at, std::uint64_t size) {
  LinkState& link = links_[link_id];
  const double start = std::max(at, link.busy_until);
  const double left = start + packet_time(link, size);
  link.busy_until = left;
  link.busy += left - start;
  link.bytes += size;
  link.packets += 1;
  if (on_packet) on_packet(link_id, start, left, size);
  return left;
}

void Network::serve_train_packet(std::uint32_t link_id, std::size_t index) {
  LinkState& link = links_[link_id];
  Train& train = link.trains[index];
  const double left = serve_packet(link_id, train.arrival, packet_size(train.bytes, train.next));
  if (train.next + 1 < train.packets) {
    train.next += 1;
    train.arrival = left;
    return;
  }
  // The last packet: what process() does for it at hop 0 of a single-hop part.
  const TransferId id = train.transfer;
  const std::uint32_t packet = train.next;
  link.trains.erase(link.trains.begin() + static_cast<std::ptrdiff_t>(index));
  push(left, id, packet, 0, EventType::kSent);
  forward(left + link.latency_cycles, id, packet, 1);
  if (!owned_.empty() && --transfer(id).pending == 0) retire(id);  // the train's hold on the record
}

std::size_t Network::first_train(const std::vector<Train>& trains) {
  std::size_t first = 0;
  for (std::size_t i = 1; i < trains.size(); ++i) {
    if (trains[i].arrival < trains[first].arrival ||
        (trains[i].arrival == trains[first].arrival && trains[i].next_key() < trains[first].next_key())) {
      first = i;
    }
  }
  return first;
}

void Network::serve_trains(std::uint32_t link_id, double time, const OrderKey& key, bool inclusive) {
  std::vector<Train>& trains = links_[link_id].trains;
  while (!trains.empty()) {
    const std::size_t first = first_train(trains);
    const Train& t = trains[first];
    if (t.arrival > time) break;
    if (t.arrival == time) {
      const auto order = t.next_key() <=> key;
      if (order > 0 || (order == 0 && !inclusive)) break;
    }
    serve_train_packet(link_id, first);
  }
}

void Network::queue_wake(std::uint32_t link_id) {
  LinkState& link = links_[link_id];
  if (link.trains.empty()) {
    link.wake_queued = false;
    return;
  }
  // The link's future if nothing else reaches it: the first train packet
  // that is a last one (serve_train_packet's arithmetic on copies).
  std::vector<Train>& trains = train_scratch_;
  trains.assign(link.trains.begin(), link.trains.end());
  double busy_until = link.busy_until;
  for (;;) {
    const std::size_t first = first_train(trains);
    Train& t = trains[first];
    if (t.next + 1 == t.packets) {
      if (link.wake_queued && link.wake_time == t.arrival && link.wake_transfer == t.transfer &&
          link.wake_packet == t.next) {
        return;  // already queued
      }
      link.wake_queued = true;
      link.wake_time = t.arrival;
      link.wake_transfer = t.transfer;
      link.wake_packet = t.next;
      push(t.arrival, t.transfer, t.next, 0, EventType::kWake);
      return;
    }
    busy_until = std::max(t.arrival, busy_until) + packet_time(link, packet_size(t.bytes, t.next));
    t.next += 1;
    t.arrival = busy_until;
  }
}

TPUEMU_HOT_INLINE void Network::process(double at, const Event& e, std::vector<Completion>& completions) {
  ++events_processed_;
  Transfer& t = transfer(e.transfer);
  // One network: a transfer's arrival is its last event (its kSent marker
  // comes first). Partitions count what is queued here (pending).
  const bool partitioned = !owned_.empty();
  const bool last_event = partitioned && --t.pending == 0;
  if (e.type == EventType::kWake) {
    const std::uint32_t link_id = t.first_link;
    LinkState& link = links_[link_id];
    // Every train packet up to this event's place in the order is safe to
    // serve (whatever reaches the link later comes later in that order),
    // also when the wake is no longer the link's first output (its trains
    // were delayed, or a later plan replaced it). Only the wake queued last
    // plans the next one.
    serve_trains(link_id, at, order_key(t, e.packet, 0, EventType::kPacket), true);
    if (link.wake_queued && link.wake_time == at && link.wake_transfer == e.transfer && link.wake_packet == e.packet) {
      link.wake_queued = false;
      queue_wake(link_id);
    }
    if (last_event) retire(e.transfer);
    return;
  }
  if (e.type == EventType::kSent) {
    if (t.parts == 1 || group_done(t.key, EventKind::kSent)) completions.push_back({t.key, EventKind::kSent, at});
    if (last_event) retire(e.transfer);
    return;
  }
  if (e.hop == t.route_length) {  // the last packet reached the destination chip
    if (t.parts == 1 || group_done(t.key, EventKind::kArrived)) {
      completions.push_back({t.key, EventKind::kArrived, at});
    }
    if (!partitioned || last_event) retire(e.transfer);
    return;
  }
  const std::uint32_t link_id = link_at(t, e.hop);
  LinkState& link = links_[link_id];
  if (!link.trains.empty()) serve_trains(link_id, at, order_key(t, e.packet, e.hop, EventType::kPacket), false);
  const double left = serve_packet(link_id, at, packet_size(t.bytes, e.packet));
  // Serving this packet only delays the trains: a queued wake comes early
  // at worst. A new train needs a plan only if its last packet may come first.
  bool plan_wake = false;
  if (e.hop == 0) {  // the source paces its packets onto the first link
    if (e.packet + 1 < t.packets) {
      if (t.route_length == 1 && !on_packet) {
        link.trains.push_back(
            {e.transfer, left, e.packet + 1, t.packets, t.bytes, order_key(t, 0, 0, EventType::kPacket)});
        if (partitioned) ++t.pending;  // the train holds the record until its last packet
        // Its last packet reaches the link no earlier than its full packets
        // back to back (less a cycle: the sum is rounded, the product not).
        const double earliest_last = left + static_cast<double>(t.packets - e.packet - 2) * link.packet_cycles - 1.0;
        plan_wake = !link.wake_queued || earliest_last < link.wake_time;
      } else {
        push(left, e.transfer, e.packet + 1, 0, EventType::kPacket);
      }
    } else {
      push(left, e.transfer, e.packet, 0, EventType::kSent);
    }
  }
  // Packets of a transfer leave every link in order, so only the last one's
  // arrival at the destination chip does anything: the others are not
  // queued (dropping events without effects keeps every other event's order).
  const bool to_destination = e.hop + 1U == t.route_length;
  if (!to_destination || e.packet + 1 == t.packets) {
    forward(left + link.latency_cycles, e.transfer, e.packet, static_cast<std::uint16_t>(e.hop + 1));
  }
  if (plan_wake) queue_wake(link_id);
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
    // Their transfer records are fetched from memory together (prefetched
    // while the events are collected), not one cache miss after another.
    same_time_.clear();
    const auto collect = [this](const Event& e) {
      same_time_.push_back(e);
      __builtin_prefetch(&transfer(e.transfer));
    };
    collect(first);
    while (!events_.empty() && events_.top_time() == at) {
      collect(events_.top());
      events_.pop();
    }
    batch_.clear();
    for (const Event& e : same_time_) {
      const Transfer& t = transfer(e.transfer);
      if (e.hop < t.route_length) __builtin_prefetch(&links_[link_at(t, e.hop)]);
      batch_.push_back({order_key(t, e.packet, e.hop, e.type), e});
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
  const auto links = fabric_->links();
  for (std::uint32_t id = 0; id < links_.size(); ++id) {
    const LinkState& s = links_[id];
    if (s.packets == 0) continue;
    const Fabric::LinkInfo& l = links[id];
    out.push_back({id, l.from, l.to, l.axis, l.direction, std::string(l.kind), fabric_->link_name(id), s.busy, s.bytes,
                   s.packets});
  }
  return out;
}

}  // namespace tpuemu::ici
