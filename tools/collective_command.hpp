// `tpuemu collective`: an nccl-tests-style benchmark of the generated
// collective programs on an emulated pod, one row per size, with the book's
// prediction next to the measurement.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int collective_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
