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
std::optional<std::string> finish_profile(const ProfileOutput& out, double clock_hz);

// finish_trace, then finish_profile: the first error, or nullopt.
std::optional<std::string> finish_observers(const TraceOutput& trace, const ProfileOutput& profile, double clock_hz);

TraceOutput trace_output(const po::variables_map& vm, double clock_hz);

// --trace*, --vcd* and --memory-profile as the run API's observers, checked
// (option syntax, files writable) in that order; throws std::invalid_argument.
api::Observers observers_from(const po::variables_map& vm, double clock_hz);

// Before a traced run, in a forked child (SystemC elaborates once per
// process): `dry_run` runs a timing-only copy of the run (it may change the
// request it captured: the child's copy) with a fresh tracer of the same
// options and returns whether that tracer overflowed. Returns the error to
// report before the real run if it did; nullopt if it did not, or if the dry
// run could not tell (a fault or a crash: the real run reports those). The
// real run keeps its own check, for runs whose timing depends on data.
std::optional<std::string> trace_dry_run(const TraceOutput& trace, const std::function<bool(chip::Tracer&)>& dry_run);

// Writes the trace; returns an error message, or nullopt. A trace that
// overflowed its event limit is an error (the run stopped at it).
std::optional<std::string> finish_trace(const TraceOutput& trace);

}  // namespace tpuemu::cli
