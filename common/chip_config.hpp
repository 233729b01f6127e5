// Chip configuration in two layers (house style 3):
//  * ChipSpec: what a JSON preset, a --chip-file or a --set override says,
//    field by field, each with its provenance; nothing is checked yet.
//  * ChipConfig: the immutable, validated runtime configuration in base units
//    (Hz, B, B/s, s, cycles), resolved from a chain of ChipSpecs.
// Every parameter is declared once in chip_params() with its unit and
// description; parsing, validation, --set, `tpuemu params` and the JSON dump
// all derive from that table.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/machine_classes.hpp"
#include "common/types.hpp"
#include "common/units.hpp"

namespace tpuemu {

// A bad preset or override. what() reads "<file>: field '<field>': <message>".
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, std::string field, const std::string& message);
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& field() const { return field_; }

 private:
  std::string file_;
  std::string field_;
};

// Where a number comes from: a citation, arithmetic on cited numbers, an
// assumption, or a user override.
struct Provenance {
  enum class Kind { kSource, kDerived, kAssumed, kUser };
  Kind kind = Kind::kUser;
  std::string text;
};
std::string_view to_string(Provenance::Kind kind);

struct ChipConfig {
  std::string name;
  std::string description;

  double clock_hz = 0;
  std::uint64_t tensorcores_per_chip = 0;

  struct Mxu {
    std::uint64_t count = 0;  // per TensorCore
    std::uint64_t size = 0;   // systolic array is size x size
    std::uint64_t cycles_per_tile = 0;
    std::uint64_t result_fifo_depth = 0;
    std::uint64_t latch_wave_cycles = 0;  // pushes wait this long after a latching multiply's first row
  } mxu;
  struct Vpu {
    std::uint64_t sublanes = 0;
    std::uint64_t lanes = 0;
    std::uint64_t vregs = 0;
    std::uint64_t mask_regs = 0;
  } vpu;
  struct Scalar {
    std::uint64_t sregs = 0;
    std::uint64_t predicates = 0;
  } scalar;
  struct Xlu {
    std::uint64_t count = 0;
    std::uint64_t fifo_depth = 0;
  } xlu;
  struct Eup {
    std::uint64_t fifo_depth = 0;
  } eup;
  // Per-bundle capacity of each slot class (kPseudo is unlimited and unused).
  std::array<std::uint64_t, kSlotClassCount> slot_capacity{};
  std::array<std::uint64_t, kLatencyClassCount> latency_cycles{};
  std::uint64_t branch_delay_slots = 0;

