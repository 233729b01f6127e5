// --trace, --trace-window, --trace-max-events, --trace-detail: the trace
// viewer output of run, run-case and demo (chip/trace.hpp).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/job.hpp"
#include "chip/memory_profile.hpp"
#include "chip/trace.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {

void add_trace_options(po::options_description& options);
// --vcd FILE, --vcd-max-changes N.
void add_waveform_options(po::options_description& options);
// The --vcd path ("" without it), checked writable before any run
// (std::invalid_argument otherwise).
std::string waveform_path(const po::variables_map& vm);

struct TraceOutput {
  std::unique_ptr<chip::Tracer> tracer;  // null without --trace
  std::string path;
};

// Checks the options and that the output file can be written, before any run.
// Throws std::invalid_argument with the reason.
// --memory-profile FILE.json: also writes FILE.svg.
void add_profile_options(po::options_description& options);
struct ProfileOutput {
  std::unique_ptr<chip::MemoryProfile> profile;  // null without --memory-profile
  std::string json_path;
  std::string svg_path;
};
// Checks that both files can be written, before any run (std::invalid_argument otherwise).
ProfileOutput profile_output(const po::variables_map& vm);

TraceOutput trace_output(const po::variables_map& vm, double clock_hz);

// --trace*, --vcd* and --memory-profile as the run API's observers, checked
// (option syntax, files writable) in that order; throws std::invalid_argument.
// The run API creates the tracer and profile and writes the files.
api::Observers observers_from(const po::variables_map& vm, double clock_hz);

}  // namespace tpuemu::cli
