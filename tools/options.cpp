#include "tools/options.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <iostream>
#include <sstream>

namespace tpuemu::cli {

std::optional<po::variables_map> parse_options(const std::string& name, const std::string& synopsis,
                                               const std::vector<std::string>& args, po::options_description& options,
                                               const po::positional_options_description& positional, bool& help_shown) {
  options.add_options()("help,h", "show this help");
  help_shown = false;
  std::ostringstream usage;
  usage << "usage: tpuemu " << name << " " << synopsis << "\n\n" << options;
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
    if (vm.count("help") != 0U) {
      std::cout << usage.str();
      help_shown = true;
      return std::nullopt;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << fmt::format("tpuemu {}: {}\n\n", name, e.what()) << usage.str();
    return std::nullopt;
  }
  return vm;
}

void add_chip_options(po::options_description& options) {
  options.add_options()("chip", po::value<std::string>(),
                        "chip preset name (v4p, v5e, v5p, v6e) or path of a chip JSON file")(
      "chip-file", po::value<std::string>(), "JSON chip file overriding the preset (may name its own \"base\")")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override one parameter, e.g. --set hbm.bandwidth=1.0e12 (repeatable; see `tpuemu params`)");
}

ChipRequest chip_request(const po::variables_map& vm) {
  ChipRequest r;
  if (vm.count("chip") != 0U) r.preset = vm["chip"].as<std::string>();
  if (vm.count("chip-file") != 0U) r.chip_file = vm["chip-file"].as<std::string>();
  if (vm.count("set") != 0U) r.overrides = vm["set"].as<std::vector<std::string>>();
  return r;
}

void add_topology_options(po::options_description& options) {
  options.add_options()("wrap", po::value<std::string>(),
                        "axes with wraparound links, e.g. x,z (overrides the preset's rule)")(
      "no-wrap", "no wraparound on any axis")("force", "allow more chips than the preset's largest slice")(
      "routing", po::value<std::string>()->default_value("dimension-order"), "routing policy");
}

ici::Topology topology_from(const po::variables_map& vm, const std::string& shape, const ChipConfig& chip) {
  ici::TopologyRequest request;
  request.shape = shape;
  request.force = vm.count("force") != 0U;
  const std::size_t axes = static_cast<std::size_t>(std::count(shape.begin(), shape.end(), 'x')) + 1;
  if (vm.count("no-wrap") != 0U) request.wrap = std::vector<bool>(axes, false);
  if (vm.count("wrap") != 0U) request.wrap = ici::parse_wrap_axes(vm["wrap"].as<std::string>(), axes);
  return ici::make_topology(request, chip);
}

}  // namespace tpuemu::cli
