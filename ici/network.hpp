// The pod's network as plain C++ events over a fabric (ici/fabric.hpp):
// every directed link is its own bandwidth server; a transfer crosses the
// fabric's paths (striped over several where the fabric has them) in
// packets, store-and-forward per link.
//
// Timing contract (times are fractional cycles of the chip clock):
//  * A transfer of B bytes over P paths of weights w_p is cut into parts,
//    one per path: its ceil(B / packet_bytes) packets are dealt to the paths
//    in proportion to w_p (largest remainders, ties to the lower path; a path
//    that gets none is not used), each part a transfer of its own on its
//    path, the last used part holding the short last packet. One path (a
//    torus): one part, the whole transfer.
//  * A part of b bytes started at t is cut into packets of
//    Config::packet_bytes (the last one shorter). The source injects packet
//    i+1 into the first link when packet i has left it, so concurrent
//    transfers leaving one chip by the same link alternate packet by packet.
//  * A link serves the packets that reach it in arrival order (FIFO; ties in
//    the order of the events' keys, see below): a packet of b bytes reaching the link
//    at a starts at max(a, the link's busy-until), holds the link for
//    b / the link's bytes per cycle and reaches the link's far end the
//    link's latency after it has left. A busy link therefore delays
//    everything queued behind it (head-of-line blocking), and packets of one
//    transfer pipeline over hops.
//  * Sent: the last packet of every part has left its first link (the
//    source may be reused). Arrived: the last packet of every part has
//    reached the destination chip.
//  * A transfer between two cores of one chip (from == to) uses no link: it
//    is sent and arrives at start + bytes / (bytes per cycle of the
//    fabric's first link), one part.
//
// Order: events are processed in (time, transfer key, packet, hop) order,
// where a transfer's key is (source chip, lane, the lane's send count, part) and
// the lane is the caller's (the pod passes the source core). The order never
// depends on when an event was created, so the same sends give the same
// timing whether the pod is simulated by one Network or split over several.
//
// Partitions (one pod over several processes): a Network may own only some
// chips (set_owned_chips). It then handles the events of the links leaving
// its chips and the switches they are home to (Fabric::home_chip), and the
// arrivals at its chips; an event another partition must
// handle goes to outbox() instead, as a Crossing, which that partition
// inject()s. A crossing is created at least hop_latency_cycles before its
// time (it is the next hop of a packet that has just been served), so
// partitions that exchange crossings at least that often, and process only
// events before the exchange time (advance_before), see every event in time
// and in the same order as one Network would.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ici/event_queue.hpp"
#include "ici/fabric.hpp"
#include "ici/routing.hpp"
#include "ici/topology.hpp"

namespace tpuemu::ici {

class Network {
 public:
  // A torus of identical links (the unit tests' network).
  struct Config {
    double bytes_per_cycle = 0;     // one link, one way
    double hop_latency_cycles = 0;  // per hop
    std::uint64_t packet_bytes = 0;
  };
  // Names a transfer in every partition: the sender's chip, its lane (the
  // pod: its core) and that lane's send count before this one.
  struct TransferKey {
    std::uint32_t chip = 0;
    std::uint32_t lane = 0;
    std::uint64_t sequence = 0;
    auto operator<=>(const TransferKey&) const = default;
  };
  struct TransferKeyHash {
    std::size_t operator()(const TransferKey& k) const {
      return std::hash<std::uint64_t>{}((std::uint64_t{k.chip} << 40) ^ (std::uint64_t{k.lane} << 32) ^ k.sequence);
    }
  };
  enum class EventKind : std::uint8_t { kSent, kArrived };
  struct Completion {
    TransferKey transfer;
    EventKind kind;
    double time;
  };
  // An event that another partition handles: packet `packet` of part
  // `part` (of `parts`, on path `path`, `bytes` long) of transfer `key`
  // (from -> to) reaching hop `hop` of its path at `time` (hop == the path's
  // length: the destination chip).
  struct Crossing {
    double time = 0;
    TransferKey key;
    std::uint32_t from = 0;
    std::uint32_t to = 0;
    std::uint64_t bytes = 0;
    std::uint32_t packet = 0;
    std::uint16_t hop = 0;
    std::uint16_t part = 0;
    std::uint16_t parts = 1;
    std::uint16_t path = 0;
  };
  struct LinkStats {
    std::uint32_t id = 0;    // the fabric's link id
    std::uint32_t from = 0;  // nodes (chips first, then switches)
    std::uint32_t to = 0;
    std::uint8_t axis = kNoAxis;  // torus links
    std::int8_t direction = 0;
    std::string kind;  // Fabric::LinkInfo::kind
    std::string name;  // Fabric::link_name
    double busy_cycles = 0;
    std::uint64_t bytes = 0;
    std::uint64_t packets = 0;
  };

