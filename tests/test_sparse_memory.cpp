// memory::SparseMemory: pages on first write, adopted blocks (inputs moved
// in without a copy) and take() giving them back, every byte as read() sees it.
#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <vector>

#include "memory/sparse_memory.hpp"

using tpuemu::memory::SparseMemory;

namespace {

constexpr std::uint64_t kPage = SparseMemory::kPageBytes;

std::vector<std::uint8_t> ramp(std::size_t n, std::uint8_t first) {
  std::vector<std::uint8_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<std::uint8_t> read(const SparseMemory& m, std::uint64_t address, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  m.read(address, out);
  return out;
}

}  // namespace

TEST_CASE("sparse memory: unwritten bytes read as zero, writes land across pages", "[memory]") {
  SparseMemory m(16 * kPage);
  CHECK(read(m, kPage - 3, 6) == std::vector<std::uint8_t>(6, 0));
  m.write(kPage - 3, ramp(kPage + 6, 1));  // a partial page, a whole one, a partial one
  CHECK(read(m, kPage - 3, kPage + 6) == ramp(kPage + 6, 1));
  CHECK(read(m, kPage - 4, 1) == std::vector<std::uint8_t>{0});
  CHECK(read(m, 2 * kPage + 3, 1) == std::vector<std::uint8_t>{0});
  CHECK(m.resident_bytes() == 3 * kPage);
}

TEST_CASE("sparse memory: an adopted block reads, writes and comes back through take", "[memory]") {
  // Unaligned on both ends, over a page that exists already.
  SparseMemory m(16 * kPage);
  m.write(2 * kPage + 10, std::vector<std::uint8_t>{0xAB});
  const std::uint64_t address = kPage + 100;
  const std::size_t n = 3 * kPage;
  const std::vector<std::uint8_t> block = ramp(n, 5);
  m.adopt(address, block);
  CHECK(read(m, address, n) == block);
  CHECK(read(m, address - 1, 1) == std::vector<std::uint8_t>{0});
  CHECK(read(m, address + n, 1) == std::vector<std::uint8_t>{0});
  // Writes after the adoption land wherever a byte lives: the head page, a
  // viewed page, the page that existed before.
  std::vector<std::uint8_t> expected = block;
  for (const std::uint64_t at : {address, address + 2 * kPage, 2 * kPage + 10, address + n - 1}) {
    m.write(at, std::vector<std::uint8_t>{0x5A});
    expected[at - address] = 0x5A;
  }
  CHECK(read(m, address, n) == expected);
  CHECK(m.take(address, n) == expected);
}

TEST_CASE("sparse memory: take of a range that is no adopted block copies it", "[memory]") {
  SparseMemory m(16 * kPage);
  m.write(kPage, ramp(100, 9));
  std::vector<std::uint8_t> expected(2 * kPage, 0);
  std::copy_n(ramp(100, 9).begin(), 100, expected.begin() + kPage);
  CHECK(m.take(0, 2 * kPage) == expected);
  CHECK(read(m, kPage, 100) == ramp(100, 9));  // nothing left the memory

  // A block whose pages all existed before it is written, not kept.
  m.adopt(kPage, ramp(kPage, 1));
  CHECK(m.take(kPage, kPage) == ramp(kPage, 1));
}
