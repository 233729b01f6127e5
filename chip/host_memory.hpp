// Host memory a pod run will need, estimated before anything is built, and
// the refusal of a pod that cannot fit: a pod too big for the host fails
// with a message instead of being killed by the kernel half-way through.
//
// The estimate: every chip and TensorCore costs a fixed amount while idle
// (measured: ~47 KiB per TensorCore of v5p 16x16x16, shared state included),
// plus, with numerics, the data the run touches: the HBM buffers of every
// chip, the copies of outputs read back, the VMEM a program allocates on
// each core and, if a program multiplies, every MXU's weight tile.
// Timing-only runs touch no bulk data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/chip_config.hpp"

namespace tpuemu::chip {

inline constexpr std::uint64_t kHostBytesPerCore = 64 * 1024;  // above the measured idle cost
inline constexpr std::uint64_t kHostBytesPerChip = 32 * 1024;  // network links, HBM page table, SystemC module
// An MXU computing with numerics: its weight tile, allocated at the first latch.
inline constexpr std::uint64_t kHostBytesPerMxuTile = 128 * 1024;

struct HostMemoryEstimate {
  std::uint64_t chips = 0;
  std::uint64_t bytes_per_chip = 0;  // fixed + data
  [[nodiscard]] std::uint64_t total() const { return chips * bytes_per_chip; }
};

// Fixed costs plus `data_bytes_per_chip` (0 for timing-only runs).
HostMemoryEstimate estimate_pod_host_memory(std::uint64_t chips, std::uint64_t cores_per_chip,
                                            std::uint64_t data_bytes_per_chip);

struct ExecProgram;

// With numerics, what each chip's cores touch besides the buffers: the VMEM
// their programs allocate (at most VMEM) and, if a program multiplies, every
// MXU's weight tile.
std::uint64_t core_data_bytes(const std::vector<ExecProgram>& programs, const ChipConfig& chip);

// The host memory a run may use: the environment variable
// TPUEMU_HOST_MEMORY_LIMIT (bytes, or with K/M/G/T: powers of 1024) if set,
// else MemAvailable of /proc/meminfo; nullopt if neither can be read.
std::optional<std::uint64_t> host_memory_limit();

// Throws LoadError naming the estimate and the limit when the estimate
// exceeds host_memory_limit(); `what` names the job ("the 16x20x28 pod").
void check_host_memory(const HostMemoryEstimate& estimate, const std::string& what);

}  // namespace tpuemu::chip
