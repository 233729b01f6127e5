#include "tools/collective_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "api/collective.hpp"
#include "api/output_files.hpp"
#include "common/parse_number.hpp"
#include "common/units.hpp"
#include "dist/ranks.hpp"
#include "programs/collectives.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {

using api::check_writable;
using api::write_text_file;

int collective_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  add_max_cycles_option(options);
  add_topology_options(options);
  add_partition_option(options);
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

  api::CollectiveJob job;
  api::CollectiveSetup setup;
  programs::CollectiveSpec& spec = job.spec;
  std::vector<std::uint64_t> sizes;
  const bool data = vm->count("no-data") == 0U;
  try {
    if (vm->count("json") != 0U) check_writable("--json", (*vm)["json"].as<std::string>());
    job.chip = chip_request(*vm);
    job.topology = topology_request_from(*vm, (*vm)["topology"].as<std::string>());
    job.routing = (*vm)["routing"].as<std::string>();
    job.partition = partition_option(*vm);
    job.no_data = !data;
    job.max_cycles = max_cycles(*vm);
    setup = api::check_collective_setup(job);
    spec.op = (*vm)["op"].as<std::string>();
    spec.algorithm = (*vm)["algo"].as<std::string>();
    spec.dtype = (*vm)["dtype"].as<std::string>();
    if (vm->count("axes") != 0U) {
      spec.axes = ici::parse_axis_list((*vm)["axes"].as<std::string>(), setup.topology.axis_count(), "--axes",
                                       "name the participating axes like y or x,y");
    } else {
      for (std::size_t a = 0; a < setup.topology.axis_count(); ++a) spec.axes.push_back(a);
    }
    if (vm->count("piece") != 0U) spec.piece_bytes = api::parse_collective_size((*vm)["piece"].as<std::string>());
    sizes = api::parse_collective_sizes((*vm)["sizes"].as<std::string>());
    // Every size is checked before the first run.
    for (const std::uint64_t v : sizes) {
      spec.bytes = v;
      api::check_collective_size(job, setup);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu collective: {}\n", e.what());
    return kExitBadInput;
  }
  const ChipConfig& chip = setup.chip;
  const ici::Topology& topology = setup.topology;

  spec.bytes = sizes.front();
  const programs::CollectivePlan plan = api::collective_plan(job, setup);
  // Links into one chip that a stream uses at once: directions x parallel parts.
  const double links_in_use = static_cast<double>(plan.directions * plan.parts);
  std::string axes_text;
  for (std::size_t a : spec.axes) axes_text += fmt::format("{}{}", axes_text.empty() ? "" : ",", ici::axis_name(a));
  fmt::print("# tpuemu collective: {} of {} over axes {} of a {} pod of {}, {}, group of {} chips{}\n", spec.op,
             spec.dtype, axes_text, ici::describe(topology), chip.name, spec.algorithm, plan.group_size,
             data ? "" : " (--no-data: timing only)");
  if (topology.switched()) {
    fmt::print("# B = {} per chip ({} NVLinks; a NIC of {} across nodes); busbw = algbw x {}; linkbw = busbw, "
               "link% = busbw / B\n",
               format_quantity(chip.ici_bandwidth_per_chip(), Quantity::kBandwidth), chip.ici.links_per_chip,
               format_quantity(chip.fabric.nic_bandwidth, Quantity::kBandwidth),
               spec.op == "all-reduce" ? "2(N-1)/N" : "(N-1)/N");
  } else {
    fmt::print("# W = 2 x {} per axis; hop latency {}; busbw = algbw x {}; linkbw = busbw / {} links in use per chip\n",
               format_quantity(chip.ici.link_bandwidth, Quantity::kBandwidth),
               format_quantity(chip.ici.hop_latency_s, Quantity::kTime),
               spec.op == "all-reduce" ? "2(N-1)/N" : "(N-1)/N", links_in_use);
  }
  fmt::print("# {:>12} {:>12} {:>11} {:>11} {:>11} {:>7} {:>13} {:>9}  {}\n", "bytes", "time(us)", "algbw(GB/s)",
             "busbw(GB/s)", "linkbw(GB/s)", "link%", "predicted(us)", "meas/pred", "check");

  nlohmann::json rows = nlohmann::json::array();
  std::string formula;
  std::vector<std::string> host_lines;
  int exit_code = kExitOk;  // a fault's code, else 1 if a check failed
  for (const std::uint64_t v : sizes) {
    spec.bytes = v;
    api::CollectiveResult row;
    try {
      row = api::run_collective(job);
    } catch (const api::BadInput& e) {  // refused before the run (buffers beyond HBM, ...)
      fmt::print(stderr, "tpuemu collective: size {}: {}\n", v, e.what());
      exit_code = kExitBadInput;
      break;
    } catch (const api::InternalError& e) {  // the run's process died
      fmt::print(stderr, "tpuemu collective: size {}: {}\n", v, e.what());
      exit_code = kExitProgramFault;
      break;
    }
    if (row.run.fault) {
      fmt::print(stderr, "tpuemu collective: size {}: {}\n", v, row.run.fault->message);
      exit_code = kExitProgramFault;
      break;
    }
    if (!row.ok) exit_code = kExitFailure;
    formula = row.prediction.formula;
    const bool per_link = spec.op != "all-to-all";
    const api::HostCost& host = row.run.host;
    fmt::print("  {:>12} {:>12.2f} {:>11.2f} {:>11.2f} {:>11} {:>7} {:>13.2f} {:>9.3f}  {}\n", v, row.run.seconds * 1e6,
               row.algbw / 1e9, row.busbw / 1e9, per_link ? fmt::format("{:.2f}", row.linkbw / 1e9) : "-",
               per_link ? fmt::format("{:.1f}%", 100.0 * row.link_fraction) : "-", row.prediction.seconds * 1e6,
               row.run.seconds / row.prediction.seconds, row.check);
    std::fflush(stdout);
    // The row: the run API's per-size fields (bandwidths, prediction, check), minus those the
    // whole table shares (op, algorithm, dtype, axes, group size, formula), plus time and host cost.
    nlohmann::json json_row = row.run.report["collective"];
    for (const char* shared : {"op", "algorithm", "dtype", "axes", "group_size", "formula"}) json_row.erase(shared);
    json_row["cycles"] = row.run.cycles;
    json_row["seconds"] = row.run.seconds;
    json_row["host_seconds"] = row.host_seconds;
    json_row["host_bundles"] = host.bundles;
    json_row["host_network_events"] = host.network_events;
    json_row["host_core_resumes"] = host.core_resumes;
    json_row["host_core_syncs"] = host.core_syncs;
    json_row["host_windows"] = host.windows;
    json_row["host_peak_rss_bytes"] = host.peak_rss_bytes;
    rows.push_back(std::move(json_row));
    host_lines.push_back(fmt::format(
        "# host: {} B: {:.2f} s, peak RSS {:.0f} MiB, {} bundles, {} network events, {} core resumes, {} core syncs{} "
        "({:.3g} bundles + events/s)",
        v, row.host_seconds, static_cast<double>(host.peak_rss_bytes) / (1 << 20), host.bundles, host.network_events,
        host.core_resumes, host.core_syncs,
        host.windows == 0 ? std::string() : fmt::format(", {} windows between ranks", host.windows),
        static_cast<double>(host.bundles + host.network_events) / row.host_seconds));
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
