// The core's trace events (chip/trace.hpp), kept out of the issue loop: the
// loop only checks whether a tracer is attached.
#include <fmt/format.h>

#include <map>
#include <optional>

#include "chip/core.hpp"

namespace tpuemu::chip {

void Core::attach_tracer(Tracer* tracer) {
  tracer_ = tracer;
  if (tracer_ == nullptr) return;
  const std::uint32_t pid = shared.chip_id;
  auto track = [&](const std::string& name) { return tracer_->track(pid, fmt::format("core{} {}", core_index, name)); };
  tracks_.issue = track("issue");
  tracks_.regions = track("vtrace regions");
  for (std::uint64_t m = 0; m < chip.mxu.count; ++m) tracks_.mxu.push_back(track(fmt::format("mxu{}", m)));
  tracks_.vpu = track("vpu");
  tracks_.ldst = track("vld/vst");
  for (std::uint64_t x = 0; x < chip.xlu.count; ++x) tracks_.xlu.push_back(track(fmt::format("xlu{}", x)));
  tracks_.eup = track("eup");
  for (std::uint64_t d = 0; d < chip.dma.max_in_flight; ++d) tracks_.dma.push_back(track(fmt::format("dma{}", d)));
  tracks_.remote = track("remote dma");
}

void Core::trace_bundle(const ExecBundle& bundle) {
  const double at = static_cast<double>(now_);
  // One span per unit track per bundle (named by its ops), so spans on a
  // track never overlap; the MXUs' multiplies hold them cycles_per_tile.
  std::map<std::uint32_t, std::pair<std::string, const ExecOp*>> per_track;
  std::string ops;
  for (const ExecOp* op : issued_) {
    const std::string name = isa::mnemonic_text(op->id, op->unit);
    if (op->info->slot != SlotClass::kPseudo) ops += (ops.empty() ? "" : " ; ") + name;
    std::optional<std::uint32_t> track;
    switch (op->info->slot) {
      case SlotClass::kMxu: {
        const bool multiply = op->id == isa::OpId::kVmatmul || op->id == isa::OpId::kVmatmulLatch ||
                              op->id == isa::OpId::kVmatmulMsk || op->id == isa::OpId::kVmatmulMskLatch;
        if (multiply && op->unit < tracks_.mxu.size() && op->unit < mxus.size()) {
          const auto feed = static_cast<double>(mxus[op->unit].last_feed_cycle);
          tracer_->span(shared.chip_id, tracks_.mxu[op->unit], "matmul", feed,
                        feed + static_cast<double>(chip.mxu.cycles_per_tile),
                        TraceSource{program_->program, op->op, bundle.address});
        }
        break;
      }
      case SlotClass::kValu:
        track = tracks_.vpu;
        break;
      case SlotClass::kLoad:
      case SlotClass::kStore:
        track = tracks_.ldst;
        break;
      case SlotClass::kXlu:
        if (op->unit < tracks_.xlu.size()) track = tracks_.xlu[op->unit];
        break;
      case SlotClass::kEup:
        track = tracks_.eup;
        break;
      default:
        break;
    }
    if (!track) continue;
    auto& [names, first] = per_track[*track];
    names += (names.empty() ? "" : " ; ") + name;
    if (first == nullptr) first = op;
  }
  for (const auto& [track, entry] : per_track) {
    tracer_->span(shared.chip_id, track, entry.first, at, at + 1,
                  TraceSource{program_->program, entry.second->op, bundle.address});
  }
  if (ops.empty()) ops = "(empty bundle)";
  // One issue span per bundle; with aggregation, runs of identical bundles merge.
  tracer_->span(shared.chip_id, tracks_.issue, ops, at, at + 1,
                TraceSource{program_->program, issued_.empty() ? nullptr : issued_.front()->op, bundle.address});
}

void Core::wave_bundle(const ExecBundle& bundle) {
  const std::uint64_t at = now_;
  waves_->change(wave_.pc.id, static_cast<double>(at), bundle.address);
  bool vpu = false;
  for (const ExecOp* op : issued_) {
    vpu = vpu || op->info->slot == SlotClass::kValu;
    const bool multiply = op->id == isa::OpId::kVmatmul || op->id == isa::OpId::kVmatmulLatch ||
                          op->id == isa::OpId::kVmatmulMsk || op->id == isa::OpId::kVmatmulMskLatch;
    if (multiply && op->unit < wave_.mxu_busy.size() && op->unit < mxus.size()) {
      // Busy for cycles_per_tile; a multiply issued as it ends keeps it high.
      const std::uint64_t feed = mxus[op->unit].last_feed_cycle;
      waves_->change(wave_.mxu_busy[op->unit].id, static_cast<double>(feed), 1);
      waves_->change(wave_.mxu_busy[op->unit].id, static_cast<double>(feed + chip.mxu.cycles_per_tile), 0);
    }
  }
  if (vpu) {
    waves_->change(wave_.vpu.id, static_cast<double>(at), 1);
    waves_->change(wave_.vpu.id, static_cast<double>(at + 1), 0);
  }
  wave_sync(at);
}

void Core::trace_dma_landed(const PendingDma& dma) {
  if (dma.lane < 0) return;
  const auto lane = static_cast<std::size_t>(dma.lane);
  dma_lane_used_[lane] = false;
  if (lane >= tracks_.dma.size())
    tracks_.dma.push_back(tracer_->track(shared.chip_id, fmt::format("core{} dma{}", core_index, lane)));
  static constexpr std::array kKinds{"hbm->vmem", "vmem->hbm", "hbm->smem", "smem->hbm", "hbm->hbm"};
  tracer_->span(shared.chip_id, tracks_.dma[lane],
                fmt::format("{} {} B", kKinds[static_cast<std::size_t>(dma.kind)], dma.block_bytes * dma.blocks),
                static_cast<double>(dma.issue_cycle),
                static_cast<double>(std::max(dma.complete_cycle, dma.issue_cycle + 1)));
}

void Core::trace_marker(std::uint32_t value) {
  if ((value >> 28) == 0xF) {
    open_regions_.emplace_back(value & 0x0FFFFFFFU, now_);
    return;
  }
  if (open_regions_.empty()) return;
  const auto [id, begin] = open_regions_.back();
  open_regions_.pop_back();
  if (tracer_ != nullptr) {
    tracer_->span(shared.chip_id, tracks_.regions, fmt::format("region {}", id), static_cast<double>(begin),
                  static_cast<double>(now_ + 1));
  }
}

void Core::attach_waveform(Waveform* waves, const std::string& scope, const std::vector<std::uint32_t>& traced_flags) {
  waves_ = waves;
  if (waves_ == nullptr) return;
  wave_.pc.id = waves_->word(scope + ".pc", shared.chip_id);
  for (std::uint64_t m = 0; m < chip.mxu.count; ++m) {
    wave_.mxu_busy.push_back({waves_->bit(fmt::format("{}.mxu{}.busy", scope, m), shared.chip_id), 0});
    wave_.mxu_fifo.push_back({waves_->word(fmt::format("{}.mxu{}.result_fifo", scope, m), shared.chip_id), 0});
  }
  wave_.vpu.id = waves_->bit(scope + ".vpu.busy", shared.chip_id);
  wave_.dmas.id = waves_->word(scope + ".dmas_in_flight", shared.chip_id);
  for (const std::uint32_t f : traced_flags) {
    if (f < flags.size())
      wave_.flags.emplace_back(f, WaveSignal{waves_->word(fmt::format("{}.sflag{}", scope, f), shared.chip_id), 0});
  }
}

void Core::wave_set(WaveSignal& s, std::uint64_t cycle, std::uint32_t value) {
  if (s.last == value) return;
  s.last = value;
  waves_->change(s.id, static_cast<double>(cycle), value);
}

void Core::wave_sync(std::uint64_t cycle) {
  for (std::size_t m = 0; m < mxus.size(); ++m) {
    wave_set(wave_.mxu_fifo[m], cycle, static_cast<std::uint32_t>(mxus[m].queued()));
  }
  wave_set(wave_.dmas, cycle, static_cast<std::uint32_t>(dmas_in_flight()));
  for (auto& [f, signal] : wave_.flags) wave_set(signal, cycle, static_cast<std::uint32_t>(flags[f]));
}

}  // namespace tpuemu::chip
