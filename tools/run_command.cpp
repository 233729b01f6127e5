#include "tools/run_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <tuple>

#include "api/output_files.hpp"
#include "api/report.hpp"
#include "api/run.hpp"
#include "chip/exec_program.hpp"
#include "chip/host_io.hpp"
#include "common/host_pool.hpp"
#include "common/npy.hpp"
#include "common/npy_file.hpp"
#include "common/parse_number.hpp"
#include "dist/ranks.hpp"
#include "tools/cli.hpp"
#include "tools/graph.hpp"
#include "tools/mxu_options.hpp"
#include "tools/options.hpp"
#include "tools/trace_options.hpp"

namespace tpuemu::cli {
namespace {

using api::check_writable;

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
      throw std::invalid_argument(fmt::format(
          "--{} needs the data that a timing-only run (--no-data) does not compute: drop one of them", key));
    }
    std::map<std::uint32_t, bool> seen;
    for (const auto& text : vm[key].as<std::vector<std::string>>()) {
      const auto b = parse_binding(text);
      if (!b) continue;  // reported where the binding is read
      if (seen[b->first])
        throw std::invalid_argument(fmt::format("--{} {}: operand {} is given twice", key, text, b->first));
      seen[b->first] = true;
      if (std::string_view(key) == "out") {
        for (std::uint32_t c = 0; c < chips; ++c) check_writable("--out", per_chip_path(b->second, c));
      }
    }
  }
  if (vm.count("report") != 0U) check_writable("--report", vm["report"].as<std::string>());
}

// The .npy files of --in, opened (mapped or read: common/npy_file.hpp) on
// the host threads (common/host_pool.hpp) while the options are checked in
// order: take() returns a file, or throws its error, at the point where the
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

  NpyFile take(const std::string& path) {
    const auto it = reads_.find(path);
    if (it == reads_.end() || it->second->taken) return NpyFile::open(path);
    Read& read = *it->second;
    wait_host_task(read, std::chrono::microseconds::max());
    read.taken = true;
    if (read.error) std::rethrow_exception(read.error);
    return std::move(*read.file);
  }

 private:
  struct Read : HostTask {
    std::string path;
    std::optional<NpyFile> file;
    std::exception_ptr error;
    bool taken = false;
    static void go(HostTask& task) {
      auto& read = static_cast<Read&>(task);
      try {
        read.file = NpyFile::open(read.path);
      } catch (...) {
        read.error = std::current_exception();
      }
    }
  };
  std::map<std::string, std::unique_ptr<Read>> reads_;
};

// The file names of --in options that parse, in order. (An --expect file's
// header is checked before the run, its data compared piece by piece after
// it: fresh memory for a copy of it costs more than reading it twice.)
std::vector<std::string> npy_files(const po::variables_map& vm) {
  std::vector<std::string> paths;
  if (vm.count("in") == 0U) return paths;
  for (const auto& text : vm["in"].as<std::vector<std::string>>()) {
    if (const auto b = parse_binding(text)) paths.push_back(b->second);
  }
  return paths;
}

// Whether an --out file of any chip is `path` (the same name, or the same
// existing file by another name).
bool written_by_outputs(const std::string& path, const std::vector<std::pair<std::uint32_t, std::string>>& outputs,
                        std::uint32_t chips) {
  for (const auto& [index, pattern] : outputs) {
    for (std::uint32_t c = 0; c < chips; ++c) {
      const std::string out = per_chip_path(pattern, c);
      std::error_code error;
      if (out == path || std::filesystem::equivalent(out, path, error)) return true;
      if (pattern.find("{chip}") == std::string::npos) break;
    }
  }
  return false;
}

// The bindings of --KEY options (IDX=FILE), in order; throws on a malformed one.
std::vector<std::pair<std::uint32_t, std::string>> bindings_of(const po::variables_map& vm, const char* key) {
  std::vector<std::pair<std::uint32_t, std::string>> list;
  if (vm.count(key) == 0U) return list;
  for (const auto& text : vm[key].as<std::vector<std::string>>()) {
    const auto b = parse_binding(text);
    if (!b) throw std::invalid_argument(fmt::format("--{} {}: expected IDX=FILE.npy", key, text));
    list.push_back(*b);
  }
  return list;
}

