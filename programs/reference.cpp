#include "programs/reference.hpp"

#include <algorithm>
#include <bit>

#include "common/numerics.hpp"

namespace tpuemu::programs {

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
          const float* row = &b16[kk * n];
          for (std::uint64_t j = 0; j < n; ++j) partial[j] += av * row[j];
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
