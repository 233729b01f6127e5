// Host references for generated programs, computed in exactly the order the
// emulated hardware uses (programs/generators.hpp), so results compare bit
// for bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tpuemu::programs {

// C[M,N] = A[M,K] @ B[K,N] as the generated matmul computes it on the MXUs:
// inputs rounded to bf16; per k-block (128 wide, or the MXU's width
// `k_block` on narrower arrays) a sequential f32 sum from +0.0 over k (the
// block's rows up to K rounded up to a multiple of 8, the padding being
// zeros); blocks accumulated in f32 in order, the first block's sum being the
// start.
// With `c_in` (m x n, MatmulSpec::accumulate), every element's sum starts
// from c_in and adds each block's partial in order.
std::vector<float> matmul_reference(std::span<const float> a, std::span<const float> b, std::uint64_t m,
                                    std::uint64_t k, std::uint64_t n, std::uint64_t k_block = 128,
                                    std::span<const float> c_in = {});

// Deterministic pseudo-random bf16-representable values in [-1, 1) (xorshift).
std::vector<float> random_bf16_values(std::uint64_t count, std::uint32_t seed);

}  // namespace tpuemu::programs
