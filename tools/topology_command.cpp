#include "tools/topology_command.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/parse_number.hpp"
#include "ici/fabric.hpp"
#include "ici/routing.hpp"
#include "ici/topology.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {

int topology_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  add_topology_options(options);
  options.add_options()("shape", po::value<std::string>(),
                        "axes, e.g. 8x16, 4x4x4, 16; or node:8, nvl:72, fat-tree:4x8 on a GPU preset")(
      "route", po::value<std::string>(), "FROM,TO: print the route between two chips (linear ids)");
  po::positional_options_description positional;
  positional.add("shape", 1);
  bool help = false;
  const auto vm = parse_options("topology", "SHAPE [--chip v5e] [--wrap x,z | --no-wrap] [--force] [--route A,B]", args,
                                options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  if (vm->count("shape") == 0U) {
    fmt::print(stderr, "tpuemu topology: no shape given (e.g. tpuemu topology 8x16 --chip v5e)\n");
    return kExitBadInput;
  }
  try {
    const ChipConfig chip = load_chip(chip_request(*vm));
    const ici::Topology topology = topology_from(*vm, (*vm)["shape"].as<std::string>(), chip);
    fmt::print("{} on {}\n", ici::describe(topology), chip.name);
    const auto fabric = ici::make_fabric(topology, chip, (*vm)["routing"].as<std::string>());
    if (topology.switched()) {
      std::uint64_t links = 0;
      for (const auto& l : fabric->links()) links += l.exists ? 1 : 0;
      fmt::print("fabric: {} ({} nodes: {} chips and {} switches; {} directed links)\n", fabric->kind(),
                 fabric->node_count(), fabric->chip_count(), fabric->node_count() - fabric->chip_count(), links);
      fmt::print(
          "links: {} NVLinks per chip of {} one way, {} of payload ({} to the switches: {}), {} per traversal + {} "
          "in a switch\n",
          chip.ici.links_per_chip, format_quantity(chip.ici.link_bandwidth, Quantity::kBandwidth),
          format_quantity(chip.link_payload_rate(), Quantity::kBandwidth),
          format_quantity(chip.switched_egress(), Quantity::kBandwidth), chip.fabric.switch_links,
          format_quantity(chip.ici.hop_latency_s, Quantity::kTime),
          format_quantity(chip.fabric.switch_latency_s, Quantity::kTime));
      if (topology.fabric() == "fat-tree" && topology.length(1) > 1) {
        fmt::print("scale-out: one NIC of {} per chip, {} per link, {}-port leaf/spine switches\n",
                   format_quantity(chip.fabric.nic_bandwidth, Quantity::kBandwidth),
                   format_quantity(chip.fabric.nic_latency_s, Quantity::kTime), chip.fabric.switch_ports);
      }
    } else {
      fmt::print("links: {} one way per link, {} per hop\n",
                 format_quantity(chip.ici.link_bandwidth, Quantity::kBandwidth),
                 format_quantity(chip.ici.hop_latency_s, Quantity::kTime));
    }
    if (vm->count("route") != 0U) {
      const std::string text = (*vm)["route"].as<std::string>();
      const auto comma = text.find(',');
      // Plain integers with a "not a number" value: GCC 12 at -Os reports a false
      // -Wmaybe-uninitialized on std::optional built from a conditional here.
      constexpr std::uint64_t kNotANumber = UINT64_MAX;
      const std::uint64_t from_id =
          comma == std::string::npos ? kNotANumber : parse_unsigned(text.substr(0, comma)).value_or(kNotANumber);
      const std::uint64_t to_id =
          comma == std::string::npos ? kNotANumber : parse_unsigned(text.substr(comma + 1)).value_or(kNotANumber);
      if (from_id == kNotANumber || to_id == kNotANumber) {
        throw std::invalid_argument(fmt::format("--route {}: expected FROM,TO (two chip numbers, e.g. 0,5)", text));
      }
      if (from_id >= topology.chip_count() || to_id >= topology.chip_count()) {
        throw std::invalid_argument(
            fmt::format("--route {}: chips are numbered 0..{}", text, topology.chip_count() - 1));
      }
      const ChipId from(static_cast<std::uint32_t>(from_id));
      const ChipId to(static_cast<std::uint32_t>(to_id));
      if (topology.switched()) {
        std::vector<ici::Fabric::Path> paths;
        if (from != to) fabric->paths(from, to, paths);
        fmt::print("route {} -> {}: {} path{} (a transfer is striped over them by weight)\n", from.value(), to.value(),
                   paths.size(), paths.size() == 1 ? "" : "s");
        for (const auto& p : paths) {
          std::string hops = fabric->node_name(from.value());
          for (std::uint32_t l : p.links) hops += " -> " + fabric->node_name(fabric->links()[l].to);
          fmt::print("  weight {}: {}\n", p.weight, hops);
        }
        return kExitOk;
      }
      const auto route = ici::routing_policy((*vm)["routing"].as<std::string>()).route(topology, from, to);
      fmt::print("route {} -> {} ({}): {} hop{}\n", from.value(), to.value(), (*vm)["routing"].as<std::string>(),
                 route.size(), route.size() == 1 ? "" : "s");
      for (const auto& link : route) {
        fmt::print("  {} -> {}  ({}{})\n", link.from.value(), link.to.value(), link.direction > 0 ? "+" : "-",
                   ici::axis_name(link.axis));
      }
    }
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu topology: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {  // TopologyError, RoutingError, bad numbers
    fmt::print(stderr, "tpuemu topology: {}\n", e.what());
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace tpuemu::cli
