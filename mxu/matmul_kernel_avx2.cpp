// The AVX2+FMA tile kernel (mxu/matmul_kernel.hpp). Only the functions marked
// TPUEMU_AVX2 (a GCC/Clang target attribute, not a file-wide -mavx2) contain
// AVX2 instructions: the helpers have internal linkage, anything they inline
// from shared headers keeps its generic out-of-line copy, and the two entry
// points run only where kernel_available() found AVX2 and FMA.
#include "mxu/matmul_kernel.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <array>
#include <bit>
#include <cstring>

#define TPUEMU_AVX2 __attribute__((target("avx2,fma")))

namespace tpuemu::mxu::detail {
namespace {

using vpu::kLanes;
using vpu::kSublanes;
constexpr std::uint32_t kVector = 8;  // f32 lanes of a ymm register
// WeightTile::panels: 16-column panels, a weight row of 16 floats per K row.
constexpr std::size_t kPanelRow = kWeightPanelColumns;  // floats from one K row of a panel to the next

// The first float of 8-column vector v (columns 8v..8v+7) in the panels: half v % 2 of panel v / 2.
constexpr std::size_t vector_offset(std::size_t v) {
  return (v / 2) * kPanelRow * kLanes + (v % 2) * kVector;
}

// bf16_round of 8 f32 bit patterns (common/numerics.hpp f32_to_bf16_bits:
// nearest even; NaNs made quiet and truncated).
TPUEMU_AVX2 inline __m256i round_to_bf16(__m256i bits) {
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFF'FFFF));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F80'0000));
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)), odd);
  const __m256i quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x0040'0000));
  return _mm256_and_si256(_mm256_blendv_epi8(rounded, quiet, is_nan),
                          _mm256_set1_epi32(static_cast<int>(0xFFFF'0000U)));
}

// What one pass over lanes 0..used_k-1 of 8 rows (stride kLanes) finds.
struct Scan {
  std::uint32_t low_bits;       // OR of the low 16 bits: 0 when every value is a bf16 value
  std::uint32_t max_magnitude;  // largest |x| as bits (>= 0x7F800000: an Inf or a NaN)
  std::uint32_t min_nonzero;    // smallest nonzero |x| as bits, minus 1 (0xFFFFFFFF: none)

  [[nodiscard]] ValueRange range() const {
    ValueRange r;
    r.non_finite = max_magnitude >= 0x7F80'0000U;
    if (max_magnitude != 0) {
      r.max_magnitude = max_magnitude;
      r.min_magnitude = min_nonzero + 1;
    }
    return r;
  }
};

enum class Reduce { kOr, kMax, kMin };

template <Reduce kOp>
TPUEMU_AVX2 inline std::uint32_t reduce(__m256i v) {
  alignas(32) std::uint32_t lanes[kVector];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  std::uint32_t r = lanes[0];
  for (std::uint32_t i = 1; i < kVector; ++i) {
    if constexpr (kOp == Reduce::kOr) r |= lanes[i];
    if constexpr (kOp == Reduce::kMax) r = std::max(r, lanes[i]);
    if constexpr (kOp == Reduce::kMin) r = std::min(r, lanes[i]);
  }
  return r;
}

// Lanes at or beyond used_k count as +0.
TPUEMU_AVX2 Scan scan(const std::uint32_t* rows, std::uint32_t used_k) {
  const __m256i magnitude_mask = _mm256_set1_epi32(0x7FFF'FFFF);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i low = _mm256_setzero_si256();
  __m256i max_m = _mm256_setzero_si256();
  __m256i min_m = _mm256_set1_epi32(-1);
  const std::uint32_t full = used_k / kVector;
  const std::uint32_t rest = used_k % kVector;
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)), lane);
  for (std::size_t row = 0; row < kSublanes; ++row) {
    const std::uint32_t* r = rows + row * kLanes;
    for (std::uint32_t v = 0; v <= full; ++v) {
      if (v == full && rest == 0) break;
      __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + v * kVector));
      if (v == full) bits = _mm256_and_si256(bits, tail);
      low = _mm256_or_si256(low, bits);
      const __m256i m = _mm256_and_si256(bits, magnitude_mask);
      max_m = _mm256_max_epu32(max_m, m);
      min_m = _mm256_min_epu32(min_m, _mm256_sub_epi32(m, one));
    }
  }
  return Scan{reduce<Reduce::kOr>(low) & 0xFFFFU, reduce<Reduce::kMax>(max_m), reduce<Reduce::kMin>(min_m)};
}

