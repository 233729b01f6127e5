#include "api/run.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>

#include "api/child_process.hpp"
#include "api/output_files.hpp"
#include "api/program_loader.hpp"
#include "api/report.hpp"
#include "chip/fault.hpp"
#include "chip/host_io.hpp"
#include "chip/memory_profile.hpp"
#include "chip/pod.hpp"
#include "chip/simulate.hpp"
#include "chip/stop_request.hpp"
#include "chip/systemc_reports.hpp"
#include "common/chip_config.hpp"
#include "common/huge_pages.hpp"
#include "common/npy_file.hpp"
#include "dist/ranks.hpp"
#include "ici/partition.hpp"
#include "ici/routing.hpp"
#include "isa/assembler.hpp"
#include "isa/image.hpp"

namespace tpuemu::api {
namespace {

using nlohmann::json;

std::atomic<bool> g_simulated{false};

// Maps the exception being handled to the API's errors (rethrows them).
[[noreturn]] void rethrow_as_api_error() {
  try {
    throw;
  } catch (const BadInput&) {
    throw;
  } catch (const InternalError&) {
    throw;
  } catch (const isa::AsmError& e) {
    const auto& d = e.diagnostics();
    if (d.empty()) throw AssemblyError(e.what(), "", 0, 0);
    throw AssemblyError(e.what(), d.front().file, d.front().line, d.front().column);
  } catch (const ConfigError& e) {
    throw BadInput(e.what());
  } catch (const ici::TopologyError& e) {
    throw BadInput(e.what());
  } catch (const ici::PartitionError& e) {
    throw BadInput(e.what());
  } catch (const isa::ImageError& e) {
    throw BadInput(e.what());
  } catch (const NpyError& e) {
    throw BadInput(e.what());
  } catch (const chip::LoadError& e) {
    throw BadInput(e.what());
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  } catch (const std::exception& e) {
    throw InternalError(e.what());
  }
}

std::string buffer_of(const Step& step, std::uint32_t operand) {
  const auto it = step.operand_buffers.find(operand);
  return it == step.operand_buffers.end() ? std::to_string(operand) : it->second;
}

// What the report calls the run: Job::name, or the steps' names joined by "+".
std::string run_name(const Job& job) {
  if (!job.name.empty()) return job.name;
  std::string names;
  for (const Step& s : job.steps) names += (names.empty() ? "" : "+") + s.name;
  return names;
}

// Chip `chip`'s data of `input`: one of its arrays, or what its provider
// gives, kept in `holder` (the view is valid while both live).
NpyView input_array(const Input& input, std::uint32_t chip, std::vector<NpyFile>& holder) {
  if (input.per_chip.size() == 1) return input.per_chip.front();
  if (chip < input.per_chip.size()) return input.per_chip[chip];
  if (!input.per_chip.empty()) {
    throw BadInput(fmt::format("{}: {} arrays given for a pod of more chips (one array for all, or one per chip)",
                               input.origin, input.per_chip.size()));
  }
  if (!input.provider) throw BadInput(fmt::format("{}: no data (neither arrays nor a provider)", input.origin));
  holder.push_back(input.provider(chip));
  return holder.back().view();
}

std::string origin_of(const std::string& buffer, const Input& input) {
  return input.origin.empty() ? fmt::format("input '{}'", buffer) : input.origin;
}

// The observers of one run, created before it and written after it.
struct LiveObservers {
  std::unique_ptr<chip::Tracer> tracer;
  std::unique_ptr<chip::MemoryProfile> profile;

  LiveObservers(const Observers& o, double clock_hz) {
    if (!o.trace.empty()) {
      check_writable("--trace", o.trace);
      chip::Tracer::Options options = o.trace_options;
      options.clock_hz = clock_hz;
      tracer = std::make_unique<chip::Tracer>(options);
    }
    if (!o.vcd.empty()) check_writable("--vcd", o.vcd);
    if (!o.memory_profile.empty()) {
      if (!o.memory_profile.ends_with(".json")) {
        throw BadInput(fmt::format("--memory-profile {}: the file name must end in .json", o.memory_profile));
      }
      check_writable("--memory-profile", o.memory_profile);
      check_writable("--memory-profile", svg_path(o.memory_profile));
      profile = std::make_unique<chip::MemoryProfile>();
    }
  }
  static std::string svg_path(const std::string& json_path) {
    return json_path.substr(0, json_path.size() - 5) + ".svg";
  }

