// libFuzzer target: arbitrary bytes as a command line (arguments separated by
// NUL bytes) through the option parser the commands share: the whole-number
// and real-number option values, --chip/--chip-file/--set, the topology
// options and --max-cycles. A parse either fails with a usage message or
// yields values inside their declared ranges; the number and axis-list
// parsers accept only text that reads back to the same value. Any other
// exception, a crash, a sanitizer report or a trap is a bug.
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "common/parse_number.hpp"
#include "common/presets.hpp"
#include "ici/topology.hpp"
#include "tools/options.hpp"

namespace {

namespace po = boost::program_options;
using namespace tpuemu;

[[noreturn]] void broken(const char* property, const std::string& detail) {
  std::fprintf(stderr, "fuzz_options: %s does not hold: %s\n", property, detail.c_str());
  __builtin_trap();
}

// Each number parser: what it accepts reads back to the same value.
void check_number_parsers(const std::string& text) {
  if (const auto v = parse_unsigned(text)) {
    if (parse_unsigned(std::to_string(*v)) != v) broken("parse_unsigned round trip", text);
    if (parse_bytes(text) != v) broken("parse_bytes agrees with parse_unsigned on plain numbers", text);
  }
  if (const auto b = parse_bytes(text); b && parse_bytes(std::to_string(*b)) != b) broken("parse_bytes round trip", text);
  for (std::size_t axes = 1; axes <= 3; ++axes) {
    try {
      const auto list = ici::parse_axis_list(text, axes, "--axes", "name axes like x,y");
      std::vector<bool> seen(axes, false);
      for (const std::size_t a : list) {
        if (a >= axes || seen[a]) broken("parse_axis_list gives distinct axes of the topology", text);
        seen[a] = true;
      }
    } catch (const ici::TopologyError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Usage messages of refused command lines are expected: keep them off the
  // terminal (sanitizer reports write to fd 2 directly and still show).
  std::cerr.setstate(std::ios::failbit);
  std::cout.setstate(std::ios::failbit);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args(1);
  for (std::size_t i = 0; i < size && args.size() <= 32; ++i) {
    if (data[i] == 0) {
      args.emplace_back();
    } else if (args.back().size() < 256) {
      args.back() += static_cast<char>(data[i]);
    }
  }
  for (const auto& a : args) check_number_parsers(a);

  po::options_description options("options");
  cli::add_chip_options(options);
  cli::add_topology_options(options);
  cli::add_max_cycles_option(options);
  options.add_options()("n", cli::whole_value(1), "a count")("seed", cli::whole_value(0, UINT32_MAX), "a seed")(
      "rtol", cli::real_value(0, DBL_MAX), "a tolerance")("topology", po::value<std::string>()->default_value("4x4"),
                                                          "a shape")(
      "in", po::value<std::vector<std::string>>()->composing(), "bindings");
  po::positional_options_description positional;
  positional.add("topology", 1);
  bool help = false;
  const auto vm = cli::parse_options("fuzz", "", args, options, positional, help);
  if (!vm) return 0;
  if (vm->count("n") != 0U && (*vm)["n"].as<std::uint64_t>() < 1) broken("--n >= 1", "");
  if (vm->count("seed") != 0U && (*vm)["seed"].as<std::uint64_t>() > UINT32_MAX) broken("--seed fits 32 bits", "");
  if (vm->count("rtol") != 0U) {
    const double r = (*vm)["rtol"].as<double>();
    if (!std::isfinite(r) || r < 0) broken("--rtol finite and >= 0", std::to_string(r));
  }
  if (cli::max_cycles(*vm) < 1) broken("--max-cycles >= 1", "");
  // The shared options resolve or refuse cleanly. No files are read while
  // fuzzing: chip files have their own target (fuzz_chip_config).
  const ChipRequest request = cli::chip_request(*vm);
  if (!request.chip_file.empty() || request.preset.find('/') != std::string::npos ||
      request.preset.ends_with(".json")) {
    return 0;
  }
  try {
    const ChipConfig chip = load_chip(request);
    (void)cli::topology_from(*vm, (*vm)["topology"].as<std::string>(), chip);
  } catch (const ConfigError&) {
  } catch (const ici::TopologyError&) {
  }
  return 0;
}
