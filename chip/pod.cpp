#include "chip/pod.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_map>

#include "chip/chip_module.hpp"
#include "chip/host_io.hpp"
#include "chip/host_memory.hpp"
#include "chip/run.hpp"
#include "chip/simulate.hpp"

namespace tpuemu::chip {
namespace {

constexpr std::uint64_t kAlign = 4096;

// The pod as a SystemC module: the chips and one process for the network,
// which implements the cores' Fabric.
class PodModule : public sc_core::sc_module, public Fabric {
 public:
  PodModule(sc_core::sc_module_name name, const PodRequest& request, const std::vector<const ExecProgram*>& programs,
            const std::vector<std::map<std::uint32_t, std::uint32_t>>& operand_values)
      : sc_core::sc_module(name),
        request_(request),
        network_(request.topology, ici::routing_policy(request.routing),
                 ici::Network::Config{request.chip.ici.link_bandwidth / request.chip.clock_hz,
                                      request.chip.ici.hop_latency_s * request.chip.clock_hz,
                                      request.chip.ici.packet_bytes}) {
    const ici::Topology& t = request.topology;
    const std::uint64_t hop = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::floor(request.chip.ici.hop_latency_s * request.chip.clock_hz)));
    const std::uint64_t quantum = request.vcd.empty() ? std::min(request.quantum_cycles, hop) : 1;
    for (std::uint32_t id = 0; id < t.chip_count(); ++id) {
      chips.push_back(std::make_unique<ChipModule>(sc_core::sc_gen_unique_name("chip"), request.chip, programs,
                                                   operand_values, request.options, quantum));
      ChipShared& shared = chips.back()->shared;
      shared.chip_id = id;
      shared.identity.chip = id;
      const ici::Coords c = t.coords(ChipId(id));
      for (std::size_t a = 0; a < ici::kMaxAxes; ++a) {
        shared.identity.coords[a] = c[a];
        shared.identity.dims[a] = a < t.axis_count() ? t.length(a) : 1;
      }
      shared.identity.chip_count = t.chip_count();
      shared.fabric = this;
    }
    if (request.tracer != nullptr) attach_tracer(*request.tracer);
    if (!request.vcd.empty()) attach_waveform();

    sc_core::sc_spawn([this] { network_thread(); }, "network");
  }

  void send(RemoteSend message) override {
    if (request_.tracer != nullptr) message.trace_id = sends_++;
    const auto key = network_.send(ChipId(message.src_chip), ChipId(message.dst_chip), message.bytes,
                                   static_cast<double>(message.start_cycle), message.src_core);
    in_flight_.emplace(key, std::move(message));
    wake_network_.notify(sc_core::SC_ZERO_TIME);
  }

  std::vector<std::unique_ptr<ChipModule>> chips;
  double last_delivery = 0;
  // The network's own failure (a trace over its limit): the run stops.
  std::optional<std::string> fault;
  [[nodiscard]] const ici::Network& network() const { return network_; }
  [[nodiscard]] bool waveform_overflowed() const { return waves_ != nullptr && waves_->overflowed(); }

 private:
  // Catches what the network or a delivery throws and never returns
  // (chip/simulate.hpp): after a fault it waits on an event nobody notifies.
  void network_thread() {
    try {
      network_loop();
    } catch (const std::exception& e) {
      fault = fmt::format("ICI network: {}", e.what());
      sc_core::sc_stop();
    }
    sc_core::wait(stopped_);
  }

  // Returns only after a fault it recorded. SystemC never returns from a
  // thread that waits at the end of the simulation: what the loop owns lives
  // in members (no leak at exit).
  void network_loop() {
    std::vector<ici::Network::Completion>& done = completions_;
    for (;;) {
      const auto next = network_.next_event_time();
      if (!next) {
        sc_core::wait(wake_network_);
        continue;
      }
      const sc_core::sc_time at = time_of_cycle(*next, request_.chip.clock_hz);
      if (at > sc_core::sc_time_stamp()) {
        sc_core::wait(at - sc_core::sc_time_stamp(), wake_network_);
        continue;
      }
      // The events of this time go as one batch in key order, so it must
      // hold every one: the cores still to run at this time may send now.
      if (sc_core::sc_pending_activity_at_current_time()) {
        sc_core::wait(sc_core::SC_ZERO_TIME);
        continue;
      }
      done.clear();
      network_.advance_to(*next, done);
      for (const auto& c : done) deliver(c);
      if (request_.tracer != nullptr && request_.tracer->overflowed()) {
        fault = request_.tracer->overflow_message();
        sc_core::sc_stop();
        return;
      }
    }
  }

