// The AVX-512 blocks of the vector tile kernel (mxu/matmul_kernel.hpp): the
// multiply-accumulate loop of multiply_avx512, on 16-float zmm registers.
// Everything else the kernel does (the LHS scan and rounding, the choice
// between fused and separate multiply-add, the fallbacks) is the AVX2
// kernel's, in matmul_kernel_avx2.cpp. Each output element gets the same
// operations in the same order as in the AVX2 blocks (k ascending, from +0),
// lane by lane, so the two give the same bits.
//
// Only the functions marked TPUEMU_AVX512 contain AVX-512 instructions, and
// they run only where kernel_available(kAvx512) found AVX-512F on the CPU.
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#include "mxu/matmul_kernel.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TPUEMU_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace tpuemu::mxu::detail {
namespace {

using vpu::kLanes;
constexpr std::uint32_t kPanelColumns = kWeightPanelColumns;  // a panel's weight row is one zmm
constexpr std::size_t kPanelFloats = kPanelColumns * kLanes;  // floats per panel
constexpr std::uint32_t kZmmFloats = 16;
constexpr std::uint32_t kYmmFloats = 8;

// GCC 12's avx512fintrin.h (not clang's) makes the "undefined" pass-through
// operands of some conversions from a self-initialised variable, and
// -Wmaybe-uninitialized reports each use; those lanes are always overwritten.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// ---- The scaled path (blocks_avx512_tiny): tiles that may meet f32
// denormals (a denormal operand, products below 2^-126), where Intel's cores
// take an assist per operation; scaled_fit says which: no denormal weight,
// the LHS below 2^105, products below 2^97 and none of exactly +-2^-101.
// Scaling the LHS by 2^23 (exactly, by integer operations) moves every value
// into the normal range, with no bits lost (primes: scaled values; G = 2^-126
// = 2^-149 x 2^23; M = 1.5 x 2^-103, whose binade's step is G, M / G even):
//  * p' = fl32(P) x 2^23 = fl(fl(a' w + M) - M), one fused multiply-add
//    (rounding once: the exact product never has to fit an f32) and a
//    subtraction.
//    - |P| < 2^-127: |P'| < M / 3 keeps a' w + M in M's binade, so the sum
//      rounds P' to a multiple of G, nearest even (M / G even: ties go the
//      same way), which is fl32(P) scaled; the subtraction is exact.
//    - 2^-127 <= |P| < 2^-104: fl32(P) = P (16 significant bits, the lowest
//      at or above 2^-142), and P' + M is exact: with |P'| in [2^e, 2^(e+1))
//      both are multiples of 2^min(e - 15, -104) and the sum stays below 2^24
//      of those (e <= -82); the subtraction gives P' back.
//    - |P| >= 2^-99: M is under a tenth of P''s step U, so a' w + M rounds to
//      P' (it cannot leave P''s binade: P' is at least U below its top), and
//      P' - M rounds back to P' (within the binade; or, where P' is a power of
//      two, in the binade below, whose step U / 2 is still over 2 M).
//    - In between, by cases on P''s binade (e = -81 .. -77, M = 3, 1.5,
//      0.75, 0.375, 0.1875 of its step, ties to even both ways), only +2^-101
//      fails: P' = 2^-78 is left as it is by the sum and then rounded to
//      P' - 2^-102 by the subtraction. A test checks every product from
//      2^-160 to 2^-60 exhaustively: +2^-101 is the only one wrong.
//  * s' = fl32(acc + p) x 2^23 = fl(acc' + p'): where |acc + p| >= 2^-126 both
//    round to 24 bits (scaling by a power of two commutes with that, short of
//    overflow); below, acc + p is exact in f32 (two multiples of 2^-149), and
//    acc' + p' is a multiple of G below 2^-103: 23 bits, a normal f32 (G is the
//    least normal).
//  * Sums of at most 128 products below 2^97 stay below 2^104, x 2^23 below
//    2^127. Every operand (a' >= 2^-110, w normal, M) and result (0 or >= G)
//    is a normal f32 or zero. Zeros: acc' starts at +0 and a sum is -0 only
//    when both addends are, so acc' never holds -0 (as acc never does), and a
//    product rounding to -0 adds nothing either way.
//  * The result: acc = acc' x 2^-23, by integer operations (a denormal one from
//    its integer multiple of G).

// 16 bf16 values (f32 bit patterns, finite, below 2^105) times 2^23 exactly:
// a normal one by its exponent field, a denormal one (or a zero) from its
// integer significand, so no f32 denormal reaches an arithmetic operation.
TPUEMU_AVX512 inline __m512 scale_up_zmm(const float* from) {
  const __m512i bits = _mm512_loadu_si512(from);
  const __m512i sign = _mm512_and_si512(bits, _mm512_set1_epi32(static_cast<int>(0x8000'0000U)));
  const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFF'FFFF));
  const __mmask16 small = _mm512_cmplt_epu32_mask(magnitude, _mm512_set1_epi32(0x0080'0000));
  const __m512i normal = _mm512_add_epi32(bits, _mm512_set1_epi32(kTinyScale << 23));
  // m x 2^-149 x 2^23 = m x 2^-126: m < 2^23 converts exactly, and a nonzero
  // bf16 denormal's m >= 2^16 keeps the product normal.
  const __m512 denormal = _mm512_mul_ps(_mm512_cvtepi32_ps(magnitude), _mm512_set1_ps(0x1p-126F));
  const __m512i denormal_bits = _mm512_or_si512(_mm512_castps_si512(denormal), sign);
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, denormal_bits));
}

// acc' x 2^-23 for 16 sums (multiples of 2^-126 below 2^127, never -0), as f32
// bits into `to`.
TPUEMU_AVX512 inline void scale_down_zmm(__m512 scaled, float* to) {
  const __m512i bits = _mm512_castps_si512(scaled);
  const __m512i sign = _mm512_and_si512(bits, _mm512_set1_epi32(static_cast<int>(0x8000'0000U)));
  const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFF'FFFF));
  // Below 2^-103 the result is denormal: its significand is acc' / 2^-126, an integer below 2^23.
  const __mmask16 small = _mm512_cmplt_epu32_mask(magnitude, _mm512_set1_epi32((127 - 126 + kTinyScale) << 23));
  const __m512i normal = _mm512_sub_epi32(bits, _mm512_set1_epi32(kTinyScale << 23));
  // (Capped first: the other lanes' products would overflow, harmlessly but needlessly.)
  const __m512 capped = _mm512_min_ps(_mm512_abs_ps(scaled), _mm512_set1_ps(0x1p-103F));
  const __m512i multiple = _mm512_cvttps_epi32(_mm512_mul_ps(capped, _mm512_set1_ps(0x1p126F)));
  _mm512_storeu_si512(to, _mm512_mask_blend_epi32(small, normal, _mm512_or_si512(multiple, sign)));
}

// How a block adds each product to its sum: one FMA (exact products only), a
// multiply then an add, or the scaled path's rounding FMA, subtraction and add
// (a scaled LHS; the sums scaled back as they are stored).
enum class Accumulate : std::uint8_t { kFused, kSeparate, kScaled };

// out[r][16 c ..] for the 8 rows and C zmm columns starting at `w` (the first
// of C panels; a panel's weight row is one zmm). The accumulators stay in
// registers for the whole K loop: 8 C of them, C weight rows and a broadcast
// (and a product unless kFused, and the constant M when kScaled): at most 29
// of the 32 zmm registers for C = 3 (C = 2 when kScaled).
template <int C, Accumulate kMode>
TPUEMU_AVX512 inline void block_zmm(const float* a, const float* w, std::uint32_t k_count, float* out) {
  constexpr int kRows = static_cast<int>(vpu::kSublanes);
  __m512 acc[kRows][C];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  [[maybe_unused]] const __m512 m = _mm512_set1_ps(kScaledRounding);
  for (std::uint32_t k = 0; k < k_count; ++k) {
    __m512 wv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) wv[c] = _mm512_loadu_ps(w + c * kPanelFloats + k * kPanelColumns);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 b = _mm512_set1_ps(a[r * kLanes + k]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        if constexpr (kMode == Accumulate::kFused) {
          acc[r][c] = _mm512_fmadd_ps(b, wv[c], acc[r][c]);
        } else if constexpr (kMode == Accumulate::kSeparate) {
          acc[r][c] = _mm512_add_ps(acc[r][c], _mm512_mul_ps(b, wv[c]));
        } else {
          acc[r][c] = _mm512_add_ps(acc[r][c], _mm512_sub_ps(_mm512_fmadd_ps(b, wv[c], m), m));
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      float* to = out + r * kLanes + c * kZmmFloats;
      if constexpr (kMode == Accumulate::kScaled) {
        scale_down_zmm(acc[r][c], to);
      } else {
        _mm512_storeu_ps(to, acc[r][c]);
      }
    }
  }
}

// The 8 rows of the first 8 columns of a panel (an odd last 8 columns).
template <bool kFused>
TPUEMU_AVX512 inline void block_ymm(const float* a, const float* w, std::uint32_t k_count, float* out) {
  constexpr int kRows = static_cast<int>(vpu::kSublanes);
  __m256 acc[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) acc[r] = _mm256_setzero_ps();
  for (std::uint32_t k = 0; k < k_count; ++k) {
    const __m256 wv = _mm256_loadu_ps(w + k * kPanelColumns);  // the panel's low half
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 b = _mm256_broadcast_ss(a + r * kLanes + k);
      if constexpr (kFused) {
        acc[r] = _mm256_fmadd_ps(b, wv, acc[r]);
      } else {
        acc[r] = _mm256_add_ps(acc[r], _mm256_mul_ps(b, wv));
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) _mm256_storeu_ps(out + r * kLanes, acc[r]);
}

template <bool kFused>
TPUEMU_AVX512 void zmm_blocks(const float* a, const float* panels, std::uint32_t k_count, std::uint32_t panel_count,
                              float* out) {
  // p counts 8-column vectors (always even here, so panel p / 2 starts at column 8 p).
  std::uint32_t p = 0;
  for (; p + 6 <= panel_count; p += 6)
    block_zmm<3, kFused ? Accumulate::kFused : Accumulate::kSeparate>(a, panels + p / 2 * kPanelFloats, k_count,
                                                                      out + p * kYmmFloats);
  if (panel_count - p >= 4) {
    block_zmm<2, kFused ? Accumulate::kFused : Accumulate::kSeparate>(a, panels + p / 2 * kPanelFloats, k_count,
                                                                      out + p * kYmmFloats);
    p += 4;
  }
  if (panel_count - p >= 2) {
    block_zmm<1, kFused ? Accumulate::kFused : Accumulate::kSeparate>(a, panels + p / 2 * kPanelFloats, k_count,
                                                                      out + p * kYmmFloats);
    p += 2;
  }
  if (panel_count - p == 1) block_ymm<kFused>(a, panels + p / 2 * kPanelFloats, k_count, out + p * kYmmFloats);
}

// ---- The exact f64 path (blocks_avx512_exact): tiles whose products may fall
// below f32's normal range. On Intel CPUs every f32 operation with a denormal
// operand or result takes a microcode assist (~100 cycles); in f64 all these
// values are normal, so the contract's f32 arithmetic is carried out exactly
// on doubles instead:
//  * p = fl32(a w): the product P is exact in f64, and fl32(P) is P rounded
//    to a multiple of 2^-149, nearest even (where |P| >= 2^-126 its 16
//    significant bits end at 2^-141 or above, so that leaves it as it is):
//    (P + M) - M with M = 1.5 x 2^-97, whose binade's step is 2^-149 (above
//    it P + M is exact: P's bits end far above the sum's step);
//  * s = fl32(acc + p): t = fl64(acc + p), then t rounded to a multiple of
//    2^(max(e, -126) - 23), e = t's exponent, nearest even: (t + C) - C with
//    C = 1.5 x 2^(max(e, -126) + 29). That is fl32(t), and fl32(t) =
//    fl32(acc + p): rounding to 53 and then 24 bits is innocuous for a sum
//    of two 24-bit floats (53 >= 2 x 24 + 2: Figueroa, 1995); below 2^-126
//    t is exact anyway (acc and p are multiples of 2^-149).
// The caller ensures no Inf, NaN or overflow (every product below 2^120).

constexpr std::size_t kExactVectors = vpu::kLanes / kYmmFloats;  // 8-column vectors of a tile

// 8 bf16 values (f32 bit patterns, finite) as doubles, denormals by their
// integer significand so that no f32 denormal reaches a conversion.
TPUEMU_AVX512 inline __m512d widen(const float* from) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from));
  const __m256i exponent = _mm256_and_si256(bits, _mm256_set1_epi32(0x7F80'0000));
  const __m256i denormal = _mm256_cmpeq_epi32(exponent, _mm256_setzero_si256());
  const __m512d normal = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_andnot_si256(denormal, bits)));
  const __m256i significand =
      _mm256_sign_epi32(_mm256_and_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007F'FFFF)), denormal), bits);
  return _mm512_add_pd(normal, _mm512_mul_pd(_mm512_cvtepi32_pd(significand), _mm512_set1_pd(0x1p-149)));
}

// fl32 of each lane of t (an f64 value, finite, below 2^128), as an f64.
TPUEMU_AVX512 inline __m512d round_to_f32(__m512d t) {
  const __m512d exponent = _mm512_max_pd(_mm512_getexp_pd(t), _mm512_set1_pd(-126.0));  // getexp(0) = -inf
  const __m512d c = _mm512_scalef_pd(_mm512_set1_pd(0x1.8p29), exponent);
  return _mm512_sub_pd(_mm512_add_pd(t, c), c);
}

// 8 rows x 2 vectors (16 columns) of the f64 tile, K ascending from +0.
TPUEMU_AVX512 inline void block_exact(const double* a, const double* w, std::uint32_t k_count, double* out) {
  constexpr int kRows = static_cast<int>(vpu::kSublanes);
  __m512d acc[kRows][2];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
  const __m512d m = _mm512_set1_pd(0x1.8p-97);
  for (std::uint32_t k = 0; k < k_count; ++k) {
    const __m512d w0 = _mm512_load_pd(w + k * kYmmFloats);
    const __m512d w1 = _mm512_load_pd(w + (vpu::kLanes + k) * kYmmFloats);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512d b = _mm512_set1_pd(a[r * vpu::kLanes + k]);
      for (int c = 0; c < 2; ++c) {
        // fma(b, w, M) = fl64(P + M): the product P is exact.
        const __m512d p = _mm512_sub_pd(_mm512_fmadd_pd(b, c == 0 ? w0 : w1, m), m);
        acc[r][c] = round_to_f32(_mm512_add_pd(acc[r][c], p));
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    _mm512_store_pd(out + r * 2 * kYmmFloats, acc[r][0]);
    _mm512_store_pd(out + r * 2 * kYmmFloats + kYmmFloats, acc[r][1]);
  }
}

// 8 f64 lanes holding f32 values (finite) as f32 bit patterns, the denormal
// ones from their integer multiple of 2^-149.
TPUEMU_AVX512 inline void narrow(const double* from, float* to) {
  const __m512d s = _mm512_load_pd(from);
  const __m512d least_normal = _mm512_set1_pd(0x1p-126);
  const __mmask8 small = _mm512_cmp_pd_mask(_mm512_abs_pd(s), least_normal, _CMP_LT_OQ);
  alignas(32) float normal[kYmmFloats];
  alignas(32) std::int32_t multiple[kYmmFloats];
  _mm256_store_ps(normal, _mm512_cvtpd_ps(_mm512_mask_blend_pd(small, s, least_normal)));
  _mm256_store_si256(reinterpret_cast<__m256i*>(multiple),
                     _mm512_cvtpd_epi32(_mm512_mul_pd(s, _mm512_set1_pd(0x1p149))));  // exact: |s| < 2^-126
  for (std::uint32_t i = 0; i < kYmmFloats; ++i) {
    if ((small >> i) & 1U) {
      const std::uint32_t sign = std::signbit(from[i]) ? 0x8000'0000U : 0;
      const auto magnitude = static_cast<std::uint32_t>(multiple[i] < 0 ? -multiple[i] : multiple[i]);
      to[i] = std::bit_cast<float>(sign | magnitude);
    } else {
      to[i] = normal[i];
    }
  }
}

}  // namespace

bool avx512_compiled() {
  return true;
}

TPUEMU_AVX512 void blocks_avx512_exact(const float* a, const float* panels, std::uint32_t k_count,
                                       std::uint32_t panel_count, float* out) {
  // The operands in f64: the 8 rows of `a`, and the weights by 8-column
  // vector ([v][k][8], vectors v and v + 1 one block apart), per thread.
  alignas(64) thread_local std::array<double, vpu::kSublanes * vpu::kLanes> a64;
  alignas(64) thread_local std::array<double, kExactVectors * vpu::kLanes * kYmmFloats> w64;
  alignas(64) std::array<double, vpu::kSublanes * 2 * kYmmFloats> block{};
  const std::uint32_t vectors = panel_count + (panel_count % 2);  // whole 16-column panels
  for (std::size_t r = 0; r < vpu::kSublanes; ++r) {
    for (std::uint32_t k = 0; k + kYmmFloats <= k_count; k += kYmmFloats) {
      _mm512_store_pd(&a64[r * vpu::kLanes + k], widen(a + r * vpu::kLanes + k));
    }
    for (std::uint32_t k = k_count / kYmmFloats * kYmmFloats; k < k_count; ++k) {
      alignas(32) float one[kYmmFloats] = {a[r * vpu::kLanes + k]};
      alignas(64) double wide[kYmmFloats];
      _mm512_store_pd(wide, widen(one));
      a64[r * vpu::kLanes + k] = wide[0];
    }
  }
  for (std::uint32_t v = 0; v < vectors; ++v) {
    const float* panel = panels + v / 2 * kPanelFloats + (v % 2) * kYmmFloats;
    for (std::uint32_t k = 0; k < k_count; ++k) {
      _mm512_store_pd(&w64[(v * vpu::kLanes + k) * kYmmFloats], widen(panel + k * kPanelColumns));
    }
  }
  for (std::uint32_t v = 0; v < vectors; v += 2) {
    block_exact(a64.data(), &w64[v * vpu::kLanes * kYmmFloats], k_count, block.data());
    for (std::size_t r = 0; r < vpu::kSublanes; ++r) {
      for (std::uint32_t c = 0; c < 2 && v + c < panel_count; ++c) {
        narrow(&block[(r * 2 + c) * kYmmFloats], out + r * vpu::kLanes + (v + c) * kYmmFloats);
      }
    }
  }
}

TPUEMU_AVX512 void blocks_avx512_tiny(const float* a, const float* panels, std::uint32_t k_count,
                                      std::uint32_t panel_count, float* out) {
  // The LHS x 2^23, lanes 0..k_count-1 of each row (whole zmm: lanes beyond
  // hold whatever the row holds, scaled by integer operations, never read).
  alignas(64) std::array<float, vpu::kSublanes * vpu::kLanes> scaled;
  for (std::size_t r = 0; r < vpu::kSublanes; ++r) {
    for (std::uint32_t k = 0; k < k_count; k += kZmmFloats) {
      _mm512_store_ps(&scaled[r * vpu::kLanes + k], scale_up_zmm(a + r * vpu::kLanes + k));
    }
  }
  const std::uint32_t panel_total = (panel_count + 1) / 2;  // whole 16-column panels
  std::uint32_t p = 0;
  for (; p + 2 <= panel_total; p += 2)
    block_zmm<2, Accumulate::kScaled>(scaled.data(), panels + p * kPanelFloats, k_count, out + p * kZmmFloats);
  if (p < panel_total)
    block_zmm<1, Accumulate::kScaled>(scaled.data(), panels + p * kPanelFloats, k_count, out + p * kZmmFloats);
}

void blocks_avx512(const float* a, const float* panels, std::uint32_t k_count, std::uint32_t panel_count, bool fused,
                   float* out) {
  if (fused) {
    zmm_blocks<true>(a, panels, k_count, panel_count, out);
  } else {
    zmm_blocks<false>(a, panels, k_count, panel_count, out);
  }
}

}  // namespace tpuemu::mxu::detail

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#else

namespace tpuemu::mxu::detail {
bool avx512_compiled() {
  return false;
}
void blocks_avx512(const float*, const float*, std::uint32_t, std::uint32_t, bool, float*) {}
void blocks_avx512_exact(const float*, const float*, std::uint32_t, std::uint32_t, float*) {}
void blocks_avx512_tiny(const float*, const float*, std::uint32_t, std::uint32_t, float*) {}
}  // namespace tpuemu::mxu::detail

#endif
