// Vector register file types: a vreg is 8 sublanes x 128 lanes of 32-bit
// words (4 KiB), a vector mask is one bit per element. Element (s, l) lives at
// index s * kLanes + l, which is also what `vlaneseq` returns for it.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace tpuemu::vpu {

inline constexpr std::size_t kSublanes = 8;
inline constexpr std::size_t kLanes = 128;
inline constexpr std::size_t kElements = kSublanes * kLanes;

// The one NaN the vector units produce (quiet, positive, zero payload): every
// f32 NaN result is written as these bits, whatever the inputs' payloads.
inline constexpr std::uint32_t kCanonicalNan = 0x7FC0'0000U;

struct Vreg {
  std::array<std::uint32_t, kElements> words{};

  [[nodiscard]] std::uint32_t at(std::size_t sublane, std::size_t lane) const { return words[sublane * kLanes + lane]; }
  std::uint32_t& at(std::size_t sublane, std::size_t lane) { return words[sublane * kLanes + lane]; }
  [[nodiscard]] float f32(std::size_t i) const { return std::bit_cast<float>(words[i]); }
  void set_f32(std::size_t i, float v) { words[i] = std::bit_cast<std::uint32_t>(v); }
  bool operator==(const Vreg&) const = default;
};

struct Vmask {
  std::array<std::uint8_t, kElements> bits{};  // 0 or 1

  [[nodiscard]] bool at(std::size_t sublane, std::size_t lane) const { return bits[sublane * kLanes + lane] != 0; }
  bool operator==(const Vmask&) const = default;
};

}  // namespace tpuemu::vpu
