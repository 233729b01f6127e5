#include <algorithm>
#include <array>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "chip/host_io.hpp"
#include "common/host_pool.hpp"
#include "common/npy.hpp"
#include "common/numerics.hpp"

using namespace tpuemu;

namespace {

float from_bits(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}
std::uint32_t to_bits(float value) {
  return std::bit_cast<std::uint32_t>(value);
}

// The corpus reference bf16_round (../shared/llo/README.md), transcribed
// operation by operation, returning the bf16 half of the result.
std::uint16_t reference_bf16_bits(float a) {
  const std::uint64_t u = to_bits(a);
  auto r = static_cast<std::uint32_t>((u + 0x7FFFU + ((u >> 16) & 1U)) & 0xFFFF0000U);
  if (std::isnan(a)) r = static_cast<std::uint32_t>((u | 0x400000U) & 0xFFFF0000U);
  return static_cast<std::uint16_t>(r >> 16);
}

// The corpus reference f8e4m3fn_bits, transcribed operation by operation
// (table F8, searchsorted, clip, tie on the index parity), with the exponent
// bias and the NaN threshold (464 for bias 7) as parameters so the same
// transcription also states the bias-11 rule (threshold 464 / 16 = 29).
class ReferenceE4m3 {
 public:
  ReferenceE4m3(int bias, double nan_above) : nan_above_(nan_above) {
    for (int c = 0; c < 127; ++c) {
      const int exponent_field = (c >> 3) & 15;
      const int mantissa_field = c & 7;
      positive_[static_cast<std::size_t>(c)] =
          exponent_field == 0 ? mantissa_field * std::ldexp(1.0, -2 - bias)
                              : (1 + mantissa_field / 8.0) * std::ldexp(1.0, exponent_field - bias);
    }
  }

  [[nodiscard]] std::uint8_t encode(float a) const {
    const double m = std::fabs(static_cast<double>(a));
    auto i = std::lower_bound(positive_.begin(), positive_.end(), m) - positive_.begin();
    i = std::clamp<std::ptrdiff_t>(i, 1, 126);
    const double lo = positive_[static_cast<std::size_t>(i - 1)];
    const double hi = positive_[static_cast<std::size_t>(i)];
    std::ptrdiff_t c = (m - lo > hi - m) || ((m - lo == hi - m) && (i % 2 == 0)) ? i : i - 1;
    if (m <= 0) c = 0;
    if (m > nan_above_ || std::isnan(a)) c = 0x7f;
    return static_cast<std::uint8_t>(c | (static_cast<std::ptrdiff_t>(std::signbit(a)) << 7));
  }

  [[nodiscard]] const std::array<double, 127>& positive_values() const { return positive_; }

 private:
  std::array<double, 127> positive_{};
  double nan_above_;
};

// Inputs that exercise every rounding decision of an e4m3 format: each code's
// value, the midpoints between neighbours and the floats next to all of them,
// values beyond the largest code, specials, and an even sweep over all float32
// bit patterns.
std::vector<float> e4m3_probe_values(const ReferenceE4m3& reference) {
  std::vector<float> probes;
  const auto& values = reference.positive_values();
  auto add_with_neighbours = [&](double v) {
    const auto f = static_cast<float>(v);
    for (float x : {f, std::nextafter(f, 0.0F), std::nextafter(f, std::numeric_limits<float>::infinity())}) {
      probes.push_back(x);
      probes.push_back(-x);
    }
  };
  for (std::size_t c = 0; c < values.size(); ++c) {
    add_with_neighbours(values[c]);
    if (c + 1 < values.size()) add_with_neighbours((values[c] + values[c + 1]) / 2);
  }
  const double largest = values[126];
  const double step_above_largest = largest - values[125];
  for (double k = 0; k <= 4; k += 0.25) add_with_neighbours(largest + k * step_above_largest);
  for (float special : {0.0F, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                        std::numeric_limits<float>::quiet_NaN(), from_bits(0x7F800001U), from_bits(0x7FBFFFFFU)}) {
    probes.push_back(special);
    probes.push_back(-special);
  }
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFU; bits += 65521)
    probes.push_back(from_bits(static_cast<std::uint32_t>(bits)));
  return probes;
}

}  // namespace

