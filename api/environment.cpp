#include "api/environment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <string_view>
#include <vector>

#include "common/parse_number.hpp"
#include "mxu/matmul_kernel.hpp"

namespace tpuemu::api {

std::optional<std::string> environment_problem() {
  const auto value = [](const char* name) -> std::optional<std::string_view> {
    const char* v = std::getenv(name);
    return v == nullptr ? std::nullopt : std::optional<std::string_view>(v);
  };
  if (const auto v = value("TPUEMU_HOST_THREADS")) {
    const auto n = parse_unsigned(*v);
    if (!n || *n < 1 || *n > 256) {
      return fmt::format("TPUEMU_HOST_THREADS='{}' is not a number of host threads from 1 to 256", *v);
    }
  }
  if (const auto v = value("TPUEMU_MXU_KERNEL")) {
    std::vector<std::string_view> here;
    bool known = false;
    bool available = false;
    for (const mxu::KernelKind k : {mxu::KernelKind::kPortable, mxu::KernelKind::kAvx2Fma, mxu::KernelKind::kAvx512}) {
      if (mxu::kernel_available(k)) here.push_back(mxu::to_string(k));
      if (*v == mxu::to_string(k)) {
        known = true;
        available = mxu::kernel_available(k);
      }
    }
    if (!known) return fmt::format("TPUEMU_MXU_KERNEL='{}' is not a kernel (portable, avx2, avx512)", *v);
    if (!available) {
      return fmt::format("TPUEMU_MXU_KERNEL='{}': this CPU (or build) cannot run it; it can run {}", *v,
                         fmt::join(here, ", "));
    }
  }
  if (const auto v = value("TPUEMU_MXU_DENORMALS"); v && *v != "f32" && *v != "f64") {
    return fmt::format(
        "TPUEMU_MXU_DENORMALS='{}' is neither f32 (denormal MXU tiles in f32 arithmetic) nor f64 (scaled or f64 "
        "paths on any CPU)",
        *v);
  }
  if (const auto v = value("TPUEMU_HOST_MEMORY_LIMIT"); v && !parse_bytes(*v)) {
    return fmt::format("TPUEMU_HOST_MEMORY_LIMIT='{}' is not a number of bytes like 8G", *v);
  }
  if (const auto v = value("TPUEMU_RANK_OUTPUT"); v && *v != "all") {
    return fmt::format("TPUEMU_RANK_OUTPUT='{}': the one value is all (every MPI rank keeps its standard error)", *v);
  }
  return std::nullopt;
}

}  // namespace tpuemu::api
