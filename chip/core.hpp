// One TensorCore as plain C++: architectural state, the issue loop (one
// bundle per cycle), the scoreboard and stall attribution. The SystemC shell
// (chip_module.hpp) only decides how far it may run ahead.
//
// Timing contract (ISA.md section 4): a bundle issues at the first cycle at
// which every op in it is ready: its source registers (scoreboard), and what
// its ReadyFn asks for (FIFO data, a free unit, a sync flag, a DMA queue
// slot). The stall cycles before it are charged to the cause that was
// satisfied last. All ops of a bundle read their sources before any writes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chip/exec_program.hpp"
#include "chip/fabric.hpp"
#include "chip/fault.hpp"
#include "chip/memory_profile.hpp"
#include "chip/run_options.hpp"
#include "chip/trace.hpp"
#include "chip/waveform.hpp"
#include "common/chip_config.hpp"
#include "memory/dense_memory.hpp"
#include "memory/dma_port.hpp"
#include "memory/sparse_memory.hpp"
#include "mxu/mxu.hpp"
#include "vpu/register_file.hpp"
#include "vpu/vreg.hpp"
#include "vpu/xlu.hpp"

namespace tpuemu::chip {

enum class StallCause : std::uint8_t {
  kRegister,  // a source register is not ready yet
  kFifo,      // a pop waits for its unit's result
  kUnitBusy,  // an MXU (or another unit) cannot accept the op yet
  kSyncFlag,  // dma.done.wait waits for DMA completion
  kDmaQueue,  // too many DMAs in flight
  kDelay,     // the cycles a vdelay N holds its bundle's successor (N - 1)
};
inline constexpr std::size_t kStallCauseCount = 6;
std::string_view to_string(StallCause c);

// What a chip's cores share: HBM and its bandwidth server.
struct ChipShared {
  explicit ChipShared(const ChipConfig& chip);
  memory::SparseMemory hbm;
  memory::DmaPort hbm_port;
  std::uint32_t chip_id = 0;
  // Set when the chip is part of a pod: its place in it and the network.
  PodIdentity identity;
  Fabric* fabric = nullptr;
  // Set when HBM transfers may start behind a core's back (ChipModule): the
  // cycle before which every transfer start is known, SystemC time while
  // remote DMAs may write this chip's HBM or another core may still start
  // one (each core runs up to a quantum ahead of SystemC time), +inf once
  // neither can happen. The HBM port serves only up to it, and a DMA
  // completion beyond it is an estimate the cores act on only once SystemC
  // time has reached it (README "ICI traffic and the HBM port"). Unset:
  // the port serves ahead freely.
  std::function<double()> horizon;
  // The source key of transfers that arrive over the network (DmaPort::start):
  // at the same ready time, after every core's.
  static constexpr std::uint32_t kArrivalSource = UINT32_MAX;
};

// A DMA the core issued: when it completes, its bytes land and its flag is
// credited. Its completion is known once the ports have served it.
struct PendingDma {
  std::uint64_t complete_cycle = 0;  // final once `resolved`; before that, once estimated, a lower bound
  bool resolved = false;
  std::optional<memory::DmaPort::TransferId> hbm_transfer;
  std::optional<memory::DmaPort::TransferId> vmem_transfer;
  std::uint64_t sequence = 0;  // issue order, for ties
  enum class Kind : std::uint8_t { kHbmToVmem, kVmemToHbm, kHbmToSmem, kSmemToHbm, kHbmToHbm } kind{};
  std::uint64_t src = 0;  // byte addresses
  std::uint64_t dst = 0;
  std::uint64_t block_bytes = 0;  // contiguous run
  std::uint64_t blocks = 1;
  std::uint64_t src_stride = 0;  // bytes between blocks
  std::uint64_t dst_stride = 0;
  std::uint32_t flag = 0;
  std::int32_t credit = 0;  // granules added to the flag
  std::uint64_t issue_cycle = 0;
  std::int32_t lane = -1;  // trace track (DMA lane), when tracing
};

struct CoreStats {
  std::uint64_t bundles = 0;
  std::uint64_t ops = 0;
  std::array<std::uint64_t, kStallCauseCount> stall_cycles{};
  std::array<std::uint64_t, kSlotClassCount> slot_ops{};
  std::uint64_t mxu_flops = 0;
  std::uint64_t vpu_flops = 0;
  std::uint64_t dma_bytes = 0;
  std::uint64_t dmas = 0;
  std::uint64_t hbm_bytes = 0;  // bytes this core moved to or from HBM
  std::uint64_t ici_bytes = 0;  // bytes this core sent over ICI
  std::uint64_t remote_dmas = 0;
  // Adds another core's counters (a chip's cores together).
  CoreStats& operator+=(const CoreStats& o) {
    bundles += o.bundles;
    ops += o.ops;
    for (std::size_t i = 0; i < stall_cycles.size(); ++i) stall_cycles[i] += o.stall_cycles[i];
    for (std::size_t i = 0; i < slot_ops.size(); ++i) slot_ops[i] += o.slot_ops[i];
    mxu_flops += o.mxu_flops;
    vpu_flops += o.vpu_flops;
    dma_bytes += o.dma_bytes;
    dmas += o.dmas;
    hbm_bytes += o.hbm_bytes;
    ici_bytes += o.ici_bytes;
    remote_dmas += o.remote_dmas;
    return *this;
  }
};

class Core {
 public:
  Core(const ChipConfig& chip, ChipShared& shared, std::uint32_t core_index, const ExecProgram& program,
       RunOptions options);

