// `tpuemu run-case DIR`: runs a case of the dump corpus (../shared/llo):
// reads case.json, places the operands where the kernels expect them, runs
// the kernel chain, compares with expected.npy and prints PASS/FAIL with the
// first mismatching element and per-kernel cycles and stalls.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int run_case_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
