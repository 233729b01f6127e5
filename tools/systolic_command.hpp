// `tpuemu systolic`: one tile through the RTL systolic array (mxu/rtl),
// checked against the C++ MXU, with the array's waveform for teaching.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int systolic_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
