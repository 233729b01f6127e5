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

#include "chip/core.hpp"
#include "common/chip_config.hpp"
#include "common/npy.hpp"
#include "isa/program.hpp"

namespace tpuemu::chip {

struct RunRequest {
  const isa::Program* program = nullptr;
  ChipConfig chip;
  RunOptions options;
  std::map<std::uint32_t, NpyArray> inputs;  // by operand index
  std::map<std::uint32_t, std::string> input_origins;  // file names for messages
  std::uint64_t quantum_cycles = 1000;
};

struct UnitStats {
  std::string name;           // "mxu0", "hbm", ...
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
};

// Throws LoadError (program cannot run on this chip) or std::invalid_argument
// (inputs do not match the operand bindings) before simulating; a program
// fault during the run is returned in RunResult::fault.
RunResult run_program(const RunRequest& request);

}  // namespace tpuemu::chip
