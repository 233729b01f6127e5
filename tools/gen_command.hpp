// `tpuemu gen matmul|add`: write a generated LLO program.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int gen_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
