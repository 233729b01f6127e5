#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "api/result.hpp"

namespace tpuemu::api {
namespace {

// The verdict of compare_bits for `got` against an expected array of
// `dtype` and `shape` whose data `view(offset, length)` gives piece by piece
// (a pointer valid until the next call).
template <class View>
std::string compare_with(const NpyArray& got, NpyDtype dtype, const std::vector<std::uint64_t>& shape,
                         std::uint64_t expected_bytes, View view) {
  if (got.shape != shape) {
    return fmt::format("shape [{}] differs from the expected [{}]", fmt::join(got.shape, ","), fmt::join(shape, ","));
  }
  if (got.dtype != dtype || got.data.size() != expected_bytes) {
    return fmt::format(
        "dtype {} differs from the expected file's {} (raw bits of bf16/f8 outputs compare with a "
        "file named *.bits.npy)",
        to_string(got.dtype), to_string(dtype));
  }
  const std::uint64_t count = got.element_count();
  const std::size_t width = element_size(dtype);
  // A multiple of every element size; 2 MiB, so that the tpuemu executable
  // takes the piece buffer from its large blocks (tools/large_allocations.cpp:
  // one huge page, or a block a freed array left) instead of 512 small pages.
  constexpr std::uint64_t kPieceBytes = std::uint64_t{2} << 20;
  std::uint64_t differing = 0;
  std::uint64_t first = 0;
  float first_expected = 0;
  for (std::uint64_t at = 0; at < expected_bytes; at += kPieceBytes) {
    const std::uint64_t length = std::min(kPieceBytes, expected_bytes - at);
    const std::uint8_t* expected = view(at, length);
    const std::uint8_t* mine = got.data.data() + at;
    if (std::memcmp(mine, expected, length) == 0) continue;
    for (std::uint64_t i = 0; i < length; i += width) {
      if (std::memcmp(mine + i, expected + i, width) == 0) continue;
      if (differing++ == 0) {
        first = (at + i) / width;
        if (dtype == NpyDtype::kFloat32) std::memcpy(&first_expected, expected + i, sizeof first_expected);
      }
    }
  }
  if (differing == 0) return fmt::format("bit-exact ({} elements)", count);
  std::string detail;
  if (dtype == NpyDtype::kFloat32) {
    detail = fmt::format(": got {} where {} was expected", got.as_f32()[first], first_expected);
  }
  return fmt::format("{} of {} elements differ, the first at flat index {}{}", differing, count, first, detail);
}

}  // namespace

std::string compare_bits(const NpyArray& got, const NpyArray& expected) {
  return compare_with(got, expected.dtype, expected.shape, expected.data.size(),
                      [&](std::uint64_t at, std::uint64_t) { return expected.data.data() + at; });
}

std::string compare_bits(const NpyArray& got, const NpyFileHeader& expected) {
  std::vector<std::uint8_t> piece;
  return compare_with(got, expected.dtype, expected.shape, expected.data_bytes,
                      [&](std::uint64_t at, std::uint64_t length) {
                        piece.resize(length);
                        read_npy_data(expected, at, piece);
                        return piece.data();
                      });
}

}  // namespace tpuemu::api
