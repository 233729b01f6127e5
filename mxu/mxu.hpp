// One weight-stationary matrix unit (functional + timing state, no SystemC).
//
// Protocol (shared/llo/OPCODES.md "MXU protocol"):
//  1. push_weights: each push stages 8 K-rows x `size` output columns (one
//     vreg, lanes 0..size-1); pushes stack so that the LAST push holds K rows
//     0..7. A transposed push stages the transpose of a vreg: its lanes are K
//     rows and its 8 sublanes are 8 output columns (stacked the same way, last
//     push = columns 0..7).
//  2. latch: the staged weights become the active weights (gmra) and the
//     staging registers (msra) empty, so the next tile can be pushed while the
//     current one multiplies (double buffering).
//  3. matmul: an 8 x K LHS vreg times the active weights gives an 8 x size f32
//     result, queued in the result FIFO. An array narrower than a vreg
//     (size < 128) is wired to lanes 0..size-1: it reads K from those LHS
//     lanes only and writes its columns to those result lanes (the others +0).
//  4. pop: results leave in issue order.
//
// Numerics (documented order, bit-exact and reproducible): inputs are rounded
// to bf16 (nearest even); each product of two bf16 values is exact in f32; for
// every output element the products are summed in f32 in increasing K order
// starting from +0.0: acc = ((0 + a0*w0) + a1*w1) + ... . Vectorised across the
// output columns, sequential in K (mxu/matmul_kernel.hpp: a portable, an
// AVX2+FMA and an AVX-512 kernel, the last with an f64 path for tiles whose
// products may be denormal on Intel CPUs; the same bits).
//
// Host threads (common/host_pool.hpp): with host_threads() > 1 a multiply's
// arithmetic is queued for a worker at issue, on a copy of its LHS and the
// weights snapshotted at latch, and joined when the result is popped; every
// result is a pure function of those inputs, so the thread count changes no
// bit and no cycle. Timing-only units never queue work.
//
// Timing (MxuTiming; the RTL array in mxu/rtl has exactly this structure and
// the in-chip co-simulation checks it cycle for cycle):
//  * A push occupies the weight path for push_cycles from max(issue, weight
//    path free, end of the last latch wave).
//  * A multiply feeds its 8 LHS rows one per cycle from feed = max(issue, the
//    previous multiply's feed + cycles_per_tile, and for a latching one the
//    end of every earlier push); its result is ready `latency` after feed.
//  * A latching multiply blocks pushes until feed + latch_wave_cycles (the
//    latch travels through the array; 0 when the hardware hides it).
//
// Back ends: by default the unit computes results itself. With an
// ArrayBackend attached (the verilated RTL array, `--mxu rtl`), the rows go to
// the backend and results, with the cycle they become available, come from it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/single_thread_rc.hpp"
#include "mxu/matmul_kernel.hpp"
#include "vpu/vreg.hpp"

namespace tpuemu::mxu {

// A program error the core turns into a fault with location.
struct MxuFault {
  std::string message;
};

// A copy of an LHS register that the multiplies of one bundle share (the
// units fed the same register), with the kernel's scan of it, done once.
struct SharedLhs {
  explicit SharedLhs(const vpu::Vreg& v) : value(v) {}
  vpu::Vreg value;
  mutable LhsScan scan;  // filled by the first multiply that runs (matmul_kernel.hpp)
};

struct MxuTiming {
  std::uint64_t cycles_per_tile = 8;
  std::uint64_t push_cycles = 1;
  std::uint64_t latch_wave_cycles = 0;
  std::uint64_t latency = 0;
};

// A cycle-level array behind an Mxu (see mxu/rtl/rtl_backend.hpp). The Mxu
// checks the protocol first; a backend sees only well-formed full tiles.
class ArrayBackend {
 public:
  virtual ~ArrayBackend() = default;
  // 8 weight rows (sublane s = K row s of the push's block, lanes 0..n-1)
  // issued at `cycle`, fed no earlier than it; MxuTiming predicts the first
  // row at `predicted_start` (a backend may count disagreements).
  virtual void push_weights(const vpu::Vreg& rows, std::uint64_t cycle, std::uint64_t predicted_start) = 0;
  // 8 LHS rows (sublane = row, lanes 0..n-1 = K) issued at `cycle`, the
  // first one latching when `latch`; predicted first row at `predicted_feed`.
  virtual void multiply(const vpu::Vreg& lhs, bool latch, std::uint64_t cycle, std::uint64_t predicted_feed) = 0;
  // The first cycle at which the core can pop the oldest multiply not yet
  // taken, once the array has produced all its rows; nullopt until then.
  [[nodiscard]] virtual std::optional<std::uint64_t> oldest_ready_cycle() const = 0;
  // The oldest result (8 rows, lanes 0..n-1); only after oldest_ready_cycle().
  virtual vpu::Vreg take_oldest() = 0;
  // For messages: "the RTL array (mxu/rtl)".
  [[nodiscard]] virtual std::string name() const = 0;
  // Set when the array stopped making progress (the run faults with it).
  [[nodiscard]] virtual std::optional<std::string> failure() const = 0;
};

class Mxu {
 public:
  // `size`: array dimension, 1..vpu::kLanes (128 on v5e); `fifo_depth`:
  // result FIFO entries.
  Mxu(std::uint32_t size, std::uint32_t fifo_depth, MxuTiming timing);
  // Waits for the unit's queued multiplies.
  ~Mxu();
  Mxu(Mxu&&) noexcept;
  Mxu& operator=(Mxu&&) = delete;
  Mxu(const Mxu&) = delete;
  Mxu& operator=(const Mxu&) = delete;

