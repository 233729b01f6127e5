#include "common/npy_bytes.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/huge_pages.hpp"

namespace tpuemu {

NpyBytes NpyBytes::map_file(int fd, std::uint64_t offset, std::size_t length) {
  NpyBytes bytes;
  if (length == 0) return bytes;
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t start = offset / page * page;
  const std::size_t span = static_cast<std::size_t>(offset - start) + length;
  // Writable and private: a write copies the page, the file never changes.
  void* base = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, static_cast<off_t>(start));
  if (base == MAP_FAILED) return bytes;
#if defined(MADV_POPULATE_READ)
  // Page tables for the cached pages in one call (read-only: no copies); advice only.
  (void)madvise(base, span, MADV_POPULATE_READ);
#endif
  bytes.map_ = std::unique_ptr<void, Unmap>(base, Unmap{span});
  bytes.map_data_ = static_cast<std::uint8_t*>(base) + (offset - start);
  bytes.map_size_ = length;
  return bytes;
}

void NpyBytes::Unmap::operator()(void* base) const {
  (void)munmap(base, length);
}

std::vector<std::uint8_t> NpyBytes::heap_copy(const std::uint8_t* bytes, std::size_t size) {
  std::vector<std::uint8_t> copy;
  if (size >= kHugeBufferBytes) {
    copy.reserve(size);
    advise_huge_pages(copy.data(), size);
  }
  copy.assign(bytes, bytes + size);
  return copy;
}

void NpyBytes::to_heap() {
  if (!map_) return;
  heap_ = heap_copy(map_data_, map_size_);
  drop_mapping();
}

void NpyBytes::resize(std::size_t size) {
  to_heap();
  resize_zeroed(heap_, size);
}

bool operator==(const NpyBytes& a, const NpyBytes& b) {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

bool operator==(const NpyBytes& a, const std::vector<std::uint8_t>& b) {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

}  // namespace tpuemu
