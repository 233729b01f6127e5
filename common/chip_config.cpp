#include "common/chip_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <nlohmann/json.hpp>

#include "common/edit_distance.hpp"
#include "common/json_file.hpp"

namespace tpuemu {
namespace {

using json = nlohmann::json;

constexpr double kMiB = 1048576.0;
constexpr double kGiB = 1024 * kMiB;
constexpr double kTiB = 1024 * kGiB;

// Ranges: every shipped preset (configs/chips) lies well inside, with room for
// what-if studies; the maxima refuse sizes that would only exhaust the host
// (MXUs, cores, registers and FIFOs are allocated per core) or overflow cycle
// counts (bandwidths of at least 1 MB/s, latencies of at most 1 ms).
std::vector<ParamSpec> build_params() {
  std::vector<ParamSpec> p;
  auto add = [&](std::string path, Quantity q, std::string description, double min_value, double max_value,
                 ParamSpec::FieldRef (*field)(ChipConfig&)) {
    p.push_back(ParamSpec{std::move(path), q, std::move(description), min_value, max_value, false, field});
  };
  using Q = Quantity;
  add("clock", Q::kFrequency, "core clock", 1e6, 1e10,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.clock_hz; });
  add("tensorcores_per_chip", Q::kCount, "TensorCores per chip (2 = megacore, sharing the chip's HBM)", 1, 8,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.tensorcores_per_chip; });
  add("mxu.count", Q::kCount, "matrix units per TensorCore (0: none, as on the GPU presets: MXU ops refused)", 0, 64,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.mxu.count; });
  add("mxu.size", Q::kCount, "systolic array dimension (size x size MACs)", 1, 1024,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.mxu.size; });
  add("mxu.cycles_per_tile", Q::kCycles, "issue interval of one (sublanes x size) LHS tile when saturated", 1, 1024,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.mxu.cycles_per_tile; });
  add("mxu.result_fifo_depth", Q::kCount,
      "results an MXU result FIFO holds (a multiply into a full FIFO is a program fault)", 1, 4096,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.mxu.result_fifo_depth; });
  add("mxu.latch_wave_cycles", Q::kCycles,
      "cycles from a latching multiply's first row until weight pushes may start again (the latch travels through "
      "the array)",
      0, 4096, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.mxu.latch_wave_cycles; });
  add("vpu.sublanes", Q::kCount, "sublanes of a vreg", 1, 64,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.vpu.sublanes; });
  add("vpu.lanes", Q::kCount, "lanes of a vreg (32-bit each)", 1, 1024,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.vpu.lanes; });
  add("vpu.vregs", Q::kCount, "vector registers", 1, 1024,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.vpu.vregs; });
  add("vpu.mask_regs", Q::kCount, "vector mask registers", 1, 256,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.vpu.mask_regs; });
  add("scalar.sregs", Q::kCount, "scalar registers (32-bit)", 1, 1024,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.scalar.sregs; });
  add("scalar.predicates", Q::kCount, "predicate registers", 1, 256,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.scalar.predicates; });
  add("xlu.count", Q::kCount, "cross-lane units per TensorCore", 1, 16,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.xlu.count; });
  add("xlu.fifo_depth", Q::kCount,
      "results each XLU FIFO (rotate/permute, transpose) holds (a push into a full one is a program fault)", 1, 4096,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.xlu.fifo_depth; });
  add("eup.fifo_depth", Q::kCount, "results the EUP FIFO holds (a push into a full one is a program fault)", 1, 4096,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.eup.fifo_depth; });

  // One capacity per capped slot class, one latency per latency class. These
  // lambdas cannot capture, so the class is recovered from the path at use.
  static constexpr auto slot_field = [](ChipConfig&) -> ParamSpec::FieldRef {
    return static_cast<std::uint64_t*>(nullptr);
  };
  for (SlotClass s : kCappedSlotClasses) {
    p.push_back(ParamSpec{fmt::format("slots.{}", preset_key(s)), Q::kCount,
                          fmt::format("{} ops per bundle", to_string(s)), 1, 16, false, slot_field});
  }
  static constexpr auto latency_field = [](ChipConfig&) -> ParamSpec::FieldRef {
    return static_cast<std::uint64_t*>(nullptr);
  };
  for (std::size_t i = 0; i < kLatencyClassCount; ++i) {
    const auto lc = static_cast<LatencyClass>(i);
    p.push_back(ParamSpec{fmt::format("latency.{}", preset_key(lc)), Q::kCycles,
                          fmt::format("latency of latency class '{}'", preset_key(lc)), 0, 1e6, false, latency_field});
  }
  add("branch.delay_slots", Q::kCount, "bundles after a branch that execute whatever it decides", 0, 64,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.branch_delay_slots; });

  add("vmem.size", Q::kBytes, "vector memory per TensorCore", 4096, kGiB,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.vmem.size_bytes; });
  add("vmem.bandwidth", Q::kBandwidth, "VMEM port bandwidth seen by DMA", 1e6, 1e15,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.vmem.bandwidth; });
  add("vmem.latency", Q::kCycles, "VMEM access latency", 0, 1e5,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.vmem.latency_cycles; });
  add("smem.size", Q::kBytes, "scalar memory per TensorCore", 4, 64 * kMiB,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.smem.size_bytes; });
  add("sflag.count", Q::kCount, "sync flags per TensorCore", 1, 65536,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.sflag.count; });
  add("hbm.size", Q::kBytes, "HBM per chip (shared by its TensorCores)", 4096, kTiB,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.hbm.size_bytes; });
  add("hbm.bandwidth", Q::kBandwidth, "HBM bandwidth per chip", 1e6, 1e15,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.hbm.bandwidth; });
  add("hbm.latency", Q::kTime, "HBM access latency", 0, 1e-3,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.hbm.latency_s; });
  add("dma.chunk_size", Q::kBytes,
      "DMA service chunk: ports serve concurrent DMAs round-robin in chunks of this size (fidelity vs speed)", 32,
      16 * kMiB, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.dma.chunk_bytes; });
  add("dma.max_in_flight", Q::kCount, "DMA descriptors in flight per TensorCore", 1, 1024,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.dma.max_in_flight; });
  p.push_back(
      ParamSpec{"dma.remote_traffic", Q::kCount,
                "1: remote DMA bytes read from or written to HBM share the endpoints' HBM ports with their DMAs", 0, 1,
                false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.dma.remote_traffic; }, "0"});
  add("ici.link_bandwidth", Q::kBandwidth, "ICI bandwidth per link, one way", 1e6, 1e15,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.ici.link_bandwidth; });
  add("ici.links_per_chip", Q::kCount, "ICI links per chip", 1, 32,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.ici.links_per_chip; });
  add("ici.hop_latency", Q::kTime, "latency of one ICI hop", 0, 1e-3,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.ici.hop_latency_s; });
  add("ici.packet_size", Q::kBytes,
      "ICI packet: links forward transfers in packets of this size, store-and-forward per hop (fidelity vs speed)", 32,
      16 * kMiB, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.ici.packet_bytes; });
  p.push_back(ParamSpec{"ici.payload_efficiency", Q::kFraction,
                        "fraction of a link's rate that carries payload (headers, flow control, CRC take the rest)",
                        0.01, 1, false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.ici.payload_efficiency; },
                        "1"});
  add("ici.torus_dims", Q::kCount, "torus dimensionality (1, 2 or 3)", 1, 3,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.ici.torus_dims; });
  add("ici.wrap_multiple", Q::kCount, "an axis has wraparound links iff its length is a multiple of this", 1, 4096,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.ici.wrap_multiple; });
  p.push_back(ParamSpec{"ici.max_slice", Q::kCount, "largest slice, e.g. 16x16 or 16x20x28", 0, 0, true,
                        [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.ici.max_slice; }});
  // The fabric: optional in a preset (the TPU presets leave the defaults: a torus).
  auto add_default = [&](std::string path, Quantity q, std::string description, double min_value, double max_value,
                         bool is_text, ParamSpec::FieldRef (*field)(ChipConfig&), const char* default_value) {
    p.push_back(
        ParamSpec{std::move(path), q, std::move(description), min_value, max_value, is_text, field, default_value});
  };
  add_default(
      "fabric.kind", Q::kCount, "how chips are joined: torus (ICI links between neighbours) or nvswitch", 0, 0, true,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.kind; }, "torus");
  add_default(
      "fabric.switch_links", Q::kCount,
      "nvswitch: links from a chip to each switch of its domain, e.g. 5,4,4,5 (summing to ici.links_per_chip)", 0, 0,
      true, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.switch_links; }, "");
  add_default(
      "fabric.domain_size", Q::kCount, "nvswitch: most chips one switched domain joins (0 on a torus)", 0, 4096, false,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.domain_size; }, "0");
  add_default(
      "fabric.switch_latency", Q::kTime, "nvswitch: a switch's forwarding latency, per traversal", 0, 1e-3, false,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.switch_latency_s; }, "0s");
  add_default(
      "fabric.nic_bandwidth", Q::kBandwidth, "scale-out NIC per chip, one way (0: none)", 0, 1e15, false,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.nic_bandwidth; }, "0B/s");
  add_default(
      "fabric.nic_latency", Q::kTime, "latency of one scale-out link (NIC to leaf, leaf to spine)", 0, 1e-3, false,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.nic_latency_s; }, "0s");
  add_default(
      "fabric.link_payload_bandwidth", Q::kBandwidth,
      "nvswitch: payload rate of one link after protocol overhead (NCCL's effective rate; 0: the wire rate)", 0, 1e15,
      false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.link_payload_bandwidth; }, "0B/s");
  add_default(
      "fabric.protocol", Q::kCount,
      "nvswitch: the NCCL protocol of a run's collectives, LL, LL128, Simple or NVLS (in-network's Simple; empty: "
      "none; tpuemu collective --proto sets it)",
      0, 0, true, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.protocol; }, "");
  add_default(
      "fabric.nvls", Q::kCount,
      "nvswitch: 1 if the switches reduce and multicast (NVLink SHARP, NVLS: Hopper and later), else 0", 0, 1, false,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.nvls; }, "0");
  add_default(
      "protocol.ll.payload_efficiency", Q::kFraction, "NCCL LL: fraction of a link's payload rate its lines carry",
      0.01, 1, false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll.payload_efficiency; }, "1");
  add_default(
      "protocol.ll.hop_latency", Q::kTime, "NCCL LL: latency of one GPU-to-GPU hop, paid once per message", 0, 1e-3,
      false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll.hop_latency_s; }, "0s");
  add_default(
      "protocol.ll.base_latency", Q::kTime, "NCCL LL: base latency of a collective (launch, set-up)", 0, 1e-3, false,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll.base_latency_s; }, "0s");
  add_default(
      "protocol.ll.net_hop_latency", Q::kTime,
      "NCCL LL: latency of one GPU-to-GPU hop over the scale-out network (NIC, leaf, spine), paid once per message", 0,
      1e-3, false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll.net_hop_latency_s; }, "0s");
  add_default(
      "protocol.ll128.payload_efficiency", Q::kFraction,
      "NCCL LL128: fraction of a link's payload rate its lines carry", 0.01, 1, false,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll128.payload_efficiency; }, "1");
  add_default(
      "protocol.ll128.hop_latency", Q::kTime, "NCCL LL128: latency of one GPU-to-GPU hop, paid once per message", 0,
      1e-3, false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll128.hop_latency_s; }, "0s");
  add_default(
      "protocol.ll128.base_latency", Q::kTime, "NCCL LL128: base latency of a collective (launch, set-up)", 0, 1e-3,
      false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll128.base_latency_s; }, "0s");
  add_default(
      "protocol.ll128.net_hop_latency", Q::kTime,
      "NCCL LL128: latency of one GPU-to-GPU hop over the scale-out network (NIC, leaf, spine), paid once per message",
      0, 1e-3, false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll128.net_hop_latency_s; }, "0s");
  add_default(
      "protocol.simple.payload_efficiency", Q::kFraction, "NCCL Simple: fraction of a link's payload rate it carries",
      0.01, 1, false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.simple.payload_efficiency; }, "1");
  add_default(
      "protocol.simple.hop_latency", Q::kTime, "NCCL Simple: latency of one GPU-to-GPU hop, paid once per message", 0,
      1e-3, false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.simple.hop_latency_s; }, "0s");
  add_default(
      "protocol.simple.base_latency", Q::kTime, "NCCL Simple: base latency of a collective (launch, set-up)", 0, 1e-3,
      false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.simple.base_latency_s; }, "0s");
  add_default(
      "protocol.simple.net_hop_latency", Q::kTime,
      "NCCL Simple: latency of one GPU-to-GPU hop over the scale-out network (NIC, leaf, spine), paid once per message",
      0, 1e-3, false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.simple.net_hop_latency_s; }, "0s");
  add_default(
      "protocol.nvls.payload_efficiency", Q::kFraction,
      "NCCL NVLS (in-network, Simple): fraction of a link's payload rate it reaches", 0.01, 1, false,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.nvls.payload_efficiency; }, "1");
  add_default(
      "protocol.nvls.hop_latency", Q::kTime, "NCCL NVLS: latency of one GPU-to-GPU hop, paid once per message", 0, 1e-3,
      false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.nvls.hop_latency_s; }, "0s");
  add_default(
      "protocol.nvls.base_latency", Q::kTime, "NCCL NVLS: base latency of a collective (launch, set-up)", 0, 1e-3,
      false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.nvls.base_latency_s; }, "0s");
  add_default(
      "protocol.nvls.net_hop_latency", Q::kTime,
      "NCCL NVLS: latency of one GPU-to-GPU hop over the scale-out network (NIC, leaf, spine), paid once per message",
      0, 1e-3, false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.nvls.net_hop_latency_s; }, "0s");
  add_default(
      "fabric.nccl_channels", Q::kCount,
      "nvswitch: NCCL's channels on this domain (its rings' nChannels; 0: channels not modelled)", 0, 64, false,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.nccl_channels; }, "0");
  add_default(
      "fabric.active_channels", Q::kCount,
      "nvswitch: the channels a run's collective uses, at most fabric.nccl_channels (0: all; tpuemu collective "
      "sets it per size with NCCL's channel tuning)",
      0, 64, false, [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.active_channels; }, "0");
  for (const char* name : {"ll", "ll128", "simple", "nvls"}) {
    const std::string proto = name;
    const std::string nccl = proto == "ll" ? "LL" : proto == "ll128" ? "LL128" : proto == "simple" ? "Simple" : "NVLS";
    ParamSpec::FieldRef (*threads)(ChipConfig&) = nullptr;
    ParamSpec::FieldRef (*threshold)(ChipConfig&) = nullptr;
    ParamSpec::FieldRef (*cap)(ChipConfig&) = nullptr;
    if (proto == "ll") {
      threads = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll.max_threads; };
      threshold = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll.thread_threshold; };
      cap = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll.max_bandwidth; };
    } else if (proto == "ll128") {
      threads = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll128.max_threads; };
      threshold = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll128.thread_threshold; };
      cap = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.ll128.max_bandwidth; };
    } else if (proto == "simple") {
      threads = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.simple.max_threads; };
      threshold = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.simple.thread_threshold; };
      cap = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.simple.max_bandwidth; };
    } else {
      threads = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.nvls.max_threads; };
      threshold = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.nvls.thread_threshold; };
      cap = [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.protocol.nvls.max_bandwidth; };
    }
    add_default("protocol." + proto + ".max_threads", Q::kCount,
                "NCCL " + nccl + ": threads per channel at most (its channel tuning; 0: every channel runs)", 0, 4096,
                false, threads, "0");
    add_default("protocol." + proto + ".thread_threshold", Q::kCount,
                "NCCL " + nccl +
                    ": bytes per thread before another channel is used (its channel tuning; a ring's LL "
                    "threshold is this x the ranks)",
                0, 1 << 20, false, threshold, "0");
    add_default("protocol." + proto + ".max_bandwidth", Q::kBandwidth,
                "NCCL " + nccl + ": the most payload a GPU moves per second over all its links (0: no cap)", 0, 1e15,
                false, cap, "0B/s");
  }
  add_default(
      "fabric.switch_ports", Q::kCount, "ports of a scale-out (leaf or spine) switch (0: none)", 0, 4096, false,
      [](ChipConfig& c) -> ParamSpec::FieldRef { return &c.fabric.switch_ports; }, "0");
  return p;
}

