// A fixed-size zero-initialised memory for on-core storage (VMEM, SMEM). It
// maps nothing until its first access, and then one calloc'd block, so the
// operating system maps pages only when they are touched: an idle core's
// 128 MiB VMEM costs nothing, a busy one's what the program uses.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace tpuemu::memory {

class DenseMemory {
 public:
  explicit DenseMemory(std::uint64_t size_bytes) : size_(size_bytes) {}

  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] bool in_range(std::uint64_t address, std::uint64_t bytes) const {
    return address <= size_ && bytes <= size_ - address;
  }
  // Whether any access has happened yet (the block is mapped).
  [[nodiscard]] bool mapped() const { return data_ != nullptr; }
  // Contract: the range was checked with in_range. The first call maps the
  // block (std::bad_alloc if the host cannot).
  [[nodiscard]] std::uint8_t* data(std::uint64_t address) { return block() + address; }
  [[nodiscard]] const std::uint8_t* data(std::uint64_t address) const { return block() + address; }

 private:
  struct Free {
    void operator()(std::uint8_t* p) const { std::free(p); }
  };
  std::uint8_t* block() const {
    if (data_ == nullptr) {
      data_.reset(static_cast<std::uint8_t*>(std::calloc(size_ == 0 ? 1 : size_, 1)));
      if (data_ == nullptr) throw std::bad_alloc();
    }
    return data_.get();
  }
  std::uint64_t size_;
  mutable std::unique_ptr<std::uint8_t, Free> data_;
};

}  // namespace tpuemu::memory
