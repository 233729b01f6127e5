#include "chip/core.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tpuemu::chip {
namespace {

bool completes_before(const PendingDma& a, const PendingDma& b) {
  return a.complete_cycle != b.complete_cycle ? a.complete_cycle < b.complete_cycle : a.sequence < b.sequence;
}

std::size_t class_index(isa::RegClass c) {
  return static_cast<std::size_t>(c);
}

}  // namespace

std::string_view to_string(StallCause c) {
  switch (c) {
    case StallCause::kRegister:
      return "register not ready";
    case StallCause::kFifo:
      return "FIFO empty";
    case StallCause::kUnitBusy:
      return "unit busy";
    case StallCause::kSyncFlag:
      return "sync-flag wait";
    case StallCause::kDmaQueue:
      return "DMA queue full";
    case StallCause::kDelay:
      return "vdelay";
  }
  return "?";
}

ChipShared::ChipShared(const ChipConfig& chip)
    : hbm(chip.hbm.size_bytes),
      hbm_port(chip.hbm.bandwidth / chip.clock_hz, chip.hbm.latency_s * chip.clock_hz, chip.dma.chunk_bytes) {}

Core::Core(const ChipConfig& chip_config, ChipShared& shared_state, std::uint32_t index, const ExecProgram& exec,
           RunOptions run_options)
    : chip(chip_config),
      shared(shared_state),
      core_index(index),
      options(run_options),
      sregs(chip_config.scalar.sregs),
      preds(chip_config.scalar.predicates),
      vregs(chip_config.vpu.vregs),
      masks(chip_config.vpu.mask_regs),
      vmem(chip_config.vmem.size_bytes),
      smem(chip_config.smem.size_bytes),
      flags(chip_config.sflag.count),
      vmem_port(chip_config.vmem.bandwidth / chip_config.clock_hz, static_cast<double>(chip_config.vmem.latency_cycles),
                chip_config.dma.chunk_bytes),
      permute_results(chip_config.xlu.count),
      transpose_results(chip_config.xlu.count),
      transposers(chip_config.xlu.count),
      permute_patterns(chip_config.xlu.count),
      program_(&exec) {
  if (chip.vpu.sublanes != vpu::kSublanes || chip.vpu.lanes != vpu::kLanes) {
    throw LoadError(fmt::format("{}: tpuemu models vregs of {} sublanes x {} lanes; the preset has {} x {}", chip.name,
                                vpu::kSublanes, vpu::kLanes, chip.vpu.sublanes, chip.vpu.lanes));
  }
  // An MXU wider than a vreg (v6e's 256x256) is not modelled: the core has
  // no MXU then, and isa::check_program refuses every MXU op before a run.
  if (chip.mxu.size <= vpu::kLanes) {
    const mxu::MxuTiming timing{chip.mxu.cycles_per_tile, chip.latency(LatencyClass::kMxuPush).value(),
                                chip.mxu.latch_wave_cycles, chip.latency(LatencyClass::kMxuMatmul).value()};
    mxus.reserve(chip.mxu.count);
    for (std::uint64_t i = 0; i < chip.mxu.count; ++i) {
      mxus.emplace_back(static_cast<std::uint32_t>(chip.mxu.size),
                        static_cast<std::uint32_t>(chip.mxu.result_fifo_depth), timing);
      mxus.back().compute_numerics = options.compute_numerics;
    }
  }
  const std::array<std::uint64_t, 4> counts{chip.scalar.sregs, chip.vpu.vregs, chip.vpu.mask_regs,
                                            chip.scalar.predicates};
  for (std::size_t c = 0; c < 4; ++c) {
    reg_ready_[c].assign(counts[c], 0);
    reg_writer_[c].assign(counts[c], nullptr);
  }
}

std::string Core::where(const ExecOp& op) const {
  return fmt::format("chip {} core {} bundle 0x{:x} ({}): {}", shared.chip_id, core_index,
                     program_->bundles[op.bundle].address, describe_source(*program_->program, *op.op),
                     isa::mnemonic_text(op.id, op.unit));
}

