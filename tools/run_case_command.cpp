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
#include "tools/options.hpp"
#include "tools/trace_options.hpp"

namespace tpuemu::cli {
namespace {

// --tlp: the case's top-level program (chip::run_tlp) with the kernels of
// its chain as callees, its parameters the case's inputs in case.json order;
// a Result for api::check_case, after writing the trace. Throws BadInput
// "NAME: ..." on what cannot run, BadInput "--trace ..." if the trace fails.
api::Result run_top_level_program(const api::CaseJob& c, const ChipConfig& chip, const TraceOutput& trace) {
  std::shared_ptr<const isa::Program> tlp;  // outlives the trace's writing: its events point into the program
  api::Result result;
  try {
    if (c.tlp_dump.empty()) {
      throw std::invalid_argument("the case has no top-level program (tlp_dump is null: an old-format dump)");
    }
    tlp = api::load(c.tlp_dump);
    chip::TlpRequest t;
    t.chip = chip;
    t.options.strict = c.job.options.strict;
    t.options.max_cycles = c.job.options.max_cycles;
    t.tlp = tlp.get();
    t.tracer = trace.tracer.get();
    // Each buffer's layout comes from the first kernel operand bound to it.
    std::map<std::string, chip::OperandBinding> layouts;
    for (const auto& step : c.job.steps) {
      t.kernels[step.program->name] = step.program.get();
      const auto exec = chip::decode_program(*step.program, chip);
      for (const auto& b : exec.bindings) layouts.emplace(step.operand_buffers.at(b.index), b);
    }
    for (const std::string& buffer : c.input_names) {
      if (layouts.count(buffer) == 0U) throw std::invalid_argument(fmt::format("no kernel reads input '{}'", buffer));
      const bool transposed = c.job.transposed.count(buffer) != 0U;
      const NpyArray& array = c.job.inputs.at(buffer).per_chip.front();
      t.parameters.emplace_back(transposed ? chip::transposed_binding(layouts.at(buffer)) : layouts.at(buffer),
                                transposed ? chip::transpose_2d(array) : array);
    }
    if (layouts.count(c.output) == 0U) throw std::invalid_argument("no kernel writes the buffer 'output'");
    t.output = layouts.at(c.output);
    chip::TlpResult r = chip::run_tlp(t);
    chip::StepResult step;
    step.kernel = "top-level program " + tlp->name;
    step.end_cycle = r.run.cycles;
    step.stats = r.run.cores.front();
    result.cycles = r.run.cycles;
    result.seconds = r.run.seconds;
    result.report = api::chip_report(c.name, chip, r.run, {step});
    if (r.run.fault) {
      result.fault = api::parse_fault(*r.run.fault);
    } else {
      result.outputs[c.output] = {t.output, {std::move(r.output_bytes)}};
    }
  } catch (const std::exception& e) {  // LoadError, invalid_argument, AssemblyError
    throw api::BadInput(fmt::format("{}: {}", c.name, e.what()));
  }
  if (const auto error = finish_trace(trace)) throw api::BadInput(*error);
  return result;
}

}  // namespace

int run_case_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  add_max_cycles_option(options);
  add_trace_options(options);
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
    if (trace.tracer && !tlp) {
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

  // 2. Run the chain (api::run_case), or the top-level program that calls it; check the output.
  std::optional<api::CaseResult> result;
  try {
    if (!tlp) {
      result = api::run_case(c);
    } else {
      result = api::check_case(c, run_top_level_program(c, chip, trace));
    }
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
