#include "chip/host_memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "chip/exec_program.hpp"
#include "chip/fault.hpp"
#include "common/parse_number.hpp"

namespace tpuemu::chip {
namespace {

std::string gib(std::uint64_t bytes) {
  const auto b = static_cast<double>(bytes);
  return bytes >= (1ULL << 30) ? fmt::format("{:.2f} GiB", b / (1ULL << 30))
                               : fmt::format("{:.1f} MiB", b / (1ULL << 20));
}

}  // namespace

std::uint64_t core_data_bytes(const std::vector<ExecProgram>& programs, const ChipConfig& chip) {
  std::uint64_t vmem_per_core = 0;
  for (const auto& e : programs) {
    for (const auto& a : e.program->allocations) {
      if (a.space == MemorySpace::kVmem) vmem_per_core += a.size;
    }
  }
  std::uint64_t bytes = std::min(vmem_per_core, chip.vmem.size_bytes) * chip.tensorcores_per_chip;
  // An MXU that multiplies with numerics holds its weight tile (and, with host threads, briefly older ones).
  const bool uses_mxu = std::any_of(programs.begin(), programs.end(), [](const ExecProgram& e) {
    return std::any_of(e.ops.begin(), e.ops.end(), [](const ExecOp& op) { return op.info->slot == SlotClass::kMxu; });
  });
  if (uses_mxu) bytes += kHostBytesPerMxuTile * chip.mxu.count * chip.tensorcores_per_chip;
  return bytes;
}

HostMemoryEstimate estimate_pod_host_memory(std::uint64_t chips, std::uint64_t cores_per_chip,
                                            std::uint64_t data_bytes_per_chip) {
  return {chips, kHostBytesPerChip + cores_per_chip * kHostBytesPerCore + data_bytes_per_chip};
}

std::optional<std::uint64_t> host_memory_limit() {
  if (const char* env = std::getenv("TPUEMU_HOST_MEMORY_LIMIT")) {
    if (const auto bytes = parse_bytes(env)) return bytes;
    throw LoadError(fmt::format("TPUEMU_HOST_MEMORY_LIMIT='{}' is not a number of bytes like 8G", env));
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t value = 0;
  std::string unit;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemAvailable:") return value * 1024;
  }
  return std::nullopt;
}

void check_host_memory(const HostMemoryEstimate& estimate, const std::string& what) {
  const auto limit = host_memory_limit();
  if (!limit || estimate.total() <= *limit) return;
  throw LoadError(fmt::format(
      "{} needs about {} of host memory ({}), more than the {} available (MemAvailable, or "
      "TPUEMU_HOST_MEMORY_LIMIT); run timing only (--no-data), a smaller size{}",
      what, gib(estimate.total()),
      estimate.chips == 1 ? std::string("one chip")
                          : fmt::format("{} chips x {:.1f} KiB", estimate.chips,
                                        static_cast<double>(estimate.bytes_per_chip) / 1024),
      gib(*limit), estimate.chips == 1 ? "" : " or fewer chips"));
}

}  // namespace tpuemu::chip