std::string Core::where_bundle(std::uint32_t bundle_index) const {
  const ExecBundle& b = program_->bundles[bundle_index];
  const isa::Bundle& src = program_->program->bundles[bundle_index];
  const std::string file = src.source.file < program_->program->files.size() ? program_->program->files[src.source.file]
                                                                             : std::string("<program>");
  return fmt::format("chip {} core {} bundle 0x{:x} ({}:{})", shared.chip_id, core_index, b.address, file,
                     src.source.line);
}

std::string Core::position() const {
  if (pc_ >= program_->bundles.size())
    return fmt::format("chip {} core {} (finished) at cycle {}", shared.chip_id, core_index, now_);
  return fmt::format("{} at cycle {}", where_bundle(pc_), now_);
}

bool Core::guard_true(const ExecOp& op) const {
  if (op.guard < 0) return true;
  const bool p = preds[static_cast<std::size_t>(op.guard)] != 0;
  return op.guard_negated ? !p : p;
}

std::uint32_t Core::scalar_operand(const ExecOp& op, std::size_t i) const {
  const isa::Operand& o = op.op->operands[i];
  if (o.kind == isa::Operand::Kind::kReg) {
    if (o.reg.cls == isa::RegClass::kScalar) return sregs[o.reg.index];
    if (o.reg.cls == isa::RegClass::kPredicate) return preds[o.reg.index];
  }
  return op.value[i];
}

void Core::write_sreg(const ExecOp& op, std::uint32_t value) {
  staged_scalars_.push_back({op.dest->index, value, false});
}

void Core::write_pred(const ExecOp& op, bool value) {
  staged_scalars_.push_back({op.dest->index, value ? 1U : 0U, true});
}

vpu::Vreg& Core::stage_vreg(const ExecOp& op) {
  if (!options.compute_numerics) {
    // Vector results of timing-only runs go to one sink that nothing reads
    // (per thread, so host threads never share it).
    thread_local vpu::Vreg discarded;
    return discarded;
  }
  return *stage_vreg_buffer(op);
}

std::unique_ptr<vpu::Vreg>& Core::stage_vreg_buffer(const ExecOp& op) {
  if (!options.compute_numerics) {
    thread_local std::unique_ptr<vpu::Vreg> discarded = std::make_unique<vpu::Vreg>();
    return discarded;
  }
  staged_vregs_.emplace_back(op.dest->index, vregs.take_spare());
  return staged_vregs_.back().second;
}

vpu::Vmask& Core::stage_mask(const ExecOp& op) {
  staged_masks_.emplace_back(op.dest->index, masks.take_spare());
  return *staged_masks_.back().second;
}

Core::StagedStore& Core::next_staged_store(std::uint64_t address, std::uint64_t bytes) {
  check_range(vmem, "VMEM", address, bytes);
  if (staged_store_count_ == staged_stores_.size()) staged_stores_.emplace_back();
  auto& s = staged_stores_[staged_store_count_++];
  s.address = address;
  s.size = bytes;
  return s;
}

std::uint8_t* Core::stage_vmem_write(const ExecOp& /*op*/, std::uint64_t address, std::uint64_t bytes, bool whole) {
  StagedStore& s = next_staged_store(address, bytes);
  s.source = nullptr;
  s.bytes.resize(bytes);
  if (!whole) std::memcpy(s.bytes.data(), vmem.data(address), bytes);  // keep bytes a masked store does not write
  return s.bytes.data();
}

void Core::stage_vmem_copy(const ExecOp& /*op*/, std::uint64_t address, const std::uint8_t* source,
                           std::uint64_t bytes) {
  next_staged_store(address, bytes).source = source;
}

void Core::check_range(const memory::DenseMemory& mem, std::string_view space, std::uint64_t address,
                       std::uint64_t bytes) const {
  if (!mem.in_range(address, bytes)) {
    throw ProgramFault(fmt::format("{} access out of range: bytes [0x{:x}, 0x{:x}) but {} holds 0x{:x} bytes", space,
                                   address, address + bytes, space, mem.size()));
  }
}

void Core::call(const ExecProgram& kernel, std::vector<std::uint32_t> args) {
  if (call_stack_.size() >= 16) throw ProgramFault("calls nested more than 16 deep");
  pending_call_ = std::make_pair(&kernel, std::move(args));
}

void Core::start(const ExecProgram& next) {
  program_ = &next;
  pc_ = 0;
  halted_ = false;
  branch_target_.reset();
  branch_delay_left_ = 0;
  operand_values.clear();
}