const std::vector<ParamSpec>& params_table() {
  static const std::vector<ParamSpec> table = build_params();
  return table;
}

// Resolves the storage of `spec` in `c`, including the per-class arrays.
ParamSpec::FieldRef field_of(const ParamSpec& spec, ChipConfig& c) {
  std::string_view path = spec.path;
  if (path.starts_with("slots.")) {
    return &c.slot_capacity[static_cast<std::size_t>(*slot_class_from_key(path.substr(6)))];
  }
  if (path.starts_with("latency.")) {
    return &c.latency_cycles[static_cast<std::size_t>(*latency_class_from_key(path.substr(8)))];
  }
  return spec.field(c);
}

std::string unknown_field_message(std::string_view path) {
  std::string_view best;
  std::size_t best_distance = 4;
  for (const auto& spec : params_table()) {
    // The distance is at least the length difference: skip the quadratic work.
    const std::size_t length_gap =
        path.size() > spec.path.size() ? path.size() - spec.path.size() : spec.path.size() - path.size();
    if (length_gap >= best_distance) continue;
    const std::size_t d = edit_distance(path, spec.path);
    if (d < best_distance) {
      best_distance = d;
      best = spec.path;
    }
  }
  if (best.empty()) return "unknown field (see `tpuemu params` for the list)";
  return fmt::format("unknown field; did you mean '{}'?", best);
}

