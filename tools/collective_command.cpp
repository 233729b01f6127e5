#include "tools/collective_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "api/collective.hpp"
#include "api/line_plot.hpp"
#include "api/output_files.hpp"
#include "common/parse_number.hpp"
#include "common/units.hpp"
#include "dist/ranks.hpp"
#include "programs/collective_algorithm.hpp"
#include "programs/collectives.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {

using api::check_writable;
using api::write_text_file;

namespace {

// --algo list: every algorithm, what it does, and on this fabric which ops it runs.
void print_algorithm_list(const api::CollectiveSetup& setup) {
  fmt::print("collective algorithms on {} ({}):\n", ici::describe(setup.topology), setup.chip.name);
  for (const api::CollectiveAlgorithmInfo& a : api::list_collective_algorithms(setup)) {
    std::vector<std::string> runs;
    std::vector<std::string> refused;
    for (const auto& [op, why] : a.refusals) {
      if (why.empty()) {
        runs.push_back(op);
      } else {
        refused.push_back(fmt::format("{}: {}", op, why));
      }
    }
    fmt::print("  {:<11} {}\n  {:<11} runs: {}\n", a.name, a.summary, "", fmt::join(runs, ", "));
    for (const auto& r : refused) fmt::print("  {:<11} not: {}\n", "", r);
  }
  fmt::print("  {:<11} the algorithm with the least predicted time for each size\n", "auto");
}

// `program` with a comment after its first line giving the `tpuemu run`
// command that runs it as the collective ran: the same chip (and the
// user's --chip-file / --set), topology, wraparound and routing, and the
// overrides the run added (`run_overrides`: a switched fabric's NCCL
// protocol and channels, without which the time differs).
std::string with_run_command(const std::string& program, const std::string& path, const po::variables_map& vm,
                             const std::vector<std::string>& run_overrides) {
  std::string command = "tpuemu run " + path;
  if (vm.count("chip") != 0U) command += " --chip " + vm["chip"].as<std::string>();
  if (vm.count("chip-file") != 0U) command += " --chip-file " + vm["chip-file"].as<std::string>();
  command += " --topology " + vm["topology"].as<std::string>();
  if (vm.count("wrap") != 0U) command += " --wrap " + vm["wrap"].as<std::string>();
  if (vm.count("no-wrap") != 0U) command += " --no-wrap";
  if (vm.count("force") != 0U) command += " --force";
  if (vm["routing"].as<std::string>() != "dimension-order") command += " --routing " + vm["routing"].as<std::string>();
  std::vector<std::string> sets;
  if (vm.count("set") != 0U) sets = vm["set"].as<std::vector<std::string>>();
  sets.insert(sets.end(), run_overrides.begin(), run_overrides.end());
  for (const std::string& set : sets) command += " --set " + set;
  if (vm.count("no-data") != 0U) command += " --no-data";
  const std::size_t first_line = program.find('\n');
  const std::string comment = "// Runs as the collective ran: " + command + "\n";
  return first_line == std::string::npos ? program + "\n" + comment
                                         : program.substr(0, first_line + 1) + comment + program.substr(first_line + 1);
}

}  // namespace

