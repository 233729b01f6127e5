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
//
// prefer_huge_pages() (before the first access): the block is 2 MiB-aligned
// and advised for transparent huge pages, so a densely used memory faults in
// 2 MiB at a time (a 4 KiB fault costs ~13 us on the benchmark VM: a matmul's
// 8 MiB of accumulators 25-30 ms); what it touches is then committed in 2 MiB
// units. Changes no byte.
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
  // See the file comment; no effect once mapped.
  void prefer_huge_pages() { huge_pages_ = true; }
  // Contract: the range was checked with in_range. The first call maps the
  // block (std::bad_alloc if the host cannot).
  [[nodiscard]] std::uint8_t* data(std::uint64_t address) { return block() + address; }
  [[nodiscard]] const std::uint8_t* data(std::uint64_t address) const { return block() + address; }

 private:
  static constexpr std::uint64_t kHugePage = std::uint64_t{2} << 20;
  struct Unmap {
    std::uint64_t bytes;  // the mapping from the block's start, guard page included
    void operator()(std::uint8_t* p) const { (void)munmap(p, bytes); }
  };
  std::uint8_t* block() const {
    if (data_ == nullptr) {
      const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
      const bool huge = huge_pages_ && size_ >= kHugePage;
      const std::uint64_t align = huge ? kHugePage : page;
      const std::uint64_t usable = (size_ + align - 1) / align * align;
      // Over-map by the alignment less a page when aligning to huge pages,
      // then keep the aligned part (fresh anonymous pages are zeros).
      const std::uint64_t slack = align - page;
      const std::uint64_t length = usable + page + slack;
      void* raw = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (raw == MAP_FAILED) throw std::bad_alloc();
      const auto base = reinterpret_cast<std::uintptr_t>(raw);
      const std::uintptr_t start = (base + align - 1) / align * align;
      if (start > base) (void)munmap(raw, start - base);
      const std::uintptr_t end = start + usable + page;  // guard page included
      if (base + length > end) (void)munmap(reinterpret_cast<void*>(end), base + length - end);
      auto* block = reinterpret_cast<std::uint8_t*>(start);
      data_ = std::unique_ptr<std::uint8_t, Unmap>(block, Unmap{usable + page});
      if (mprotect(block + usable, page, PROT_NONE) != 0) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
      if (huge) (void)madvise(block, usable, MADV_HUGEPAGE);  // advice only
#endif
    }
    return data_.get();
  }
  std::uint64_t size_;
  bool huge_pages_ = false;
  mutable std::unique_ptr<std::uint8_t, Unmap> data_{nullptr, Unmap{0}};
};

}  // namespace tpuemu::memory
