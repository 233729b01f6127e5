// Helpers shared by the test files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/presets.hpp"

namespace tpuemu::test {

// A built-in preset, optionally with --set overrides.
inline ChipConfig preset(const std::string& name, std::vector<std::string> overrides = {}) {
  ChipRequest r;
  r.preset = name;
  r.overrides = std::move(overrides);
  return load_chip(r);
}

}  // namespace tpuemu::test
