#include "programs/reference.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/numerics.hpp"

namespace tpuemu::programs {

namespace {

// Four f32 lanes: one SSE register on x86-64 (the build's baseline), and one
// instrumented access per four elements in the sanitizer build, which compiles
// at -O1 without auto-vectorization and spent 44-52 % of its heaviest
// workload tests in the scalar loop (session 19, perf).
using F32x4 = float __attribute__((vector_size(16)));
constexpr std::uint64_t kLanes = 4;

// partial[j] += av * row[j] for j < n: per element one f32 product and one
// f32 sum (the build does not contract them into an FMA: -std=c++20, and a
// bf16 x bf16 product is exact in f32 anyway), so lanes change no result.
void add_scaled_row(float* partial, const float* row, float av, std::uint64_t n) {
  const F32x4 scale = {av, av, av, av};
  std::uint64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    F32x4 sum;
    F32x4 b;
    std::memcpy(&sum, partial + j, sizeof sum);
    std::memcpy(&b, row + j, sizeof b);
    sum += scale * b;
    std::memcpy(partial + j, &sum, sizeof sum);
  }
  for (; j < n; ++j) partial[j] += av * row[j];
}

}  // namespace

std::vector<float> matmul_reference(std::span<const float> a, std::span<const float> b, std::uint64_t m,
                                    std::uint64_t k, std::uint64_t n, std::uint64_t k_block,
                                    std::span<const float> c_in) {
  const std::uint64_t k_padded = (k + 7) / 8 * 8;
  std::vector<float> b16(k * n);
  for (std::uint64_t i = 0; i < k * n; ++i) b16[i] = bf16_round(b[i]);
  std::vector<float> c(m * n);
  std::vector<float> partial(n);
  for (std::uint64_t i = 0; i < m; ++i) {
    float* acc = &c[i * n];
    for (std::uint64_t kb = 0; kb * k_block < k; ++kb) {
      std::fill(partial.begin(), partial.end(), 0.0F);
      const std::uint64_t end = std::min(kb * k_block + k_block, k_padded);
      for (std::uint64_t kk = kb * k_block; kk < end; ++kk) {
        const float av = kk < k ? bf16_round(a[i * k + kk]) : 0.0F;
        if (kk < k) {
          add_scaled_row(partial.data(), &b16[kk * n], av, n);
        } else {
          for (std::uint64_t j = 0; j < n; ++j) partial[j] += av * 0.0F;
        }
      }
      const bool start = kb == 0 && c_in.empty();
      if (kb == 0 && !c_in.empty()) std::copy_n(&c_in[i * n], n, acc);
      for (std::uint64_t j = 0; j < n; ++j) acc[j] = start ? partial[j] : acc[j] + partial[j];
    }
  }
  return c;
}

std::vector<float> random_bf16_values(std::uint64_t count, std::uint32_t seed) {
  std::vector<float> v(count);
  std::uint32_t x = seed == 0 ? 0x12345678U : seed;
  for (auto& e : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    // 24 random bits -> [-1, 1), then to the nearest bf16.
    const float f = static_cast<float>(static_cast<std::int32_t>(x >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
    e = bf16_round(f);
  }
  return v;
}

}  // namespace tpuemu::programs
