// The ICI network's timing at the edges: one packet, pipelining of packets
// over hops, alternation at a shared first link, FIFO behind a busy link.
#include <catch2/catch.hpp>
#include <vector>

#include "ici/network.hpp"

using namespace tpuemu;
using namespace tpuemu::ici;

namespace {

// 10 bytes per cycle, 100 cycles per hop, 1000-byte packets.
const Network::Config kConfig{10.0, 100.0, 1000};

struct Timeline {
  std::vector<Network::Completion> events;
  [[nodiscard]] double at(Network::TransferId id, Network::EventKind kind) const {
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
