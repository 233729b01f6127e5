// Bit-exact conversions between float32 and the narrow floating-point formats
// the TPU stores: bfloat16 and the 8-bit e4m3 formats (float8_e4m3fn, and the
// bias-11 variant the vector unit converts through). The results match the
// numpy reference helpers of the LLO corpus (../shared/llo/README.md) bit for
// bit, so expected outputs computed there can be compared with ==.
#pragma once

#include <bit>
#include <cstdint>

namespace tpuemu {

// ---------------------------------------------------------------------------
// bfloat16: the upper 16 bits of a float32.

// Contract: round to nearest, ties to even, on the float32 bit pattern; values
// that round past the largest finite bf16 become +-Inf. A NaN keeps its sign and
// its upper payload bits and is made quiet (bit 0x400000 of the float32 pattern
// is set before truncation), so no NaN turns into an Inf.
constexpr std::uint16_t f32_to_bf16_bits(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7FFF'FFFFU) > 0x7F80'0000U) return static_cast<std::uint16_t>((bits | 0x0040'0000U) >> 16);
  // Cannot overflow: the largest non-NaN pattern is 0xFF800000 (-Inf).
  const std::uint32_t rounding_increment = 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>((bits + rounding_increment) >> 16);
}

// Exact: every bf16 value, NaN payloads included, is a float32.
constexpr float bf16_bits_to_f32(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

// The bf16 value nearest to `value`, as a float32 (numpy's bf16_round).
constexpr float bf16_round(float value) {
  return bf16_bits_to_f32(f32_to_bf16_bits(value));
}

// ---------------------------------------------------------------------------
// e4m3: 1 sign bit, 4 exponent bits, 3 mantissa bits, subnormals at exponent
// field 0, no infinities; the codes 0x7f and 0xff are NaN and 0x80 is -0.0.
//
// Encoding contract (identical to the corpus reference f8e4m3fn_bits):
//  * round to nearest, ties to the even code;
//  * -0.0 and negative values that round to zero give 0x80 (the sign is kept);
//  * magnitudes above the largest finite value up to half a step beyond it
//    (the midpoint to the next, non-existent, code) saturate to the largest
//    finite value; anything larger, +-Inf and NaN give 0x7f with the input's
//    sign bit (0x7f or 0xff).
// Decoding is exact; the two NaN codes decode to a quiet NaN with the code's
// sign, so encode(decode(c)) == c for all 256 codes. (The corpus table F8 holds
// numpy's +NaN for both; only the NaN sign differs.)
namespace detail {

inline constexpr std::uint8_t kE4m3NanCode = 0x7F;
inline constexpr std::uint8_t kE4m3SignBit = 0x80;

// 2^exponent as a float32, for exponents in the normal float32 range.
constexpr float f32_power_of_two(int exponent) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(exponent + 127) << 23);
}

template <int kExponentBias>
constexpr float e4m3_to_f32(std::uint8_t code) {
  const bool negative = (code & kE4m3SignBit) != 0;
  if ((code & kE4m3NanCode) == kE4m3NanCode) return std::bit_cast<float>(negative ? 0xFFC0'0000U : 0x7FC0'0000U);
  const int exponent_field = (code >> 3) & 0xF;
  const int mantissa_field = code & 0x7;
  // Significand as an integer in eighths: the value is significand * 2^(exponent - 3).
  const int significand = exponent_field == 0 ? mantissa_field : 8 + mantissa_field;
  const int exponent = (exponent_field == 0 ? 1 : exponent_field) - kExponentBias;
  const float magnitude = static_cast<float>(significand) * f32_power_of_two(exponent - 3);
  return negative ? -magnitude : magnitude;
}

template <int kExponentBias>
constexpr std::uint8_t f32_to_e4m3(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & kE4m3SignBit);
  const std::uint32_t magnitude_bits = bits & 0x7FFF'FFFFU;
  if (magnitude_bits >= 0x7F80'0000U) return static_cast<std::uint8_t>(sign | kE4m3NanCode);

  // 1. The input as significand * 2^(exponent - 23), float32 subnormals included.
  const int biased_exponent = static_cast<int>(magnitude_bits >> 23);
  const std::uint32_t fraction = magnitude_bits & 0x7F'FFFFU;
  const std::uint32_t significand = biased_exponent == 0 ? fraction : (fraction | 0x80'0000U);
  const int exponent = (biased_exponent == 0 ? 1 : biased_exponent) - 127;

  // 2. The e4m3 exponent field this magnitude falls in (1 also for subnormals,
  //    which share the step of the smallest binade). Steps are 2^(field - bias - 3).
  const int field = exponent + kExponentBias < 1 ? 1 : exponent + kExponentBias;
  const int step_exponent = field - kExponentBias - 3;

  // 3. Round significand * 2^(exponent - 23) to a whole number of steps,
  //    ties to even. shift >= 20 because step_exponent >= exponent - 3.
  const int shift = 23 + step_exponent - exponent;
  std::uint32_t steps = 0;
  if (shift < 25) {  // otherwise the magnitude is below half a step: rounds to 0
    const std::uint32_t remainder = significand & ((1U << shift) - 1U);
    const std::uint32_t half = 1U << (shift - 1);
    steps = significand >> shift;
    if (remainder > half || (remainder == half && (steps & 1U) != 0)) ++steps;
  }

  // 4. Codes are monotonic in the magnitude: the step count continues across
  //    the subnormal/normal boundary and into the next binade (steps == 16).
  const int code = (field - 1) * 8 + static_cast<int>(steps);
  if (code >= kE4m3NanCode) return static_cast<std::uint8_t>(sign | kE4m3NanCode);
  return static_cast<std::uint8_t>(sign | code);
}

}  // namespace detail

// float8_e4m3fn: exponent bias 7, largest finite value 448, smallest subnormal
// 2^-9. Magnitudes in (448, 464] encode as 448, above 464 as NaN.
constexpr float f8e4m3fn_to_f32(std::uint8_t code) {
  return detail::e4m3_to_f32<7>(code);
}
constexpr std::uint8_t f32_to_f8e4m3fn(float value) {
  return detail::f32_to_e4m3<7>(value);
}

// e4m3 with exponent bias 11, "fnuz" (vunpack.*.f8e4m3b11 / vcvt.f32.f8e4m3b11),
// as ml_dtypes' float8_e4m3b11fnuz: no infinities, no negative zero, 0x80 is
// the only NaN, and exponent field 15 is finite, so 0x7f = 30 is the largest
// value; smallest subnormal 2^-13.
// Evidence (shared/llo/vector_add_f8): the e4m3fn add kernel unpacks its bytes
// with vunpack.c.0.f8e4m3b11, maps |v| > 29 to NaN (e4m3fn's NaN code 0x7f
// must therefore decode finite, as 30) and maps the NaN case to -0.0 (e4m3fn's
// -0.0 code 0x80 must decode as NaN); with this reading every element of the
// case's expected output is reproduced.
// Encoding (assumed where the corpus cannot tell): nearest, ties to even;
// magnitudes beyond 30 (and infinities) saturate to 0x7f / 0xff; NaN gives 0x80;
// results that round to zero give 0x00 (there is no -0.0). The kernel forces
// the special codes it needs itself (vweird -> 0x7f, |x| <= 2^-10 -> signed zero).
constexpr float f8e4m3b11_to_f32(std::uint8_t code) {
  if (code == 0x80) return std::bit_cast<float>(0x7FC0'0000U);
  const bool negative = (code & detail::kE4m3SignBit) != 0;
  const int exponent_field = (code >> 3) & 0xF;
  const int mantissa_field = code & 0x7;
  const int significand = exponent_field == 0 ? mantissa_field : 8 + mantissa_field;
  const int exponent = (exponent_field == 0 ? 1 : exponent_field) - 11;
  const float magnitude = static_cast<float>(significand) * detail::f32_power_of_two(exponent - 3);
  return negative ? -magnitude : magnitude;
}

constexpr std::uint8_t f32_to_f8e4m3b11(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & detail::kE4m3SignBit);
  const std::uint32_t magnitude_bits = bits & 0x7FFF'FFFFU;
  if (magnitude_bits > 0x7F80'0000U) return 0x80;                                     // NaN
  if (magnitude_bits == 0x7F80'0000U) return static_cast<std::uint8_t>(sign | 0x7F);  // saturate
  // Round as plain e4m3 with bias 11 (which treats codes >= 0x7f as overflow).
  const std::uint8_t code = detail::f32_to_e4m3<11>(std::bit_cast<float>(magnitude_bits));
  if (code == 0) return 0x00;
  if (code >= 0x7F) {
    // Codes 0x7f and beyond: 0x7f is finite here (30); the plain encoder maps
    // everything above 29 to 0x7f, which is also the nearest / saturated code.
    return static_cast<std::uint8_t>(sign | 0x7F);
  }
  return static_cast<std::uint8_t>(sign | code);
}

}  // namespace tpuemu
