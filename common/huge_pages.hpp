// Transparent huge pages for large host buffers that are filled soon after
// they are allocated (an input array, an output buffer): where the kernel's THP
// mode is "madvise", the buffer's whole 2 MiB-aligned part is then faulted
// in 2 MiB at a time instead of 4 KiB (on a virtual machine a page fault
// costs microseconds: 4096 of them per 16 MiB). The price: memory is
// committed in 2 MiB units where the buffer is touched at all, so only
// buffers that are used densely ask for it. Changes no byte of any result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tpuemu {

inline void advise_huge_pages(void* buffer, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  const auto start = reinterpret_cast<std::uintptr_t>(buffer);
  const std::uintptr_t begin = (start + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t end = (start + bytes) & ~(kHugePage - 1);
  // Advice only: a kernel without THP (or a refusal) leaves 4 KiB pages.
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)buffer;
  (void)bytes;
#endif
}

// Buffers at least this big are worth huge pages.
inline constexpr std::size_t kHugeBufferBytes = std::size_t{4} << 20;

// Resizes an empty `bytes` to `size` zero bytes, in huge pages when it is big.
inline void resize_zeroed(std::vector<std::uint8_t>& bytes, std::size_t size) {
  if (bytes.empty() && size >= kHugeBufferBytes) {
    bytes.reserve(size);
    advise_huge_pages(bytes.data(), size);
  }
  bytes.resize(size);
}

// A copy of `bytes`, in huge pages when it is big.
inline std::vector<std::uint8_t> copied_bytes(std::span<const std::uint8_t> bytes) {
  std::vector<std::uint8_t> copy;
  if (bytes.size() >= kHugeBufferBytes) {
    copy.reserve(bytes.size());
    advise_huge_pages(copy.data(), bytes.size());
  }
  copy.assign(bytes.begin(), bytes.end());
  return copy;
}

// `size` zero bytes, in huge pages when it is big.
inline std::vector<std::uint8_t> zeroed_bytes(std::size_t size) {
  std::vector<std::uint8_t> bytes;
  resize_zeroed(bytes, size);
  return bytes;
}

}  // namespace tpuemu