// Calls visit(magnitude, nonzero) for each 8-lane vector of lanes 0..used_k-1
// of the 8 rows: the values' bits less the sign, and all ones in the lanes
// that hold a nonzero value below used_k.
template <typename Visit>
TPUEMU_AVX2 inline void for_each_nonzero_vector(const std::uint32_t* rows, std::uint32_t used_k, Visit visit) {
  const std::uint32_t vectors = (used_k + kVector - 1) / kVector;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i zero = _mm256_setzero_si256();
  for (std::size_t row = 0; row < kSublanes; ++row) {
    for (std::uint32_t v = 0; v < vectors; ++v) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + row * kLanes + v * kVector));
      const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFF'FFFF));
      const __m256i in_range = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(used_k - v * kVector)), lane);
      const __m256i nonzero = _mm256_xor_si256(_mm256_cmpeq_epi32(magnitude, zero), _mm256_set1_epi32(-1));
      visit(magnitude, _mm256_and_si256(in_range, nonzero));
    }
  }
}

// Which 8-field buckets (PowerOfTwoFields::from_buckets) hold the powers of
// two among lanes 0..used_k-1 of the 8 rows (as PowerOfTwoFields::add counts
// them: a zero fraction, or field 0): a superset of their fields, for
// scaled_pairs_fit.
TPUEMU_AVX2 std::uint32_t power_of_two_buckets(const std::uint32_t* rows, std::uint32_t used_k) {
  __m256i found = _mm256_setzero_si256();
  const __m256i zero = _mm256_setzero_si256();
  for_each_nonzero_vector(rows, used_k, [&](__m256i magnitude, __m256i nonzero) TPUEMU_AVX2 {
    const __m256i field = _mm256_srli_epi32(magnitude, 23);
    const __m256i fraction = _mm256_and_si256(magnitude, _mm256_set1_epi32(0x007F'FFFF));
    const __m256i power = _mm256_or_si256(_mm256_cmpeq_epi32(fraction, zero), _mm256_cmpeq_epi32(field, zero));
    // A shift by 32 gives 0: lanes not counted add nothing.
    const __m256i shift =
        _mm256_blendv_epi8(_mm256_set1_epi32(32), _mm256_srli_epi32(field, 3), _mm256_and_si256(nonzero, power));
    found = _mm256_or_si256(found, _mm256_sllv_epi32(_mm256_set1_epi32(1), shift));
  });
  return reduce<Reduce::kOr>(found);
}

// How many of lanes 0..used_k-1 of the 8 rows hold a denormal (nonzero,
// exponent field 0).
TPUEMU_AVX2 std::uint32_t denormal_count(const std::uint32_t* rows, std::uint32_t used_k) {
  std::uint32_t count = 0;
  for_each_nonzero_vector(rows, used_k, [&](__m256i magnitude, __m256i nonzero) TPUEMU_AVX2 {
    const __m256i field_zero = _mm256_cmpeq_epi32(_mm256_srli_epi32(magnitude, 23), _mm256_setzero_si256());
    const int lanes = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(field_zero, nonzero)));
    count += static_cast<std::uint32_t>(std::popcount(static_cast<unsigned>(lanes)));
  });
  return count;
}

// bf16_round of lanes 0..used_k-1 of the 8 rows into `a` (row stride kLanes).
TPUEMU_AVX2 void round_rows(const std::uint32_t* rows, std::uint32_t used_k, std::uint32_t* a) {
  const std::uint32_t vectors = (used_k + kVector - 1) / kVector;
  for (std::size_t row = 0; row < kSublanes; ++row) {
    for (std::uint32_t v = 0; v < vectors; ++v) {
      const std::size_t i = row * kLanes + v * kVector;
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + i), round_to_bf16(bits));
    }
  }
}

// out[r][c] for R rows and C ymm columns (8-column vectors v..v+C-1 of the panels): the accumulators stay in
// registers for the whole K loop, K ascending. kFused: one vfmadd per product (exact
// products only); otherwise a multiply then an add.
template <int R, int C, bool kFused>
TPUEMU_AVX2 inline void block(const float* a, const float* panels, std::uint32_t v, std::uint32_t k_count, float* out) {
  const float* w[C];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) w[c] = panels + vector_offset(v + c);
  __m256 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  for (std::uint32_t k = 0; k < k_count; ++k) {
    __m256 wv[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) wv[c] = _mm256_loadu_ps(w[c] + k * kPanelRow);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 b = _mm256_broadcast_ss(a + r * kLanes + k);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        if constexpr (kFused) {
          acc[r][c] = _mm256_fmadd_ps(b, wv[c], acc[r][c]);
        } else {
          acc[r][c] = _mm256_add_ps(acc[r][c], _mm256_mul_ps(b, wv[c]));
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) _mm256_storeu_ps(out + r * kLanes + c * kVector, acc[r][c]);
  }
}