void Core::note_remote_issued(std::uint64_t bytes) {
  ++remote_in_flight_;
  stats_.remote_dmas += 1;
  stats_.dmas += 1;
  stats_.dma_bytes += bytes;
  stats_.ici_bytes += bytes;
}

void Core::remote_credit(std::uint32_t flag, std::int32_t value, double cycle) {
  flags[flag] = static_cast<std::int32_t>(static_cast<std::uint32_t>(flags[flag]) + static_cast<std::uint32_t>(value));
  last_delivery_cycle_ = std::max(last_delivery_cycle_, static_cast<std::uint64_t>(std::ceil(cycle)));
  if (waves_ != nullptr) wave_sync(static_cast<std::uint64_t>(std::ceil(cycle)));
}

std::uint64_t Core::block(BlockReason reason) {
  block_reason_ = reason;
  return kBlockedCycle;
}

std::uint64_t Core::ready_unless_delivered_earlier(std::uint64_t cycle) {
  delivery_may_precede_ = true;
  return cycle;
}

bool Core::may_proceed() const {
  if (blocked_op_ == nullptr || waiting_timed_) return true;
  const BlockReason& r = block_reason_;
  if (r.kind == BlockReason::Kind::kDmaQueue) return dmas_in_flight() < chip.dma.max_in_flight;
  // An upper bound of what flag_satisfied_at can find: the flag plus every
  // positive credit of a local DMA in flight (a spurious wake only costs time).
  std::int64_t reachable = flags[r.flag];
  for (const auto& d : pending_dmas_) {
    if (d.flag == r.flag && d.credit > 0) reachable += d.credit;
  }
  return reachable >= r.want;
}

std::string Core::blocked_on() const {
  if (blocked_op_ == nullptr) return {};
  const BlockReason& r = block_reason_;
  const std::string what =
      r.kind == BlockReason::Kind::kSyncFlag
          ? fmt::format("waits for sync flag {} to reach {}; it holds {}", r.flag, r.want, flags[r.flag])
          : fmt::format("waits for a DMA queue slot: {} remote DMAs in flight (dma.max_in_flight)", dmas_in_flight());
  return fmt::format("{}: {}", where(*blocked_op_), what);
}

void Core::wake() {
  if (last_delivery_cycle_ > now_) {
    stats_.stall_cycles[static_cast<std::size_t>(blocked_cause_)] += last_delivery_cycle_ - now_;
    now_ = last_delivery_cycle_;
  }
  blocked_op_ = nullptr;
}

void Core::resume_wait(bool deadline_reached) {
  waiting_timed_ = false;
  if (deadline_reached && wait_deadline_ > now_) {
    stats_.stall_cycles[static_cast<std::size_t>(blocked_cause_)] += wait_deadline_ - now_;
    now_ = wait_deadline_;
  }
  wake();
}

void Core::branch_to(std::uint32_t bundle_index) {
  if (branch_target_) throw ProgramFault("branch inside the delay slots of another branch");
  branch_target_ = bundle_index;
  branch_delay_left_ = static_cast<std::uint32_t>(chip.branch_delay_slots) + 1;
}

void Core::resolve(PendingDma& d) {
  if (d.resolved) return;
  // The ports forget a transfer once its completion is read: their tables
  // hold only what is in flight. An HBM completion beyond the horizon is an
  // estimate: the transfers stay known until it is final.
  double done = 0;
  bool final = true;
  if (d.hbm_transfer) {
    if (shared.horizon) shared.hbm_port.set_horizon(shared.horizon());
    const memory::DmaPort::Estimate e = shared.hbm_port.estimate(*d.hbm_transfer);
    done = e.time;
    final = e.final;
  }
  if (d.vmem_transfer) done = std::max(done, vmem_port.completion(*d.vmem_transfer));
  d.complete_cycle = static_cast<std::uint64_t>(std::ceil(done));
  if (!final) return;
  if (d.hbm_transfer) shared.hbm_port.forget(*d.hbm_transfer);
  if (d.vmem_transfer) vmem_port.forget(*d.vmem_transfer);
  d.resolved = true;
}

