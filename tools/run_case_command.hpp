// `tpuemu run-case DIR`: runs a case of the dump corpus (../shared/llo) and
// prints PASS/FAIL with the first mismatching element and per-kernel cycles
// and stalls. A front end over api::load_case / api::run_case
// (api/run_case.hpp); only --tlp (the case's top-level program,
// chip::run_tlp) runs here, checked by api::check_case.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int run_case_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