std::string value_text(const json& v, const std::string& origin, const std::string& path) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_unsigned() || v.is_number_integer()) return v.dump();
  if (v.is_number_float()) return fmt::format("{:.17g}", v.get<double>());
  throw ConfigError(origin, path, fmt::format("expected a number or a string with a unit, got {}", v.dump()));
}

bool is_leaf(const json& v) {
  return !v.is_object() || v.contains("value");
}

void collect(const json& node, const std::string& prefix, const std::string& origin, ChipSpec& spec) {
  for (const auto& [key, v] : node.items()) {
    if (key == "$comment") continue;
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (!is_leaf(v)) {
      if (v.empty()) throw ConfigError(origin, path, "empty group");
      collect(v, path, origin, spec);
      continue;
    }
    if (find_param(path) == nullptr) throw ConfigError(origin, path, unknown_field_message(path));
    ChipSpec::Value value;
    value.origin = origin;
    value.provenance = {Provenance::Kind::kUser, origin};
    if (v.is_object()) {
      int provenance_keys = 0;
      for (const auto& [leaf_key, leaf_value] : v.items()) {
        if (leaf_key == "value" || leaf_key == "note" || leaf_key == "unit") continue;
        Provenance::Kind kind;
        if (leaf_key == "source") {
          kind = Provenance::Kind::kSource;
        } else if (leaf_key == "derived") {
          kind = Provenance::Kind::kDerived;
        } else if (leaf_key == "assumed") {
          kind = Provenance::Kind::kAssumed;
        } else if (leaf_key == "user") {
          kind = Provenance::Kind::kUser;
        } else {
          throw ConfigError(origin, path,
                            fmt::format("unknown key '{}' (a parameter takes value, unit, note and one of "
                                        "source, derived, assumed, user)",
                                        leaf_key));
        }
        if (!leaf_value.is_string()) throw ConfigError(origin, path, fmt::format("'{}' must be a string", leaf_key));
        if (++provenance_keys > 1) throw ConfigError(origin, path, "more than one of source/derived/assumed/user");
        value.provenance = {kind, leaf_value.get<std::string>()};
      }
      value.text = value_text(v.at("value"), origin, path);
      if (v.contains("unit")) {
        const ParamSpec* spec_of = find_param(path);
        if (!v.at("unit").is_string() ||
            (!spec_of->is_text && v.at("unit").get<std::string>() != base_unit(spec_of->quantity))) {
          throw ConfigError(origin, path,
                            fmt::format("'unit' must be \"{}\" (the base unit); write other units inside the value",
                                        base_unit(spec_of->quantity)));
        }
      }
    } else {
      value.text = value_text(v, origin, path);
    }
    spec.values[path] = std::move(value);
  }
}