  struct Vmem {
    std::uint64_t size_bytes = 0;
    double bandwidth = 0;  // B/s
    std::uint64_t latency_cycles = 0;
  } vmem;
  struct Smem {
    std::uint64_t size_bytes = 0;
  } smem;
  struct Sflag {
    std::uint64_t count = 0;
  } sflag;
  struct Hbm {
    std::uint64_t size_bytes = 0;
    double bandwidth = 0;  // B/s
    double latency_s = 0;
  } hbm;
  struct Dma {
    std::uint64_t chunk_bytes = 0;
    std::uint64_t max_in_flight = 0;
    // 1: remote DMA bytes read from or written to HBM take their share of the
    // endpoints' HBM ports (README "ICI traffic and the HBM port"); 0: they
    // pass beside them.
    std::uint64_t remote_traffic = 0;
  } dma;
  struct Ici {
    double link_bandwidth = 0;  // B/s, one way, per link
    std::uint64_t links_per_chip = 0;
    double hop_latency_s = 0;
    std::uint64_t packet_bytes = 0;
    // The fraction of a link's rate that carries payload (packet headers,
    // flow control and CRC take the rest): a torus link moves payload at
    // link_bandwidth x this. Switched chips give fabric.link_payload_bandwidth.
    double payload_efficiency = 1;
    std::uint64_t torus_dims = 0;
    std::uint64_t wrap_multiple = 0;  // an axis wraps iff its length is a multiple of this
    std::string max_slice;            // e.g. "16x20x28"
  } ici;
  // How chips are joined (ici/fabric.hpp). "torus": ICI links between torus
  // neighbours (the TPUs; the fields below are unused). "nvswitch": every
  // link of a chip goes to a switch of its switched domain (the GPUs: an HGX
  // node, an NVL72 rack), and scale-out goes through one NIC per chip.
  struct FabricParams {
    std::string kind;                   // "torus" | "nvswitch"
    std::string switch_links;           // links to each switch of a domain, e.g. "5,4,4,5" (sum: ici.links_per_chip)
    std::uint64_t domain_size = 0;      // most chips one switched domain joins
    double switch_latency_s = 0;        // a switch's forwarding latency, per traversal
    double nic_bandwidth = 0;           // B/s, one way; 0: no scale-out NIC
    double nic_latency_s = 0;           // per scale-out link
    std::uint64_t switch_ports = 0;     // ports of a scale-out (leaf or spine) switch
    double link_payload_bandwidth = 0;  // B/s of payload per NVLink after protocol overhead; 0: the wire rate
    // The NCCL protocol a run's collectives use ("LL", "LL128", "Simple",
    // "NVLS": Simple for in-network; ""
    // none: the links' payload rate, no launch cost). Set per run by
    // `tpuemu collective --proto` (or its cost model); switched fabrics only.
    std::string protocol;
    std::uint64_t nvls = 0;  // 1: the switches reduce and multicast (NVLink SHARP, Hopper and later)
    // NCCL's channels (one CUDA block each) on this domain: its rings'
    // nChannels, which together reach link_payload_bandwidth on every link
    // (0: channels not modelled).
    std::uint64_t nccl_channels = 0;
    // The channels a run's collective uses (NCCL's per-size channel tuning,
    // programs::nccl_channels_in_use; set per run with fabric.protocol); 0:
    // all of nccl_channels. Under a protocol, a chip's links move payload at
    // active_channels / nccl_channels of their rate.
    std::uint64_t active_channels = 0;
    [[nodiscard]] bool switched() const { return kind == "nvswitch"; }
    // switch_links as counts ("5,4,4,5" -> {5, 4, 4, 5}; "" -> {}).
    [[nodiscard]] std::vector<std::uint64_t> links_per_switch() const;
  } fabric;
  // One NCCL protocol's parameters (FABRICS.md section 3): the fraction of a
  // link's payload rate its lines carry, its latency per GPU-to-GPU hop (each
  // message pays it once; the physical hop, 2 x ici.hop_latency +
  // fabric.switch_latency, when that is more) and its base latency (per
  // collective: launch and set-up, paid once at the program's start).
  struct Protocol {
    double payload_efficiency = 1;
    double hop_latency_s = 0;
    double base_latency_s = 0;
    // Its latency per GPU-to-GPU hop over the scale-out network (NIC, leaf,
    // spine; NCCL's NET row), when that is more than the physical path.
    double net_hop_latency_s = 0;
    // NCCL's channel tuning (enqueue.cc): a collective of nBytes runs on the
    // most channels c <= fabric.nccl_channels with nBytes >= c x max_threads x
    // thread_threshold (at least 1); 0: every channel.
    std::uint64_t max_threads = 0;
    std::uint64_t thread_threshold = 0;  // bytes per thread
    // The most payload a GPU moves per second under this protocol over all its
    // links (NCCL's llMaxBw for LL); 0: no cap.
    double max_bandwidth = 0;
  };
  struct Protocols {
    Protocol ll;
    Protocol ll128;
    Protocol simple;
    // NVLS (in-network): Simple's bulk transfers at NCCL's NVLS efficiency and
    // latency; what the in-network algorithm runs under when Simple is asked.
    Protocol nvls;
  } protocol;

  // Parameter path -> where its value came from.
  std::map<std::string, Provenance, std::less<>> provenance;
  // Files and overrides this config was resolved from, base first.
  std::vector<std::string> origins;

