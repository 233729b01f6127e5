#include "vpu/valu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "common/numerics.hpp"
#include "vpu/unhandled_op.hpp"

namespace tpuemu::vpu {
namespace {

using isa::OpId;

constexpr std::uint32_t kExponentMask = 0x7F80'0000U;
constexpr std::size_t kSublanesPerPackedTile = kSublanes / 2;

float as_f32(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}

// The bits of an f32 arithmetic result, NaNs canonicalised (header contract).
std::uint32_t result_bits(float value) {
  return value != value ? kCanonicalNan : std::bit_cast<std::uint32_t>(value);
}

// IEEE 754-2019 maximum / minimum: NaN wins, -0 < +0.
float ieee_maximum(float x, float y) {
  if (x != x || y != y) return as_f32(kCanonicalNan);
  if (x == y) return std::signbit(x) ? y : x;
  return x > y ? x : y;
}
float ieee_minimum(float x, float y) {
  if (x != x || y != y) return as_f32(kCanonicalNan);
  if (x == y) return std::signbit(x) ? x : y;
  return x < y ? x : y;
}

std::uint32_t f32_to_s32_saturating(float value) {
  if (value != value) return 0;
  if (value >= 2147483648.0F) return 0x7FFF'FFFFU;
  if (value <= -2147483648.0F) return 0x8000'0000U;
  return static_cast<std::uint32_t>(static_cast<std::int32_t>(value));
}

// 4 lanes at a time with GCC vector extensions (SSE2 on x86-64, NEON on Arm).
using F32x4 = float __attribute__((vector_size(16)));
using U32x4 = std::uint32_t __attribute__((vector_size(16)));
using S32x4 = std::int32_t __attribute__((vector_size(16)));
constexpr std::size_t kChunk = sizeof(F32x4) / sizeof(float);
static_assert(kElements % kChunk == 0 && kLanes % kChunk == 0);

// Calls body(lane) with lane(i) = element i of the operand; which kind of
// operand it is gets decided here, once, so the loop inside `body` is a plain
// array walk (or a constant) the compiler can vectorise.
template <typename Body>
void with_lanes(VecArg operand, Body&& body) {
  if (operand.reg != nullptr) {
    const std::uint32_t* words = operand.reg->words.data();
    body([words](std::size_t i) { return words[i]; });
  } else {
    const std::uint32_t value = operand.imm;
    body([value](std::size_t) { return value; });
  }
}

// out[i] = f(a[i]) / f(a[i], b[i]) for every element; `out` is a Vreg's words
// or a Vmask's bits.
template <typename Out, typename F>
void map_lanes(VecArg a, Out& out, F f) {
  with_lanes(a, [&](auto at_a) {
    for (std::size_t i = 0; i < kElements; ++i) out[i] = f(at_a(i));
  });
}
template <typename Out, typename F>
void map_lanes(VecArg a, VecArg b, Out& out, F f) {
  with_lanes(a, [&](auto at_a) {
    with_lanes(b, [&](auto at_b) {
      for (std::size_t i = 0; i < kElements; ++i) out[i] = f(at_a(i), at_b(i));
    });
  });
}

// out[i] = result_bits(f(a[i], b[i])) for f32 arithmetic, a chunk at a time:
// each lane is the same IEEE operation as the scalar code's and NaNs are
// canonicalised the same way, so the bits are those of result_bits(f(x, y)).
F32x4 chunk_of(VecArg operand, std::size_t i) {
  F32x4 v;
  if (operand.reg != nullptr) {
    std::memcpy(&v, &operand.reg->words[i], sizeof v);
  } else {
    const float x = as_f32(operand.imm);
    v = F32x4{x, x, x, x};
  }
  return v;
}
// vadd/vsub/vmul.f32 of two registers 8 lanes at a time where the CPU has
// AVX (a target attribute, chosen at run time): the same IEEE operation per
// lane (MXCSR as for the SSE code) and the same NaN canonicalisation, so the
// same bits as map_f32_chunks' loop.
enum class ValuF32Op : std::uint8_t { kAdd, kSub, kMul };
#if defined(__x86_64__) && defined(__GNUC__)
template <ValuF32Op kOp>
__attribute__((target("avx"))) void valu_f32_regs_avx(const std::uint32_t* a, const std::uint32_t* b,
                                                      std::uint32_t* out) {
  const __m256 canonical = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kCanonicalNan)));
  for (std::size_t i = 0; i < kElements; i += 8) {
    const __m256 x = _mm256_loadu_ps(reinterpret_cast<const float*>(a + i));
    const __m256 y = _mm256_loadu_ps(reinterpret_cast<const float*>(b + i));
    __m256 r;
    if constexpr (kOp == ValuF32Op::kAdd) r = _mm256_add_ps(x, y);
    if constexpr (kOp == ValuF32Op::kSub) r = _mm256_sub_ps(x, y);
    if constexpr (kOp == ValuF32Op::kMul) r = _mm256_mul_ps(x, y);
    const __m256 nan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);  // all ones where NaN
    // (r & ~nan) | (canonical & nan): GCC turns a blendv with this mask into per-lane branches.
    _mm256_storeu_ps(reinterpret_cast<float*>(out + i),
                     _mm256_or_ps(_mm256_andnot_ps(nan, r), _mm256_and_ps(nan, canonical)));
  }
}
bool valu_has_avx() {
  static const bool avx = __builtin_cpu_supports("avx");
  return avx;
}
#endif