std::optional<std::uint64_t> Core::undecided_dmas() {
  std::optional<std::uint64_t> latest;
  for (auto& d : pending_dmas_) {
    resolve(d);
    if (!d.resolved) latest = std::max(latest.value_or(0), d.complete_cycle);
  }
  return latest;
}

std::uint64_t Core::earliest_dma_completion() {
  std::uint64_t earliest = UINT64_MAX;
  bool estimated = false;
  for (auto& d : pending_dmas_) {
    resolve(d);
    // An estimate is a lower bound: it decides only if it is the earliest.
    if (d.complete_cycle < earliest || (d.complete_cycle == earliest && !d.resolved)) {
      estimated = !d.resolved;
      earliest = d.complete_cycle;
    }
  }
  ready_estimated_ = ready_estimated_ || estimated;
  return pending_dmas_.empty() ? now_ : earliest;
}

std::uint64_t Core::issue_dma(PendingDma dma) {
  // The descriptor reaches the ports after the issue latency; each port
  // serves it round-robin with the other transfers in flight.
  const double start = static_cast<double>(now_ + chip.latency(LatencyClass::kDmaIssue).value());
  const bool src_hbm = dma.kind == PendingDma::Kind::kHbmToVmem || dma.kind == PendingDma::Kind::kHbmToSmem ||
                       dma.kind == PendingDma::Kind::kHbmToHbm;
  const bool dst_hbm = dma.kind == PendingDma::Kind::kVmemToHbm || dma.kind == PendingDma::Kind::kSmemToHbm ||
                       dma.kind == PendingDma::Kind::kHbmToHbm;
  const std::uint64_t total = dma.block_bytes * dma.blocks;
  const std::uint64_t hbm_passes = (src_hbm ? 1 : 0) + (dst_hbm ? 1 : 0);
  if (hbm_passes > 0) dma.hbm_transfer = shared.hbm_port.start(start, total * hbm_passes, core_index);
  if (hbm_passes < 2) dma.vmem_transfer = vmem_port.start(start, total);
  dma.sequence = dma_sequence_++;
  dma.issue_cycle = now_;
  if (profile != nullptr) {
    using S = MemoryProfile::Space;
    const S space = src_hbm ? S::kHbm : (dma.kind == PendingDma::Kind::kSmemToHbm ? S::kSmem : S::kVmem);
    profile_access(space, dma.src, (dma.blocks - 1) * dma.src_stride + dma.block_bytes, now_, false);
  }
  if (tracer_ != nullptr) {
    const auto free = std::find(dma_lane_used_.begin(), dma_lane_used_.end(), false);
    dma.lane = static_cast<std::int32_t>(free - dma_lane_used_.begin());
    if (free == dma_lane_used_.end()) {
      dma_lane_used_.push_back(true);
    } else {
      *free = true;
    }
  }
  stats_.dmas += 1;
  stats_.dma_bytes += total;
  stats_.hbm_bytes += total * hbm_passes;
  pending_dmas_.push_back(dma);
  dma_check_cycle_ = 0;  // the next apply_dmas_until scans again
  return dma.sequence;
}

std::optional<std::uint64_t> Core::flag_satisfied_at(std::uint32_t flag, std::int32_t value) {
  std::int64_t current = flags[flag];
  if (current >= value) return now_;
  std::vector<PendingDma*>& credits = credit_scratch_;  // kept: no allocation per readiness check
  credits.clear();
  for (auto& d : pending_dmas_) {
    if (d.flag != flag) continue;
    resolve(d);
    credits.push_back(&d);
  }
  std::sort(credits.begin(), credits.end(),
            [](const PendingDma* a, const PendingDma* b) { return completes_before(*a, *b); });
  bool estimated = false;
  for (const PendingDma* d : credits) {
    current += d->credit;
    // An estimate (a lower bound) may move behind the ones after it.
    estimated = estimated || !d->resolved;
    if (current >= value) {
      ready_estimated_ = ready_estimated_ || estimated;
      return std::max(now_, d->complete_cycle);
    }
  }
  return std::nullopt;
}