// A range end: counts and cycles as whole numbers in full ("1000000").
std::string range_bound(double value, Quantity q) {
  if (q == Quantity::kCount || q == Quantity::kCycles) return fmt::format("{}", static_cast<std::uint64_t>(value));
  return format_quantity(value, q);
}

// Positive decimal numbers of at most `max` joined by `separator`
// ("16x20x28", "5,4,4,5"); empty on malformed text or a zero.
std::vector<std::uint64_t> parse_positive_list(std::string_view text, char separator, std::uint64_t max) {
  std::vector<std::uint64_t> values;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    const std::string_view part = text.substr(start, end - start);
    if (part.empty()) return {};
    std::uint64_t v = 0;
    for (char ch : part) {
      if (ch < '0' || ch > '9') return {};
      v = v * 10 + static_cast<std::uint64_t>(ch - '0');
      if (v > max) return {};
    }
    if (v == 0) return {};
    values.push_back(v);
    start = end + 1;
  }
  return values;
}

// "5,4,4,5" -> {5, 4, 4, 5}.
std::vector<std::uint64_t> parse_counts(std::string_view text) {
  return parse_positive_list(text, ',', 4096);
}

std::vector<std::uint64_t> parse_slice(std::string_view text) {
  return parse_positive_list(text, 'x', 1'000'000);
}

}  // namespace

