// The MXU's arithmetic on one tile as a pure function: 8 LHS rows times the
// latched weights, with a portable kernel, an AVX2+FMA kernel and an AVX-512
// one chosen at run time. Both give the same bits as the contract in mxu/mxu.hpp.
//
// Contract (every kernel, bit for bit):
//  * a = bf16_round(lhs[row][k]); w = the weight tile (already bf16 values);
//  * out[row][col] = ((+0 + a[row][0]*w[0][col]) + a[row][1]*w[1][col]) + ...
//    over k = 0..used_k-1 ascending, each product rounded to f32 and then
//    added (round to nearest even, IEEE denormals, no FTZ/DAZ);
//  * with a K mask, a masked (row, k) adds nothing, not even +0;
//  * columns 0..size-1 are computed, lanes >= size are +0;
//  * NaN payloads as the MXU has always computed them on x86: product =
//    w * a and sum = product + acc, where two NaNs meet the first operand's
//    wins (made quiet); Inf * 0 and Inf - Inf give the default NaN
//    0xFFC00000 on every host. The portable kernel recomputes each element
//    that comes out NaN by this rule written out operand by operand, so no
//    compiler or optimisation level changes it (tests/test_mxu.cpp has its
//    own copy of the rule as the reference).
// A fused multiply-add equals the product-then-add whenever the product is
// exact in f32; the AVX2 kernel uses it only on tiles where ValueRange proves
// every product exact, computes other finite tiles with separate multiplies
// and adds (where at most one NaN, the default one, can arise), and leaves
// tiles holding Inf or NaN, and masked multiplies, to the portable kernel.
// Where f32 arithmetic on denormals takes microcode assists (Intel,
// denormal_assists), tiles that may meet denormals run with the LHS scaled by
// 2^23, where nothing is denormal (blocks_avx512_tiny, and its ymm copy in
// the AVX2 kernel), unless a product may be 2^-101 exactly or overflow
// (scaled_fit); the AVX-512 kernel runs those in f64 (exact_f64_applies).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <span>
#include <string_view>

#include "vpu/vreg.hpp"

namespace tpuemu::mxu {

// What a kernel must know about a set of bf16 values (f32 bit patterns with
// the low 16 bits clear) to know whether their products are exact.
struct ValueRange {
  bool non_finite = false;          // an Inf or a NaN
  std::uint32_t max_magnitude = 0;  // the bits of the largest |value| (0: none nonzero)
  std::uint32_t min_magnitude = 0;  // the bits of the smallest nonzero |value| (0: none nonzero)

  void add(std::uint32_t bits) {
    if (((bits >> 23) & 0xFFU) == 0xFFU) non_finite = true;
    const std::uint32_t magnitude = bits & 0x7FFF'FFFFU;
    if (magnitude == 0) return;
    max_magnitude = std::max(max_magnitude, magnitude);
    min_magnitude = min_magnitude == 0 ? magnitude : std::min(min_magnitude, magnitude);
  }
  // The exponents of nonzero values order like their magnitudes.
  // Smallest max(exponent field, 1) of a nonzero value (255: none).
  [[nodiscard]] constexpr std::uint32_t min_exponent() const {
    return min_magnitude == 0 ? 255 : std::max<std::uint32_t>(min_magnitude >> 23, 1);
  }
  // Largest max(exponent field, 1) of a nonzero value (0: none).
  [[nodiscard]] constexpr std::uint32_t max_exponent() const {
    return max_magnitude == 0 ? 0 : std::max<std::uint32_t>(max_magnitude >> 23, 1);
  }
  // A nonzero value with exponent field 0.
  [[nodiscard]] constexpr bool denormal() const { return min_magnitude != 0 && min_magnitude < 0x0080'0000U; }
};

// The exponent fields (0..255) of the powers of two among a set of values: a
// nonzero value whose fraction is zero, or any bf16 denormal (field 0: some
// are powers of two). The scaled path's one exception is a product of two
// powers of two (scaled_pairs_fit).
struct PowerOfTwoFields {
  std::array<std::uint64_t, 4> bits{};