void Core::apply_dma(const PendingDma& d) {
  const bool smem_dst = d.kind == PendingDma::Kind::kHbmToSmem;
  const bool smem_src = d.kind == PendingDma::Kind::kSmemToHbm;
  // Timing-only runs skip bulk data but keep SMEM traffic, which control flow may depend on.
  if (options.compute_numerics || smem_dst) {
    for (std::uint64_t b = 0; b < d.blocks; ++b) {
      const std::uint64_t src = d.src + b * d.src_stride;
      const std::uint64_t dst = d.dst + b * d.dst_stride;
      const std::uint64_t n = d.block_bytes;
      switch (d.kind) {
        case PendingDma::Kind::kHbmToVmem:
          shared.hbm.read(src, std::span(vmem.data(dst), n));
          break;
        case PendingDma::Kind::kHbmToSmem:
          shared.hbm.read(src, std::span(smem.data(dst), n));
          break;
        case PendingDma::Kind::kVmemToHbm:
          shared.hbm.write(dst, std::span<const std::uint8_t>(vmem.data(src), n));
          break;
        case PendingDma::Kind::kSmemToHbm:
          shared.hbm.write(dst, std::span<const std::uint8_t>(smem.data(src), n));
          break;
        case PendingDma::Kind::kHbmToHbm:
          shared.hbm.copy_from(shared.hbm, src, dst, n);
          break;
      }
    }
  }
  (void)smem_src;
  flags[d.flag] += d.credit;
  if (profile != nullptr) {
    using S = MemoryProfile::Space;
    const bool dst_hbm = d.kind == PendingDma::Kind::kVmemToHbm || d.kind == PendingDma::Kind::kSmemToHbm ||
                         d.kind == PendingDma::Kind::kHbmToHbm;
    const S space = dst_hbm ? S::kHbm : (d.kind == PendingDma::Kind::kHbmToSmem ? S::kSmem : S::kVmem);
    profile_access(space, d.dst, (d.blocks - 1) * d.dst_stride + d.block_bytes, d.complete_cycle, true);
  }
  if (tracer_ != nullptr) trace_dma_landed(d);
  if (waves_ != nullptr) wave_sync(std::max(now_, d.complete_cycle));
}

void Core::apply_dmas_until(std::uint64_t cycle) {
  if (pending_dmas_.empty()) return;
  // No pending DMA completes before dma_check_cycle_ (a lower bound of each
  // one's complete_cycle, taken at the last scan) unless the HBM port's
  // horizon moved since and a DMA waited for it: nothing lands yet. (The
  // ports serve lazily, in ready order whatever the calls: they catch up
  // when a scan needs them.)
  const double horizon = shared.hbm_port.horizon();
  if (cycle < dma_check_cycle_ && !(dma_check_gated_ && horizon != dma_check_horizon_)) return;
  shared.hbm_port.advance_to(static_cast<double>(cycle));
  vmem_port.advance_to(static_cast<double>(cycle));
  std::vector<PendingDma>& landed = landed_scratch_;  // kept: no allocation per bundle
  landed.clear();
  std::uint64_t bound = UINT64_MAX;
  // The port has served every chunk that starts before min(cycle, horizon),
  // and cycle >= SystemC time >= a finite horizon: an HBM transfer not
  // completed now completes only once the horizon moves.
  const bool horizon_bound = std::isfinite(horizon) && horizon <= static_cast<double>(cycle);
  bool gated = false;
  for (auto it = pending_dmas_.begin(); it != pending_dmas_.end();) {
    if (!it->resolved) {
      const bool hbm = !it->hbm_transfer || shared.hbm_port.completed_at(*it->hbm_transfer);
      const bool vmem = !it->vmem_transfer || vmem_port.completed_at(*it->vmem_transfer);
      if (hbm && vmem) resolve(*it);  // both known: reading them serves nothing more
      if (!hbm && horizon_bound) {
        gated = true;
        ++it;
        continue;
      }
    }
    if (it->resolved && it->complete_cycle <= cycle) {
      landed.push_back(*it);
      it = pending_dmas_.erase(it);
      continue;
    }
    if (it->resolved) {
      bound = std::min(bound, it->complete_cycle);
    } else {
      // complete_cycle = ceil(the later port's completion) >= each bound.
      double lower = 0;
      if (it->hbm_transfer) lower = std::max(lower, shared.hbm_port.completion_lower_bound(*it->hbm_transfer));
      if (it->vmem_transfer) lower = std::max(lower, vmem_port.completion_lower_bound(*it->vmem_transfer));
      bound = std::min(bound, static_cast<std::uint64_t>(std::floor(lower)));
    }
    ++it;
  }
  dma_check_cycle_ = bound;
  dma_check_gated_ = gated;
  dma_check_horizon_ = horizon;
  std::sort(landed.begin(), landed.end(), completes_before);
  for (const auto& d : landed) apply_dma(d);
}

