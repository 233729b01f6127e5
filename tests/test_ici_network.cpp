// The ICI network's timing at the edges: one packet, pipelining of packets
// over hops, alternation at a shared first link, FIFO behind a busy link.
#include <catch2/catch.hpp>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ici/network.hpp"
#include "test_support.hpp"

using namespace tpuemu;
using namespace tpuemu::ici;

namespace {

// 10 bytes per cycle, 100 cycles per hop, 1000-byte packets.
const Network::Config kConfig{10.0, 100.0, 1000};

struct Timeline {
  std::vector<Network::Completion> events;
  [[nodiscard]] double at(const Network::TransferKey& id, Network::EventKind kind) const {
    for (const auto& e : events) {
      if (e.transfer == id && e.kind == kind) return e.time;
    }
    return -1;
  }
};

Timeline run_all(Network& n) {
  Timeline t;
  while (const auto next = n.next_event_time()) n.advance_to(*next, t.events);
  return t;
}

const RoutingPolicy& dor() {
  return routing_policy("dimension-order");
}

}  // namespace

TEST_CASE("network: one packet over one hop takes its serialisation plus the hop latency", "[ici][network]") {
  Network n(Topology({4}, {false}), dor(), kConfig);
  const auto id = n.send(ChipId(0), ChipId(1), 1000, 5.0);
  const Timeline t = run_all(n);
  CHECK(t.at(id, Network::EventKind::kSent) == Approx(105.0));
  CHECK(t.at(id, Network::EventKind::kArrived) == Approx(205.0));
}

TEST_CASE("network: packets pipeline over hops (store and forward per packet)", "[ici][network]") {
  // 4 packets, 3 hops: the last packet leaves the first link at 400, then
  // needs 2 more serialisations and 3 latencies.
  Network n(Topology({4}, {false}), dor(), kConfig);
  const auto id = n.send(ChipId(0), ChipId(3), 4000, 0.0);
  const Timeline t = run_all(n);
  CHECK(t.at(id, Network::EventKind::kSent) == Approx(400.0));
  CHECK(t.at(id, Network::EventKind::kArrived) == Approx(400.0 + 2 * 100.0 + 3 * 100.0));
  const auto links = n.used_links();
  REQUIRE(links.size() == 3);
  for (const auto& l : links) CHECK(l.busy_cycles == Approx(400.0));
}

TEST_CASE("network: two transfers leaving by the same link alternate packet by packet", "[ici][network]") {
  Network n(Topology({2}, {false}), dor(), kConfig);
  const auto a = n.send(ChipId(0), ChipId(1), 3000, 0.0);
  const auto b = n.send(ChipId(0), ChipId(1), 3000, 0.0);
  const Timeline t = run_all(n);
  // a0 b0 a1 b1 a2 b2: a's last packet leaves at 500, b's at 600.
  CHECK(t.at(a, Network::EventKind::kSent) == Approx(500.0));
  CHECK(t.at(b, Network::EventKind::kSent) == Approx(600.0));
  CHECK(t.at(a, Network::EventKind::kArrived) == Approx(600.0));
  CHECK(t.at(b, Network::EventKind::kArrived) == Approx(700.0));
}

TEST_CASE("network: a packet reaching a busy link waits behind it, one cycle early or on time", "[ici][network]") {
  // Chip 1 keeps link 1->2 busy from 1 to 201. Chip 0's packet reaches that
  // link 200 cycles after it is sent: at 200 (one cycle early: it waits for
  // 201) or at 201 (on time: no wait).
  for (const double send_at : {0.0, 1.0}) {
    Network n(Topology({3}, {false}), dor(), kConfig);
    const auto busy = n.send(ChipId(1), ChipId(2), 2000, 1.0);
    const auto late = n.send(ChipId(0), ChipId(2), 1000, send_at);
    const Timeline t = run_all(n);
    CHECK(t.at(busy, Network::EventKind::kArrived) == Approx(301.0));
    CHECK(t.at(late, Network::EventKind::kArrived) == Approx(201.0 + 100.0 + 100.0));
  }
}