// Refuses, before the run, an --out or --expect of an operand the program
// does not output, and an expected file whose dtype or shape is not what
// the output will be (on a pod each of `checked_chips` chips' file;
// `files` and `arrays`: the expected files by path, as read before the run).
void check_operands_are_outputs(const isa::Program& program, const ChipConfig& chip,
                                const std::vector<std::pair<std::uint32_t, std::string>>& outputs,
                                const std::vector<std::pair<std::uint32_t, std::string>>& expects,
                                std::uint32_t checked_chips, const std::map<std::string, NpyFileHeader>& files,
                                const std::map<std::string, NpyArray>& arrays) {
  const std::vector<chip::OperandBinding> bindings = chip::decode_program(program, chip).bindings;
  const auto output = [&](const char* option, std::uint32_t index) -> const chip::OperandBinding& {
    for (const auto& b : bindings) {
      if (b.index == index && b.is_output) return b;
    }
    throw std::invalid_argument(fmt::format("{} {}: operand {} is not an output of the program", option, index, index));
  };
  for (const auto& binding : outputs) (void)output("--out", binding.first);
  for (const auto& [index, pattern] : expects) {
    const chip::OperandBinding& b = output("--expect", index);
    for (std::uint32_t c = 0; c < checked_chips; ++c) {
      const std::string path = checked_chips > 1 ? per_chip_path(pattern, c) : pattern;
      const NpyDtype want = chip::host_dtype(b, path.ends_with(".bits.npy"));
      const auto file = files.find(path);
      const NpyDtype dtype = file != files.end() ? file->second.dtype : arrays.at(path).dtype;
      const std::vector<std::uint64_t>& shape = file != files.end() ? file->second.shape : arrays.at(path).shape;
      if (shape != b.shape || dtype != want) {
        throw std::invalid_argument(
            fmt::format("--expect {}={}: {} holds {} [{}], but operand {} ({}[{}]) comes out as {} [{}]{}", index,
                        pattern, path, to_string(dtype), fmt::join(shape, ","), index, b.dtype, fmt::join(b.shape, ","),
                        to_string(want), fmt::join(b.shape, ","),
                        dtype != want && (b.dtype == "bf16" || b.dtype == "f8e4m3fn")
                            ? "; its raw bits compare with a file named *.bits.npy"
                            : ""));
      }
    }
  }
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  add_max_cycles_option(options);
  add_topology_options(options);
  add_partition_option(options);
  add_trace_options(options);
  add_waveform_options(options);
  add_profile_options(options);
  add_mxu_options(options);
  add_graph_option(options,
                   "write the program's dependency graph: F.dot (Graphviz text) or F.svg (rendered by Graphviz's dot)");
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
  const bool on_pod = vm->count("topology") != 0U;
  if (on_pod && ((*vm)["mxu"].as<std::string>() != "cpp" || vm->count("rtl-vcd") != 0U)) {
    fmt::print(stderr, "tpuemu run: --mxu rtl runs on one chip; pods (--topology) use the C++ MXU\n");
    return kExitBadInput;
  }

  // 1. Everything that can be wrong with the input is checked before the run.
  api::Job job;
  std::uint32_t chips = 1;
  std::vector<std::pair<std::uint32_t, std::string>> outputs;
  std::vector<std::pair<std::uint32_t, std::string>> expects;
  std::map<std::string, NpyFileHeader> expected_files;  // by path, checked before the run
  std::map<std::string, NpyArray> expected_arrays;      // by path: the files an --out rewrites, read before the run
  MxuModels mxu_choice;
  const bool timing_only = vm->count("no-data") != 0U;
  // The --in files are read on the host threads from here on, beside the
  // assembly and the preset's loading below.
  auto files = std::make_unique<NpyPrefetch>(timing_only || on_pod ? std::vector<std::string>{} : npy_files(*vm));
  try {
    job.chip = chip_request(*vm);
    const ChipConfig chip = load_chip(job.chip);
    if (!on_pod) mxu_choice = mxu_models(*vm, chip);
    job.observers = observers_from(*vm, chip.clock_hz);
    if (on_pod) {
      job.topology = topology_request_from(*vm, (*vm)["topology"].as<std::string>());
      chips = ici::make_topology(*job.topology, chip).chip_count();
      job.routing = (*vm)["routing"].as<std::string>();
    }
    job.options.partition = partition_option(*vm);
    check_outputs(*vm, chips);
    if (vm->count("graph") != 0U) check_graph_path((*vm)["graph"].as<std::string>());
    job.steps.push_back({api::load(program_path), program_path, {}});
    job.options.strict = vm->count("strict") != 0U;
    job.options.no_data = timing_only;
    job.options.max_cycles = max_cycles(*vm);
    job.options.quantum_cycles = std::max<std::uint64_t>(1, (*vm)["quantum"].as<std::uint64_t>());
    // A timing-only run reads only the inputs passed by value (the run API
    // asks for no others); the prefetch above skips them all.
    for (const auto& binding : bindings_of(*vm, "in")) {
      const std::uint32_t index = binding.first;
      const std::string path = binding.second;  // a variable, not a structured binding: clang 14 cannot capture those
      api::Input& input = job.inputs[std::to_string(index)];
      if (!input.origin.empty()) {
        throw std::invalid_argument(fmt::format("--in {}={}: operand {} is given twice", index, path, index));
      }
      input.origin = path;
      input.provider = [path, &files, on_pod](std::uint32_t chip_id) {
        return on_pod ? NpyFile::open(per_chip_path(path, chip_id)) : files->take(path);
      };
      if (on_pod) input.origin = per_chip_path(path, 0);
    }
    outputs = bindings_of(*vm, "out");
    if (on_pod) {
      for (const auto& [index, pattern] : outputs) {
        if (chips > 1 && pattern.find("{chip}") == std::string::npos) {
          throw std::invalid_argument(
              fmt::format("--out {}={}: a pod has {} chips; put {{chip}} in the file name", index, pattern, chips));
        }
      }
    }
    expects = bindings_of(*vm, "expect");
    for (const auto& [index, pattern] : expects) {
      // On a pod every chip's output is checked: against its own file where
      // the name has {chip}, else all against the one file.
      for (std::uint32_t c = 0; c < (on_pod ? chips : 1U); ++c) {
        const std::string path = on_pod ? per_chip_path(pattern, c) : pattern;
        // A file the run rewrites (an --out of any chip, by name or inode) is
        // read whole now: compared after the run, it would be the output.
        if (expected_arrays.count(path) != 0U || expected_files.count(path) != 0U) continue;
        if (written_by_outputs(path, outputs, chips)) {
          expected_arrays[path] = read_npy(path);
        } else {
          expected_files[path] = read_npy_header(path);
        }
      }
    }
    check_operands_are_outputs(*job.steps.front().program, chip, outputs, expects, on_pod ? chips : 1U, expected_files,
                               expected_arrays);
  } catch (const api::AssemblyError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {  // presets, topology, image, npy, options
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  }
  const double clock_hz = load_chip(job.chip).clock_hz;
  if (vm->count("graph") != 0U) {
    const std::string error = write_program_graph((*vm)["graph"].as<std::string>(), job.steps, load_chip(job.chip));
    if (!error.empty()) {
      fmt::print(stderr, "tpuemu run: {}\n", error);
      return kExitBadInput;
    }
  }
  if (mxu_choice.rtl) {
    job.configure_chip_run = [&mxu_choice, clock_hz](chip::RunRequest& request) {
      mxu_choice.configure(request, clock_hz);
    };
  }

  // 2. Run.
  api::Result result;
  try {
    result = api::run(job);
  } catch (const api::AssemblyError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitBadInput;
  } catch (const api::BadInput& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  }
  if (result.fault) {
    fmt::print(stderr, "tpuemu run: program fault: {}\n", result.fault->message);
  } else {
    api::print_report(result.report);
    if (mxu_choice.rtl) fmt::print("{}\n", mxu_choice.summary_line());
  }
  std::fflush(stdout);

  // 3. Outputs and checks. Each form of an output (operand, chip, values or
  // raw bits) is converted once, a piece at a time, into every --out file and
  // --expect comparison that takes it: no host array of the output's size.
  using Form = std::tuple<std::uint32_t, std::uint32_t, bool>;   // operand, chip, raw bits
  std::vector<Form> forms;                                       // in the order first needed
  std::map<Form, std::vector<std::string>> written_files;        // --out paths by form
  std::map<std::pair<Form, std::string>, std::string> verdicts;  // by form and expected file
  const auto need = [&forms](const Form& form) {
    if (std::find(forms.begin(), forms.end(), form) == forms.end()) forms.push_back(form);
  };
  if (!result.fault && dist::world().rank() == 0) {  // under mpirun, rank 0 writes
    // A path named by several --out options holds what the last one names.
    std::map<std::string, Form> last_write;
    std::vector<std::string> paths;
    for (const auto& [index, pattern] : outputs) {
      for (std::uint32_t c = 0; c < chips; ++c) {
        const std::string path = per_chip_path(pattern, c);
        if (last_write.count(path) == 0U) paths.push_back(path);
        last_write[path] = Form{index, c, path.ends_with(".bits.npy")};
      }
    }
    for (const std::string& path : paths) {
      written_files[last_write.at(path)].push_back(path);
      need(last_write.at(path));
    }
  }
  if (!result.fault) {
    for (const auto& [index, pattern] : expects) {
      for (std::uint32_t c = 0; c < (on_pod ? chips : 1U); ++c) {
        const std::string path = on_pod ? per_chip_path(pattern, c) : pattern;
        // A *.bits.npy file holds raw bits (bf16/f8 as uint16/uint8), as --out writes them.
        const Form form{index, c, path.ends_with(".bits.npy")};
        verdicts[{form, path}];
        need(form);
      }
    }
  }
  for (const Form& form : forms) {
    const auto& [index, chip_id, raw_bits] = form;
    const std::string name = std::to_string(index);
    try {
      const NpyDtype dtype = result.output_dtype(name, raw_bits);
      const std::vector<std::uint64_t>& shape = result.output_shape(name);
      std::vector<std::unique_ptr<NpyWriter>> writers;
      for (const std::string& path : written_files[form])
        writers.push_back(std::make_unique<NpyWriter>(path, dtype, shape));
      // The expected files the run does not rewrite are mapped now (their
      // page-cache pages, no copy; a small file is read); the comparison
      // checks their shapes and dtypes again.
      std::vector<NpyFile> mapped;
      mapped.reserve(expects.size());
      std::vector<std::pair<std::string, api::BitComparison>> comparisons;
      for (auto it = verdicts.lower_bound({form, std::string()}); it != verdicts.end() && it->first.first == form;
           ++it) {
        const std::string& path = it->first.second;
        const auto whole = expected_arrays.find(path);
        if (whole != expected_arrays.end()) {
          comparisons.emplace_back(path, api::BitComparison(dtype, shape, whole->second));
        } else {
          mapped.push_back(NpyFile::open(path));
          comparisons.emplace_back(path, api::BitComparison(dtype, shape, mapped.back().view()));
        }
      }
      result.output_pieces(name, chip_id, raw_bits, api::kOutputPieceBytes, [&](std::span<const std::uint8_t> piece) {
        for (const auto& writer : writers) writer->append(piece);
        for (auto& comparison : comparisons) comparison.second.add(piece);
      });
      for (const NpyFile& file : mapped) file.check_intact();
      for (const auto& writer : writers) writer->finish();
      for (const auto& [path, comparison] : comparisons) verdicts[{form, path}] = comparison.verdict();
    } catch (const NpyError& e) {
      fmt::print(stderr, "tpuemu run: {}\n", e.what());
      return kExitBadInput;
    }
  }
  bool expectations_met = true;
  if (!result.fault) {
    // On a pod: one line when every chip matches, else one per chip that
    // differs (the first kShownChips of them, then how many more).
    constexpr std::size_t kShownChips = 8;
    for (const auto& [index, pattern] : expects) {
      const std::uint32_t checked = on_pod ? chips : 1U;
      std::size_t differing = 0;
      for (std::uint32_t c = 0; c < checked; ++c) {
        const std::string path = on_pod ? per_chip_path(pattern, c) : pattern;
        const std::string& verdict = verdicts.at({Form{index, c, path.ends_with(".bits.npy")}, path});
        if (api::is_bit_exact(verdict) && checked > 1) continue;
        if (!api::is_bit_exact(verdict)) ++differing;
        if (checked == 1) {
          fmt::print("check     operand {} vs {}: {}\n", index, path, verdict);
        } else if (differing <= kShownChips) {
          fmt::print("check     operand {} of chip {} vs {}: {}\n", index, c, path, verdict);
        }
      }
      if (checked > 1 && differing == 0) {
        fmt::print("check     operand {} vs {}: bit-exact on all {} chips\n", index, pattern, checked);
      } else if (differing > kShownChips) {
        fmt::print("check     operand {}: {} more of the {} chips differ\n", index, differing - kShownChips, checked);
      }
      expectations_met = expectations_met && differing == 0;
    }
  }
  if (vm->count("report") != 0U) {
    nlohmann::json report = result.report;
    if (!on_pod) report["mxu"] = mxu_choice.report();
    if (auto error = api::write_text_file("--report", (*vm)["report"].as<std::string>(), report.dump(2) + "\n")) {
      fmt::print(stderr, "tpuemu run: {}\n", *error);
      return kExitBadInput;
    }
  }
  if (result.fault) return kExitProgramFault;
  return expectations_met ? kExitOk : kExitFailure;
}

}  // namespace tpuemu::cli
