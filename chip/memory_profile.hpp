// Memory profile: when each buffer (a program allocation in VMEM or SMEM, an
// operand buffer in HBM) holds live data, and the occupancy that follows,
// the analogue of the JAX memory viewer.
//
// Contract: a buffer is live from the first cycle anything writes into it
// (a DMA landing, a vector store) to the last cycle anything reads or writes
// it; buffers never touched do not count. Occupancy at a cycle is the sum of
// the sizes of the buffers live then; the peak is its maximum. Accesses
// outside every declared buffer are counted as "other" bytes per space.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpuemu::chip {

class MemoryProfile {
 public:
  enum class Space : std::uint8_t { kHbm, kVmem, kSmem };
  // A buffer of `chip` (core `core` for VMEM/SMEM) at byte `offset`.
  void add_buffer(std::uint32_t chip, std::uint32_t core, Space space, std::string name, std::uint64_t offset,
                  std::uint64_t size, std::uint64_t capacity);
  void write(std::uint32_t chip, std::uint32_t core, Space space, std::uint64_t address, std::uint64_t bytes,
             std::uint64_t cycle);
  void read(std::uint32_t chip, std::uint32_t core, Space space, std::uint64_t address, std::uint64_t bytes,
            std::uint64_t cycle);

  // {"memories": [{"chip", "core", "space", "capacity", "peak_bytes", "peak_cycle",
  //   "timeline": [[cycle, bytes]...], "buffers": [{"name", "offset", "size", "first_cycle", "last_cycle"}]}]}
  [[nodiscard]] nlohmann::json to_json(double clock_hz) const;
  // One SVG with a panel per memory: buffers as bars over time, the occupancy curve and the peak.
  [[nodiscard]] std::string to_svg(double clock_hz) const;

  // The memories profiled here, for another process's absorb(): a pod over
  // MPI ranks profiles each chip where it is simulated, and rank 0 takes in
  // the others' chips. Throws std::logic_error if both profiled one memory.
  [[nodiscard]] std::vector<std::uint8_t> serialize() const;
  void absorb(const std::vector<std::uint8_t>& bytes);

 private:
  struct Buffer {
    std::string name;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    bool written = false;
    std::uint64_t first = 0;
    std::uint64_t last = 0;
  };
  struct Memory {
    std::uint64_t capacity = 0;
    std::vector<Buffer> buffers;  // sorted by offset once accessed
    bool sorted = false;
  };
  using Key = std::tuple<std::uint32_t, std::uint32_t, Space>;
  void access(const Key& key, std::uint64_t address, std::uint64_t bytes, std::uint64_t cycle, bool is_write);
  std::map<Key, Memory> memories_;
};

}  // namespace tpuemu::chip