  void attach_tracer(Tracer& tracer) {
    for (auto& chip : chips) {
      const ChipShared& shared = chip->shared;
      const auto& c = shared.identity.coords;
      chip->attach_tracer(tracer,
                          fmt::format("chip {} ({},{},{}) {}", shared.chip_id, c[0], c[1], c[2], request_.chip.name));
      arrival_tracks_.push_back(tracer.track(shared.chip_id, "ici arrivals"));
    }
    network_.on_packet = [&tracer](ChipId from, std::uint8_t axis, std::int8_t direction, double begin, double end,
                                   std::uint64_t bytes) {
      const std::uint32_t track =
          tracer.track(from.value(), fmt::format("ici {}{}", direction > 0 ? '+' : '-', ici::axis_name(axis)));
      tracer.span(from.value(), track, "packets", begin, end);
      tracer.add_bytes(from.value(), "ICI bandwidth out", begin, end, static_cast<double>(bytes));
    };
  }

  // Per chip its cores' signals and one busy bit per outgoing link direction.
  void attach_waveform() {
    waves_ = std::make_unique<Waveform>("waves", request_.vcd, request_.chip.clock_hz, request_.vcd_max_changes);
    const ici::Topology& t = request_.topology;
    for (auto& chip : chips) {
      chip->attach_waveform(*waves_);
      for (std::uint8_t axis = 0; axis < t.axis_count(); ++axis) {
        for (const int dir : {-1, 1}) {
          if (!t.neighbour(ChipId(chip->shared.chip_id), axis, dir)) continue;
          link_signals_[{chip->shared.chip_id, axis * 2U + (dir > 0 ? 1U : 0U)}] = waves_->bit(fmt::format(
              "chip{}.ici.{}{}.busy", chip->shared.chip_id, dir > 0 ? "plus_" : "minus_", ici::axis_name(axis)));
        }
      }
    }
    previous_on_packet_ = network_.on_packet;
    network_.on_packet = [this](ChipId from, std::uint8_t axis, std::int8_t direction, double begin, double end,
                                std::uint64_t bytes) {
      if (previous_on_packet_) previous_on_packet_(from, axis, direction, begin, end, bytes);
      const std::uint32_t id = link_signals_.at({from.value(), axis * 2U + (direction > 0 ? 1U : 0U)});
      waves_->change(id, begin, 1);
      waves_->change(id, end, 0);
    };
  }

  // Remote DMAs in a trace: a span from issue to sent on the sender's
  // "remote dma" track, the arrival on the receiver's, and a flow between.
  void trace_delivery(const RemoteSend& m, const ici::Network::Completion& c) {
    Tracer& tracer = *request_.tracer;
    const Core& src = *chips[m.src_chip]->cores[m.src_core];
    const double start = static_cast<double>(m.start_cycle);
    if (c.kind == ici::Network::EventKind::kSent) {
      // Lanes: a span goes on the first lane whose last span has ended (sends
      // are reported in time order, so a lane's spans never overlap).
      auto& lanes = remote_lanes_[{m.src_chip, m.src_core}];
      std::size_t lane = 0;
      while (lane < lanes.size() && lanes[lane] > start) ++lane;
      if (lane == lanes.size()) lanes.push_back(0);
      lanes[lane] = c.time;
      const std::uint32_t track = lane == 0
                                      ? src.trace_tracks().remote
                                      : tracer.track(m.src_chip, fmt::format("core{} remote dma{}", m.src_core, lane));
      tracer.span(m.src_chip, track, fmt::format("to chip {}: {} B", m.dst_chip, m.bytes), start, c.time);
      flow_tracks_[m.trace_id] = track;
      return;
    }
    const std::uint32_t arrivals = arrival_tracks_[m.dst_chip];
    tracer.span(m.dst_chip, arrivals, fmt::format("from chip {}: {} B", m.src_chip, m.bytes), c.time, c.time);
    const auto from = flow_tracks_.find(m.trace_id);
    if (from != flow_tracks_.end()) {
      tracer.flow(m.trace_id, m.src_chip, from->second, start, m.dst_chip, arrivals, c.time);
      flow_tracks_.erase(from);
    }
  }

