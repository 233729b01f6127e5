#include "memory/sparse_memory.hpp"

#include <algorithm>

namespace tpuemu::memory {

SparseMemory::Page& SparseMemory::page_for_write(std::uint64_t page_index, bool whole) {
  // An existing page is found without touching the table (concurrent writes, header).
  if (const auto it = pages_.find(page_index); it != pages_.end()) return *it->second;
  auto& slot = pages_[page_index];
  slot = whole ? std::make_unique_for_overwrite<Page>() : std::make_unique<Page>();  // else zeros
  return *slot;
}

void SparseMemory::reserve(std::uint64_t address, std::uint64_t bytes) {
  for (std::uint64_t a = address; a < address + bytes;) {
    const std::uint64_t offset = a % kPageBytes;
    const std::uint64_t n = std::min<std::uint64_t>(kPageBytes - offset, address + bytes - a);
    (void)page_for_write(a / kPageBytes, n == kPageBytes);
    a += n;
  }
}

const SparseMemory::Page* SparseMemory::page_for_read(std::uint64_t page_index) const {
  const auto it = pages_.find(page_index);
  return it == pages_.end() ? nullptr : it->second.get();
}

void SparseMemory::read(std::uint64_t address, std::span<std::uint8_t> out) const {
  std::size_t done = 0;
  while (done < out.size()) {
    const std::uint64_t a = address + done;
    const std::uint64_t offset = a % kPageBytes;
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kPageBytes - offset, out.size() - done));
    if (const Page* page = page_for_read(a / kPageBytes)) {
      std::memcpy(out.data() + done, page->data() + offset, n);
    } else {
      std::memset(out.data() + done, 0, n);
    }
    done += n;
  }
}

void SparseMemory::write(std::uint64_t address, std::span<const std::uint8_t> data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const std::uint64_t a = address + done;
    const std::uint64_t offset = a % kPageBytes;
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kPageBytes - offset, data.size() - done));
    std::memcpy(page_for_write(a / kPageBytes, n == kPageBytes).data() + offset, data.data() + done, n);
    done += n;
  }
}

void SparseMemory::copy_from(const SparseMemory& source, std::uint64_t source_address, std::uint64_t address,
                             std::uint64_t bytes) {
  std::array<std::uint8_t, 4096> buffer{};
  std::uint64_t done = 0;
  while (done < bytes) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), bytes - done));
    source.read(source_address + done, std::span(buffer.data(), n));
    write(address + done, std::span<const std::uint8_t>(buffer.data(), n));
    done += n;
  }
}

}  // namespace tpuemu::memory