  // kBlocked: the next bundle waits for something only another chip can do
  // (a remote credit, a remote DMA leaving); run_until returns without
  // advancing time and the caller waits until a delivery, then calls wake().
  // kWaiting: the next bundle is ready at wait_deadline() by what this core
  // knows (a local DMA's completion), but a delivery may make it ready
  // earlier (a remote DMA leaving frees a queue slot, a remote credit
  // reaches the flag first). run_until returns without advancing time; the
  // caller lets SystemC time reach cycle(), calls run_until again (the
  // deliveries up to then are known), and if it is still kWaiting waits
  // until the deadline or a delivery, then calls resume_wait(). Stalling
  // towards the deadline instead would see a delivery only at the next
  // synchronisation: cycles would depend on the quantum.
  enum class Status { kRunning, kHalted, kBlocked, kWaiting };
  // Issues bundles until the program ends or the next bundle would issue at
  // or after `cycle_limit`. Throws LocatedFault on a program fault.
  Status run_until(std::uint64_t cycle_limit);
  // After a delivery to a blocked core: local time moves up to the latest
  // delivery (charged as a stall to what the core waited for).
  void wake();
  [[nodiscard]] std::uint64_t wait_deadline() const { return wait_deadline_; }
  // After kWaiting: local time moves to the deadline if SystemC time reached
  // it (`deadline_reached`), else as wake() does.
  void resume_wait(bool deadline_reached);
  // Tracing (chip/trace.hpp): events of this core go to `tracer` as process
  // shared.chip_id; null = off (one pointer check per bundle).
  void attach_tracer(Tracer* tracer);
  [[nodiscard]] Tracer* tracer() const { return tracer_; }
  struct TraceTracks {
    std::uint32_t issue = 0, vpu = 0, ldst = 0, eup = 0, regions = 0, remote = 0;
    std::vector<std::uint32_t> mxu, xlu, dma;
  };
  [[nodiscard]] const TraceTracks& trace_tracks() const { return tracks_; }
  // Memory profile (chip/memory_profile.hpp): DMA and vector accesses; null = off.
  MemoryProfile* profile = nullptr;
  void profile_access(MemoryProfile::Space space, std::uint64_t address, std::uint64_t bytes, std::uint64_t cycle,
                      bool is_write) {
    if (profile == nullptr) return;
    if (is_write) {
      profile->write(shared.chip_id, core_index, space, address, bytes, cycle);
    } else {
      profile->read(shared.chip_id, core_index, space, address, bytes, cycle);
    }
  }
  // Waveforms (chip/waveform.hpp): pc, per-MXU busy and result-FIFO depth,
  // VPU busy, DMAs in flight and the values of `flags`, under the VCD scope
  // `scope` ("chip0.core0"); null = off.
  void attach_waveform(Waveform* waves, const std::string& scope, const std::vector<std::uint32_t>& flags);
  // Records what changed since the last call, at `cycle`.
  void wave_sync(std::uint64_t cycle);
  // vtrace: a value with its top four bits set (0xF...) opens region
  // value & 0x0FFFFFFF; any other value closes the innermost open region.
  void trace_marker(std::uint32_t value);
  // What the blocked core waits for, with its location (deadlock reports).
  [[nodiscard]] std::string blocked_on() const;
  // Whether the op the core is blocked on may be ready now (its flag can
  // reach the value with what has arrived and the local DMAs in flight, or a
  // DMA queue slot is free); true when not blocked.
  [[nodiscard]] bool may_proceed() const;
  // Lets all outstanding DMAs land (after the last bundle).
  void drain();