  // Writes the files; throws BadInput on a trace that overflowed or a write that failed.
  void finish(const Observers& o, double clock_hz) const {
    if (tracer) {
      if (tracer->overflowed()) {
        throw BadInput(
            fmt::format("--trace {}: the trace reached {} events before the run ended; narrow it with "
                        "--trace-window BEGIN:END (cycles) or raise --trace-max-events (the file was not "
                        "written)",
                        o.trace, tracer->options().max_events));
      }
    }
    // Under mpirun every rank has the result, rank 0 writes the files.
    if (dist::world().rank() != 0) return;
    if (tracer) {
      std::ofstream out(o.trace);
      tracer->write(out);
      if (!out) throw BadInput(fmt::format("--trace {}: writing failed", o.trace));
    }
    if (profile) {
      std::ofstream json_file(o.memory_profile);
      json_file << profile->to_json(clock_hz).dump(1) << "\n";
      std::ofstream svg(svg_path(o.memory_profile));
      svg << profile->to_svg(clock_hz);
      if (!json_file || !svg) throw BadInput(fmt::format("--memory-profile {}: writing failed", o.memory_profile));
    }
  }
};

chip::RunOptions run_options(const Options& o) {
  chip::RunOptions r;
  r.strict = o.strict;
  r.compute_numerics = !o.no_data;
  r.max_cycles = o.max_cycles;
  return r;
}

// The fields every request type (RunRequest, ChainRequest, PodRequest, TlpRequest) shares:
// options, quantum, and the observers (their files created), or only
// `dry_tracer` for a timing-only dry run.
template <typename Request>
std::optional<LiveObservers> prepare(Request& request, const Job& job, const ChipConfig& chip,
                                     chip::Tracer* dry_tracer) {
  request.options = run_options(job.options);
  request.quantum_cycles = std::max<std::uint64_t>(1, job.options.quantum_cycles);
  std::optional<LiveObservers> observers;
  if (dry_tracer) {
    request.options.compute_numerics = false;
    request.tracer = dry_tracer;
  } else {
    observers.emplace(job.observers, chip.clock_hz);
    request.tracer = observers->tracer.get();
    if constexpr (requires { request.vcd; }) {  // a TlpRequest takes the trace only
      request.profile = observers->profile.get();
      request.vcd = job.observers.vcd;
      request.vcd_max_changes = job.observers.vcd_max_changes;
    }
  }
  return observers;
}

void set_fault(Result& result, const std::optional<std::string>& fault) {
  if (fault) result.fault = parse_fault(*fault);
}

// One program on one chip.
Result run_chip_program(const Job& job, const ChipConfig& chip, chip::Tracer* dry_tracer) {
  const Step& step = job.steps.front();
  chip::RunRequest request;
  request.program = step.program.get();
  request.chip = chip;
  std::optional<LiveObservers> observers = prepare(request, job, chip, dry_tracer);
  // Operand index of each buffer (a one-program job's buffers are "0", "1", ... unless renamed).
  const chip::ExecProgram exec = [&] {
    chip::check_fits(*step.program, chip);
    return chip::decode_program(*step.program, chip);
  }();
  for (const auto& [name, input] : job.inputs) {
    const chip::OperandBinding* binding = nullptr;
    for (const auto& b : exec.bindings) {
      if (buffer_of(step, b.index) == name) binding = &b;
    }
    if (binding == nullptr) {
      throw BadInput(step.operand_buffers.empty()
                         ? fmt::format("input {}: the program has no operand {}", name, name)
                         : fmt::format("input '{}': no operand of {} is bound to it", name, step.name));
    }
    // A timing-only run reads only the inputs passed by value (they steer the program).
    if (!request.options.compute_numerics && binding->space != "<no memory space>") continue;
    std::vector<NpyFile> holder;
    // The run frees its array once it is in device layout: what the
    // provider gave for this run (an array, a mapped file) moves in; the
    // job's own arrays are copied.
    const NpyView array = input_array(input, 0, holder);
    if (holder.empty()) {
      request.inputs[binding->index] = copy_array(array);
    } else {
      request.input_files.emplace(binding->index, std::move(holder.back()));
    }
    request.input_origins[binding->index] = origin_of(name, input);
  }
  if (!dry_tracer && job.configure_chip_run) job.configure_chip_run(request);
  chip::RunResult run = chip::run_program_freeing_inputs(request);
  Result result;
  result.cycles = run.cycles;
  result.seconds = run.seconds;
  if (run.fault && run.waveform_overflowed) throw BadInput(fmt::format("--vcd {}: {}", job.observers.vcd, *run.fault));
  if (observers) observers->finish(job.observers, chip.clock_hz);  // none in a dry run (check_trace_fits)
  set_fault(result, run.fault);
  if (!run.fault && request.options.compute_numerics) {
    for (const auto& b : run.bindings) {
      if (!b.is_output) continue;
      OutputBuffer& out = result.outputs[buffer_of(step, b.index)];
      out.binding = b;
      out.device.push_back(std::move(run.output_bytes.at(b.index)));
    }
  }
  result.report = chip_report(run_name(job), chip, run);
  return result;
}

// A chain of programs on one chip.
Result run_chip_chain(const Job& job, const ChipConfig& chip, chip::Tracer* dry_tracer) {
  chip::ChainRequest request;
  request.chip = chip;
  request.transposed = job.transposed;
  std::optional<LiveObservers> observers = prepare(request, job, chip, dry_tracer);
  std::vector<chip::ExecProgram> execs;
  for (const Step& step : job.steps) {
    chip::check_fits(*step.program, chip);
    execs.push_back(chip::decode_program(*step.program, chip));
    chip::ChainStep s;
    s.program = step.program.get();
    for (const auto& b : execs.back().bindings) s.operand_buffers[b.index] = buffer_of(step, b.index);
    request.steps.push_back(std::move(s));
  }
  request.scalars = job.scalars;
  for (const auto& [name, input] : job.inputs) {
    // The first by-value operand bound to the buffer, and whether a memory operand is.
    const chip::OperandBinding* by_value = nullptr;
    bool in_memory = false;
    for (std::size_t s = 0; s < job.steps.size(); ++s) {
      for (const auto& b : execs[s].bindings) {
        if (buffer_of(job.steps[s], b.index) != name) continue;
        if (b.space != "<no memory space>") {
          in_memory = true;
        } else if (by_value == nullptr) {
          by_value = &b;
        }
      }
    }
    if (by_value == nullptr && !in_memory) {
      throw BadInput(fmt::format("input '{}': no operand of the chain is bound to it", name));
    }
    if (by_value != nullptr && job.scalars.count(name) != 0U) by_value = nullptr;  // the job gives its value
    if (by_value == nullptr && !in_memory) continue;
    std::vector<NpyFile> holder;
    const NpyView array = input_array(input, 0, holder);
    if (by_value != nullptr) {
      const auto bytes = chip::to_device(*by_value, array, origin_of(name, input));
      std::uint32_t v = 0;
      std::memcpy(&v, bytes.data(), std::min<std::size_t>(4, bytes.size()));
      request.scalars[name] = v;
    }
    if (in_memory) {
      // A provider's array moves (a mapped file's data is copied: a chain
      // holds arrays).
      request.inputs[name] = holder.empty() ? copy_array(array) : std::move(holder.back()).take_array();
      request.input_origins[name] = origin_of(name, input);
    }
  }
  chip::ChainResult chain = chip::run_chain(request);
  Result result;
  result.cycles = chain.run.cycles;
  result.seconds = chain.run.seconds;
  if (chain.run.fault && chain.run.waveform_overflowed) {
    throw BadInput(fmt::format("--vcd {}: {}", job.observers.vcd, *chain.run.fault));
  }
  if (observers) observers->finish(job.observers, chip.clock_hz);  // none in a dry run (check_trace_fits)
  set_fault(result, chain.run.fault);
  if (!chain.run.fault && request.options.compute_numerics) {
    std::set<std::string> written;  // buffers some step's output operand is bound to
    for (std::size_t s = 0; s < execs.size(); ++s) {
      for (const auto& b : execs[s].bindings) {
        if (b.is_output) written.insert(buffer_of(job.steps[s], b.index));
      }
    }
    for (auto& [name, buffer] : chain.buffers) {
      if (written.count(name) == 0U) continue;
      OutputBuffer& out = result.outputs[name];
      out.binding = buffer.first;
      out.device.push_back(std::move(buffer.second));
    }
  }
  result.report = chip_report(run_name(job), chip, chain.run, chain.steps);
  return result;
}

// The steps called by a top-level program on one chip (Job::top_level).
Result run_top_level(const Job& job, const ChipConfig& chip, chip::Tracer* dry_tracer) {
  const TopLevel& top = *job.top_level;
  if (!job.observers.vcd.empty() || !job.observers.memory_profile.empty()) {
    throw BadInput("a top-level program run writes no waveform or memory profile (only --trace)");
  }
  chip::TlpRequest t;
  t.chip = chip;
  t.tlp = top.program.get();
  std::optional<LiveObservers> observers = prepare(t, job, chip, dry_tracer);
  // Each buffer's layout comes from the first kernel operand bound to it.
  std::map<std::string, chip::OperandBinding> layouts;
  for (const Step& step : job.steps) {
    t.kernels[step.program->name] = step.program.get();
    for (const auto& b : chip::decode_program(*step.program, chip).bindings)
      layouts.emplace(buffer_of(step, b.index), b);
  }
  for (const std::string& buffer : top.parameters) {
    if (layouts.count(buffer) == 0U) throw BadInput(fmt::format("no kernel reads input '{}'", buffer));
    const auto it = job.inputs.find(buffer);
    if (it == job.inputs.end()) throw BadInput(fmt::format("parameter '{}' has no input", buffer));
    std::vector<NpyFile> holder;
    const NpyView array = input_array(it->second, 0, holder);
    const bool transposed = job.transposed.count(buffer) != 0U && job.transposed.at(buffer);
    t.parameters.emplace_back(transposed ? chip::transposed_binding(layouts.at(buffer)) : layouts.at(buffer),
                              transposed ? chip::transpose_2d(array) : copy_array(array));
  }
  if (layouts.count(top.output) == 0U) throw BadInput(fmt::format("no kernel writes the buffer '{}'", top.output));
  t.output = layouts.at(top.output);
  chip::TlpResult r = chip::run_tlp(t);
  Result result;
  result.cycles = r.run.cycles;
  result.seconds = r.run.seconds;
  if (observers) observers->finish(job.observers, chip.clock_hz);  // none in a dry run (check_trace_fits)
  chip::StepResult step;
  step.kernel = "top-level program " + top.program->name;
  step.end_cycle = r.run.cycles;
  step.stats = r.run.cores.front();
  result.report = chip_report(run_name(job), chip, r.run, {step});
  set_fault(result, r.run.fault);
  if (!r.run.fault && t.options.compute_numerics) result.outputs[top.output] = {t.output, {std::move(r.output_bytes)}};
  return result;
}

// One program or a chain on every core of every chip of a pod.
Result run_on_pod(const Job& job, const ChipConfig& chip, const ici::Topology& topology, chip::Tracer* dry_tracer) {
  chip::PodRequest request;
  request.chip = chip;
  request.topology = topology;
  request.routing = job.routing;
  std::optional<LiveObservers> observers = prepare(request, job, chip, dry_tracer);
  for (const Step& step : job.steps) {
    chip::PodStep s;
    s.program = step.program.get();
    for (const auto& b : chip::decode_program(*step.program, chip).bindings) {
      s.operand_buffers[b.index] = buffer_of(step, b.index);
    }
    request.steps.push_back(std::move(s));
  }
  request.input = [&job](std::uint32_t chip_id, const std::string& buffer, const chip::OperandBinding& binding) {
    const auto it = job.inputs.find(buffer);
    if (it == job.inputs.end()) return std::vector<std::uint8_t>{};
    if (it->second.device_provider) {
      std::vector<std::uint8_t> bytes = it->second.device_provider(chip_id, binding);
      bytes.resize(std::max<std::uint64_t>(bytes.size(), chip::device_bytes(binding)), 0);
      return bytes;
    }
    std::vector<NpyFile> holder;
    std::string origin = origin_of(buffer, it->second);
    return chip::to_device(binding, input_array(it->second, chip_id, holder), origin);
  };
  dist::Ranks& ranks = dist::world();
  if (ranks.size() > 1 || !job.options.partition.empty()) {
    const ici::PartitionSpec spec =
        job.options.partition.empty() ? ici::PartitionSpec{} : ici::parse_partition(job.options.partition);
    request.rank_of = ici::partition_chips(topology, spec, ranks.size());
    request.ranks = &ranks;
  }
  chip::PodResult pod = chip::run_pod(request);
  Result result;
  result.cycles = pod.cycles;
  result.seconds = pod.seconds;
  result.host.bundles = pod.bundles;
  result.host.network_events = pod.network_events;
  result.host.core_resumes = pod.core_resumes;
  result.host.core_syncs = pod.core_syncs;
  result.host.windows = pod.windows;
  // The limit's message, not the fault's: which chip or link reached it first
  // depends on how the pod was split over ranks.
  if (pod.waveform_overflowed) {
    throw BadInput(
        fmt::format("--vcd {}: {}", job.observers.vcd, chip::Waveform::overflow_message(request.vcd_max_changes)));
  }
  if (observers) observers->finish(job.observers, chip.clock_hz);  // none in a dry run (check_trace_fits)
  set_fault(result, pod.fault);
  if (!pod.fault && request.options.compute_numerics) {
    for (std::size_t c = 0; c < pod.chips.size(); ++c) {
      for (auto& [name, bytes] : pod.chips[c].outputs) {
        OutputBuffer& out = result.outputs[name];
        out.binding = pod.buffers.at(name);
        out.device.push_back(std::move(bytes));
      }
    }
  }
  result.report = pod_report(run_name(job), chip, topology, job.routing, pod);
  return result;
}

// The whole run in this process; with `dry_tracer`, a timing-only copy that
// only feeds that tracer.
Result simulate_here(const Job& job, chip::Tracer* dry_tracer) {
  // SystemC's chatter (a pod's cores each stopping the simulation) stays off
  // every API user's terminal, not only the CLI's.
  chip::route_systemc_reports();
  g_simulated = true;
  const auto started = std::chrono::steady_clock::now();
  (void)take_files_cut_while_mapped();  // an earlier run's, reported by it
  try {
    const ChipConfig chip = load_chip(job.chip);
    Result result;
    if (job.topology) {
      const ici::Topology topology = ici::make_topology(*job.topology, chip);
      result = run_on_pod(job, chip, topology, dry_tracer);
    } else if (job.top_level) {
      result = run_top_level(job, chip, dry_tracer);
    } else if (job.steps.size() == 1 && !job.chain) {
      result = run_chip_program(job, chip, dry_tracer);
    } else {
      result = run_chip_chain(job, chip, dry_tracer);
    }
    // An input file mapped and cut short by another process while it was
    // read gave zeros where its data was (common/npy_file.hpp): refused.
    if (const std::vector<std::string> cut = take_files_cut_while_mapped(); !cut.empty()) {
      throw BadInput(cut_short_message(cut.front()));
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    result.host.peak_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
    result.host.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!dry_tracer && job.on_result) job.on_result(result);
    return result;
  } catch (...) {
    rethrow_as_api_error();
  }
}

// --- The result's way back from a child process (CBOR).

json binding_json(const chip::OperandBinding& b) {
  return {{"index", b.index}, {"space", b.space}, {"dtype", b.dtype}, {"shape", b.shape}, {"is_output", b.is_output}};
}

chip::OperandBinding binding_from(const json& j) {
  chip::OperandBinding b;
  b.index = j.at("index").get<std::uint32_t>();
  b.space = j.at("space").get<std::string>();
  b.dtype = j.at("dtype").get<std::string>();
  b.shape = j.at("shape").get<std::vector<std::uint64_t>>();
  b.is_output = j.at("is_output").get<bool>();
  return b;
}

std::string encode(Result&& r) {
  json j;
  j["cycles"] = r.cycles;
  j["seconds"] = r.seconds;
  j["report"] = std::move(r.report);
  j["fault"] = r.fault ? json(r.fault->message) : json(nullptr);
  j["host"] = {{"seconds", r.host.seconds},
               {"peak_rss_bytes", r.host.peak_rss_bytes},
               {"bundles", r.host.bundles},
               {"network_events", r.host.network_events},
               {"core_resumes", r.host.core_resumes},
               {"core_syncs", r.host.core_syncs},
               {"windows", r.host.windows}};
  json outputs = json::object();
  for (auto& [name, out] : r.outputs) {
    json chips = json::array();
    for (auto& bytes : out.device) chips.push_back(json::binary(std::move(bytes)));
    outputs[name] = {{"binding", binding_json(out.binding)}, {"device", std::move(chips)}};
  }
  j["outputs"] = std::move(outputs);
  const std::vector<std::uint8_t> cbor = json::to_cbor(j);
  return "R" + std::string(cbor.begin(), cbor.end());
}

std::string encode_error(const std::exception& e) {
  json j;
  j["message"] = e.what();
  if (const auto* a = dynamic_cast<const AssemblyError*>(&e)) {
    j["kind"] = "assembly";
    j["file"] = a->file;
    j["line"] = a->line;
    j["col"] = a->col;
  } else if (dynamic_cast<const BadInput*>(&e) != nullptr) {
    j["kind"] = "bad-input";
  } else {
    j["kind"] = "internal";
  }
  const std::vector<std::uint8_t> cbor = json::to_cbor(j);
  return "E" + std::string(cbor.begin(), cbor.end());
}

Result decode(const std::string& text) {
  const json j = json::from_cbor(text.begin() + 1, text.end());
  if (text.front() == 'E') {
    const std::string kind = j.at("kind").get<std::string>();
    const std::string message = j.at("message").get<std::string>();
    if (kind == "assembly") {
      throw AssemblyError(message, j.at("file").get<std::string>(), j.at("line").get<std::uint32_t>(),
                          j.at("col").get<std::uint32_t>());
    }
    if (kind == "bad-input") throw BadInput(message);
    throw InternalError(message);
  }
  Result r;
  r.cycles = j.at("cycles").get<std::uint64_t>();
  r.seconds = j.at("seconds").get<double>();
  r.report = j.at("report");
  if (!j.at("fault").is_null()) r.fault = parse_fault(j.at("fault").get<std::string>());
  const json& host = j.at("host");
  r.host.seconds = host.at("seconds").get<double>();
  r.host.peak_rss_bytes = host.at("peak_rss_bytes").get<std::uint64_t>();
  r.host.bundles = host.at("bundles").get<std::uint64_t>();
  r.host.network_events = host.at("network_events").get<std::uint64_t>();
  r.host.core_resumes = host.at("core_resumes").get<std::uint64_t>();
  r.host.core_syncs = host.at("core_syncs").get<std::uint64_t>();
  r.host.windows = host.at("windows").get<std::uint64_t>();
  for (const auto& [name, out] : j.at("outputs").items()) {
    OutputBuffer& o = r.outputs[name];
    o.binding = binding_from(out.at("binding"));
    for (const auto& bytes : out.at("device")) o.device.push_back(bytes.get_binary());
  }
  return r;
}

// `work` in a forked child; its Result or error comes back.
Result in_child(const std::function<Result()>& work) {
  const ChildOutcome outcome = run_in_child(
      [&work] {
        if (g_simulated) chip::forget_simulation_context();  // this process has simulated
        try {
          return encode(work());
        } catch (const std::exception& e) {
          return encode_error(e);
        }
      },
      /*quiet=*/false);
  if (!outcome.output) throw InternalError(fmt::format("the run's process ended without a result: {}", outcome.death));
  return decode(*outcome.output);
}

// A trace too big for its limit is refused before the run: a timing-only
// copy of the run with the same trace options, in a child process. A stop
// signal during it ends the run there: that dry run's result (its fault
// names the cycle it reached) is the run's, and nothing is traced.
std::optional<Result> check_trace_fits(const Job& job) {
  constexpr std::string_view kInterrupted = "interrupted:";
  const ChildOutcome outcome = run_in_child(
      [&job, kInterrupted] {
        chip::Tracer::Options options = job.observers.trace_options;
        options.clock_hz = load_chip(job.chip).clock_hz;
        chip::Tracer tracer(options);
        if (g_simulated) chip::forget_simulation_context();
        try {
          Result dry = simulate_here(job, &tracer);
          if (chip::stop_requested() != 0 && dry.fault) {
            dry.fault->message += fmt::format(
                " (in --trace {}'s timing-only dry run, which counts the trace's events before the traced run: "
                "nothing was traced)",
                job.observers.trace);
            return std::string(kInterrupted) + encode(std::move(dry));
          }
        } catch (const std::exception& e) {
          // The real run meets the same error and reports it (under mpirun a
          // child without a result would end every rank).
          return "error:" + std::string(e.what());
        }
        return tracer.overflowed() ? "overflow:" + tracer.overflow_message() : std::string("fits");
      },
      /*quiet=*/true);  // the real run prints what there is to say
  if (outcome.output && outcome.output->starts_with("overflow:")) {
    throw BadInput(
        fmt::format("--trace {}: a timing-only dry run found that {}", job.observers.trace, outcome.output->substr(9)));
  }
  if (outcome.output && outcome.output->starts_with(kInterrupted))
    return decode(outcome.output->substr(kInterrupted.size()));
  return std::nullopt;
}

void check_job(const Job& job) {
  if (job.steps.empty()) throw BadInput("nothing to run: the job has no program");
  for (const Step& s : job.steps) {
    if (!s.program) throw BadInput(fmt::format("step '{}' has no program", s.name));
  }
  if (job.top_level && (job.topology || !job.top_level->program)) {
    throw BadInput("a top-level program runs on one chip (no topology) and needs its program");
  }
  const std::uint32_t ranks = dist::world().size();
  if (!job.topology && (ranks > 1 || !job.options.partition.empty())) {
    throw BadInput(ranks > 1
                       ? fmt::format("a one-chip run cannot be split over {} MPI ranks: give a topology (a "
                                     "pod) or run one process",
                                     ranks)
                       : std::string("--partition splits a pod (a topology) over MPI ranks: this run has one chip"));
  }
  if (job.topology) {
    try {
      (void)ici::routing_policy(job.routing);
    } catch (const ici::RoutingError& e) {
      throw BadInput(e.what());
    }
  }
  const bool one_chip_chain = !job.topology && (job.steps.size() > 1 || job.chain || job.top_level);
  if (!one_chip_chain && (!job.scalars.empty() || !job.transposed.empty())) {
    throw BadInput(
        "by-value scalars and transposed buffers are for a chain on one chip (more than one step, or Job::chain, "
        "without a topology)");
  }
}

}  // namespace

FaultSite parse_fault(const std::string& message) {
  FaultSite site;
  site.message = message;
  static const std::regex located(R"(^chip (\d+) core (\d+) bundle 0x([0-9a-fA-F]+) \(([^():]+):(\d+)(?::(\d+))?)");
  std::smatch m;
  if (std::regex_search(message, m, located)) {
    site.chip = static_cast<std::uint32_t>(std::stoul(m[1].str()));
    site.core = static_cast<std::uint32_t>(std::stoul(m[2].str()));
    site.bundle = std::stoull(m[3].str(), nullptr, 16);
    site.file = m[4].str();
    site.line = static_cast<std::uint32_t>(std::stoul(m[5].str()));
    if (m[6].matched) site.col = static_cast<std::uint32_t>(std::stoul(m[6].str()));
  }
  return site;
}

namespace {

// Output buffer `name` of `outputs`, with chip `chip` in it; throws BadInput
// naming the buffers there are, or the chips.
const OutputBuffer& output_of(const std::map<std::string, OutputBuffer>& outputs, const std::string& name,
                              std::optional<std::uint32_t> chip) {
  const auto it = outputs.find(name);
  if (it == outputs.end()) {
    std::string names;
    for (const auto& [n, o] : outputs) names += (names.empty() ? "" : ", ") + n;
    throw BadInput(
        fmt::format("'{}' is not an output buffer of the run (outputs: {})", name, names.empty() ? "none" : names));
  }
  if (chip && *chip >= it->second.device.size()) {
    throw BadInput(
        fmt::format("output '{}': chip {} is not in the run ({} chips)", name, *chip, it->second.device.size()));
  }
  return it->second;
}

}  // namespace

NpyArray Result::output(const std::string& name, std::uint32_t chip, bool raw_bits) const {
  const OutputBuffer& o = output_of(outputs, name, chip);
  return chip::from_device(o.binding, o.device[chip], raw_bits);
}

void Result::output_pieces(const std::string& name, std::uint32_t chip, bool raw_bits, std::uint64_t piece_bytes,
                           const std::function<void(std::span<const std::uint8_t>)>& take) const {
  const OutputBuffer& o = output_of(outputs, name, chip);
  const std::uint64_t rows = chip::view_rows(o.binding);
  const std::uint64_t step = chip::host_rows_per_piece(o.binding, raw_bits, piece_bytes);
  std::vector<std::uint8_t> piece;
  for (std::uint64_t r = 0; r < rows; r += step) {
    const std::uint64_t end = std::min(rows, r + step);
    piece.resize(chip::host_bytes_of_rows(o.binding, raw_bits, r, end));
    chip::from_device_rows(o.binding, o.device[chip], raw_bits, r, end, piece);
    take(piece);
  }
}

NpyDtype Result::output_dtype(const std::string& name, bool raw_bits) const {
  return chip::host_dtype(output_of(outputs, name, std::nullopt).binding, raw_bits);
}

const std::vector<std::uint64_t>& Result::output_shape(const std::string& name) const {
  return output_of(outputs, name, std::nullopt).binding.shape;
}

void Result::throw_if_fault() const {
  if (fault) throw ProgramFault(*fault);
}

bool process_has_simulated() {
  return g_simulated;
}

Result run(const Job& job) {
  check_job(job);
  if (!job.observers.trace.empty()) {
    if (std::optional<Result> interrupted = check_trace_fits(job)) return std::move(*interrupted);
  }
  const bool here = job.isolation == Isolation::kInProcess || (job.isolation == Isolation::kAuto && !g_simulated);
  if (!here) return in_child([&job] { return simulate_here(job, nullptr); });
  if (g_simulated) {
    throw BadInput(
        "this process has simulated already (SystemC elaborates once per process): use Isolation::kAuto or "
        "kChild");
  }
  return simulate_here(job, nullptr);
}

std::shared_ptr<const isa::Program> load(const std::string& path) {
  try {
    return std::make_shared<const isa::Program>(load_program(path));
  } catch (...) {
    rethrow_as_api_error();
  }
}

std::shared_ptr<const isa::Program> assemble(std::string_view text, const std::string& file_name) {
  try {
    isa::Program program = isa::assemble(text, file_name);
    refuse_empty_program(program, file_name);
    return std::make_shared<const isa::Program>(std::move(program));
  } catch (...) {
    rethrow_as_api_error();
  }
}

}  // namespace tpuemu::api
