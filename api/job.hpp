// A run request of the run API (api/run.hpp): what to run (a program, or a
// chain of programs over named buffers), on what (a chip preset with
// overrides, optionally a pod topology), with which inputs, options and
// observers. Every CLI command that runs programs fills one of these; so does
// the Python module.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chip/run.hpp"
#include "chip/trace.hpp"
#include "common/npy.hpp"
#include "common/npy_file.hpp"
#include "common/presets.hpp"
#include "ici/topology.hpp"
#include "isa/program.hpp"

namespace tpuemu::api {

struct Result;

// One program of a job. Operand i binds to buffer operand_buffers[i], or to
// buffer "i" when the map has no entry for it (so a one-program job's buffers
// are its operand indices).
struct Step {
  std::shared_ptr<const isa::Program> program;
  std::string name;  // shown in reports and messages: the program's path or kernel name
  std::map<std::uint32_t, std::string> operand_buffers;
};

// The host data of one input buffer: one array for every chip, one array per
// chip (per_chip[c] for chip c), or a function that gives chip c's data when
// the run needs it (so a pod reads one chip's file at a time, and a
// timing-only run reads only the by-value operands that steer the program):
// an NpyFile, which is an array (NpyFile(array)) or a file opened with
// NpyFile::open (mapped where that pays; a one-program run on one chip then
// lays it out from the mapping without copying it).
struct Input {
  std::vector<NpyArray> per_chip;
  std::function<NpyFile(std::uint32_t chip)> provider;  // used when per_chip is empty
  // Pods only, instead of arrays: chip c's bytes already in device layout
  // (chip/host_io.hpp), zero-padded here to chip::device_bytes(binding).
  std::function<std::vector<std::uint8_t>(std::uint32_t chip, const chip::OperandBinding& binding)> device_provider;
  std::string origin;  // names the data in messages (a file name)
};

// The cycle limit of a run whose length is predicted (collectives,
// workloads) when the user names none: kPredictedCyclesHeadroom x the
// predicted cycles, but never below chip::RunOptions's default; so that a
// long run (a one-shot all-reduce of 16 MiB on 128 chips needs 1.9e8 cycles)
// runs while a hung one still stops. Predictions are within 2x of every run
// measured so far.
inline constexpr double kPredictedCyclesHeadroom = 10.0;
inline std::uint64_t predicted_cycle_limit(double predicted_seconds, double clock_hz) {
  const double cycles = std::ceil(kPredictedCyclesHeadroom * predicted_seconds * clock_hz);
  const std::uint64_t fallback = chip::RunOptions{}.max_cycles;
  if (!(cycles > static_cast<double>(fallback))) return fallback;  // also a NaN prediction
  return cycles >= 9e18 ? std::uint64_t{9'000'000'000'000'000'000U} : static_cast<std::uint64_t>(cycles);
}

struct Options {
  bool no_data = false;  // timing only: same cycles, no arithmetic or bulk data
  bool strict = false;   // stalls on register hazards are faults (checks a compiler's schedule)
  std::uint64_t max_cycles = chip::RunOptions{}.max_cycles;
  std::uint64_t quantum_cycles = 1000;  // how far a core may run ahead of SystemC time
  // Under mpirun with several ranks: how the pod's chips split over them
  // (--partition; ici/partition.hpp), "" = contiguous linear ids.
  std::string partition;
};

// Files the run writes. A trace that would exceed trace_options.max_events
// is refused before the run (a timing-only dry run finds out).
struct Observers {
  std::string trace;                    // Perfetto JSON; empty = off
  chip::Tracer::Options trace_options;  // clock_hz is set from the chip
  std::string vcd;                      // waveform; empty = off
  std::uint64_t vcd_max_changes = 20'000'000;
  std::string memory_profile;  // FILE.json (and FILE.svg); empty = off
};

// Where the run happens. SystemC elaborates once per process, so a process
// can simulate once; every other run goes to a forked child process whose
// result comes back through a pipe (bit-identical: the same code runs).
enum class Isolation {
  kAuto,       // in this process if it has not simulated yet, else in a child
  kChild,      // always in a child: a crash in the emulator cannot take the caller down
  kInProcess,  // in this process; BadInput if it has already simulated
};

// A top-level program run the way the runtime starts one (chip::run_tlp):
// its parameters are the job's input buffers in `parameters` order, placed in
// HBM in the layout of the first kernel operand bound to each (transposed
// where Job::transposed says); its inlined_calls run the job's steps, found
// by program name; `output` names the buffer whose layout the output has.
// One chip only; observers: the trace only.
struct TopLevel {
  std::shared_ptr<const isa::Program> program;
  std::vector<std::string> parameters;
  std::string output = "output";
};

struct Job {
  ChipRequest chip;                              // preset and/or chip file, then overrides
  std::optional<ici::TopologyRequest> topology;  // a pod; nullopt = one chip
  std::string routing = "dimension-order";
  std::vector<Step> steps;
  // What the report calls the run (report.program); empty: the steps' names joined by "+".
  std::string name;
  // Run one step on one chip as a chain too (chip::run_chain: the report's
  // `steps` lists it; `scalars` and `transposed` apply). More than one step
  // on one chip always runs as a chain.
  bool chain = false;
  std::map<std::string, Input> inputs;  // by buffer name
  // By-value operands (`inlined_call_operand.<no memory space>`) of a
  // one-chip chain: the register value of each such buffer, laid out as
  // chip::to_device lays out a scalar (f32/s32/u32 the 32-bit pattern, bf16
  // the low 16 bits, f8 the low byte); chip::scalar_register converts a
  // one-element array exactly. A buffer named here is not taken from
  // `inputs` as a by-value operand (an input of a by-value buffer not named
  // here is converted as to_device converts it).
  std::map<std::string, std::uint32_t> scalars;
  // Buffers stored transposed (layout {0,1}) in a one-chip chain.
  std::map<std::string, bool> transposed;
  // Run the steps through this top-level program instead of one after the other.
  std::optional<TopLevel> top_level;
  Options options;
  Observers observers;
  Isolation isolation = Isolation::kAuto;
  // Runs in the process that simulates, just before a one-program run on one
  // chip starts (not for a chain): the CLI puts an RTL MXU behind the C++ one
  // here (tools/mxu_options.hpp).
  // Only for kAuto/kInProcess callers that know their process simulates.
  std::function<void(chip::RunRequest&)> configure_chip_run;
  // Runs in the process that simulated, on the finished Result, before it
  // travels back from a child: a check of the outputs against a reference
  // there (api/collective.cpp) saves sending them.
  std::function<void(Result&)> on_result;
};

}  // namespace tpuemu::api
