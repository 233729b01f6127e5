// Running one program on one emulated chip: place the operands, elaborate the
// SystemC chip, simulate, read the outputs back and collect statistics.
// SystemC elaborates once per process: call run_program once per process.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chip/chip_module.hpp"
#include "chip/core.hpp"
#include "common/chip_config.hpp"
#include "common/npy.hpp"
#include "common/npy_file.hpp"
#include "isa/program.hpp"

namespace tpuemu::chip {

// A program that over-fills a bundle, names a unit or register the chip does
// not have, cannot be encoded for it: throws LoadError (the first violation,
// and how many more) before any run.
void check_fits(const isa::Program& program, const ChipConfig& chip);

struct RunRequest {
  const isa::Program* program = nullptr;
  ChipConfig chip;
  RunOptions options;
  std::map<std::uint32_t, NpyArray> inputs;  // by operand index
  // Inputs as files (read or mapped: common/npy_file.hpp) instead of arrays,
  // by operand index; an index may be in `inputs` or here, not in both.
  std::map<std::uint32_t, NpyFile> input_files;
  std::map<std::uint32_t, std::string> input_origins;  // file names for messages
  std::uint64_t quantum_cycles = 1000;
  Tracer* tracer = nullptr;  // trace events (chip/trace.hpp); null = off
  std::string vcd;           // waveform file (chip/waveform.hpp); empty = off
  std::uint64_t vcd_max_changes = 20'000'000;
  MemoryProfile* profile = nullptr;  // memory profile (chip/memory_profile.hpp); null = off
  // Alternative MXU back ends (chip_module.hpp); empty = the C++ MXU. With
  // them, `elaborated` (if set) runs once elaboration has finished, before
  // the first cycle (Verilator traces are opened then).
  MxuBackendFactory mxu_backends;
  std::function<void()> elaborated;
};

struct UnitStats {
  std::string name;  // "mxu0", "hbm", ...
  double busy_cycles = 0;
};

struct RunResult {
  std::uint64_t cycles = 0;  // the slowest core, including its DMAs
  double seconds = 0;
  std::vector<CoreStats> cores;
  std::vector<UnitStats> units;
  std::uint64_t hbm_bytes = 0;
  std::map<std::uint32_t, std::vector<std::uint8_t>> output_bytes;  // device layout, by operand index
  std::vector<OperandBinding> bindings;
  std::optional<std::string> fault;  // set when the program faulted
  // The fault is the waveform's limit (--vcd-max-changes), not the program's:
  // an input the user narrows, not a program error.
  bool waveform_overflowed = false;
};

// Throws LoadError (program cannot run on this chip) or std::invalid_argument
// (inputs do not match the operand bindings) before simulating; a program
// fault during the run is returned in RunResult::fault.
RunResult run_program(const RunRequest& request);
// run_program, freeing each array of request.inputs (and each of
// request.input_files) once it is in its device layout (the arrays are empty
// afterwards, the files closed and unmapped): the host then holds the inputs
// once, not twice, and reuses their memory for the outputs.
RunResult run_program_freeing_inputs(RunRequest& request);

// A chain of kernels run back to back on one chip, the way a top-level
// program calls them: every kernel operand binds to a named buffer, and a
// buffer keeps one place per memory space for the whole chain, so a VMEM
// output of one kernel is the VMEM input of the next. The host plays the
// top-level program's part for inputs: it writes each input buffer into the
// space a kernel expects it in (HBM, or VMEM above every kernel's allocations).
struct ChainStep {
  const isa::Program* program = nullptr;
  std::map<std::uint32_t, std::string> operand_buffers;  // operand index -> buffer
};

struct ChainRequest {
  ChipConfig chip;
  RunOptions options;
  std::uint64_t quantum_cycles = 1000;
  std::vector<ChainStep> steps;
  std::map<std::string, NpyArray> inputs;            // host data of input buffers
  std::map<std::string, std::string> input_origins;  // for messages
  std::map<std::string, std::uint32_t> scalars;      // by-value operands: 32-bit patterns
  std::map<std::string, bool> transposed;            // stored transposed (layout {0,1})
  Tracer* tracer = nullptr;
  std::string vcd;
  std::uint64_t vcd_max_changes = 20'000'000;
  MemoryProfile* profile = nullptr;
  MxuBackendFactory mxu_backends;  // as in RunRequest
  std::function<void()> elaborated;
};

struct StepResult {
  std::string kernel;
  std::uint64_t start_cycle = 0;
  std::uint64_t end_cycle = 0;
  CoreStats stats;  // of core 0, this kernel only
};

struct ChainResult {
  RunResult run;  // totals, units, fault; output_bytes unused
  std::vector<StepResult> steps;
  // Final device bytes of every memory buffer, with the binding that laid it out.
  std::map<std::string, std::pair<OperandBinding, std::vector<std::uint8_t>>> buffers;
};

ChainResult run_chain(const ChainRequest& request);

// A top-level program (TLP) run the way the runtime starts one: its
// parameters in HBM (scalar_parameter_address k gives parameter k's address),
// an output buffer in HBM, and the SMEM words the TLP reads, found by the tags
// of its SMEM allocations: "program descriptor state" (the run flag) = 1 and
// "output ptr" = the output's address; other SMEM words (ids, seeds) are 0.
// The TLP's inlined_calls run the named kernels.
struct TlpRequest {
  ChipConfig chip;
  RunOptions options;
  std::uint64_t quantum_cycles = 1000;
  const isa::Program* tlp = nullptr;
  std::map<std::string, const isa::Program*> kernels;           // callees by name
  std::vector<std::pair<OperandBinding, NpyArray>> parameters;  // layout and data, in parameter order
  OperandBinding output;
  Tracer* tracer = nullptr;
};

struct TlpResult {
  RunResult run;
  std::vector<std::uint8_t> output_bytes;  // device layout of `output`
};

TlpResult run_tlp(const TlpRequest& request);

}  // namespace tpuemu::chip
