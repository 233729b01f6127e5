#include "mxu/mxu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include "common/numerics.hpp"

namespace tpuemu::mxu {

using vpu::kLanes;
using vpu::kSublanes;

Mxu::Mxu(std::uint32_t size, std::uint32_t fifo_depth, MxuTiming timing)
    : size_(size), fifo_depth_(fifo_depth), timing_(timing), weights_(static_cast<std::size_t>(kLanes) * kLanes) {
  if (size == 0 || size > kLanes) {
    throw std::invalid_argument(
        fmt::format("MXU size {} is outside 1..{} (the vreg lanes it is wired to)", size, kLanes));
  }
}

std::optional<MxuFault> Mxu::push_weights(const vpu::Vreg& rows, bool transposed, std::uint64_t cycle) {
  if (backend_ != nullptr && transposed) {
    return MxuFault{
        fmt::format("{} loads weights by rows: transposed pushes (vmatpush.xpose) run only on the C++ "
                    "MXU (--mxu cpp)",
                    backend_->name())};
  }
  const std::uint64_t start = std::max({cycle, weight_path_free_, latch_wave_end_});
  weight_path_free_ = start + timing_.push_cycles;
  staged_.push_back(Staged{rows, transposed});
  if (backend_ != nullptr) backend_->push_weights(rows, cycle, start);
  return std::nullopt;
}

void Mxu::latch() {
  // The last push holds K rows 0..7 (or columns 0..7 when transposed).
  active_k_ = 0;
  active_columns_ = 0;
  const std::size_t n = staged_.size();
  const bool transposed = n > 0 && staged_.front().transposed;
  // Weights exist only where this unit computes (not timing-only, no backend).
  if (compute_numerics && backend_ == nullptr) {
    std::fill(weights_.begin(), weights_.end(), 0.0F);
    for (std::size_t i = 0; i < n; ++i) {
      const Staged& s = staged_[i];
      const std::size_t block = n - 1 - i;
      for (std::size_t sub = 0; sub < kSublanes; ++sub) {
        for (std::size_t lane = 0; lane < size_; ++lane) {
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
          if (k < size_ && column < size_) weights_[k * kLanes + column] = value;
        }
      }
    }
  }
  if (transposed) {
    active_k_ = size_;
    active_columns_ = static_cast<std::uint32_t>(std::min<std::size_t>(size_, n * kSublanes));
  } else {
    active_k_ = static_cast<std::uint32_t>(std::min<std::size_t>(size_, n * kSublanes));
    active_columns_ = size_;
  }
  has_active_ = n > 0;
  staged_.clear();
}

std::optional<MxuFault> Mxu::matmul(const vpu::Vreg& lhs, const vpu::Vmask* k_mask, bool latch_first,
                                    std::uint64_t cycle) {
  if (backend_ != nullptr && k_mask != nullptr) {
    return MxuFault{
        fmt::format("{} has no K mask: masked multiplies (vmatmul.msk) run only on the C++ MXU "
                    "(--mxu cpp)",
                    backend_->name())};
  }
  if (latch_first) latch();
  if (!has_active_) return MxuFault{"multiply with no weights latched (vmatpush, then a .vlgmr multiply)"};
  // Every K lane the multiply uses (below the array's width) must be covered by pushed weights.
  std::uint32_t used_k = 0;
  for (std::size_t lane = 0; lane < size_; ++lane) {
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
  std::uint64_t feed = std::max(cycle, next_matmul_cycle);
  if (latch_first) {
    feed = std::max(feed, weight_path_free_);
    latch_wave_end_ = feed + timing_.latch_wave_cycles;
  }
  next_matmul_cycle = feed + timing_.cycles_per_tile;
  last_feed_cycle = feed;
  busy_cycles += timing_.cycles_per_tile;
  Result r{feed + timing_.latency, vpu::Vreg{}};
  if (backend_ != nullptr) {
    backend_->multiply(lhs, latch_first, cycle, feed);
  } else if (compute_numerics) {
    // acc[row][col] = sum over k ascending of bf16(lhs[row][k]) * w[k][col], in f32.
    // Loop order k -> row -> col keeps each weight row in cache for the 8 rows;
    // the per-element order of additions (k ascending) is what the contract fixes.
    // Columns beyond active_columns_ hold zero weights, so all 128 are summed (a
    // constant trip count the compiler vectorises); lanes >= size_ stay +0.
    std::array<std::array<float, kLanes>, kSublanes> acc{};
    std::array<float, kSublanes> a{};
    for (std::size_t k = 0; k < used_k; ++k) {
      const float* w = &weights_[k * kLanes];
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

std::optional<std::uint64_t> Mxu::head_ready_cycle(std::uint64_t now) const {
  if (results_.empty()) return std::nullopt;
  if (backend_ != nullptr) {
    const std::optional<std::uint64_t> ready = backend_->oldest_ready_cycle();
    return ready ? *ready : now + 1;
  }
  return results_.front().ready_cycle;
}

vpu::Vreg Mxu::pop() {
  vpu::Vreg v = backend_ != nullptr ? backend_->take_oldest() : std::move(results_.front().value);
  results_.pop_front();
  return v;
}

}  // namespace tpuemu::mxu
