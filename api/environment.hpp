// The TPUEMU_* environment variables a run reads, checked up front: a value
// that does not parse is refused (exit 2 from the CLI, BadInput from Python)
// instead of being silently ignored where it is read.
#pragma once

#include <optional>
#include <string>

namespace tpuemu::api {

// What is wrong with the first malformed TPUEMU_* variable, naming it, its
// value and what it accepts; nullopt when all are unset or well formed.
// Checked: TPUEMU_HOST_THREADS (1..256), TPUEMU_MXU_KERNEL (portable, avx2,
// avx512, and available on this CPU), TPUEMU_MXU_DENORMALS (f32, f64),
// TPUEMU_HOST_MEMORY_LIMIT (bytes, e.g. 8G), TPUEMU_RANK_OUTPUT (all).
std::optional<std::string> environment_problem();

}  // namespace tpuemu::api