  [[nodiscard]] std::uint64_t cycle() const { return now_; }
  // "chip 0 core 1 bundle 0x1c (prog.llo:12) at cycle 4096": where the core
  // stands, for reports of a run stopped from outside.
  [[nodiscard]] std::string position() const;
  [[nodiscard]] const CoreStats& stats() const { return stats_; }
  [[nodiscard]] bool halted() const { return halted_; }
  // Starts `next` at the current cycle with the core's state (registers,
  // VMEM, SMEM, flags, units) as the previous kernel left it, the way a
  // top-level program calls its kernels one after the other.
  void start(const ExecProgram& next);

  // ---- state, used by op semantics ----
  const ChipConfig& chip;
  ChipShared& shared;
  const std::uint32_t core_index;
  // The program being run; start() switches to the next kernel of a chain.
  [[nodiscard]] const ExecProgram& program() const { return *program_; }
  const RunOptions options;

  std::vector<std::uint32_t> sregs;
  std::vector<std::uint8_t> preds;
  vpu::RegisterFile<vpu::Vreg> vregs;  // allocated on first use
  vpu::RegisterFile<vpu::Vmask> masks;
  memory::DenseMemory vmem;
  memory::DenseMemory smem;
  std::vector<std::int32_t> flags;
  std::vector<mxu::Mxu> mxus;  // none when mxu.size exceeds a vreg's lanes (not modelled)
  memory::DmaPort vmem_port;
  // Operand bindings: index -> address (HBM in 512-byte units, VMEM in rows)
  // or scalar value, set by the host before the run.
  std::map<std::uint32_t, std::uint32_t> operand_values;
  // Top-level programs: the HBM address (512-byte units) of each parameter
  // (scalar_parameter_address k), and the kernels `inlined_call` may call, by name.
  std::vector<std::uint32_t> parameter_values;
  std::map<std::string, const ExecProgram*, std::less<>> callees;
  // Calls `kernel` with `args` as its operands once the current bundle has
  // issued; the kernel returns to the bundle after the call.
  void call(const ExecProgram& kernel, std::vector<std::uint32_t> args);

  // Unit result FIFOs, oldest first, each at most its preset's depth
  // (eup.fifo_depth, xlu.fifo_depth): a pop takes the oldest result, and a
  // pop whose token names another push is a fault (the FIFO pops in issue
  // order); `token` is the producing op's (0 for transposes, popped untokened).
  struct TokenResult {
    std::uint64_t ready_cycle;
    vpu::Vreg value;
    std::uint32_t token = 0;
  };
  std::deque<TokenResult> eup_results;
  std::vector<std::deque<TokenResult>> permute_results;                            // per XLU
  std::vector<std::deque<TokenResult>> transpose_results;                          // per XLU
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint32_t>> scalar_pushes;  // vpush -> spop
  std::vector<vpu::Transposer> transposers;                                        // per XLU
  std::vector<std::map<std::uint32_t, vpu::Vreg>> permute_patterns;                // per XLU, by token

  // The core's random number generator (setrngseed / vrng): xorshift32, deterministic.
  void seed_random(std::uint32_t seed) { rng_state_ = seed == 0 ? 0x9E3779B9U : seed; }
  std::uint32_t next_random() {
    rng_state_ ^= rng_state_ << 13;
    rng_state_ ^= rng_state_ >> 17;
    rng_state_ ^= rng_state_ << 5;
    return rng_state_;
  }