// Compile-time use is part of the contract.
static_assert(f32_to_bf16_bits(1.0F) == 0x3F80);
static_assert(bf16_bits_to_f32(0xC040) == -3.0F);
static_assert(f32_to_f8e4m3fn(448.0F) == 0x7E);
static_assert(f8e4m3fn_to_f32(0x38) == 1.0F);
static_assert(f32_to_f8e4m3b11(28.0F) == 0x7E);
static_assert(f8e4m3b11_to_f32(0x58) == 1.0F);

TEST_CASE("numerics: f32 to bf16 rounds to nearest even and quiets NaNs", "[numerics]") {
  struct Row {
    std::uint32_t f32_bits;
    std::uint16_t bf16_bits;
    const char* why;
  };
  const Row rows[] = {
      {0x3F800000U, 0x3F80, "1.0 is exact"},
      {0x3F808000U, 0x3F80, "tie, lower half even: down"},
      {0x3F818000U, 0x3F82, "tie, lower half odd: up"},
      {0x3F808001U, 0x3F81, "just above the tie: up"},
      {0x3F807FFFU, 0x3F80, "just below the tie: down"},
      {0xBF818000U, 0xBF82, "negative tie: magnitude to even"},
      {0x80000000U, 0x8000, "-0.0 keeps its sign"},
      {0x00000001U, 0x0000, "smallest denormal: to +0"},
      {0x80000001U, 0x8000, "smallest negative denormal: to -0"},
      {0x00008000U, 0x0000, "denormal tie, even: down"},
      {0x00018000U, 0x0002, "denormal tie, odd: up"},
      {0x00010000U, 0x0001, "smallest bf16 denormal is exact"},
      {0x807FFFFFU, 0x8080, "largest negative denormal: to the smallest normal"},
      {0x7F7F7FFFU, 0x7F7F, "below the tie at the top: largest finite bf16"},
      {0x7F7F8000U, 0x7F80, "tie at the top, odd: to +Inf"},
      {0x7F7FFFFFU, 0x7F80, "largest float: to +Inf"},
      {0x7F800000U, 0x7F80, "+Inf"},
      {0xFF800000U, 0xFF80, "-Inf"},
      {0x7FC00000U, 0x7FC0, "quiet NaN"},
      {0xFFC00000U, 0xFFC0, "negative quiet NaN"},
      {0x7F800001U, 0x7FC0, "signalling NaN with a low payload: quiet NaN, not Inf"},
      {0xFF800001U, 0xFFC0, "negative signalling NaN keeps its sign"},
      {0x7FA12345U, 0x7FE1, "NaN payload: upper bits kept, quiet bit set"},
      {0x7FFFFFFFU, 0x7FFF, "all-ones NaN: truncated, not rounded"},
  };
  for (const Row& row : rows) {
    INFO(row.why);
    CHECK(f32_to_bf16_bits(from_bits(row.f32_bits)) == row.bf16_bits);
    CHECK(reference_bf16_bits(from_bits(row.f32_bits)) == row.bf16_bits);
  }
  CHECK(bf16_round(1.00390625F) == 1.0F);
  CHECK(bf16_round(1.01171875F) == 1.015625F);
  CHECK(std::signbit(bf16_round(-0.0F)));
  CHECK(std::isnan(bf16_round(from_bits(0x7F800001U))));
}

TEST_CASE("numerics: every bf16 value survives decode then encode", "[numerics]") {
  int mismatches = 0;
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto bf16 = static_cast<std::uint16_t>(bits);
    const float value = bf16_bits_to_f32(bf16);
    CHECK(to_bits(value) == bits << 16);
    // A NaN comes back quiet: only signalling NaNs change.
    const std::uint16_t expected = std::isnan(value) ? static_cast<std::uint16_t>(bf16 | 0x40) : bf16;
    if (f32_to_bf16_bits(value) != expected) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("numerics: f32 to bf16 equals the corpus reference across float32", "[numerics]") {
  int mismatches = 0;
  auto check = [&](std::uint32_t bits) {
    if (f32_to_bf16_bits(from_bits(bits)) != reference_bf16_bits(from_bits(bits))) ++mismatches;
  };
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFU; bits += 4099) check(static_cast<std::uint32_t>(bits));
  // Around the tie of every 256th bf16 value, both signs, specials included.
  for (std::uint32_t upper = 0; upper <= 0xFFFF; upper += 0x101)
    for (std::uint32_t lower : {0x0000U, 0x0001U, 0x7FFFU, 0x8000U, 0x8001U, 0xFFFFU}) check(upper << 16 | lower);
  CHECK(mismatches == 0);
}

