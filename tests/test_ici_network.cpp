// The ICI network's timing at the edges: one packet, pipelining of packets
// over hops, alternation at a shared first link, FIFO behind a busy link.
#include <catch2/catch.hpp>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ici/network.hpp"

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

Traffic make_traffic(const Topology& t, std::uint32_t seed) {
  Traffic traffic;
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  const auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
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
Outcome run_partitioned(const Topology& topology, const Traffic& traffic, const std::vector<std::uint32_t>& part_of,
                        std::uint32_t parts) {
  std::vector<std::unique_ptr<Network>> nets;
  for (std::uint32_t p = 0; p < parts; ++p) {
    nets.push_back(std::make_unique<Network>(topology, dor(), kConfig));
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
      out.links.emplace_back(l.link.from.value(), l.link.axis, l.link.direction, l.busy_cycles, l.bytes, l.packets);
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
