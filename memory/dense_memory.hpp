// A fixed-size zero-initialised memory for on-core storage (VMEM, SMEM). It
// maps nothing until its first access, and then one calloc'd block, so the
// operating system maps pages only when they are touched: an idle core's
// 128 MiB VMEM costs nothing, a busy one's what the program uses.
//
// prefer_huge_pages() (before the first access): the block is a 2 MiB-aligned
// mapping advised for transparent huge pages instead, so a densely used
// memory faults in 2 MiB at a time (a 4 KiB fault costs ~13 us on the
// benchmark VM: a matmul's 8 MiB of accumulators 25-30 ms); what it touches
// is then committed in 2 MiB units. Changes no byte.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

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
  // See the file comment; no effect once mapped or where the host has no mmap.
  void prefer_huge_pages() { huge_pages_ = true; }
  // Contract: the range was checked with in_range. The first call maps the
  // block (std::bad_alloc if the host cannot).
  [[nodiscard]] std::uint8_t* data(std::uint64_t address) { return block() + address; }
  [[nodiscard]] const std::uint8_t* data(std::uint64_t address) const { return block() + address; }

 private:
  static constexpr std::uint64_t kHugePage = std::uint64_t{2} << 20;
  struct Free {
    std::uint64_t mapped_bytes;  // 0: from calloc (value-initialised by unique_ptr)
    void operator()(std::uint8_t* p) const {
#if defined(__linux__)
      if (mapped_bytes != 0) {
        munmap(p, mapped_bytes);
        return;
      }
#endif
      std::free(p);
    }
  };
  std::uint8_t* block() const {
    if (data_ == nullptr) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
      if (huge_pages_ && size_ >= kHugePage) {
        // Over-map by 2 MiB, keep the aligned part: fresh anonymous pages are zeros.
        const std::uint64_t length = (size_ + kHugePage - 1) & ~(kHugePage - 1);
        void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) throw std::bad_alloc();
        const auto base = reinterpret_cast<std::uintptr_t>(raw);
        const std::uintptr_t start = (base + kHugePage - 1) & ~(std::uintptr_t{kHugePage} - 1);
        if (start > base) munmap(raw, start - base);
        if (base + length + kHugePage > start + length)
          munmap(reinterpret_cast<void*>(start + length), base + length + kHugePage - (start + length));
        (void)madvise(reinterpret_cast<void*>(start), length, MADV_HUGEPAGE);  // advice only
        data_ = std::unique_ptr<std::uint8_t, Free>(reinterpret_cast<std::uint8_t*>(start), Free{length});
        return data_.get();
      }
#endif
      data_.reset(static_cast<std::uint8_t*>(std::calloc(size_ == 0 ? 1 : size_, 1)));
      if (data_ == nullptr) throw std::bad_alloc();
    }
    return data_.get();
  }
  std::uint64_t size_;
  bool huge_pages_ = false;
  mutable std::unique_ptr<std::uint8_t, Free> data_;
};

}  // namespace tpuemu::memory
