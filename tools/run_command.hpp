// `tpuemu run`: one program on one emulated chip, with .npy operands, a text
// summary (cycles, utilisation, stalls, roofline) and a JSON report.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int run_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
