// The physical network of a pod as a graph: nodes are the chips (ids
// 0..chip_count-1, the topology's linear ids) and, on switched fabrics, the
// switches after them; directed links join two nodes, each with its own
// bandwidth and latency. The Network (ici/network.hpp) times transfers over
// it; a fabric says which links a transfer from one chip to another crosses.
//
// Kinds register themselves by the topology's fabric name (house style 6),
// one file each under ici/fabrics/: "torus" (the TPU ICI tori of today, link
// ids chip*6 + axis*2 + (direction > 0), routed by a routing policy), "node"
// and "nvl" (one NVSwitch domain), "fat-tree" (NVSwitch nodes joined by a
// two-level leaf/spine tree through one NIC per chip). Plain C++, no SystemC.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/chip_config.hpp"
#include "common/types.hpp"
#include "ici/topology.hpp"

namespace tpuemu::ici {

inline constexpr std::uint8_t kNoAxis = 0xff;

class Fabric {
 public:
  struct LinkInfo {
    std::uint32_t from = 0;  // node ids
    std::uint32_t to = 0;
    double bytes_per_second = 0;  // one way
    // From a packet leaving the link until it reaches `to` and may enter its
    // next link: wire, port and (for a switch) forwarding latency.
    double latency_s = 0;
    std::string_view kind;        // "ici", "nvlink", "nic", "uplink" (static text)
    std::uint8_t axis = kNoAxis;  // torus links: axis and direction (+1/-1)
    std::int8_t direction = 0;
    bool exists = true;  // torus: the slot of a link a chip does not have
  };
  // A chain of links from one chip to another; a transfer is striped over
  // its fabric's paths in proportion to their weights.
  struct Path {
    std::vector<std::uint32_t> links;
    std::uint32_t weight = 1;
  };

  // One switched domain (an NVSwitch node or rack): its chips by rank (the
  // order in-network reductions sum in), its switches, each switch's weight
  // (links to every chip) and, per switch s, the links up[s][rank] (chip ->
  // switch) and down[s][rank] (switch -> chip).
  struct Domain {
    std::vector<std::uint32_t> chips;
    std::vector<std::uint32_t> switches;
    std::vector<std::uint32_t> weights;
    std::vector<std::vector<std::uint32_t>> up;
    std::vector<std::vector<std::uint32_t>> down;
  };

  virtual ~Fabric() = default;
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  [[nodiscard]] const Topology& topology() const { return topology_; }
  [[nodiscard]] std::uint32_t chip_count() const { return topology_.chip_count(); }
  [[nodiscard]] std::uint32_t node_count() const { return static_cast<std::uint32_t>(node_names_.size()); }
  // "chip 3", "nvswitch 1 of node 0", "leaf 2", "spine 0".
  [[nodiscard]] const std::string& node_name(std::uint32_t node) const { return node_names_.at(node); }
  // The chip whose partition (one pod over MPI ranks) handles a node's
  // outgoing links: a chip itself; a switch, a chip it serves.
  [[nodiscard]] std::uint32_t home_chip(std::uint32_t node) const { return home_chip_.at(node); }
  [[nodiscard]] std::span<const LinkInfo> links() const { return links_; }
  // "chip 3 x+" on a torus, "chip 3 -> nvswitch 1" elsewhere.
  [[nodiscard]] std::string link_name(std::uint32_t link) const;
  [[nodiscard]] virtual std::string_view kind() const = 0;

  // The paths of a transfer from `from` to `to` (distinct chips of the
  // topology), appended to `out` (cleared first). Contract: at least one;
  // each starts at `from` and ends at `to`; deterministic (a function of the
  // two chips), so every partition computes the same.
  virtual void paths(ChipId from, ChipId to, std::vector<Path>& out) const = 0;
  // The switched domain `chip` belongs to; null on a torus.
  [[nodiscard]] virtual const Domain* switched_domain(ChipId /*chip*/) const { return nullptr; }

 protected:
  explicit Fabric(Topology topology);
  // Chips 0..chip_count-1 are added as nodes by the constructor.
  std::uint32_t add_node(std::string name, std::uint32_t home_chip);
  std::uint32_t add_link(LinkInfo link);
  // One NVSwitch domain over chips first, first + stride, ... (count of them):
  // chip.fabric.links_per_switch() switches, named with `prefix`; per
  // switch s a link each way between every chip and s of
  // links_per_switch[s] x chip.link_payload_rate(), latency
  // chip.switched_hop_latency() - chip.ici.hop_latency (chip to switch: the
  // hop, the switch's forwarding latency and what the NCCL protocol adds) and
  // chip.ici.hop_latency (switch to chip). Returns the
  // switches' node ids; up[s][i] / down[s][i] are the links of the i-th chip.
  Domain add_switched_domain(const ChipConfig& chip, std::uint32_t first, std::uint32_t stride, std::uint32_t count,
                             const std::string& prefix);

  Topology topology_;

 private:
  std::vector<std::string> node_names_;
  std::vector<std::uint32_t> home_chip_;
  std::vector<LinkInfo> links_;
};

// A fabric kind: builds the fabric of a topology whose fabric() is its name.
class FabricKind {
 public:
  virtual ~FabricKind() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Throws TopologyError (naming the problem) when the chip cannot form it.
  [[nodiscard]] virtual std::unique_ptr<Fabric> build(const Topology& topology, const ChipConfig& chip,
                                                      std::string_view routing) const = 0;
};

// Builds the fabric of `topology` (its fabric() names the kind) for `chip`.
// `routing` names the routing policy of a torus (ignored by switched kinds).
// Throws TopologyError for an unknown kind or a chip that cannot form it,
// RoutingError for an unknown policy.
std::unique_ptr<Fabric> make_fabric(const Topology& topology, const ChipConfig& chip, std::string_view routing);

class RoutingPolicy;
// A torus whose links all have one rate and latency, routed by `routing`.
std::unique_ptr<Fabric> make_torus_fabric(const Topology& topology, const RoutingPolicy& routing,
                                          double bytes_per_second, double latency_s);

// Registers a kind for the program's lifetime (from a namespace-scope object
// in the kind's own file; a second kind of the same name aborts at start).
class FabricKindRegistrar {
 public:
  explicit FabricKindRegistrar(std::unique_ptr<FabricKind> kind);
};

}  // namespace tpuemu::ici
