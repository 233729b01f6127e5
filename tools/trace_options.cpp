#include "tools/trace_options.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "api/output_files.hpp"
#include "common/parse_number.hpp"

namespace tpuemu::cli {

using api::check_writable;

void add_trace_options(po::options_description& options) {
  options.add_options()("trace", po::value<std::string>(),
                        "write a trace-viewer file (Chrome trace JSON: open in ui.perfetto.dev or chrome://tracing)")(
      "trace-window", po::value<std::string>(), "BEGIN:END cycles: keep only events in this window")(
      "trace-max-events", whole_value(1)->default_value(4'000'000),
      "stop the run with an error beyond this many trace events")(
      "trace-detail", "one event per op and bundle (default: back-to-back identical events merge)");
}

void add_waveform_options(po::options_description& options) {
  options.add_options()("vcd", po::value<std::string>(),
                        "write waveforms (VCD, opens in GTKWave): pc, unit busy, FIFO depths, sync flags, ICI links; "
                        "runs with a one-cycle quantum, so keep programs small")(
      "vcd-max-changes", whole_value(1)->default_value(20'000'000),
      "stop the run with an error beyond this many value changes");
}

std::string waveform_path(const po::variables_map& vm) {
  if (vm.count("vcd") == 0U) return {};
  const std::string path = vm["vcd"].as<std::string>();
  if (!path.ends_with(".vcd"))
    throw std::invalid_argument(fmt::format("--vcd {}: the file name must end in .vcd", path));
  check_writable("--vcd", path);
  return path;
}

void add_profile_options(po::options_description& options) {
  options.add_options()("memory-profile", po::value<std::string>(),
                        "FILE.json: VMEM, SMEM and HBM occupancy over time per buffer, and the peak (also FILE.svg)");
}

ProfileOutput profile_output(const po::variables_map& vm) {
  ProfileOutput out;
  if (vm.count("memory-profile") == 0U) return out;
  out.json_path = vm["memory-profile"].as<std::string>();
  if (!out.json_path.ends_with(".json")) {
    throw std::invalid_argument(fmt::format("--memory-profile {}: the file name must end in .json", out.json_path));
  }
  out.svg_path = out.json_path.substr(0, out.json_path.size() - 5) + ".svg";
  for (const auto& path : {out.json_path, out.svg_path}) check_writable("--memory-profile", path);
  out.profile = std::make_unique<chip::MemoryProfile>();
  return out;
}

TraceOutput trace_output(const po::variables_map& vm, double clock_hz) {
  TraceOutput out;
  if (vm.count("trace") == 0U) {
    if (vm.count("trace-window") != 0U) throw std::invalid_argument("--trace-window needs --trace FILE");
    return out;
  }
  out.path = vm["trace"].as<std::string>();
  check_writable("--trace", out.path);
  chip::Tracer::Options options;
  options.clock_hz = clock_hz;
  options.max_events = vm["trace-max-events"].as<std::uint64_t>();
  options.aggregate = vm.count("trace-detail") == 0U;
  options.counter_bucket_cycles = clock_hz * 1e-6;  // counters per microsecond
  if (vm.count("trace-window") != 0U) {
    const std::string text = vm["trace-window"].as<std::string>();
    const auto colon = text.find(':');
    const auto begin = colon == std::string::npos ? std::nullopt : parse_unsigned(text.substr(0, colon));
    const auto end = colon == std::string::npos ? std::nullopt : parse_unsigned(text.substr(colon + 1));
    if (!begin || !end) {
      throw std::invalid_argument(
          fmt::format("--trace-window {}: expected BEGIN:END in whole cycles, e.g. 0:100000 or 0:1e6", text));
    }
    options.window_begin = *begin;
    options.window_end = *end;
    if (options.window_end <= options.window_begin) {
      throw std::invalid_argument(fmt::format("--trace-window {}: the window is empty", text));
    }
  }
  out.tracer = std::make_unique<chip::Tracer>(options);
  return out;
}

api::Observers observers_from(const po::variables_map& vm, double clock_hz) {
  api::Observers o;
  const TraceOutput trace = trace_output(vm, clock_hz);
  if (trace.tracer) {
    o.trace = trace.path;
    o.trace_options = trace.tracer->options();
  }
  o.vcd = waveform_path(vm);
  o.vcd_max_changes = vm["vcd-max-changes"].as<std::uint64_t>();
  o.memory_profile = profile_output(vm).json_path;
  return o;
}

}  // namespace tpuemu::cli

namespace tpuemu::cli {}  // namespace tpuemu::cli