void Core::drain() {
  for (auto& d : pending_dmas_) resolve(d);
  std::sort(pending_dmas_.begin(), pending_dmas_.end(), completes_before);
  for (const auto& d : pending_dmas_) {
    now_ = std::max(now_, d.complete_cycle);
    apply_dma(d);
  }
  pending_dmas_.clear();
}

void Core::commit() {
  for (const auto& s : staged_scalars_) {
    if (s.predicate) {
      preds[s.index] = static_cast<std::uint8_t>(s.value);
    } else {
      sregs[s.index] = s.value;
    }
  }
  // Stores first: a staged copy may read a vreg this bundle also writes.
  for (std::size_t i = 0; i < staged_store_count_; ++i) {
    const StagedStore& s = staged_stores_[i];
    std::memcpy(vmem.data(s.address), s.source != nullptr ? s.source : s.bytes.data(), s.size);
  }
  for (auto& [index, result] : staged_vregs_) vregs.install(index, std::move(result));
  for (auto& [index, result] : staged_masks_) masks.install(index, std::move(result));
  staged_scalars_.clear();
  staged_vregs_.clear();
  staged_masks_.clear();
  staged_store_count_ = 0;
  // Scoreboard: destinations become readable after the op's latency.
  for (const ExecOp* op : issued_) {
    if (!op->dest) continue;
    const std::size_t c = class_index(op->dest->cls);
    reg_ready_[c][op->dest->index] = now_ + op->latency;
    reg_writer_[c][op->dest->index] = op;
  }
}

void Core::issue_bundle(const ExecBundle& bundle) {
  issued_.clear();
  const ExecOp* current = nullptr;
  try {
    for (std::uint32_t i = 0; i < bundle.op_count; ++i) {
      const ExecOp& op = program_->ops[bundle.first_op + i];
      if (!guard_true(op)) continue;
      current = &op;
      op.exec(*this, op);
      issued_.push_back(&op);
      ++stats_.slot_ops[static_cast<std::size_t>(op.info->slot)];
    }
  } catch (const std::exception& f) {  // ProgramFault, or a unit's rejection of malformed input
    throw LocatedFault(fmt::format("{}: {}", where(*current), f.what()));
  }
  stats_.ops += issued_.size();
  commit();
  if (tracer_ != nullptr) trace_bundle(bundle);
  if (waves_ != nullptr) wave_bundle(bundle);
}

