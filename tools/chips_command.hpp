// `tpuemu chips` and `tpuemu params`: presets, their headline numbers, and the
// declared parameters.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int chips_command(const std::vector<std::string>& args);
int params_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
