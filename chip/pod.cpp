#include "chip/pod.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "chip/chip_module.hpp"
#include "chip/host_io.hpp"
#include "chip/host_memory.hpp"
#include "chip/in_network.hpp"
#include "chip/run.hpp"
#include "chip/simulate.hpp"
#include "dist/bytes.hpp"
#include "isa/image.hpp"

namespace tpuemu::chip {
namespace {

void put_message(dist::ByteWriter& w, const ici::Network::TransferKey& key, const RemoteSend& m) {
  w.put(key);
  w.put(m.src_chip);
  w.put(m.src_core);
  w.put(m.dst_chip);
  w.put(m.dst_core);
  w.put(m.dst_space);
  w.put(m.dst_address);
  w.put(m.bytes);
  w.put_bytes(m.payload);
  w.put(m.has_src_flag);
  w.put(m.src_flag);
  w.put(m.src_credit);
  w.put(m.dst_flag);
  w.put(m.dst_credit);
  w.put(m.start_cycle);
  w.put(m.source_bundle);
  w.put(m.trace_id);
}

std::pair<ici::Network::TransferKey, RemoteSend> get_message(dist::ByteReader& r) {
  const auto key = r.get<ici::Network::TransferKey>();
  RemoteSend m;
  m.src_chip = r.get<std::uint32_t>();
  m.src_core = r.get<std::uint32_t>();
  m.dst_chip = r.get<std::uint32_t>();
  m.dst_core = r.get<std::uint32_t>();
  m.dst_space = r.get<RemoteSend::Space>();
  m.dst_address = r.get<std::uint64_t>();
  m.bytes = r.get<std::uint64_t>();
  m.payload = r.get_bytes();
  m.has_src_flag = r.get<bool>();
  m.src_flag = r.get<std::uint32_t>();
  m.src_credit = r.get<std::int32_t>();
  m.dst_flag = r.get<std::uint32_t>();
  m.dst_credit = r.get<std::int32_t>();
  m.start_cycle = r.get<std::uint64_t>();
  m.source_bundle = r.get<std::uint32_t>();
  m.trace_id = r.get<std::uint64_t>();
  return {key, std::move(m)};
}

// The pod as a SystemC module: the chips and one process for the network,
// which implements the cores' Fabric.
class PodModule : public sc_core::sc_module, public Fabric {
 public:
  PodModule(sc_core::sc_module_name name, const PodRequest& request, const std::vector<const ExecProgram*>& programs,
            const std::vector<std::map<std::uint32_t, std::uint32_t>>& operand_values)
      : sc_core::sc_module(name),
        request_(request),
        network_(ici::make_fabric(request.topology, request.chip, request.routing), request.chip.clock_hz,
                 request.chip.ici.packet_bytes) {
    const ici::Topology& t = request.topology;
    if (!request.rank_of.empty()) {
      rank_ = request.ranks->rank();
      ranks_ = request.ranks->size();
      std::vector<bool> owned(t.chip_count());
      for (std::uint32_t c = 0; c < t.chip_count(); ++c) owned[c] = request.rank_of[c] == rank_;
      network_.set_owned_chips(owned);
      outgoing_.resize(ranks_);
    }
    const std::uint64_t hop = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::floor(network_.lookahead())));
    const std::uint64_t quantum = request.vcd.empty() ? std::min(request.quantum_cycles, hop) : 1;
    // Whether remote DMAs may write some chip's HBM (then its HBM port serves
    // only up to SystemC time: ChipShared::horizon).
    bool writes_remote_hbm = false;
    const bool share = request.chip.dma.remote_traffic != 0;
    for (const ExecProgram* p : programs) {
      for (const ExecOp& op : p->ops) {
        writes_remote_hbm = writes_remote_hbm || op.id == isa::OpId::kDmaRemoteHbmToHbm ||
                            op.id == isa::OpId::kDmaRemoteVmemToHbm || op.id == isa::OpId::kDmaNvlsReduce ||
                            op.id == isa::OpId::kDmaNvlsMulticast;
      }
    }
    for (std::uint32_t id = 0; id < t.chip_count(); ++id) {
      if (!owns(id)) {  // another rank's
        chips.emplace_back();
        continue;
      }
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
      if (share && writes_remote_hbm) chips.back()->expect_hbm_arrivals();
    }
    attach_in_network();
    if (request.tracer != nullptr) attach_tracer(*request.tracer);
    if (!request.vcd.empty()) attach_waveform();

    sc_core::sc_spawn([this] { network_thread(); }, "network");
  }

