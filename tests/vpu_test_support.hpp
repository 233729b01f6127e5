// Helpers shared by the vpu tests: f32 bit patterns, corpus arrays, and the
// XLA tiled layouts of the corpus data restated independently of vpu/ (so a
// test that packs data here and unpacks it with vpu/ checks the layout).
#pragma once

#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "common/npy.hpp"
#include "vpu/vreg.hpp"

namespace tpuemu::vpu::test {

constexpr std::uint32_t bits_of(float value) {
  return std::bit_cast<std::uint32_t>(value);
}
constexpr float f32_of(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}

// A corpus array, or nullopt (with a WARN) when the corpus or file is absent.
inline std::optional<NpyArray> corpus_array(const std::string& relative_path) {
  const std::filesystem::path path = std::filesystem::path(TPUEMU_LLO_CORPUS) / relative_path;
  if (!std::filesystem::exists(path)) {
    WARN(path.string() << " not found; skipping");
    return std::nullopt;
  }
  return read_npy(path.string());
}

// A vreg holding two bf16 (8,128)(2,1) tiles: tile t in sublanes 4t..4t+3,
// word (4t + p, c) = row 2p of column c in bits 0-15 and row 2p+1 in bits
// 16-31 (XLA stores a (2,1) minor tile row-major; the machine is
// little-endian). element(t, r, c) gives tile t's bf16 bits at row r, column c.
template <typename Element>
Vreg bf16_tiles(Element element) {
  Vreg v;
  for (std::size_t t = 0; t < 2; ++t) {
    for (std::size_t p = 0; p < 4; ++p) {
      for (std::size_t c = 0; c < kLanes; ++c) {
        v.at(4 * t + p, c) = static_cast<std::uint32_t>(element(t, 2 * p, c)) |
                             (static_cast<std::uint32_t>(element(t, 2 * p + 1, c)) << 16);
      }
    }
  }
  return v;
}

// A vreg holding one f8 (8,128)(4,1) tile in sublanes 0-1 (row 4p+q of column
// c is byte q of word (p, c)); sublanes 2-7 zero. element(r, c) gives the code.
template <typename Element>
Vreg f8_tile(Element element) {
  Vreg v;
  for (std::size_t p = 0; p < 2; ++p) {
    for (std::size_t c = 0; c < kLanes; ++c) {
      std::uint32_t word = 0;
      for (std::size_t q = 0; q < 4; ++q) word |= static_cast<std::uint32_t>(element(4 * p + q, c)) << (8 * q);
      v.at(p, c) = word;
    }
  }
  return v;
}

}  // namespace tpuemu::vpu::test