TEST_CASE("network: a transfer between the cores of one chip uses no link", "[ici][network]") {
  Network n(Topology({2}, {false}), dor(), kConfig);
  const auto id = n.send(ChipId(1), ChipId(1), 500, 10.0);
  const Timeline t = run_all(n);
  CHECK(t.at(id, Network::EventKind::kArrived) == Approx(60.0));
  CHECK(n.used_links().empty());
}

TEST_CASE("network: a bad configuration or a chip outside the pod is refused", "[ici][network]") {
  CHECK_THROWS_AS(Network(Topology({2}, {false}), dor(), {0.0, 1.0, 1000}), std::invalid_argument);
  CHECK_THROWS_AS(Network(Topology({2}, {false}), dor(), {1.0, 1.0, 0}), std::invalid_argument);
  Network n(Topology({2}, {false}), dor(), kConfig);
  CHECK_THROWS_AS(n.send(ChipId(0), ChipId(2), 10, 0.0), std::out_of_range);
  CHECK_THROWS_AS(n.send(ChipId(0), ChipId(1), 0, 0.0), std::invalid_argument);
}

namespace {

// A traffic pattern with replies: every chip sends to a few others at fixed
// times, and every arrival makes its destination send a reply back at once
// (up to a depth), so sends also start while the network runs, on ties.
struct Traffic {
  struct Send {
    std::uint32_t from, to;
    std::uint64_t bytes;
    double start;
  };
  std::vector<Send> initial;
  int reply_depth = 2;
};

// xorshift64: the traffic generators' deterministic numbers.
struct Xorshift {
  std::uint64_t state;
  std::uint64_t operator()() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
};

Traffic make_traffic(const Topology& t, std::uint32_t seed) {
  Traffic traffic;
  Xorshift next{seed * 0x9E3779B97F4A7C15ULL + 1};
  for (std::uint32_t c = 0; c < t.chip_count(); ++c) {
    for (int k = 0; k < 3; ++k) {
      const auto to = static_cast<std::uint32_t>(next() % t.chip_count());
      // Starts on a coarse grid so that many events tie.
      traffic.initial.push_back({c, to, 500 + next() % 3 * 1000, static_cast<double>(next() % 4 * 100)});
    }
  }
  return traffic;
}

struct Outcome {
  std::vector<std::tuple<double, Network::TransferKey, int>> completions;  // sorted
  std::vector<std::tuple<std::uint32_t, int, int, double, std::uint64_t, std::uint64_t>> links;
  std::uint64_t events = 0;
};

// Runs `traffic` on `parts` partitions (chip c in partition part_of[c]) that
// exchange crossings in conservative windows of the network's lookahead,
// the way MPI ranks do; one partition is the plain network, run to the end.
using NetworkFactory = std::function<std::unique_ptr<Network>()>;

Outcome run_partitioned(const Topology& topology, const Traffic& traffic, const std::vector<std::uint32_t>& part_of,
                        std::uint32_t parts, const NetworkFactory& make = {}) {
  std::vector<std::unique_ptr<Network>> nets;
  for (std::uint32_t p = 0; p < parts; ++p) {
    nets.push_back(make ? make() : std::make_unique<Network>(topology, dor(), kConfig));
    if (parts > 1) {
      std::vector<bool> owned(topology.chip_count());
      for (std::uint32_t c = 0; c < owned.size(); ++c) owned[c] = part_of[c] == p;
      nets.back()->set_owned_chips(owned);
    }
  }
  struct Sent {
    std::uint32_t to;
    int depth;
  };
  std::map<Network::TransferKey, Sent> sent;
  const auto send = [&](std::uint32_t from, std::uint32_t to, std::uint64_t bytes, double start, int depth) {
    sent[nets[part_of[from]]->send(ChipId(from), ChipId(to), bytes, start)] = {to, depth};
  };
  for (const auto& s : traffic.initial) send(s.from, s.to, s.bytes, s.start, 0);
  Outcome out;
  std::vector<Network::Completion> done;
  const double lookahead = nets[0]->lookahead();
  for (;;) {
    std::optional<double> earliest;
    for (const auto& n : nets) {
      const auto t = n->next_event_time();
      if (t && (!earliest || *t < *earliest)) earliest = t;
    }
    if (!earliest) break;
    const double window_end = parts > 1 ? *earliest + lookahead : std::numeric_limits<double>::infinity();
    for (std::uint32_t p = 0; p < parts; ++p) {
      Network& n = *nets[p];
      // Batch by batch, so that a reply starts at its trigger's time.
      while (const auto t = n.next_event_time()) {
        if (!(*t < window_end)) break;
        done.clear();
        n.advance_to(*t, done);
        for (const auto& c : done) {
          out.completions.emplace_back(c.time, c.transfer, static_cast<int>(c.kind));
          const Sent s = sent.at(c.transfer);
          if (c.kind != Network::EventKind::kArrived || s.depth >= traffic.reply_depth) continue;
          send(s.to, c.transfer.chip, 700, c.time, s.depth + 1);
        }
      }
    }
    for (std::uint32_t p = 0; p < parts; ++p) {
      for (const auto& c : nets[p]->outbox()) nets[part_of[nets[p]->crossing_chip(c).value()]]->inject(c);
      nets[p]->outbox().clear();
    }
  }
  std::sort(out.completions.begin(), out.completions.end());
  for (const auto& n : nets) {
    out.events += n->events_processed();
    for (const auto& l : n->used_links()) {
      out.links.emplace_back(l.id, l.axis, l.direction, l.busy_cycles, l.bytes, l.packets);
    }
  }
  std::sort(out.links.begin(), out.links.end());
  return out;
}

}  // namespace

