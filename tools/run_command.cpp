#include "tools/run_command.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "chip/fault.hpp"
#include "chip/host_io.hpp"
#include "chip/pod.hpp"
#include "chip/run.hpp"
#include "common/host_pool.hpp"
#include "common/npy.hpp"
#include "common/parse_number.hpp"
#include "isa/assembler.hpp"
#include "isa/image.hpp"
#include "tools/cli.hpp"
#include "tools/mxu_options.hpp"
#include "tools/options.hpp"
#include "tools/output_files.hpp"
#include "tools/pod_report.hpp"
#include "tools/program_loader.hpp"
#include "tools/roofline.hpp"
#include "tools/run_report.hpp"
#include "tools/trace_options.hpp"

namespace tpuemu::cli {
namespace {

// "IDX=path" -> (IDX, path).
std::optional<std::pair<std::uint32_t, std::string>> parse_binding(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return std::nullopt;
  const auto index = parse_unsigned(text.substr(0, eq));
  if (!index || *index > UINT32_MAX) return std::nullopt;
  return std::make_pair(static_cast<std::uint32_t>(*index), text.substr(eq + 1));
}

// "x_{chip}.npy" with chip 3 -> "x_3.npy"; a path without {chip} is the same for every chip.
std::string per_chip_path(const std::string& pattern, std::uint32_t chip) {
  std::string out = pattern;
  for (auto pos = out.find("{chip}"); pos != std::string::npos; pos = out.find("{chip}", pos)) {
    out.replace(pos, 6, std::to_string(chip));
  }
  return out;
}

// Before the run: --out and --expect need data (refused with --no-data), name
// each operand once, and every --out file (of each of `chips`) and the
// --report file must be writable.
void check_outputs(const po::variables_map& vm, std::uint32_t chips) {
  for (const char* key : {"out", "expect"}) {
    if (vm.count(key) == 0U) continue;
    if (vm.count("no-data") != 0U) {
      throw std::invalid_argument(
          fmt::format("--{} needs the data that a timing-only run (--no-data) does not compute: drop one of them", key));
    }
    std::map<std::uint32_t, bool> seen;
    for (const auto& text : vm[key].as<std::vector<std::string>>()) {
      const auto b = parse_binding(text);
      if (!b) continue;  // reported where the binding is read
      if (seen[b->first]) throw std::invalid_argument(fmt::format("--{} {}: operand {} is given twice", key, text, b->first));
      seen[b->first] = true;
      if (std::string_view(key) == "out") {
        for (std::uint32_t c = 0; c < chips; ++c) check_writable("--out", per_chip_path(b->second, c));
      }
    }
  }
  if (vm.count("report") != 0U) check_writable("--report", vm["report"].as<std::string>());
}

// The .npy files of --in and --expect, read on the host threads
// (common/host_pool.hpp) while the options are checked in order: take()
// returns a file's array, or throws its read error, at the point where the
// checks read it, so messages and their order are those of reading in turn.
class NpyPrefetch {
 public:
  explicit NpyPrefetch(const std::vector<std::string>& paths) {
    if (host_threads() <= 1) return;
    for (const std::string& path : paths) {
      if (reads_.count(path) != 0U) continue;
      auto read = std::make_unique<Read>();
      read->path = path;
      read->run = &Read::go;
      submit_host_task(*read);
      reads_.emplace(path, std::move(read));
    }
  }
  NpyPrefetch(const NpyPrefetch&) = delete;
  NpyPrefetch& operator=(const NpyPrefetch&) = delete;
  ~NpyPrefetch() {
    for (auto& [path, read] : reads_) wait_host_task(*read, std::chrono::microseconds::max());
  }

  NpyArray take(const std::string& path) {
    const auto it = reads_.find(path);
    if (it == reads_.end() || it->second->taken) return read_npy(path);
    Read& read = *it->second;
    wait_host_task(read, std::chrono::microseconds::max());
    read.taken = true;
    if (read.error) std::rethrow_exception(read.error);
    return std::move(read.array);
  }

