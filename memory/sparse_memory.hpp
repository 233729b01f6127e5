// Byte-addressed memory whose pages are allocated on first write, so a 16 GiB
// HBM costs only what a program touches. Unwritten bytes read as zero.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace tpuemu::memory {

class SparseMemory {
 public:
  static constexpr std::uint64_t kPageBytes = 64 * 1024;

  explicit SparseMemory(std::uint64_t size_bytes) : size_(size_bytes) {}

  [[nodiscard]] std::uint64_t size() const { return size_; }
  // Bytes of host memory the touched pages use.
  [[nodiscard]] std::uint64_t resident_bytes() const { return pages_.size() * kPageBytes; }
  [[nodiscard]] bool in_range(std::uint64_t address, std::uint64_t bytes) const {
    return address <= size_ && bytes <= size_ - address;
  }

  // Contract: [address, address + out.size()) is in range (callers check with
  // in_range and raise a program fault otherwise).
  void read(std::uint64_t address, std::span<std::uint8_t> out) const;
  void write(std::uint64_t address, std::span<const std::uint8_t> data);
  // Copies within this memory or from another one, page by page.
  void copy_from(const SparseMemory& source, std::uint64_t source_address, std::uint64_t address, std::uint64_t bytes);

 private:
  using Page = std::array<std::uint8_t, kPageBytes>;
  Page& page_for_write(std::uint64_t page_index);
  [[nodiscard]] const Page* page_for_read(std::uint64_t page_index) const;

  std::uint64_t size_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Page>> pages_;
};

}  // namespace tpuemu::memory