template <ValuF32Op kOp, typename F>
void map_f32_chunks(VecArg a, VecArg b, Vreg& out, F f) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (a.reg != nullptr && b.reg != nullptr && valu_has_avx()) {
    valu_f32_regs_avx<kOp>(a.reg->words.data(), b.reg->words.data(), out.words.data());
    return;
  }
#endif
  for (std::size_t i = 0; i < kElements; i += kChunk) {
    const F32x4 r = f(chunk_of(a, i), chunk_of(b, i));
    const auto nan = reinterpret_cast<U32x4>(static_cast<S32x4>(r != r));  // all ones where NaN
    U32x4 bits;
    std::memcpy(&bits, &r, sizeof bits);
    bits = (bits & ~nan) | (kCanonicalNan & nan);
    std::memcpy(&out.words[i], &bits, sizeof bits);
  }
}

// The operand as a vreg: itself, or its broadcast written into `scratch`.
const Vreg& materialise(VecArg operand, Vreg& scratch) {
  if (operand.reg != nullptr) return *operand.reg;
  scratch.words.fill(operand.imm);
  return scratch;
}
const Vreg& materialise(VecArg operand, std::optional<Vreg>& scratch) {
  if (operand.reg != nullptr) return *operand.reg;
  return materialise(operand, scratch.emplace());
}

// Output sublane p (0-3 from `low`, 4-7 from `high`) = narrow(operand sublane
// 2(p mod 4), operand sublane 2(p mod 4) + 1), lane by lane.
template <typename Narrow>
Vreg pack_sublane_pairs(const Vreg& high, const Vreg& low, Narrow narrow) {
  Vreg out;
  for (std::size_t half = 0; half < 2; ++half) {
    const Vreg& source = half == 0 ? low : high;
    for (std::size_t p = 0; p < kSublanesPerPackedTile; ++p) {
      for (std::size_t lane = 0; lane < kLanes; ++lane) {
        out.at(half * kSublanesPerPackedTile + p, lane) = narrow(source.at(2 * p, lane), source.at(2 * p + 1, lane));
      }
    }
  }
  return out;
}

// Output row r = widen(the 16-bit element of row r of the packed tile whose
// first sublane is `first_sublane`).
void unpack_bf16_tile(const Vreg& packed, std::size_t first_sublane, Vreg& out) {
  for (std::size_t pair = 0; pair < kSublanes / 2; ++pair) {
    const std::uint32_t* words = &packed.words[(first_sublane + pair) * kLanes];
    std::uint32_t* even = &out.words[2 * pair * kLanes];  // row 2p: the low halves
    std::uint32_t* odd = even + kLanes;                    // row 2p + 1: the high halves
    for (std::size_t lane = 0; lane < kLanes; lane += kChunk) {
      U32x4 w;
      std::memcpy(&w, words + lane, sizeof w);
      const U32x4 low = w << 16;
      const U32x4 high = w & 0xFFFF0000U;
      std::memcpy(even + lane, &low, sizeof low);
      std::memcpy(odd + lane, &high, sizeof high);
    }
  }
}

