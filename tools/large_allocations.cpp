// The tpuemu executable's C++ allocations of kLargeBytes and more (.npy
// arrays, device images, HBM blocks, output buffers: megabytes each) come
// from 2 MiB-aligned anonymous mappings advised for transparent huge pages,
// and freed ones are kept (up to kCachedBytes) for the next large allocation.
//
// Why: on the benchmark VM a 4 KiB page fault costs ~13 us, so a 16 MiB buffer
// faulted 4 KiB at a time costs ~55 ms, and one from malloc's heap, advised
// for huge pages only on its 2 MiB-aligned interior, still ~500 small faults
// (7-10 ms) at its unaligned ends; a whole 2 MiB-aligned mapping faults in
// 2 MiB at a time (16 MiB: 1.5-3 ms including the kernel's zeroing). SystemC's
// own 3 MiB temporary heap, zeroed before main(), is one of them (768 small
// faults, 10-14 ms, before). Where
// the kernel has no THP (or THP "never") the advice is ignored and pages are
// 4 KiB as before. Changes no byte of any result: only where memory comes from.
//
// Contract: replaces the global operator new/delete (the plain forms; the
// array, sized and nothrow forms of the standard library call these, and the
// aligned forms keep the library's own). Sizes below kLargeBytes go to malloc
// as before. A pointer is ours iff it is 2 MiB-aligned and listed in the
// table of live large blocks (malloc never returns such a pointer for a block
// we listed); a full table sends further large allocations to malloc.
// Thread-safe (one mutex, taken only for large blocks and for deleting a
// 2 MiB-aligned pointer). Not built under AddressSanitizer, whose own
// operator new must see every allocation.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TPUEMU_SANITIZED 1
#endif
#endif
#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && !defined(TPUEMU_SANITIZED)
#define TPUEMU_LARGE_ALLOCATIONS 1
#include <sys/mman.h>
#endif

#if defined(TPUEMU_LARGE_ALLOCATIONS)
namespace {

constexpr std::size_t kLargeBytes = std::size_t{2} << 20;
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kMaxBlocks = 256;                       // live large blocks listed at once
constexpr std::size_t kMaxCached = 8;                         // freed blocks kept for reuse
constexpr std::size_t kCachedBytes = std::size_t{256} << 20;  // at most this much kept

struct Block {
  void* start = nullptr;   // 2 MiB-aligned
  std::size_t length = 0;  // a multiple of 2 MiB
};

struct Blocks {
  std::mutex mutex;
  Block live[kMaxBlocks];
  std::size_t live_count = 0;
  Block cached[kMaxCached];
  std::size_t cached_count = 0;
  std::size_t cached_bytes = 0;
};

// Constructed on first use, never destroyed (deletes may run during exit).
Blocks& blocks() {
  alignas(Blocks) static unsigned char storage[sizeof(Blocks)];
  static Blocks* b = new (storage) Blocks;
  return *b;
}

// A fresh 2 MiB-aligned mapping of `length` bytes advised for huge pages, or null.
void* map_aligned(std::size_t length) {
  void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t start = (base + kHugePage - 1) & ~(std::uintptr_t{kHugePage} - 1);
  if (start > base) munmap(raw, start - base);
  const std::uintptr_t end = start + length;
  if (base + length + kHugePage > end) munmap(reinterpret_cast<void*>(end), base + length + kHugePage - end);
#if defined(MADV_HUGEPAGE)
  (void)madvise(reinterpret_cast<void*>(start), length, MADV_HUGEPAGE);  // advice only
#endif
  return reinterpret_cast<void*>(start);
}

// A large block of at least `size` bytes, or null (then malloc serves it).
void* allocate_large(std::size_t size) {
  const std::size_t length = (size + kHugePage - 1) & ~(kHugePage - 1);
  Blocks& b = blocks();
  std::lock_guard lock(b.mutex);
  if (b.live_count == kMaxBlocks) return nullptr;
  // The smallest cached block that fits, else a fresh mapping.
  std::size_t best = kMaxCached;
  for (std::size_t i = 0; i < b.cached_count; ++i) {
    if (b.cached[i].length >= length && (best == kMaxCached || b.cached[i].length < b.cached[best].length)) best = i;
  }
  Block block;
  if (best != kMaxCached) {
    block = b.cached[best];
    b.cached_bytes -= block.length;
    b.cached[best] = b.cached[--b.cached_count];
  } else {
    block.start = map_aligned(length);
    block.length = length;
    if (block.start == nullptr) return nullptr;
  }
  b.live[b.live_count++] = block;
  return block.start;
}

// Frees `p` if it is a live large block; false if it is not one.
bool free_large(void* p) {
  if ((reinterpret_cast<std::uintptr_t>(p) & (kHugePage - 1)) != 0) return false;
  Blocks& b = blocks();
  std::lock_guard lock(b.mutex);
  for (std::size_t i = 0; i < b.live_count; ++i) {
    if (b.live[i].start != p) continue;
    const Block block = b.live[i];
    b.live[i] = b.live[--b.live_count];
    // Keep it for the next large allocation, or give it back (the largest cached first).
    while (b.cached_count > 0 && (b.cached_count == kMaxCached || b.cached_bytes + block.length > kCachedBytes)) {
      std::size_t largest = 0;
      for (std::size_t j = 1; j < b.cached_count; ++j) {
        if (b.cached[j].length > b.cached[largest].length) largest = j;
      }
      munmap(b.cached[largest].start, b.cached[largest].length);
      b.cached_bytes -= b.cached[largest].length;
      b.cached[largest] = b.cached[--b.cached_count];
    }
    if (block.length <= kCachedBytes) {
      b.cached[b.cached_count++] = block;
      b.cached_bytes += block.length;
    } else {
      munmap(block.start, block.length);
    }
    return true;
  }
  return false;
}

}  // namespace

void* operator new(std::size_t size) {
  if (size >= kLargeBytes) {
    if (void* p = allocate_large(size)) return p;
  }
  for (;;) {
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  if (!free_large(p)) std::free(p);
}

void operator delete(void* p, std::size_t) noexcept {
  operator delete(p);
}
#endif