TEST_CASE("numerics: f8e4m3fn decodes every code exactly", "[numerics]") {
  CHECK(f8e4m3fn_to_f32(0x00) == 0.0F);
  CHECK_FALSE(std::signbit(f8e4m3fn_to_f32(0x00)));
  CHECK(f8e4m3fn_to_f32(0x80) == 0.0F);
  CHECK(std::signbit(f8e4m3fn_to_f32(0x80)));
  CHECK(f8e4m3fn_to_f32(0x01) == std::ldexp(1.0F, -9));
  CHECK(f8e4m3fn_to_f32(0x07) == 7 * std::ldexp(1.0F, -9));
  CHECK(f8e4m3fn_to_f32(0x08) == std::ldexp(1.0F, -6));
  CHECK(f8e4m3fn_to_f32(0x38) == 1.0F);
  CHECK(f8e4m3fn_to_f32(0x3F) == 1.875F);
  CHECK(f8e4m3fn_to_f32(0x77) == 240.0F);
  CHECK(f8e4m3fn_to_f32(0x7E) == 448.0F);
  CHECK(f8e4m3fn_to_f32(0xFE) == -448.0F);
  CHECK(std::isnan(f8e4m3fn_to_f32(0x7F)));
  CHECK_FALSE(std::signbit(f8e4m3fn_to_f32(0x7F)));
  CHECK(std::isnan(f8e4m3fn_to_f32(0xFF)));
  CHECK(std::signbit(f8e4m3fn_to_f32(0xFF)));

  const ReferenceE4m3 reference(7, 464);
  for (int c = 0; c < 127; ++c) {
    INFO("code " << c);
    CHECK(static_cast<double>(f8e4m3fn_to_f32(static_cast<std::uint8_t>(c))) ==
          reference.positive_values()[static_cast<std::size_t>(c)]);
    CHECK(f8e4m3fn_to_f32(static_cast<std::uint8_t>(c | 0x80)) == -f8e4m3fn_to_f32(static_cast<std::uint8_t>(c)));
  }
}

TEST_CASE("numerics: f8 decode then encode is the identity on all 256 codes", "[numerics]") {
  for (int c = 0; c < 256; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    INFO("code " << c);
    CHECK(f32_to_f8e4m3fn(f8e4m3fn_to_f32(code)) == code);
    // b11 is fnuz: every code but 0x80 (NaN) is a distinct finite value.
    CHECK(f32_to_f8e4m3b11(f8e4m3b11_to_f32(code)) == code);
  }
}

