#include "mxu/small_tile.hpp"

#include <stdexcept>

#include "common/numerics.hpp"
#include "mxu/mxu.hpp"

namespace tpuemu::mxu {

std::vector<std::uint32_t> small_tile_reference(std::uint32_t n, std::span<const std::uint16_t> weights,
                                                std::span<const std::uint16_t> lhs) {
  constexpr std::size_t kRows = vpu::kSublanes;
  if (n == 0 || n > vpu::kLanes || weights.size() != std::size_t{n} * n || lhs.size() % n != 0) {
    throw std::invalid_argument("small_tile_reference: needs 1 <= n <= 128, n x n weights and rows x n LHS");
  }
  Mxu unit(n, 1024, MxuTiming{});
  const std::size_t pushes = (n + kRows - 1) / kRows;
  for (std::size_t p = 0; p < pushes; ++p) {
    vpu::Vreg v{};
    for (std::size_t sub = 0; sub < kRows; ++sub) {
      const std::size_t k = (pushes - 1 - p) * kRows + sub;
      for (std::size_t c = 0; k < n && c < n; ++c)
        v.set_f32(sub * vpu::kLanes + c, bf16_bits_to_f32(weights[k * n + c]));
    }
    if (const auto fault = unit.push_weights(v, false, 0)) throw std::logic_error(fault->message);
  }
  const std::size_t rows = lhs.size() / n;
  std::vector<std::uint32_t> out;
  for (std::size_t first = 0; first < rows; first += kRows) {
    vpu::Vreg a{};
    for (std::size_t r = 0; r < kRows && first + r < rows; ++r) {
      for (std::size_t k = 0; k < n; ++k) a.set_f32(r * vpu::kLanes + k, bf16_bits_to_f32(lhs[(first + r) * n + k]));
    }
    if (const auto fault = unit.matmul(a, nullptr, first == 0, 0)) throw std::logic_error(fault->message);
    const vpu::Vreg result = unit.pop();
    for (std::size_t r = 0; r < kRows && first + r < rows; ++r) {
      for (std::size_t c = 0; c < n; ++c) out.push_back(result.at(r, c));
    }
  }
  return out;
}

}  // namespace tpuemu::mxu