ConfigError::ConfigError(std::string file, std::string field, const std::string& message)
    : std::runtime_error(field.empty() ? fmt::format("{}: {}", file, message)
                                       : fmt::format("{}: field '{}': {}", file, field, message)),
      file_(std::move(file)),
      field_(std::move(field)) {}

std::string_view to_string(Provenance::Kind kind) {
  switch (kind) {
    case Provenance::Kind::kSource:
      return "source";
    case Provenance::Kind::kDerived:
      return "derived";
    case Provenance::Kind::kAssumed:
      return "assumed";
    case Provenance::Kind::kUser:
      return "user";
  }
  return "user";
}

std::span<const ParamSpec> chip_params() {
  return params_table();
}

const ParamSpec* find_param(std::string_view path) {
  for (const auto& spec : params_table()) {
    if (spec.path == path) return &spec;
  }
  return nullptr;
}

double ChipConfig::link_payload_rate() const {
  const double rate =
      fabric.link_payload_bandwidth > 0 ? fabric.link_payload_bandwidth : ici.link_bandwidth * ici.payload_efficiency;
  const Protocol* p = active_protocol();
  if (p == nullptr) return rate;
  double out = rate * p->payload_efficiency;
  if (fabric.active_channels > 0 && fabric.nccl_channels > 0) {
    out *= static_cast<double>(fabric.active_channels) / static_cast<double>(fabric.nccl_channels);
  }
  if (p->max_bandwidth > 0 && ici.links_per_chip > 0) {
    out = std::min(out, p->max_bandwidth / static_cast<double>(ici.links_per_chip));
  }
  return out;
}

