#include "mxu/mxu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "common/host_pool.hpp"
#include "common/numerics.hpp"

namespace tpuemu::mxu {

using vpu::kLanes;
using vpu::kSublanes;

// How long a pop waits for a worker already computing its result before
// computing it itself: well above a tile's time on either kernel.
constexpr std::chrono::microseconds kPatience{200};

// A multiply's result, and its inputs while it is queued on the host pool:
// everything the arithmetic reads is the slot's own (the LHS and mask copied
// at issue, the weights held), so the result is the same on any thread.
struct Mxu::Slot : HostTask {
  bool queued = false;
  vpu::Vreg lhs;
  SingleThreadRc<SharedLhs> shared_lhs;  // instead of `lhs` when set; copied and released on the issuing thread
  vpu::Vmask mask;
  bool masked = false;
  SingleThreadRc<WeightTile> weights;  // copied and released on the issuing thread only
  std::uint32_t used_k = 0;
  std::uint32_t size = 0;
  KernelKind kernel = KernelKind::kPortable;
  std::unique_ptr<vpu::Vreg> out = std::make_unique<vpu::Vreg>();  // swapped out by pops

  [[nodiscard]] TileJob job() const {
    return TileJob{shared_lhs ? &shared_lhs->value : &lhs,  masked ? &mask : nullptr, weights.get(), used_k, size,
                   shared_lhs ? &shared_lhs->scan : nullptr};
  }
  void release() {
    weights.reset();
    shared_lhs.reset();
  }
  static void compute(HostTask& task) {
    auto& s = static_cast<Slot&>(task);
    multiply_tile(s.kernel, s.job(), *s.out);
  }
};

namespace {
std::atomic<std::uint64_t> g_next_serial{0};
}  // namespace

void Mxu::SlotDeleter::operator()(Slot* slot) const {
  delete slot;
}

Mxu::Mxu(std::uint32_t size, std::uint32_t fifo_depth, MxuTiming timing)
    : serial_(g_next_serial.fetch_add(1, std::memory_order_relaxed)),
      size_(size),
      fifo_depth_(fifo_depth),
      timing_(timing),
      kernel_(default_kernel()) {
  if (size == 0 || size > kLanes) {
    throw std::invalid_argument(
        fmt::format("MXU size {} is outside 1..{} (the vreg lanes it is wired to)", size, kLanes));
  }
}

Mxu::Mxu(Mxu&&) noexcept = default;

Mxu::~Mxu() {
  wait_all();
}

void Mxu::wait_all() {
  for (Result& r : results_) {
    if (r.slot && r.slot->queued) wait_host_task(*r.slot, std::chrono::microseconds::max());
  }
  for (SlotPtr& s : draining_slots_) wait_host_task(*s, std::chrono::microseconds::max());
}

void Mxu::recycle_drained() {
  for (std::size_t i = 0; i < draining_slots_.size();) {
    if (draining_slots_[i]->done()) {
      draining_slots_[i]->release();
      spare_slots_.push_back(std::move(draining_slots_[i]));
      draining_slots_[i] = std::move(draining_slots_.back());
      draining_slots_.pop_back();
    } else {
      ++i;
    }
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
  if (staged_count_++ == 0) staged_transposed_ = transposed;
  if (compute_numerics && backend_ == nullptr) staged_.push_back(StagedPush{rows, transposed});
  if (backend_ != nullptr) backend_->push_weights(rows, cycle, start);
  return std::nullopt;
}

void Mxu::latch() {
  // The last push holds K rows 0..7 (or columns 0..7 when transposed).
  active_k_ = 0;
  active_columns_ = 0;
  const std::size_t n = staged_count_;
  const bool transposed = n > 0 && staged_transposed_;
  // Weights exist only where this unit computes (not timing-only, no backend).
  if (compute_numerics && backend_ == nullptr) {
    // A tile still held by a queued multiply is left to it.
    if (!weights_ || weights_.use_count() > 1) {
      if (weights_) spare_weights_.push_back(std::move(weights_));
      for (auto& spare : spare_weights_) {
        if (spare.use_count() == 1) {
          weights_ = std::move(spare);
          spare = std::move(spare_weights_.back());
          spare_weights_.pop_back();
          break;
        }
      }
      if (!weights_) weights_ = SingleThreadRc<WeightTile>::make();
    }
    build_weights(kernel_, staged_, size_, *weights_);
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
  staged_count_ = 0;
}

bool Mxu::defers_multiplies() const {
  return backend_ == nullptr && compute_numerics && host_threads() > 1;
}

std::optional<MxuFault> Mxu::matmul(const vpu::Vreg& lhs, const vpu::Vmask* k_mask, bool latch_first,
                                    std::uint64_t cycle) {
  return matmul(lhs, k_mask, latch_first, cycle, SingleThreadRc<SharedLhs>{});
}

std::optional<MxuFault> Mxu::matmul(const vpu::Vreg& lhs, const vpu::Vmask* k_mask, bool latch_first,
                                    std::uint64_t cycle, const SingleThreadRc<SharedLhs>& lhs_copy) {
  if (backend_ != nullptr && k_mask != nullptr) {
    return MxuFault{
        fmt::format("{} has no K mask: masked multiplies (vmatmul.msk) run only on the C++ MXU "
                    "(--mxu cpp)",
                    backend_->name())};
  }
  if (latch_first) latch();
  if (!has_active_) return MxuFault{"multiply with no weights latched (vmatpush, then a .vlgmr multiply)"};
  // Every K lane the multiply uses (below the array's width) must be covered by pushed weights.
  std::uint32_t used_k = k_mask == nullptr ? size_ : 0;  // unmasked: every lane
  for (std::size_t lane = 0; k_mask != nullptr && lane < size_; ++lane) {
    bool used = false;
    for (std::size_t row = 0; !used && row < kSublanes; ++row) used = k_mask->bits[row * kLanes + lane] != 0;
    if (used) used_k = static_cast<std::uint32_t>(lane + 1);
  }
  // A timing-only run computes no vector data, so a K mask there holds stale
  // bits (the vector ops that made it were skipped): only an unmasked
  // multiply's K can be checked, and the timing does not depend on it.
  if (used_k > active_k_ && (compute_numerics || k_mask == nullptr)) {
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
  Result r{feed + timing_.latency, nullptr};
  if (backend_ != nullptr) {
    backend_->multiply(lhs, latch_first, cycle, feed);
  } else if (compute_numerics && weights_) {
    if (spare_slots_.empty()) {
      r.slot.reset(new Slot);
      r.slot->run = &Slot::compute;
    } else {
      r.slot = std::move(spare_slots_.back());
      spare_slots_.pop_back();
    }
    Slot& s = *r.slot;
    s.queued = host_threads() > 1;
    if (s.queued) {
      if (lhs_copy) {
        s.shared_lhs = lhs_copy;
      } else {
        s.lhs = lhs;
      }
      s.masked = k_mask != nullptr;
      if (k_mask != nullptr) s.mask = *k_mask;
      s.weights = weights_;
      s.used_k = used_k;
      s.size = size_;
      s.kernel = kernel_;
      submit_host_task(s);
    } else {
      multiply_tile(kernel_, TileJob{&lhs, k_mask, weights_.get(), used_k, size_}, *s.out);
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

void Mxu::pop_into(vpu::Vreg& out) {
  Result& r = results_.front();
  if (backend_ != nullptr) {
    out = backend_->take_oldest();
  } else if (!r.slot) {
    if (compute_numerics) out = vpu::Vreg{};  // timing-only: the core discards results, nothing to write
  } else if (!r.slot->queued) {
    out = *r.slot->out;
    spare_slots_.push_back(std::move(r.slot));
  } else {
    Slot& s = *r.slot;
    if (!draining_slots_.empty()) recycle_drained();
    if (wait_host_task(s, kPatience)) {
      out = *s.out;
      s.release();
      spare_slots_.push_back(std::move(r.slot));
    } else {
      // The worker computing it stalled: the same inputs give the same bits here.
      multiply_tile(s.kernel, s.job(), out);
      draining_slots_.push_back(std::move(r.slot));
    }
  }
  results_.pop_front();
}

void Mxu::pop_into(std::unique_ptr<vpu::Vreg>& out) {
  Result& r = results_.front();
  if (backend_ != nullptr || !r.slot) {
    pop_into(*out);
    return;
  }
  Slot& s = *r.slot;
  if (s.queued) {
    if (!draining_slots_.empty()) recycle_drained();
    if (!wait_host_task(s, kPatience)) {
      // The worker computing it stalled (it still writes its buffer): as pop_into above.
      multiply_tile(s.kernel, s.job(), *out);
      draining_slots_.push_back(std::move(r.slot));
      results_.pop_front();
      return;
    }
    s.release();
  }
  std::swap(out, s.out);
  spare_slots_.push_back(std::move(r.slot));
  results_.pop_front();
}

vpu::Vreg Mxu::pop() {
  vpu::Vreg v;
  pop_into(v);
  return v;
}

}  // namespace tpuemu::mxu