// All 8 rows over `vectors` ymm columns: strips of kStrip columns for rows
// 0-3 and 4-7 (12 accumulators fused; 8 with a register for the product
// otherwise), the rest in blocks that keep 8 independent sums.
template <bool kFused>
TPUEMU_AVX2 void all_blocks(const float* a, const float* panels, std::uint32_t k_count, std::uint32_t vectors,
                            float* out) {
  constexpr int kStrip = kFused ? 3 : 2;
  std::uint32_t v = 0;
  for (; v + kStrip <= vectors; v += kStrip) {
    float* o = out + v * kVector;
    block<4, kStrip, kFused>(a, panels, v, k_count, o);
    block<4, kStrip, kFused>(a + 4 * kLanes, panels, v, k_count, o + 4 * kLanes);
  }
  float* o = out + v * kVector;
  if (vectors - v == 2) {
    block<4, 2, kFused>(a, panels, v, k_count, o);
    block<4, 2, kFused>(a + 4 * kLanes, panels, v, k_count, o + 4 * kLanes);
  } else if (vectors - v == 1) {
    block<8, 1, kFused>(a, panels, v, k_count, o);
  }
}

// The scaled path on ymm registers (the AVX-512 kernel's blocks_avx512_tiny
// says why it is exact): tiles scaled_fit allows, on CPUs whose f32
// denormal arithmetic takes assists. The LHS x 2^23 by integer operations,
// p' = fl(a' w + M) - M with M = 1.5 x 2^-103, acc' += p', and the sums
// x 2^-23 by integer operations again.

// 8 bf16 values (finite, below 2^105) times 2^23 exactly.
TPUEMU_AVX2 inline __m256 scale_up_ymm(const float* from) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from));
  const __m256i sign = _mm256_and_si256(bits, _mm256_set1_epi32(static_cast<int>(0x8000'0000U)));
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFF'FFFF));
  const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x0080'0000), magnitude);  // zero or denormal
  const __m256i normal = _mm256_add_epi32(bits, _mm256_set1_epi32(kTinyScale << 23));
  const __m256 denormal = _mm256_mul_ps(_mm256_cvtepi32_ps(magnitude), _mm256_set1_ps(0x1p-126F));
  const __m256i denormal_bits = _mm256_or_si256(_mm256_castps_si256(denormal), sign);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, denormal_bits, small));
}

