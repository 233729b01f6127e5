// Fabric kind "fat-tree": NODES NVSwitch domains of N chips each (topology x
// = the chip in its node, y = the node), joined by a two-level, full-
// bisection, rail-optimised leaf/spine tree of fabric.switch_ports-port
// switches (the DGX SuperPod's, FABRICS.md section 1): every chip has one NIC
// of fabric.nic_bandwidth; chip g of each of up to ports/2 consecutive nodes
// (a scalable unit) hangs off leaf g of that unit; every leaf has one uplink
// of the NIC's rate to each of ports/2 spines. Routes: within a node over the
// NVSwitches (as "node"); between nodes chip -> leaf -> chip when both hang
// off one leaf, else chip -> leaf -> spine -> leaf -> chip, the spine chosen
// by (source + destination) mod spines (static ECMP: deterministic, and
// flows may collide on a spine as they do on real static routing). Under an
// NCCL protocol (fabric.protocol) every scale-out link moves payload at
// ChipConfig::nic_payload_rate, and the NIC -> leaf link carries what the
// protocol's hop latency adds to a path through a spine
// (ChipConfig::nic_hop_latency), so such a message takes that latency, one
// under a single leaf 2 x fabric.nic_latency less.
#include <fmt/format.h>

#include <memory>

#include "ici/fabric.hpp"

namespace tpuemu::ici {

namespace {

class FatTreeFabric final : public Fabric {
 public:
  FatTreeFabric(const Topology& topology, const ChipConfig& chip) : Fabric(topology) {
    per_node_ = topology.length(0);
    nodes_ = topology.length(1);
    for (std::uint32_t n = 0; n < nodes_; ++n) {
      domains_.push_back(add_switched_domain(chip, n * per_node_, 1, per_node_, fmt::format("node {} ", n)));
    }
    if (nodes_ == 1) return;
    const std::uint32_t half = static_cast<std::uint32_t>(chip.fabric.switch_ports / 2);
    unit_nodes_ = half;
    const std::uint32_t units = (nodes_ + half - 1) / half;
    const std::uint32_t leaves = per_node_ * units;
    const double rate = chip.nic_payload_rate();
    const double latency = chip.fabric.nic_latency_s;
    const double protocol_extra = chip.nic_hop_latency() - 4 * latency;
    for (std::uint32_t leaf = 0; leaf < leaves; ++leaf) {
      const std::uint32_t g = leaf % per_node_;
      const std::uint32_t unit = leaf / per_node_;
      leaves_.push_back(add_node(fmt::format("leaf {}", leaf), unit * half * per_node_ + g));
    }
    nic_up_.resize(topology.chip_count());
    nic_down_.resize(topology.chip_count());
    for (std::uint32_t c = 0; c < topology.chip_count(); ++c) {
      const std::uint32_t leaf = leaves_[leaf_of(c)];
      nic_up_[c] = add_link(LinkInfo{c, leaf, rate, latency + protocol_extra, "nic", kNoAxis, 0, true});
      nic_down_[c] = add_link(LinkInfo{leaf, c, rate, latency, "nic", kNoAxis, 0, true});
    }
    if (leaves == 1) return;
    spines_ = half;
    std::vector<std::uint32_t> spine_nodes;
    for (std::uint32_t s = 0; s < spines_; ++s) {
      spine_nodes.push_back(add_node(fmt::format("spine {}", s),
                                     static_cast<std::uint32_t>(std::uint64_t{s} * topology.chip_count() / spines_)));
    }
    uplink_.assign(leaves, std::vector<std::uint32_t>(spines_));
    downlink_.assign(spines_, std::vector<std::uint32_t>(leaves));
    for (std::uint32_t l = 0; l < leaves; ++l) {
      for (std::uint32_t s = 0; s < spines_; ++s) {
        uplink_[l][s] = add_link(LinkInfo{leaves_[l], spine_nodes[s], rate, latency, "uplink", kNoAxis, 0, true});
        downlink_[s][l] = add_link(LinkInfo{spine_nodes[s], leaves_[l], rate, latency, "uplink", kNoAxis, 0, true});
      }
    }
  }