  // Times transfers over `fabric` with the chip clock `clock_hz` (link rates
  // and latencies in cycles) and packets of `packet_bytes`. Throws
  // std::invalid_argument on a non-positive clock, link bandwidth or packet size.
  Network(std::unique_ptr<const Fabric> fabric, double clock_hz, std::uint64_t packet_bytes);
  // A torus of identical links (config's rate and latency), routed by `routing`.
  Network(const Topology& topology, const RoutingPolicy& routing, Config config);

  // Starts a transfer of `bytes` (>= 1) at `start` from lane `lane` of chip
  // `from`; a start before the last processed event is moved up to it. Chips
  // must be in the topology (std::out_of_range otherwise); `from` must be
  // owned (std::logic_error otherwise).
  TransferKey send(ChipId from, ChipId to, std::uint64_t bytes, double start, std::uint32_t lane = 0);
  // Starts a transfer of `bytes` over the single link `link` (e.g. a chip to
  // a switch, for in-network reductions): sent when it has left the link,
  // arrived when it reached the link's far end. Its key is from lane `lane`
  // of chip `lane_chip` (owned). Timing as any transfer's.
  TransferKey send_on_link(std::uint32_t link, std::uint64_t bytes, double start, ChipId lane_chip, std::uint32_t lane);
  // The timing contract's deal of `bytes` over paths of `weights`: (path,
  // bytes) for each path that gets packets, in path order.
  [[nodiscard]] std::vector<std::pair<std::uint16_t, std::uint64_t>> split_by_weight(
      std::uint64_t bytes, const std::vector<std::uint32_t>& weights) const {
    return split_by_weight(bytes, weights, packet_bytes_);
  }
  // The same for packets of `packet_bytes` (what the cost models use).
  [[nodiscard]] static std::vector<std::pair<std::uint16_t, std::uint64_t>> split_by_weight(
      std::uint64_t bytes, const std::vector<std::uint32_t>& weights, std::uint64_t packet_bytes);
  // The time of the earliest unprocessed event, if any.
  [[nodiscard]] std::optional<double> next_event_time() const;
  // Processes every event at or before `time` (advance_to) or before `time`
  // (advance_before) and appends the sends and arrivals that happened, in
  // event order.
  void advance_to(double time, std::vector<Completion>& completions);
  void advance_before(double time, std::vector<Completion>& completions);

  // Partitions. `owned[c]` says whether this Network handles chip c (size:
  // the chip count; by default it owns every chip and never crosses).
  void set_owned_chips(std::vector<bool> owned);
  [[nodiscard]] bool owns(ChipId chip) const { return owned_.empty() || owned_[chip.value()]; }
  // Crossings created since the last clear, in creation order; the caller
  // hands each to the partition that owns crossing_chip(c) and clears this.
  [[nodiscard]] std::vector<Crossing>& outbox() { return outbox_; }
  // The chip whose partition handles `c`: the sender of the link it reaches,
  // or its destination.
  [[nodiscard]] ChipId crossing_chip(const Crossing& c);
  // Takes an event from another partition. Throws std::logic_error if it is
  // earlier than an event already processed (the partitions did not
  // exchange crossings within the lookahead) or not for an owned chip.
  void inject(const Crossing& c);
  // The least time between an event's creation and a crossing it creates:
  // the least link latency (what partitions may run ahead of each other).
  [[nodiscard]] double lookahead() const { return lookahead_; }
  [[nodiscard]] std::size_t transfers_in_flight() const { return in_flight_; }
  [[nodiscard]] double now() const { return now_; }
  // Events processed so far (packets entering a link or a chip, sent markers): host-cost statistics.
  [[nodiscard]] std::uint64_t events_processed() const { return events_processed_; }

  // Links that carried at least one packet, by link id (a torus: by
  // (from, axis, direction)).
  [[nodiscard]] std::vector<LinkStats> used_links() const;
  [[nodiscard]] const Topology& topology() const { return fabric_->topology(); }
  [[nodiscard]] const Fabric& fabric() const { return *fabric_; }
  // Called for every packet a link serves: the fabric's link id, when it
  // held the link and its size (e.g. for a trace); unset by default.
  std::function<void(std::uint32_t, double, double, std::uint64_t)> on_packet;