  void add(std::uint32_t value_bits) {
    const std::uint32_t magnitude = value_bits & 0x7FFF'FFFFU;
    const std::uint32_t e = magnitude >> 23;
    if (magnitude == 0 || (e != 0 && (magnitude & 0x007F'FFFFU) != 0)) return;
    bits[e >> 6] |= std::uint64_t{1} << (e & 63U);
  }
  [[nodiscard]] bool has(std::uint32_t field) const {
    return field < 256 && ((bits[field >> 6] >> (field & 63U)) & 1U) != 0;
  }
  // Some field in lo..hi (inclusive; fields outside 0..255 are absent).
  [[nodiscard]] bool any_in(int lo, int hi) const {
    lo = std::max(lo, 0);
    hi = std::min(hi, 255);
    for (int word = lo >> 6; word <= (hi >> 6) && lo <= hi; ++word) {
      const int first = std::max(lo, word * 64) - word * 64;  // bits first..last of this word
      const int last = std::min(hi, word * 64 + 63) - word * 64;
      const std::uint64_t mask = (~std::uint64_t{0} >> (63 - last)) & (~std::uint64_t{0} << first);
      if ((bits[static_cast<std::size_t>(word)] & mask) != 0) return true;
    }
    return false;
  }
  // Every field of each 8-field bucket b (fields 8b .. 8b+7) whose bit is set in `buckets`.
  static PowerOfTwoFields from_buckets(std::uint32_t buckets) {
    PowerOfTwoFields f;
    for (std::uint32_t b = 0; b < 32; ++b) {
      if (((buckets >> b) & 1U) != 0) f.bits[b / 8] |= std::uint64_t{0xFF} << (8 * (b % 8));
    }
    return f;
  }
};

// |x| of finite f32 bits as a double, with no f32 arithmetic (so no denormal
// operand reaches the FPU's f32 paths).
constexpr double magnitude_of_bits(std::uint32_t bits) {
  const std::uint64_t e = (bits >> 23) & 0xFFU;
  const std::uint64_t fraction = bits & 0x007F'FFFFU;
  if (e == 0) return static_cast<double>(fraction) * 0x1p-149;
  return std::bit_cast<double>((e - 127 + 1023) << 52 | fraction << 29);
}
// True when every product of a finite value of `a` and one of `w` is exact in
// f32: the 16-bit significand product neither overflows (exponent fields sum
// at most 127 + 126 + 127) nor loses bits below 2^-149 (the lowest bit of a
// bf16 value with field e is 2^(e-134), so fields summing to at least 119
// keep every bit). A side with no nonzero value gives only zero products.
constexpr bool products_exact(const ValueRange& a, const ValueRange& w) {
  if (a.non_finite || w.non_finite) return false;
  if (a.max_exponent() == 0 || w.max_exponent() == 0) return true;
  return a.min_exponent() + w.min_exponent() >= 119 && a.max_exponent() + w.max_exponent() <= 380;
}

// Columns of a weight panel (WeightTile::panels).
inline constexpr std::uint32_t kWeightPanelColumns = 16;

// Latched weights: bf16-rounded f32 values, [k * kLanes + column], zeros
// where nothing was pushed. finish() derives the rest from `values`.
struct WeightTile {
  alignas(64) std::array<float, vpu::kLanes * vpu::kLanes> values{};
  // The same values by 16-column panels, [(column / 16) * 16 * kLanes + k * 16 + column % 16]:
  // what the vector kernels stream (a weight row of a panel is one zmm, or two ymm halves).
  alignas(64) std::array<float, vpu::kLanes * vpu::kLanes> panels{};
  ValueRange range;

  void finish();
  // The fields of the powers of two among `values`, computed by the first
  // caller that needs them (a rare tile: scaled_fit kCheckPowersOfTwo) and
  // kept until the tile is built again; any thread, once the tile is built.
  [[nodiscard]] PowerOfTwoFields power_of_two_fields() const;
  // Forgets them (the tile's values changed): build_weights and finish() call it.
  void forget_power_of_two_fields() { fields_state_.store(kFieldsEmpty, std::memory_order_relaxed); }

 private:
  enum : std::uint8_t { kFieldsEmpty, kFieldsFilling, kFieldsReady };
  mutable std::atomic<std::uint8_t> fields_state_{kFieldsEmpty};
  mutable PowerOfTwoFields fields_;
};

// kAvx512: the AVX2 kernel with its multiply-accumulate loop on 16-float
// registers (AVX-512F); the same bits.
enum class KernelKind : std::uint8_t { kPortable, kAvx2Fma, kAvx512 };

// One weight push as the unit stages it.
struct StagedPush {
  vpu::Vreg rows;
  bool transposed = false;
};

// The latched tile of an array of width `size` from its staged pushes (the
// last one holds K rows 0..7, or columns 0..7 when transposed): values
// bf16-rounded, +0 where no push reaches or beyond `size`, then finish().
// Every kernel builds the same tile.
void build_weights(KernelKind kind, std::span<const StagedPush> pushes, std::uint32_t size, WeightTile& tile);

// What the AVX2 kernel learns from its pass over an LHS, kept with an LHS
// that several multiplies share (mxu::SharedLhs: the units fed one register in
// one bundle), so the LHS is scanned once: the first multiply to run fills it,
// the others read it once it is filled (`state` kReady, acquire); one that
// finds it being filled scans for itself instead of waiting (no lock, no
// futex wake per bundle). A pure function of the LHS and `used_k`, so which
// multiply fills it changes nothing.
struct LhsScan {
  enum State : std::uint8_t { kEmpty, kFilling, kReady };
  std::atomic<State> state{kEmpty};
  std::uint32_t used_k = 0;     // the K lanes it describes
  bool needs_rounding = false;  // some value is no bf16 value: the kernel rounds a copy
  ValueRange range;             // of the values as multiplied (after rounding)
};

struct TileJob {
  const vpu::Vreg* lhs = nullptr;      // raw f32 words, rounded to bf16 by the kernel
  const vpu::Vmask* k_mask = nullptr;  // null: every (row, k) enabled
  const WeightTile* weights = nullptr;
  std::uint32_t used_k = 0;     // K lanes 0..used_k-1
  std::uint32_t size = 0;       // array width: columns computed, 1..kLanes
  LhsScan* lhs_scan = nullptr;  // the shared LHS's scan, or null (the kernel scans itself)
};

std::string_view to_string(KernelKind kind);
// Whether this build and this CPU can run `kind`.
bool kernel_available(KernelKind kind);
// The kernel MXUs use: TPUEMU_MXU_KERNEL=portable|avx2|avx512 if set (and
// available), else the fastest available. Read once.
KernelKind default_kernel();

void multiply_tile(KernelKind kind, const TileJob& job, vpu::Vreg& out);

namespace detail {
void multiply_portable(const TileJob& job, vpu::Vreg& out);
// Only where kernel_available(kAvx2Fma). Where denormal_assists(), tiles that
// may meet denormals take the scaled path where it fits (scaled_fit).
void multiply_avx2(const TileJob& job, vpu::Vreg& out);
// multiply_avx2 with the scaled path on or off (tests: both give the same bits).
void multiply_avx2_path(const TileJob& job, vpu::Vreg& out, bool avoid_denormals);
// The scaled path of the AVX2 kernel (blocks_avx512_tiny on ymm registers),
// `vectors` 8-column vectors. Only where kernel_available(kAvx2Fma).
void blocks_avx2_tiny(const float* a, const float* panels, std::uint32_t k_count, std::uint32_t vectors, float* out);
void build_weights_portable(std::span<const StagedPush> pushes, std::uint32_t size, WeightTile& tile);
// Only where kernel_available(kAvx2Fma); pushes that are not transposed.
void build_weights_avx2(std::span<const StagedPush> pushes, std::uint32_t size, WeightTile& tile);
bool avx2_compiled();
// Only where kernel_available(kAvx512). Where denormal_assists(), tiles that
// may meet denormals (may_meet_denormals) take the scaled path where it fits
// (scaled_fit), else the f64 path where exact_f64_applies.
void multiply_avx512(const TileJob& job, vpu::Vreg& out);
// multiply_avx512 with the scaled and f64 paths on or off (tests: both give the same bits).
void multiply_avx512_path(const TileJob& job, vpu::Vreg& out, bool avoid_denormals);
// Whether f32 arithmetic on denormals is slow on this CPU: Intel's cores take
// a microcode assist (~100 cycles) per such operation (so the scaled path,
// 37 G MAC/s a core with AVX-512 and 28 with AVX2, and the f64 path, ~6,
// beat the f32 one, ~0.5 and 0.27); AMD's Zen cores do not (the f32 one
// keeps about half its normal rate there). TPUEMU_MXU_DENORMALS=f64 (the
// scaled and f64 paths) or f32 chooses; read once.
bool denormal_assists();
// The AVX-512 multiply-accumulate loop of multiply_avx512: rows 0..7 of `a`
// (bf16 values, row stride kLanes) times K rows 0..k_count-1 of the first
// `panel_count` 8-column halves of the 16-column weight panels
// (WeightTile::panels), into `out` (row stride kLanes);
// `fused` only where every product is exact.
void blocks_avx512(const float* a, const float* panels, std::uint32_t k_count, std::uint32_t panel_count, bool fused,
                   float* out);
// The exact f64 path of the AVX-512 kernel, the same bits as the separate
// multiply-add loop without f32 denormal arithmetic (Intel's microcode
// assists): only where every value is finite and every product of the
// tile's ranges stays below 2^120 (exact_f64_applies).
void blocks_avx512_exact(const float* a, const float* panels, std::uint32_t k_count, std::uint32_t panel_count,
                         float* out);
// The scaled paths multiply the LHS by 2^kTinyScale and round each product
// with kScaledRounding, M = 1.5 x 2^(kTinyScale - 126) (blocks_avx512_tiny).
inline constexpr int kTinyScale = 23;
inline constexpr float kScaledRounding = 0x1.8p-103F;
static_assert(kScaledRounding == 1.5F * 0x1p-126F * static_cast<float>(1U << kTinyScale));
// The scaled path of the AVX-512 kernel: the same bits as the separate
// multiply-add loop, in f32 without denormal arithmetic, only where
// scaled_fit (and scaled_pairs_fit) allows. Whole 16-column panels: writes out's columns up to the
// panel that holds vector panel_count - 1.
void blocks_avx512_tiny(const float* a, const float* panels, std::uint32_t k_count, std::uint32_t panel_count,
                        float* out);
bool avx512_compiled();
}  // namespace detail

// Whether a tile of these ranges leaves the f32 paths where
// denormal_assists(): a denormal operand, or products that may round below
// f32's normal range (not products_exact). Exact products with no denormal
// operand stay in f32 even where a few sums may dip below 2^-126: the
// assists are rare there, and f32 ran 12x the f64 path and 2x the scaled
// one (both sides' exponent fields 60..126: 77.5 G MAC/s against 6.2).
constexpr bool may_meet_denormals(const ValueRange& a, const ValueRange& w) {
  return a.denormal() || w.denormal() || !products_exact(a, w);
}

// Fewer than 1 LHS value in kRareDenormals denormal, against exact products
// and normal weights: the tile stays in f32 after all, where each broadcast of
// a denormal costs one assist, cheaper there than the scaled path's three
// instructions a multiply-add (an eighth of the LHS denormal: f32 5.6 G MAC/s,
// scaled 35; one in 256: f32 46, scaled 35; the break-even at one in 128).
// `denormals` of the LHS's `values` (lanes below used_k) are denormal.
inline constexpr std::uint32_t kRareDenormals = 128;
constexpr bool rare_lhs_denormals(const ValueRange& a, const ValueRange& w, std::uint32_t denormals,
                                  std::uint32_t values) {
  return a.denormal() && !w.denormal() && products_exact(a, w) && std::uint64_t{denormals} * kRareDenormals < values;
}

// Whether the scaled path computes a tile of these ranges exactly
// (blocks_avx512_tiny says why): everything finite, no denormal weight (the
// FMA's operand), the LHS below 2^105 (x 2^23 stays finite), every product
// below 2^97 (sums of 128 of them x 2^23 too), and no product of exactly
// +-2^-101, the one the rounding constant gets wrong (+2^-101; the sign is
// not looked at). kCheckPowersOfTwo: the ranges allow one; scaled_pairs_fit
// decides.
enum class ScaledFit : std::uint8_t { kNo, kYes, kCheckPowersOfTwo };
constexpr ScaledFit scaled_fit(const ValueRange& a, const ValueRange& w) {
  if (a.non_finite || w.non_finite || w.denormal() || a.max_magnitude == 0 || w.max_magnitude == 0) {
    return ScaledFit::kNo;
  }
  const double largest = magnitude_of_bits(a.max_magnitude) * magnitude_of_bits(w.max_magnitude);
  if (magnitude_of_bits(a.max_magnitude) >= 0x1p105 || largest >= 0x1p97) return ScaledFit::kNo;
  const double smallest = magnitude_of_bits(a.min_magnitude) * magnitude_of_bits(w.min_magnitude);
  if (largest < 0x1p-101 || smallest > 0x1p-101) return ScaledFit::kYes;
  return ScaledFit::kCheckPowersOfTwo;
}
// No power of two of the LHS times one of the weights is 2^-101: fields ea,
// ew >= 1 give 2^(ea + ew - 254), so none with ea + ew = 153; a bf16
// denormal power of two (2^-133 .. 2^-127) needs ew in 153..159.
bool scaled_pairs_fit(const PowerOfTwoFields& a, const PowerOfTwoFields& w);

// Whether the f64 path takes a tile of these ranges (one the scaled path does
// not): products may fall below f32's normal range (not products_exact), and
// neither they nor sums of 128 of them can overflow (exponent fields summing
// to at most 372: |product| < 2^120).
constexpr bool exact_f64_applies(const ValueRange& a, const ValueRange& w) {
  if (a.non_finite || w.non_finite || products_exact(a, w)) return false;
  return a.max_exponent() + w.max_exponent() <= 372;
}

}  // namespace tpuemu::mxu
