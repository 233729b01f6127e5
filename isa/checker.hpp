// Static checks of an assembled program against a chip preset: bundle slot
// capacities, unit indices (mxuN, xluN), MXU ops on an MXU wider than a vreg
// (not modelled: each is refused) and register indices. Also the
// per-kernel summary `tpuemu check` prints.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "common/chip_config.hpp"
#include "isa/assembler.hpp"
#include "isa/program.hpp"

namespace tpuemu::isa {

struct ProgramSummary {
  std::size_t bundles = 0;
  std::size_t ops = 0;
  std::array<std::size_t, kSlotClassCount> ops_per_slot{};
  // Most ops of each class seen in one bundle.
  std::array<std::size_t, kSlotClassCount> max_per_bundle{};
};

struct CheckResult {
  ProgramSummary summary;
  // Problems, each located at the offending bundle or op (line_text empty:
  // callers that still have the source can fill it for a caret display).
  std::vector<Diagnostic> violations;
};

CheckResult check_program(const Program& program, const ChipConfig& chip);

// "add.3: 26 bundles, 40 ops (SALU 10, VALU 3, LOAD 2, STORE 1, SYNC 6, DMA 3, pseudo 15)"
std::string summary_line(const std::string& name, const ProgramSummary& summary);

}  // namespace tpuemu::isa
