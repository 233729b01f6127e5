// The Mxu front end (mxu/mxu.hpp), plain C++: arrays narrower than a vreg,
// the MxuTiming model at its edges (a cycle early / on time), and what an
// ArrayBackend gets and refuses. The tile kernels (mxu/matmul_kernel.hpp):
// portable and dispatched against a scalar reference, bit for bit; host
// threads (common/host_pool.hpp) change no bit.
#include <array>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/host_pool.hpp"
#include "common/numerics.hpp"
#include "mxu/matmul_kernel.hpp"
#include "mxu/mxu.hpp"

using namespace tpuemu;
using mxu::Mxu;
using mxu::MxuTiming;
using vpu::kLanes;
using vpu::kSublanes;

namespace {

// edu's 8x8 timing: one weight row per cycle, latch wave 2 x 8 - 1, latency 2 x 8 + 8.
constexpr MxuTiming kEdu{8, 8, 15, 24};

vpu::Vreg filled(float value) {
  vpu::Vreg v{};
  for (std::size_t i = 0; i < kSublanes * kLanes; ++i) v.set_f32(i, value);
  return v;
}

struct FakeBackend final : mxu::ArrayBackend {
  std::vector<std::uint64_t> push_starts, feeds;
  std::vector<bool> latches;
  std::optional<std::uint64_t> ready;
  void push_weights(const vpu::Vreg&, std::uint64_t, std::uint64_t start) override { push_starts.push_back(start); }
  void multiply(const vpu::Vreg&, bool latch, std::uint64_t, std::uint64_t feed) override {
    feeds.push_back(feed);
    latches.push_back(latch);
  }
  [[nodiscard]] std::optional<std::uint64_t> oldest_ready_cycle() const override { return ready; }
  vpu::Vreg take_oldest() override { return filled(7.0F); }
  [[nodiscard]] std::string name() const override { return "the fake array"; }
  [[nodiscard]] std::optional<std::string> failure() const override { return std::nullopt; }
};

}  // namespace

TEST_CASE("mxu 8x8: reads K from lanes 0..7 only and writes columns 0..7 only", "[mxu]") {
  Mxu m(8, 8, kEdu);
  // Weights: K row k, column c = k + 1 in lanes 0..7; lanes 8.. hold 1000 (not wired).
  vpu::Vreg w = filled(1000.0F);
  for (std::size_t k = 0; k < 8; ++k) {
    for (std::size_t c = 0; c < 8; ++c) w.set_f32(k * kLanes + c, static_cast<float>(k + 1));
  }
  REQUIRE_FALSE(m.push_weights(w, false, 0));
  vpu::Vreg lhs = filled(1000.0F);  // lanes 8.. of the LHS are not wired either
  for (std::size_t r = 0; r < kSublanes; ++r) {
    for (std::size_t k = 0; k < 8; ++k) lhs.set_f32(r * kLanes + k, 1.0F);
  }
  REQUIRE_FALSE(m.matmul(lhs, nullptr, true, 0));
  const vpu::Vreg out = m.pop();
  for (std::size_t r = 0; r < kSublanes; ++r) {
    for (std::size_t c = 0; c < kLanes; ++c) CHECK(out.f32(r * kLanes + c) == (c < 8 ? 36.0F : 0.0F));
  }
}

TEST_CASE("mxu 16x16: a multiply needs both weight pushes, one covers K rows 0..7 only", "[mxu]") {
  Mxu m(16, 8, kEdu);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 0));
  const auto fault = m.matmul(filled(1.0F), nullptr, true, 20);
  REQUIRE(fault);
  CHECK(fault->message.find("cover K rows 0..7 but the multiply uses K lanes up to 15") != std::string::npos);
  CHECK_THROWS_AS(Mxu(129, 8, kEdu), std::invalid_argument);
  CHECK_THROWS_AS(Mxu(0, 8, kEdu), std::invalid_argument);
}

TEST_CASE("mxu timing: a push holds the weight path push_cycles, a latch waits for it", "[mxu][timing]") {
  Mxu m(8, 8, kEdu);
  FakeBackend b;
  m.attach_backend(&b);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 100));  // rows 100..107
  // Issued one cycle after the push, the latching row enters after its last weight row.
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, true, 101));
  CHECK(b.feeds.back() == 108);
  CHECK(m.last_feed_cycle == 108);
  CHECK(m.next_matmul_cycle == 116);
  // The result is ready latency after its feed (edge case checked below).
  m.attach_backend(nullptr);
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, false, 116));
  CHECK(*m.head_ready_cycle(116) == 108 + 24);
}

TEST_CASE("mxu timing: pushes after a latch wait latch_wave_cycles from its first row", "[mxu][timing]") {
  Mxu m(8, 8, kEdu);
  FakeBackend b;
  m.attach_backend(&b);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 0));
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, true, 8));  // latch row at 8: the wave blocks pushes until 23
  REQUIRE_FALSE(m.push_weights(filled(2.0F), false, 9));
  CHECK(b.push_starts.back() == 8 + 15);
  // A plain multiply neither waits for weights nor starts a wave.
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, false, 16));
  CHECK(b.feeds.back() == 16);
  REQUIRE_FALSE(m.push_weights(filled(3.0F), false, 40));
  CHECK(b.push_starts.back() == 40);
}

TEST_CASE("mxu timing: v5e-like timing (push 1, no wave) keeps back-to-back issue", "[mxu][timing]") {
  Mxu m(128, 64, MxuTiming{8, 1, 0, 264});
  for (int p = 0; p < 16; ++p) REQUIRE_FALSE(m.push_weights(filled(1.0F), false, static_cast<std::uint64_t>(p)));
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, true, 16));
  CHECK(m.last_feed_cycle == 16);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 17));  // double buffering: at once
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, false, 24));
  CHECK(m.last_feed_cycle == 24);
  CHECK(*m.head_ready_cycle(24) == 16 + 264);
}