TEST_CASE("network: split over partitions in lookahead windows, timing is identical to one network",
          "[ici][network][partition]") {
  // Slabs along the slowest axis, blocks, and a scattered assignment (routes
  // leave and re-enter partitions).
  const Topology topology({4, 4, 2}, {true, true, false});
  const std::uint32_t n = topology.chip_count();
  for (const std::uint32_t seed : {1U, 2U, 3U}) {
    const Traffic traffic = make_traffic(topology, seed);
    const Outcome one = run_partitioned(topology, traffic, std::vector<std::uint32_t>(n, 0), 1);
    REQUIRE(one.completions.size() > 2 * traffic.initial.size());
    for (const std::uint32_t parts : {2U, 3U, 4U}) {
      for (const char* layout : {"slab", "scatter"}) {
        std::vector<std::uint32_t> part_of(n);
        for (std::uint32_t c = 0; c < n; ++c) {
          part_of[c] = std::string(layout) == "slab" ? c * parts / n : (c * 7 + c / 5) % parts;
        }
        INFO("seed " << seed << ", " << parts << " partitions, " << layout);
        const Outcome split = run_partitioned(topology, traffic, part_of, parts);
        CHECK(split.completions == one.completions);
        CHECK(split.links == one.links);
        CHECK(split.events == one.events);
      }
    }
  }
}

// Trains against an event per packet: a network with on_packet set serves
// every packet as its own event (trains off), the plain one keeps the
// packets of single-hop parts on their link. Traffic that makes trains
// contend: neighbours on a ring (one hop), long parts, starts that tie, and
// the random multi-hop traffic above (packets of other parts cut into trains
// at any point).
Traffic make_train_traffic(const Topology& t, std::uint32_t seed) {
  Traffic traffic = make_traffic(t, seed);
  Xorshift next{seed * 0x2545F4914F6CDD1DULL + 7};
  for (std::uint32_t c = 0; c < t.chip_count(); ++c) {
    for (int k = 0; k < 4; ++k) {
      const std::uint32_t to = (c + (k % 2 == 0 ? 1 : t.chip_count() - 1)) % t.chip_count();
      traffic.initial.push_back(
          {c, to, 1000 * (1 + next() % 12) - next() % 2 * 300, static_cast<double>(next() % 6 * 50)});
    }
  }
  return traffic;
}