 private:
  using TransferId = std::uint64_t;  // a handle, local to this Network
  // One part of a transfer (the whole of it on a single-path fabric).
  struct Transfer {
    // Link ids of its path: the data of a path in routes_ or single_links_
    // (stable), held directly so an event reaches its link in one step.
    const std::uint32_t* route = nullptr;
    std::uint64_t bytes = 0;  // of this part
    TransferKey key;
    std::uint32_t route_length = 0;
    std::uint32_t first_link = 0;  // route[0] (most events are at hop 0), if route_length > 0
    std::uint32_t packets = 0;
    std::uint32_t pending = 0;  // partitioned: its events queued here; the record goes at 0
    std::uint32_t from = 0;
    std::uint32_t to = 0;
    std::uint16_t part = 0;
    std::uint16_t parts = 1;
    std::uint16_t path = 0;
    bool live = true;  // false once retired
  };
  static_assert(sizeof(Transfer) <= 64, "one cache line per transfer record");
  // The paths between two chips, from the fabric.
  struct RouteSet {
    std::vector<std::vector<std::uint32_t>> paths;
    std::vector<std::uint32_t> weights;
  };
  // A part of a transfer: its path and bytes.
  struct PartPlan {
    std::uint16_t path = 0;
    std::uint64_t bytes = 0;
  };
  // Parts of a multi-part transfer still to be sent / to arrive here.
  struct Group {
    std::uint32_t sent_left = 0;
    std::uint32_t arrived_left = 0;
  };
  enum class EventType : std::uint8_t {
    kPacket,  // packet `packet` reaches route[hop]; hop == the route's length: the destination
    kSent,    // the transfer (part) has left its first link
    kWake,    // the link route[0] serves its trains up to this packet of `transfer` (below)
  };
  struct Event {
    TransferId transfer;
    std::uint32_t packet;
    std::uint16_t hop;
    EventType type;
  };
  // Where an event stands among the events of one time (the contract's key order).
  struct OrderKey {
    std::uint64_t source;  // chip << 32 | lane
    std::uint64_t sequence;
    std::uint64_t within;  // part << 50 | packet << 17 | hop << 1 | (not a kSent marker)
    auto operator<=>(const OrderKey&) const = default;
  };
  static OrderKey order_key(const Transfer& t, std::uint32_t packet, std::uint16_t hop, EventType type) {
    return {std::uint64_t{t.key.chip} << 32 | t.key.lane, t.key.sequence,
            std::uint64_t{t.part} << 50 | std::uint64_t{packet} << 17 | std::uint64_t{hop} << 1 |
                (type == EventType::kSent ? 0U : 1U)};
  }
  // Trains. A single-hop part paces its packets onto its only link, and
  // nothing but that link sees them until the last one (which queues the
  // part's sent marker and arrival): so after its first packet the link
  // keeps the part's next packet itself (a train) instead of an event per
  // packet. The link serves its trains' packets, in the contract's (time,
  // key) order, only when something must see its state: an event at the
  // link (first serving every train packet ordered before that event), or
  // a wake event of the link, which serves every train packet up to its own
  // time and key. The link plans a wake at the time and key of the first
  // train packet that is a last packet, as it would serve if nothing else
  // came; other traffic only delays trains, so a planned wake is early at
  // worst, and it plans the next one. A new train is planned for when its
  // last packet may come before the planned wake. The same additions in the
  // same order: timing identical to an event per packet. Off while
  // on_packet is set (a trace sees every packet).
  struct Train {
    TransferId transfer;
    double arrival;      // of packet `next` at the link
    std::uint32_t next;  // packet index
    std::uint32_t packets;
    std::uint64_t bytes;  // of the part
    OrderKey key;         // of packet 0; `within` grows by next << 17
    [[nodiscard]] OrderKey next_key() const {
      return {key.source, key.sequence, key.within | std::uint64_t{next} << 17};
    }
  };
  struct LinkState {
    double busy_until = 0;
    double busy = 0;
    std::uint64_t bytes = 0;
    std::uint64_t packets = 0;
    double bytes_per_cycle = 0;  // from the fabric, in this clock
    double latency_cycles = 0;
    double packet_cycles = 0;     // a full packet's time on the link
    std::uint32_t home_chip = 0;  // whose partition serves it
    std::vector<Train> trains;
    // The wake event queued for this link, if any: (time, transfer, packet).
    bool wake_queued = false;
    double wake_time = 0;
    TransferId wake_transfer = 0;
    std::uint32_t wake_packet = 0;
  };