// acc' x 2^-23 for 8 sums (multiples of 2^-126 below 2^127, never -0) into `to`.
TPUEMU_AVX2 inline void scale_down_ymm(__m256 scaled, float* to) {
  const __m256i bits = _mm256_castps_si256(scaled);
  const __m256i sign = _mm256_and_si256(bits, _mm256_set1_epi32(static_cast<int>(0x8000'0000U)));
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFF'FFFF));
  const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32((127 - 126 + kTinyScale) << 23), magnitude);
  const __m256i normal = _mm256_sub_epi32(bits, _mm256_set1_epi32(kTinyScale << 23));
  const __m256 capped = _mm256_min_ps(_mm256_castsi256_ps(magnitude), _mm256_set1_ps(0x1p-103F));
  const __m256i multiple = _mm256_cvttps_epi32(_mm256_mul_ps(capped, _mm256_set1_ps(0x1p126F)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(to),
                      _mm256_blendv_epi8(normal, _mm256_or_si256(multiple, sign), small));
}

// 8 rows x 1 ymm column (vector v of the panels) of the scaled sums; `a` holds the scaled LHS.
TPUEMU_AVX2 inline void block_tiny_ymm(const float* a, const float* panels, std::uint32_t v, std::uint32_t k_count,
                                       float* out) {
  const float* w = panels + vector_offset(v);
  __m256 acc[kSublanes];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < kSublanes; ++r) acc[r] = _mm256_setzero_ps();
  const __m256 m = _mm256_set1_ps(kScaledRounding);
  for (std::uint32_t k = 0; k < k_count; ++k) {
    const __m256 wv = _mm256_loadu_ps(w + k * kPanelRow);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < kSublanes; ++r) {
      const __m256 b = _mm256_broadcast_ss(a + r * kLanes + k);
      acc[r] = _mm256_add_ps(acc[r], _mm256_sub_ps(_mm256_fmadd_ps(b, wv, m), m));
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < kSublanes; ++r) scale_down_ymm(acc[r], out + r * kLanes);
}

}  // namespace

bool avx2_compiled() {
  return true;
}

TPUEMU_AVX2 void blocks_avx2_tiny(const float* a, const float* panels, std::uint32_t k_count, std::uint32_t vectors,
                                  float* out) {
  alignas(32) std::array<float, kSublanes * kLanes> scaled;
  for (std::size_t r = 0; r < kSublanes; ++r) {
    for (std::uint32_t k = 0; k < k_count; k += kVector) {
      _mm256_store_ps(&scaled[r * kLanes + k], scale_up_ymm(a + r * kLanes + k));
    }
  }
  for (std::uint32_t v = 0; v < vectors; ++v) block_tiny_ymm(scaled.data(), panels, v, k_count, out + v * kVector);
}

TPUEMU_AVX2 void build_weights_avx2(std::span<const StagedPush> pushes, std::uint32_t size, WeightTile& tile) {
  // Every word of `values` and `panels` is written once: rows beyond the
  // pushes or `size`, and lanes beyond `size`, as +0.
  const std::size_t n = pushes.size();
  const std::size_t rows = std::min<std::size_t>(size, n * kSublanes);
  const __m256i magnitude_mask = _mm256_set1_epi32(0x7FFF'FFFF);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i max_m = _mm256_setzero_si256();
  __m256i min_m = _mm256_set1_epi32(-1);
  auto* values = reinterpret_cast<std::uint32_t*>(tile.values.data());
  auto* panels = reinterpret_cast<std::uint32_t*>(tile.panels.data());
  for (std::size_t k = 0; k < kLanes; ++k) {
    const std::uint32_t* src = k < rows ? &pushes[n - 1 - k / kSublanes].rows.words[(k % kSublanes) * kLanes] : nullptr;
    for (std::uint32_t v = 0; v < kLanes / kVector; ++v) {
      __m256i bits = _mm256_setzero_si256();
      if (src != nullptr && v * kVector < size) {
        const __m256i in_range = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(size - v * kVector)), lane);
        bits = _mm256_and_si256(round_to_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + v * kVector))),
                                in_range);
        const __m256i m = _mm256_and_si256(bits, magnitude_mask);
        max_m = _mm256_max_epu32(max_m, m);
        min_m = _mm256_min_epu32(min_m, _mm256_sub_epi32(m, one));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(values + k * kLanes + v * kVector), bits);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(panels + vector_offset(v) + k * kPanelRow), bits);
    }
  }
  tile.range = Scan{0, reduce<Reduce::kMax>(max_m), reduce<Reduce::kMin>(min_m)}.range();
}

