#include "tools/workload_command.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "api/errors.hpp"
#include "api/output_files.hpp"
#include "common/presets.hpp"
#include "tools/cli.hpp"
#include "tools/graph.hpp"
#include "tools/options.hpp"
#include "tools/trace_options.hpp"
#include "workloads/run.hpp"
#include "workloads/sweep.hpp"
#include "workloads/workload.hpp"

namespace tpuemu::cli {
namespace {

void print_list() {
  for (const auto& w : workloads::workload_list()) {
    fmt::print("{}\n  {}\n", w.at("name").get<std::string>(), w.at("summary").get<std::string>());
    for (const auto& o : w.at("options")) {
      const auto def = o.at("default").get<std::string>();
      fmt::print("    --{:<8} {}{}\n", o.at("name").get<std::string>(), o.at("help").get<std::string>(),
                 def.empty() ? "" : fmt::format(" (default {})", def));
    }
  }
}

// --sweep: every series value (a comma list in a series option) times every
// swept value, one run each, a line per run, then the CSV and the plot.
int sweep(const po::variables_map& vm, const workloads::Workload& w, workloads::WorkloadRequest request) {
  const std::string name(w.name());
  workloads::SweepSpec spec;
  std::string series_option;
  std::vector<std::string> series{""};
  try {
    for (const char* file : {"csv", "plot", "json"}) {
      if (vm.count(file) != 0U) api::check_writable(fmt::format("--{}", file), vm[file].as<std::string>());
    }
    if (vm.count("plot") != 0U && !vm["plot"].as<std::string>().ends_with(".svg")) {
      throw api::BadInput(
          fmt::format("--plot {}: the plot is SVG: name a file ending in .svg", vm["plot"].as<std::string>()));
    }
    if (vm.count("json") != 0U) throw api::BadInput("--json: a sweep writes --csv and --plot, not one report");
    spec = workloads::parse_sweep(vm["sweep"].as<std::string>(), w.options());
    for (const auto& o : w.options()) {
      const bool is_series =
          std::find(std::begin(workloads::kSweepSeriesOptions), std::end(workloads::kSweepSeriesOptions), o.name) !=
          std::end(workloads::kSweepSeriesOptions);
      const std::string value = request.options.count(o.name) != 0U ? request.options.at(o.name) : o.default_value;
      if (!is_series || value.find(',') == std::string::npos) continue;
      if (o.name == spec.option)
        throw api::BadInput(fmt::format("--sweep {}: --{} is not a whole number", o.name, o.name));
      series_option = o.name;
      series.clear();
      for (std::size_t start = 0;;) {
        const auto comma = value.find(',', start);
        series.push_back(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu workload {}: {}\n", name, e.what());
    return kExitBadInput;
  }
  std::vector<workloads::SweepPoint> points;
  int exit_code = kExitOk;
  fmt::print("{:<10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>7}  {}\n", series_option.empty() ? "series" : series_option,
             spec.option, "step", "compute", "comms", "exposed", "MFU", "check");
  for (const std::string& s : series) {
    for (const std::uint64_t v : spec.values) {
      workloads::WorkloadRequest r = request;
      if (!series_option.empty()) r.options[series_option] = s;
      r.options[spec.option] = std::to_string(v);
      workloads::WorkloadResult result;
      try {
        result = workloads::run_workload(r);
      } catch (const api::BadInput& e) {
        fmt::print(stderr, "tpuemu workload {}: --sweep at --{} {}{}: {}\n", name, spec.option, v,
                   s.empty() ? "" : fmt::format(" --{} {}", series_option, s), e.what());
        exit_code = kExitBadInput;  // the other points still run; the CSV and plot leave this one out
        continue;
      }
      if (result.fault) {
        fmt::print(stderr, "tpuemu workload {}: --{} {}: program fault: {}\n", name, spec.option, v,
                   result.fault->message);
        return kExitProgramFault;
      }
      if (!result.ok && exit_code == kExitOk) exit_code = kExitFailure;
      const auto& rep = result.report;
      const auto us = [&](const char* key) { return fmt::format("{:.3f} us", rep.at(key).get<double>() * 1e6); };
      fmt::print("{:<10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>6.1f}%  {}\n", s.empty() ? "-" : s, v, us("seconds"),
                 us("compute_seconds"), us("communication_seconds"), us("exposed_communication_seconds"),
                 100.0 * rep.at("mfu").get<double>(),
                 rep.at("no_data").get<bool>() ? "skipped" : (result.ok ? "pass" : "FAIL"));
      points.push_back({s, v, rep});
    }
  }
  const std::string csv = workloads::sweep_csv(series_option, spec.option, points);
  if (vm.count("csv") != 0U) {
    if (auto error = api::write_text_file("--csv", vm["csv"].as<std::string>(), csv)) {
      fmt::print(stderr, "tpuemu workload {}: {}\n", name, *error);
      return kExitBadInput;
    }
  } else {
    fmt::print("\n{}", csv);
  }
  if (vm.count("plot") != 0U) {
    if (auto error = api::write_text_file("--plot", vm["plot"].as<std::string>(),
                                          workloads::sweep_svg(name, spec.option, points))) {
      fmt::print(stderr, "tpuemu workload {}: {}\n", name, *error);
      return kExitBadInput;
    }
  }
  return exit_code;
}

}  // namespace

int workload_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--list") {
    if (args.empty()) fmt::print(stderr, "tpuemu workload: name a workload (tpuemu workload NAME --help):\n\n");
    print_list();
    return args.empty() ? kExitBadInput : kExitOk;
  }
  if (args[0] == "--help" || args[0] == "-h") {
    fmt::print(
        "usage: tpuemu workload NAME [--chip v5e] [--topology 2x2] [options] [--no-data] [--json F] [--trace F]\n"
        "       tpuemu workload NAME --sweep VAR=a:b[:step|:xF] [--strategy a,b] [--csv F] [--plot F.svg] [options]\n"
        "       tpuemu workload --list\n\n");
    print_list();
    return kExitOk;
  }
  const std::string name = args[0];
  const workloads::Workload* w = nullptr;
  try {
    w = &workloads::workload(name);
  } catch (const api::BadInput& e) {
    fmt::print(stderr, "tpuemu workload: {}\n", e.what());
    return kExitBadInput;
  }

  po::options_description options("options");
  add_chip_options(options);
  add_predicted_max_cycles_option(options, api::kPredictedCyclesHeadroom);
  add_topology_options(options);
  add_partition_option(options);
  add_trace_options(options);
  add_waveform_options(options);
  add_profile_options(options);
  add_graph_option(options,
                   "write the workload's steps and collectives as a graph with their measured times: F.dot "
                   "(Graphviz text) or F.svg (rendered by Graphviz's dot)");
  options.add_options()("topology", po::value<std::string>()->default_value("2x2"), "pod shape (mesh axes X, Y, Z)")(
      "no-data", "timing only: no data, no check (identical times)")("json", po::value<std::string>(),
                                                                     "write the workload report as JSON")(
      "sweep", po::value<std::string>(),
      "run for every value of a whole-number option: VAR=a:b (doubling), VAR=a:b:step or VAR=a:b:xF; "
      "--strategy (--variant, --plan) may list several values, comma-separated")(
      "csv", po::value<std::string>(), "--sweep: write one row per run as CSV (default: stdout)")(
      "plot", po::value<std::string>(), "--sweep: write step time and MFU vs the swept option as SVG");
  po::options_description own(fmt::format("{} options", name));
  for (const auto& o : w->options()) {
    auto* value = po::value<std::string>();
    if (!o.default_value.empty()) value->default_value(o.default_value);
    own.add_options()(o.name.c_str(), value, o.help.c_str());
  }
  options.add(own);
  po::positional_options_description positional;
  bool help = false;
  const auto vm = parse_options("workload " + name, "[--chip v5e] [--topology 2x2] [options] [--no-data] [--json F]",
                                std::vector<std::string>(args.begin() + 1, args.end()), options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;

  workloads::WorkloadRequest request;
  request.name = name;
  try {
    if (vm->count("json") != 0U) api::check_writable("--json", (*vm)["json"].as<std::string>());
    if (vm->count("graph") != 0U) check_graph_path((*vm)["graph"].as<std::string>());
    request.chip = chip_request(*vm);
    request.topology = topology_request_from(*vm, (*vm)["topology"].as<std::string>());
    request.routing = (*vm)["routing"].as<std::string>();
    request.partition = partition_option(*vm);
    if (vm->count("max-cycles") != 0U) request.max_cycles = max_cycles(*vm);
    request.no_data = vm->count("no-data") != 0U;
    request.observers = observers_from(*vm, load_chip(request.chip).clock_hz);
    for (const auto& o : w->options()) {
      if (vm->count(o.name) != 0U && !(*vm)[o.name].defaulted())
        request.options[o.name] = (*vm)[o.name].as<std::string>();
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu workload {}: {}\n", name, e.what());
    return kExitBadInput;
  }
  if (vm->count("sweep") != 0U) return sweep(*vm, *w, request);
  for (const char* only : {"csv", "plot"}) {
    if (vm->count(only) != 0U) {
      fmt::print(stderr, "tpuemu workload {}: --{} needs --sweep\n", name, only);
      return kExitBadInput;
    }
  }
  workloads::WorkloadResult result;
  try {
    result = workloads::run_workload(request);
  } catch (const api::BadInput& e) {
    fmt::print(stderr, "tpuemu workload {}: {}\n", name, e.what());
    return kExitBadInput;
  }
  if (result.fault) {
    fmt::print(stderr, "tpuemu workload {}: program fault: {}\n", name, result.fault->message);
    return kExitProgramFault;
  }
  workloads::print_workload(result.report);
  if (vm->count("json") != 0U) {
    if (auto error = api::write_text_file("--json", (*vm)["json"].as<std::string>(), result.report.dump(2) + "\n")) {
      fmt::print(stderr, "tpuemu workload {}: {}\n", name, *error);
      return kExitBadInput;
    }
  }
  if (vm->count("graph") != 0U) {
    const std::string error = write_graph((*vm)["graph"].as<std::string>(), workload_graph_dot(result.report));
    if (!error.empty()) {
      fmt::print(stderr, "tpuemu workload {}: {}\n", name, error);
      return kExitBadInput;
    }
  }
  return result.ok ? kExitOk : kExitFailure;
}

}  // namespace tpuemu::cli
