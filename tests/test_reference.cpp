// programs::matmul_reference against its contract written element by
// element (programs/reference.hpp): per output element, each k-block's f32
// sum from +0.0 in k order over the block's rows up to K rounded up to 8 (the
// padding adding +0.0), blocks summed in order, from c_in where given. Shapes
// cover every lane tail (N mod 4), K below and above a block and not a
// multiple of 8, and sums that cancel to -0.0 (the padding turns them to +0.0).
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <span>
#include <vector>

#include "common/numerics.hpp"
#include "programs/reference.hpp"

namespace {

using tpuemu::bf16_round;

float element(std::span<const float> a, std::span<const float> b, std::uint64_t k, std::uint64_t n,
              std::uint64_t k_block, std::span<const float> c_in, std::uint64_t i, std::uint64_t j) {
  const std::uint64_t k_padded = (k + 7) / 8 * 8;
  float acc = c_in.empty() ? 0.0F : c_in[i * n + j];
  for (std::uint64_t block = 0; block * k_block < k; ++block) {
    float sum = 0.0F;
    for (std::uint64_t kk = block * k_block; kk < std::min(block * k_block + k_block, k_padded); ++kk) {
      sum += kk < k ? bf16_round(a[i * k + kk]) * bf16_round(b[kk * n + j]) : 0.0F;
    }
    acc = block == 0 && c_in.empty() ? sum : acc + sum;
  }
  return acc;
}

// Values with many exact cancellations: small integers times powers of two,
// and signed zeros.
std::vector<float> values(std::uint64_t count, std::uint32_t seed) {
  std::vector<float> v(count);
  std::uint32_t x = seed;
  for (auto& e : v) {
    x = x * 1664525U + 1013904223U;
    const int pick = static_cast<int>(x >> 28);
    e = pick == 0 ? -0.0F : pick == 1 ? 0.0F : static_cast<float>(static_cast<int>((x >> 20) & 7U) - 4) * 0.375F;
  }
  return v;
}

}  // namespace

TEST_CASE("matmul_reference follows its per-element order on every lane tail", "[programs]") {
  const std::uint64_t m = 3;
  for (const std::uint64_t n : {1U, 2U, 3U, 4U, 5U, 7U, 8U, 9U, 130U}) {
    for (const std::uint64_t k : {1U, 7U, 8U, 9U, 20U, 130U}) {
      for (const std::uint64_t k_block : {8U, 16U, 128U}) {
        for (const bool accumulate : {false, true}) {
          const auto a = values(m * k, static_cast<std::uint32_t>(n * 131 + k));
          const auto b = values(k * n, static_cast<std::uint32_t>(k * 7 + n));
          const auto c_in = accumulate ? values(m * n, 99) : std::vector<float>{};
          const auto c = tpuemu::programs::matmul_reference(a, b, m, k, n, k_block, c_in);
          REQUIRE(c.size() == m * n);
          for (std::uint64_t i = 0; i < m; ++i) {
            for (std::uint64_t j = 0; j < n; ++j) {
              INFO("n " << n << " k " << k << " k_block " << k_block << " c_in " << accumulate << " at " << i << ","
                        << j);
              CHECK(std::bit_cast<std::uint32_t>(c[i * n + j]) ==
                    std::bit_cast<std::uint32_t>(element(a, b, k, n, k_block, c_in, i, j)));
            }
          }
        }
      }
    }
  }
}