const ChipConfig::Protocol* ChipConfig::active_protocol() const {
  if (fabric.protocol == "LL") return &protocol.ll;
  if (fabric.protocol == "LL128") return &protocol.ll128;
  if (fabric.protocol == "Simple") return &protocol.simple;
  if (fabric.protocol == "NVLS") return &protocol.nvls;
  return nullptr;
}

double ChipConfig::switched_hop_latency() const {
  const double physical = 2 * ici.hop_latency_s + fabric.switch_latency_s;
  const Protocol* p = active_protocol();
  return p != nullptr ? std::max(physical, p->hop_latency_s) : physical;
}

double ChipConfig::nic_hop_latency() const {
  const double physical = 4 * fabric.nic_latency_s;
  const Protocol* p = active_protocol();
  return p != nullptr ? std::max(physical, p->net_hop_latency_s) : physical;
}

double ChipConfig::peak_bf16_flops() const {
  return static_cast<double>(mxus_per_chip()) * static_cast<double>(mxu.size * mxu.size) * 2.0 * clock_hz;
}

double ChipConfig::ici_bandwidth_per_chip() const {
  return ici.link_bandwidth * static_cast<double>(ici.links_per_chip);
}

std::vector<std::uint64_t> ChipConfig::FabricParams::links_per_switch() const {
  return parse_counts(switch_links);
}

std::vector<std::uint64_t> ChipConfig::max_slice_dims() const {
  return parse_slice(ici.max_slice);
}

Cycles ChipConfig::seconds_to_cycles(double seconds) const {
  return Cycles(static_cast<std::uint64_t>(std::ceil(seconds * clock_hz - 1e-9)));
}

ChipSpec parse_chip_spec(std::string_view json_text, const std::string& origin) {
  json doc;
  try {
    doc = parse_json(json_text, origin);
  } catch (const InputFileError& e) {
    throw ConfigError(e.file(), "", e.message());
  }
  if (!doc.is_object()) throw ConfigError(origin, "", "a chip file must hold a JSON object");
  ChipSpec spec;
  spec.origin = origin;
  auto text_field = [&](const char* key) -> std::optional<std::string> {
    if (!doc.contains(key)) return std::nullopt;
    if (!doc.at(key).is_string()) throw ConfigError(origin, key, "must be a string");
    return doc.at(key).get<std::string>();
  };
  spec.name = text_field("name");
  spec.description = text_field("description");
  spec.base = text_field("base");
  json params = doc;
  for (const char* key : {"name", "description", "base", "origins", "derived"}) params.erase(key);
  // The output of chip_config_json nests the parameters under "params".
  if (params.contains("params")) {
    json inner = params.at("params");
    params.erase("params");
    if (!inner.is_object()) throw ConfigError(origin, "params", "must be an object");
    params.update(inner);
  }
  collect(params, "", origin, spec);
  return spec;
}

ChipSpec read_chip_spec(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path, JsonLimits{}.max_bytes);
  } catch (const InputFileError& e) {
    throw ConfigError(e.file(), "", e.message());
  }
  return parse_chip_spec(text, path);
}

void apply_override(ChipSpec& spec, std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw ConfigError("--set", std::string(assignment), "expected PATH=VALUE, e.g. hbm.bandwidth=1.0e12");
  }
  const std::string path(assignment.substr(0, eq));
  if (find_param(path) == nullptr) throw ConfigError("--set", path, unknown_field_message(path));
  ChipSpec::Value value;
  value.text = std::string(assignment.substr(eq + 1));
  value.origin = "--set";
  value.provenance = {Provenance::Kind::kUser, fmt::format("--set {}", assignment)};
  spec.values[path] = std::move(value);
}