TEST_CASE("network: trains give the timing of an event per packet", "[ici][network]") {
  const Topology topology({8, 2}, {true, false});
  const auto per_packet = [&topology] {
    auto n = std::make_unique<Network>(topology, dor(), kConfig);
    n->on_packet = [](std::uint32_t, double, double, std::uint64_t) {};
    return n;
  };
  std::vector<std::uint32_t> halves(topology.chip_count());
  for (std::uint32_t c = 0; c < halves.size(); ++c) halves[c] = c % 8 < 4 ? 0 : 1;
  for (const std::uint32_t seed : {1U, 2U, 3U, 4U}) {
    INFO("seed " << seed);
    const Traffic traffic = make_train_traffic(topology, seed);
    const std::vector<std::uint32_t> one_part(topology.chip_count(), 0);
    const Outcome reference = run_partitioned(topology, traffic, one_part, 1, per_packet);
    const Outcome trains = run_partitioned(topology, traffic, one_part, 1);
    REQUIRE(reference.completions.size() > 2 * traffic.initial.size());
    CHECK(trains.completions == reference.completions);
    CHECK(trains.links == reference.links);
    CHECK(trains.events < reference.events);  // the point of trains
    const Outcome split = run_partitioned(topology, traffic, halves, 2);
    CHECK(split.completions == reference.completions);
    CHECK(split.links == reference.links);
  }
}

TEST_CASE("network: equal-time events go in key order, not in the order they were queued", "[ici][network]") {
  // Two one-packet transfers reach link 0->1 at the same time; the one with
  // the smaller key (chip 0 lane 0 before lane 1) is served first, whichever
  // was sent first.
  for (const bool lane1_first : {false, true}) {
    Network n(Topology({2}, {false}), dor(), kConfig);
    Network::TransferKey a, b;
    if (lane1_first) {
      b = n.send(ChipId(0), ChipId(1), 1000, 0.0, 1);
      a = n.send(ChipId(0), ChipId(1), 1000, 0.0, 0);
    } else {
      a = n.send(ChipId(0), ChipId(1), 1000, 0.0, 0);
      b = n.send(ChipId(0), ChipId(1), 1000, 0.0, 1);
    }
    const Timeline t = run_all(n);
    CHECK(t.at(a, Network::EventKind::kArrived) == Approx(200.0));
    CHECK(t.at(b, Network::EventKind::kArrived) == Approx(300.0));
  }
}

TEST_CASE("network: a crossing later than the lookahead allows or for another partition is refused",
          "[ici][network][partition]") {
  const Topology topology({4}, {false});
  Network left(topology, dor(), kConfig);
  Network right(topology, dor(), kConfig);
  left.set_owned_chips({true, true, false, false});
  right.set_owned_chips({false, false, true, true});
  CHECK_THROWS_AS(right.send(ChipId(0), ChipId(3), 100, 0.0), std::logic_error);
  const auto key = left.send(ChipId(1), ChipId(2), 1000, 0.0);
  std::vector<Network::Completion> done;
  left.advance_to(1000.0, done);
  REQUIRE(left.outbox().size() == 1);
  const Network::Crossing c = left.outbox().front();
  CHECK(c.key == key);
  CHECK(c.time == Approx(200.0));  // 100 to serialise + 100 of hop latency
  CHECK(left.crossing_chip(c) == ChipId(2));
  CHECK_THROWS_AS(left.inject(c), std::logic_error);  // chip 2 is not the left's
  right.advance_to(500.0, done);                      // the right has moved past 200
  CHECK_THROWS_AS(right.inject(c), std::logic_error);
}