 private:
  struct Read : HostTask {
    std::string path;
    NpyArray array;
    std::exception_ptr error;
    bool taken = false;
    static void go(HostTask& task) {
      auto& read = static_cast<Read&>(task);
      try {
        read.array = read_npy(read.path);
      } catch (...) {
        read.error = std::current_exception();
      }
    }
  };
  std::map<std::string, std::unique_ptr<Read>> reads_;
};

// The file names of --in and --expect options that parse, in order.
std::vector<std::string> npy_files(const po::variables_map& vm) {
  std::vector<std::string> paths;
  for (const char* key : {"in", "expect"}) {
    if (vm.count(key) == 0U) continue;
    for (const auto& text : vm[key].as<std::vector<std::string>>()) {
      if (const auto b = parse_binding(text)) paths.push_back(b->second);
    }
  }
  return paths;
}

// `tpuemu run --topology SHAPE`: the program runs SPMD on every core of every chip.
// "bit-exact (N elements)", or what differs: shape, dtype, or the count of
// elements whose bits differ and the first of them.
std::string compare_bits(const NpyArray& got, const NpyArray& expected) {
  if (got.shape != expected.shape) {
    return fmt::format("shape [{}] differs from the expected [{}]", fmt::join(got.shape, ","),
                       fmt::join(expected.shape, ","));
  }
  if (got.dtype != expected.dtype || got.data.size() != expected.data.size()) {
    return fmt::format("dtype {} differs from the expected file's {} (raw bits of bf16/f8 outputs compare with a "
                       "file named *.bits.npy)",
                       to_string(got.dtype), to_string(expected.dtype));
  }
  const std::uint64_t count = got.element_count();
  if (got.data == expected.data) return fmt::format("bit-exact ({} elements)", count);
  const std::size_t width = got.data.size() / std::max<std::uint64_t>(1, count);
  std::uint64_t differing = 0;
  std::uint64_t first = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (std::memcmp(&got.data[i * width], &expected.data[i * width], width) != 0) {
      if (differing++ == 0) first = i;
    }
  }
  if (differing == 0) return fmt::format("bit-exact ({} elements)", count);
  std::string detail;
  if (got.dtype == NpyDtype::kFloat32) {
    detail = fmt::format(": got {} where {} was expected", got.as_f32()[first], expected.as_f32()[first]);
  }
  return fmt::format("{} of {} elements differ, the first at flat index {}{}", differing, got.element_count(), first,
                     detail);
}

int run_on_pod(const po::variables_map& vm, const std::string& program_path) {
  chip::PodRequest request;
  isa::Program program;
  std::map<std::uint32_t, std::string> inputs;
  std::vector<std::pair<std::uint32_t, std::string>> outputs;
  ici::Topology topology{{1}, {false}};
  TraceOutput trace;
  ProfileOutput profile;
  try {
    request.chip = load_chip(chip_request(vm));
    trace = trace_output(vm, request.chip.clock_hz);
    request.tracer = trace.tracer.get();
    request.vcd = waveform_path(vm);
    request.vcd_max_changes = vm["vcd-max-changes"].as<std::uint64_t>();
    profile = profile_output(vm);
    request.profile = profile.profile.get();
    topology = topology_from(vm, vm["topology"].as<std::string>(), request.chip);
    request.topology = topology;
    check_outputs(vm, topology.chip_count());
    request.routing = vm["routing"].as<std::string>();
    program = load_program(program_path);
    request.program = &program;
    request.options.strict = vm.count("strict") != 0U;
    request.options.compute_numerics = vm.count("no-data") == 0U;
    request.options.max_cycles = max_cycles(vm);
    request.quantum_cycles = std::max<std::uint64_t>(1, vm["quantum"].as<std::uint64_t>());
    for (const char* key : {"in", "out"}) {
      if (vm.count(key) == 0U) continue;
      for (const auto& text : vm[key].as<std::vector<std::string>>()) {
        const auto b = parse_binding(text);
        if (!b) throw std::invalid_argument(fmt::format("--{} {}: expected IDX=FILE.npy", key, text));
        if (std::string(key) == "in") {
          if (!inputs.emplace(b->first, b->second).second) {
            throw std::invalid_argument(fmt::format("--in {}: operand {} is given twice", text, b->first));
          }
        } else {
          if (topology.chip_count() > 1 && b->second.find("{chip}") == std::string::npos) {
            throw std::invalid_argument(fmt::format("--out {}: a pod has {} chips; put {{chip}} in the file name", text,
                                                    topology.chip_count()));
          }
          outputs.push_back(*b);
        }
      }
    }
    request.input = [&inputs](std::uint32_t chip_id, const std::string&, const chip::OperandBinding& binding) {
      const auto it = inputs.find(binding.index);
      if (it == inputs.end()) return std::vector<std::uint8_t>{};
      const std::string path = per_chip_path(it->second, chip_id);
      return chip::to_device(binding, read_npy(path), path);
    };
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  } catch (const isa::AsmError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {  // topology, routing, image, npy, bad options
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  }

  if (const auto error = trace_dry_run(trace, [&request](chip::Tracer& tracer) {
        request.options.compute_numerics = false;
        request.tracer = &tracer;
        request.vcd.clear();
        request.profile = nullptr;
        chip::run_pod(request);
        return tracer.overflowed();
      })) {
    fmt::print(stderr, "tpuemu run: {}\n", *error);
    return kExitBadInput;
  }

  PodSummary summary;
  summary.program = program_path;
  summary.chip = &request.chip;
  summary.topology = &topology;
  try {
    summary.result = chip::run_pod(request);
  } catch (const std::exception& e) {  // LoadError, bad inputs (npy, shapes)
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  }
  if (const auto error = finish_observers(trace, profile, request.chip.clock_hz)) {
    fmt::print(stderr, "tpuemu run: {}\n", *error);
    return kExitBadInput;
  }
  if (summary.result.fault && summary.result.waveform_overflowed) {  // the waveform's limit, not the program's
    fmt::print(stderr, "tpuemu run: --vcd {}: {}\n", request.vcd, *summary.result.fault);
    return kExitBadInput;
  }
  if (summary.result.fault) {
    fmt::print(stderr, "tpuemu run: program fault: {}\n", *summary.result.fault);
  } else {
    print_pod_summary(summary);
    for (const auto& [index, pattern] : outputs) {
      const std::string name = std::to_string(index);
      if (summary.result.chips.front().outputs.count(name) == 0U) {
        fmt::print(stderr, "tpuemu run: --out {}: operand {} is not an output of the program\n", index, index);
        return kExitBadInput;
      }
      const chip::OperandBinding& b = summary.result.buffers.at(name);
      for (std::uint32_t c = 0; c < summary.result.chips.size(); ++c) {
        const std::string path = per_chip_path(pattern, c);
        try {
          write_npy(path, chip::from_device(b, summary.result.chips[c].outputs.at(name), path.ends_with(".bits.npy")));
        } catch (const NpyError& e) {
          fmt::print(stderr, "tpuemu run: {}\n", e.what());
          return kExitBadInput;
        }
      }
    }
  }
  std::fflush(stdout);
  if (vm.count("report") != 0U) {
    const std::string path = vm["report"].as<std::string>();
    std::ofstream out(path);
    out << pod_report_json(summary).dump(2) << "\n";
    if (!out) {
      fmt::print(stderr, "tpuemu run: cannot write report '{}'\n", path);
      return kExitBadInput;
    }
  }
  return summary.result.fault ? kExitProgramFault : kExitOk;
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  add_max_cycles_option(options);
  add_topology_options(options);
  add_trace_options(options);
  add_waveform_options(options);
  add_profile_options(options);
  add_mxu_options(options);
  options.add_options()("topology", po::value<std::string>(),
                        "run SPMD on a pod of this shape (8x16, 4x4x4, ...); --in/--out paths may contain {chip}")(
      "program", po::value<std::string>(), "LLO program (.llo, a dump's *-final_bundles.txt) or image (.tpub)")(
      "in", po::value<std::vector<std::string>>()->composing(), "IDX=FILE.npy: input operand IDX (repeatable)")(
      "out", po::value<std::vector<std::string>>()->composing(),
      "IDX=FILE.npy: write output operand IDX (bf16/f8 as float32; as raw bits if FILE ends in .bits.npy)")(
      "report", po::value<std::string>(), "write the run report as JSON")(
      "expect", po::value<std::vector<std::string>>()->composing(),
      "IDX=FILE.npy: compare output operand IDX with FILE bit for bit (exit 1 if any element differs)")(
      "strict", "treat stalls on register hazards as errors (checks a compiler's schedule)")(
      "no-data", "timing only: skip MXU arithmetic and bulk data movement (same cycle counts)")(
      "quantum", whole_value(1)->default_value(1000), "cycles a core may run ahead of SystemC time");
  po::positional_options_description positional;
  positional.add("program", 1);
  bool help = false;
  const auto vm =
      parse_options("run", "PROGRAM [--chip v5e] [--in IDX=FILE.npy]... [--out IDX=FILE.npy]... [--report R.json]",
                    args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  if (vm->count("program") == 0U) {
    fmt::print(stderr, "tpuemu run: no program given (usage: tpuemu run PROGRAM ...)\n");
    return kExitBadInput;
  }
  const std::string program_path = (*vm)["program"].as<std::string>();
  if (vm->count("topology") != 0U) {
    if ((*vm)["mxu"].as<std::string>() != "cpp" || vm->count("rtl-vcd") != 0U) {
      fmt::print(stderr, "tpuemu run: --mxu rtl runs on one chip; pods (--topology) use the C++ MXU\n");
      return kExitBadInput;
    }
    return run_on_pod(*vm, program_path);
  }

  // 1. Everything that can be wrong with the input is checked before the run.
  chip::RunRequest request;
  isa::Program program;
  std::vector<std::pair<std::uint32_t, std::string>> outputs;
  std::vector<std::pair<std::uint32_t, std::string>> expects;
  std::map<std::string, NpyArray> expected_arrays;  // by path, read before the run
  TraceOutput trace;
  ProfileOutput profile;
  MxuModels mxu_choice;
  try {
    request.chip = load_chip(chip_request(*vm));
    mxu_choice = mxu_models(*vm, request.chip);
    mxu_choice.configure(request, request.chip.clock_hz);
    trace = trace_output(*vm, request.chip.clock_hz);
    request.tracer = trace.tracer.get();
    request.vcd = waveform_path(*vm);
    request.vcd_max_changes = (*vm)["vcd-max-changes"].as<std::uint64_t>();
    profile = profile_output(*vm);
    request.profile = profile.profile.get();
    program = load_program(program_path);
    request.program = &program;
    request.options.strict = vm->count("strict") != 0U;
    request.options.compute_numerics = vm->count("no-data") == 0U;
    request.options.max_cycles = max_cycles(*vm);
    request.quantum_cycles = std::max<std::uint64_t>(1, (*vm)["quantum"].as<std::uint64_t>());
    const bool timing_only = vm->count("no-data") != 0U;
    check_outputs(*vm, 1);
    // A timing-only run reads only the inputs passed by value (they steer
    // the program); array inputs carry data it does not move.
    std::map<std::uint32_t, bool> by_value;  // operand index -> passed by value
    if (timing_only) {
      chip::check_fits(program, request.chip);
      for (const auto& b : chip::decode_program(program, request.chip).bindings) {
        by_value[b.index] = b.space == "<no memory space>";
      }
    }
    NpyPrefetch files(timing_only ? std::vector<std::string>{} : npy_files(*vm));
    if (vm->count("in") != 0U) {
      for (const auto& text : (*vm)["in"].as<std::vector<std::string>>()) {
        const auto b = parse_binding(text);
        if (!b) throw std::invalid_argument(fmt::format("--in {}: expected IDX=FILE.npy", text));
        if (request.input_origins.count(b->first) != 0U) {
          throw std::invalid_argument(fmt::format("--in {}: operand {} is given twice", text, b->first));
        }
        request.input_origins[b->first] = b->second;
        if (timing_only) {
          const auto it = by_value.find(b->first);
          if (it == by_value.end()) {
            throw std::invalid_argument(fmt::format("--in {}: the program has no operand {}", b->first, b->first));
          }
          if (!it->second) continue;
        }
        request.inputs[b->first] = files.take(b->second);
      }
    }
    if (vm->count("out") != 0U) {
      for (const auto& text : (*vm)["out"].as<std::vector<std::string>>()) {
        const auto b = parse_binding(text);
        if (!b) throw std::invalid_argument(fmt::format("--out {}: expected IDX=FILE.npy", text));
        outputs.push_back(*b);
      }
    }
    if (vm->count("expect") != 0U) {
      for (const auto& text : (*vm)["expect"].as<std::vector<std::string>>()) {
        const auto b = parse_binding(text);
        if (!b) throw std::invalid_argument(fmt::format("--expect {}: expected IDX=FILE.npy", text));
        expected_arrays[b->second] = files.take(b->second);  // readable before the run
        expects.push_back(*b);
      }
    }
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  } catch (const isa::AsmError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitBadInput;
  } catch (const isa::ImageError& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  } catch (const NpyError& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  } catch (const chip::LoadError& e) {  // --no-data checks the program here
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  }

  // A trace too big for its limit is refused before the run.
  if (const auto error = trace_dry_run(trace, [&request](chip::Tracer& tracer) {
        request.options.compute_numerics = false;
        request.tracer = &tracer;
        request.vcd.clear();
        request.profile = nullptr;
        request.mxu_backends = nullptr;
        request.elaborated = nullptr;
        chip::run_program(request);
        return tracer.overflowed();
      })) {
    fmt::print(stderr, "tpuemu run: {}\n", *error);
    return kExitBadInput;
  }

  // 2. Run.
  Summary summary;
  summary.program = program_path;
  summary.chip = &request.chip;
  try {
    summary.result = chip::run_program_freeing_inputs(request);  // the inputs are read no more
  } catch (const chip::LoadError& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  }
  for (const auto& list : {outputs, expects}) {
    for (const auto& [index, path] : list) {
      bool found = false;
      for (const auto& b : summary.result.bindings) found = found || (b.index == index && b.is_output);
      if (!found) {
        fmt::print(stderr, "tpuemu run: {} {}: operand {} is not an output of the program\n",
                   &list == &outputs ? "--out" : "--expect", index, index);
        return kExitBadInput;
      }
    }
  }
  if (const auto error = finish_observers(trace, profile, request.chip.clock_hz)) {
    fmt::print(stderr, "tpuemu run: {}\n", *error);
    return kExitBadInput;
  }
  compute_summary_roofline(summary);
  if (summary.result.fault && summary.result.waveform_overflowed) {  // the waveform's limit, not the program's
    fmt::print(stderr, "tpuemu run: --vcd {}: {}\n", request.vcd, *summary.result.fault);
    return kExitBadInput;
  }
  if (summary.result.fault) {
    fmt::print(stderr, "tpuemu run: program fault: {}\n", *summary.result.fault);
  } else {
    print_summary(summary);
    if (mxu_choice.rtl) fmt::print("{}\n", mxu_choice.summary_line());
  }
  std::fflush(stdout);

  // 3. Outputs and report (each operand read back once per form).
  std::map<std::pair<std::uint32_t, bool>, NpyArray> host_outputs;
  const auto host_output = [&](const chip::OperandBinding& b, bool raw_bits) -> const NpyArray& {
    const auto key = std::make_pair(b.index, raw_bits);
    auto it = host_outputs.find(key);
    if (it == host_outputs.end())
      it = host_outputs
               .emplace(key, chip::from_device(b, summary.result.output_bytes.at(b.index), raw_bits,
                                               request.options.compute_numerics))
               .first;
    return it->second;
  };
  if (!summary.result.fault) {
    for (const auto& [index, path] : outputs) {
      for (const auto& b : summary.result.bindings) {
        if (b.index != index) continue;
        try {
          write_npy(path, host_output(b, path.ends_with(".bits.npy")));
        } catch (const NpyError& e) {
          fmt::print(stderr, "tpuemu run: {}\n", e.what());
          return kExitBadInput;
        }
      }
    }
  }
  bool expectations_met = true;
  if (!summary.result.fault) {
    for (const auto& [index, path] : expects) {
      for (const auto& b : summary.result.bindings) {
        if (b.index != index) continue;
        // A *.bits.npy file holds raw bits (bf16/f8 as uint16/uint8), as --out writes them.
        const std::string verdict = compare_bits(host_output(b, path.ends_with(".bits.npy")), expected_arrays.at(path));
        fmt::print("check     operand {} vs {}: {}\n", index, path, verdict);
        expectations_met = expectations_met && verdict.starts_with("bit-exact");
      }
    }
  }
  if (vm->count("report") != 0U) {
    const std::string path = (*vm)["report"].as<std::string>();
    std::ofstream out(path);
    nlohmann::json report = report_json(summary);
    report["mxu"] = mxu_choice.report();
    out << report.dump(2) << "\n";
    if (!out) {
      fmt::print(stderr, "tpuemu run: cannot write report '{}'\n", path);
      return kExitBadInput;
    }
  }
  if (summary.result.fault) return kExitProgramFault;
  return expectations_met ? kExitOk : kExitFailure;
}

}  // namespace tpuemu::cli