  // ---- helpers for semantics ----
  [[nodiscard]] std::uint64_t now() const { return now_; }
  // Operand i as a 32-bit value: register contents or resolved immediate.
  [[nodiscard]] std::uint32_t scalar_operand(const ExecOp& op, std::size_t i) const;
  // Staged writes, applied after every op of the bundle has read its sources.
  void write_sreg(const ExecOp& op, std::uint32_t value);
  void write_pred(const ExecOp& op, bool value);
  // Timing-only runs (compute_numerics false) discard vector results and
  // move no vector data: vregs keep stale values, which only data-dependent
  // values read back into scalars (vpush) could notice.
  vpu::Vreg& stage_vreg(const ExecOp& op);
  // The staged result's buffer itself, for a unit that swaps in a buffer it
  // computed (the MXU's pops); valid until the next stage_vreg*.
  std::unique_ptr<vpu::Vreg>& stage_vreg_buffer(const ExecOp& op);
  vpu::Vmask& stage_mask(const ExecOp& op);
  // Stages a VMEM write of `bytes` at byte address `address` (checked). The
  // buffer starts as the bytes there now (a masked store keeps what it does
  // not write), or undefined when `whole` (the caller writes every byte).
  std::uint8_t* stage_vmem_write(const ExecOp& op, std::uint64_t address, std::uint64_t bytes, bool whole = false);
  // Stages a VMEM write of the `bytes` bytes at `source` (checked), copied
  // when the bundle commits: `source` must hold them unchanged until then (a
  // vreg does: registers change only at commit, after the stores).
  void stage_vmem_copy(const ExecOp& op, std::uint64_t address, const std::uint8_t* source, std::uint64_t bytes);
  void set_stall_cause(StallCause c) { ready_cause_ = c; }
  // The bundle issuing now lasts `cycles` cycles (vdelay): the next one
  // issues no earlier than now() + cycles. 0 and 1 change nothing.
  void hold_next_bundle(std::uint64_t cycles) {
    next_issue_not_before_ = std::max(next_issue_not_before_, now_ + cycles);
  }
  void record_mxu_flops(std::uint64_t f) { stats_.mxu_flops += f; }
  void record_vpu_flops(std::uint64_t f) { stats_.vpu_flops += f; }

  // DMAs.
  [[nodiscard]] std::size_t dmas_in_flight() const { return pending_dmas_.size() + remote_in_flight_; }
  [[nodiscard]] std::size_t local_dmas_in_flight() const { return pending_dmas_.size(); }
  // Remote DMAs: sending one counts it in flight until the network reports
  // it sent; credits from the network land at their (fractional) cycle.
  void note_remote_issued(std::uint64_t bytes);
  void note_remote_sent() { --remote_in_flight_; }
  void remote_credit(std::uint32_t flag, std::int32_t value, double cycle);
  // Readiness functions return this when only another chip can make the op
  // ready; `reason` says what it waits for.
  static constexpr std::uint64_t kBlockedCycle = UINT64_MAX;
  // What a blocked op waits for; formatted only for a deadlock report.
  struct BlockReason {
    enum class Kind : std::uint8_t { kSyncFlag, kDmaQueue } kind = Kind::kSyncFlag;
    std::uint32_t flag = 0;  // kSyncFlag: the flag and the value it must reach
    std::int32_t want = 0;
  };
  std::uint64_t block(BlockReason reason);
  // Readiness functions return this when the op is ready at `cycle` (> now)
  // by what this core knows, and a delivery may make it ready earlier
  // (run_until then returns kWaiting).
  std::uint64_t ready_unless_delivered_earlier(std::uint64_t cycle);
  [[nodiscard]] bool in_pod() const { return shared.fabric != nullptr; }
  [[nodiscard]] bool has_remote_dmas_in_flight() const { return remote_in_flight_ > 0; }
  [[nodiscard]] std::uint64_t earliest_dma_completion();
  // Starts a DMA issued now on the ports; its completion is known once the
  // ports have served it (resolve). Returns its issue sequence number.
  std::uint64_t issue_dma(PendingDma dma);
  // The cycle at which `flag` will hold at least `value` given the DMAs in
  // flight; nullopt if no DMA in flight can make it.
  [[nodiscard]] std::optional<std::uint64_t> flag_satisfied_at(std::uint32_t flag, std::int32_t value);
  // Before the end of a program: the latest estimated completion of the
  // DMAs in flight whose completion is not final yet (the caller lets
  // SystemC time reach it, then asks again); nullopt when all are final.
  [[nodiscard]] std::optional<std::uint64_t> undecided_dmas();
  // Branch with delay slots, taken after the current bundle's delay slots.
  void branch_to(std::uint32_t bundle_index);
  // Checks an address range; throws ProgramFault with the space named.
  void check_range(const memory::DenseMemory& mem, std::string_view space, std::uint64_t address,
                   std::uint64_t bytes) const;

 private:
  void issue_bundle(const ExecBundle& bundle);
  void trace_bundle(const ExecBundle& bundle);
  void wave_bundle(const ExecBundle& bundle);
  void trace_dma_landed(const PendingDma& dma);
  void commit();
  void apply_dmas_until(std::uint64_t cycle);
  void apply_dma(const PendingDma& dma);
  void resolve(PendingDma& dma);
  [[nodiscard]] bool guard_true(const ExecOp& op) const;
  [[nodiscard]] std::string where(const ExecOp& op) const;
  [[nodiscard]] std::string where_bundle(std::uint32_t bundle_index) const;

