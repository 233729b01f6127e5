// `tpuemu demo`: the built-in default job. Generates a double-buffered bf16
// matmul, runs it on an emulated chip with pseudo-random inputs, checks the
// result against the host reference bit for bit, and prints the roofline
// comparison.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int demo_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
