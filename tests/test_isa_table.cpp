// Tests derived from the instruction table: every row, every operand
// alternative, assembles, prints and reassembles to the same op; mnemonics and
// encodings never collide.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <set>

#include "isa/assembler.hpp"
#include "isa/op_table.hpp"

using namespace tpuemu;
using namespace tpuemu::isa;

namespace {

std::string sample(OperandClass c) {
  switch (c) {
    case OperandClass::kVreg:
      return "%v12_v2";
    case OperandClass::kMask:
      return "%vm3_vm2";
    case OperandClass::kSreg:
      return "%s14_s2";
    case OperandClass::kPred:
      return "%p4_p2";
    case OperandClass::kToken:
      return "%5";
    case OperandClass::kInt:
      return "4294967168";
    case OperandClass::kNumber:
      return "1.442695";
    case OperandClass::kSymbol:
      return "[#allocation3 + $0x1]";
    case OperandClass::kVmem:
      return "[vmem:[%s185_s8 + $0x8] ss:$16 sm:$0xf0]";
    case OperandClass::kSmem:
      return "[smem:[#allocation8_spill]]";
    case OperandClass::kThread:
      return "[thread:$1]";
    case OperandClass::kResolvable:
      return "[resolvable:$true]";
    case OperandClass::kChunk:
      return "[2/16]";
    case OperandClass::kFlag:
      return "(narrow)";
    case OperandClass::kTarget:
      return "target bundleno = 7 (0x7), region = 3";
    case OperandClass::kDecl:
      return "[shape: f32[8,128], index: 2, kind: output, shape index: {}]";
  }
  return "?";
}

std::string dest_sample(OperandClass c) {
  switch (c) {
    case OperandClass::kVreg:
      return "%v1_v1";
    case OperandClass::kMask:
      return "%vm1_vm1";
    case OperandClass::kSreg:
      return "%s1_s1";
    case OperandClass::kPred:
      return "%p1_p1";
    default:
      return "%99";
  }
}

// Op text for `info` with operand `vary` taking alternative `alt` (others take their first).
std::string op_text(const OpInfo& info, std::size_t vary, std::size_t alt) {
  std::string text;
  if (info.dest) text += dest_sample(*info.dest) + " = ";
  text += mnemonic_text(info.id, 1);
  for (std::size_t i = 0; i < info.operands.size(); ++i) {
    const OperandSyntax& s = info.operands[i];
    const OperandClass c = s.alternatives[i == vary ? alt : 0];
    const std::string value = (s.name.empty() ? "" : "/*" + s.name + "=*/") + sample(c);
    text += (i == 0 ? " " : ", ") + value;
    if (s.variadic) text += ", " + value;
  }
  return text;
}

}  // namespace

TEST_CASE("table: every row and operand alternative round-trips through text", "[isa][table]") {
  std::size_t checked = 0;
  for (const OpInfo& info : op_table()) {
    for (std::size_t vary = 0; vary < std::max<std::size_t>(1, info.operands.size()); ++vary) {
      const std::size_t alternatives = info.operands.empty() ? 1 : info.operands[vary].alternatives.size();
      for (std::size_t alt = 0; alt < alternatives; ++alt) {
        const std::string text = "{ " + op_text(info, vary, alt) + " }";
        INFO(text);
        Program p;
        try {
          p = assemble(text, "row.llo");
        } catch (const AsmError& e) {
          FAIL_CHECK(e.what());
          continue;
        }
        REQUIRE(p.bundles.size() == 1);
        REQUIRE(p.bundles[0].ops.size() == 1);
        const Op& op = p.bundles[0].ops[0];
        CHECK(op.opcode == info.id);
        CHECK(op.unit == (info.unit_kind == UnitKind::kNone ? 0 : 1));
        const Program again = assemble(disassemble(p), "again.llo");
        CHECK(again == p);
        ++checked;
      }
    }
  }
  CHECK(checked > op_table().size());
}

TEST_CASE("table: a guard round-trips on every row", "[isa][table]") {
  for (const OpInfo& info : op_table()) {
    std::string text = op_text(info, 0, 0);
    // Insert the guard where the printer puts it: after the mnemonic's leading [attr] operands.
    const Program plain = assemble("{ " + text + " }", "row.llo");
    Op guarded = plain.bundles[0].ops[0];
    guarded.guard = Reg{RegClass::kPredicate, 3, 7};
    guarded.guard_negated = true;
    const std::string printed = format_op(guarded);
    INFO(printed);
    const Program p = assemble("{ " + printed + " }", "guarded.llo");
    CHECK(p.bundles[0].ops[0] == guarded);
  }
}

TEST_CASE("table: mnemonics and encodings never collide", "[isa][table]") {
  std::set<std::string> texts;
  for (const OpInfo& info : op_table()) {
    CHECK(static_cast<std::size_t>(info.id) == static_cast<std::size_t>(&info - op_table().data()));
    const int units = info.unit_kind == UnitKind::kNone ? 1 : 8;
    for (int unit = 0; unit < units; ++unit) {
      const std::string text = mnemonic_text(info.id, static_cast<std::uint8_t>(unit));
      INFO(text);
      CHECK(texts.insert(text).second);
      const auto match = find_mnemonic(text);
      REQUIRE(match.has_value());
      CHECK(match->id == info.id);
      CHECK(match->unit == unit);
    }
  }
}

TEST_CASE("table: every row's syntax parses and names a slot and latency class", "[isa][table]") {
  for (const OpInfo& info : op_table()) {
    INFO(info.mnemonic);
    CHECK(info.dest.has_value());
    CHECK(!info.summary.empty());
    CHECK(!info.group.empty());
    for (const auto& operand : info.operands) CHECK(!operand.alternatives.empty());
    CHECK((info.unit_kind != UnitKind::kNone) == (info.mnemonic.find('#') != std::string_view::npos));
  }
}
