#include "mxu/mxu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/numerics.hpp"

namespace tpuemu::mxu {

using vpu::kLanes;
using vpu::kSublanes;

Mxu::Mxu(std::uint32_t size, std::uint32_t fifo_depth)
    : size_(size), fifo_depth_(fifo_depth), weights_(static_cast<std::size_t>(size) * size) {}

void Mxu::push_weights(const vpu::Vreg& rows, bool transposed) {
  staged_.push_back(Staged{rows, transposed});
}

void Mxu::latch() {
  // The last push holds K rows 0..7 (or columns 0..7 when transposed).
  std::fill(weights_.begin(), weights_.end(), 0.0F);
  active_k_ = 0;
  active_columns_ = 0;
  const std::size_t n = staged_.size();
  const bool transposed = n > 0 && staged_.front().transposed;
  for (std::size_t i = 0; i < n; ++i) {
    const Staged& s = staged_[i];
    const std::size_t block = n - 1 - i;
    for (std::size_t sub = 0; sub < kSublanes; ++sub) {
      for (std::size_t lane = 0; lane < kLanes; ++lane) {
        const float value = bf16_round(s.rows.f32(sub * kLanes + lane));
        std::size_t k = 0;
        std::size_t column = 0;
        if (s.transposed) {
          k = lane;
          column = block * kSublanes + sub;
        } else {
          k = block * kSublanes + sub;
          column = lane;
        }
        if (k < size_ && column < size_) weights_[k * size_ + column] = value;
      }
    }
  }
  if (transposed) {
    active_k_ = std::min<std::uint32_t>(size_, kLanes);
    active_columns_ = static_cast<std::uint32_t>(std::min<std::size_t>(size_, n * kSublanes));
  } else {
    active_k_ = static_cast<std::uint32_t>(std::min<std::size_t>(size_, n * kSublanes));
    active_columns_ = std::min<std::uint32_t>(size_, kLanes);
  }
  has_active_ = n > 0;
  staged_.clear();
}

std::optional<MxuFault> Mxu::matmul(const vpu::Vreg& lhs, const vpu::Vmask* k_mask, std::uint64_t ready_cycle) {
  if (!has_active_) return MxuFault{"multiply with no weights latched (vmatpush, then a .vlgmr multiply)"};
  // Every K lane the multiply uses must be covered by pushed weights.
  std::uint32_t used_k = 0;
  for (std::size_t lane = 0; lane < kLanes; ++lane) {
    bool used = k_mask == nullptr;
    for (std::size_t row = 0; !used && row < kSublanes; ++row) used = k_mask->bits[row * kLanes + lane] != 0;
    if (used) used_k = static_cast<std::uint32_t>(lane + 1);
  }
  if (used_k > active_k_) {
    return MxuFault{
        fmt::format("latched weights cover K rows 0..{} but the multiply uses K lanes up to {} "
                    "(push {} more weight vregs, or mask the LHS)",
                    active_k_ == 0 ? 0 : active_k_ - 1, used_k - 1, (used_k - active_k_ + kSublanes - 1) / kSublanes)};
  }
  Result r{ready_cycle, vpu::Vreg{}};
  if (compute_numerics) {
    // acc[row][col] = sum over k ascending of bf16(lhs[row][k]) * w[k][col], in f32.
    // Loop order k -> row -> col keeps each weight row in cache for the 8 rows;
    // the per-element order of additions (k ascending) is what the contract fixes.
    // Columns beyond active_columns_ hold zero weights, so all 128 are summed (a
    // constant trip count the compiler vectorises).
    std::array<std::array<float, kLanes>, kSublanes> acc{};
    std::array<float, kSublanes> a{};
    for (std::size_t k = 0; k < used_k; ++k) {
      const float* w = &weights_[k * size_];
      for (std::size_t row = 0; row < kSublanes; ++row) {
        const bool enabled = k_mask == nullptr || k_mask->bits[row * kLanes + k] != 0;
        a[row] = enabled ? bf16_round(lhs.f32(row * kLanes + k)) : 0.0F;
      }
      for (std::size_t row = 0; row < kSublanes; ++row) {
        if (k_mask != nullptr && k_mask->bits[row * kLanes + k] == 0)
          continue;  // masked lanes add nothing, not even +0
        const float ar = a[row];
        float* out = acc[row].data();
        for (std::size_t col = 0; col < kLanes; ++col) out[col] += ar * w[col];
      }
    }
    for (std::size_t row = 0; row < kSublanes; ++row) {
      for (std::size_t col = 0; col < kLanes; ++col) r.value.set_f32(row * kLanes + col, acc[row][col]);
    }
  }
  results_.push_back(std::move(r));
  ++matmuls;
  return std::nullopt;
}

const std::uint64_t* Mxu::head_ready_cycle() const {
  return results_.empty() ? nullptr : &results_.front().ready_cycle;
}

vpu::Vreg Mxu::pop() {
  vpu::Vreg v = results_.front().value;
  results_.pop_front();
  return v;
}

}  // namespace tpuemu::mxu
