// The RTL arithmetic units (mxu/rtl/bf16_mul.sv, f32_add.sv), verilated as
// plain C++, against the host's IEEE float (round to nearest even, subnormals
// kept): equal bits for every non-NaN result, the canonical quiet NaN
// 0x7fc00000 for every NaN result (the MXU contract leaves NaN payloads open).
#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

#include "common/numerics.hpp"
#include "mxu/rtl/rtl_fp_units.hpp"

using tpuemu::bf16_bits_to_f32;
using tpuemu::mxu::rtl::FpUnits;

namespace {

constexpr std::uint32_t kQuietNan = 0x7fc0'0000U;

bool is_nan(std::uint32_t bits) {
  return (bits & 0x7fff'ffffU) > 0x7f80'0000U;
}

// Counts mismatches and keeps the first one for the failure message.
struct Mismatches {
  std::uint64_t count = 0;
  std::uint64_t checked = 0;
  std::string first;

  void check(std::uint32_t host, std::uint32_t rtl, std::uint32_t a, std::uint32_t b) {
    ++checked;
    const bool ok = is_nan(host) ? rtl == kQuietNan : rtl == host;
    if (ok) return;
    if (count++ == 0) {
      first = "a=0x" + hex(a) + " b=0x" + hex(b) + ": host 0x" + hex(host) + ", rtl 0x" + hex(rtl);
    }
  }
  static std::string hex(std::uint32_t v) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", v);
    return buf;
  }
};

std::uint32_t host_mul(std::uint16_t a, std::uint16_t b) {
  return std::bit_cast<std::uint32_t>(bf16_bits_to_f32(a) * bf16_bits_to_f32(b));
}

std::uint32_t host_add(std::uint32_t a, std::uint32_t b) {
  return std::bit_cast<std::uint32_t>(std::bit_cast<float>(a) + std::bit_cast<float>(b));
}

// A f32 with a random sign and mantissa and its exponent field in [lo, hi].
std::uint32_t f32_with_exponent(std::mt19937_64& rng, std::uint32_t lo, std::uint32_t hi) {
  const auto exponent = std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
  const auto bits = static_cast<std::uint32_t>(rng());
  return (bits & 0x807f'ffffU) | (exponent << 23);
}

constexpr std::array<std::uint32_t, 18> kSpecialF32 = {
    0x0000'0000U, 0x8000'0000U,  // +-0
    0x0000'0001U, 0x8000'0001U,  // +-smallest subnormal
    0x007f'ffffU, 0x807f'ffffU,  // +-largest subnormal
    0x0080'0000U, 0x8080'0000U,  // +-smallest normal
    0x7f7f'ffffU, 0xff7f'ffffU,  // +-largest finite
    0x7f80'0000U, 0xff80'0000U,  // +-Inf
    0x7fc0'0000U, 0x7f80'0001U,  // quiet, signalling NaN
    0xffc1'2345U, 0x3f80'0000U,  // negative NaN, 1
    0xbf80'0000U, 0x3380'0000U,  // -1, 2^-24
};

}  // namespace

TEST_CASE("rtl bf16_mul: every bf16 a times 144 b per a equals the host f32 product", "[rtl][numerics]") {
  FpUnits units;
  Mismatches m;
  std::mt19937_64 rng(1);
  for (std::uint32_t a = 0; a <= 0xffff; ++a) {
    for (const std::uint32_t s : kSpecialF32) {
      const auto b = static_cast<std::uint16_t>(s >> 16);
      m.check(host_mul(static_cast<std::uint16_t>(a), b), units.mul(static_cast<std::uint16_t>(a), b), a, b);
    }
    for (int i = 0; i < 126; ++i) {
      const auto b = static_cast<std::uint16_t>(rng());
      m.check(host_mul(static_cast<std::uint16_t>(a), b), units.mul(static_cast<std::uint16_t>(a), b), a, b);
    }
  }
  INFO(m.checked << " products, first mismatch: " << m.first);
  CHECK(m.count == 0);
}

TEST_CASE("rtl f32_add: millions of random and edge-case sums equal the host sums",
          "[rtl][numerics]") {
  FpUnits units;
  Mismatches m;
  std::mt19937_64 rng(2);
  const auto check = [&](std::uint32_t a, std::uint32_t b) {
    m.check(host_add(a, b), units.add(a, b), a, b);
    m.check(host_add(b, a), units.add(b, a), b, a);
  };
  for (int i = 0; i < 500'000; ++i) {
    // 1. Any bit patterns.
    check(static_cast<std::uint32_t>(rng()), static_cast<std::uint32_t>(rng()));
    // 2. Equal or neighbouring exponents, both signs: massive cancellation.
    const std::uint32_t a = f32_with_exponent(rng, 1, 254);
    const std::uint32_t ea = (a >> 23) & 0xff;
    const std::uint32_t near = f32_with_exponent(rng, ea > 2 ? ea - 2 : 1, ea < 252 ? ea + 2 : 254);
    check(a, near);
    // 3. Alignment shifts around the guard, round and sticky bits (21..29).
    const std::uint32_t shift = 21 + static_cast<std::uint32_t>(rng() % 9);
    if (ea > shift) check(a, f32_with_exponent(rng, ea - shift, ea - shift));
    // 4. Subnormals and small normals.
    check(f32_with_exponent(rng, 0, 3), f32_with_exponent(rng, 0, 3));
    // 5. Near the largest finite value: overflow to Inf.
    check(f32_with_exponent(rng, 252, 254), f32_with_exponent(rng, 250, 254));
    // 6. Specials against anything.
    check(kSpecialF32[rng() % kSpecialF32.size()], static_cast<std::uint32_t>(rng()));
    check(kSpecialF32[rng() % kSpecialF32.size()], kSpecialF32[rng() % kSpecialF32.size()]);
    // 7. What the MXU adds: a partial sum plus a product of two bf16 values.
    const auto pa = static_cast<std::uint16_t>(f32_with_exponent(rng, 100, 154) >> 16);
    const auto pb = static_cast<std::uint16_t>(f32_with_exponent(rng, 100, 154) >> 16);
    check(f32_with_exponent(rng, 90, 160), host_mul(pa, pb));
  }
  // Ties: x + half an ulp of x, for x with even and odd mantissas.
  for (std::uint32_t mantissa = 0; mantissa < 4096; ++mantissa) {
    const std::uint32_t x = (127U << 23) | mantissa;
    check(x, 0x3380'0000U);  // 2^-24, half an ulp of [1, 2)
    check(x | 0x8000'0000U, 0x3380'0000U);
  }
  INFO(m.checked << " sums, first mismatch: " << m.first);
  CHECK(m.count == 0);
}