namespace {

// The AVX2 kernel, or with `wide` the same with the AVX-512 blocks of
// matmul_kernel_avx512.cpp for the multiply-accumulate loop; with
// `avoid_denormals` the paths without f32 denormal arithmetic for the tiles
// they apply to: the scaled one (scaled_fit), and with `wide` the f64 one.
TPUEMU_AVX2 void multiply_vector(const TileJob& job, vpu::Vreg& out, bool wide, bool avoid_denormals) {
  if (job.k_mask != nullptr || job.weights->range.non_finite) {
    multiply_portable(job, out);
    return;
  }
  // 1. The LHS as bf16 values: in place when it holds bf16 values already
  //    (as unpacked bf16 data does), else rounded into `rounded`; its range
  //    from one scan (of the rounded values), or from the shared LHS's scan.
  const std::uint32_t* lhs = job.lhs->words.data();
  alignas(32) std::uint32_t rounded[kSublanes * kLanes];
  const auto scan_lhs = [&](LhsScan& out) {
    Scan found = scan(lhs, job.used_k);
    out.used_k = job.used_k;
    out.needs_rounding = found.low_bits != 0;
    if (out.needs_rounding) {
      round_rows(lhs, job.used_k, rounded);
      found = scan(rounded, job.used_k);
    }
    out.range = found.range();
  };
  LhsScan own;
  const LhsScan* summary = &own;
  bool rounded_here = false;
  if (job.lhs_scan != nullptr) {
    LhsScan& shared = *job.lhs_scan;
    LhsScan::State state = shared.state.load(std::memory_order_acquire);
    if (state == LhsScan::kEmpty &&
        shared.state.compare_exchange_strong(state, LhsScan::kFilling, std::memory_order_acq_rel)) {
      scan_lhs(shared);
      rounded_here = shared.needs_rounding;
      shared.state.store(LhsScan::kReady, std::memory_order_release);
      state = LhsScan::kReady;
    }
    if (state == LhsScan::kReady) summary = &shared;  // else another multiply is filling it: scan below
  }
  if (summary == &own || summary->used_k != job.used_k) {
    scan_lhs(own);
    summary = &own;
    rounded_here = own.needs_rounding;
  }
  if (summary->needs_rounding) {
    if (!rounded_here) round_rows(lhs, job.used_k, rounded);
    lhs = rounded;
  }
  const ValueRange range = summary->range;
  if (range.non_finite) {
    multiply_portable(job, out);
    return;
  }
  const auto* a = reinterpret_cast<const float*>(lhs);
  auto* o = reinterpret_cast<float*>(out.words.data());
  const std::uint32_t vectors = (job.size + kVector - 1) / kVector;
  const bool fused = products_exact(range, job.weights->range);
  bool scaled = false;
  // The LHS's denormals are counted only where they could keep the tile in f32.
  if (avoid_denormals && may_meet_denormals(range, job.weights->range) &&
      !(range.denormal() &&
        rare_lhs_denormals(range, job.weights->range, denormal_count(lhs, job.used_k), job.used_k * kSublanes))) {
    switch (scaled_fit(range, job.weights->range)) {
      case ScaledFit::kYes:
        scaled = true;
        break;
      case ScaledFit::kCheckPowersOfTwo:
        scaled = scaled_pairs_fit(PowerOfTwoFields::from_buckets(power_of_two_buckets(lhs, job.used_k)),
                                  job.weights->power_of_two_fields());
        break;
      case ScaledFit::kNo:
        break;
    }
  }
  if (scaled) {
    if (wide) {
      blocks_avx512_tiny(a, job.weights->panels.data(), job.used_k, vectors, o);
    } else {
      blocks_avx2_tiny(a, job.weights->panels.data(), job.used_k, vectors, o);
    }
  } else if (wide && avoid_denormals && exact_f64_applies(range, job.weights->range)) {
    blocks_avx512_exact(a, job.weights->panels.data(), job.used_k, vectors, o);
  } else if (wide) {
    blocks_avx512(a, job.weights->panels.data(), job.used_k, vectors, fused, o);
  } else if (fused) {
    all_blocks<true>(a, job.weights->panels.data(), job.used_k, vectors, o);
  } else {
    all_blocks<false>(a, job.weights->panels.data(), job.used_k, vectors, o);
  }
  for (std::size_t row = 0; row < kSublanes; ++row) {
    std::memset(o + row * kLanes + job.size, 0, (kLanes - job.size) * sizeof(float));
  }
}

}  // namespace

void multiply_avx2(const TileJob& job, vpu::Vreg& out) {
  multiply_vector(job, out, false, denormal_assists());
}

void multiply_avx2_path(const TileJob& job, vpu::Vreg& out, bool avoid_denormals) {
  multiply_vector(job, out, false, avoid_denormals);
}

void multiply_avx512(const TileJob& job, vpu::Vreg& out) {
  multiply_vector(job, out, true, denormal_assists());
}

void multiply_avx512_path(const TileJob& job, vpu::Vreg& out, bool avoid_denormals) {
  multiply_vector(job, out, true, avoid_denormals);
}

}  // namespace tpuemu::mxu::detail

#else

namespace tpuemu::mxu::detail {
bool avx2_compiled() {
  return false;
}
void multiply_avx2(const TileJob& job, vpu::Vreg& out) {
  multiply_portable(job, out);
}
void multiply_avx512(const TileJob& job, vpu::Vreg& out) {
  multiply_portable(job, out);
}
void multiply_avx2_path(const TileJob& job, vpu::Vreg& out, bool /*avoid_denormals*/) {
  multiply_portable(job, out);
}
void multiply_avx512_path(const TileJob& job, vpu::Vreg& out, bool /*avoid_denormals*/) {
  multiply_portable(job, out);
}
void build_weights_avx2(std::span<const StagedPush> pushes, std::uint32_t size, WeightTile& tile) {
  build_weights_portable(pushes, size, tile);
}
void blocks_avx2_tiny(const float*, const float*, std::uint32_t, std::uint32_t, float*) {}
}  // namespace tpuemu::mxu::detail

#endif
