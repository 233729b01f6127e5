// A fixed-size zero-initialised memory for on-core storage (VMEM, SMEM). It
// maps nothing until its first access, and then one anonymous private mapping,
// so the operating system maps pages only when they are touched: an idle
// core's 128 MiB VMEM costs nothing, a busy one's what the program uses.
//
// The mapping comes from mmap, not calloc: under AddressSanitizer a calloc of
// 128 MiB poisons and on free re-poisons 16 MiB of shadow per core (most of
// the time of a pod test under ASan). An unreadable guard page follows the
// block (its size rounded up to whole pages), so an access past the end faults
// at once, as ASan would report it.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
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
  struct Unmap {
    std::uint64_t bytes;  // the whole mapping, guard page included
    void operator()(std::uint8_t* p) const { (void)munmap(p, bytes); }
  };
  std::uint8_t* block() const {
    if (data_ == nullptr) {
      const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
      const std::uint64_t usable = (size_ + page - 1) / page * page;
      const std::uint64_t bytes = usable + page;
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      auto* base = static_cast<std::uint8_t*>(p);
      data_ = std::unique_ptr<std::uint8_t, Unmap>(base, Unmap{bytes});
      if (mprotect(base + usable, page, PROT_NONE) != 0) throw std::bad_alloc();
    }
    return data_.get();
  }
  std::uint64_t size_;
  mutable std::unique_ptr<std::uint8_t, Unmap> data_{nullptr, Unmap{0}};
};

}  // namespace tpuemu::memory
