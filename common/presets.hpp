// Chip presets by name, and loading a chip from preset + file + overrides.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/chip_config.hpp"

namespace tpuemu {

// Names of the built-in presets (configs/chips/*.json), sorted.
std::vector<std::string> preset_names();

// What the user asked for: a preset name and/or a chip file, then overrides.
struct ChipRequest {
  std::string preset;                  // e.g. "v5e"; empty = the file's base, or "v5e"
  std::string chip_file;               // optional path of a JSON chip file
  std::vector<std::string> overrides;  // "path=value" from --set, applied last
};

// Resolves a request into a validated config. A chip file may name a "base"
// preset (or another file path) that it overrides; without one, it must be
// complete. Throws ConfigError naming the file and field on any problem,
// including an unknown preset name or an unreadable file.
ChipConfig load_chip(const ChipRequest& request);

// The layer stack for `name` (a preset name or a file path), base first.
std::vector<ChipSpec> chip_layers(const std::string& name_or_path);

}  // namespace tpuemu
