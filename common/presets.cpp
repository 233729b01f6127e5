#include "common/presets.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "common/embedded_file.hpp"

namespace tpuemu {
namespace {

const EmbeddedFile* find_preset(std::string_view name) {
  for (const auto& f : embedded_chip_presets()) {
    if (f.stem == name) return &f;
  }
  return nullptr;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void append_layers(const std::string& name_or_path, std::vector<ChipSpec>& out, int depth) {
  if (depth > 8) throw ConfigError(name_or_path, "base", "chain of base presets is too deep (a cycle?)");
  ChipSpec spec;
  if (const EmbeddedFile* preset = find_preset(name_or_path)) {
    spec = parse_chip_spec(preset->content, std::string(preset->path));
  } else if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json")) {
    spec = parse_chip_spec(read_file(name_or_path), name_or_path);
  } else {
    std::string known;
    for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("--chip", "", fmt::format("unknown chip preset '{}' (known: {})", name_or_path, known));
  }
  if (spec.base) append_layers(*spec.base, out, depth + 1);
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
  append_layers(name_or_path, layers, 0);
  return layers;
}

ChipConfig load_chip(const ChipRequest& request) {
  std::vector<ChipSpec> layers;
  if (!request.chip_file.empty()) {
    ChipSpec file = parse_chip_spec(read_file(request.chip_file), request.chip_file);
    // An explicit preset wins over the file's own base; with neither, the file must be complete.
    const std::string base = !request.preset.empty() ? request.preset : file.base.value_or("");
    if (!base.empty()) layers = chip_layers(base);
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
  return resolve_chip(layers);
}

}  // namespace tpuemu
