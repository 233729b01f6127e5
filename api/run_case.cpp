#include "api/run_case.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "api/run.hpp"
#include "chip/core.hpp"
#include "chip/exec_program.hpp"
#include "chip/host_io.hpp"
#include "common/json_file.hpp"
#include "common/numerics.hpp"

namespace tpuemu::api {
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
// otherwise, or if its shape is malformed: the run reports that).
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

// The row maxima of a 2-D float32 array, as a 1-D float32 array.
NpyArray row_maxima(const NpyArray& a) {
  const auto values = a.as_f32();
  const std::uint64_t rows = a.shape[0];
  const std::uint64_t cols = a.shape[1];
  std::vector<float> maxima(rows, -INFINITY);
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t k = 0; k < cols; ++k) maxima[r] = std::max(maxima[r], values[r * cols + k]);
  }
  return make_npy(NpyDtype::kFloat32, {rows}, maxima.data());
}

// A field of case.json that is missing or of the wrong type, named by its
// path ("kernel_chain[0].dump: expected a string, got number 5").
class CaseFieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A case.json value and its path, read with the type each field must have.
struct Field {
  const json& value;
  std::string path;  // "" at the top level

  [[nodiscard]] std::string got() const {
    const std::string text = value.dump();
    return fmt::format("{} {}", value.type_name(), text.size() > 40 ? text.substr(0, 40) + "..." : text);
  }
  [[noreturn]] void wrong(const char* expected) const {
    throw CaseFieldError(
        fmt::format("{}: expected {}, got {}", path.empty() ? "the top level" : path, expected, got()));
  }
  [[nodiscard]] bool has(const char* key) const {
    return value.is_object() && value.contains(key) && !value.at(key).is_null();
  }
  [[nodiscard]] Field operator[](const char* key) const {
    if (!value.is_object()) wrong("an object");
    if (!value.contains(key)) {
      throw CaseFieldError(fmt::format("{}: no field '{}'", path.empty() ? "the top level" : path, key));
    }
    return {value.at(key), path.empty() ? std::string(key) : path + "." + key};
  }
  [[nodiscard]] std::size_t count() const {
    if (!value.is_array()) wrong("an array");
    return value.size();
  }
  [[nodiscard]] Field operator[](std::size_t i) const { return {value.at(i), fmt::format("{}[{}]", path, i)}; }
  [[nodiscard]] std::string text() const {
    if (!value.is_string()) wrong("a string");
    return value.get<std::string>();
  }
  [[nodiscard]] std::uint32_t index() const {
    if (!value.is_number_integer() || value.get<std::int64_t>() < 0 || value.get<std::int64_t>() > 0xFFFFFFFFLL) {
      wrong("a whole number from 0");
    }
    return static_cast<std::uint32_t>(value.get<std::int64_t>());
  }
};

