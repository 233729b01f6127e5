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
  // Pages may point into adopted blocks: a copy would share them.
  SparseMemory(const SparseMemory&) = delete;
  SparseMemory& operator=(const SparseMemory&) = delete;
  SparseMemory(SparseMemory&&) noexcept = default;
  SparseMemory& operator=(SparseMemory&&) noexcept = default;

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
  // write(address, bytes) without copying where it can: the pages the range
  // covers completely and that do not exist yet become views into `bytes`
  // (the block is kept here), the rest is copied.
  void adopt(std::uint64_t address, std::vector<std::uint8_t> bytes);
  // The bytes of [address, address + bytes) as read() gives them. When the
  // range is exactly one adopted block, that block itself is returned (no
  // copy) and its pages leave the memory. Contract: nothing reads or writes
  // the range afterwards (its contents are unspecified).
  std::vector<std::uint8_t> take(std::uint64_t address, std::uint64_t bytes);
  // Copies within this memory or from another one, page by page.
  void copy_from(const SparseMemory& source, std::uint64_t source_address, std::uint64_t address, std::uint64_t bytes);

 private:
  using Page = std::array<std::uint8_t, kPageBytes>;
  // `whole`: the caller writes every byte of the page, so a new page needs no zeros.
  std::uint8_t* page_for_write(std::uint64_t page_index, bool whole = false);
  [[nodiscard]] const std::uint8_t* page_for_read(std::uint64_t page_index) const;

  struct Block {
    std::uint64_t address;
    std::vector<std::uint8_t> bytes;
  };
  std::uint64_t size_;
  std::unordered_map<std::uint64_t, std::uint8_t*> pages_;  // page index -> its bytes
  std::vector<std::unique_ptr<Page>> owned_;                // pages allocated here
  std::vector<Block> adopted_;                              // blocks pages point into
};

}  // namespace tpuemu::memory