TEST_CASE("numerics: f32 to f8e4m3fn matches hand-computed codes", "[numerics]") {
  struct Row {
    float value;
    std::uint8_t code;
    const char* why;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Row rows[] = {
      {1.0F, 0x38, "exact"},
      {-1.0F, 0xB8, "exact, negative"},
      {240.0F, 0x77, "exact, 1.875 * 2^7"},
      {448.0F, 0x7E, "largest finite"},
      {432.0F, 0x7E, "tie between 416 (odd code) and 448 (even): 448"},
      {456.0F, 0x7E, "between 448 and the NaN threshold 464: saturates"},
      {464.0F, 0x7E, "the threshold itself saturates"},
      {std::nextafter(464.0F, inf), 0x7F, "just above 464: NaN"},
      {465.0F, 0x7F, "above 464: NaN"},
      {-465.0F, 0xFF, "above 464, negative: NaN with the sign"},
      {1e30F, 0x7F, "huge: NaN"},
      {inf, 0x7F, "+Inf: NaN (no Inf code)"},
      {-inf, 0xFF, "-Inf: negative NaN"},
      {nan, 0x7F, "NaN"},
      {-nan, 0xFF, "negative NaN keeps its sign"},
      {0.0F, 0x00, "+0"},
      {-0.0F, 0x80, "-0 keeps its sign"},
      {1e-9F, 0x00, "far below the smallest subnormal"},
      {-1e-9F, 0x80, "negative, rounds to -0"},
      {std::ldexp(1.0F, -9), 0x01, "smallest subnormal"},
      {std::ldexp(1.0F, -10), 0x00, "half the smallest subnormal: tie to even code 0"},
      {-std::ldexp(1.0F, -10), 0x80, "negative half subnormal: -0"},
      {std::nextafter(std::ldexp(1.0F, -10), 1.0F), 0x01, "just above half the smallest subnormal"},
      {3 * std::ldexp(1.0F, -10), 0x02, "tie between codes 1 and 2: even 2"},
      {5 * std::ldexp(1.0F, -10), 0x02, "tie between codes 2 and 3: even 2"},
      {std::ldexp(1.0F, -7) + std::ldexp(1.0F, -10), 0x04, "subnormal tie, codes 4 and 5: 4"},
      {std::ldexp(1.0F, -6), 0x08, "smallest normal"},
      {15 * std::ldexp(1.0F, -10), 0x08, "tie between the largest subnormal (odd) and the smallest normal"},
      {1.0625F, 0x38, "tie between 1 and 1.125: even 1"},
      {1.1875F, 0x3A, "tie between 1.125 and 1.25: even 1.25"},
      {0.1F, 0x1D, "0.1 rounds to 0.1015625"},
      {-3.3F, 0xC5, "-3.3 rounds to -3.25"},
      {std::numeric_limits<float>::denorm_min(), 0x00, "float32 denormal"},
  };
  for (const Row& row : rows) {
    INFO(row.why << " (" << row.value << ")");
    CHECK(f32_to_f8e4m3fn(row.value) == row.code);
  }
}

TEST_CASE("numerics: f32 to f8e4m3fn equals the corpus reference", "[numerics]") {
  const ReferenceE4m3 reference(7, 464);
  int mismatches = 0;
  for (float value : e4m3_probe_values(reference)) {
    if (f32_to_f8e4m3fn(value) != reference.encode(value)) {
      ++mismatches;
      UNSCOPED_INFO("value " << value << " bits " << to_bits(value));
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("numerics: f8e4m3b11 is e4m3 with exponent bias 11, fnuz (0x80 NaN, 0x7f = 30)", "[numerics]") {
  CHECK(f8e4m3b11_to_f32(0x01) == std::ldexp(1.0F, -13));
  CHECK(f8e4m3b11_to_f32(0x58) == 1.0F);
  CHECK(f8e4m3b11_to_f32(0x7E) == 28.0F);
  CHECK(f8e4m3b11_to_f32(0x7F) == 30.0F);
  CHECK(f8e4m3b11_to_f32(0xFF) == -30.0F);
  CHECK(std::isnan(f8e4m3b11_to_f32(0x80)));
  CHECK(f8e4m3b11_to_f32(0x00) == 0.0F);
  CHECK_FALSE(std::signbit(f8e4m3b11_to_f32(0x00)));
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F || c == 0x80) continue;
    const auto code = static_cast<std::uint8_t>(c);
    INFO("code " << c);
    // Apart from the special codes, the value is the e4m3fn value of the same code divided by 16.
    CHECK(f8e4m3b11_to_f32(code) * 16 == f8e4m3fn_to_f32(code));
  }

  struct Row {
    float value;
    std::uint8_t code;
  };
  const Row rows[] = {
      {28.0F, 0x7E},
      {29.0F, 0x7E},  // tie between 28 and 30: even mantissa
      {std::nextafter(29.0F, 30.0F), 0x7F},
      {30.0F, 0x7F},
      {1000.0F, 0x7F},  // saturates
      {-30.0F, 0xFF},
      {-0.0F, 0x00},  // no negative zero
      {-std::ldexp(1.0F, -15), 0x00},
      {std::ldexp(1.0F, -13), 0x01},
      {std::ldexp(1.0F, -14), 0x00},
      {1.0625F, 0x58},
      {std::numeric_limits<float>::infinity(), 0x7F},
      {-std::numeric_limits<float>::infinity(), 0xFF},
      {std::numeric_limits<float>::quiet_NaN(), 0x80},
  };
  for (const Row& row : rows) {
    INFO(row.value);
    CHECK(f32_to_f8e4m3b11(row.value) == row.code);
  }

  // Below 29 and away from zero the codes are those of plain e4m3 with bias 11.
  const ReferenceE4m3 reference(11, 29);
  int mismatches = 0;
  for (float value : e4m3_probe_values(reference)) {
    if (!(std::fabs(value) <= 29.0F) || f32_to_f8e4m3b11(value) == 0x00) continue;
    if (f32_to_f8e4m3b11(value) != reference.encode(value)) ++mismatches;
    if (f32_to_f8e4m3b11(value) != f32_to_f8e4m3fn(value * 16)) ++mismatches;
  }
  CHECK(mismatches == 0);
}

// ---------------------------------------------------------------------------
// Host <-> device layouts (chip/host_io.hpp, with the numerics it converts by): every element at the offset the
// layout documents, padding zero, and back again.

namespace {

// Byte offset of element (r, c) of the tiled 2-D view, written out from the
// layout comment in chip/host_io.hpp.
std::uint64_t documented_offset(const std::string& dtype, std::uint64_t cols, std::uint64_t r, std::uint64_t c) {
  const std::uint64_t tile = (r / 8) * ((cols + 127) / 128) + c / 128;
  const std::uint64_t tr = r % 8;
  const std::uint64_t tc = c % 128;
  if (dtype == "bf16") return tile * 2048 + ((tr / 2) * 128 + tc) * 4 + (tr % 2) * 2;
  if (dtype == "f8e4m3fn") return tile * 1024 + ((tr / 4) * 128 + tc) * 4 + (tr % 4);
  return tile * 4096 + (tr * 128 + tc) * 4;
}

}  // namespace

TEST_CASE("host layouts: to_device puts every element where the layout says, from_device reads it back",
          "[numerics][host_io]") {
  std::mt19937 rng(5);
  struct Case {
    std::string dtype;
    NpyDtype host;
    std::size_t element;  // bytes on the device
  };
  const std::vector<Case> cases = {{"f32", NpyDtype::kFloat32, 4},     {"s32", NpyDtype::kInt32, 4},
                                   {"u32", NpyDtype::kUint32, 4},      {"bf16", NpyDtype::kUint16, 2},
                                   {"bf16", NpyDtype::kFloat32, 2},    {"f8e4m3fn", NpyDtype::kUint8, 1},
                                   {"f8e4m3fn", NpyDtype::kFloat32, 1}};
  const std::vector<std::vector<std::uint64_t>> shapes = {{8, 128}, {13, 300}, {1, 1}, {16, 256}, {9, 129},
                                                          {1000},   {128},     {1},    {}};
  for (const Case& k : cases) {
    for (const auto& shape : shapes) {
      chip::OperandBinding b;
      b.dtype = k.dtype;
      b.shape = shape;
      const std::uint64_t count = element_count(shape);
      const std::uint64_t cols = shape.size() == 2 ? shape[1] : 128;
      NpyArray host{k.host, shape, std::vector<std::uint8_t>(count * element_size(k.host))};
      for (std::uint64_t i = 0; i < count; ++i) {
        if (k.host == NpyDtype::kFloat32) {
          // Mostly ordinary values, some that round to Inf, NaNs (signalling, payloads), zeros, denormals.
          constexpr std::array<std::uint32_t, 10> kSpecial = {0x7F80'0001, 0xFFC1'2345, 0x7F7F'FFFF, 0xFF7F'8000,
                                                              0x7F80'0000, 0x8000'0000, 0x0000'8001, 0x3F80'8000,
                                                              0x3F81'8000, 0x0001'7FFF};
          float v = std::uniform_real_distribution<float>(-8.0F, 8.0F)(rng);
          if (rng() % 8 == 0) v = from_bits(kSpecial[rng() % kSpecial.size()]);
          std::memcpy(&host.data[i * 4], &v, 4);
        } else if (k.host == NpyDtype::kUint8) {
          host.data[i] = static_cast<std::uint8_t>(rng() % 0x7F);  // finite codes
        } else {
          for (std::size_t byte = 0; byte < element_size(k.host); ++byte)
            host.data[i * element_size(k.host) + byte] = static_cast<std::uint8_t>(rng());
        }
      }
      INFO(k.dtype << " from " << to_string(k.host) << ", " << shape.size() << "-D, " << count << " elements");
      const std::vector<std::uint8_t> device = chip::to_device(b, host, "x.npy");
      REQUIRE(device.size() == chip::device_bytes(b));
      std::vector<bool> covered(device.size(), false);
      for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t r = shape.size() == 2 ? i / cols : i / 128;
        const std::uint64_t c = shape.size() == 2 ? i % cols : i % 128;
        const std::uint64_t at = documented_offset(k.dtype, cols, r, c);
        std::array<std::uint8_t, 4> want{};
        if (k.host == NpyDtype::kFloat32 && k.dtype == "bf16") {
          const std::uint16_t bits = f32_to_bf16_bits(host.as_f32()[i]);
          std::memcpy(want.data(), &bits, 2);
        } else if (k.host == NpyDtype::kFloat32 && k.dtype == "f8e4m3fn") {
          want[0] = f32_to_f8e4m3fn(host.as_f32()[i]);
        } else {
          std::memcpy(want.data(), &host.data[i * k.element], k.element);
        }
        for (std::size_t byte = 0; byte < k.element; ++byte) {
          REQUIRE(device[at + byte] == want[byte]);
          covered[at + byte] = true;
        }
      }
      for (std::size_t byte = 0; byte < device.size(); ++byte) {
        if (!covered[byte]) REQUIRE(device[byte] == 0);
      }
      // Back: raw codes give the host array again, values the decoded ones.
      const bool raw = k.host != NpyDtype::kFloat32 || k.dtype == "f32";
      const NpyArray back = chip::from_device(b, device, raw);
      // A piece at a time (8, 16, 24 view rows): the same bytes, in order.
      for (const std::uint64_t step : {8U, 16U, 24U}) {
        std::vector<std::uint8_t> joined;
        for (std::uint64_t r = 0; r < chip::view_rows(b); r += step) {
          std::vector<std::uint8_t> piece(chip::host_bytes_of_rows(b, raw, r, r + step));
          chip::from_device_rows(b, device, raw, r, r + step, piece);
          joined.insert(joined.end(), piece.begin(), piece.end());
        }
        INFO("pieces of " << step << " rows");
        CHECK(joined == back.data);
      }
      if (chip::view_rows(b) > 8) {
        std::vector<std::uint8_t> piece(chip::host_bytes_of_rows(b, raw, 4, 12));
        CHECK_THROWS_AS(chip::from_device_rows(b, device, raw, 4, 12, piece), std::invalid_argument);
      }
      std::vector<std::uint8_t> too_small(chip::host_bytes_of_rows(b, raw, 0, 8) - 1);
      CHECK_THROWS_AS(chip::from_device_rows(b, device, raw, 0, 8, too_small), std::invalid_argument);
      if (raw) {
        CHECK(back == host);
      } else {
        REQUIRE(back.dtype == NpyDtype::kFloat32);
        for (std::uint64_t i = 0; i < count; ++i) {
          const float v = host.as_f32()[i];
          const float want = k.dtype == "bf16" ? bf16_round(v) : f8e4m3fn_to_f32(f32_to_f8e4m3fn(v));
          if (std::isnan(want) && k.dtype == "f8e4m3fn") {
            REQUIRE(std::isnan(back.as_f32()[i]));
            continue;
          }
          REQUIRE(to_bits(back.as_f32()[i]) == to_bits(want));
        }
      }
    }
  }
}

TEST_CASE("host layouts: large arrays convert on host threads with the same bytes", "[numerics][host_io]") {
  std::mt19937 rng(6);
  for (const auto& [dtype, host_dtype] : std::vector<std::pair<std::string, NpyDtype>>{
           {"bf16", NpyDtype::kFloat32}, {"f32", NpyDtype::kFloat32}, {"f8e4m3fn", NpyDtype::kUint8}}) {
    for (const auto& shape : std::vector<std::vector<std::uint64_t>>{{1027, 1100}, {1200000}}) {
      chip::OperandBinding b;
      b.dtype = dtype;
      b.shape = shape;
      NpyArray host{host_dtype, shape, std::vector<std::uint8_t>(element_count(shape) * element_size(host_dtype))};
      for (auto& byte : host.data) byte = static_cast<std::uint8_t>(rng());
      set_host_threads(1);
      const auto device = chip::to_device(b, host, "x.npy");
      const NpyArray back = chip::from_device(b, device, false);
      for (const unsigned threads : {2U, 3U, 8U}) {
        set_host_threads(threads);
        INFO(dtype << ", " << shape.size() << "-D, " << threads << " threads");
        CHECK(chip::to_device(b, host, "x.npy") == device);
        CHECK(chip::from_device(b, device, false) == back);
        // Pieces of ~2 MiB convert on the host threads too.
        const std::uint64_t step = chip::host_rows_per_piece(b, false, std::uint64_t{2} << 20);
        std::vector<std::uint8_t> joined;
        for (std::uint64_t r = 0; r < chip::view_rows(b); r += step) {
          std::vector<std::uint8_t> piece(chip::host_bytes_of_rows(b, false, r, r + step));
          chip::from_device_rows(b, device, false, r, r + step, piece);
          joined.insert(joined.end(), piece.begin(), piece.end());
        }
        CHECK(joined == back.data);
      }
    }
  }
  set_host_threads(0);
}

namespace {

chip::OperandBinding scalar_operand(const std::string& dtype) {
  chip::OperandBinding b;
  b.index = 1;
  b.space = "<no memory space>";
  b.dtype = dtype;
  return b;
}

template <class T>
NpyArray one(NpyDtype dtype, T value, std::vector<std::uint64_t> shape = {}) {
  return make_npy(dtype, std::move(shape), &value);
}

using chip::scalar_register;

std::string scalar_refusal(const std::string& dtype, const NpyArray& host, std::string_view element = {}) {
  try {
    chip::scalar_register(scalar_operand(dtype), host, element, "op");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("host layouts: a by-value operand takes one element converted exactly to its dtype", "[numerics][host_io]") {
  // Same dtype: the bits as they are (a NaN payload too), in the low bits of the register.
  CHECK(scalar_register(scalar_operand("f32"), one(NpyDtype::kFloat32, from_bits(0x7FA0'0001)), {}, "op") ==
        0x7FA0'0001U);
  CHECK(scalar_register(scalar_operand("s32"), one(NpyDtype::kInt32, std::int32_t{-5}), {}, "op") == 0xFFFF'FFFBU);
  CHECK(scalar_register(scalar_operand("u32"), one(NpyDtype::kUint32, std::uint32_t{0xFFFF'FFFF}), {}, "op") ==
        0xFFFF'FFFFU);
  CHECK(scalar_register(scalar_operand("bf16"), one(NpyDtype::kUint16, std::uint16_t{0xFFC1}), "bfloat16", "op") ==
        0xFFC1U);
  CHECK(scalar_register(scalar_operand("f8e4m3fn"), one(NpyDtype::kUint8, std::uint8_t{0x38}), "float8_e4m3fn", "op") ==
        0x38U);
  // Across dtypes: bf16 bits and f8 codes widen, integers become floats, whole floats integers.
  CHECK(scalar_register(scalar_operand("f32"), one(NpyDtype::kUint16, std::uint16_t{0x3FC0}), "bfloat16", "op") ==
        to_bits(1.5F));
  CHECK(scalar_register(scalar_operand("f32"), one(NpyDtype::kUint8, std::uint8_t{0x38}), "float8_e4m3fn", "op") ==
        to_bits(1.0F));
  CHECK(scalar_register(scalar_operand("f32"), one(NpyDtype::kInt32, std::int32_t{-3}, {1}), {}, "op") ==
        to_bits(-3.0F));
  CHECK(scalar_register(scalar_operand("f32"), one(NpyDtype::kFloat64, 0.25), {}, "op") == to_bits(0.25F));
  CHECK(scalar_register(scalar_operand("f32"), one(NpyDtype::kInt64, std::int64_t{1} << 40), {}, "op") ==
        to_bits(0x1p40F));
  CHECK(scalar_register(scalar_operand("s32"), one(NpyDtype::kFloat32, 4.0F), {}, "op") == 4U);
  CHECK(scalar_register(scalar_operand("s32"), one(NpyDtype::kFloat32, -0.0F), {}, "op") == 0U);
  CHECK(scalar_register(scalar_operand("s32"), one(NpyDtype::kFloat32, -0x1p31F), {}, "op") == 0x8000'0000U);
  CHECK(scalar_register(scalar_operand("u32"), one(NpyDtype::kUint16, std::uint16_t{0x3FC0}), {}, "op") == 0x3FC0U);
  CHECK(scalar_register(scalar_operand("s32"), one(NpyDtype::kBool, std::uint8_t{1}, {1, 1}), {}, "op") == 1U);
  CHECK(scalar_register(scalar_operand("bf16"), one(NpyDtype::kFloat32, -2.5F), {}, "op") == f32_to_bf16_bits(-2.5F));
  CHECK(scalar_register(scalar_operand("bf16"), one(NpyDtype::kFloat32, -INFINITY), {}, "op") == 0xFF80U);
  CHECK(scalar_register(scalar_operand("f8e4m3fn"), one(NpyDtype::kInt32, std::int32_t{-448}), {}, "op") ==
        f32_to_f8e4m3fn(-448.0F));
  CHECK(std::isnan(bf16_bits_to_f32(
      static_cast<std::uint16_t>(scalar_register(scalar_operand("bf16"), one(NpyDtype::kFloat32, -NAN), {}, "op")))));
}

TEST_CASE("host layouts: a by-value operand refuses what does not convert exactly, saying why", "[numerics][host_io]") {
  const std::array<float, 3> three = {1, 2, 3};
  CHECK(scalar_refusal("f32", make_npy(NpyDtype::kFloat32, {3}, three.data())) ==
        "op: the array has 3 elements (float32, shape (3,)), but by-value operand 1 (f32[]) takes one");
  CHECK(scalar_refusal("s32", one(NpyDtype::kFloat32, 2.5F)) ==
        "op: 2.5 (float32, shape ()) does not convert to operand 1's dtype s32: it is not a whole number");
  CHECK(scalar_refusal("s32", one(NpyDtype::kFloat32, 0x1p31F)) ==
        "op: 2147483648 (float32, shape ()) does not convert to operand 1's dtype s32: it is outside -2147483648 to "
        "2147483647");
  CHECK(scalar_refusal("u32", one(NpyDtype::kInt32, std::int32_t{-1})) ==
        "op: -1 (int32, shape ()) does not convert to operand 1's dtype u32: it is outside 0 to 4294967295");
  CHECK(scalar_refusal("s32", one(NpyDtype::kUint8, std::uint8_t{0x7F}), "float8_e4m3fn") ==
        "op: nan (float8_e4m3fn codes as uint8, shape ()) does not convert to operand 1's dtype s32: it is not a "
        "finite number");
  CHECK(scalar_refusal("f32", one(NpyDtype::kInt32, std::int32_t{16777217})) ==
        "op: 16777217 (int32, shape ()) does not convert to operand 1's dtype f32: it is not exactly representable "
        "(the nearest f32 is 16777216)");
  CHECK(scalar_refusal("bf16", one(NpyDtype::kFloat32, 0.1F)) ==
        "op: 0.1 (float32, shape ()) does not convert to operand 1's dtype bf16: it is not exactly representable (the "
        "nearest bf16 is 0.100097656)");
  CHECK(scalar_refusal("f8e4m3fn", one(NpyDtype::kFloat32, INFINITY)) ==
        "op: inf (float32, shape ()) does not convert to operand 1's dtype f8e4m3fn: f8e4m3fn has no infinity");
  CHECK(scalar_refusal("f32", one(NpyDtype::kFloat64, 0.1)) ==
        "op: 0.1 (float64, shape ()) does not convert to operand 1's dtype f32: it is not exactly representable (the "
        "nearest f32 is 0.10000000149011612)");
  CHECK(scalar_register(scalar_operand("s32"), one(NpyDtype::kFloat64, 16777217.0), {}, "op") == 16777217U);
  CHECK(scalar_refusal("pred", one(NpyDtype::kInt32, std::int32_t{1})) ==
        "op: 1 (int32, shape ()) does not convert to operand 1's dtype pred: that dtype is not supported (f32, s32, "
        "u32, bf16, f8e4m3fn)");
}