namespace {

// A switched chip with round numbers: 1 GHz, 10 B/cycle per NVLink, 100
// cycles per link traversal, no switch latency, 1000-byte packets; two
// switches wired 3 + 1.
ChipConfig round_switched_chip(const std::string& switch_links = "3,1") {
  ChipConfig chip = test::preset("h100");
  chip.clock_hz = 1e9;
  chip.ici.link_bandwidth = 10e9;
  chip.ici.hop_latency_s = 100e-9;
  chip.ici.packet_bytes = 1000;
  chip.fabric.switch_links = switch_links;
  chip.fabric.switch_latency_s = 0;
  chip.fabric.link_payload_bandwidth = 0;  // the wire rate
  std::uint64_t links = 0;
  for (std::uint64_t n : chip.fabric.links_per_switch()) links += n;
  chip.ici.links_per_chip = links;
  chip.fabric.nic_bandwidth = 5e9;  // 5 B/cycle
  chip.fabric.nic_latency_s = 200e-9;
  chip.fabric.switch_ports = 4;
  return chip;
}

std::unique_ptr<Network> switched_network(const std::string& shape, const ChipConfig& chip) {
  const Topology t = make_topology(TopologyRequest{shape, std::nullopt, false}, chip);
  return std::make_unique<Network>(make_fabric(t, chip, "dimension-order"), chip.clock_hz, chip.ici.packet_bytes);
}

}  // namespace

TEST_CASE("network: a switched domain stripes a transfer over its switches by their link counts",
          "[ici][network][fabric]") {
  const ChipConfig chip = round_switched_chip();
  auto n = switched_network("node:4", chip);
  // 4 packets dealt 3 : 1. Part 0 (3 packets) leaves on the 30 B/cycle link
  // to switch 0 at 100, part 1 (1 packet) on the 10 B/cycle link to switch 1
  // at 100: sent at 100. Arrival is the later part's: part 1 reaches switch
  // 1 at 200, crosses its down link by 300, reaches chip 1 at 400 (part 0:
  // 200 + 33.3 + 100 = 333.3).
  const auto id = n->send(ChipId(0), ChipId(1), 4000, 0.0);
  const Timeline t = run_all(*n);
  CHECK(t.at(id, Network::EventKind::kSent) == Approx(100.0));
  CHECK(t.at(id, Network::EventKind::kArrived) == Approx(400.0));
  // One completion of each kind for the whole transfer.
  CHECK(t.events.size() == 2);
  const auto links = n->used_links();
  REQUIRE(links.size() == 4);
  std::uint64_t bytes = 0;
  for (const auto& l : links) {
    bytes += l.bytes;
    CHECK(l.kind == "nvlink");
    CHECK(l.axis == kNoAxis);
  }
  CHECK(bytes == 2 * 4000);
  CHECK(links[0].name == "chip 0 -> nvswitch 0");
}