  void send(RemoteSend message) override {
    if (message.kind != RemoteSend::Kind::kUnicast) {
      in_network_.send(std::move(message), ranks_ > 1);
      wake_network_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    const std::uint64_t message_start = message.start_cycle;
    const auto key = network_.send(ChipId(message.src_chip), ChipId(message.dst_chip), message.bytes,
                                   static_cast<double>(message.start_cycle), message.src_core);
    // The trace's flow id: the same in every process (transfer keys are).
    message.trace_id = (std::uint64_t{key.chip} << 36) ^ (std::uint64_t{key.lane} << 28) ^ key.sequence;
    if (!owns(message.dst_chip)) {
      // The destination's rank gets the message (and its data) at this
      // window's end, before the network can deliver it (a hop later at least).
      RemoteSend copy = message;
      copy.payload = std::move(message.payload);
      message.payload.clear();
      outgoing_[request_.rank_of[message.dst_chip]].emplace_back(key, std::move(copy));
    }
    in_flight_.emplace(key, std::move(message));
    // The network thread wakes by itself at its next event's time; only a
    // send that starts before that needs it sooner (its events would be the
    // same either way: it processes the times in order).
    if (static_cast<double>(message_start) < network_wait_until_) wake_network_.notify(sc_core::SC_ZERO_TIME);
  }

  [[nodiscard]] bool owns(std::uint32_t chip) const { return ranks_ == 1 || request_.rank_of[chip] == rank_; }

  // At a window's end (between sc_start calls, every rank at once): sends
  // every rank what crossed to it (network events, remote DMAs with their
  // data) and takes what the others sent here, in one collective call.
  // `next_ps` is this rank's next activity before the exchange (-inf: it
  // stopped, +inf: idle). Returns the least over every rank of that and of
  // the times of the events crossing to other ranks: the global next
  // activity, since every event that arrives here is one a rank sent.
  double exchange(dist::Ranks& ranks, double next_ps) {
    std::vector<std::vector<ici::Network::Crossing>> crossings(ranks_);
    for (const auto& c : network_.outbox()) {
      crossings[request_.rank_of[network_.crossing_chip(c).value()]].push_back(c);
      next_ps = std::min(next_ps, time_of_cycle(c.time, request_.chip.clock_hz).to_double());
    }
    network_.outbox().clear();
    std::vector<dist::Bytes> batches(ranks_);
    for (std::uint32_t r = 0; r < ranks_; ++r) {
      if (r == rank_) continue;
      dist::ByteWriter w;
      w.put(next_ps);
      w.put_vector(crossings[r]);
      w.put<std::uint64_t>(outgoing_[r].size());
      for (const auto& [key, m] : outgoing_[r]) put_message(w, key, m);
      outgoing_[r].clear();
      batches[r] = w.take();
    }
    const std::vector<dist::Bytes> received = ranks.exchange(std::move(batches));
    std::uint64_t items = 0;
    double global_next_ps = next_ps;
    for (std::uint32_t r = 0; r < ranks_; ++r) {
      if (r == rank_) continue;
      dist::ByteReader in(received[r]);
      global_next_ps = std::min(global_next_ps, in.get<double>());
      for (const auto& c : in.get_vector<ici::Network::Crossing>()) {
        network_.inject(c);
        ++items;
      }
      const auto messages = in.get<std::uint64_t>();
      for (std::uint64_t i = 0; i < messages; ++i) {
        auto [key, m] = get_message(in);
        in_flight_.emplace(key, std::move(m));
        ++items;
      }
    }
    if (items > 0) wake_network_.notify(sc_core::SC_ZERO_TIME);
    return global_next_ps;
  }

  std::vector<std::unique_ptr<ChipModule>> chips;  // null: another rank's chip
  double last_delivery = 0;
  // The network's own failure (a trace over its limit): the run stops.
  std::optional<std::string> fault;
  [[nodiscard]] ici::Network& network() { return network_; }
  // A fault on this rank (the network's or a chip's): the run is over.
  [[nodiscard]] bool stopped() const {
    return fault.has_value() ||
           std::any_of(chips.begin(), chips.end(), [](const auto& c) { return c && c->fault.has_value(); });
  }
  [[nodiscard]] Waveform* waveform() const { return waves_.get(); }

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
        network_wait_until_ = std::numeric_limits<double>::infinity();
        sc_core::wait(wake_network_);
        network_wait_until_ = -std::numeric_limits<double>::infinity();
        continue;
      }
      const sc_core::sc_time at = time_of_cycle(*next, request_.chip.clock_hz);
      if (at > sc_core::sc_time_stamp()) {
        network_wait_until_ = *next;
        sc_core::wait(at - sc_core::sc_time_stamp(), wake_network_);
        network_wait_until_ = -std::numeric_limits<double>::infinity();
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

  // This process's chips only: a chip's tracks are all made where it is simulated.
  void attach_tracer(Tracer& tracer) {
    arrival_tracks_.assign(chips.size(), 0);
    for (auto& chip : chips) {
      if (!chip) continue;
      const ChipShared& shared = chip->shared;
      const auto& c = shared.identity.coords;
      chip->attach_tracer(tracer,
                          fmt::format("chip {} ({},{},{}) {}", shared.chip_id, c[0], c[1], c[2], request_.chip.name));
      arrival_tracks_[shared.chip_id] = tracer.track(shared.chip_id, "ici arrivals");
    }
    const ici::Fabric& fabric = network_.fabric();
    for (std::uint32_t node = fabric.chip_count(); node < fabric.node_count(); ++node) {
      if (owns(fabric.home_chip(node))) tracer.name_process(node, fabric.node_name(node));
    }
    network_.on_packet = [&tracer, &fabric](std::uint32_t link, double begin, double end, std::uint64_t bytes) {
      const ici::Fabric::LinkInfo& l = fabric.links()[link];
      const std::uint32_t track = tracer.track(l.from, link_track_name(fabric, l));
      tracer.span(l.from, track, "packets", begin, end);
      tracer.add_bytes(l.from, l.axis != ici::kNoAxis ? "ICI bandwidth out" : "link bandwidth out", begin, end,
                       static_cast<double>(bytes));
    };
  }

  // A link's trace track, on the process of the node it leaves: "ici +x" on
  // a torus, "nvlink -> nvswitch 1" elsewhere.
  static std::string link_track_name(const ici::Fabric& fabric, const ici::Fabric::LinkInfo& l) {
    if (l.axis != ici::kNoAxis) return fmt::format("ici {}{}", l.direction > 0 ? '+' : '-', ici::axis_name(l.axis));
    return fmt::format("{} -> {}", l.kind, fabric.node_name(l.to));
  }

  // Per chip its cores' signals and one busy bit per outgoing link (a
  // switch's links: in its home chip's group, named after the switch).
  void attach_waveform() {
    waves_ = std::make_unique<Waveform>(request_.vcd, request_.chip.clock_hz, request_.vcd_max_changes);
    for (auto& chip : chips) {
      if (!chip) continue;  // this process's chips: each records its own signals
      chip->attach_waveform(*waves_);
    }
    const ici::Fabric& fabric = network_.fabric();
    const auto links = fabric.links();
    link_signals_.assign(links.size(), kNoSignal);
    for (std::uint32_t id = 0; id < links.size(); ++id) {
      const ici::Fabric::LinkInfo& l = links[id];
      const std::uint32_t home = fabric.home_chip(l.from);
      if (!l.exists || !owns(home)) continue;
      std::string name;
      if (l.axis != ici::kNoAxis) {
        name =
            fmt::format("chip{}.ici.{}{}.busy", l.from, l.direction > 0 ? "plus_" : "minus_", ici::axis_name(l.axis));
      } else {
        name = fmt::format("{}.{}.to_{}.busy", signal_scope(fabric.node_name(l.from)), l.kind,
                           signal_scope(fabric.node_name(l.to)));
      }
      link_signals_[id] = waves_->bit(name, home);
    }
    // Signals in the order of the chips' groups: a chip's links after its cores.
    previous_on_packet_ = network_.on_packet;
    network_.on_packet = [this](std::uint32_t link, double begin, double end, std::uint64_t bytes) {
      if (previous_on_packet_) previous_on_packet_(link, begin, end, bytes);
      const std::uint32_t id = link_signals_[link];
      waves_->change(id, begin, 1);
      waves_->change(id, end, 0);
    };
  }

  // "node 0 nvswitch 1" -> "node0_nvswitch1", "chip 3" -> "chip3": a VCD scope name.
  static std::string signal_scope(const std::string& node) {
    std::string out;
    for (std::size_t i = 0; i < node.size(); ++i) {
      if (node[i] != ' ') {
        out += node[i];
      } else if (i + 1 < node.size() && (node[i + 1] < '0' || node[i + 1] > '9')) {
        out += '_';
      }
    }
    return out;
  }

  // Remote DMAs in a trace: a span from issue to sent on the sender's
  // "remote dma" track, the arrival on the receiver's, and a flow between.
  void trace_delivery(const RemoteSend& m, const ici::Network::Completion& c) {
    Tracer& tracer = *request_.tracer;
    const double start = static_cast<double>(m.start_cycle);
    if (c.kind == ici::Network::EventKind::kSent) {  // on the sender's process
      const Core& src = *chips[m.src_chip]->cores[m.src_core];
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
      tracer.flow_start(m.trace_id, m.src_chip, track, start);
      return;
    }
    const std::uint32_t arrivals = arrival_tracks_[m.dst_chip];  // on the receiver's process
    tracer.span(m.dst_chip, arrivals, fmt::format("from chip {}: {} B", m.src_chip, m.bytes), c.time, c.time);
    tracer.flow_end(m.trace_id, start, m.dst_chip, arrivals, c.time);
  }

  // In-network collectives' callbacks: a sender's data has left; data reached a chip.
  void attach_in_network() {
    in_network_.on_sent = [this](const RemoteSend& m, double time) {
      Core& src = *chips[m.src_chip]->cores[m.src_core];
      src.note_remote_sent();
      src.remote_credit(m.src_flag, m.src_credit, time);
      chips[m.src_chip]->wake_core(m.src_core);
    };
    in_network_.on_delivered = [this](std::uint32_t chip, std::uint64_t address, std::uint64_t bytes,
                                      const std::vector<std::uint8_t>& data, std::uint32_t flag, std::int32_t credit,
                                      double time) {
      last_delivery = std::max(last_delivery, time);
      ChipModule& dst_chip = *chips[chip];
      if (!data.empty()) dst_chip.shared.hbm.write(address, data);
      if (request_.chip.dma.remote_traffic != 0) {
        dst_chip.shared.hbm_port.set_horizon(time);
        dst_chip.shared.hbm_port.start_untracked(time, bytes,
                                                 ChipShared::kArrivalSource);  // written into HBM: see deliver
      }
      Core& dst = *dst_chip.cores[0];
      if (dst.profile != nullptr) {
        dst.profile_access(MemoryProfile::Space::kHbm, address, data.size(),
                           static_cast<std::uint64_t>(std::ceil(time)), true);
      }
      dst.remote_credit(flag, credit, time);
      dst_chip.wake_core(0);
    };
  }

  void deliver(const ici::Network::Completion& c) {
    if (in_network_.handle(c)) return;
    auto it = in_flight_.find(c.transfer);
    RemoteSend& m = it->second;
    last_delivery = std::max(last_delivery, c.time);
    if (request_.tracer != nullptr && m.dst_space != RemoteSend::Space::kFlagOnly) trace_delivery(m, c);
    if (c.kind == ici::Network::EventKind::kSent) {
      if (m.dst_space != RemoteSend::Space::kFlagOnly) {
        Core& src = *chips[m.src_chip]->cores[m.src_core];
        src.note_remote_sent();
        if (m.has_src_flag) src.remote_credit(m.src_flag, m.src_credit, c.time);
        chips[m.src_chip]->wake_core(m.src_core);
      }
      if (!owns(m.dst_chip)) in_flight_.erase(it);  // the destination's rank has its copy
      return;
    }
    ChipModule& dst_chip = *chips[m.dst_chip];
    Core& dst = *dst_chip.cores[m.dst_core];
    // What lands in HBM takes its turns on the destination chip's HBM port
    // from its arrival on, round-robin with the local DMAs (the port has
    // served only the chunks that start before it: ChipShared::horizon);
    // what lands in VMEM does not touch the port.
    if (m.dst_space == RemoteSend::Space::kHbm && request_.chip.dma.remote_traffic != 0) {
      dst_chip.shared.hbm_port.set_horizon(c.time);  // every arrival before it is known
      dst_chip.shared.hbm_port.start_untracked(c.time, m.bytes, ChipShared::kArrivalSource);
    }
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
  InNetworkCollectives in_network_{network_};
  std::unordered_map<ici::Network::TransferKey, RemoteSend, ici::Network::TransferKeyHash> in_flight_;
  std::vector<std::uint32_t> arrival_tracks_;
  std::vector<ici::Network::Completion> completions_;
  std::unique_ptr<Waveform> waves_;
  static constexpr std::uint32_t kNoSignal = UINT32_MAX;
  std::vector<std::uint32_t> link_signals_;  // by link id
  std::function<void(std::uint32_t, double, double, std::uint64_t)> previous_on_packet_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<double>> remote_lanes_;  // (chip, core) -> lane ends
  std::uint32_t rank_ = 0;
  std::uint32_t ranks_ = 1;
  // Per destination rank: remote DMAs sent there in this window.
  std::vector<std::vector<std::pair<ici::Network::TransferKey, RemoteSend>>> outgoing_;
  sc_core::sc_event wake_network_;
  // The cycle the network thread waits for (its next event's), +inf when it
  // waits for a send, -inf while it runs: a send starting earlier wakes it.
  double network_wait_until_ = -std::numeric_limits<double>::infinity();
  sc_core::sc_event stopped_;  // never notified (network_thread)
};

// What one chip ends with: its result, its first fault, its waiting cores.
struct ChipEnd {
  std::uint32_t chip = 0;
  PodChipResult result;
  std::optional<std::pair<std::uint64_t, std::string>> fault;  // (cycle, message)
  std::vector<std::string> waiting;
  std::vector<std::vector<std::uint64_t>> core_step_ends;  // per core, per step
};

void put_chip_end(dist::ByteWriter& w, const ChipEnd& e) {
  w.put(e.chip);
  w.put(e.result.cycles);
  w.put_vector(e.result.cores);
  w.put<std::uint64_t>(e.result.outputs.size());
  for (const auto& [name, bytes] : e.result.outputs) {
    w.put_string(name);
    w.put_bytes(bytes);
  }
  w.put_vector(e.result.step_end_cycles);
  w.put_vector(e.result.step_end_stats);
  w.put<bool>(e.fault.has_value());
  if (e.fault) {
    w.put(e.fault->first);
    w.put_string(e.fault->second);
  }
  w.put<std::uint64_t>(e.waiting.size());
  for (const auto& text : e.waiting) w.put_string(text);
  w.put<std::uint64_t>(e.core_step_ends.size());
  for (const auto& v : e.core_step_ends) w.put_vector(v);
}

ChipEnd get_chip_end(dist::ByteReader& r) {
  ChipEnd e;
  e.chip = r.get<std::uint32_t>();
  e.result.cycles = r.get<std::uint64_t>();
  e.result.cores = r.get_vector<CoreStats>();
  const auto outputs = r.get<std::uint64_t>();
  for (std::uint64_t i = 0; i < outputs; ++i) {
    std::string name = r.get_string();
    e.result.outputs.emplace(std::move(name), r.get_bytes());
  }
  e.result.step_end_cycles = r.get_vector<std::uint64_t>();
  e.result.step_end_stats = r.get_vector<CoreStats>();
  if (r.get<bool>()) {
    const auto cycle = r.get<std::uint64_t>();
    e.fault = {cycle, r.get_string()};
  }
  const auto waiting = r.get<std::uint64_t>();
  for (std::uint64_t i = 0; i < waiting; ++i) e.waiting.push_back(r.get_string());
  const auto cores = r.get<std::uint64_t>();
  for (std::uint64_t i = 0; i < cores; ++i) e.core_step_ends.push_back(r.get_vector<std::uint64_t>());
  return e;
}

// Every rank's chips, links and statistics on every rank (chips in id order,
// links in used_links order), so every rank returns the whole result.
void merge_ranks(dist::Ranks& ranks, PodResult& result, std::vector<ChipEnd>& ends, double& last_delivery) {
  dist::ByteWriter w;
  w.put<bool>(result.fault.has_value());
  if (result.fault) w.put_string(*result.fault);
  w.put<std::uint64_t>(ends.size());
  for (const auto& e : ends) put_chip_end(w, e);
  w.put<std::uint64_t>(result.links.size());
  for (const auto& l : result.links) {
    w.put(l.id);
    w.put(l.from);
    w.put(l.to);
    w.put(l.axis);
    w.put(l.direction);
    w.put_string(std::string(l.kind));
    w.put_string(l.name);
    w.put(l.busy_cycles);
    w.put(l.bytes);
    w.put(l.packets);
  }
  w.put(result.network_events);
  w.put(result.core_resumes);
  w.put(result.core_syncs);
  w.put(last_delivery);
  const std::vector<dist::Bytes> all = ranks.all_gather(w.take());
  ends.clear();
  result.links.clear();
  result.fault.reset();
  result.network_events = result.core_resumes = result.core_syncs = 0;
  for (const auto& bytes : all) {
    dist::ByteReader r(bytes);
    if (r.get<bool>()) {
      std::string fault = r.get_string();
      if (!result.fault) result.fault = std::move(fault);  // the network's own failure, lowest rank first
    }
    const auto chips = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < chips; ++i) ends.push_back(get_chip_end(r));
    const auto links = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < links; ++i) {
      ici::Network::LinkStats l;
      l.id = r.get<std::uint32_t>();
      l.from = r.get<std::uint32_t>();
      l.to = r.get<std::uint32_t>();
      l.axis = r.get<std::uint8_t>();
      l.direction = r.get<std::int8_t>();
      l.kind = r.get_string();
      l.name = r.get_string();
      l.busy_cycles = r.get<double>();
      l.bytes = r.get<std::uint64_t>();
      l.packets = r.get<std::uint64_t>();
      result.links.push_back(l);
    }
    result.network_events += r.get<std::uint64_t>();
    result.core_resumes += r.get<std::uint64_t>();
    result.core_syncs += r.get<std::uint64_t>();
    last_delivery = std::max(last_delivery, r.get<double>());
  }
  std::sort(ends.begin(), ends.end(), [](const ChipEnd& a, const ChipEnd& b) { return a.chip < b.chip; });
  std::sort(result.links.begin(), result.links.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
}

// The pod's figures from every chip's end (in chip id order).
void finish_result(const PodRequest& request, PodResult& result, std::vector<ChipEnd>& ends, double last_delivery) {
  std::vector<std::string> waiting;
  const ChipEnd* first_fault = nullptr;
  for (auto& e : ends) {
    if (e.fault && (first_fault == nullptr || e.fault->first < first_fault->fault->first)) first_fault = &e;
    for (auto& w : e.waiting) waiting.push_back(std::move(w));
    for (const auto& core : e.core_step_ends) {
      for (std::size_t s = 0; s < core.size() && s < result.step_end_cycles.size(); ++s) {
        result.step_end_cycles[s] = std::max(result.step_end_cycles[s], core[s]);
      }
    }
    for (const auto& c : e.result.cores) {
      result.ici_bytes += c.ici_bytes;
      result.bundles += c.bundles;
    }
    result.cycles = std::max(result.cycles, e.result.cycles);
  }
  if (!result.fault && first_fault != nullptr) result.fault = first_fault->fault->second;
  for (auto& e : ends) result.chips.push_back(std::move(e.result));
  result.cycles = std::max(result.cycles, static_cast<std::uint64_t>(std::ceil(last_delivery)));
  result.seconds = static_cast<double>(result.cycles) / request.chip.clock_hz;
  if (!waiting.empty() && !result.fault) {
    result.fault = fmt::format("deadlock: {} core(s) wait for something no core or DMA in flight will do:\n  {}",
                               waiting.size(), fmt::join(waiting, "\n  "));
  }
}

// Runs the pod's part on this rank in conservative windows. Each window ends
// one hop latency (the least time from any event to a crossing it causes)
// after the earliest activity of any rank, so what crosses in a window is due
// only after it; between windows the ranks exchange it. Idle stretches are
// skipped: the next window starts at the next activity. Returns the windows run.
std::uint64_t run_windows(PodModule& pod, dist::Ranks& ranks, double clock_hz) {
  // In picoseconds, less one for the rounding of cycle times (chip/sim_time.hpp).
  const double lookahead_ps = std::floor(pod.network().lookahead() * 1e12 / clock_hz) - 1;
  constexpr double kIdle = std::numeric_limits<double>::infinity();
  std::uint64_t windows = 0;
  double start_ps = 0;  // the first window starts at 0 (elaboration)
  for (;;) {
    const double now_ps = windows == 0 ? 0.0 : sc_core::sc_time_stamp().to_double();
    simulate(sc_core::sc_time(start_ps + lookahead_ps - now_ps, sc_core::SC_PS));
    ++windows;
    const bool stopped = pod.stopped() || sc_core::sc_get_status() == sc_core::SC_STOPPED;
    double next = stopped ? -kIdle : kIdle;
    if (!stopped) {
      if (sc_core::sc_pending_activity()) {
        next = (sc_core::sc_time_stamp() + sc_core::sc_time_to_pending_activity()).to_double();
      }
      if (const auto t = pod.network().next_event_time())
        next = std::min(next, time_of_cycle(*t, clock_hz).to_double());
    }
    // One collective per window: what crossed, and the least next activity
    // (-inf when any rank stopped). What arrives only wakes the network at
    // the current time; its events are at times the senders counted.
    start_ps = pod.exchange(ranks, next);
    if (start_ps == -kIdle || start_ps == kIdle) break;
  }
  return windows;
}

// FNV-1a, 64 bits: the digests ranks compare before they run.
std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t size) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  for (std::size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}
constexpr std::uint64_t kFnvBasis = 0xcbf29ce484222325ULL;
std::uint64_t fnv1a(std::uint64_t h, const std::string& s) {
  return fnv1a(h, s.data(), s.size());
}