int collective_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  add_predicted_max_cycles_option(options, api::kPredictedCyclesHeadroom);
  add_topology_options(options);
  add_partition_option(options);
  options.add_options()("op", po::value<std::string>()->default_value("all-gather"),
                        "all-gather | reduce-scatter | all-reduce | all-to-all")(
      "topology", po::value<std::string>()->default_value("8x16"), "pod shape, e.g. 8x16, 4x4x4, 16")(
      "axes", po::value<std::string>(), "participating axes, e.g. y or x,y (default: all)")(
      "algo", po::value<std::string>()->default_value("bidir-ring"),
      "ring | bidir-ring | multi-axis | tree | halving-doubling | one-shot | two-shot | in-network, several joined by "
      "commas, auto (the least predicted "
      "time per size) or list")(
      "proto", po::value<std::string>()->default_value("auto"),
      "switched fabrics: the NCCL protocol, LL | LL128 | Simple, or auto (the least predicted time per size and "
      "algorithm, as NCCL's cost model picks; NCCL_PROTO's names)")(
      "dtype", po::value<std::string>()->default_value("f32"), "f32 | bf16 (element type; reductions sum in it)")(
      "sizes", po::value<std::string>()->default_value("64K:64M"),
      "V in bytes: LO:HI doubling, or a list (K, M, G = powers of 1024, as in nccl-tests)")(
      "piece", po::value<std::string>(), "pipelining piece size (default: the generator's choice)")(
      "no-data", "timing only: no data moved or reduced, no check (identical times)")("json", po::value<std::string>(),
                                                                                      "write the rows as JSON")(
      "plot", po::value<std::string>(), "write busbw vs size, one line per algorithm, as SVG")(
      "program", po::value<std::string>(),
      "write the generated LLO program that runs (one size and one algorithm; every chip runs the same program)");
  po::positional_options_description positional;
  bool help = false;
  const auto vm = parse_options(
      "collective",
      "--op all-gather|reduce-scatter|all-reduce|all-to-all [--chip v5e] [--topology 8x16] [--axes y] [--algo "
      "bidir-ring|auto|list|a,b] [--proto LL|LL128|Simple|auto] [--dtype f32|bf16] [--sizes 64K:1G] [--no-data] "
      "[--json out.json] [--plot out.svg] [--program out.llo]",
      args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;

  api::CollectiveJob job;
  api::CollectiveSetup setup;
  programs::CollectiveSpec& spec = job.spec;
  std::vector<std::uint64_t> sizes;
  const bool data = vm->count("no-data") == 0U;
  const std::string algo_text = (*vm)["algo"].as<std::string>();
  // One run per (algorithm, size): `--algo a,b` runs each algorithm in turn;
  // `auto` picks per size, `--proto auto` the protocol per run
  // (api::plan_collective_runs, shared with tpuemu.collective).
  std::vector<api::PlannedCollective> runs;
  try {
    if (vm->count("json") != 0U) check_writable("--json", (*vm)["json"].as<std::string>());
    if (vm->count("plot") != 0U) {
      check_writable("--plot", (*vm)["plot"].as<std::string>());
      if (!(*vm)["plot"].as<std::string>().ends_with(".svg")) {
        throw std::invalid_argument(
            fmt::format("--plot {}: the plot is SVG: name a file ending in .svg", (*vm)["plot"].as<std::string>()));
      }
    }
    if (vm->count("program") != 0U) check_writable("--program", (*vm)["program"].as<std::string>());
    job.chip = chip_request(*vm);
    job.topology = topology_request_from(*vm, (*vm)["topology"].as<std::string>());
    job.routing = (*vm)["routing"].as<std::string>();
    job.partition = partition_option(*vm);
    job.no_data = !data;
    if (vm->count("max-cycles") != 0U) job.max_cycles = max_cycles(*vm);
    setup = api::check_collective_setup(job);
    spec.op = (*vm)["op"].as<std::string>();
    if (algo_text == "list") {
      print_algorithm_list(setup);
      return kExitOk;
    }
    spec.dtype = (*vm)["dtype"].as<std::string>();
    if (vm->count("axes") != 0U) {
      spec.axes = ici::parse_axis_list((*vm)["axes"].as<std::string>(), setup.topology.axis_count(), "--axes",
                                       "name the participating axes like y or x,y");
    } else {
      for (std::size_t a = 0; a < setup.topology.axis_count(); ++a) spec.axes.push_back(a);
    }
    if (vm->count("piece") != 0U) spec.piece_bytes = api::parse_collective_size((*vm)["piece"].as<std::string>());
    sizes = api::parse_collective_sizes((*vm)["sizes"].as<std::string>());
    runs = api::plan_collective_runs(job, setup, algo_text, (*vm)["proto"].as<std::string>(), sizes);
    if (vm->count("program") != 0U && runs.size() != 1) {
      throw std::invalid_argument(fmt::format(
          "--program writes the program of one run: give one size and one algorithm ({} runs planned)", runs.size()));
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu collective: {}\n", e.what());
    return kExitBadInput;
  }
  const ChipConfig& chip = setup.chip;
  const ici::Topology& topology = setup.topology;

  spec.bytes = runs.front().bytes;
  spec.algorithm = runs.front().algorithm;
  const programs::CollectivePlan plan = api::collective_plan(job, setup);
  std::string axes_text;
  for (std::size_t a : spec.axes) axes_text += fmt::format("{}{}", axes_text.empty() ? "" : ",", ici::axis_name(a));
  fmt::print("# tpuemu collective: {} of {} over axes {} of a {} pod of {}, {}, group of {} chips{}\n", spec.op,
             spec.dtype, axes_text, ici::describe(topology), chip.name, algo_text, plan.group_size,
             data ? "" : " (--no-data: timing only)");
  const char* factor = spec.op == "all-reduce" ? "2(N-1)/N" : "(N-1)/N";
  fmt::print(
      "# nccl-tests columns: size S ({}), count = S / element, algbw = S / time, busbw = algbw x {}; #wrong: "
      "elements unlike the host reference (N/A with --no-data)\n",
      spec.op == "all-reduce"       ? "the buffer"
      : spec.op == "all-gather"     ? "the whole output"
      : spec.op == "reduce-scatter" ? "the whole input"
                                    : "one rank's send buffer, V/N",
      factor);
  if (topology.switched()) {
    fmt::print("# B = {} per chip ({} NVLinks; a NIC of {} across nodes); linkbw = busbw, link% = busbw / B\n",
               format_quantity(chip.switched_egress(), Quantity::kBandwidth), chip.ici.links_per_chip,
               format_quantity(chip.fabric.nic_bandwidth, Quantity::kBandwidth));
  } else {
    fmt::print("# W = 2 x {} per axis; hop latency {}; linkbw = busbw / links a stream uses into one chip\n",
               format_quantity(chip.ici.link_bandwidth, Quantity::kBandwidth),
               format_quantity(chip.ici.hop_latency_s, Quantity::kTime));
  }
  fmt::print("# {:>10} {:>12} {:>8} {:>6} {:>6} {:>10} {:>7} {:>7} {:>6} {:>7} {:>6} {:>10} {:>9}  {:<6} {:<10} {}\n",
             "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "linkbw", "link%",
             "predicted", "meas/pred", "proto", "algorithm", "check");
  fmt::print("# {:>10} {:>12} {:>8} {:>6} {:>6} {:>10} {:>7} {:>7} {:>6} {:>7} {:>6} {:>10} {:>9}\n", "(B)",
             "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(GB/s)", "", "(us)", "");

  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::pair<std::string, std::string>> formulas;  // per algorithm, the last size's
  std::vector<std::string> host_lines;
  std::vector<std::string> choices;
  std::vector<std::string> padding_lines;
  std::vector<std::pair<std::string, std::vector<double>>> busbw_by_algorithm;
  api::LinePlot chart;
  int exit_code = kExitOk;  // a fault's code, else 1 if a check failed
  for (const api::PlannedCollective& p : runs) {
    spec.bytes = p.bytes;
    spec.algorithm = p.algorithm;
    const std::uint64_t v = p.bytes;
    if (!p.predictions.empty()) {
      std::string predicted;
      for (const auto& [name, t] : p.predictions) {
        predicted += fmt::format("{}{} {:.2f}", predicted.empty() ? "" : ", ", name, t * 1e6);
      }
      choices.push_back(fmt::format("# auto: {} B -> {}{} (predicted us: {})", v, p.algorithm,
                                    p.protocol.empty() ? "" : " " + p.protocol, predicted));
    }
    api::CollectiveResult row;
    try {
      row = api::run_collective(api::planned_collective_job(job, p));
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
    if (vm->count("program") != 0U) {
      const std::string path = (*vm)["program"].as<std::string>();
      if (auto error =
              write_text_file("--program", path, with_run_command(row.program, path, *vm, row.run_overrides))) {
        fmt::print(stderr, "tpuemu collective: {}\n", *error);
        return kExitBadInput;
      }
    }
    if (row.padded_bytes != v) {
      padding_lines.push_back(
          fmt::format("# padded: {} B ran as {} B ({} B of zeros travel; {} cannot split {} B over {} chips): time and "
                      "prediction are the padded size's, algbw and busbw count the {} B asked for",
                      v, row.padded_bytes, row.padded_bytes - v, p.algorithm, v, row.group_size, v));
    }
    const std::string series = algo_text == "auto" ? std::string("auto") : p.algorithm;
    auto formula =
        std::find_if(formulas.begin(), formulas.end(), [&](const auto& f) { return f.first == p.algorithm; });
    if (formula == formulas.end()) {
      formulas.emplace_back(p.algorithm, row.prediction.formula);
    } else {
      formula->second = row.prediction.formula;
    }
    auto line = std::find_if(busbw_by_algorithm.begin(), busbw_by_algorithm.end(),
                             [&](const auto& b) { return b.first == series; });
    if (line == busbw_by_algorithm.end()) {
      busbw_by_algorithm.emplace_back(series, std::vector<double>{});
      line = std::prev(busbw_by_algorithm.end());
      chart.series.push_back({series, {}});
    }
    line->second.push_back(row.busbw);
    for (auto& s : chart.series) {
      if (s.name == series) s.points.emplace_back(static_cast<double>(row.nccl_bytes), row.busbw / 1e9);
    }
    const bool per_link = spec.op != "all-to-all";
    const api::HostCost& host = row.run.host;
    fmt::print(
        "  {:>10} {:>12} {:>8} {:>6} {:>6} {:>10.2f} {:>7.2f} {:>7.2f} {:>6} {:>7} {:>6} {:>10.2f} {:>9}  "
        "{:<6} {:<10} {}\n",
        row.nccl_bytes, row.count, spec.dtype == "bf16" ? "bfloat16" : "float",
        spec.op == "all-reduce" || spec.op == "reduce-scatter" ? "sum" : "none", -1, row.run.seconds * 1e6,
        row.algbw / 1e9, row.busbw / 1e9, row.wrong_elements ? std::to_string(*row.wrong_elements) : "N/A",
        per_link ? fmt::format("{:.2f}", row.linkbw / 1e9) : "-",
        per_link ? fmt::format("{:.1f}%", 100.0 * row.link_fraction) : "-", row.prediction.seconds * 1e6,
        row.prediction.seconds > 0 ? fmt::format("{:.3f}", row.run.seconds / row.prediction.seconds) : "-",
        p.protocol.empty() ? "-" : p.protocol, p.algorithm,
        row.padded_bytes == v ? row.check : fmt::format("{} (padded to {} B)", row.check, row.padded_bytes));
    std::fflush(stdout);
    // The row: the run API's per-size fields (bandwidths, prediction, check, nccl-tests' columns), minus
    // those the whole table shares (op, dtype, axes, group size), plus time and host cost.
    nlohmann::json json_row = row.run.report["collective"];
    for (const char* shared : {"op", "dtype", "axes", "group_size"}) json_row.erase(shared);
    json_row["proto"] = p.protocol.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.protocol);
    if (!p.predictions.empty()) {
      json_row["auto_predictions"] = nlohmann::json::object();
      for (const auto& [name, t] : p.predictions) json_row["auto_predictions"][name] = t;
    }
    json_row["time_us"] = row.run.seconds * 1e6;
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
  // nccl-tests' footer: the mean busbw over the sizes (per algorithm when there are several).
  nlohmann::json averages = nlohmann::json::object();
  for (const auto& [name, values] : busbw_by_algorithm) {
    double sum = 0;
    for (double b : values) sum += b;
    const double avg = values.empty() ? 0 : sum / static_cast<double>(values.size());
    averages[name] = avg;
    fmt::print("# Avg bus bandwidth    : {:.3f} GB/s{}\n", avg / 1e9,
               busbw_by_algorithm.size() > 1 ? fmt::format(" ({})", name) : std::string());
  }
  for (const auto& line : choices) fmt::print("{}\n", line);
  for (const auto& line : padding_lines) fmt::print("{}\n", line);
  for (const auto& [name, formula] : formulas) {
    fmt::print("# predicted{}: {}\n", formulas.size() > 1 ? fmt::format(" ({})", name) : std::string(), formula);
  }
  for (const auto& line : host_lines) fmt::print("{}\n", line);
  if (vm->count("json") != 0U) {
    nlohmann::json formula_json = nlohmann::json::object();
    for (const auto& [name, formula] : formulas) formula_json[name] = formula;
    nlohmann::json j = {{"op", spec.op},
                        {"algorithm", algo_text},
                        {"dtype", spec.dtype},
                        {"chip", chip.name},
                        {"topology", topology.shape()},
                        {"axes", axes_text},
                        {"group_size", plan.group_size},
                        {"data", data},
                        {"formulas", formula_json},
                        {"avg_busbw", averages},
                        {"rows", rows}};
    if (auto error = write_text_file("--json", (*vm)["json"].as<std::string>(), j.dump(2) + "\n")) {
      fmt::print(stderr, "tpuemu collective: {}\n", *error);
      return kExitBadInput;
    }
  }
  if (vm->count("plot") != 0U) {
    chart.title = fmt::format("{} {} on {} x {} ({})", spec.op, spec.dtype, topology.shape(), chip.name,
                              data ? "with data" : "timing only");
    chart.x_label = "size S (bytes)";
    chart.y_label = "busbw (GB/s)";
    chart.log2_x = true;
    chart.x_is_bytes = true;
    if (auto error = write_text_file("--plot", (*vm)["plot"].as<std::string>(), api::line_plot_svg(chart))) {
      fmt::print(stderr, "tpuemu collective: {}\n", *error);
      return kExitBadInput;
    }
  }
  return exit_code;
}

}  // namespace tpuemu::cli