ChipConfig resolve_chip(std::span<const ChipSpec> layers) {
  ChipConfig c;
  struct Merged {
    const ChipSpec::Value* value;
    std::size_t layer;
  };
  std::map<std::string, Merged, std::less<>> merged;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const ChipSpec& layer = layers[i];
    if (layer.name) c.name = *layer.name;
    if (layer.description) c.description = *layer.description;
    c.origins.push_back(layer.origin);
    for (const auto& [path, value] : layer.values) merged[path] = {&value, i};
  }
  const std::string last_origin = layers.empty() ? std::string("<none>") : layers.back().origin;
  std::deque<ChipSpec::Value> defaults;  // stable addresses for `merged`
  if (c.name.empty()) throw ConfigError(last_origin, "name", "missing: every chip needs a name");

  // 1. Parse every declared parameter.
  for (const ParamSpec& spec : params_table()) {
    auto it = merged.find(spec.path);
    if (it == merged.end() && spec.default_value != nullptr) {
      // Member by member: GCC 12 at -O3 warns (maybe-uninitialized) on the
      // temporary an aggregate initialiser would make here.
      ChipSpec::Value& value = defaults.emplace_back();
      value.text = spec.default_value;
      value.provenance.kind = Provenance::Kind::kAssumed;
      value.provenance.text = "default";
      value.origin = "default";
      it = merged.emplace(spec.path, Merged{&defaults.back(), 0}).first;
    }
    if (it == merged.end()) {
      throw ConfigError(last_origin, spec.path,
                        fmt::format("missing ({}, in {})", spec.description,
                                    spec.is_text ? "text" : std::string(quantity_name(spec.quantity))));
    }
    const ChipSpec::Value& v = *it->second.value;
    const ParamSpec::FieldRef ref = field_of(spec, c);
    if (spec.is_text) {
      *std::get<std::string*>(ref) = v.text;
    } else {
      double value = 0;
      try {
        value = parse_quantity(v.text, spec.quantity);
      } catch (const UnitError& e) {
        throw ConfigError(v.origin, spec.path, e.what());
      }
      if (value < spec.min_value || value > spec.max_value) {
        throw ConfigError(
            v.origin, spec.path,
            fmt::format("{} is {} the {} {} (range {})", v.text, value < spec.min_value ? "below" : "above",
                        value < spec.min_value ? "minimum" : "maximum",
                        range_bound(value < spec.min_value ? spec.min_value : spec.max_value, spec.quantity),
                        format_range(spec)));
      }
      if (auto* d = std::get_if<double*>(&ref)) {
        **d = value;
      } else {
        *std::get<std::uint64_t*>(ref) = static_cast<std::uint64_t>(value);
      }
    }
    c.provenance[spec.path] = v.provenance;
  }

  // 2. Rules between parameters. `blame(a, b)` picks the one of the two a
  // later layer set (`a` if the same layer set both).
  auto layer_of = [&](std::string_view path) { return merged.find(path)->second.layer; };
  auto origin_of = [&](std::string_view path) { return merged.find(path)->second.value->origin; };
  auto blame = [&](std::string_view a, std::string_view b) { return layer_of(b) > layer_of(a) ? b : a; };
  const auto dims = c.max_slice_dims();
  if (dims.empty()) {
    throw ConfigError(origin_of("ici.max_slice"), "ici.max_slice",
                      fmt::format("'{}' is not a slice shape like 16x16 or 16x20x28", c.ici.max_slice));
  }
  if (dims.size() != c.ici.torus_dims) {
    const std::string_view at = blame("ici.max_slice", "ici.torus_dims");
    throw ConfigError(
        origin_of(at), std::string(at),
        at == "ici.max_slice"
            ? fmt::format("'{}' has {} axes but ici.torus_dims is {}", c.ici.max_slice, dims.size(), c.ici.torus_dims)
            : fmt::format("{} axes, but ici.max_slice '{}' has {}", c.ici.torus_dims, c.ici.max_slice, dims.size()));
  }
  if (c.fabric.kind != "torus" && c.fabric.kind != "nvswitch") {
    throw ConfigError(origin_of("fabric.kind"), "fabric.kind",
                      fmt::format("'{}' is not a fabric: torus or nvswitch", c.fabric.kind));
  }
  if (!c.fabric.protocol.empty() && c.fabric.protocol != "LL" && c.fabric.protocol != "LL128" &&
      c.fabric.protocol != "Simple" && c.fabric.protocol != "NVLS") {
    throw ConfigError(origin_of("fabric.protocol"), "fabric.protocol",
                      fmt::format("'{}' is not an NCCL protocol: LL, LL128, Simple or NVLS", c.fabric.protocol));
  }
  if (!c.fabric.protocol.empty() && !c.fabric.switched()) {
    throw ConfigError(origin_of("fabric.protocol"), "fabric.protocol",
                      fmt::format("NCCL protocols run on switched fabrics; {} is joined by a torus, whose ICI has "
                                  "none (ici.payload_efficiency is its overhead)",
                                  c.name));
  }
  if (c.fabric.active_channels > 0 && c.fabric.active_channels > c.fabric.nccl_channels) {
    const std::string_view at = blame("fabric.active_channels", "fabric.nccl_channels");
    throw ConfigError(origin_of(at), std::string(at),
                      fmt::format("fabric.active_channels {} is more than fabric.nccl_channels {}",
                                  c.fabric.active_channels, c.fabric.nccl_channels));
  }
  if (c.fabric.switched()) {
    const auto counts = parse_counts(c.fabric.switch_links);
    std::uint64_t sum = 0;
    for (std::uint64_t n : counts) sum += n;
    if (counts.empty()) {
      throw ConfigError(
          origin_of("fabric.switch_links"), "fabric.switch_links",
          fmt::format("'{}' is not a list of link counts like 5,4,4,5 (one per switch)", c.fabric.switch_links));
    }
    if (sum != c.ici.links_per_chip) {
      const std::string_view at = blame("fabric.switch_links", "ici.links_per_chip");
      throw ConfigError(origin_of(at), std::string(at),
                        fmt::format("fabric.switch_links '{}' adds up to {} links, ici.links_per_chip is {}",
                                    c.fabric.switch_links, sum, c.ici.links_per_chip));
    }
    if (c.fabric.link_payload_bandwidth > c.ici.link_bandwidth) {
      const std::string_view at = blame("fabric.link_payload_bandwidth", "ici.link_bandwidth");
      throw ConfigError(origin_of(at), std::string(at),
                        "fabric.link_payload_bandwidth is above the wire rate ici.link_bandwidth");
    }
    if (c.fabric.domain_size < 2) {
      throw ConfigError(origin_of("fabric.domain_size"), "fabric.domain_size",
                        "a switched domain joins at least 2 chips");
    }
  }
  if (c.dma.chunk_bytes % 32 != 0) {
    throw ConfigError(origin_of("dma.chunk_size"), "dma.chunk_size", "must be a whole number of 32-byte granules");
  }
  const std::uint64_t row_bytes = c.vpu.lanes * 4;
  if (c.vmem.size_bytes % row_bytes != 0) {
    const std::string_view at = blame("vmem.size", "vpu.lanes");
    throw ConfigError(
        origin_of(at), std::string(at),
        at == "vmem.size"
            ? fmt::format("must be a whole number of {}-byte rows (vpu.lanes x 4 B)", row_bytes)
            : fmt::format("{} lanes make {}-byte VMEM rows, which do not divide vmem.size ({})", c.vpu.lanes, row_bytes,
                          format_quantity(static_cast<double>(c.vmem.size_bytes), Quantity::kBytes)));
  }
  if (c.mxu.size % c.vpu.lanes != 0 && c.vpu.lanes % c.mxu.size != 0) {
    const std::string_view at = blame("mxu.size", "vpu.lanes");
    throw ConfigError(
        origin_of(at), std::string(at),
        at == "mxu.size"
            ? fmt::format("{} does not tile the {} vector lanes (one must divide the other)", c.mxu.size, c.vpu.lanes)
            : fmt::format("{} does not tile mxu.size {} (one must divide the other)", c.vpu.lanes, c.mxu.size));
  }
  return c;
}

