#include "tools/run_case_command.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "api/output_files.hpp"
#include "api/program_loader.hpp"
#include "api/report.hpp"
#include "chip/fault.hpp"
#include "chip/host_io.hpp"
#include "chip/run.hpp"
#include "common/json_file.hpp"
#include "common/npy.hpp"
#include "common/numerics.hpp"
#include "isa/assembler.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"
#include "tools/trace_options.hpp"

namespace tpuemu::cli {

using api::check_writable;
using api::load_program;
using api::write_text_file;
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What a case.json `binds` text means: a buffer name, or a by-value constant.
struct Bind {
  std::string buffer;
  std::optional<std::uint32_t> constant_bits;
  bool transposed = false;  // "layout {0,1}": the array is stored transposed
};

Bind parse_bind(const std::string& text) {
  Bind b;
  b.transposed = text.find("{0,1}") != std::string::npos;
  if (text.starts_with("constant ")) {
    std::string rest = text.substr(9);
    bool bf16 = false;
    if (rest.starts_with("bf16 ")) {
      bf16 = true;
      rest = rest.substr(5);
    }
    const std::string value = rest.substr(0, rest.find(' '));
    const float f = value == "-inf" ? -INFINITY : value == "inf" ? INFINITY : std::stof(value);
    b.constant_bits = bf16 ? std::uint32_t{f32_to_bf16_bits(f)} : std::bit_cast<std::uint32_t>(f);
    b.buffer = "constant " + rest.substr(0, rest.find(' '));
    return b;
  }
  std::size_t end = 0;
  while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) != 0 || text[end] == '_')) ++end;
  b.buffer = text.substr(0, end);
  return b;
}

// A by-value operand (`inlined_call_operand.<no memory space>`) that takes
// the value of one of the case's inputs.
struct ScalarInput {
  std::size_t step = 0;
  std::string input;
  chip::OperandBinding binding;  // as the kernel declares it
};

// Operand `index` of `program` if the program declares it by value (nullopt
// otherwise, or if its shape is malformed: run_chain reports that).
std::optional<chip::OperandBinding> by_value_operand(const isa::Program& program, std::uint32_t index) {
  for (const auto& bundle : program.bundles) {
    for (const auto& op : bundle.ops) {
      if (op.opcode != isa::OpId::kInlinedCallOperandScalar || op.operands.empty()) continue;
      const isa::OperandDecl& decl = op.operands.front().decl;
      const auto shape = chip::parse_shape(decl.shape);
      if (decl.index != index || !shape) continue;
      chip::OperandBinding b;
      b.index = index;
      b.space = "<no memory space>";
      b.dtype = shape->first;
      b.shape = shape->second;
      return b;
    }
  }
  return std::nullopt;
}

std::string element_index(const std::vector<std::uint64_t>& shape, std::uint64_t flat) {
  std::vector<std::uint64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return fmt::format("[{}]", fmt::join(idx, ","));
}

