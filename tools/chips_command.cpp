#include "tools/chips_command.hpp"

#include <fmt/format.h>

#include <iostream>

#include "common/chip_config.hpp"
#include "common/presets.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {
namespace {

std::string topology_text(const ChipConfig& c) {
  if (c.fabric.switched()) {
    return fmt::format("NVSwitch domain of up to {} (links {}){}", c.fabric.domain_size, c.fabric.switch_links,
                       c.fabric.nic_bandwidth > 0 ? ", fat tree over NICs" : "");
  }
  return fmt::format("{}D torus, up to {}, axis wraps at multiples of {}", c.ici.torus_dims, c.ici.max_slice,
                     c.ici.wrap_multiple);
}

void print_table(const std::vector<ChipConfig>& chips) {
  fmt::print("{:<6} {:>5} {:>11} {:>9} {:>11} {:>9} {:>11} {:>10} {:>5}  {}\n", "chip", "cores", "MXUs", "clock",
             "bf16 FLOP/s", "HBM", "HBM BW", "ICI/link", "links", "topology");
  for (const auto& c : chips) {
    fmt::print("{:<6} {:>5} {:>11} {:>9} {:>11.3g} {:>9} {:>11} {:>10} {:>5}  {}\n", c.name, c.tensorcores_per_chip,
               fmt::format("{}x{} {}^2", c.tensorcores_per_chip, c.mxu.count, c.mxu.size),
               format_quantity(c.clock_hz, Quantity::kFrequency), c.peak_bf16_flops(),
               format_quantity(static_cast<double>(c.hbm.size_bytes), Quantity::kBytes),
               format_quantity(c.hbm.bandwidth, Quantity::kBandwidth),
               format_quantity(c.ici.link_bandwidth, Quantity::kBandwidth), c.ici.links_per_chip, topology_text(c));
  }
}

void print_details(const ChipConfig& c) {
  fmt::print("{}: {}\n", c.name, c.description);
  fmt::print("  peak bf16 FLOP/s  {:.4g}  ({} MXUs x {}^2 x 2 x {})\n", c.peak_bf16_flops(), c.mxus_per_chip(),
             c.mxu.size, format_quantity(c.clock_hz, Quantity::kFrequency));
  fmt::print("  HBM               {} at {}\n", format_quantity(static_cast<double>(c.hbm.size_bytes), Quantity::kBytes),
             format_quantity(c.hbm.bandwidth, Quantity::kBandwidth));
  if (c.mxus_per_chip() == 0) {
    fmt::print("  compute           not modelled (no MXU: MXU ops are refused; the VPU reduces)\n");
  } else {
    fmt::print("  roofline ridge    {:.0f} FLOP per HBM byte\n", c.peak_bf16_flops() / c.hbm.bandwidth);
  }
  fmt::print("  {:<17} {} per link one way, {} links\n", c.fabric.switched() ? "NVLink" : "ICI",
             format_quantity(c.ici.link_bandwidth, Quantity::kBandwidth), c.ici.links_per_chip);
  fmt::print("  topology          {}\n\n", topology_text(c));
  fmt::print("  {:<26} {:<16} {}\n", "parameter", "value", "provenance");
  for (const ParamSpec& spec : chip_params()) {
    const auto& prov = c.provenance.at(spec.path);
    fmt::print("  {:<26} {:<16} {}: {}\n", spec.path, format_param(c, spec), to_string(prov.kind), prov.text);
  }
}

}  // namespace

int chips_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  options.add_options()("json", "print the fully resolved configuration as JSON")(
      "names", po::value<std::vector<std::string>>(), "presets to show (default: all)");
  po::positional_options_description positional;
  positional.add("names", -1);
  bool help = false;
  const auto vm = parse_options("chips", "[NAME...] [--json] [--chip NAME] [--chip-file FILE] [--set PATH=VALUE]...",
                                args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;

  ChipRequest base = chip_request(*vm);
  std::vector<std::string> names;
  if (vm->count("names") != 0U) names = (*vm)["names"].as<std::vector<std::string>>();
  if (!base.preset.empty()) names.insert(names.begin(), base.preset);
  const bool listing_all = names.empty() && base.chip_file.empty();
  if (listing_all) names = preset_names();
  if (names.empty()) names.emplace_back();  // the chip file alone (with its own base)

  std::vector<ChipConfig> chips;
  try {
    for (const auto& n : names) {
      ChipRequest r = base;
      r.preset = n;
      chips.push_back(load_chip(r));
    }
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu chips: {}\n", e.what());
    return kExitBadInput;
  }

  if (vm->count("json") != 0U) {
    if (chips.size() != 1) {
      fmt::print(stderr, "tpuemu chips: --json prints one chip; name it (e.g. `tpuemu chips v5e --json`)\n");
      return kExitBadInput;
    }
    std::cout << chip_config_json(chips.front()) << "\n";
    return kExitOk;
  }
  if (listing_all || chips.size() > 1) {
    print_table(chips);
  } else {
    print_details(chips.front());
  }
  return kExitOk;
}

int params_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  po::positional_options_description positional;
  bool help = false;
  const auto vm = parse_options("params", "", args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  fmt::print("{:<26} {:<7} {:<24} {}\n", "parameter", "unit", "range", "meaning");
  for (const ParamSpec& spec : chip_params()) {
    fmt::print("{:<26} {:<7} {:<24} {}\n", spec.path, spec.is_text ? "text" : base_unit(spec.quantity),
               spec.is_text ? (spec.path == "ici.max_slice" ? "AxB or AxBxC" : "text") : format_range(spec), spec.description);
  }
  fmt::print(
      "\nUnits: frequency Hz/kHz/MHz/GHz; size B/KB/MB/GB (x1000) or KiB/MiB/GiB (x1024); bandwidth "
      "<size>/s; time s/ms/us/ns/ps; cycles as plain integers. A bare number is in the base unit.\n"
      "Ranges (inclusive) hold every shipped preset with room for what-if studies, and refuse sizes that would only "
      "exhaust the host or overflow cycle counts; a chip must also satisfy the rules between parameters (vmem.size "
      "a whole number of vpu.lanes x 4 B rows, mxu.size and vpu.lanes dividing one another, dma.chunk_size a "
      "multiple of 32 B, ici.max_slice with ici.torus_dims axes).\n");
  return kExitOk;
}

}  // namespace tpuemu::cli