Vreg unpack_f8_tile0(const Vreg& packed) {
  Vreg out;
  for (std::size_t row = 0; row < kSublanes; ++row) {
    const unsigned shift = (row % 4) * 8U;
    for (std::size_t lane = 0; lane < kLanes; ++lane) {
      const auto code = static_cast<std::uint8_t>(packed.at(row / 4, lane) >> shift);
      out.set_f32(row * kLanes + lane, f8e4m3b11_to_f32(code));
    }
  }
  return out;
}

// vcmask's tentative reading (header): an inclusive rectangle of elements.
struct ElementRect {
  std::uint32_t first_sublane, first_lane, last_sublane, last_lane;
};
constexpr ElementRect decode_vcmask(std::uint32_t imm) {
  constexpr std::uint32_t kCorner = 0x3FFU;
  const std::uint32_t first = imm & kCorner;
  const std::uint32_t last = (imm >> 10) & kCorner;
  return {first & 7U, first >> 3, last & 7U, last >> 3};
}
// The immediates the dumps confirm, with what they select.
constexpr std::uint32_t kConfirmedVcmasks[] = {64512};
static_assert(decode_vcmask(64512).first_sublane == 0 && decode_vcmask(64512).last_sublane == 7 &&
              decode_vcmask(64512).first_lane == 0 && decode_vcmask(64512).last_lane == 7);

}  // namespace

Vreg valu_binary(isa::OpId op, VecArg a, VecArg b) {
  Vreg out;
  valu_binary(op, a, b, out);
  return out;
}

void valu_binary(isa::OpId op, VecArg a, VecArg b, Vreg& out) {
  using U = std::uint32_t;
  auto& w = out.words;
  switch (op) {
    case OpId::kVaddS32:
      map_lanes(a, b, w, [](U x, U y) -> U { return x + y; });
      break;
    case OpId::kVsubS32:
      map_lanes(a, b, w, [](U x, U y) -> U { return x - y; });
      break;
    case OpId::kVmulU32:
      map_lanes(a, b, w, [](U x, U y) -> U { return x * y; });
      break;
    case OpId::kVandU32:
      map_lanes(a, b, w, [](U x, U y) -> U { return x & y; });
      break;
    case OpId::kVorU32:
      map_lanes(a, b, w, [](U x, U y) -> U { return x | y; });
      break;
    case OpId::kVxorU32:
      map_lanes(a, b, w, [](U x, U y) -> U { return x ^ y; });
      break;
    case OpId::kVshllU32:
      map_lanes(a, b, w, [](U x, U y) -> U { return x << (y & 31U); });
      break;
    case OpId::kVshrlU32:
      map_lanes(a, b, w, [](U x, U y) -> U { return x >> (y & 31U); });
      break;
    case OpId::kVshraS32:
      map_lanes(a, b, w, [](U x, U y) { return static_cast<U>(static_cast<std::int32_t>(x) >> (y & 31U)); });
      break;
    case OpId::kVaddF32:
      map_f32_chunks<ValuF32Op::kAdd>(a, b, out, [](F32x4 x, F32x4 y) { return x + y; });
      break;
    case OpId::kVsubF32:
      map_f32_chunks<ValuF32Op::kSub>(a, b, out, [](F32x4 x, F32x4 y) { return x - y; });
      break;
    case OpId::kVmulF32:
      map_f32_chunks<ValuF32Op::kMul>(a, b, out, [](F32x4 x, F32x4 y) { return x * y; });
      break;
    case OpId::kVmaxF32:
      map_lanes(a, b, w, [](U x, U y) { return result_bits(ieee_maximum(as_f32(x), as_f32(y))); });
      break;
    case OpId::kVminF32:
      map_lanes(a, b, w, [](U x, U y) { return result_bits(ieee_minimum(as_f32(x), as_f32(y))); });
      break;
    default:
      throw_unhandled_op("valu_binary", op, "a two-operand VALU op");
  }
}

