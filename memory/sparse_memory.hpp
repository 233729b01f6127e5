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
  // Writes to disjoint ranges whose pages exist already (see reserve) may run
  // concurrently with each other and with reads.
  void read(std::uint64_t address, std::span<std::uint8_t> out) const;
  void write(std::uint64_t address, std::span<const std::uint8_t> data);
  // Allocates the pages of [address, address + bytes) that do not exist yet,
  // for a write of the whole range that follows: pages the range covers
  // completely are left uninitialised (contract: the caller writes every
  // byte of the range before anything reads it), the others hold zeros.
  void reserve(std::uint64_t address, std::uint64_t bytes);
  // Copies within this memory or from another one, page by page.
  void copy_from(const SparseMemory& source, std::uint64_t source_address, std::uint64_t address, std::uint64_t bytes);

 private:
  using Page = std::array<std::uint8_t, kPageBytes>;
  // `whole`: the caller writes every byte of the page, so a new page needs no zeros.
  Page& page_for_write(std::uint64_t page_index, bool whole = false);
  [[nodiscard]] const Page* page_for_read(std::uint64_t page_index) const;

  std::uint64_t size_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Page>> pages_;
};

}  // namespace tpuemu::memory
