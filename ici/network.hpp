// The pod's ICI network as plain C++ events: every direction of every link is
// its own bandwidth server; a transfer crosses its route (a routing policy's
// chain of links) in packets, store-and-forward per hop.
//
// Timing contract (times are fractional cycles of the chip clock):
//  * A transfer of B bytes started at t is cut into packets of
//    Config::packet_bytes (the last one shorter). The source injects packet
//    i+1 into the first link when packet i has left it, so concurrent
//    transfers leaving one chip by the same link alternate packet by packet.
//  * A link serves the packets that reach it in arrival order (FIFO, ties in
//    the order the events were created): a packet of b bytes reaching the link
//    at a starts at max(a, the link's busy-until), holds the link for
//    b / bytes_per_cycle and reaches the next router hop_latency_cycles after
//    it has left. A busy link therefore delays everything queued behind it
//    (head-of-line blocking), and packets of one transfer pipeline over hops.
//  * Sent: the last packet has left the first link (the source may be reused).
//    Arrived: the last packet has reached the destination chip.
//  * A transfer between two cores of one chip (from == to) uses no link: it is
//    sent and arrives at start + bytes / bytes_per_cycle.
// Deterministic: events are ordered by (time, creation order).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ici/event_queue.hpp"
#include "ici/routing.hpp"
#include "ici/topology.hpp"

namespace tpuemu::ici {

class Network {
 public:
  struct Config {
    double bytes_per_cycle = 0;     // one link, one way
    double hop_latency_cycles = 0;  // per hop
    std::uint64_t packet_bytes = 0;
  };
  using TransferId = std::uint64_t;
  enum class EventKind : std::uint8_t { kSent, kArrived };
  struct Completion {
    TransferId transfer;
    EventKind kind;
    double time;
  };
  struct LinkStats {
    Link link;
    double busy_cycles = 0;
    std::uint64_t bytes = 0;
    std::uint64_t packets = 0;
  };

  // Throws std::invalid_argument on a non-positive bandwidth or packet size.
  Network(const Topology& topology, const RoutingPolicy& routing, Config config);

  // Starts a transfer of `bytes` (>= 1) at `start`; a start before the last
  // processed event is moved up to it. Chips must be in the topology
  // (std::out_of_range otherwise).
  TransferId send(ChipId from, ChipId to, std::uint64_t bytes, double start);
  // The time of the earliest unprocessed event, if any.
  [[nodiscard]] std::optional<double> next_event_time() const;
  // Processes every event at or before `time` and appends the sends and
  // arrivals that happened, in time order.
  void advance_to(double time, std::vector<Completion>& completions);
  [[nodiscard]] std::size_t transfers_in_flight() const { return in_flight_; }
  [[nodiscard]] double now() const { return now_; }
  // Events processed so far (packets entering a link or a chip, sent markers): host-cost statistics.
  [[nodiscard]] std::uint64_t events_processed() const { return events_processed_; }

  // Links that carried at least one packet, ordered by (from, axis, direction).
  [[nodiscard]] std::vector<LinkStats> used_links() const;
  [[nodiscard]] const Topology& topology() const { return topology_; }
  // Called for every packet a link serves: the sending chip, axis, direction
  // (+1/-1), when it held the link and its size (e.g. for a trace); unset by default.
  std::function<void(ChipId, std::uint8_t, std::int8_t, double, double, std::uint64_t)> on_packet;

 private:
  struct Transfer {
    const std::vector<std::uint32_t>* route = nullptr;  // link indices, in routes_ (stable)
    std::uint64_t bytes = 0;
    std::uint32_t packets = 0;
  };
  struct Event {
    TransferId transfer;
    std::uint32_t packet;
    std::uint16_t hop;  // packet reaches route[hop]; hop == route.size(): the destination
    bool sent;          // a kSent marker rather than a packet
  };
  struct LinkState {
    double busy_until = 0;
    double busy = 0;
    std::uint64_t bytes = 0;
    std::uint64_t packets = 0;
  };

  [[nodiscard]] std::uint32_t link_index(const Link& link) const;
  const std::vector<std::uint32_t>& route(ChipId from, ChipId to);
  void push(double time, TransferId transfer, std::uint32_t packet, std::uint16_t hop, bool sent);
  [[nodiscard]] std::uint64_t packet_size(const Transfer& t, std::uint32_t packet) const;

  Topology topology_;
  const RoutingPolicy& routing_;
  Config config_;
  std::vector<LinkState> links_;  // chip * 6 + axis * 2 + (direction > 0)
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> routes_;
  // Per source chip the two destinations it sent to last and their routes
  // (a ring sends to the same successor over and over): most sends skip the
  // hash map.
  struct RecentRoute {
    std::uint32_t to = UINT32_MAX;
    const std::vector<std::uint32_t>* route = nullptr;
  };
  std::vector<std::array<RecentRoute, 2>> recent_routes_;
  // Transfers in flight by id - first_id_ (ids are handed out in order and
  // retire roughly in order; retired ones at the front are dropped).
  std::deque<std::optional<Transfer>> transfers_;
  TransferId first_id_ = 0;
  std::size_t in_flight_ = 0;
  EventQueue<Event> events_;  // by (time, creation order)
  TransferId next_id_ = 0;
  std::uint64_t events_processed_ = 0;
  double now_ = 0;
};

}  // namespace tpuemu::ici