  // `cycle`: the issue cycle. Faults (returned) only with a backend that
  // cannot take the push.
  std::optional<MxuFault> push_weights(const vpu::Vreg& rows, bool transposed, std::uint64_t cycle);
  // Multiplies `lhs` (8 rows x K lanes) by the active weights, after latching
  // the staged ones when `latch`. `k_mask`, when given, limits K per row to
  // the lanes whose mask bit is set (masked lanes add nothing, not even +0).
  // Returns a fault if the weights do not cover every K lane used, or no
  // weights are active.
  std::optional<MxuFault> matmul(const vpu::Vreg& lhs, const vpu::Vmask* k_mask, bool latch, std::uint64_t cycle);
  // The same; a multiply deferred to the host pool then holds `lhs_copy` (a
  // snapshot equal to `lhs` that nothing changes) instead of copying `lhs`,
  // so units multiplying one register in one bundle share one copy and one scan.
  std::optional<MxuFault> matmul(const vpu::Vreg& lhs, const vpu::Vmask* k_mask, bool latch, std::uint64_t cycle,
                                 const SingleThreadRc<SharedLhs>& lhs_copy);
  // Whether multiplies issued now are deferred to the host pool.
  [[nodiscard]] bool defers_multiplies() const;
  // Unique per unit constructed in this process (kept when moved).
  [[nodiscard]] std::uint64_t serial() const { return serial_; }
  // When the oldest result can be popped: its ready cycle, or (with a
  // backend still computing it) `now + 1`, to ask again then; nullopt when
  // no multiply is queued.
  [[nodiscard]] std::optional<std::uint64_t> head_ready_cycle(std::uint64_t now) const;
  vpu::Vreg pop();
  // pop() into `out` (saves a copy).
  void pop_into(vpu::Vreg& out);
  // pop() into `*out` (not null), or, when the result sits in a buffer of the
  // unit, by swapping that buffer with `out` (saves another).
  void pop_into(std::unique_ptr<vpu::Vreg>& out);

  [[nodiscard]] std::size_t queued() const { return results_.size(); }
  [[nodiscard]] bool fifo_full() const { return results_.size() >= fifo_depth_; }
  [[nodiscard]] std::uint32_t staged_pushes() const { return staged_count_; }
  [[nodiscard]] std::uint32_t size() const { return size_; }
  [[nodiscard]] const MxuTiming& timing() const { return timing_; }

  void attach_backend(ArrayBackend* backend) { backend_ = backend; }
  // The arithmetic kernel (default_kernel() unless set; the bits are the same).
  void set_kernel(KernelKind kind) { kernel_ = kind; }
  [[nodiscard]] KernelKind kernel() const { return kernel_; }
  [[nodiscard]] ArrayBackend* backend() const { return backend_; }

  // When this unit can accept its next multiply (issue interval).
  std::uint64_t next_matmul_cycle = 0;
  // The cycle the last multiply's first row was fed (its busy span starts).
  std::uint64_t last_feed_cycle = 0;
  std::uint64_t busy_cycles = 0;
  std::uint64_t matmuls = 0;

  // Timing-only mode: skip the arithmetic and keep no weights (pop leaves its
  // destination as it is: the core discards timing-only results), keep
  // protocol checks and timing identical.
  bool compute_numerics = true;

 private:
  struct Slot;  // a computed multiply: its inputs while queued, its result (mxu.cpp)
  struct SlotDeleter {
    void operator()(Slot* slot) const;
  };
  using SlotPtr = std::unique_ptr<Slot, SlotDeleter>;
  struct Result {
    std::uint64_t ready_cycle;
    SlotPtr slot;  // null: timing-only (pops +0) or a backend's result
  };
  void latch();
  void wait_all();
  void recycle_drained();

  std::uint64_t serial_;
  std::uint32_t size_;
  std::uint32_t fifo_depth_;
  MxuTiming timing_;
  KernelKind kernel_;
  // The staged pushes' rows, kept only where the unit computes (compute_numerics, no backend);
  // their count and the first's orientation always.
  std::vector<StagedPush> staged_;
  std::uint32_t staged_count_ = 0;
  bool staged_transposed_ = false;
  // Active weights, created at the first latch that computes; a latch writes
  // a tile no queued multiply still holds.
  SingleThreadRc<WeightTile> weights_;
  std::vector<SingleThreadRc<WeightTile>> spare_weights_;
  std::vector<SlotPtr> spare_slots_;     // popped slots, reused
  std::vector<SlotPtr> draining_slots_;  // popped while a late worker still computes them
  std::uint32_t active_k_ = 0;           // K rows covered by the active weights
  std::uint32_t active_columns_ = 0;     // output columns covered
  bool has_active_ = false;
  std::deque<Result> results_;
  std::uint64_t weight_path_free_ = 0;  // first cycle the weight path is free
  std::uint64_t latch_wave_end_ = 0;    // first cycle a push may start after the last latch
  ArrayBackend* backend_ = nullptr;
};

}  // namespace tpuemu::mxu