  [[nodiscard]] std::string_view kind() const override { return "fat-tree"; }
  [[nodiscard]] const Domain* switched_domain(ChipId chip) const override {
    return &domains_.at(chip.value() / per_node_);
  }

  void paths(ChipId from, ChipId to, std::vector<Path>& out) const override {
    out.clear();
    const std::uint32_t a = from.value();
    const std::uint32_t b = to.value();
    if (a / per_node_ == b / per_node_) {
      const Domain& d = domains_[a / per_node_];
      for (std::size_t s = 0; s < d.switches.size(); ++s) {
        out.push_back(Path{{d.up[s][a % per_node_], d.down[s][b % per_node_]}, d.weights[s]});
      }
      return;
    }
    const std::uint32_t la = leaf_of(a);
    const std::uint32_t lb = leaf_of(b);
    if (la == lb) {
      out.push_back(Path{{nic_up_[a], nic_down_[b]}, 1});
      return;
    }
    const std::uint32_t spine = (a + b) % spines_;
    out.push_back(Path{{nic_up_[a], uplink_[la][spine], downlink_[spine][lb], nic_down_[b]}, 1});
  }

 private:
  // Leaf index of chip c: its rail (chip in node) in its node's scalable unit.
  [[nodiscard]] std::uint32_t leaf_of(std::uint32_t c) const {
    return c % per_node_ + per_node_ * (c / per_node_ / unit_nodes_);
  }

  std::uint32_t per_node_ = 1;
  std::uint32_t nodes_ = 1;
  std::uint32_t unit_nodes_ = 1;
  std::uint32_t spines_ = 0;
  std::vector<Domain> domains_;
  std::vector<std::uint32_t> leaves_;
  std::vector<std::uint32_t> nic_up_;
  std::vector<std::uint32_t> nic_down_;
  std::vector<std::vector<std::uint32_t>> uplink_;    // [leaf][spine]
  std::vector<std::vector<std::uint32_t>> downlink_;  // [spine][leaf]
};

class FatTreeKind final : public FabricKind {
 public:
  [[nodiscard]] std::string_view name() const override { return "fat-tree"; }
  [[nodiscard]] std::unique_ptr<Fabric> build(const Topology& topology, const ChipConfig& chip,
                                              std::string_view /*routing*/) const override {
    const auto fail = [&](const std::string& problem) {
      return TopologyError(fmt::format("topology '{}' on {}: {}", topology.shape(), chip.name, problem));
    };
    if (!chip.fabric.switched())
      throw fail(fmt::format("{} has no NVSwitch (fabric.kind {})", chip.name, chip.fabric.kind));
    if (topology.axis_count() != 2) throw fail("a fat tree numbers its chips on two axes (chip in node, node)");
    const std::uint32_t nodes = topology.length(1);
    if (nodes > 1) {
      if (!(chip.fabric.nic_bandwidth > 0)) {
        throw fail(fmt::format("{} has no scale-out NIC (fabric.nic_bandwidth is 0)", chip.name));
      }
      if (chip.fabric.switch_ports < 2) {
        throw fail(fmt::format("{} names no leaf/spine switch (fabric.switch_ports is {})", chip.name,
                               chip.fabric.switch_ports));
      }
      const std::uint64_t half = chip.fabric.switch_ports / 2;
      const std::uint64_t leaves = topology.length(0) * ((nodes + half - 1) / half);
      if (leaves > chip.fabric.switch_ports) {
        throw fail(
            fmt::format("{} leaves, more than a two-level tree of {}-port switches joins ({} nodes of {} "
                        "chips at most)",
                        leaves, chip.fabric.switch_ports, chip.fabric.switch_ports / topology.length(0) * half,
                        topology.length(0)));
      }
    }
    return std::make_unique<FatTreeFabric>(topology, chip);
  }
};

const FabricKindRegistrar kFatTreeRegistrar{std::make_unique<FatTreeKind>()};

}  // namespace

}  // namespace tpuemu::ici