TEST_CASE(
    "network: a transfer shorter than a packet per path is sprayed over every path by weight, "
    "a path dealt nothing is not used",
    "[ici][network][fabric]") {
  const ChipConfig chip = round_switched_chip();
  {
    auto n = switched_network("node:4", chip);
    // 1000 B < 1000 B x 2 paths: the unit is 1000 / 4 rounded up to 32 B =
    // 256 B, 4 units dealt 3 : 1. Part 0 (768 B) by switch 0 at 30 B/cycle:
    // 25.6 + 100 + 25.6 + 100 = 251.2; part 1 (232 B) by switch 1 at 10
    // B/cycle: 23.2 + 100 + 23.2 + 100 = 246.4. Arrival is the later part's.
    const auto id = n->send(ChipId(2), ChipId(3), 1000, 0.0);
    const Timeline t = run_all(*n);
    CHECK(t.at(id, Network::EventKind::kSent) == Approx(25.6));
    CHECK(t.at(id, Network::EventKind::kArrived) == Approx(251.2));
    const auto links = n->used_links();
    REQUIRE(links.size() == 4);
    CHECK(links[0].name == "chip 2 -> nvswitch 0");
    CHECK(links[0].bytes == 768);
  }
  {
    auto n = switched_network("node:4", chip);
    // 32 B: one 32-byte unit, floor shares 0 and 0, remainders 3 and 1: it
    // goes by switch 0 alone, 32 / 30 + 100 + 32 / 30 + 100.
    const auto id = n->send(ChipId(2), ChipId(3), 32, 0.0);
    const Timeline t = run_all(*n);
    CHECK(t.at(id, Network::EventKind::kArrived) == Approx(200.0 + 64.0 / 30.0));
    REQUIRE(n->used_links().size() == 2);
    CHECK(n->used_links()[0].name == "chip 2 -> nvswitch 0");
  }
  {
    auto n = switched_network("node:4", chip);
    // 1500 B: unit 1500 / 4 -> 384 B, 4 units 3 : 1: 1152 B by switch 0
    // (38.4 cycles on its up link), the last 348 B by switch 1 (34.8).
    const auto id = n->send(ChipId(0), ChipId(1), 1500, 0.0);
    const Timeline t = run_all(*n);
    CHECK(t.at(id, Network::EventKind::kSent) == Approx(38.4));
    CHECK(n->used_links().size() == 4);
  }
}

TEST_CASE("network: two chips sending to one chip share its down links, one cycle early or on time",
          "[ici][network][fabric]") {
  const ChipConfig chip = round_switched_chip("1");
  // One switch, 10 B/cycle. Chip 1's packet reaches the switch at 200 and
  // holds the down link to chip 2 until 300. Chip 0's packet sent at t
  // reaches the switch at t + 200: at t = 99 it waits until 300 (one cycle
  // early), at t = 100 it starts at once (on time).
  for (const double start : {99.0, 100.0}) {
    auto n = switched_network("node:3", chip);
    n->send(ChipId(1), ChipId(2), 1000, 0.0);
    const auto id = n->send(ChipId(0), ChipId(2), 1000, start);
    const Timeline t = run_all(*n);
    // 99: it waits a cycle and arrives at 500, not 499; 100: 500 without waiting.
    CHECK(t.at(id, Network::EventKind::kArrived) == Approx(500.0));
    CHECK(n->used_links().back().busy_cycles == Approx(200.0));
  }
}

TEST_CASE("network: a fat tree goes leaf to leaf on one rail and through a spine across rails",
          "[ici][network][fabric]") {
  const ChipConfig chip = round_switched_chip("1");
  // fat-tree:2x2 with 4-port switches: chips 0,1 in node 0, 2,3 in node 1;
  // rails (leaves) 0 and 1, 2 spines. A packet: 1000 / 5 = 200 cycles per
  // NIC-rate link plus 200 of latency.
  {
    auto n = switched_network("fat-tree:2x2", chip);
    const auto id = n->send(ChipId(0), ChipId(2), 1000, 0.0);  // same rail: chip -> leaf 0 -> chip
    CHECK(run_all(*n).at(id, Network::EventKind::kArrived) == Approx(2 * 400.0));
  }
  {
    auto n = switched_network("fat-tree:2x2", chip);
    const auto id = n->send(ChipId(0), ChipId(3), 1000, 0.0);  // leaf 0 -> spine 1 -> leaf 1
    CHECK(run_all(*n).at(id, Network::EventKind::kArrived) == Approx(4 * 400.0));
    std::vector<std::string> names;
    for (const auto& l : n->used_links()) names.push_back(l.name);
    std::sort(names.begin(), names.end());
    CHECK(names ==
          std::vector<std::string>{"chip 0 -> leaf 0", "leaf 0 -> spine 1", "leaf 1 -> chip 3", "spine 1 -> leaf 1"});
  }
  {
    auto n = switched_network("fat-tree:2x2", chip);
    const auto id = n->send(ChipId(2), ChipId(3), 1000, 0.0);  // one node: over its NVSwitch
    CHECK(run_all(*n).at(id, Network::EventKind::kArrived) == Approx(2 * (100.0 + 100.0)));
  }
}