Vmask valu_compare(isa::OpId op, VecArg a, VecArg b) {
  using U = std::uint32_t;
  using S = std::int32_t;
  using M = std::uint8_t;
  Vmask out;
  auto& m = out.bits;
  const auto s = [](U x) { return static_cast<S>(x); };
  switch (op) {
    case OpId::kVcmpEqS32:
      map_lanes(a, b, m, [](U x, U y) -> M { return x == y; });
      break;
    case OpId::kVcmpNeS32:
      map_lanes(a, b, m, [](U x, U y) -> M { return x != y; });
      break;
    case OpId::kVcmpLtS32:
      map_lanes(a, b, m, [&](U x, U y) -> M { return s(x) < s(y); });
      break;
    case OpId::kVcmpLeS32:
      map_lanes(a, b, m, [&](U x, U y) -> M { return s(x) <= s(y); });
      break;
    case OpId::kVcmpGtS32:
      map_lanes(a, b, m, [&](U x, U y) -> M { return s(x) > s(y); });
      break;
    case OpId::kVcmpGeS32:
      map_lanes(a, b, m, [&](U x, U y) -> M { return s(x) >= s(y); });
      break;
    case OpId::kVcmpEqF32:
      map_lanes(a, b, m, [](U x, U y) -> M { return as_f32(x) == as_f32(y); });
      break;
    case OpId::kVcmpNeF32:
      map_lanes(a, b, m, [](U x, U y) -> M { return as_f32(x) != as_f32(y); });
      break;
    case OpId::kVcmpLtF32:
      map_lanes(a, b, m, [](U x, U y) -> M { return as_f32(x) < as_f32(y); });
      break;
    case OpId::kVcmpLeF32:
      map_lanes(a, b, m, [](U x, U y) -> M { return as_f32(x) <= as_f32(y); });
      break;
    case OpId::kVcmpGtF32:
      map_lanes(a, b, m, [](U x, U y) -> M { return as_f32(x) > as_f32(y); });
      break;
    case OpId::kVcmpGeF32:
      map_lanes(a, b, m, [](U x, U y) -> M { return as_f32(x) >= as_f32(y); });
      break;
    case OpId::kVcU32:
      map_lanes(a, b, m, [](U x, U y) -> M { return static_cast<U>(x + y) < x; });
      break;
    default:
      throw_unhandled_op("valu_compare", op, "a VALU compare");
  }
  return out;
}

Vreg valu_unary(isa::OpId op, VecArg a) {
  Vreg out;
  valu_unary(op, a, out);
  return out;
}

void valu_unary(isa::OpId op, VecArg a, Vreg& out) {
  using U = std::uint32_t;
  auto& w = out.words;
  std::optional<Vreg> scratch;  // an immediate's broadcast, made only when needed
  switch (op) {
    case OpId::kVclz:
      map_lanes(a, w, [](U x) { return static_cast<U>(std::countl_zero(x)); });
      break;
    case OpId::kVmov:
      map_lanes(a, w, [](U x) { return x; });
      break;
    case OpId::kVcvtS32F32:
      map_lanes(a, w, [](U x) { return result_bits(static_cast<float>(static_cast<std::int32_t>(x))); });
      break;
    case OpId::kVcvtF32S32:
      map_lanes(a, w, [](U x) { return f32_to_s32_saturating(as_f32(x)); });
      break;
    case OpId::kVcvtF32F8e4m3b11:
      map_lanes(a, w, [](U x) -> U { return f32_to_f8e4m3b11(as_f32(x)); });
      break;
    case OpId::kVunpackILoBf16:
      map_lanes(a, w, [](U x) -> U { return x << 16; });
      break;
    case OpId::kVunpackCLoBf16:
      unpack_bf16_tile(materialise(a, scratch), 0, out);
      break;
    case OpId::kVunpackCHiBf16:
      unpack_bf16_tile(materialise(a, scratch), kSublanesPerPackedTile, out);
      break;
    case OpId::kVunpackC0F8e4m3b11:
      out = unpack_f8_tile0(materialise(a, scratch));
      break;
    default:
      throw_unhandled_op("valu_unary", op, "a one-operand VALU op");
  }
}