// FNV-1a over 8-byte words (then the tail bytes): the binary's digest, 8x
// fewer dependent multiplies than bytewise (an 85 MB RelWithDebInfo binary
// took 15 % of a 0.6 s 2-rank run bytewise).
std::uint64_t fnv1a_words(std::uint64_t h, const void* data, std::size_t size) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * 0x100000001b3ULL;
  }
  return fnv1a(h, p + i, size - i);
}

// Refuses the run, on every rank with the same message, unless every rank has
// the same build, chip, topology, programs, options and partition.
void check_ranks_agree(dist::Ranks& ranks, const PodRequest& request, const std::vector<PodStep>& steps) {
  struct Part {
    const char* what;
    std::uint64_t digest;
  };
  std::vector<Part> parts;
  {
    std::uint64_t h = kFnvBasis;
    std::ifstream exe("/proc/self/exe", std::ios::binary);
    std::vector<char> block(1 << 20);
    while (exe.read(block.data(), static_cast<std::streamsize>(block.size())) || exe.gcount() > 0) {
      h = fnv1a_words(h, block.data(), static_cast<std::size_t>(exe.gcount()));
    }
    parts.push_back({"tpuemu binary", h});
  }
  parts.push_back({"chip configuration", fnv1a(kFnvBasis, chip_config_json(request.chip))});
  std::string topology = describe(request.topology) + " routing " + request.routing;
  parts.push_back({"topology", fnv1a(kFnvBasis, topology)});
  std::uint64_t programs = kFnvBasis;
  for (const auto& step : steps) {
    const std::vector<std::uint8_t> image = isa::encode_image(*step.program);
    programs = fnv1a(programs, image.data(), image.size());
    for (const auto& [index, name] : step.operand_buffers)
      programs = fnv1a(fnv1a(programs, &index, sizeof index), name);
  }
  parts.push_back({"programs", programs});
  const std::string options = fmt::format("strict {} numerics {} max_cycles {} quantum {} outputs {}",
                                          request.options.strict, request.options.compute_numerics,
                                          request.options.max_cycles, request.quantum_cycles, request.read_outputs);
  parts.push_back({"run options", fnv1a(kFnvBasis, options)});
  parts.push_back(
      {"partition", fnv1a(kFnvBasis, request.rank_of.data(), request.rank_of.size() * sizeof(std::uint32_t))});

  dist::ByteWriter w;
  for (const auto& p : parts) w.put(p.digest);
  const std::vector<dist::Bytes> all = ranks.all_gather(w.take());
  std::vector<std::string> differences;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::vector<std::uint32_t> odd;
    for (std::uint32_t r = 1; r < all.size(); ++r) {
      if (std::memcmp(all[r].data() + i * 8, all[0].data() + i * 8, 8) != 0) odd.push_back(r);
    }
    if (!odd.empty())
      differences.push_back(fmt::format("{} (rank {} differs from rank 0)", parts[i].what, fmt::join(odd, ", ")));
  }
  if (!differences.empty()) {
    throw std::invalid_argument(
        fmt::format("the MPI ranks do not agree on: {}; every rank needs the same tpuemu build, presets and arguments",
                    fmt::join(differences, "; ")));
  }
}

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
  // An unknown routing name or a fabric the chip cannot form fails before elaboration.
  const double lookahead_cycles = ici::Network(ici::make_fabric(request.topology, request.chip, request.routing),
                                               request.chip.clock_hz, request.chip.ici.packet_bytes)
                                      .lookahead();

  // Buffers: one HBM place per name, the same on every chip, from address 0,
  // laid out as its first use declares it and as large as its largest use (a
  // padded collective reads and writes past the bytes of the matrix that
  // produced it; the tail starts as zeros). A buffer that no earlier step
  // writes is an input (host data or zeros).
  std::map<std::string, std::uint64_t> largest;
  for (std::size_t s = 0; s < execs.size(); ++s) {
    for (const auto& b : execs[s].bindings) {
      const auto name = steps[s].operand_buffers.find(b.index);
      if (name == steps[s].operand_buffers.end() || b.space != "hbm") continue;  // refused below
      std::uint64_t& size = largest[name->second];
      size = std::max(size, device_bytes(b));
    }
  }
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
        next = (next + largest.at(name->second) + kOperandAlign - 1) / kOperandAlign * kOperandAlign;
        if (next > request.chip.hbm.size_bytes) {
          throw LoadError(fmt::format("the buffers need {} bytes of HBM per chip but {} has {}", next,
                                      request.chip.name, request.chip.hbm.size_bytes));
        }
      }
      if (!b.is_output && !buf.produced) buf.input = true;
      if (b.is_output) buf.produced = true;
      operand_values[s][b.index] = static_cast<std::uint32_t>(buf.address / 512);
    }
  }

  // Over several ranks: each builds only its chips.
  const bool partitioned = request.ranks != nullptr && request.ranks->size() > 1;
  if (partitioned) {
    if (request.rank_of.size() != request.topology.chip_count()) {
      throw std::invalid_argument("a pod over several ranks needs the rank of every chip");
    }
    if (!(lookahead_cycles >= 2)) {
      throw std::invalid_argument(
          "a pod split over ranks needs links whose latency is at least 2 cycles (ici.hop_latency, lookahead)");
    }
  }
  if (partitioned) check_ranks_agree(*request.ranks, request, steps);
  const auto owned = [&](std::uint32_t chip) { return !partitioned || request.rank_of[chip] == request.ranks->rank(); };
  std::uint32_t owned_chips = 0;
  for (std::uint32_t c = 0; c < request.topology.chip_count(); ++c) owned_chips += owned(c) ? 1 : 0;

  // This process's chips must fit the host before anything is built.
  std::uint64_t data_bytes = 0;
  if (request.options.compute_numerics) {
    for (const auto& [name, buf] : buffers) {
      data_bytes += largest.at(name) * (buf.produced && request.read_outputs ? 2 : 1);
    }
    data_bytes += core_data_bytes(execs, request.chip);
  }
  check_host_memory(estimate_pod_host_memory(owned_chips, request.chip.tensorcores_per_chip, data_bytes),
                    fmt::format("the {} pod of {}", request.topology.shape(), request.chip.name));

  std::vector<const ExecProgram*> programs;
  for (const auto& e : execs) programs.push_back(&e);
  PodRequest local = request;
  if (!partitioned) local.rank_of.clear();
  PodModule pod("pod", local, programs, operand_values);
  if (request.profile != nullptr) {
    std::vector<ChipModule::NamedRange> hbm;
    for (const auto& name : order)
      hbm.push_back({name, buffers.at(name).address, device_bytes(buffers.at(name).binding)});
    for (auto& chip : pod.chips) {
      if (chip) chip->attach_profile(*request.profile, hbm);  // this process's chips: all their accesses are here
    }
  }
  if (request.input && request.options.compute_numerics) {
    for (std::uint32_t id = 0; id < pod.chips.size(); ++id) {
      if (!pod.chips[id]) continue;
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
  std::uint64_t windows = 0;
  if (partitioned) {
    windows = run_windows(pod, *request.ranks, request.chip.clock_hz);
  } else {
    simulate();
  }

  // The observers: over several ranks, rank 0's take in every rank's part
  // (each chip was observed where it was simulated); a limit reached
  // anywhere is reached everywhere (the limits are the whole file's).
  if (partitioned) {
    dist::Ranks& ranks = *request.ranks;
    if (request.tracer != nullptr) {
      gather_into_rank0(ranks, *request.tracer);
      if (ranks.max_all(request.tracer->overflowed() ? 1 : 0) != 0) request.tracer->set_overflowed();
    }
    if (request.profile != nullptr) gather_into_rank0(ranks, *request.profile);
    if (Waveform* waves = pod.waveform()) {
      gather_into_rank0(ranks, *waves);
      if (ranks.max_all(waves->overflowed() ? 1 : 0) != 0) waves->set_overflowed();
    }
  }

  // This process's part of the result: its chips, links and statistics.
  PodResult result;
  result.fault = pod.fault;
  if (Waveform* waves = pod.waveform()) {
    if (!partitioned || request.ranks->rank() == 0) waves->write();
    result.waveform_overflowed = waves->overflowed();
  }
  for (const auto& [name, buf] : buffers) result.buffers.emplace(name, buf.binding);
  result.step_end_cycles.assign(steps.size(), 0);
  std::vector<ChipEnd> ends;
  for (std::uint32_t id = 0; id < pod.chips.size(); ++id) {
    if (!pod.chips[id]) continue;
    ChipModule& chip = *pod.chips[id];
    ChipEnd end;
    end.chip = id;
    if (chip.fault) end.fault = {chip.fault_cycle, *chip.fault};
    result.core_resumes += chip.resumes;
    result.core_syncs += chip.syncs;
    PodChipResult& r = end.result;
    for (std::size_t k = 0; k < chip.cores.size(); ++k) {
      const Core& core = *chip.cores[k];
      r.cycles = std::max(r.cycles, core.cycle());
      r.cores.push_back(core.stats());
      if (chip.blocked[k]) end.waiting.push_back(core.blocked_on());
      for (std::size_t st = 0; st < chip.step_ends[k].size(); ++st) {
        if (k == 0) {
          r.step_end_cycles.push_back(chip.step_ends[k][st].cycle);
          r.step_end_stats.push_back(chip.step_ends[k][st].stats);
        } else if (st < r.step_end_stats.size()) {
          r.step_end_stats[st] += chip.step_ends[k][st].stats;  // the chip's cores together
        }
      }
      end.core_step_ends.push_back({});
      for (const auto& e : chip.step_ends[k]) end.core_step_ends.back().push_back(e.cycle);
    }
    if (request.read_outputs && request.options.compute_numerics) {
      for (const auto& [name, buf] : buffers) {
        if (!buf.produced) continue;
        std::vector<std::uint8_t> bytes(device_bytes(buf.binding));
        chip.shared.hbm.read(buf.address, bytes);
        r.outputs.emplace(name, std::move(bytes));
      }
    }
    ends.push_back(std::move(end));
  }
  result.links = pod.network().used_links();
  result.network_events = pod.network().events_processed();
  double last_delivery = pod.last_delivery;
  if (partitioned) {
    result.windows = windows;
    result.ranks = request.ranks->size();
    merge_ranks(*request.ranks, result, ends, last_delivery);
  }
  finish_result(request, result, ends, last_delivery);
  return result;
}

}  // namespace tpuemu::chip
