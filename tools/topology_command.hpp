// `tpuemu topology`: resolve a pod topology on a chip preset (axes,
// wraparound, chip count) and show a route between two chips.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int topology_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
