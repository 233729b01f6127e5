// A fixed-size zero-initialised memory for on-core storage (VMEM, SMEM). It
// is backed by calloc, so the operating system maps pages only when they are
// touched: a 128 MiB VMEM costs what the program uses.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace tpuemu::memory {

class DenseMemory {
 public:
  explicit DenseMemory(std::uint64_t size_bytes)
      : size_(size_bytes), data_(static_cast<std::uint8_t*>(std::calloc(size_bytes == 0 ? 1 : size_bytes, 1))) {
    if (!data_) throw std::bad_alloc();
  }

  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] bool in_range(std::uint64_t address, std::uint64_t bytes) const {
    return address <= size_ && bytes <= size_ - address;
  }
  // Contract: the range was checked with in_range.
  [[nodiscard]] std::uint8_t* data(std::uint64_t address) { return data_.get() + address; }
  [[nodiscard]] const std::uint8_t* data(std::uint64_t address) const { return data_.get() + address; }

 private:
  struct Free {
    void operator()(std::uint8_t* p) const { std::free(p); }
  };
  std::uint64_t size_;
  std::unique_ptr<std::uint8_t, Free> data_;
};

}  // namespace tpuemu::memory
