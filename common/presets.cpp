#include "common/presets.hpp"

#include <fmt/format.h>

#include "common/embedded_file.hpp"
#include "common/log.hpp"

namespace tpuemu {
namespace {

const EmbeddedFile* find_preset(std::string_view name) {
  for (const auto& f : embedded_chip_presets()) {
    if (f.stem == name) return &f;
  }
  return nullptr;
}

// Appends the layers of `name_or_path`, base first. `named_by` is the chip
// file whose "base" field names it, or empty for --chip.
void append_layers(const std::string& name_or_path, const std::string& named_by, std::vector<ChipSpec>& out,
                   int depth) {
  if (depth > 8) throw ConfigError(name_or_path, "base", "chain of base presets is too deep (a cycle?)");
  ChipSpec spec;
  if (const EmbeddedFile* preset = find_preset(name_or_path)) {
    spec = parse_chip_spec(preset->content, std::string(preset->path));
  } else if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json")) {
    spec = read_chip_spec(name_or_path);
  } else {
    std::string known;
    for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    const std::string message = fmt::format("unknown chip preset '{}' (known: {})", name_or_path, known);
    if (named_by.empty()) throw ConfigError("--chip", "", message);
    throw ConfigError(named_by, "base", message);
  }
  if (spec.base) append_layers(*spec.base, spec.origin, out, depth + 1);
  out.push_back(std::move(spec));
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& f : embedded_chip_presets()) names.emplace_back(f.stem);
  return names;
}

std::vector<ChipSpec> chip_layers(const std::string& name_or_path) {
  std::vector<ChipSpec> layers;
  append_layers(name_or_path, "", layers, 0);
  return layers;
}

ChipConfig load_chip(const ChipRequest& request) {
  std::vector<ChipSpec> layers;
  if (!request.chip_file.empty()) {
    ChipSpec file = read_chip_spec(request.chip_file);
    // An explicit preset wins over the file's own base; with neither, the file must be complete.
    if (!request.preset.empty()) {
      append_layers(request.preset, "", layers, 0);
    } else if (file.base) {
      append_layers(*file.base, file.origin, layers, 1);
    }
    layers.push_back(std::move(file));
  } else {
    layers = chip_layers(request.preset.empty() ? "v5e" : request.preset);
  }
  if (!request.overrides.empty()) {
    ChipSpec overrides;
    overrides.origin = "--set";
    for (const auto& o : request.overrides) apply_override(overrides, o);
    layers.push_back(std::move(overrides));
  }
  ChipConfig chip = resolve_chip(layers);
  std::string origins;
  for (const auto& layer : layers) origins += (origins.empty() ? "" : " + ") + layer.origin;
  TPUEMU_LOG_INFO("chip {}: {} (TensorCores per chip: {}; MXUs per core: {} of {}x{})", chip.name, origins,
                  chip.tensorcores_per_chip, chip.mxu.count, chip.mxu.size, chip.mxu.size);
  return chip;
}

}  // namespace tpuemu