// 1. to 4. of load_case; throws what the files and fields give (mapped by load_case).
void read_case(const fs::path& dir, CaseJob& c) {
  Job& job = c.job;
  const json file = read_json_file((dir / "case.json").string());  // InputFileError names the file
  const Field j{file, ""};

  // 1. Kernels, and what each operand binds to.
  const Field chain = j["kernel_chain"];
  std::vector<ScalarInput> scalar_inputs;
  for (std::size_t k = 0; k < chain.count(); ++k) {
    Step step;
    step.program = load((dir / chain[k]["dump"].text()).string());
    step.name = step.program->name;
    const Field operands = chain[k]["operands"];
    for (std::size_t o = 0; o < operands.count(); ++o) {
      const Field op = operands[o];
      const Bind bind = parse_bind(op["binds"].text());
      const auto index = op["index"].index();
      step.operand_buffers[index] = bind.buffer;
      if (bind.constant_bits) {
        job.scalars[bind.buffer] = *bind.constant_bits;
      } else if (auto declared = by_value_operand(*step.program, index)) {
        if (op.has("dtype") && op["dtype"].text() != declared->dtype) {
          throw BadInput(
              fmt::format("kernel {} ({}): case.json gives scalar operand {} dtype {}, but the "
                          "kernel declares {}[]",
                          k, step.name, index, op["dtype"].text(), declared->dtype));
        }
        scalar_inputs.push_back({k, bind.buffer, *declared});
      }
      if (bind.transposed) job.transposed[bind.buffer] = true;
    }
    job.steps.push_back(std::move(step));
  }

  // 2. Inputs; buffers the host derives from them (row maxima).
  std::map<std::string, std::string> input_dtypes;  // case.json's name of what an input holds ("bfloat16", ...)
  const Field inputs = j["inputs"];
  for (std::size_t i = 0; i < inputs.count(); ++i) {
    const Field input = inputs[i];
    const std::string buffer = input["name"].text();
    input_dtypes[buffer] = input.has("dtype") && input["dtype"].value.is_string() ? input["dtype"].text() : "";
    // Prefer the raw codes of bf16/f8 inputs: they keep NaN payloads and signs.
    const std::string file = input.has("bits_file") ? input["bits_file"].text() : input["file"].text();
    Input& in = job.inputs[buffer];
    in.per_chip = {read_npy((dir / file).string())};
    in.origin = (dir / file).string();
    c.input_names.push_back(buffer);
  }
  for (const auto& [buffer, source] : c.options.row_max) {
    const auto it = job.inputs.find(source);
    const NpyArray* a = it == job.inputs.end() ? nullptr : &it->second.per_chip.front();
    if (a == nullptr || a->dtype != NpyDtype::kFloat32 || a->shape.size() != 2) {
      throw BadInput(
          fmt::format("--row-max {}={}: '{}' is not a 2-D float32 input of the case", buffer, source, source));
    }
    Input& in = job.inputs[buffer];
    in.per_chip = {row_maxima(*a)};
    in.origin = fmt::format("row maxima of {}", source);
  }

  // 3. A by-value operand bound to an input takes its value, in the operand's dtype.
  for (const auto& scalar : scalar_inputs) {
    const std::string what = fmt::format("kernel {} ({}): scalar operand {} ({}[])", scalar.step,
                                         job.steps[scalar.step].name, scalar.binding.index, scalar.binding.dtype);
    const auto in = job.inputs.find(scalar.input);
    if (in == job.inputs.end()) {
      std::vector<std::string> names;
      for (const auto& [input, array] : job.inputs) names.push_back(input);
      throw BadInput(fmt::format("{} binds '{}', which is neither a constant nor an input of the case (inputs: {})",
                                 what, scalar.input,
                                 names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
    }
    const std::uint32_t bits =
        chip::scalar_register(scalar.binding, in->second.per_chip.front(), input_dtypes[scalar.input],
                              fmt::format("{} from input '{}' ({})", what, scalar.input, in->second.origin));
    // Kernels share buffers by name: one input gives one register value.
    if (const auto [it, fresh] = job.scalars.emplace(scalar.input, bits); !fresh && it->second != bits) {
      throw BadInput(fmt::format(
          "{}: input '{}' is bound to scalar operands of different dtypes (0x{:08x} here, 0x{:08x} before); give "
          "each its own input",
          what, scalar.input, bits, it->second));
    }
  }

  // 4. The expected output, and how to compare with it.
  const Field out = j["output"];
  c.expected = read_npy((dir / out["file"].text()).string());
  if (out.has("bits_file")) c.expected_bits = read_npy((dir / out["bits_file"].text()).string());
  c.exact = !j.has("notes") || j["notes"].text().find("NOT bit-exact") == std::string::npos;
  if (j.has("tlp_dump") && j["tlp_dump"].value.is_string()) c.tlp_dump = (dir / j["tlp_dump"].text()).string();
}

// Distance in units in the last place between two finite floats of the same sign class.
double ulp_distance(float a, float b) {
  auto ordered = [](float f) {
    const auto u = std::bit_cast<std::int32_t>(f);
    return u < 0 ? static_cast<std::int64_t>(INT32_MIN) - u : static_cast<std::int64_t>(u);
  };
  return static_cast<double>(std::llabs(ordered(a) - ordered(b)));
}

// Element `i` as the verdict shows it: a float32 value with its bits, or a raw code.
std::string show_element(const NpyArray& a, std::uint64_t i) {
  if (a.dtype == NpyDtype::kFloat32) {
    const float f = a.as_f32()[i];
    return fmt::format("{} (0x{:08x})", f, std::bit_cast<std::uint32_t>(f));
  }
  const std::size_t esize = element_size(a.dtype);
  std::uint64_t v = 0;
  std::memcpy(&v, &a.data[i * esize], esize);
  return fmt::format("0x{:x}", v);
}

// One line per kernel of the report's steps: cycles, bundles, stalls by cause.
std::string steps_text(const json& report) {
  std::string kernels;
  if (!report.is_object() || !report.contains("steps")) return kernels;
  for (const auto& s : report.at("steps")) {
    std::string stalls;
    for (std::size_t i = 0; i < chip::kStallCauseCount; ++i) {
      const std::string cause(to_string(static_cast<chip::StallCause>(i)));
      const auto n = s.at("stall_cycles").at(cause).get<std::uint64_t>();
      if (n != 0) stalls += fmt::format("{}{} {}", stalls.empty() ? "" : ", ", cause, n);
    }
    kernels += fmt::format("\n  {:<24} {:>8} cycles, {:>5} bundles{}", s.at("kernel").get<std::string>(),
                           s.at("cycles").get<std::uint64_t>(), s.at("bundles").get<std::uint64_t>(),
                           stalls.empty() ? "" : "; stalls: " + stalls);
  }
  return kernels;
}

}  // namespace

CaseJob load_case(const std::string& dir_text, const CaseOptions& options) {
  for (const auto& [option, value] : {std::pair{"rtol", options.rtol}, std::pair{"atol", options.atol}}) {
    if (!std::isfinite(value) || value < 0) {
      throw BadInput(fmt::format("{} {}: expected a finite number >= 0", option, value));
    }
  }
  const fs::path dir = dir_text;
  CaseJob c;
  c.dir = dir_text;
  c.name = dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();
  c.options = options;
  c.job.name = c.name;
  c.job.chain = true;
  try {
    read_case(dir, c);
  } catch (const BadInput&) {  // AssemblyError too
    throw;
  } catch (const CaseFieldError& e) {  // a field missing or of the wrong type, named
    throw BadInput(fmt::format("{}/case.json: not a case description: {}", dir.string(), e.what()));
  } catch (const json::exception& e) {  // anything else the JSON library refuses
    std::string_view what = e.what();   // "[json.exception.out_of_range.403] key 'x' not found"
    if (const auto close = what.find("] "); what.starts_with("[json.exception") && close != std::string_view::npos) {
      what.remove_prefix(close + 2);
    }
    throw BadInput(fmt::format("{}/case.json: not a case description: {}", dir.string(), what));
  } catch (const std::exception& e) {  // files (InputFileError, NpyError), values (invalid_argument)
    throw BadInput(e.what());
  }
  return c;
}

CaseResult check_case(const CaseJob& c, Result run) {
  CaseResult r;
  r.name = c.name;
  r.exact = c.exact;
  r.rtol = c.options.rtol;
  r.atol = c.options.atol;
  r.run = std::move(run);
  if (r.run.fault) {
    r.failure = "program fault: " + r.run.fault->message;
    return r;
  }
  const auto it = r.run.outputs.find(c.output);
  if (it == r.run.outputs.end()) throw BadInput(fmt::format("{}: no kernel writes the buffer '{}'", c.name, c.output));
  const std::string& dtype = it->second.binding.dtype;
  const bool raw = c.expected_bits.has_value() && (dtype == "bf16" || dtype == "f8e4m3fn");
  r.output = r.run.output(c.output, 0, raw);
  r.expected = raw ? *c.expected_bits : c.expected;
  const NpyArray& got = r.output;
  const NpyArray& want = r.expected;
  if (got.shape != want.shape || got.dtype != want.dtype) {
    r.failure = fmt::format("output is {} of shape {} but the expected array is {} of shape {}", to_string(got.dtype),
                            fmt::join(got.shape, "x"), to_string(want.dtype), fmt::join(want.shape, "x"));
    return r;
  }
  r.compared = true;
  const std::size_t esize = element_size(got.dtype);
  r.elements = got.element_count();
  const bool tolerant = !c.exact && got.dtype == NpyDtype::kFloat32;
  const std::span<const float> g32 = tolerant ? got.as_f32() : std::span<const float>{};
  const std::span<const float> w32 = tolerant ? want.as_f32() : std::span<const float>{};
  for (std::uint64_t i = 0; i < r.elements; ++i) {
    bool same = std::memcmp(&got.data[i * esize], &want.data[i * esize], esize) == 0;
    if (!same && tolerant) {
      const float g = g32[i];
      const float w = w32[i];
      if (std::isfinite(g) && std::isfinite(w)) {
        const double diff = std::fabs(static_cast<double>(g) - w);
        same = diff <= r.atol + r.rtol * std::fabs(static_cast<double>(w));
        if (w != 0) r.max_relative_error = std::max(r.max_relative_error, diff / std::fabs(static_cast<double>(w)));
        if (std::signbit(g) == std::signbit(w)) r.max_ulp = std::max(r.max_ulp, ulp_distance(g, w));
      } else {
        same = (std::isnan(g) && std::isnan(w)) || g == w;
      }
    }
    if (!same && r.mismatches++ == 0) r.first_mismatch = i;
  }
  if (r.first_mismatch) {
    std::uint64_t flat = *r.first_mismatch;
    r.first_mismatch_index.resize(got.shape.size());
    for (std::size_t d = got.shape.size(); d-- > 0;) {
      r.first_mismatch_index[d] = flat % got.shape[d];
      flat /= got.shape[d];
    }
    r.first_got = show_element(got, *r.first_mismatch);
    r.first_expected = show_element(want, *r.first_mismatch);
  }
  r.passed = r.mismatches == 0;
  r.run.report["case"] = {{"pass", r.passed},
                          {"mismatches", r.mismatches},
                          {"exact", r.exact},
                          {"max_relative_error", r.max_relative_error},
                          {"max_ulp", r.max_ulp}};
  return r;
}

CaseResult run_case(const CaseJob& c) {
  if (c.job.options.no_data) {
    throw BadInput(fmt::format("{}: a timing-only run (no_data) computes no output to check", c.name));
  }
  Result run;
  try {
    run = api::run(c.job);
  } catch (const AssemblyError&) {
    throw;
  } catch (const BadInput& e) {
    throw BadInput(fmt::format("{}: {}", c.name, e.what()));
  } catch (const InternalError& e) {
    throw InternalError(fmt::format("{}: {}", c.name, e.what()));
  }
  return check_case(c, std::move(run));
}

std::string CaseResult::text() const {
  const std::string kernels = steps_text(run.report);
  if (run.fault) return fmt::format("FAIL {}: {}{}", name, failure, kernels);
  if (!compared) return fmt::format("FAIL {}: {}", name, failure);
  if (mismatches != 0) {
    const std::string first_index = fmt::format("[{}]", fmt::join(first_mismatch_index, ","));
    return fmt::format("FAIL {}: {} of {} elements differ{}; first at {}: got {}, expected {}{}", name, mismatches,
                       elements, exact ? " (bit-exact case)" : fmt::format(" beyond rtol {}, atol {}", rtol, atol),
                       first_index, first_got, first_expected, kernels);
  }
  if (exact) return fmt::format("PASS {}: {} elements bit-exact, {} cycles{}", name, elements, run.cycles, kernels);
  return fmt::format(
      "PASS {}: {} elements within rtol {}, atol {} (max relative error {:.3g}, max {} ulp), {} cycles{}", name,
      elements, rtol, atol, max_relative_error, max_ulp, run.cycles, kernels);
}

void use_top_level_program(CaseJob& c) {
  if (c.tlp_dump.empty()) {
    throw BadInput(fmt::format("{}: the case has no top-level program (tlp_dump is null: an old-format dump)", c.name));
  }
  c.job.top_level = TopLevel{load(c.tlp_dump), c.input_names, c.output};
  c.job.scalars.clear();  // the top-level program computes what it passes by value
}

}  // namespace tpuemu::api