  const ExecProgram* program_;
  struct Frame {
    const ExecProgram* program;
    std::uint32_t return_pc;
    std::map<std::uint32_t, std::uint32_t> operand_values;
  };
  std::vector<Frame> call_stack_;
  std::optional<std::pair<const ExecProgram*, std::vector<std::uint32_t>>> pending_call_;
  std::uint32_t rng_state_ = 0x9E3779B9U;
  std::uint64_t now_ = 0;
  std::uint32_t pc_ = 0;  // bundle index
  bool halted_ = false;
  std::optional<std::uint32_t> branch_target_;
  std::uint32_t branch_delay_left_ = 0;
  std::uint64_t next_issue_not_before_ = 0;  // hold_next_bundle
  CoreStats stats_;
  StallCause ready_cause_ = StallCause::kRegister;
  // Set by a readiness check whose answer rests on an estimated DMA
  // completion (ChipShared::horizon): the bundle waits for SystemC time.
  bool ready_estimated_ = false;
  // Set by ready_unless_delivered_earlier: the issue cycle is a deadline.
  bool delivery_may_precede_ = false;
  std::uint64_t wait_deadline_ = 0;
  bool waiting_timed_ = false;  // between kWaiting and resume_wait

  // Scoreboard: cycle at which each register becomes readable, and which op wrote it.
  std::array<std::vector<std::uint64_t>, 4> reg_ready_;
  std::array<std::vector<const ExecOp*>, 4> reg_writer_;

  // Staged results of the bundle being issued.
  struct StagedScalar {
    std::uint16_t index;
    std::uint32_t value;
    bool predicate;
  };
  std::vector<StagedScalar> staged_scalars_;
  // Vector results go to spare buffers of the register files, installed
  // (renamed, not copied) at commit.
  std::vector<std::pair<std::uint16_t, vpu::RegisterFile<vpu::Vreg>::Buffer>> staged_vregs_;
  std::vector<std::pair<std::uint16_t, vpu::RegisterFile<vpu::Vmask>::Buffer>> staged_masks_;
  struct StagedStore {
    std::uint64_t address;
    std::uint64_t size;
    const std::uint8_t* source;  // stage_vmem_copy's bytes, or null: `bytes`
    std::vector<std::uint8_t> bytes;
  };
  std::vector<StagedStore> staged_stores_;
  std::size_t staged_store_count_ = 0;
  // The next staged store slot for [address, +bytes) of VMEM (range checked).
  StagedStore& next_staged_store(std::uint64_t address, std::uint64_t bytes);
  std::vector<const ExecOp*> issued_;

  std::vector<PendingDma> pending_dmas_;  // issue order
  std::uint64_t dma_check_cycle_ = 0;     // apply_dmas_until: nothing lands before it
  // apply_dmas_until: some DMA waits for the HBM port's horizon to move past
  // the value it had at the last scan (nothing about it changes before).
  bool dma_check_gated_ = false;
  double dma_check_horizon_ = 0;
  std::vector<PendingDma> landed_scratch_;   // apply_dmas_until's work list
  std::vector<PendingDma*> credit_scratch_;  // flag_satisfied_at's work list
  std::uint64_t dma_sequence_ = 0;
  std::size_t remote_in_flight_ = 0;
  Tracer* tracer_ = nullptr;
  Waveform* waves_ = nullptr;
  struct WaveSignal {
    std::uint32_t id = 0;
    std::uint32_t last = 0;
  };
  struct WaveSignals {
    WaveSignal pc, vpu, dmas;
    std::vector<WaveSignal> mxu_busy, mxu_fifo;
    std::vector<std::pair<std::uint32_t, WaveSignal>> flags;  // flag index -> signal
  } wave_;
  void wave_set(WaveSignal& s, std::uint64_t cycle, std::uint32_t value);
  TraceTracks tracks_;
  std::vector<bool> dma_lane_used_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> open_regions_;  // (id, begin cycle)
  std::uint64_t last_delivery_cycle_ = 0;
  BlockReason block_reason_;
  const ExecOp* blocked_op_ = nullptr;  // set while blocked
  StallCause blocked_cause_ = StallCause::kSyncFlag;
};

}  // namespace tpuemu::chip
