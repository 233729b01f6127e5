// libFuzzer target: arbitrary bytes as a chip file (the bytes up to the first
// NUL) and --set assignments (the lines after it), resolved on top of the
// file's base if it names a built-in preset, else on top of v5e. The reader
// must refuse with ConfigError, or resolve to a config whose every parameter
// lies in its declared range and whose JSON dump reads back to the same
// parameters. Any other exception, a crash, a sanitizer report or a trap is
// a bug. No input makes it read a file: a base naming a path is replaced by v5e.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/chip_config.hpp"
#include "common/json_file.hpp"
#include "common/presets.hpp"

namespace {

[[noreturn]] void broken(const char* property, const std::string& detail) {
  std::fprintf(stderr, "fuzz_chip_config: %s does not hold: %s\n", property, detail.c_str());
  __builtin_trap();
}

// Nesting depth of a parsed document, counted without recursion.
int depth_of(const nlohmann::json& root) {
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> stack{{&root, 1}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    deepest = std::max(deepest, depth);
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return deepest;
}

std::string params_part(const std::string& dump) {
  return dump.substr(dump.find("\"params\""));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpuemu;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = bytes.find('\0');
  const std::string_view file = bytes.substr(0, nul);

  // 1. The bounded reader never hands out a document deeper than its limit.
  try {
    const nlohmann::json doc = parse_json(file, "fuzz.json");
    if (depth_of(doc) > JsonLimits{}.max_depth) broken("nesting <= max_depth", std::to_string(depth_of(doc)));
  } catch (const InputFileError&) {
  }

  // 2. Chip file + overrides -> a validated config, or a ConfigError.
  ChipConfig config;
  try {
    std::vector<ChipSpec> layers;
    ChipSpec spec = parse_chip_spec(file, "fuzz.json");
    const bool names_path = spec.base && (spec.base->find('/') != std::string::npos || spec.base->ends_with(".json"));
    layers = chip_layers(spec.base && !names_path ? *spec.base : std::string("v5e"));
    layers.push_back(std::move(spec));
    if (nul != std::string_view::npos) {
      ChipSpec overrides;
      overrides.origin = "--set";
      std::string_view rest = bytes.substr(nul + 1);
      while (!rest.empty()) {
        const std::size_t end = std::min(rest.find('\n'), rest.size());
        if (end > 0) apply_override(overrides, rest.substr(0, end));
        rest.remove_prefix(std::min(end + 1, rest.size()));
      }
      layers.push_back(std::move(overrides));
    }
    config = resolve_chip(layers);
  } catch (const ConfigError&) {
    return 0;
  }

  // 3. Every parameter within its range.
  for (const ParamSpec& p : chip_params()) {
    if (p.is_text) continue;
    const auto v = param_value(config, p);
    const double value =
        std::holds_alternative<double>(v) ? std::get<double>(v) : static_cast<double>(std::get<std::uint64_t>(v));
    if (!(value >= p.min_value && value <= p.max_value)) broken("min <= value <= max", p.path);
  }

  // 4. The dump reads back to the same parameters.
  const std::string dump = chip_config_json(config);
  ChipConfig again;
  try {
    const ChipSpec read_back = parse_chip_spec(dump, "dump.json");
    again = resolve_chip(std::span<const ChipSpec>(&read_back, 1));
  } catch (const ConfigError& e) {
    broken("resolve(parse(chip_config_json(c))) succeeds", e.what());
  }
  if (params_part(chip_config_json(again)) != params_part(dump)) broken("the dump reads back", dump);
  return 0;
}
