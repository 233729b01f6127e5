#include "tools/run_case_command.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <optional>

#include "api/output_files.hpp"
#include "api/report.hpp"
#include "api/run.hpp"
#include "api/run_case.hpp"
#include "chip/host_io.hpp"
#include "chip/run.hpp"
#include "tools/cli.hpp"
#include "tools/graph.hpp"
#include "tools/options.hpp"
#include "tools/trace_options.hpp"

namespace tpuemu::cli {
int run_case_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  add_max_cycles_option(options);
  add_trace_options(options);
  add_graph_option(options,
                   "write the kernels' dependency graph (one cluster per kernel): F.dot (Graphviz text) or F.svg "
                   "(rendered by Graphviz's dot)");
  options.add_options()("case", po::value<std::string>(), "case directory (with case.json)")(
      "report", po::value<std::string>(), "write the run report (with per-kernel cycles and stalls) as JSON")(
      "strict", "treat stalls on register hazards as errors (reports the compiler-scheduled hazards)")(
      "tlp", "run the case's top-level program (with its copy-in DMAs and inlined_calls) instead of the kernel chain")(
      "row-max", po::value<std::vector<std::string>>()->composing(),
      "NAME=INPUT: the host provides buffer NAME as the row maxima of the 2-D f32 input INPUT (for a case whose notes "
      "say to take a missing kernel's output as x.max(axis=1))")(
      "rtol", real_value(0, std::numeric_limits<double>::max())->default_value(1e-5),
      "relative tolerance where the case is not bit-exact")(
      "atol", real_value(0, std::numeric_limits<double>::max())->default_value(1e-30),
      "absolute tolerance where the case is not bit-exact");
  po::positional_options_description positional;
  positional.add("case", 1);
  bool help = false;
  const auto vm = parse_options("run-case", "DIR [--tlp] [--chip v5e] [--report R.json] [--strict]", args, options,
                                positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  if (vm->count("case") == 0U) {
    fmt::print(stderr, "tpuemu run-case: no case directory given\n");
    return kExitBadInput;
  }
  const std::string dir = (*vm)["case"].as<std::string>();
  const bool tlp = vm->count("tlp") != 0U;

  // 1. Read the case: kernels, bindings, inputs, expected output (api::load_case).
  api::CaseJob c;
  ChipConfig chip;
  TraceOutput trace;
  try {
    if (vm->count("report") != 0U) api::check_writable("--report", (*vm)["report"].as<std::string>());
    if (vm->count("graph") != 0U) check_graph_path((*vm)["graph"].as<std::string>());
    const ChipRequest chip_choice = chip_request(*vm);
    chip = load_chip(chip_choice);
    trace = trace_output(*vm, chip.clock_hz);
    api::CaseOptions options;
    options.rtol = (*vm)["rtol"].as<double>();
    options.atol = (*vm)["atol"].as<double>();
    if (vm->count("row-max") != 0U) {
      for (const auto& spec : (*vm)["row-max"].as<std::vector<std::string>>()) {
        const auto eq = spec.find('=');
        if (eq == std::string::npos)
          throw std::invalid_argument(fmt::format("--row-max {}: expected NAME=INPUT", spec));
        options.row_max[spec.substr(0, eq)] = spec.substr(eq + 1);
      }
    }
    c = api::load_case(dir, options);
    c.job.chip = chip_choice;
    c.job.options.strict = vm->count("strict") != 0U;
    c.job.options.max_cycles = max_cycles(*vm);
    if (tlp) api::use_top_level_program(c);
    if (trace.tracer) {
      c.job.observers.trace = trace.path;
      c.job.observers.trace_options = trace.tracer->options();
    }
  } catch (const api::AssemblyError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {  // presets, options, case.json, dumps, .npy files
    fmt::print(stderr, "tpuemu run-case: {}\n", e.what());
    return kExitBadInput;
  }

  if (vm->count("graph") != 0U) {
    const std::string error = write_program_graph((*vm)["graph"].as<std::string>(), c.job.steps, chip);
    if (!error.empty()) {
      fmt::print(stderr, "tpuemu run-case: {}\n", error);
      return kExitBadInput;
    }
  }

  // 2. Run the chain (api::run_case), or the top-level program that calls it; check the output.
  std::optional<api::CaseResult> result;
  try {
    result = api::run_case(c);
  } catch (const api::InternalError& e) {
    fmt::print(stderr, "tpuemu run-case: {}\n", e.what());
    return kExitInternalError;
  } catch (const std::exception& e) {  // BadInput "NAME: ..."
    fmt::print(stderr, "tpuemu run-case: {}\n", e.what());
    return kExitBadInput;
  }
  if (result->run.fault) {
    fmt::print("{}\n", result->text());
    return kExitProgramFault;
  }
  if (result->compared && vm->count("report") != 0U) {
    if (auto error =
            api::write_text_file("--report", (*vm)["report"].as<std::string>(), result->run.report.dump(2) + "\n")) {
      fmt::print(stderr, "tpuemu run-case: {}\n", *error);
      return kExitBadInput;
    }
  }
  fmt::print("{}\n", result->text());
  return result->passed ? kExitOk : kExitFailure;
}

}  // namespace tpuemu::cli
