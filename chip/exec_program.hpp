// A Program decoded for execution on one chip preset: symbols resolved to
// addresses, immediates to 32-bit patterns, latencies looked up, semantics
// functions bound. Built once before a run; the issue loop reads only this.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/chip_config.hpp"
#include "isa/program.hpp"

namespace tpuemu::chip {

class Core;
struct ExecOp;
// Executes an op's effect (reads sources, stages results).
using ExecFn = void (*)(Core&, const ExecOp&);
// The earliest cycle the op's unit, FIFO, flag or queue lets it issue, given
// the current cycle; sets the stall cause. Null for ops that only wait for
// their source registers.
using ReadyFn = std::uint64_t (*)(Core&, const ExecOp&);

struct RegRef {
  isa::RegClass cls = isa::RegClass::kScalar;
  std::uint16_t index = 0;
};

struct ExecOp {
  const isa::Op* op = nullptr;  // operands as written, source location
  const isa::OpInfo* info = nullptr;
  isa::OpId id{};
  std::uint8_t unit = 0;
  ExecFn exec = nullptr;
  ReadyFn ready = nullptr;
  std::uint32_t latency = 0;  // cycles until the destination register is readable
  std::int16_t guard = -1;    // predicate index, -1 = unguarded
  bool guard_negated = false;
  std::optional<RegRef> dest;
  std::vector<RegRef> sources;  // every register read, guard included
  // Per operand: the 32-bit value of an immediate or a resolved symbol
  // (VMEM row, sync flag index or SMEM word), 0 for registers.
  std::array<std::uint32_t, 8> value{};
  std::uint32_t target_bundle = 0;  // branch target (bundle index)
  std::uint32_t bundle = 0;         // index of the bundle holding this op
};

struct ExecBundle {
  std::uint32_t first_op = 0;
  std::uint32_t op_count = 0;
  std::uint32_t address = 0;
};

// A kernel operand bound by an `inlined_call_operand` op of the entry bundle.
struct OperandBinding {
  std::uint32_t index = 0;
  std::string space;  // "hbm", "vmem", "<no memory space>"
  std::string dtype;  // "f32", "bf16", ...
  std::vector<std::uint64_t> shape;
  bool is_output = false;
};

struct ExecProgram {
  const isa::Program* program = nullptr;
  std::vector<ExecOp> ops;
  std::vector<ExecBundle> bundles;
  std::vector<OperandBinding> bindings;  // sorted by index
};

// Parses "f32[16,256]" into dtype and shape; nullopt if malformed.
std::optional<std::pair<std::string, std::vector<std::uint64_t>>> parse_shape(std::string_view text);

// Throws LoadError naming the op and its source line on anything that cannot
// run on `chip` (unknown allocation, branch target that is no bundle, ...).
// `allocation_base` relocates the program's allocations by a byte offset per
// memory space: a kernel called from a top-level program has its scoped
// allocations above the caller's (the dumps number both from offset 0).
ExecProgram decode_program(const isa::Program& program, const ChipConfig& chip,
                           const std::map<MemorySpace, std::uint64_t>& allocation_base = {});

// The end (byte offset) of a program's allocations in each memory space, for
// relocating the kernels it calls.
std::map<MemorySpace, std::uint64_t> allocation_ends(const isa::Program& program);

// "prog.llo:12:3" for an op (file:line:col), plus " loc(...)" when the dump has one.
std::string describe_source(const isa::Program& program, const isa::Op& op);

}  // namespace tpuemu::chip