  // Derived numbers.
  [[nodiscard]] std::uint64_t mxus_per_chip() const { return tensorcores_per_chip * mxu.count; }
  // MXUs per chip x size^2 MACs x 2 FLOP x clock.
  [[nodiscard]] double peak_bf16_flops() const;
  [[nodiscard]] double ici_bandwidth_per_chip() const;  // all links, one way
  // A switched chip's payload rate per link (fabric.link_payload_bandwidth, else
  // the wire rate) and over all its links: what its transfers move at.
  // Under fabric.protocol, times that protocol's payload efficiency. A torus
  // link: ici.link_bandwidth x ici.payload_efficiency.
  // Under a protocol also times the share of NCCL's channels in use
  // (fabric.active_channels / fabric.nccl_channels), and at most the
  // protocol's max_bandwidth over ici.links_per_chip links.
  [[nodiscard]] double link_payload_rate() const;
  // The protocol fabric.protocol names (null: none).
  [[nodiscard]] const Protocol* active_protocol() const;
  // One GPU-to-GPU hop through a switch: 2 x ici.hop_latency +
  // fabric.switch_latency, or the active protocol's hop latency if that is more.
  [[nodiscard]] double switched_hop_latency() const;
  // The active protocol's base latency (0 without one).
  [[nodiscard]] double launch_latency() const {
    const Protocol* p = active_protocol();
    return p != nullptr ? p->base_latency_s : 0.0;
  }
  [[nodiscard]] double switched_egress() const { return link_payload_rate() * static_cast<double>(ici.links_per_chip); }
  // A scale-out link's payload rate: fabric.nic_bandwidth, times the active
  // protocol's payload efficiency (its lines cross the NIC as they cross
  // NVLink).
  [[nodiscard]] double nic_payload_rate() const {
    const Protocol* p = active_protocol();
    return p != nullptr ? fabric.nic_bandwidth * p->payload_efficiency : fabric.nic_bandwidth;
  }
  // One GPU-to-GPU hop across a fat tree's nodes through a spine (4 scale-out
  // links of fabric.nic_latency), or the active protocol's net_hop_latency
  // if that is more.
  [[nodiscard]] double nic_hop_latency() const;
  [[nodiscard]] std::vector<std::uint64_t> max_slice_dims() const;
  [[nodiscard]] std::uint64_t slot_capacity_of(SlotClass c) const { return slot_capacity[static_cast<std::size_t>(c)]; }
  [[nodiscard]] Cycles latency(LatencyClass c) const { return Cycles(latency_cycles[static_cast<std::size_t>(c)]); }
  [[nodiscard]] double cycles_to_seconds(Cycles c) const { return static_cast<double>(c.value()) / clock_hz; }
  // Whole cycles needed to cover `seconds` (rounded up).
  [[nodiscard]] Cycles seconds_to_cycles(double seconds) const;
};

// One declared parameter.
struct ParamSpec {
  std::string path;  // dotted, e.g. "hbm.bandwidth"
  Quantity quantity;
  std::string description;
  double min_value = 0;  // inclusive range in base units, checked by resolve_chip
  double max_value = 0;
  bool is_text = false;  // free text (no range)
  using FieldRef = std::variant<double*, std::uint64_t*, std::string*>;
  FieldRef (*field)(ChipConfig&) = nullptr;
  // The value a preset that does not name this parameter gets (provenance
  // "assumed: default"); null: every preset must set it.
  const char* default_value = nullptr;
};

// Every parameter of a chip, in presentation order.
std::span<const ParamSpec> chip_params();
const ParamSpec* find_param(std::string_view path);

// The value of `spec` in `config`, in base units (or text).
std::variant<double, std::uint64_t, std::string> param_value(const ChipConfig& config, const ParamSpec& spec);
// The same with a readable unit: "820 GB/s", "16 GiB", "4 cycles".
std::string format_param(const ChipConfig& config, const ParamSpec& spec);
// The valid range of `spec` with units: "1 to 64", "4 KiB to 1 GiB".
std::string format_range(const ParamSpec& spec);

// One layer of configuration as written, before validation.
struct ChipSpec {
  struct Value {
    std::string text;  // the value as written: "1.5GHz", "8", ...
    Provenance provenance;
    std::string origin;  // file or "--set"
  };
  std::string origin;  // file name for messages
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::optional<std::string> base;  // preset this layer overrides
  std::map<std::string, Value, std::less<>> values;
};

// Parses a preset/chip file's text. `origin` names it in errors. Text that
// is not JSON, larger than 1 MiB or nested more than 64 deep (see
// common/json_file.hpp), unknown fields, malformed leaves and provenance keys
// other than source/derived/assumed/note/unit are rejected with ConfigError.
ChipSpec parse_chip_spec(std::string_view json_text, const std::string& origin);
// Reads and parses a chip file with the same checks (a regular file of at
// most 1 MiB); ConfigError names the file.
ChipSpec read_chip_spec(const std::string& path);

// Applies "path=value" (from --set) to `spec`. Throws ConfigError on an
// unknown path or a missing '='.
void apply_override(ChipSpec& spec, std::string_view assignment);

// Resolves layers (base first, later layers win) into a validated ChipConfig:
// every parameter within its range, then the rules between parameters. A
// rule two parameters break together is blamed on the one set by the later
// layer (the user's change rather than the preset it overrides).
ChipConfig resolve_chip(std::span<const ChipSpec> layers);

// The resolved config as JSON: {"name", "description", "origins",
// "params": {group: {leaf: {"value", "unit", <provenance kind>}}}, "derived": {...}}.
// parse_chip_spec accepts this output back.
std::string chip_config_json(const ChipConfig& config);

}  // namespace tpuemu