  void deliver(const ici::Network::Completion& c) {
    auto it = in_flight_.find(c.transfer);
    RemoteSend& m = it->second;
    last_delivery = std::max(last_delivery, c.time);
    if (request_.tracer != nullptr && m.dst_space != RemoteSend::Space::kFlagOnly) trace_delivery(m, c);
    if (c.kind == ici::Network::EventKind::kSent) {
      if (m.dst_space == RemoteSend::Space::kFlagOnly) return;
      Core& src = *chips[m.src_chip]->cores[m.src_core];
      src.note_remote_sent();
      if (m.has_src_flag) src.remote_credit(m.src_flag, m.src_credit, c.time);
      chips[m.src_chip]->wake_core(m.src_core);
      return;
    }
    ChipModule& dst_chip = *chips[m.dst_chip];
    Core& dst = *dst_chip.cores[m.dst_core];
    if (!m.payload.empty()) {
      if (m.dst_space == RemoteSend::Space::kHbm) {
        dst_chip.shared.hbm.write(m.dst_address, m.payload);
      } else {
        std::memcpy(dst.vmem.data(m.dst_address), m.payload.data(), m.payload.size());
      }
    }
    if (dst.profile != nullptr && m.dst_space != RemoteSend::Space::kFlagOnly) {
      dst.profile_access(
          m.dst_space == RemoteSend::Space::kHbm ? MemoryProfile::Space::kHbm : MemoryProfile::Space::kVmem,
          m.dst_address, m.bytes, static_cast<std::uint64_t>(std::ceil(c.time)), true);
    }
    dst.remote_credit(m.dst_flag, m.dst_credit, c.time);
    dst_chip.wake_core(m.dst_core);
    in_flight_.erase(it);
  }

  const PodRequest& request_;
  ici::Network network_;
  std::unordered_map<ici::Network::TransferKey, RemoteSend, ici::Network::TransferKeyHash> in_flight_;
  std::vector<std::uint32_t> arrival_tracks_;
  std::vector<ici::Network::Completion> completions_;
  std::unique_ptr<Waveform> waves_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> link_signals_;
  std::function<void(ChipId, std::uint8_t, std::int8_t, double, double, std::uint64_t)> previous_on_packet_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<double>> remote_lanes_;  // (chip, core) -> lane ends
  std::unordered_map<std::uint64_t, std::uint32_t> flow_tracks_;
  std::uint64_t sends_ = 0;
  sc_core::sc_event wake_network_;
  sc_core::sc_event stopped_;  // never notified (network_thread)
};

}  // namespace