TEST_CASE("network: an NCCL protocol slows a fat tree's scale-out links and pays its net hop latency",
          "[ici][network][fabric]") {
  ChipConfig chip = round_switched_chip("1");
  // LL: half the payload rate on every scale-out link (2.5 B/cycle: 400
  // cycles a packet), and a message through a spine takes at least the
  // protocol's 2 us net hop (the physical 4 x 200 cycles is less): the NIC ->
  // leaf link carries the 1200 cycles more.
  chip.fabric.protocol = "LL";
  chip.protocol.ll.payload_efficiency = 0.5;
  chip.protocol.ll.net_hop_latency_s = 2e-6;
  CHECK(chip.nic_payload_rate() == Approx(2.5e9));
  CHECK(chip.nic_hop_latency() == Approx(2e-6));
  {
    auto n = switched_network("fat-tree:2x2", chip);
    const auto id = n->send(ChipId(0), ChipId(3), 1000, 0.0);  // leaf 0 -> spine 1 -> leaf 1
    CHECK(run_all(*n).at(id, Network::EventKind::kArrived) == Approx(4 * (400.0 + 200.0) + 1200.0));
  }
  {
    auto n = switched_network("fat-tree:2x2", chip);
    const auto id = n->send(ChipId(0), ChipId(2), 1000, 0.0);  // one leaf: 2 x 200 cycles less than through a spine
    CHECK(run_all(*n).at(id, Network::EventKind::kArrived) == Approx(2 * (400.0 + 200.0) + 1200.0));
  }
  // A net hop latency below the physical path adds nothing.
  chip.protocol.ll.net_hop_latency_s = 500e-9;
  CHECK(chip.nic_hop_latency() == Approx(800e-9));
  auto n = switched_network("fat-tree:2x2", chip);
  const auto id = n->send(ChipId(0), ChipId(3), 1000, 0.0);
  CHECK(run_all(*n).at(id, Network::EventKind::kArrived) == Approx(4 * (400.0 + 200.0)));
}

TEST_CASE("network: switched fabrics split over partitions keep one network's timing", "[ici][network][fabric]") {
  ChipConfig chip = round_switched_chip("2,1,1");
  chip.fabric.switch_ports = 8;  // fat-tree:3x4: 4 leaves (rails), 4 spines
  for (const std::string shape : {"node:8", "fat-tree:3x4"}) {
    const Topology topology = make_topology(TopologyRequest{shape, std::nullopt, false}, chip);
    const std::uint32_t n = topology.chip_count();
    const NetworkFactory make = [&] { return switched_network(shape, chip); };
    for (const std::uint32_t seed : {1U, 2U}) {
      const Traffic traffic = make_traffic(topology, seed);
      const Outcome one = run_partitioned(topology, traffic, std::vector<std::uint32_t>(n, 0), 1, make);
      REQUIRE(one.completions.size() > 2 * traffic.initial.size());
      for (const std::uint32_t parts : {2U, 3U}) {
        std::vector<std::uint32_t> part_of(n);
        for (std::uint32_t c = 0; c < n; ++c) part_of[c] = (c * 7 + c / 5) % parts;
        INFO(shape << ", seed " << seed << ", " << parts << " partitions");
        const Outcome split = run_partitioned(topology, traffic, part_of, parts, make);
        CHECK(split.completions == one.completions);
        CHECK(split.links == one.links);
        CHECK(split.events == one.events);
      }
    }
  }
}