Core::Status Core::run_until(std::uint64_t cycle_limit) {
  while (!halted_) {
    if (pc_ >= program_->bundles.size()) {
      if (call_stack_.empty()) {
        halted_ = true;
        break;
      }
      // A called kernel ended: back to the bundle after its call.
      Frame frame = std::move(call_stack_.back());
      call_stack_.pop_back();
      program_ = frame.program;
      pc_ = frame.return_pc;
      operand_values = std::move(frame.operand_values);
      continue;
    }
    const ExecBundle& bundle = program_->bundles[pc_];
    ready_estimated_ = false;
    delivery_may_precede_ = false;
    std::uint64_t delivery_deadline = 0;  // the latest cycle an op ready_unless_delivered_earlier gave
    // 1. When can this bundle issue?
    std::uint64_t issue = now_;
    StallCause cause = StallCause::kRegister;
    if (next_issue_not_before_ > issue) {
      issue = next_issue_not_before_;
      cause = StallCause::kDelay;
    }
    const ExecOp* waiting = nullptr;
    RegRef hazard{};
    const ExecOp* current = nullptr;
    try {
      for (std::uint32_t i = 0; i < bundle.op_count; ++i) {
        const ExecOp& op = program_->ops[bundle.first_op + i];
        current = &op;
        if (!guard_true(op)) continue;
        for (const RegRef& r : op.sources) {
          const std::uint64_t t = reg_ready_[class_index(r.cls)][r.index];
          if (t > issue) {
            issue = t;
            cause = StallCause::kRegister;
            waiting = &op;
            hazard = r;
          }
        }
        if (op.ready != nullptr) {
          const bool may_precede_before = delivery_may_precede_;
          const std::uint64_t t = op.ready(*this, op);
          if (t == kBlockedCycle) {
            blocked_cause_ = ready_cause_;
            blocked_op_ = &op;
            return Status::kBlocked;
          }
          if (delivery_may_precede_ && !may_precede_before) delivery_deadline = std::max(delivery_deadline, t);
          if (t > issue) {
            issue = t;
            cause = ready_cause_;
            waiting = &op;
          }
        }
      }
    } catch (const ProgramFault& f) {
      throw LocatedFault(fmt::format("{}: {}", where(*current), f.what()));
    }
    // Only where such an op decides the issue cycle: a later local cause (a
    // register, a unit) holds the bundle to its own cycle whatever arrives.
    // (--strict reports a register hazard that decides it, as below.)
    if (delivery_may_precede_ && issue > now_ && issue == delivery_deadline &&
        !(cause == StallCause::kRegister && options.strict)) {
      wait_deadline_ = issue;
      waiting_timed_ = true;
      blocked_cause_ = cause;
      blocked_op_ = waiting;
      return Status::kWaiting;
    }
    if (ready_estimated_) {
      // The issue cycle rests on an estimated DMA completion (arrivals not
      // known yet may delay it): stall towards it, and decide once SystemC
      // time has caught up with this core (the caller synchronises).
      const std::uint64_t until = std::min(issue, std::max(cycle_limit, now_));
      if (until > now_) {
        stats_.stall_cycles[static_cast<std::size_t>(cause)] += until - now_;
        now_ = until;
      }
      return Status::kRunning;
    }
    if (issue > now_) {
      if (cause == StallCause::kRegister && options.strict) {
        const ExecOp* writer = reg_writer_[class_index(hazard.cls)][hazard.index];
        throw LocatedFault(
            fmt::format("{}: register hazard (--strict): reads %{}{} at cycle {}, but {} writes it with latency {} so "
                        "it is ready at "
                        "cycle {}",
                        where(*waiting), isa::reg_prefix(hazard.cls), hazard.index, now_,
                        writer != nullptr ? where(*writer) : std::string("an earlier op"),
                        writer != nullptr ? writer->latency : 0, issue));
      }
      // Stall up to the issue cycle, or to the limit if that comes first (the
      // next call re-evaluates readiness from there).
      const std::uint64_t until = std::min(issue, std::max(cycle_limit, now_));
      stats_.stall_cycles[static_cast<std::size_t>(cause)] += until - now_;
      now_ = until;
      if (now_ < issue) return Status::kRunning;
    }
    if (now_ >= cycle_limit) return Status::kRunning;
    if (now_ >= options.max_cycles) [[unlikely]] {
      throw LocatedFault(fmt::format(
          "{}: the run reached the cycle limit ({} cycles, --max-cycles) with this bundle still to issue; an endless "
          "loop? A program that needs more cycles runs with a larger --max-cycles",
          where_bundle(pc_), options.max_cycles));
    }
    // 2. DMAs that completed by now land before the bundle reads memory.
    apply_dmas_until(now_);
    // 3. Issue.
    issue_bundle(bundle);
    ++stats_.bundles;
    ++now_;
    // 4. Next bundle, honouring branch delay slots; a call enters its kernel.
    if (branch_target_ && --branch_delay_left_ == 0) {
      pc_ = *branch_target_;
      branch_target_.reset();
    } else {
      ++pc_;
    }
    if (pending_call_) {
      if (branch_target_)
        throw LocatedFault(fmt::format("{}: a call inside branch delay slots", where_bundle(pc_ - 1)));
      call_stack_.push_back({program_, pc_, operand_values});
      program_ = pending_call_->first;
      operand_values.clear();
      for (std::size_t i = 0; i < pending_call_->second.size(); ++i) {
        operand_values[static_cast<std::uint32_t>(i)] = pending_call_->second[i];
      }
      pending_call_.reset();
      pc_ = 0;
    }
  }
  return Status::kHalted;
}

}  // namespace tpuemu::chip