// Distance in units in the last place between two finite floats of the same sign class.
double ulp_distance(float a, float b) {
  auto ordered = [](float f) {
    const auto u = std::bit_cast<std::int32_t>(f);
    return u < 0 ? static_cast<std::int64_t>(INT32_MIN) - u : static_cast<std::int64_t>(u);
  };
  return static_cast<double>(std::llabs(ordered(a) - ordered(b)));
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
  const fs::path dir = (*vm)["case"].as<std::string>();
  const std::string name = dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();

  // 1. Read the case: kernels, bindings, inputs, expected output.
  chip::ChainRequest request;
  std::vector<isa::Program> programs;
  json c;
  std::string output_buffer = "output";
  bool exact = true;
  NpyArray expected;
  std::optional<NpyArray> expected_bits;
  TraceOutput trace;
  try {
    if (vm->count("report") != 0U) check_writable("--report", (*vm)["report"].as<std::string>());
    request.chip = load_chip(chip_request(*vm));
    trace = trace_output(*vm, request.chip.clock_hz);
    request.tracer = trace.tracer.get();
    request.options.strict = vm->count("strict") != 0U;
    request.options.max_cycles = max_cycles(*vm);
    c = read_json_file((dir / "case.json").string());  // InputFileError names the file
    const auto& chain = c.at("kernel_chain");
    programs.reserve(chain.size());
    for (const auto& kernel : chain)
      programs.push_back(load_program((dir / kernel.at("dump").get<std::string>()).string()));
    std::vector<ScalarInput> scalar_inputs;
    for (std::size_t k = 0; k < chain.size(); ++k) {
      chip::ChainStep step;
      step.program = &programs[k];
      for (const auto& op : chain[k].at("operands")) {
        const Bind bind = parse_bind(op.at("binds").get<std::string>());
        const auto index = op.at("index").get<std::uint32_t>();
        step.operand_buffers[index] = bind.buffer;
        if (bind.constant_bits) {
          request.scalars[bind.buffer] = *bind.constant_bits;
        } else if (auto declared = by_value_operand(programs[k], index)) {
          if (op.contains("dtype") && op.at("dtype").get<std::string>() != declared->dtype) {
            throw std::invalid_argument(
                fmt::format("kernel {} ({}): case.json gives scalar operand {} dtype {}, but the "
                            "kernel declares {}[]",
                            k, programs[k].name, index, op.at("dtype").get<std::string>(), declared->dtype));
          }
          scalar_inputs.push_back({k, bind.buffer, *declared});
        }
        if (bind.transposed) request.transposed[bind.buffer] = true;
        if (op.at("kind") == "output" && bind.buffer == "output") output_buffer = bind.buffer;
      }
      request.steps.push_back(step);
    }
    std::map<std::string, std::string> input_dtypes;  // case.json's name of what an input holds ("bfloat16", ...)
    for (const auto& input : c.at("inputs")) {
      const std::string buffer = input.at("name").get<std::string>();
      input_dtypes[buffer] =
          input.contains("dtype") && input.at("dtype").is_string() ? input.at("dtype").get<std::string>() : "";
      // Prefer the raw codes of bf16/f8 inputs: they keep NaN payloads and signs.
      const std::string file = input.contains("bits_file") && !input.at("bits_file").is_null()
                                   ? input.at("bits_file").get<std::string>()
                                   : input.at("file").get<std::string>();
      request.inputs[buffer] = read_npy((dir / file).string());
      request.input_origins[buffer] = (dir / file).string();
    }
    if (vm->count("row-max") != 0U) {
      for (const auto& spec : (*vm)["row-max"].as<std::vector<std::string>>()) {
        const auto eq = spec.find('=');
        if (eq == std::string::npos)
          throw std::invalid_argument(fmt::format("--row-max {}: expected NAME=INPUT", spec));
        const std::string buffer = spec.substr(0, eq);
        const std::string source = spec.substr(eq + 1);
        const auto it = request.inputs.find(source);
        if (it == request.inputs.end() || it->second.dtype != NpyDtype::kFloat32 || it->second.shape.size() != 2) {
          throw std::invalid_argument(
              fmt::format("--row-max {}: '{}' is not a 2-D float32 input of the case", spec, source));
        }
        const auto values = it->second.as_f32();
        const std::uint64_t rows = it->second.shape[0];
        const std::uint64_t cols = it->second.shape[1];
        std::vector<float> maxima(rows, -INFINITY);
        for (std::uint64_t r = 0; r < rows; ++r) {
          for (std::uint64_t k = 0; k < cols; ++k) maxima[r] = std::max(maxima[r], values[r * cols + k]);
        }
        request.inputs[buffer] = make_npy(NpyDtype::kFloat32, {rows}, maxima.data());
        request.input_origins[buffer] = fmt::format("row maxima of {}", source);
      }
    }
    // A by-value operand bound to an input takes its value, in the operand's dtype.
    for (const auto& scalar : scalar_inputs) {
      const std::string what = fmt::format("kernel {} ({}): scalar operand {} ({}[])", scalar.step,
                                           programs[scalar.step].name, scalar.binding.index, scalar.binding.dtype);
      const auto in = request.inputs.find(scalar.input);
      if (in == request.inputs.end()) {
        std::vector<std::string> names;
        for (const auto& [input, array] : request.inputs) names.push_back(input);
        throw std::invalid_argument(
            fmt::format("{} binds '{}', which is neither a constant nor an input of the case (inputs: {})", what,
                        scalar.input, names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
      }
      const std::uint32_t bits = chip::scalar_register(
          scalar.binding, in->second, input_dtypes[scalar.input],
          fmt::format("{} from input '{}' ({})", what, scalar.input, request.input_origins.at(scalar.input)));
      // Kernels share buffers by name: one input gives one register value.
      if (const auto [it, fresh] = request.scalars.emplace(scalar.input, bits); !fresh && it->second != bits) {
        throw std::invalid_argument(fmt::format(
            "{}: input '{}' is bound to scalar operands of different dtypes (0x{:08x} here, 0x{:08x} before); give "
            "each its own input",
            what, scalar.input, bits, it->second));
      }
    }
    const auto& out = c.at("output");
    expected = read_npy((dir / out.at("file").get<std::string>()).string());
    if (out.contains("bits_file")) expected_bits = read_npy((dir / out.at("bits_file").get<std::string>()).string());
    exact = c.value("notes", std::string()).find("NOT bit-exact") == std::string::npos;
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu run-case: {}\n", e.what());
    return kExitBadInput;
  } catch (const isa::AsmError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitBadInput;
  } catch (const NpyError& e) {
    fmt::print(stderr, "tpuemu run-case: {}\n", e.what());
    return kExitBadInput;
  } catch (const json::exception& e) {  // a field missing or of the wrong type
    std::string_view what = e.what();   // "[json.exception.out_of_range.403] key 'x' not found"
    if (const auto close = what.find("] "); what.starts_with("[json.exception") && close != std::string_view::npos) {
      what.remove_prefix(close + 2);
    }
    fmt::print(stderr, "tpuemu run-case: {}/case.json: not a case description: {}\n", dir.string(), what);
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu run-case: {}\n", e.what());
    return kExitBadInput;
  }

  // 2. Run the chain, or the top-level program that calls it.
  chip::ChainResult result;
  const bool tlp = vm->count("tlp") != 0U;
  isa::Program tlp_program;
  try {
    if (!tlp) {
      result = chip::run_chain(request);
    } else {
      if (!c.contains("tlp_dump") || c.at("tlp_dump").is_null()) {
        throw std::invalid_argument("the case has no top-level program (tlp_dump is null: an old-format dump)");
      }
      tlp_program = load_program((dir / c.at("tlp_dump").get<std::string>()).string());
      chip::TlpRequest t;
      t.chip = request.chip;
      t.options = request.options;
      t.tlp = &tlp_program;
      t.tracer = request.tracer;
      // Each buffer's layout comes from the first kernel operand bound to it.
      std::map<std::string, chip::OperandBinding> layouts;
      for (const auto& step : request.steps) {
        t.kernels[step.program->name] = step.program;
        const auto exec = chip::decode_program(*step.program, request.chip);
        for (const auto& b : exec.bindings) layouts.emplace(step.operand_buffers.at(b.index), b);
      }
      for (const auto& input : c.at("inputs")) {
        const std::string buffer = input.at("name").get<std::string>();
        if (layouts.count(buffer) == 0U) throw std::invalid_argument(fmt::format("no kernel reads input '{}'", buffer));
        const bool transposed = request.transposed.count(buffer) != 0U;
        t.parameters.emplace_back(
            transposed ? chip::transposed_binding(layouts.at(buffer)) : layouts.at(buffer),
            transposed ? chip::transpose_2d(request.inputs.at(buffer)) : request.inputs.at(buffer));
      }
      if (layouts.count(output_buffer) == 0U) throw std::invalid_argument("no kernel writes the buffer 'output'");
      t.output = layouts.at(output_buffer);
      chip::TlpResult r = chip::run_tlp(t);
      result.run = std::move(r.run);
      result.buffers[output_buffer] = {t.output, std::move(r.output_bytes)};
      chip::StepResult step;
      step.kernel = "top-level program " + tlp_program.name;
      step.end_cycle = result.run.cycles;
      step.stats = result.run.cores.front();
      result.steps.push_back(step);
    }
  } catch (const std::exception& e) {  // LoadError, invalid_argument
    fmt::print(stderr, "tpuemu run-case: {}: {}\n", name, e.what());
    return kExitBadInput;
  }
  if (const auto error = finish_trace(trace)) {
    fmt::print(stderr, "tpuemu run-case: {}\n", *error);
    return kExitBadInput;
  }
  std::string kernels;
  for (const auto& s : result.steps) {
    std::string stalls;
    for (std::size_t i = 0; i < chip::kStallCauseCount; ++i) {
      if (s.stats.stall_cycles[i] != 0) {
        stalls += fmt::format("{}{} {}", stalls.empty() ? "" : ", ", to_string(static_cast<chip::StallCause>(i)),
                              s.stats.stall_cycles[i]);
      }
    }
    kernels += fmt::format("\n  {:<24} {:>8} cycles, {:>5} bundles{}", s.kernel, s.end_cycle - s.start_cycle,
                           s.stats.bundles, stalls.empty() ? "" : "; stalls: " + stalls);
  }
  if (result.run.fault) {
    fmt::print("FAIL {}: program fault: {}{}\n", name, *result.run.fault, kernels);
    return kExitProgramFault;
  }

  // 3. Compare.
  const auto it = result.buffers.find(output_buffer);
  if (it == result.buffers.end()) {
    fmt::print(stderr, "tpuemu run-case: {}: no kernel writes the buffer 'output'\n", name);
    return kExitBadInput;
  }
  const auto& [binding, bytes] = it->second;
  const bool raw = expected_bits.has_value() && (binding.dtype == "bf16" || binding.dtype == "f8e4m3fn");
  const NpyArray got = chip::from_device(binding, bytes, raw);
  const NpyArray& want = raw ? *expected_bits : expected;
  if (got.shape != want.shape || got.dtype != want.dtype) {
    fmt::print("FAIL {}: output is {} of shape {} but the expected array is {} of shape {}\n", name,
               to_string(got.dtype), fmt::join(got.shape, "x"), to_string(want.dtype), fmt::join(want.shape, "x"));
    return kExitFailure;
  }
  const std::size_t esize = element_size(got.dtype);
  const std::uint64_t count = got.element_count();
  std::uint64_t mismatches = 0;
  std::uint64_t first = 0;
  double max_rel = 0;
  double max_ulp = 0;
  const double rtol = (*vm)["rtol"].as<double>();
  const double atol = (*vm)["atol"].as<double>();
  for (std::uint64_t i = 0; i < count; ++i) {
    bool same = std::memcmp(&got.data[i * esize], &want.data[i * esize], esize) == 0;
    if (!same && !exact && got.dtype == NpyDtype::kFloat32) {
      const float g = got.as_f32()[i];
      const float w = want.as_f32()[i];
      if (std::isfinite(g) && std::isfinite(w)) {
        const double diff = std::fabs(static_cast<double>(g) - w);
        same = diff <= atol + rtol * std::fabs(static_cast<double>(w));
        if (w != 0) max_rel = std::max(max_rel, diff / std::fabs(static_cast<double>(w)));
        if (std::signbit(g) == std::signbit(w)) max_ulp = std::max(max_ulp, ulp_distance(g, w));
      } else {
        same = (std::isnan(g) && std::isnan(w)) || g == w;
      }
    }
    if (!same && mismatches++ == 0) first = i;
  }
  if (vm->count("report") != 0U) {
    json report = api::chip_report(name, request.chip, result.run, result.steps);
    report["case"] = {{"pass", mismatches == 0},
                      {"mismatches", mismatches},
                      {"exact", exact},
                      {"max_relative_error", max_rel},
                      {"max_ulp", max_ulp}};
    if (auto error = write_text_file("--report", (*vm)["report"].as<std::string>(), report.dump(2) + "\n")) {
      fmt::print(stderr, "tpuemu run-case: {}\n", *error);
      return kExitBadInput;
    }
  }
  if (mismatches != 0) {
    auto show = [&](const NpyArray& a) {
      if (a.dtype == NpyDtype::kFloat32) {
        const float f = a.as_f32()[first];
        return fmt::format("{} (0x{:08x})", f, std::bit_cast<std::uint32_t>(f));
      }
      std::uint64_t v = 0;
      std::memcpy(&v, &a.data[first * esize], esize);
      return fmt::format("0x{:x}", v);
    };
    fmt::print("FAIL {}: {} of {} elements differ{}; first at {}: got {}, expected {}{}\n", name, mismatches, count,
               exact ? " (bit-exact case)" : fmt::format(" beyond rtol {}, atol {}", rtol, atol),
               element_index(got.shape, first), show(got), show(want), kernels);
    return kExitFailure;
  }
  if (exact) {
    fmt::print("PASS {}: {} elements bit-exact, {} cycles{}\n", name, count, result.run.cycles, kernels);
  } else {
    fmt::print("PASS {}: {} elements within rtol {}, atol {} (max relative error {:.3g}, max {} ulp), {} cycles{}\n",
               name, count, rtol, atol, max_rel, max_ulp, result.run.cycles, kernels);
  }
  return kExitOk;
}

}  // namespace tpuemu::cli