  const RouteSet& route(ChipId from, ChipId to);
  // Deals `bytes` over the paths of `routes` (the timing contract's parts).
  void plan_parts(std::uint64_t bytes, const RouteSet& routes, std::vector<PartPlan>& out) const;
  // A multi-part transfer's part reached `kind`: true when it was the last.
  bool group_done(const TransferKey& key, EventKind kind);
  TransferId add_transfer(const Transfer& t);
  void push(double time, TransferId transfer, std::uint32_t packet, std::uint16_t hop, EventType type);
  // Trains (above): serves the link's train packets ordered before (time,
  // key), or up to it inclusive; queue_wake then queues the link's wake for
  // what is left (if it changed).
  void serve_trains(std::uint32_t link_id, double time, const OrderKey& key, bool inclusive);
  void serve_train_packet(std::uint32_t link_id, std::size_t train);
  // The train whose next packet comes first in the contract's order (trains not empty).
  static std::size_t first_train(const std::vector<Train>& trains);
  void queue_wake(std::uint32_t link_id);
  // Serves one packet on a link that has no train packet before it.
  double serve_packet(std::uint32_t link_id, double at, std::uint64_t size);
  // Queues the event here, or in the outbox when another partition handles it.
  void forward(double time, TransferId transfer, std::uint32_t packet, std::uint16_t hop);
  void process(double at, const Event& e, std::vector<Completion>& completions);
  void advance(double time, bool inclusive, std::vector<Completion>& completions);
  [[nodiscard]] Transfer& transfer(TransferId id) { return transfers_[id - first_id_]; }
  static void set_route(Transfer& t, const std::vector<std::uint32_t>& path) {
    t.route = path.data();
    t.route_length = static_cast<std::uint32_t>(path.size());
    t.first_link = path.empty() ? 0 : path.front();
  }
  static std::uint32_t link_at(const Transfer& t, std::uint32_t hop) { return hop == 0 ? t.first_link : t.route[hop]; }
  void retire(TransferId id);
  // Bytes of packet `packet` of a part of `part_bytes` (the last one may be short).
  [[nodiscard]] std::uint64_t packet_size(std::uint64_t part_bytes, std::uint32_t packet) const;
  // How long a packet of `size` holds `link` (a full packet's time computed once: the same quotient).
  [[nodiscard]] double packet_time(const LinkState& link, std::uint64_t size) const {
    return size == packet_bytes_ ? link.packet_cycles : static_cast<double>(size) / link.bytes_per_cycle;
  }

  std::unique_ptr<const Fabric> fabric_;
  std::uint64_t packet_bytes_ = 0;
  double lookahead_ = 0;
  double local_bytes_per_cycle_ = 1;  // a chip to itself
  std::vector<LinkState> links_;      // by the fabric's link id
  std::unordered_map<std::uint64_t, RouteSet> routes_;
  // Per source chip the two destinations it sent to last and their routes
  // (a ring sends to the same successor over and over): most sends skip the
  // hash map.
  struct RecentRoute {
    std::uint32_t to = UINT32_MAX;
    const RouteSet* route = nullptr;
  };
  std::vector<std::array<RecentRoute, 2>> recent_routes_;
  // Transfers in flight by id - first_id_ (ids are handed out in order and
  // retire roughly in order; retired ones at the front are dropped).
  std::deque<Transfer> transfers_;
  TransferId first_id_ = 0;
  std::size_t in_flight_ = 0;
  EventQueue<Event> events_;  // by time; equal times are sorted by key (batch_)
  // The events of one time, with their order keys, being processed.
  struct Ordered {
    OrderKey key;
    Event event;
    bool operator<(const Ordered& o) const { return key < o.key; }
  };
  std::vector<Ordered> batch_;
  std::vector<Event> same_time_;  // advance's events of one time, before their keys are read
  TransferId next_id_ = 0;
  std::vector<std::vector<std::uint64_t>> lane_sends_;  // [chip][lane]: sends so far
  std::vector<bool> owned_;                             // empty: every chip
  std::vector<Crossing> outbox_;
  // Partitioned only: transfers by (key, part), to find an injected part's record.
  struct PartKeyHash {
    std::size_t operator()(const std::pair<TransferKey, std::uint16_t>& k) const {
      return TransferKeyHash{}(k.first) ^ (std::size_t{k.second} << 56);
    }
  };
  std::unordered_map<std::pair<TransferKey, std::uint16_t>, TransferId, PartKeyHash> by_key_;
  std::unordered_map<TransferKey, Group, TransferKeyHash> groups_;  // multi-part transfers
  std::vector<PartPlan> plan_;                                      // scratch of send()
  std::vector<Train> train_scratch_;                                // queue_wake's look ahead
  std::vector<std::vector<std::uint32_t>> single_links_;            // send_on_link's routes, by link
  std::uint64_t events_processed_ = 0;
  double now_ = 0;
};

}  // namespace tpuemu::ici
