// The fabric base and the kind registry. It knows no kind by name: each
// registers itself from its own file under ici/fabrics/ (kept in every link
// as the routing policies are, see ici/CMakeLists.txt).
#include "ici/fabric.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <map>

namespace tpuemu::ici {

namespace {

using FabricKinds = std::map<std::string, std::unique_ptr<FabricKind>, std::less<>>;

FabricKinds& fabric_kinds() {
  static FabricKinds kinds;
  return kinds;
}

}  // namespace

FabricKindRegistrar::FabricKindRegistrar(std::unique_ptr<FabricKind> kind) {
  std::string name(kind->name());
  if (!fabric_kinds().emplace(name, std::move(kind)).second) {
    std::fprintf(stderr, "tpuemu: two fabric kinds are named '%s'\n", name.c_str());
    std::abort();
  }
}

std::unique_ptr<Fabric> make_fabric(const Topology& topology, const ChipConfig& chip, std::string_view routing) {
  const auto it = fabric_kinds().find(topology.fabric());
  if (it == fabric_kinds().end()) {
    std::vector<std::string> names;
    for (const auto& [name, kind] : fabric_kinds()) names.push_back(name);
    throw TopologyError(fmt::format("unknown fabric '{}' (known: {})", topology.fabric(), fmt::join(names, ", ")));
  }
  return it->second->build(topology, chip, routing);
}

Fabric::Fabric(Topology topology) : topology_(std::move(topology)) {
  for (std::uint32_t c = 0; c < topology_.chip_count(); ++c) add_node(fmt::format("chip {}", c), c);
}

std::uint32_t Fabric::add_node(std::string name, std::uint32_t home_chip) {
  node_names_.push_back(std::move(name));
  home_chip_.push_back(home_chip);
  return static_cast<std::uint32_t>(node_names_.size() - 1);
}

std::uint32_t Fabric::add_link(LinkInfo link) {
  links_.push_back(std::move(link));
  return static_cast<std::uint32_t>(links_.size() - 1);
}

std::string Fabric::link_name(std::uint32_t link) const {
  const LinkInfo& l = links_.at(link);
  if (l.axis != kNoAxis) {
    return fmt::format("{} {}{}", node_names_[l.from], axis_name(l.axis), l.direction > 0 ? '+' : '-');
  }
  return fmt::format("{} -> {}", node_names_[l.from], node_names_[l.to]);
}

Fabric::Domain Fabric::add_switched_domain(const ChipConfig& chip, std::uint32_t first, std::uint32_t stride,
                                           std::uint32_t count, const std::string& prefix) {
  Domain d;
  for (std::uint32_t i = 0; i < count; ++i) d.chips.push_back(first + i * stride);
  const std::vector<std::uint64_t> per_switch = chip.fabric.links_per_switch();
  for (std::size_t s = 0; s < per_switch.size(); ++s) {
    const std::uint32_t node = add_node(fmt::format("{}nvswitch {}", prefix, s), first);
    d.switches.push_back(node);
    d.weights.push_back(static_cast<std::uint32_t>(per_switch[s]));
    d.up.emplace_back();
    d.down.emplace_back();
    const double rate = static_cast<double>(per_switch[s]) * chip.link_payload_rate();
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint32_t c = first + i * stride;
      // GPU -> switch carries the switch's forwarding latency and what the
      // protocol's hop latency adds (ChipConfig::switched_hop_latency).
      d.up.back().push_back(add_link(
          LinkInfo{c, node, rate, chip.switched_hop_latency() - chip.ici.hop_latency_s, "nvlink", kNoAxis, 0, true}));
      d.down.back().push_back(add_link(LinkInfo{node, c, rate, chip.ici.hop_latency_s, "nvlink", kNoAxis, 0, true}));
    }
  }
  return d;
}

}  // namespace tpuemu::ici
