// The one instruction table (rows in ops.def): mnemonic, operand syntax, slot
// class, latency class, where its semantics come from. The assembler,
// disassembler, encoder, decoder, slot checker, generated ISA reference and
// the timing lookup all derive from it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/machine_classes.hpp"
#include "common/types.hpp"

namespace tpuemu::isa {

enum class OpId : std::uint16_t {
#define TPUEMU_OP(name, mnemonic, syntax, slot, latency, origin, summary) k##name,
#define TPUEMU_GROUP(title)
#include "isa/ops.def"
#undef TPUEMU_GROUP
#undef TPUEMU_OP
};

enum class Origin : std::uint8_t { kObserved, kInferred, kAssumed };
std::string_view to_string(Origin o);

// Which family of units an op addresses by index (the '#' in its mnemonic).
enum class UnitKind : std::uint8_t { kNone, kMxu, kXlu };

// One alternative kind of operand in an op's syntax.
enum class OperandClass : std::uint8_t {
  kVreg,
  kMask,
  kSreg,
  kPred,
  kToken,
  kInt,
  kNumber,
  kSymbol,
  kVmem,
  kSmem,
  kThread,
  kResolvable,
  kChunk,
  kFlag,
  kTarget,
  kDecl,
};
std::string_view describe(OperandClass c);  // "a vector register", ...

struct OperandSyntax {
  std::string name;  // required /*name=*/ tag, or empty
  std::vector<OperandClass> alternatives;
  bool variadic = false;  // "s...": zero or more
};

struct OpInfo {
  OpId id;
  std::string_view mnemonic;  // with '#' for the unit index
  std::string_view syntax;
  SlotClass slot;
  LatencyClass latency;
  Origin origin;
  std::string_view summary;
  std::string_view group;  // section title in the reference (TPUEMU_GROUP)
  // Parsed from `syntax` / `mnemonic` once at start-up.
  std::optional<OperandClass> dest;  // kVreg, kMask, kSreg, kPred or kToken
  std::vector<OperandSyntax> operands;
  UnitKind unit_kind = UnitKind::kNone;
  bool extension = false;  // a pod extension of tpuemu (ISA.md section 5)
};

std::span<const OpInfo> op_table();
const OpInfo& op_info(OpId id);
inline std::size_t op_count() {
  return op_table().size();
}

// A mnemonic as printed, resolved to its row and unit index.
struct MnemonicMatch {
  OpId id;
  std::uint8_t unit = 0;
};
std::optional<MnemonicMatch> find_mnemonic(std::string_view mnemonic);
// The printed mnemonic of a row for a unit index ("vpop.f32.mrf.mxu2").
std::string mnemonic_text(OpId id, std::uint8_t unit);
// The known mnemonic closest to `mnemonic` (edit distance), for "did you mean".
std::string nearest_mnemonic(std::string_view mnemonic);

}  // namespace tpuemu::isa
