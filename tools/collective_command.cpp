#include "tools/collective_command.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "api/child_process.hpp"
#include "api/output_files.hpp"
#include "chip/fault.hpp"
#include "chip/host_io.hpp"
#include "chip/host_memory.hpp"
#include "chip/pod.hpp"
#include "common/numerics.hpp"
#include "common/parse_number.hpp"
#include "common/units.hpp"
#include "isa/assembler.hpp"
#include "programs/collective_reference.hpp"
#include "programs/collectives.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {

using api::check_writable;
using api::ChildOutcome;
using api::run_in_child;
using api::write_text_file;
namespace {

// "64K", "1G", "4096", "2MiB": K, M, G (and KiB, MiB, GiB) are powers of 1024, as in nccl-tests.
std::uint64_t parse_size(const std::string& text) {
  const auto value = parse_bytes(text);
  if (!value)
    throw std::invalid_argument(fmt::format("size '{}' is not a whole number of bytes like 65536, 64K or 1G", text));
  if (*value == 0) throw std::invalid_argument(fmt::format("size '{}' must be positive", text));
  return *value;
}

// "64K:1G" (doubling), "1M,4M", "16M".
std::vector<std::uint64_t> parse_sizes(const std::string& text) {
  std::vector<std::uint64_t> sizes;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    const std::uint64_t lo = parse_size(text.substr(0, colon));
    const std::uint64_t hi = parse_size(text.substr(colon + 1));
    if (hi < lo) throw std::invalid_argument(fmt::format("--sizes {}: the range ends below its start", text));
    for (std::uint64_t s = lo;; s *= 2) {
      sizes.push_back(s);
      if (s > hi / 2) break;  // the next doubling passes hi (or 64 bits)
    }
    return sizes;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    sizes.push_back(parse_size(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return sizes;
}

// Deterministic input of one chip: random f32 values, or bf16 values, as device bytes.
std::vector<std::uint8_t> chip_input(std::uint64_t bytes, bool bf16, std::uint32_t chip) {
  std::vector<std::uint8_t> out(bytes);
  std::mt19937 rng(1000 + chip);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  if (bf16) {
    for (std::uint64_t i = 0; i + 2 <= bytes; i += 2) {
      const std::uint16_t b = f32_to_bf16_bits(dist(rng));
      std::memcpy(&out[i], &b, 2);
    }
  } else {
    for (std::uint64_t i = 0; i + 4 <= bytes; i += 4) {
      const float f = dist(rng);
      std::memcpy(&out[i], &f, 4);
    }
  }
  return out;
}

struct Row {
  std::uint64_t bytes = 0;
  std::uint64_t cycles = 0;
  double seconds = 0;
  double host_seconds = 0;
  // Host cost: bundles issued, network events, the measuring process's peak RSS.
  std::uint64_t bundles = 0;
  std::uint64_t network_events = 0;
  std::uint64_t core_resumes = 0;
  std::uint64_t core_syncs = 0;
  std::uint64_t peak_rss_bytes = 0;
  std::string check = "skipped (--no-data)";
  std::string fault;
  // The exit code `fault` maps to: a program fault (3), or an input the run
  // refused before starting (2: buffers beyond HBM, ...).
  int fault_exit = kExitProgramFault;
  bool ok = true;
};

// One size in a child process (SystemC elaborates once per process).
Row measure(const programs::CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip, bool data,
            const std::string& routing, std::uint64_t max_cycles) {
  Row row;
  row.bytes = spec.bytes;
  const auto started = std::chrono::steady_clock::now();
  const isa::Program program =
      isa::assemble(programs::generate_collective(spec, topology, chip), fmt::format("{}-{}.llo", spec.op, spec.bytes));
  const programs::CollectiveShapes shapes = programs::collective_shapes(spec, topology);
  const bool bf16 = spec.dtype == "bf16";
  chip::PodRequest request;
  request.chip = chip;
  request.topology = topology;
  request.routing = routing;
  request.program = &program;
  request.options.compute_numerics = data;
  request.options.max_cycles = max_cycles;
  if (data) {
    // A chunk below one (8,128) tile is padded to the operand's device size
    // (the program reads only its first input_bytes).
    request.input = [&](std::uint32_t id, const std::string&, const chip::OperandBinding& b) {
      if (b.index != 0) return std::vector<std::uint8_t>{};
      std::vector<std::uint8_t> bytes = chip_input(shapes.input_bytes, bf16, id);
      bytes.resize(std::max<std::uint64_t>(bytes.size(), chip::device_bytes(b)), 0);
      return bytes;
    };
  }
  const chip::PodResult result = chip::run_pod(request);
  row.cycles = result.cycles;
  row.seconds = result.seconds;
  row.bundles = result.bundles;
  row.network_events = result.network_events;
  row.core_resumes = result.core_resumes;
  row.core_syncs = result.core_syncs;
  if (result.fault) {
    row.ok = false;
    row.fault = *result.fault;
    return row;
  }
  if (data) {
    std::vector<std::vector<std::uint8_t>> inputs;
    for (std::uint32_t id = 0; id < topology.chip_count(); ++id)
      inputs.push_back(chip_input(shapes.input_bytes, bf16, id));
    const auto expected = programs::collective_reference(spec, topology, inputs);
    std::uint64_t wrong_chips = 0;
    for (std::uint32_t id = 0; id < topology.chip_count(); ++id) {
      const auto& got = result.chips[id].outputs.at("1");
      if (got.size() < expected[id].size() || std::memcmp(got.data(), expected[id].data(), expected[id].size()) != 0) {
        ++wrong_chips;
      }
    }
    row.check = wrong_chips == 0 ? "bit-exact" : fmt::format("MISMATCH on {} chips", wrong_chips);
    row.ok = wrong_chips == 0;
  }
  row.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return row;
}

Row measure_in_child(const programs::CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip,
                     bool data, const std::string& routing, std::uint64_t max_cycles) {
  const ChildOutcome outcome = run_in_child(
      [&] {
        nlohmann::json j;
        try {
          const Row r = measure(spec, topology, chip, data, routing, max_cycles);
          rusage usage{};
          getrusage(RUSAGE_SELF, &usage);
          j = {{"bytes", r.bytes},
               {"cycles", r.cycles},
               {"seconds", r.seconds},
               {"host_seconds", r.host_seconds},
               {"bundles", r.bundles},
               {"network_events", r.network_events},
               {"core_resumes", r.core_resumes},
               {"core_syncs", r.core_syncs},
               {"peak_rss_bytes", static_cast<std::uint64_t>(usage.ru_maxrss) * 1024},
               {"check", r.check},
               {"fault", r.fault},
               {"ok", r.ok}};
        } catch (const chip::LoadError& e) {  // refused before the run: bad input
          j = {{"bytes", spec.bytes}, {"fault", e.what()},   {"ok", false},        {"cycles", 0},
               {"seconds", 0.0},      {"host_seconds", 0.0}, {"check", "not run"}, {"fault_exit", kExitBadInput}};
        } catch (const std::exception& e) {
          j = {{"bytes", spec.bytes}, {"fault", e.what()},   {"ok", false},        {"cycles", 0},
               {"seconds", 0.0},      {"host_seconds", 0.0}, {"check", "not run"}, {"fault_exit", kExitProgramFault}};
        }
        return j.dump();
      },
      /*quiet=*/false);
  Row row;
  row.bytes = spec.bytes;
  if (!outcome.output) {
    row.ok = false;
    row.fault = outcome.death;
    return row;
  }
  const auto j = nlohmann::json::parse(*outcome.output);
  row.cycles = j.at("cycles").get<std::uint64_t>();
  row.seconds = j.at("seconds").get<double>();
  row.host_seconds = j.at("host_seconds").get<double>();
  row.bundles = j.value("bundles", std::uint64_t{0});
  row.network_events = j.value("network_events", std::uint64_t{0});
  row.core_resumes = j.value("core_resumes", std::uint64_t{0});
  row.core_syncs = j.value("core_syncs", std::uint64_t{0});
  row.peak_rss_bytes = j.value("peak_rss_bytes", std::uint64_t{0});
  row.check = j.at("check").get<std::string>();
  row.fault = j.at("fault").get<std::string>();
  row.ok = j.at("ok").get<bool>();
  row.fault_exit = j.value("fault_exit", kExitProgramFault);
  return row;
}

}  // namespace

int collective_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  add_max_cycles_option(options);
  add_topology_options(options);
  options.add_options()("op", po::value<std::string>()->default_value("all-gather"),
                        "all-gather | reduce-scatter | all-reduce | all-to-all")(
      "topology", po::value<std::string>()->default_value("8x16"), "pod shape, e.g. 8x16, 4x4x4, 16")(
      "axes", po::value<std::string>(), "participating axes, e.g. y or x,y (default: all)")(
      "algo", po::value<std::string>()->default_value("bidir-ring"), "ring | bidir-ring | multi-axis")(
      "dtype", po::value<std::string>()->default_value("f32"), "f32 | bf16 (element type; reductions sum in it)")(
      "sizes", po::value<std::string>()->default_value("64K:64M"),
      "V in bytes: LO:HI doubling, or a list (K, M, G = powers of 1024, as in nccl-tests)")(
      "piece", po::value<std::string>(), "pipelining piece size (default: the generator's choice)")(
      "no-data", "timing only: no data moved or reduced, no check (identical times)")("json", po::value<std::string>(),
                                                                                      "write the rows as JSON");
  po::positional_options_description positional;
  bool help = false;
  const auto vm = parse_options(
      "collective",
      "--op all-gather|reduce-scatter|all-reduce|all-to-all [--chip v5e] [--topology 8x16] [--axes y] [--algo "
      "bidir-ring] [--dtype f32|bf16] [--sizes 64K:1G] [--no-data] [--json out.json]",
      args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;

  ChipConfig chip;
  ici::Topology topology{{1}, {false}};
  programs::CollectiveSpec spec;
  std::vector<std::uint64_t> sizes;
  const bool data = vm->count("no-data") == 0U;
  const std::string routing = (*vm)["routing"].as<std::string>();
  try {
    if (vm->count("json") != 0U) check_writable("--json", (*vm)["json"].as<std::string>());
    chip = load_chip(chip_request(*vm));
    topology = topology_from(*vm, (*vm)["topology"].as<std::string>(), chip);
    (void)ici::routing_policy(routing);
    spec.op = (*vm)["op"].as<std::string>();
    spec.algorithm = (*vm)["algo"].as<std::string>();
    spec.dtype = (*vm)["dtype"].as<std::string>();
    if (vm->count("axes") != 0U) {
      spec.axes = ici::parse_axis_list((*vm)["axes"].as<std::string>(), topology.axis_count(), "--axes",
                                       "name the participating axes like y or x,y");
    } else {
      for (std::size_t a = 0; a < topology.axis_count(); ++a) spec.axes.push_back(a);
    }
    if (vm->count("piece") != 0U) spec.piece_bytes = parse_size((*vm)["piece"].as<std::string>());
    sizes = parse_sizes((*vm)["sizes"].as<std::string>());
    // Every size is checked before the first run.
    for (const std::uint64_t v : sizes) {
      programs::CollectiveSpec s = spec;
      s.bytes = v;
      const auto shapes = programs::collective_shapes(s, topology);
      const double touched = static_cast<double>(topology.chip_count()) *
                             static_cast<double>(shapes.input_bytes * 2 + shapes.output_bytes + shapes.scratch_bytes);
      chip::check_host_memory(
          chip::estimate_pod_host_memory(topology.chip_count(), chip.tensorcores_per_chip,
                                         data ? static_cast<std::uint64_t>(touched) / topology.chip_count() : 0),
          fmt::format("size {}: the {} pod of {}", v, topology.shape(), chip.name));
      if (data && touched > 8.0 * (1ULL << 30)) {
        throw std::invalid_argument(fmt::format(
            "size {}: moving real data would touch {:.1f} GiB of host memory over {} chips; use --no-data for "
            "timing (identical times) or a smaller size",
            v, touched / (1ULL << 30), topology.chip_count()));
      }
    }
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu collective: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu collective: {}\n", e.what());
    return kExitBadInput;
  }

  spec.bytes = sizes.front();
  const programs::CollectivePlan plan = programs::plan_collective(spec, topology);
  const double n = static_cast<double>(plan.group_size);
  const double bus_factor = spec.op == "all-reduce" ? 2.0 * (n - 1) / n : (n - 1) / n;
  // Links into one chip that a stream uses at once: directions x parallel parts.
  const double links_in_use = static_cast<double>(plan.directions * plan.parts);
  std::string axes_text;
  for (std::size_t a : spec.axes) axes_text += fmt::format("{}{}", axes_text.empty() ? "" : ",", ici::axis_name(a));
  fmt::print("# tpuemu collective: {} of {} over axes {} of a {} pod of {}, {}, group of {} chips{}\n", spec.op,
             spec.dtype, axes_text, ici::describe(topology), chip.name, spec.algorithm, plan.group_size,
             data ? "" : " (--no-data: timing only)");
  fmt::print("# W = 2 x {} per axis; hop latency {}; busbw = algbw x {}; linkbw = busbw / {} links in use per chip\n",
             format_quantity(chip.ici.link_bandwidth, Quantity::kBandwidth),
             format_quantity(chip.ici.hop_latency_s, Quantity::kTime), spec.op == "all-reduce" ? "2(N-1)/N" : "(N-1)/N",
             links_in_use);
  fmt::print("# {:>12} {:>12} {:>11} {:>11} {:>11} {:>7} {:>13} {:>9}  {}\n", "bytes", "time(us)", "algbw(GB/s)",
             "busbw(GB/s)", "linkbw(GB/s)", "link%", "predicted(us)", "meas/pred", "check");

  nlohmann::json rows = nlohmann::json::array();
  std::string formula;
  std::vector<std::string> host_lines;
  int exit_code = kExitOk;  // a fault's code, else 1 if a check failed
  for (const std::uint64_t v : sizes) {
    spec.bytes = v;
    const programs::CollectivePrediction prediction = programs::predict_collective(spec, topology, chip);
    formula = prediction.formula;
    const Row row = measure_in_child(spec, topology, chip, data, routing, max_cycles(*vm));
    if (!row.ok && !row.fault.empty()) {
      fmt::print(stderr, "tpuemu collective: size {}: {}\n", v, row.fault);
      exit_code = row.fault_exit;
      break;
    }
    if (!row.ok) exit_code = kExitFailure;
    const double algbw = static_cast<double>(v) / row.seconds;
    const double busbw = algbw * bus_factor;
    const double linkbw = busbw / links_in_use;
    // All-to-all blocks travel different distances: no per-link figure.
    const bool per_link = spec.op != "all-to-all";
    fmt::print("  {:>12} {:>12.2f} {:>11.2f} {:>11.2f} {:>11} {:>7} {:>13.2f} {:>9.3f}  {}\n", v, row.seconds * 1e6,
               algbw / 1e9, busbw / 1e9, per_link ? fmt::format("{:.2f}", linkbw / 1e9) : "-",
               per_link ? fmt::format("{:.1f}%", 100.0 * linkbw / chip.ici.link_bandwidth) : "-",
               prediction.seconds * 1e6, row.seconds / prediction.seconds, row.check);
    std::fflush(stdout);
    rows.push_back({{"bytes", v},
                    {"cycles", row.cycles},
                    {"seconds", row.seconds},
                    {"algbw", algbw},
                    {"busbw", busbw},
                    {"linkbw", per_link ? linkbw : 0.0},
                    {"link_fraction", per_link ? linkbw / chip.ici.link_bandwidth : 0.0},
                    {"predicted_seconds", prediction.seconds},
                    {"predicted_bandwidth_seconds", prediction.bandwidth_seconds},
                    {"predicted_latency_seconds", prediction.latency_seconds},
                    {"measured_over_predicted", row.seconds / prediction.seconds},
                    {"check", row.check},
                    {"host_seconds", row.host_seconds},
                    {"host_bundles", row.bundles},
                    {"host_network_events", row.network_events},
                    {"host_core_resumes", row.core_resumes},
                    {"host_core_syncs", row.core_syncs},
                    {"host_peak_rss_bytes", row.peak_rss_bytes}});
    host_lines.push_back(fmt::format(
        "# host: {} B: {:.2f} s, peak RSS {:.0f} MiB, {} bundles, {} network events, {} core resumes, {} core syncs "
        "({:.3g} bundles + events/s)",
        v, row.host_seconds, static_cast<double>(row.peak_rss_bytes) / (1 << 20), row.bundles, row.network_events,
        row.core_resumes, row.core_syncs, static_cast<double>(row.bundles + row.network_events) / row.host_seconds));
  }
  fmt::print("# predicted: {}\n", formula);
  for (const auto& line : host_lines) fmt::print("{}\n", line);
  if (vm->count("json") != 0U) {
    nlohmann::json j = {{"op", spec.op},
                        {"algorithm", spec.algorithm},
                        {"dtype", spec.dtype},
                        {"chip", chip.name},
                        {"topology", topology.shape()},
                        {"axes", axes_text},
                        {"group_size", plan.group_size},
                        {"data", data},
                        {"formula", formula},
                        {"rows", rows}};
    if (auto error = write_text_file("--json", (*vm)["json"].as<std::string>(), j.dump(2) + "\n")) {
      fmt::print(stderr, "tpuemu collective: {}\n", *error);
      return kExitBadInput;
    }
  }
  return exit_code;
}

}  // namespace tpuemu::cli
