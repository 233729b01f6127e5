#include "tools/workload_command.hpp"

#include <fmt/format.h>

#include "api/errors.hpp"
#include "api/output_files.hpp"
#include "common/presets.hpp"
#include "tools/cli.hpp"
#include "tools/graph.hpp"
#include "tools/options.hpp"
#include "tools/trace_options.hpp"
#include "workloads/run.hpp"
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
  add_max_cycles_option(options);
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
                                                                     "write the workload report as JSON");
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
    request.max_cycles = max_cycles(*vm);
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