std::variant<double, std::uint64_t, std::string> param_value(const ChipConfig& config, const ParamSpec& spec) {
  ChipConfig& mutable_config = const_cast<ChipConfig&>(config);  // field_of hands out pointers; only read here
  return std::visit([](auto* p) -> std::variant<double, std::uint64_t, std::string> { return *p; },
                    field_of(spec, mutable_config));
}

std::string format_param(const ChipConfig& config, const ParamSpec& spec) {
  const auto v = param_value(config, spec);
  if (const auto* text = std::get_if<std::string>(&v)) return *text;
  const double number =
      std::holds_alternative<double>(v) ? std::get<double>(v) : static_cast<double>(std::get<std::uint64_t>(v));
  return format_quantity(number, spec.quantity);
}

std::string format_range(const ParamSpec& spec) {
  if (spec.is_text) return "text";
  return fmt::format("{} to {}", range_bound(spec.min_value, spec.quantity),
                     range_bound(spec.max_value, spec.quantity));
}

std::string chip_config_json(const ChipConfig& config) {
  json out;
  out["name"] = config.name;
  out["description"] = config.description;
  out["origins"] = config.origins;
  json params = json::object();
  for (const ParamSpec& spec : params_table()) {
    json leaf;
    std::visit([&](const auto& v) { leaf["value"] = v; }, param_value(config, spec));
    if (!spec.is_text && !base_unit(spec.quantity).empty()) leaf["unit"] = base_unit(spec.quantity);
    const auto& prov = config.provenance.at(spec.path);
    leaf[std::string(to_string(prov.kind))] = prov.text;
    // "/" + path, built in place: GCC 12 at -O3 reports a false -Wrestrict on
    // `const char* + std::string&&` (GCC bug 105651).
    std::string pointer = "/";
    pointer += spec.path;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    params[json::json_pointer(pointer)] = leaf;
  }
  out["params"] = params;
  out["derived"] = {
      {"peak_bf16_flops", config.peak_bf16_flops()},
      {"mxus_per_chip", config.mxus_per_chip()},
      {"ici_bandwidth_per_chip", config.ici_bandwidth_per_chip()},
      {"flops_per_hbm_byte", config.peak_bf16_flops() / config.hbm.bandwidth},
  };
  return out.dump(2);
}

}  // namespace tpuemu
