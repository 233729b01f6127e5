// `tpuemu workload NAME ...` and `tpuemu workload --list`: a registered
// workload (workloads/workload.hpp) run on a pod, each phase beside the
// book's prediction, every output checked against its host reference.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int workload_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
