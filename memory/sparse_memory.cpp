#include "memory/sparse_memory.hpp"

#include <algorithm>

namespace tpuemu::memory {

std::uint8_t* SparseMemory::page_for_write(std::uint64_t page_index, bool whole) {
  if (const auto it = pages_.find(page_index); it != pages_.end()) return it->second;
  owned_.push_back(whole ? std::make_unique_for_overwrite<Page>() : std::make_unique<Page>());  // else zeros
  return pages_[page_index] = owned_.back()->data();
}

void SparseMemory::adopt(std::uint64_t address, std::vector<std::uint8_t> bytes) {
  std::uint8_t* const base = bytes.data();  // moving the vector below keeps it
  bool viewed = false;
  for (std::uint64_t done = 0; done < bytes.size();) {
    const std::uint64_t a = address + done;
    const std::uint64_t offset = a % kPageBytes;
    const std::uint64_t n = std::min<std::uint64_t>(kPageBytes - offset, bytes.size() - done);
    if (n == kPageBytes && pages_.count(a / kPageBytes) == 0U) {
      pages_[a / kPageBytes] = base + done;
      viewed = true;
    } else {
      std::memcpy(page_for_write(a / kPageBytes) + offset, base + done, n);
    }
    done += n;
  }
  if (viewed) adopted_.push_back(Block{address, std::move(bytes)});
}

std::vector<std::uint8_t> SparseMemory::take(std::uint64_t address, std::uint64_t bytes) {
  const auto block = std::find_if(adopted_.begin(), adopted_.end(), [&](const Block& b) {
    return b.address == address && b.bytes.size() == bytes;
  });
  if (block == adopted_.end()) {
    std::vector<std::uint8_t> copy(bytes);
    read(address, copy);
    return copy;
  }
  std::vector<std::uint8_t> out = std::move(block->bytes);
  adopted_.erase(block);
  // Parts that are not views into the block (partial pages, pages that
  // existed before it) hold the current bytes elsewhere: copy them in.
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t a = address + done;
    const std::uint64_t offset = a % kPageBytes;
    const std::uint64_t n = std::min<std::uint64_t>(kPageBytes - offset, bytes - done);
    const auto it = pages_.find(a / kPageBytes);
    if (it != pages_.end() && it->second == out.data() + done) {
      pages_.erase(it);
    } else {
      read(a, std::span(out.data() + done, n));
    }
    done += n;
  }
  return out;
}

const std::uint8_t* SparseMemory::page_for_read(std::uint64_t page_index) const {
  const auto it = pages_.find(page_index);
  return it == pages_.end() ? nullptr : it->second;
}

void SparseMemory::read(std::uint64_t address, std::span<std::uint8_t> out) const {
  std::size_t done = 0;
  while (done < out.size()) {
    const std::uint64_t a = address + done;
    const std::uint64_t offset = a % kPageBytes;
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kPageBytes - offset, out.size() - done));
    if (const std::uint8_t* page = page_for_read(a / kPageBytes)) {
      std::memcpy(out.data() + done, page + offset, n);
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
    std::memcpy(page_for_write(a / kPageBytes, n == kPageBytes) + offset, data.data() + done, n);
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
