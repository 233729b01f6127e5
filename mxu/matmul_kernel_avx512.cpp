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

// out[r][16 c ..] for the 8 rows and C zmm columns starting at `w` (the first
// of C panels; a panel's weight row is one zmm). The accumulators stay in
// registers for the whole K loop: 8 C of them, C weight rows and a broadcast
// (and a product unless kFused): at most 29 of the 32 zmm registers.
template <int C, bool kFused>
TPUEMU_AVX512 inline void block_zmm(const float* a, const float* w, std::uint32_t k_count, float* out) {
  constexpr int kRows = static_cast<int>(vpu::kSublanes);
  __m512 acc[kRows][C];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  for (std::uint32_t k = 0; k < k_count; ++k) {
    __m512 wv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) wv[c] = _mm512_loadu_ps(w + c * kPanelFloats + k * kPanelColumns);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 b = _mm512_set1_ps(a[r * kLanes + k]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        if constexpr (kFused) {
          acc[r][c] = _mm512_fmadd_ps(b, wv[c], acc[r][c]);
        } else {
          acc[r][c] = _mm512_add_ps(acc[r][c], _mm512_mul_ps(b, wv[c]));
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(out + r * kLanes + c * kZmmFloats, acc[r][c]);
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
    block_zmm<3, kFused>(a, panels + p / 2 * kPanelFloats, k_count, out + p * kYmmFloats);
  if (panel_count - p >= 4) {
    block_zmm<2, kFused>(a, panels + p / 2 * kPanelFloats, k_count, out + p * kYmmFloats);
    p += 4;
  }
  if (panel_count - p >= 2) {
    block_zmm<1, kFused>(a, panels + p / 2 * kPanelFloats, k_count, out + p * kYmmFloats);
    p += 2;
  }
  if (panel_count - p == 1) block_ymm<kFused>(a, panels + p / 2 * kPanelFloats, k_count, out + p * kYmmFloats);
}

}  // namespace

bool avx512_compiled() {
  return true;
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

#else

namespace tpuemu::mxu::detail {
bool avx512_compiled() {
  return false;
}
void blocks_avx512(const float*, const float*, std::uint32_t, std::uint32_t, bool, float*) {}
}  // namespace tpuemu::mxu::detail

#endif