TEST_CASE("mxu backend: results and their cycle come from the array, one cycle early polls", "[mxu][timing]") {
  Mxu m(8, 8, kEdu);
  FakeBackend b;
  m.attach_backend(&b);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 0));
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, true, 8));
  CHECK(b.latches == std::vector<bool>{true});
  // Not produced yet: ask again next cycle.
  CHECK(*m.head_ready_cycle(30) == 31);
  b.ready = 32;
  CHECK(*m.head_ready_cycle(31) == 32);
  CHECK(m.pop().f32(0) == 7.0F);
  CHECK_FALSE(m.head_ready_cycle(33).has_value());
}

TEST_CASE("mxu backend: masked multiplies and transposed pushes are refused by name", "[mxu]") {
  Mxu m(8, 8, kEdu);
  FakeBackend b;
  m.attach_backend(&b);
  const auto push = m.push_weights(filled(1.0F), true, 0);
  REQUIRE(push);
  CHECK(push->message.find("the fake array loads weights by rows") != std::string::npos);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 0));
  vpu::Vmask mask{};
  const auto multiply = m.matmul(filled(1.0F), &mask, true, 8);
  REQUIRE(multiply);
  CHECK(multiply->message.find("the fake array has no K mask") != std::string::npos);
}

// ---------------------------------------------------------------------------
// Tile kernels against the contract, written out as plainly as possible.

namespace {

using mxu::KernelKind;
using mxu::TileJob;
using mxu::WeightTile;

// IEEE single precision as x86 computes it where NaNs meet: the first
// operand's NaN wins (made quiet), an invalid operation gives the default NaN
// 0xFFC00000. Written out so the reference does not depend on how the
// compiler orders operands.
float quiet(float x) {
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) | 0x0040'0000U);
}
constexpr std::uint32_t kDefaultNan = 0xFFC0'0000U;
float x86_multiply(float first, float second) {
  if (std::isnan(first)) return quiet(first);
  if (std::isnan(second)) return quiet(second);
  if ((std::isinf(first) && second == 0.0F) || (first == 0.0F && std::isinf(second)))
    return std::bit_cast<float>(kDefaultNan);
  const volatile float product = first * second;
  return product;
}
float x86_add(float first, float second) {
  if (std::isnan(first)) return quiet(first);
  if (std::isnan(second)) return quiet(second);
  if (std::isinf(first) && std::isinf(second) && std::signbit(first) != std::signbit(second))
    return std::bit_cast<float>(kDefaultNan);
  const volatile float sum = first + second;
  return sum;
}

// The contract (mxu/matmul_kernel.hpp): out[row][col] = ((+0 + a*w) + a*w) +
// ... over enabled k ascending, each product rounded before its add, as
// product = w * a and sum = product + acc; lanes >= size +0.
vpu::Vreg reference_tile(const TileJob& job) {
  vpu::Vreg out{};
  for (std::size_t row = 0; row < kSublanes; ++row) {
    for (std::size_t col = 0; col < job.size; ++col) {
      float acc = 0.0F;
      for (std::size_t k = 0; k < job.used_k; ++k) {
        if (job.k_mask != nullptr && job.k_mask->bits[row * kLanes + k] == 0) continue;
        const float a = bf16_round(job.lhs->f32(row * kLanes + k));
        acc = x86_add(x86_multiply(job.weights->values[k * kLanes + col], a), acc);
      }
      out.set_f32(row * kLanes + col, acc);
    }
  }
  return out;
}

// Value classes for tiles: each draws bf16 bit patterns (as f32 bits).
enum class Values {
  kUnit,
  kAllExponents,
  kDenormal,
  kDenormalLow,
  kTiny,
  kSmall,
  kSmallLow,
  kBandTop,
  kHuge,
  kEdge,
  kF32,
  kUnitSomeDenormal,
  kBandHigh
};

constexpr std::array<std::uint32_t, 16> kEdgeBits = {
    0x0000'0000, 0x8000'0000, 0x0001'0000, 0x807F'0000, 0x0080'0000, 0x3F80'0000, 0xBF80'0000, 0x7F7F'0000,
    0x7F80'0000, 0xFF80'0000, 0x7FC0'0000, 0xFFC1'0000, 0x7F81'0000, 0x4000'0000, 0x0040'0000, 0x3F00'0000};

std::uint32_t draw(Values kind, std::mt19937& rng) {
  std::uniform_int_distribution<std::uint32_t> bits16(0, 0xFFFF);
  std::uniform_real_distribution<float> unit(-1.0F, 1.0F);
  const std::uint32_t mantissa_sign = bits16(rng) & 0x807FU;  // sign and 7 fraction bits
  switch (kind) {
    case Values::kUnit:
      return std::bit_cast<std::uint32_t>(bf16_round(unit(rng)));
    case Values::kAllExponents:
      return (mantissa_sign | (std::uniform_int_distribution<std::uint32_t>(0, 254)(rng) << 7)) << 16;
    case Values::kDenormal:
      return mantissa_sign << 16;  // exponent field 0: +-0 or a bf16 denormal
    case Values::kDenormalLow:     // bf16 denormals below 2^-127: times weights below 1, products below 2^-127
      return (mantissa_sign & 0x803FU) << 16;
    case Values::kTiny:
      return (mantissa_sign | (std::uniform_int_distribution<std::uint32_t>(0, 40)(rng) << 7)) << 16;
    case Values::kSmall:  // products about 2^-150 .. 2^-104: their sums cross f32's least normal 2^-126
      return (mantissa_sign | (std::uniform_int_distribution<std::uint32_t>(52, 75)(rng) << 7)) << 16;
    case Values::kSmallLow:  // 2^-75 .. 2^-64: products of two below 2^-127, down to 2^-150
      return (mantissa_sign | (std::uniform_int_distribution<std::uint32_t>(52, 62)(rng) << 7)) << 16;
    case Values::kBandTop:  // 2^-54 .. 2^-52: products of two up to just below 2^-104
      return (mantissa_sign | (std::uniform_int_distribution<std::uint32_t>(73, 74)(rng) << 7)) << 16;
    case Values::kUnitSomeDenormal:  // an eighth bf16 denormals, the rest unit: products of both sizes
      return bits16(rng) % 8 == 0 ? mantissa_sign << 16 : std::bit_cast<std::uint32_t>(bf16_round(unit(rng)));
    case Values::kBandHigh:  // 2^-49 .. 2^-47: products of two from 2^-98, above the scaled path's window
      return (mantissa_sign | (std::uniform_int_distribution<std::uint32_t>(78, 79)(rng) << 7)) << 16;
    case Values::kHuge:
      return (mantissa_sign | (std::uniform_int_distribution<std::uint32_t>(200, 254)(rng) << 7)) << 16;
    case Values::kEdge:
      return kEdgeBits[bits16(rng) % kEdgeBits.size()];
    case Values::kF32:  // not bf16 values: the kernel rounds them
      return std::bit_cast<std::uint32_t>(unit(rng) * std::ldexp(1.0F, static_cast<int>(bits16(rng) % 80) - 40));
  }
  return 0;
}

