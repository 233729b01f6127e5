#include "mxu/matmul_kernel.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/numerics.hpp"

namespace tpuemu::mxu {

using vpu::kLanes;
using vpu::kSublanes;

std::string_view to_string(KernelKind kind) {
  switch (kind) {
    case KernelKind::kAvx2Fma:
      return "avx2";
    case KernelKind::kAvx512:
      return "avx512";
    case KernelKind::kPortable:
      break;
  }
  return "portable";
}

bool kernel_available(KernelKind kind) {
  if (kind == KernelKind::kPortable) return true;
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = detail::avx2_compiled() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  static const bool avx512 = avx2 && detail::avx512_compiled() && __builtin_cpu_supports("avx512f");
  return kind == KernelKind::kAvx512 ? avx512 : avx2;
#else
  return false;
#endif
}

bool detail::denormal_assists() {
  static const bool assists = [] {
    const char* env = std::getenv("TPUEMU_MXU_DENORMALS");
    if (env != nullptr && std::string_view(env) == "f64") return true;
    if (env != nullptr && std::string_view(env) == "f32") return false;
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_is("intel") != 0;
#else
    return false;
#endif
  }();
  return assists;
}

KernelKind default_kernel() {
  static const KernelKind kind = [] {
    const char* env = std::getenv("TPUEMU_MXU_KERNEL");
    for (const KernelKind k : {KernelKind::kPortable, KernelKind::kAvx2Fma, KernelKind::kAvx512}) {
      if (env != nullptr && std::string_view(env) == to_string(k) && kernel_available(k)) return k;
    }
    for (const KernelKind k : {KernelKind::kAvx512, KernelKind::kAvx2Fma}) {
      if (kernel_available(k)) return k;
    }
    return KernelKind::kPortable;
  }();
  return kind;
}

PowerOfTwoFields WeightTile::power_of_two_fields() const {
  std::uint8_t state = fields_state_.load(std::memory_order_acquire);
  if (state == kFieldsReady) return fields_;
  PowerOfTwoFields found;
  for (const float v : values) found.add(std::bit_cast<std::uint32_t>(v));
  // The first to finish publishes them; one that finds them being filled keeps its own.
  if (state == kFieldsEmpty &&
      fields_state_.compare_exchange_strong(state, kFieldsFilling, std::memory_order_acq_rel)) {
    fields_ = found;
    fields_state_.store(kFieldsReady, std::memory_order_release);
  }
  return found;
}

bool scaled_pairs_fit(const PowerOfTwoFields& a, const PowerOfTwoFields& w) {
  if (a.has(0) && w.any_in(153, 159)) return false;
  for (std::size_t word = 0; word < a.bits.size(); ++word) {
    for (std::uint64_t rest = a.bits[word]; rest != 0; rest &= rest - 1) {
      const int ea = static_cast<int>(word * 64) + std::countr_zero(rest);
      if (ea != 0 && w.any_in(153 - ea, 153 - ea)) return false;
    }
  }
  return true;
}

void WeightTile::finish() {
  forget_power_of_two_fields();
  range = ValueRange{};
  for (std::size_t k = 0; k < kLanes; ++k) {
    for (std::size_t column = 0; column < kLanes; ++column) {
      const float v = values[k * kLanes + column];
      range.add(std::bit_cast<std::uint32_t>(v));
      constexpr std::size_t p = kWeightPanelColumns;
      panels[(column / p) * p * kLanes + k * p + column % p] = v;
    }
  }
}

void build_weights(KernelKind kind, std::span<const StagedPush> pushes, std::uint32_t size, WeightTile& tile) {
  const bool any_transposed =
      std::any_of(pushes.begin(), pushes.end(), [](const StagedPush& p) { return p.transposed; });
  tile.forget_power_of_two_fields();
  if (kind != KernelKind::kPortable && !any_transposed) {
    detail::build_weights_avx2(pushes, size, tile);
  } else {
    detail::build_weights_portable(pushes, size, tile);
  }
}

void multiply_tile(KernelKind kind, const TileJob& job, vpu::Vreg& out) {
  if (kind == KernelKind::kAvx512) {
    detail::multiply_avx512(job, out);
  } else if (kind == KernelKind::kAvx2Fma) {
    detail::multiply_avx2(job, out);
  } else {
    detail::multiply_portable(job, out);
  }
}

namespace {

// The contract's NaN rule written out operand by operand, so the NaN a tile
// returns depends neither on the compiler (which may swap the operands of a
// commutative * or +, and at -O0 GCC and clang swap different ones) nor on
// the host (whose default NaN need not be x86's).
constexpr std::uint32_t kDefaultNan = 0xFFC0'0000U;

float quiet_nan(float nan) {
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(nan) | 0x0040'0000U);
}

float contract_product(float w, float a) {
  if (std::isnan(w)) return quiet_nan(w);
  if (std::isnan(a)) return quiet_nan(a);
  if ((std::isinf(w) && a == 0.0F) || (w == 0.0F && std::isinf(a))) return std::bit_cast<float>(kDefaultNan);
  return w * a;
}

float contract_sum(float product, float acc) {
  if (std::isnan(product)) return quiet_nan(product);
  if (std::isnan(acc)) return quiet_nan(acc);
  if (std::isinf(product) && std::isinf(acc) && std::signbit(product) != std::signbit(acc)) {
    return std::bit_cast<float>(kDefaultNan);
  }
  return product + acc;
}

// One output element by the contract, for the elements that came out NaN: the
// vector loop gets every other value exactly (without NaNs the operand order
// of * and + does not matter), but not which NaN wins where two meet.
float contract_element(const TileJob& job, std::size_t row, std::size_t col) {
  float acc = 0.0F;
  for (std::size_t k = 0; k < job.used_k; ++k) {
    if (job.k_mask != nullptr && job.k_mask->bits[row * kLanes + k] == 0) continue;
    const float a = bf16_round(job.lhs->f32(row * kLanes + k));
    acc = contract_sum(contract_product(job.weights->values[k * kLanes + col], a), acc);
  }
  return acc;
}

}  // namespace

namespace detail {

// The scalar kernel the MXU had before the AVX2 one (the anchor of
// bench/README.md): loop order k -> row -> column, so each weight row is reused
// for the 8 rows; the per-element order of additions (k ascending) is what the
// contract fixes. All 128 columns are summed (a constant trip count the
// compiler vectorises); lanes >= size are then set to +0.
void multiply_portable(const TileJob& job, vpu::Vreg& out) {
  const vpu::Vmask* k_mask = job.k_mask;
  const float* weights = job.weights->values.data();
  alignas(64) std::array<std::array<float, kLanes>, kSublanes> acc{};
  std::array<float, kSublanes> a{};
  for (std::size_t k = 0; k < job.used_k; ++k) {
    const float* w = &weights[k * kLanes];
    for (std::size_t row = 0; row < kSublanes; ++row) {
      const bool enabled = k_mask == nullptr || k_mask->bits[row * kLanes + k] != 0;
      a[row] = enabled ? bf16_round(job.lhs->f32(row * kLanes + k)) : 0.0F;
    }
    for (std::size_t row = 0; row < kSublanes; ++row) {
      if (k_mask != nullptr && k_mask->bits[row * kLanes + k] == 0) continue;  // masked lanes add nothing, not even +0
      const float ar = a[row];
      float* o = acc[row].data();
      for (std::size_t col = 0; col < kLanes; ++col) o[col] += ar * w[col];
    }
  }
  for (std::size_t row = 0; row < kSublanes; ++row) {
    for (std::size_t col = 0; col < job.size; ++col) {
      if (std::isnan(acc[row][col])) acc[row][col] = contract_element(job, row, col);
    }
    std::memcpy(&out.words[row * kLanes], acc[row].data(), job.size * sizeof(float));
    std::memset(out.words.data() + row * kLanes + job.size, 0, (kLanes - job.size) * sizeof(float));
  }
}

void build_weights_portable(std::span<const StagedPush> pushes, std::uint32_t size, WeightTile& tile) {
  std::array<float, kLanes* kLanes>& w = tile.values;
  std::fill(w.begin(), w.end(), 0.0F);
  const std::size_t n = pushes.size();
  for (std::size_t i = 0; i < n; ++i) {
    const StagedPush& s = pushes[i];
    const std::size_t block = n - 1 - i;
    for (std::size_t sub = 0; sub < kSublanes; ++sub) {
      for (std::size_t lane = 0; lane < size; ++lane) {
        const float value = bf16_round(s.rows.f32(sub * kLanes + lane));
        const std::size_t k = s.transposed ? lane : block * kSublanes + sub;
        const std::size_t column = s.transposed ? block * kSublanes + sub : lane;
        if (k < size && column < size) w[k * kLanes + column] = value;
      }
    }
  }
  tile.finish();
}

}  // namespace detail
}  // namespace tpuemu::mxu