Vreg vpack(isa::OpId op, VecArg high, VecArg low) {
  using U = std::uint32_t;
  Vreg high_scratch;
  Vreg low_scratch;
  const Vreg& h = materialise(high, high_scratch);
  const Vreg& l = materialise(low, low_scratch);
  switch (op) {
    case OpId::kVpackCBf16:
      return pack_sublane_pairs(h, l, [](U even, U odd) {
        return static_cast<U>(f32_to_bf16_bits(as_f32(even))) | (static_cast<U>(f32_to_bf16_bits(as_f32(odd))) << 16);
      });
    case OpId::kVpackCB16:
      return pack_sublane_pairs(h, l, [](U even, U odd) -> U { return (even & 0xFFFFU) | (odd << 16); });
    case OpId::kVpackCB8:
      return pack_sublane_pairs(h, l, [](U even, U odd) -> U {
        return (even & 0xFFU) | (((even >> 16) & 0xFFU) << 8) | ((odd & 0xFFU) << 16) | (((odd >> 16) & 0xFFU) << 24);
      });
    default:
      throw_unhandled_op("vpack", op, "a vpack op");
  }
}

Vmask vweird_f32(const Vreg& a) {
  Vmask out;
  for (std::size_t i = 0; i < kElements; ++i) out.bits[i] = (a.words[i] & kExponentMask) == kExponentMask;
  return out;
}

Vmask vmor(const Vmask& a, const Vmask& b) {
  Vmask out;
  for (std::size_t i = 0; i < kElements; ++i) out.bits[i] = a.bits[i] | b.bits[i];
  return out;
}

Vreg vsel(const Vmask& mask, VecArg on_true, VecArg on_false) {
  Vreg out;
  with_lanes(on_true, [&](auto at_true) {
    with_lanes(on_false, [&](auto at_false) {
      for (std::size_t i = 0; i < kElements; ++i) out.words[i] = mask.bits[i] != 0 ? at_true(i) : at_false(i);
    });
  });
  return out;
}

Vreg vlaneseq() {
  Vreg out;
  for (std::size_t i = 0; i < kElements; ++i) out.words[i] = static_cast<std::uint32_t>(i);
  return out;
}

Vreg vstv(std::uint32_t scalar) {
  Vreg out;
  out.words.fill(scalar);
  return out;
}

Vmask vcmask(std::uint32_t imm) {
  const ElementRect rect = decode_vcmask(imm);
  if (std::find(std::begin(kConfirmedVcmasks), std::end(kConfirmedVcmasks), imm) == std::end(kConfirmedVcmasks)) {
    throw std::invalid_argument(fmt::format(
        "vcmask {} (0x{:x}): unknown encoding; the dumps only show 64512 ([0:7,0:7], lanes 0..7 of every sublane) "
        "(tpuemu's tentative reading would give sublanes {}..{}, lanes {}..{}{})",
        imm, imm, rect.first_sublane, rect.last_sublane, rect.first_lane, rect.last_lane,
        imm >> 20 != 0 ? ", bits above 19 ignored" : ""));
  }
  Vmask out;
  for (std::uint32_t s = rect.first_sublane; s <= rect.last_sublane; ++s) {
    for (std::uint32_t l = rect.first_lane; l <= rect.last_lane && l < kLanes; ++l) out.bits[s * kLanes + l] = 1;
  }
  return out;
}

Vreg vrot_slane(const Vreg& a, std::uint32_t amount) {
  Vreg out;
  const std::size_t shift = amount % kSublanes;
  for (std::size_t s = 0; s < kSublanes; ++s) {
    std::copy_n(a.words.begin() + static_cast<std::ptrdiff_t>(s * kLanes), kLanes,
                out.words.begin() + static_cast<std::ptrdiff_t>(((s + shift) % kSublanes) * kLanes));
  }
  return out;
}

}  // namespace tpuemu::vpu