PodResult run_pod(const PodRequest& request) {
  std::vector<PodStep> steps = request.steps;
  if (steps.empty() && request.program != nullptr) {
    PodStep step{request.program, {}};
    for (const auto& b : decode_program(*request.program, request.chip).bindings) {
      step.operand_buffers[b.index] = std::to_string(b.index);
    }
    steps.push_back(std::move(step));
  }
  if (steps.empty()) throw std::invalid_argument("no program to run");
  std::vector<ExecProgram> execs;
  execs.reserve(steps.size());
  for (const auto& step : steps) {
    check_fits(*step.program, request.chip);
    execs.push_back(decode_program(*step.program, request.chip));
  }
  (void)ici::routing_policy(request.routing);  // an unknown name fails before elaboration

  // Buffers: one HBM place per name, the same on every chip, from address 0.
  // A buffer that no earlier step writes is an input (host data or zeros).
  struct Buffer {
    OperandBinding binding;
    std::uint64_t address = 0;
    bool produced = false;
    bool input = false;
  };
  std::map<std::string, Buffer> buffers;
  std::vector<std::string> order;  // first use
  std::vector<std::map<std::uint32_t, std::uint32_t>> operand_values(execs.size());
  std::uint64_t next = 0;
  for (std::size_t s = 0; s < execs.size(); ++s) {
    for (const auto& b : execs[s].bindings) {
      const auto name = steps[s].operand_buffers.find(b.index);
      if (name == steps[s].operand_buffers.end()) {
        throw LoadError(fmt::format("step {}: operand {} is bound to no buffer", s, b.index));
      }
      if (b.space != "hbm") {
        throw LoadError(
            fmt::format("step {}: operand {} is in {}: pod runs place operands in HBM only", s, b.index, b.space));
      }
      auto [it, fresh] = buffers.try_emplace(name->second);
      Buffer& buf = it->second;
      if (fresh) {
        buf.binding = b;
        buf.address = next;
        order.push_back(name->second);
        next = (next + device_bytes(b) + kAlign - 1) / kAlign * kAlign;
        if (next > request.chip.hbm.size_bytes) {
          throw LoadError(fmt::format("the buffers need {} bytes of HBM per chip but {} has {}", next,
                                      request.chip.name, request.chip.hbm.size_bytes));
        }
      } else if (device_bytes(b) > device_bytes(buf.binding)) {
        throw LoadError(fmt::format("step {}: operand {} needs {} bytes but buffer '{}' has {}", s, b.index,
                                    device_bytes(b), name->second, device_bytes(buf.binding)));
      }
      if (!b.is_output && !buf.produced) buf.input = true;
      if (b.is_output) buf.produced = true;
      operand_values[s][b.index] = static_cast<std::uint32_t>(buf.address / 512);
    }
  }

  // The pod must fit the host before anything is built.
  std::uint64_t data_bytes = 0;
  if (request.options.compute_numerics) {
    for (const auto& [name, buf] : buffers) {
      data_bytes += device_bytes(buf.binding) * (buf.produced && request.read_outputs ? 2 : 1);
    }
    data_bytes += core_data_bytes(execs, request.chip);
  }
  check_host_memory(
      estimate_pod_host_memory(request.topology.chip_count(), request.chip.tensorcores_per_chip, data_bytes),
      fmt::format("the {} pod of {}", request.topology.shape(), request.chip.name));

  std::vector<const ExecProgram*> programs;
  for (const auto& e : execs) programs.push_back(&e);
  PodModule pod("pod", request, programs, operand_values);
  if (request.profile != nullptr) {
    std::vector<ChipModule::NamedRange> hbm;
    for (const auto& name : order)
      hbm.push_back({name, buffers.at(name).address, device_bytes(buffers.at(name).binding)});
    for (auto& chip : pod.chips) chip->attach_profile(*request.profile, hbm);
  }
  if (request.input && request.options.compute_numerics) {
    for (std::uint32_t id = 0; id < pod.chips.size(); ++id) {
      for (const auto& name : order) {
        const Buffer& buf = buffers.at(name);
        if (!buf.input) continue;
        const std::vector<std::uint8_t> bytes = request.input(id, name, buf.binding);
        if (bytes.empty()) continue;
        if (bytes.size() != device_bytes(buf.binding)) {
          throw std::invalid_argument(fmt::format(
              "chip {} buffer '{}': {} bytes of input for a {}[{}] operand of {} "
              "bytes",
              id, name, bytes.size(), buf.binding.dtype, fmt::join(buf.binding.shape, ","), device_bytes(buf.binding)));
        }
        pod.chips[id]->shared.hbm.write(buf.address, bytes);
        if (request.profile != nullptr)
          request.profile->write(id, 0, MemoryProfile::Space::kHbm, buf.address, bytes.size(), 0);
      }
    }
  }
  simulate();

  PodResult result;
  result.fault = pod.fault;
  result.waveform_overflowed = pod.waveform_overflowed();
  for (const auto& [name, buf] : buffers) result.buffers.emplace(name, buf.binding);
  result.step_end_cycles.assign(steps.size(), 0);
  std::vector<std::string> waiting;
  for (std::uint32_t id = 0; id < pod.chips.size(); ++id) {
    ChipModule& chip = *pod.chips[id];
    if (chip.fault && !result.fault) result.fault = chip.fault;
    result.core_resumes += chip.resumes;
    result.core_syncs += chip.syncs;
    PodChipResult r;
    for (std::size_t k = 0; k < chip.cores.size(); ++k) {
      const Core& core = *chip.cores[k];
      r.cycles = std::max(r.cycles, core.cycle());
      r.cores.push_back(core.stats());
      result.ici_bytes += core.stats().ici_bytes;
      result.bundles += core.stats().bundles;
      if (chip.blocked[k]) waiting.push_back(core.blocked_on());
      for (std::size_t s = 0; s < chip.step_ends[k].size(); ++s) {
        result.step_end_cycles[s] = std::max(result.step_end_cycles[s], chip.step_ends[k][s].cycle);
        if (k == 0) {
          r.step_end_cycles.push_back(chip.step_ends[k][s].cycle);
          r.step_end_stats.push_back(chip.step_ends[k][s].stats);
        }
      }
    }
    if (request.read_outputs && request.options.compute_numerics) {
      for (const auto& [name, buf] : buffers) {
        if (!buf.produced) continue;
        std::vector<std::uint8_t> bytes(device_bytes(buf.binding));
        chip.shared.hbm.read(buf.address, bytes);
        r.outputs.emplace(name, std::move(bytes));
      }
    }
    result.cycles = std::max(result.cycles, r.cycles);
    result.chips.push_back(std::move(r));
  }
  result.cycles = std::max(result.cycles, static_cast<std::uint64_t>(std::ceil(pod.last_delivery)));
  result.seconds = static_cast<double>(result.cycles) / request.chip.clock_hz;
  result.links = pod.network().used_links();
  result.network_events = pod.network().events_processed();
  if (!waiting.empty() && !result.fault) {
    result.fault = fmt::format("deadlock: {} core(s) wait for something no core or DMA in flight will do:\n  {}",
                               waiting.size(), fmt::join(waiting, "\n  "));
  }
  return result;
}

}  // namespace tpuemu::chip
