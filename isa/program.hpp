// The assembled form of an LLO program: bundles of ops with typed operands,
// allocations and operand bindings, each op with its source location.
// Independent of timing and SystemC. Equality compares what a program means
// (bundles, ops, operands, allocations), not comments or source positions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/types.hpp"
#include "isa/op_table.hpp"

namespace tpuemu::isa {

enum class RegClass : std::uint8_t { kScalar, kVector, kMask, kPredicate };
std::string_view reg_prefix(RegClass c);  // "s", "v", "vm", "p"

// A register as written: `%v122_v0` (SSA value 122 in vreg 0) or bare `%v0`.
struct Reg {
  RegClass cls = RegClass::kScalar;
  std::uint16_t index = 0;
  std::int32_t ssa = -1;  // -1 when written bare
  bool operator==(const Reg&) const = default;
};

// `[#allocation3 + $0x1]`, `[#allocation8_spill]`: a compiler allocation
// (VMEM rows, an SMEM word or a sync flag), optionally offset.
struct SymbolRef {
  std::uint32_t allocation = 0;
  bool spill = false;
  std::int64_t offset = 0;
  bool operator==(const SymbolRef&) const = default;
};

// `[vmem:[%s185_s8 + $0x8] ss:$16 sm:$0xff]` or `[smem:[#allocation10]]`.
struct MemRef {
  enum class Space : std::uint8_t { kVmem, kSmem };
  Space space = Space::kVmem;
  std::optional<Reg> base_reg;  // exactly one of base_reg / base_symbol
  std::optional<SymbolRef> base_symbol;
  std::int64_t offset = 0;                      // rows (VMEM) added to the base
  std::optional<std::uint32_t> sublane_stride;  // ss:$N
  std::optional<std::uint32_t> sublane_mask;    // sm:$0xNN
  std::optional<Reg> sublane_mask_reg;          // sm:%sN (mask computed at run time)
  bool operator==(const MemRef&) const = default;
};

// `[shape: f32[16,256], index: 0, kind: input, shape index: {}]`
struct OperandDecl {
  std::string shape;  // "f32[16,256]"
  std::uint32_t index = 0;
  std::string kind;         // "input" / "output"
  std::string shape_index;  // "{}"
  bool operator==(const OperandDecl&) const = default;
};

// `target bundleno = 160 (0xa0), region = 20`, or a label in hand-written code
// (resolved to bundleno by the assembler; region -1).
struct BranchTarget {
  std::uint32_t bundleno = 0;
  std::int32_t region = -1;
  bool operator==(const BranchTarget&) const = default;
};

struct Operand {
  enum class Kind : std::uint8_t {
    kReg,     // %v122_v0
    kToken,   // %123: the untyped result of an earlier op (a unit's pending result)
    kInt,     // decimal integer; 32-bit values print in unsigned form
    kFloat,   // decimal float or nan, held as binary32
    kSymbol,  // [#allocationN (+ $0xK)]
    kMem,     // [vmem:[...] ss sm] / [smem:[...]]
    kAttr,    // [thread:$0], [resolvable:$true]
    kChunk,   // [2/16] of a transpose
    kFlag,    // (narrow), (short)
    kTarget,  // target bundleno = N (0xN), region = R
    kDecl,    // [shape: ..., index: ..., kind: ..., shape index: ...]
  };
  Kind kind = Kind::kInt;
  std::string name;  // `/*name=*/` tag before the value, empty if none
  Reg reg;
  std::uint32_t token = 0;
  std::int64_t integer = 0;  // kInt; also the chunk index for kChunk
  std::uint32_t float_bits = 0;
  SymbolRef symbol;
  MemRef mem;
  std::string text;  // kAttr "thread:$0", kFlag "narrow"
  std::uint32_t chunk_count = 0;
  BranchTarget target;
  OperandDecl decl;

  bool operator==(const Operand& o) const;
};

struct SourceLoc {
  std::uint32_t file = 0;  // index into Program::files
  std::uint32_t line = 0;  // 1-based; 0 = unknown
  std::uint32_t column = 0;
};

struct Op {
  OpId opcode{};
  std::uint8_t unit = 0;  // N of .mxuN / .xluN; 0 when the mnemonic has none
  enum class DestKind : std::uint8_t { kNone, kReg, kToken };
  DestKind dest_kind = DestKind::kNone;
  Reg dest_reg;
  std::uint32_t dest_token = 0;
  std::optional<Reg> guard;  // predicate guard
  bool guard_negated = false;
  // `smov (%p31_p0, %s30_s19), 0`: the guard carries the register the result
  // keeps when the predicate is false.
  std::optional<Reg> guard_fallback;
  std::vector<Operand> operands;
  // Not part of equality:
  std::string comment;  // joined /* */ comments (descriptors, annotations)
  std::string loc;      // the dump's loc("file":L:C to :C), if any
  SourceLoc source;

  bool operator==(const Op& o) const;
};

struct Bundle {
  std::optional<std::uint32_t> address;  // as printed; assigned by the assembler if absent
  std::string tag;                       // LB, PF, ... or empty
  bool in_loop = false;                  // `>` marker
  std::vector<Op> ops;
  std::string comment;  // trailing region bookkeeping
  SourceLoc source;

  bool operator==(const Bundle& o) const;
};

// `#allocation3 [shape = 's32[2]{0}', space=sflag, size = 0x8, offset = 0x10, tag = '...']`
struct Allocation {
  std::uint32_t id = 0;
  bool spill = false;
  std::string shape;
  MemorySpace space = MemorySpace::kVmem;
  std::uint64_t size = 0;
  std::optional<std::uint64_t> offset;  // bytes; placed by the assembler if absent
  std::string tag;
  // Where the text declared it, for diagnostics. Images do not keep it (line
  // 0), and equality ignores it: the table's meaning is the same.
  SourceLoc source;
  bool operator==(const Allocation& other) const {
    return id == other.id && spill == other.spill && shape == other.shape && space == other.space &&
           size == other.size && offset == other.offset && tag == other.tag;
  }
};

struct Program {
  std::string name;                // kernel name (from the entry comment or file name)
  std::vector<std::string> files;  // source files referenced by SourceLoc::file
  std::vector<Bundle> bundles;
  std::vector<Allocation> allocations;

  bool operator==(const Program& o) const { return bundles == o.bundles && allocations == o.allocations; }
};

}  // namespace tpuemu::isa