std::unique_ptr<WeightTile> random_weights(Values kind, std::uint32_t size, std::mt19937& rng) {
  auto w = std::make_unique<WeightTile>();
  for (std::size_t k = 0; k < size; ++k) {
    for (std::size_t c = 0; c < size; ++c) {
      w->values[k * kLanes + c] =
          bf16_round(std::bit_cast<float>(draw(kind == Values::kF32 ? Values::kUnit : kind, rng)));
    }
  }
  w->finish();
  return w;
}

vpu::Vreg random_lhs(Values kind, std::mt19937& rng) {
  vpu::Vreg v{};
  for (auto& word : v.words) word = draw(kind, rng);
  return v;
}

std::vector<KernelKind> kernels() {
  std::vector<KernelKind> k{KernelKind::kPortable};
  if (mxu::kernel_available(KernelKind::kAvx2Fma)) k.push_back(KernelKind::kAvx2Fma);
  if (mxu::kernel_available(KernelKind::kAvx512)) k.push_back(KernelKind::kAvx512);
  return k;
}

// Every kernel, and the AVX2 and AVX-512 kernels both with and without their
// paths that avoid f32 denormal arithmetic (mxu::detail::denormal_assists
// picks per CPU), against the reference.
void check_tile(const TileJob& job, const std::string& what) {
  const vpu::Vreg want = reference_tile(job);
  const auto compare = [&](const vpu::Vreg& got, const std::string& kernel) {
    std::size_t first = kSublanes * kLanes;
    for (std::size_t i = kSublanes * kLanes; i-- > 0;) {
      if (got.words[i] != want.words[i]) first = i;
    }
    INFO(what << ", kernel " << kernel << ", size " << job.size << ", used_k " << job.used_k);
    if (first < kSublanes * kLanes) {
      INFO("first difference at row " << first / kLanes << " lane " << first % kLanes << ": 0x" << std::hex
                                      << got.words[first] << " where 0x" << want.words[first] << " was expected");
      CHECK(false);
    } else {
      CHECK(true);
    }
  };
  for (const KernelKind kind : kernels()) {
    vpu::Vreg got;
    got.words.fill(0xDEAD'BEEF);
    mxu::multiply_tile(kind, job, got);
    compare(got, std::string(mxu::to_string(kind)));
    for (const bool avoid_denormals : {false, true}) {
      got.words.fill(0xDEAD'BEEF);
      if (kind == KernelKind::kAvx512) {
        mxu::detail::multiply_avx512_path(job, got, avoid_denormals);
        compare(got, avoid_denormals ? "avx512, scaled and f64 paths" : "avx512, f32 path");
      } else if (kind == KernelKind::kAvx2Fma) {
        mxu::detail::multiply_avx2_path(job, got, avoid_denormals);
        compare(got, avoid_denormals ? "avx2, scaled path" : "avx2, f32 path");
      }
    }
  }
}

}  // namespace

TEST_CASE("mxu kernels: the AVX-512 kernel where the CPU has AVX-512F, else AVX2 where it has AVX2 and FMA",
          "[mxu][kernel]") {
#if defined(__x86_64__)
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f");
  CHECK(mxu::kernel_available(KernelKind::kAvx2Fma) == avx2);
  CHECK(mxu::kernel_available(KernelKind::kAvx512) == avx512);
  if (std::getenv("TPUEMU_MXU_KERNEL") == nullptr) {
    CHECK(mxu::default_kernel() ==
          (avx512 ? KernelKind::kAvx512 : (avx2 ? KernelKind::kAvx2Fma : KernelKind::kPortable)));
  }
  if (!avx512) WARN("this CPU has no AVX-512F: the AVX-512 kernel is not checked on it");
#endif
  CHECK(mxu::kernel_available(KernelKind::kPortable));
}

TEST_CASE("mxu kernels: products_exact holds exactly where every product is exact", "[mxu][kernel]") {
  // For every pair of exponent fields, the smallest and largest significands:
  // whenever products_exact says so, the f32 product equals the exact one.
  for (std::uint32_t ea = 0; ea < 255; ++ea) {
    for (std::uint32_t ew = 0; ew < 255; ++ew) {
      mxu::ValueRange a;
      mxu::ValueRange w;
      a.add(ea << 23 | 0x0001'0000);
      w.add(ew << 23 | 0x0001'0000);
      if (!mxu::products_exact(a, w)) continue;
      for (const std::uint32_t ma : {0x0001'0000U, 0x007F'0000U, 0x0055'0000U}) {
        for (const std::uint32_t mw : {0x0001'0000U, 0x007F'0000U, 0x002B'0000U}) {
          const float x = std::bit_cast<float>(ea << 23 | ma);
          const float y = std::bit_cast<float>(ew << 23 | mw);
          const volatile float product = x * y;
          INFO("exponent fields " << ea << " and " << ew);
          REQUIRE(static_cast<double>(product) == static_cast<double>(x) * static_cast<double>(y));
        }
      }
    }
  }
  // And it refuses the first pairs that round or overflow.
  mxu::ValueRange denormal;
  denormal.add(0x0001'0000);
  mxu::ValueRange small;
  small.add(117U << 23);
  CHECK_FALSE(mxu::products_exact(denormal, small));
  mxu::ValueRange big;
  big.add(254U << 23);
  mxu::ValueRange two;
  two.add(128U << 23);
  CHECK_FALSE(mxu::products_exact(big, two));
  mxu::ValueRange inf;
  inf.add(0x7F80'0000);
  CHECK_FALSE(mxu::products_exact(inf, two));
}

TEST_CASE("mxu kernels: portable and dispatched equal the scalar reference bit for bit", "[mxu][kernel]") {
  std::mt19937 rng(12);
  const std::vector<std::pair<Values, Values>> classes = {
      {Values::kUnit, Values::kUnit},
      {Values::kAllExponents, Values::kAllExponents},
      {Values::kDenormal, Values::kUnit},
      {Values::kUnit, Values::kDenormal},
      {Values::kDenormal, Values::kDenormal},
      {Values::kTiny, Values::kTiny},
      {Values::kHuge, Values::kHuge},
      {Values::kEdge, Values::kUnit},
      {Values::kUnit, Values::kEdge},
      {Values::kEdge, Values::kEdge},
      {Values::kF32, Values::kUnit},
      {Values::kF32, Values::kAllExponents},
      {Values::kSmall, Values::kSmall},
      {Values::kDenormal, Values::kSmall},
      {Values::kSmall, Values::kTiny},
      {Values::kDenormalLow, Values::kUnit},
      {Values::kSmallLow, Values::kSmallLow},
      {Values::kDenormalLow, Values::kSmall},
      {Values::kSmall, Values::kSmallLow},
      {Values::kDenormal, Values::kUnit},
      {Values::kBandTop, Values::kBandTop},
      {Values::kUnitSomeDenormal, Values::kUnit},
      {Values::kUnitSomeDenormal, Values::kBandTop},
  };
  const char* names[] = {"unit x unit",
                         "all exponents",
                         "denormal LHS",
                         "denormal weights",
                         "denormal x denormal",
                         "tiny x tiny",
                         "huge x huge",
                         "edge LHS",
                         "edge weights",
                         "edge x edge",
                         "f32 LHS",
                         "f32 LHS x all exponents",
                         "small x small (sums across 2^-126)",
                         "denormal LHS x small",
                         "small x tiny",
                         "denormal LHS below 2^-127 (scaled path)",
                         "small x small below 2^-127 (scaled path)",
                         "denormal LHS x small (scaled path)",
                         "small x small, products 2^-150 .. 2^-116 (scaled path)",
                         "denormal LHS x unit, products up to 2^-126 (scaled path)",
                         "products 2^-108 .. 2^-104 (exact: the fused f32 path)",
                         "unit LHS, an eighth denormal (scaled path)",
                         "unit LHS, an eighth denormal, x 2^-54 .. 2^-52 (scaled path)"};
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const bool scaled_class = std::string_view(names[c]).ends_with("(scaled path)");
    std::uint32_t scaled_tiles = 0;
    for (std::uint32_t size = 1; size <= kLanes; ++size) {
      const auto weights = random_weights(classes[c].second, size, rng);
      const vpu::Vreg lhs = random_lhs(classes[c].first, rng);
      check_tile(TileJob{&lhs, nullptr, weights.get(), size, size}, names[c]);
      // The scaled path's classes take it (where the CPU takes assists)
      // wherever f32 would meet a denormal (a narrow tile may hold none).
      if (scaled_class) {
        mxu::ValueRange a;
        std::uint32_t buckets = 0;  // as the kernel's vector pass finds them
        std::uint32_t denormals = 0;
        for (std::size_t row = 0; row < kSublanes; ++row) {
          for (std::size_t k = 0; k < size; ++k) {
            const std::uint32_t bits = lhs.words[row * kLanes + k];
            a.add(bits);
            denormals += (bits & 0x7F80'0000U) == 0 && (bits & 0x7FFF'FFFFU) != 0 ? 1 : 0;
            mxu::PowerOfTwoFields one;
            one.add(bits);
            for (std::uint32_t f = 0; f < 256; ++f) buckets |= one.has(f) ? 1U << (f / 8) : 0U;
          }
        }
        if (!mxu::may_meet_denormals(a, weights->range)) continue;
        // Fewer than 1 in 128 LHS values denormal with exact products: the kernel keeps f32.
        if (mxu::rare_lhs_denormals(a, weights->range, denormals, size * kSublanes)) continue;
        const mxu::ScaledFit fit = mxu::scaled_fit(a, weights->range);
        INFO(names[c] << ", size " << size);
        CHECK((fit == mxu::ScaledFit::kYes ||
               (fit == mxu::ScaledFit::kCheckPowersOfTwo &&
                mxu::scaled_pairs_fit(mxu::PowerOfTwoFields::from_buckets(buckets), weights->power_of_two_fields()))));
        ++scaled_tiles;
      }
    }
    if (scaled_class) {
      INFO(names[c]);
      CHECK(scaled_tiles >= kLanes / 2);
    }
  }
}

TEST_CASE("mxu kernels: which tiles the scaled path takes", "[mxu][kernel]") {
  const auto range = [](std::initializer_list<float> values) {
    mxu::ValueRange r;
    for (const float v : values) r.add(std::bit_cast<std::uint32_t>(v));
    return r;
  };
  const float denormal = std::bit_cast<float>(0x007F'0000U);  // 127 x 2^-133, the largest bf16 denormal
  using mxu::ScaledFit;
  // f32 is left for a denormal operand, or products that may round below 2^-126 (not products_exact).
  CHECK(mxu::may_meet_denormals(range({denormal, 1.0F}), range({1.0F})));
  CHECK(mxu::may_meet_denormals(range({1.0F}), range({std::bit_cast<float>(0x0001'0000U)})));
  CHECK(mxu::may_meet_denormals(range({0x1p-70F}), range({0x1p-70F})));        // fields 57 + 57 < 119
  CHECK_FALSE(mxu::may_meet_denormals(range({0x1p-67F}), range({0x1p-67F})));  // 60 + 60: products exact
  CHECK_FALSE(mxu::may_meet_denormals(range({0x1p-64F}), range({0x1p-62F})));
  CHECK_FALSE(mxu::may_meet_denormals(range({0.0F}), range({0x1p-100F})));
  // No product can be 2^-101: yes.
  const float below = std::nextafter(0x1p-40F, 0.0F);  // not a bf16 value: the bounds are exact anyway
  CHECK(mxu::scaled_fit(range({0x1p-64F, -0x1p-70F}), range({below, 0.5F * below})) == ScaledFit::kYes);
  CHECK(mxu::scaled_fit(range({denormal}), range({0x1.fep21F})) == ScaledFit::kYes);
  CHECK(mxu::scaled_fit(range({0x1p-64F}), range({0x1p-40F})) == ScaledFit::kYes);        // 2^-104
  CHECK(mxu::scaled_fit(range({0x1p-49F}), range({0x1p-51F, 1.0F})) == ScaledFit::kYes);  // from 2^-100
  // One may: the powers of two decide.
  CHECK(mxu::scaled_fit(range({0x1p-50F}), range({0x1p-51F})) == ScaledFit::kCheckPowersOfTwo);
  CHECK(mxu::scaled_fit(range({denormal, 1.0F}), range({0x1p-20F, 1.0F})) == ScaledFit::kCheckPowersOfTwo);
  // Denormal weights (the FMA's operand), Inf and NaN, all-zero sides, overflow: never.
  CHECK(mxu::scaled_fit(range({0x1p-64F}), range({std::bit_cast<float>(0x0001'0000U)})) == ScaledFit::kNo);
  CHECK(mxu::scaled_fit(range({0x1p-64F, INFINITY}), range({0x1p-80F})) == ScaledFit::kNo);
  CHECK(mxu::scaled_fit(range({0x1p-64F}), range({0x1p-80F, NAN})) == ScaledFit::kNo);
  CHECK(mxu::scaled_fit(range({0.0F, -0.0F}), range({0x1p-80F})) == ScaledFit::kNo);
  CHECK(mxu::scaled_fit(range({0x1p105F}), range({0x1p-126F})) == ScaledFit::kNo);  // the LHS x 2^23 overflows
  CHECK(mxu::scaled_fit(range({0x1p100F}), range({0x1p-3F})) == ScaledFit::kNo);    // a product 2^97
  CHECK(mxu::scaled_fit(range({0x1p100F}), range({0x1p-4F})) == ScaledFit::kYes);
  // The pairs: normal powers of two with fields summing to 153, or a bf16
  // denormal against a power of two with field 153..159, multiply to 2^-101.
  const auto powers = [](std::initializer_list<float> values) {
    mxu::PowerOfTwoFields f;
    for (const float v : values) f.add(std::bit_cast<std::uint32_t>(v));
    return f;
  };
  CHECK_FALSE(mxu::scaled_pairs_fit(powers({0x1p-50F}), powers({0x1p-51F})));         // 77 + 76 = 153
  CHECK_FALSE(mxu::scaled_pairs_fit(powers({-0x1p-50F}), powers({0x1p-51F, 3.0F})));  // either sign
  CHECK(mxu::scaled_pairs_fit(powers({0x1.8p-50F}), powers({0x1p-51F})));             // not a power of two
  CHECK(mxu::scaled_pairs_fit(powers({0x1p-50F}), powers({0x1.8p-51F})));
  CHECK(mxu::scaled_pairs_fit(powers({0x1p-52F}), powers({0x1p-53F})));       // 2^-105
  CHECK(mxu::scaled_pairs_fit(powers({0x1p-49F}), powers({0x1p-51F})));       // 2^-100
  CHECK_FALSE(mxu::scaled_pairs_fit(powers({denormal}), powers({0x1p26F})));  // field 153
  CHECK_FALSE(mxu::scaled_pairs_fit(powers({denormal}), powers({0x1p32F})));  // field 159
  CHECK(mxu::scaled_pairs_fit(powers({denormal}), powers({0x1p33F})));
  CHECK(mxu::scaled_pairs_fit(powers({denormal, 1.0F}), powers({0x1p-20F, 0.75F})));
}

TEST_CASE("mxu kernels: the scaled rounding of one product checked exhaustively by exponent sum and significands",
          "[mxu][kernel]") {
  // q = fl(fl(a' w + M) - M) against fl32(a w) x 2^23, for every pair of bf16
  // significands and signs at each exponent sum from products of 2^-160 to
  // 2^-60 (a normal weight; the LHS normal, or a bf16 denormal), with host f32
  // arithmetic on normal values only. Outside [2^-104, 2^-99) it is always
  // right (mxu/matmul_kernel_avx512.cpp); inside, only +2^-101 fails (which
  // scaled_fit and scaled_pairs_fit keep out).
  const auto value = [](std::uint32_t field, std::uint32_t fraction, bool negative) {
    return std::bit_cast<float>((negative ? 0x8000'0000U : 0U) | field << 23 | fraction << 16);
  };
  const auto scaled_lhs = [](float a) {  // a x 2^23, exactly, without touching a denormal
    const auto bits = std::bit_cast<std::uint32_t>(a);
    const double magnitude = mxu::magnitude_of_bits(bits) * 0x1p23;
    return static_cast<float>(std::signbit(a) ? -magnitude : magnitude);
  };
  const auto reference = [](double product) {  // fl32(P) x 2^23 in double: P is exact there
    const double rounded = std::fabs(product) < 0x1p-126 ? std::nearbyint(product * 0x1p149) * 0x1p-149 : product;
    return rounded * 0x1p23;
  };
  std::uint64_t checked = 0;
  std::uint64_t wrong_other = 0;  // any product but +2^-101 that comes out wrong
  std::uint64_t wrong_2_101 = 0;
  std::uint64_t wrong_outside_window = 0;                 // of them, outside [2^-104, 2^-99): the proof's cases
  for (int lhs_field = 0; lhs_field <= 1; ++lhs_field) {  // 0: denormal LHS; 1: normal
    for (int sum = -160; sum <= -60; ++sum) {             // the product's exponent, about
      // Fields giving products near 2^sum: a normal ea with ew = sum + 254 - ea.
      const int ea = lhs_field == 0 ? 0 : std::clamp(sum + 127 + 1, 1, 120);
      const int ew = lhs_field == 0 ? sum + 133 + 127 : sum + 254 - ea;
      if (ew < 1 || ew > 254) continue;
      for (std::uint32_t fa = 0; fa < 128; ++fa) {
        if (ea == 0 && fa == 0) continue;  // zero
        for (std::uint32_t fw = 0; fw < 128; ++fw) {
          for (const bool negative : {false, true}) {
            const float a = value(static_cast<std::uint32_t>(ea), fa, negative);
            const float w = value(static_cast<std::uint32_t>(ew), fw, false);
            const double product = static_cast<double>(mxu::magnitude_of_bits(std::bit_cast<std::uint32_t>(a))) *
                                   (negative ? -1.0 : 1.0) * static_cast<double>(w);
            const float q = std::fma(scaled_lhs(a), w, mxu::detail::kScaledRounding) - mxu::detail::kScaledRounding;
            const bool right = static_cast<double>(q) == reference(product);
            const double magnitude = std::fabs(product);
            ++checked;
            if (right) continue;
            (product == 0x1p-101 ? wrong_2_101 : wrong_other) += 1;
            wrong_outside_window += magnitude < 0x1p-104 || magnitude >= 0x1p-99 ? 1 : 0;
          }
        }
      }
    }
  }
  INFO(checked << " products");
  CHECK(checked > 4'000'000);
  CHECK(wrong_outside_window == 0);
  CHECK(wrong_other == 0);
  CHECK(wrong_2_101 > 0);
}

TEST_CASE("mxu kernels: the scaled paths get a product of 2^-101 wrong and its neighbours right", "[mxu][kernel]") {
  // One product per output, a x w with both powers of two: at +2^-101, a' w +
  // M rounds M away and the subtraction cannot give it back
  // (mxu/matmul_kernel_avx512.cpp), which is why scaled_fit keeps it out; its
  // neighbours, -2^-101 and 2^-102, 2^-100, come out right.
  const auto product = [](float a, float w, bool wide) {
    auto tile = std::make_unique<WeightTile>();
    tile->values.fill(0.0F);
    for (std::size_t c = 0; c < kLanes; ++c) tile->values[c] = w;
    tile->finish();
    alignas(64) std::array<float, kSublanes * kLanes> lhs{};
    for (std::size_t r = 0; r < kSublanes; ++r) lhs[r * kLanes] = a;
    alignas(64) std::array<float, kSublanes * kLanes> out{};
    if (wide) {
      mxu::detail::blocks_avx512_tiny(lhs.data(), tile->panels.data(), 1, kLanes / 8, out.data());
    } else {
      mxu::detail::blocks_avx2_tiny(lhs.data(), tile->panels.data(), 1, kLanes / 8, out.data());
    }
    return out[0];
  };
  bool ran = false;
  for (const bool wide : {false, true}) {
    if (!mxu::kernel_available(wide ? KernelKind::kAvx512 : KernelKind::kAvx2Fma)) continue;
    INFO((wide ? "avx512" : "avx2"));
    CHECK(product(0x1p-52F, 0x1p-53F, wide) == 0x1p-105F);
    CHECK(product(0x1p-50F, 0x1p-52F, wide) == 0x1p-102F);
    CHECK(product(0x1p-50F, 0x1p-50F, wide) == 0x1p-100F);
    CHECK(product(-0x1p-50F, 0x1p-51F, wide) == -0x1p-101F);
    CHECK(product(0x1p-50F, 0x1p-51F, wide) != 0x1p-101F);
    ran = true;
  }
  if (!ran) WARN("no AVX2 on this CPU: the scaled paths are not run");
}

TEST_CASE("mxu kernels: the scaled blocks equal the reference below, above and across the window", "[mxu][kernel]") {
  // blocks_avx512_tiny / blocks_avx2_tiny called directly (the dispatch takes
  // them only where f32 would meet a denormal): products just below 2^-104,
  // from 2^-98 up, and denormal x unit beside unit x unit.
  std::mt19937 rng(21);
  const std::vector<std::pair<Values, Values>> classes = {{Values::kBandTop, Values::kBandTop},
                                                          {Values::kBandHigh, Values::kBandHigh},
                                                          {Values::kUnitSomeDenormal, Values::kUnit},
                                                          {Values::kDenormalLow, Values::kUnit}};
  bool ran = false;
  for (const bool wide : {false, true}) {
    if (!mxu::kernel_available(wide ? KernelKind::kAvx512 : KernelKind::kAvx2Fma)) continue;
    ran = true;
    for (const auto& [lhs_kind, weight_kind] : classes) {
      for (int round = 0; round < 8; ++round) {
        const auto weights = random_weights(weight_kind, kLanes, rng);
        const vpu::Vreg lhs = random_lhs(lhs_kind, rng);
        const vpu::Vreg want = reference_tile(TileJob{&lhs, nullptr, weights.get(), kLanes, kLanes});
        alignas(64) std::array<float, kSublanes * kLanes> out{};
        const auto* a = reinterpret_cast<const float*>(lhs.words.data());
        if (wide) {
          mxu::detail::blocks_avx512_tiny(a, weights->panels.data(), kLanes, kLanes / 8, out.data());
        } else {
          mxu::detail::blocks_avx2_tiny(a, weights->panels.data(), kLanes, kLanes / 8, out.data());
        }
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < out.size(); ++i) wrong += std::bit_cast<std::uint32_t>(out[i]) != want.words[i];
        INFO((wide ? "avx512" : "avx2") << ", classes " << static_cast<int>(lhs_kind) << " x "
                                        << static_cast<int>(weight_kind) << ", round " << round);
        CHECK(wrong == 0);
      }
    }
  }
  if (!ran) WARN("no AVX2 on this CPU: the scaled paths are not run");
}

TEST_CASE("mxu kernels: masked K lanes add nothing, not even +0, on every kernel", "[mxu][kernel]") {
  std::mt19937 rng(13);
  for (const Values v : {Values::kUnit, Values::kEdge, Values::kDenormal}) {
    for (const std::uint32_t size : {1U, 7U, 8U, 9U, 64U, 127U, 128U}) {
      const auto weights = random_weights(v, size, rng);
      // LHS -0 everywhere, mask random: an all-masked row stays +0, a row with
      // an enabled -0 x +w stays +0 as well (+0 + -0), masked NaNs vanish.
      vpu::Vreg lhs = random_lhs(v, rng);
      vpu::Vmask mask{};
      for (auto& b : mask.bits) b = static_cast<std::uint8_t>(rng() % 3 == 0);
      for (std::size_t l = 0; l < kLanes; ++l) mask.bits[3 * kLanes + l] = 0;  // row 3 fully masked
      for (const std::uint32_t used_k : {1U, size / 2 + 1, size}) {
        check_tile(TileJob{&lhs, &mask, weights.get(), used_k, size}, "masked");
      }
    }
  }
  // A masked lane with an Inf in it adds nothing (no NaN from Inf x 0).
  auto w = std::make_unique<WeightTile>();
  w->values.fill(0.0F);
  w->finish();
  vpu::Vreg lhs{};
  lhs.set_f32(0, std::bit_cast<float>(0x7F80'0000U));
  vpu::Vmask mask{};
  mask.bits[1] = 1;
  for (const KernelKind kind : kernels()) {
    vpu::Vreg out;
    mxu::multiply_tile(kind, TileJob{&lhs, &mask, w.get(), 2, kLanes}, out);
    CHECK(out.words[0] == 0);
  }
}

TEST_CASE("mxu kernels: a narrow array's lanes >= size are +0 even when the LHS holds Inf", "[mxu][kernel]") {
  Mxu m(8, 8, kEdu);
  vpu::Vreg w = filled(1.0F);
  REQUIRE_FALSE(m.push_weights(w, false, 0));
  vpu::Vreg lhs = filled(std::bit_cast<float>(0x7F80'0000U));
  for (const KernelKind kind : kernels()) {
    m.set_kernel(kind);
    REQUIRE_FALSE(m.matmul(lhs, nullptr, true, 0));
    const vpu::Vreg out = m.pop();
    for (std::size_t r = 0; r < kSublanes; ++r) {
      for (std::size_t c = 0; c < kLanes; ++c) {
        INFO("row " << r << " lane " << c);
        CHECK(out.at(r, c) == (c < 8 ? 0x7F80'0000U : 0U));
      }
    }
    REQUIRE_FALSE(m.push_weights(w, false, 0));
  }
}

namespace {

// A random run of one unit: pushes (plain and transposed), latching and plain
// multiplies (some masked), pops; returns every popped word.
std::vector<std::uint32_t> random_run(std::uint32_t size, KernelKind kind, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Mxu m(size, 64, MxuTiming{8, 1, 0, 2 * size + 8});
  m.set_kernel(kind);
  std::vector<std::uint32_t> words;
  const auto pop_all = [&](std::size_t keep) {
    while (m.queued() > keep) {
      const vpu::Vreg v = m.pop();
      words.insert(words.end(), v.words.begin(), v.words.end());
    }
  };
  const std::uint32_t pushes = (size + 7) / 8;
  std::uint64_t cycle = 0;
  for (int tile = 0; tile < 6; ++tile) {
    const bool transposed = tile == 3;
    const Values values = tile == 2 ? Values::kEdge : tile == 4 ? Values::kDenormal : Values::kUnit;
    for (std::uint32_t p = 0; p < (transposed ? 16U : pushes); ++p) {
      REQUIRE_FALSE(m.push_weights(random_lhs(values, rng), transposed, ++cycle));
    }
    for (int i = 0; i < 40; ++i) {
      const bool masked = i % 7 == 3;
      vpu::Vmask mask{};
      for (std::size_t r = 0; r < kSublanes; ++r) {
        for (std::size_t l = 0; l < size; ++l) mask.bits[r * kLanes + l] = static_cast<std::uint8_t>(rng() % 2);
      }
      cycle += 8;
      REQUIRE_FALSE(
          m.matmul(random_lhs(tile == 5 ? Values::kF32 : values, rng), masked ? &mask : nullptr, i == 0, cycle));
      pop_all(30);  // results trail their multiplies, across the next latch
    }
  }
  pop_all(0);
  return words;
}

}  // namespace

TEST_CASE("mxu host threads: 1 and N threads, portable and dispatched kernels give identical bits", "[mxu][threads]") {
  for (const std::uint32_t size : {128U, 8U, 13U}) {
    set_host_threads(1);
    const auto one = random_run(size, KernelKind::kPortable, size);
    for (const unsigned threads : {1U, 2U, 4U}) {
      set_host_threads(threads);
      for (const KernelKind kind : kernels()) {
        INFO("size " << size << ", " << threads << " threads, kernel " << mxu::to_string(kind));
        CHECK(random_run(size, kind, size) == one);
      }
    }
  }
  set_host_threads(0);
}

TEST_CASE("mxu host threads: a unit destroyed with queued multiplies waits for them", "[mxu][threads]") {
  set_host_threads(3);
  for (int round = 0; round < 20; ++round) {
    Mxu m(128, 64, MxuTiming{8, 1, 0, 264});
    for (int p = 0; p < 16; ++p) REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 0));
    for (int i = 0; i < 40; ++i) REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, i == 0, 0));
    CHECK(m.pop().f32(5) == 128.0F);
  }
  set_host_threads(0);
}

TEST_CASE("mxu kernels: every kernel latches the same weight tile", "[mxu][kernel]") {
  std::mt19937 rng(14);
  for (const Values v : {Values::kUnit, Values::kEdge, Values::kF32, Values::kDenormal, Values::kHuge}) {
    for (const std::uint32_t size : {1U, 5U, 8U, 9U, 16U, 63U, 100U, 127U, 128U}) {
      for (const std::uint32_t pushes : {1U, (size + 7) / 8, 16U}) {
        for (const bool transposed : {false, true}) {
          std::vector<mxu::StagedPush> staged;
          for (std::uint32_t p = 0; p < pushes; ++p) staged.push_back({random_lhs(v, rng), transposed});
          WeightTile portable;
          portable.values.fill(7.0F);  // stale contents of a recycled tile
          portable.panels.fill(7.0F);
          mxu::detail::build_weights_portable(staged, size, portable);
          for (const KernelKind kind : kernels()) {
            WeightTile tile;
            tile.values.fill(-3.0F);
            tile.panels.fill(-3.0F);
            mxu::build_weights(kind, staged, size, tile);
            INFO("kernel " << mxu::to_string(kind) << ", size " << size << ", " << pushes << " pushes"
                           << (transposed ? ", transposed" : ""));
            CHECK(std::memcmp(tile.values.data(), portable.values.data(), sizeof tile.values) == 0);
            CHECK(std::memcmp(tile.panels.data(), portable.panels.data(), sizeof tile.panels) == 0);
            CHECK(tile.range.non_finite == portable.range.non_finite);
            CHECK(tile.range.min_magnitude == portable.range.min_magnitude);
            CHECK(tile.range.max_magnitude == portable.range.max_magnitude);
          }
        }
      }
    }
  }
}

TEST_CASE("mxu host threads: timing-only units leave the host pool alone", "[mxu][threads]") {
  const bool started_before = host_pool_started();
  set_host_threads(4);
  Mxu m(128, 64, MxuTiming{8, 1, 0, 264});
  m.compute_numerics = false;
  for (int p = 0; p < 16; ++p) REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 0));
  for (int i = 0; i < 40; ++i) REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, i == 0, 0));
  while (m.queued() > 0) CHECK(m.pop().f32(5) == 0.0F);
  if (started_before) {
    WARN("the pool was started by an earlier test in this process; not checked");
  } else {
    CHECK_FALSE(host_pool_started());
  }
  set_host_threads(0);
}

TEST_CASE("mxu host threads: units sharing one LHS copy give the bits of separate copies", "[mxu][threads]") {
  std::mt19937 rng(15);
  std::vector<vpu::Vreg> weights;
  for (int p = 0; p < 64; ++p) weights.push_back(random_lhs(Values::kUnit, rng));
  std::vector<vpu::Vreg> lhs;
  for (int i = 0; i < 24; ++i) lhs.push_back(random_lhs(i % 5 == 4 ? Values::kEdge : Values::kF32, rng));
  const auto run = [&](unsigned threads, bool share) {
    set_host_threads(threads);
    std::vector<Mxu> units;
    units.reserve(4);
    for (int u = 0; u < 4; ++u) units.emplace_back(128, 64, MxuTiming{8, 1, 0, 264});
    for (int u = 0; u < 4; ++u) {
      for (int p = 0; p < 16; ++p) REQUIRE_FALSE(units[u].push_weights(weights[u * 16 + p], false, 0));
    }
    std::vector<std::uint32_t> words;
    for (std::size_t i = 0; i < lhs.size(); ++i) {
      vpu::Vreg reg = lhs[i];
      const auto copy = SingleThreadRc<mxu::SharedLhs>::make(reg);
      for (auto& m : units) {
        REQUIRE(m.defers_multiplies() == (threads > 1));
        const auto fault = share ? m.matmul(reg, nullptr, i == 0, i, copy) : m.matmul(reg, nullptr, i == 0, i);
        REQUIRE_FALSE(fault);
      }
      reg.words.fill(0x7FC0'0000);  // the register changes after the bundle: the copy holds
    }
    for (auto& m : units) {
      while (m.queued() > 0) {
        const vpu::Vreg v = m.pop();
        words.insert(words.end(), v.words.begin(), v.words.end());
      }
    }
    return words;
  };
  const auto reference = run(1, false);
  CHECK(run(3, true) == reference);
  CHECK(run(2, false) == reference);
  set_host_threads(0);
}
