// The assembler on hand-written programs (ISA.md section 3) and its error
// messages: file:line:col, the line, a caret, what was expected.
#include <bit>
#include <catch2/catch.hpp>

#include "isa/assembler.hpp"

using namespace tpuemu;
using namespace tpuemu::isa;

namespace {

std::string error_of(const std::string& text) {
  try {
    assemble(text, "bad.llo");
  } catch (const AsmError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("assembler: hand-written conveniences", "[isa][asm]") {
  const Program p = assemble_file(std::string(TPUEMU_TEST_DATA) + "/isa/hand_written.llo");
  REQUIRE(p.bundles.size() == 12);
  // Addresses are numbered from 0.
  for (std::size_t i = 0; i < p.bundles.size(); ++i) CHECK(p.bundles[i].address == i);
  // Bare registers, .const from an included file, allocation symbols.
  const Op& smov = p.bundles[1].ops[1];
  CHECK(smov.dest_reg == Reg{RegClass::kScalar, 2, -1});
  CHECK(smov.operands[0].kind == Operand::Kind::kInt);
  CHECK(smov.operands[0].integer == 16);
  CHECK(p.bundles[1].ops[0].operands[0].symbol.allocation == 0);
  const Op& vmul = p.bundles[3].ops[0];
  CHECK(vmul.operands[0].kind == Operand::Kind::kFloat);
  CHECK(std::bit_cast<float>(vmul.operands[0].float_bits) == 0.5F);
  CHECK(p.bundles[4].ops[1].operands[1].integer == 8);
  // The label resolves to the address of the bundle after it.
  const Op& branch = p.bundles[6].ops[0];
  CHECK(branch.opcode == OpId::kSbrRel);
  CHECK(branch.operands[0].target.bundleno == 2);
  CHECK(branch.guard == Reg{RegClass::kPredicate, 0, -1});
  // Named operand tags are canonical even when written.
  CHECK(p.bundles[11].ops[0].operands[1].name == "vst_source");
  // Allocations without an offset are placed, aligned, one after another.
  REQUIRE(p.allocations.size() == 3);
  CHECK(p.allocations[0].offset == 0U);
  CHECK(p.allocations[1].offset == 0x1000U);
  CHECK(p.allocations[2].offset == 0U);  // another space
  CHECK(p.allocations[2].space == MemorySpace::kSflag);
  // Source locations point at the op.
  CHECK(p.files[vmul.source.file].ends_with("hand_written.llo"));
  CHECK(vmul.source.line == 13);
  CHECK(vmul.source.column == 3);
  // And the whole program survives a disassembly.
  CHECK(assemble(disassemble(p), "again.llo") == p);
}

TEST_CASE("assembler: a dump's DMA descriptor, guard and loc survive", "[isa][asm]") {
  const std::string text =
      "  0x23   : > { %344 = dma.hbm_to_vmem [thread:$0]  (!%p684_p0), /*hbm=*/%s148_s21, /*size_in_granules=*/128, "
      "/*vmem=*/%s150_s7, /*dst_syncflagno=*/%s136_s27 /* \nbase_bounds: (2, 2)\nelement_size_in_bytes: 4096 */ }\n"
      "  0x25   :  { %s698_s22 = sand.u32 (!%p176_p4), 1, %s556_s10 /* loc(\"/tmp/x.py\":2:8 to :18) */ }\n"
      "  0x26 PF:  { %s773_s19 = smov (%p31_p0, %s30_s19), 0 } /* End region 26 */\n";
  const Program p = assemble(text, "dump.txt");
  REQUIRE(p.bundles.size() == 3);
  const Op& dma = p.bundles[0].ops[0];
  CHECK(p.bundles[0].in_loop);
  CHECK(dma.guard_negated);
  CHECK(dma.operands.size() == 5);
  CHECK(dma.comment.find("element_size_in_bytes: 4096") != std::string::npos);
  CHECK(p.bundles[1].ops[0].loc == "loc(\"/tmp/x.py\":2:8 to :18)");
  CHECK(p.bundles[2].tag == "PF");
  CHECK(p.bundles[2].ops[0].guard_fallback == Reg{RegClass::kScalar, 19, 30});
  CHECK(format_op(dma).starts_with(
      "%344 = dma.hbm_to_vmem [thread:$0]  (!%p684_p0), /*hbm=*/%s148_s21, /*size_in_granules=*/128, "
      "/*vmem=*/%s150_s7, /*dst_syncflagno=*/%s136_s27"));
}

TEST_CASE("assembler: malformed input is reported with file:line:col, the line and a caret", "[isa][asm][errors]") {
  struct Row {
    const char* text;
    const char* message;
  };
  const Row rows[] = {
      {"{ %v1 = vad.f32 %v2, %v3 }",
       "bad.llo:1:9: error: unknown mnemonic 'vad.f32'; did you mean 'vadd.f32'?\n"
       "    { %v1 = vad.f32 %v2, %v3 }\n"
       "            ^"},
      {"{ %v1 = vadd.f32 %v2 }", "bad.llo:1:22: error: vadd.f32 expects a vector register (%v) or a number here"},
      {"{ %v1 = vadd.f32 %s2, %v3 }",
       "bad.llo:1:18: error: operand 1 of vadd.f32: expected a vector register (%v) or a number"},
      {"{ %v1 = vadd.f32 %v2, %v3, %v4 }", "bad.llo:1:28: error: too many operands for vadd.f32"},
      {"{ %v1 = vadd.f32 %q2, %v3 }", "bad.llo:1:18: error: '%q2' is not a register"},
      {"{ %v1 = vadd.f32 %v2, %v3 /* open }", "error: unterminated comment: expected '*/'"},
      {"{ %v1 = vadd.f32 %v2, %v3", "bad.llo:1:1: error: expected '}' closing the bundle"},
      {"  0x3 XX:  { %v1 = vlaneseq }",
       "bad.llo:1:7: error: unknown control tag 'XX': expected LH, LB, LE, PB, PF or CT"},
      {"{ sbr.rel target = nowhere }", "bad.llo:1:11: error: unknown label 'nowhere'"},
      {"a:\n{ %v1 = vlaneseq }\na:\n{ %v2 = vlaneseq }", "bad.llo:3:1: error: label 'a' is defined twice"},
      {"{ %s1 = smov 4294967296 }", "bad.llo:1:14: error: 4294967296 does not fit in 32 bits"},
      {".define X 3", "bad.llo:1:1: error: unknown directive '.define': expected .include or .const"},
      {".include \"missing.inc\"", "bad.llo:1:10: error: cannot open included file 'missing.inc'"},
      {"{ %s1 = smov LIMIT }", "bad.llo:1:14: error: unexpected 'LIMIT': expected an operand"},
      {"{ vadd.f32 %v2, %v3 }", "bad.llo:1:3: error: vadd.f32 needs a destination a vector register (%v)"},
      {"{ %v1 = vld [vmem:[%s2] sm:$0x1ff] }", "bad.llo:1:28: error: sublane mask must be within $0x0..$0xff"},
      {"{ %5 = vst [vmem:[%s2] sm:$0xff] /*source=*/%v1 }", "operand 2 of vst is /*vst_source=*/, not /*source=*/"},
      {"#allocation4 [shape = 'u8[16]', size = 0x10]", "bad.llo:1:14: error: allocation without 'space='"},
      // Found by fuzz_assembler: an unquoted shape swallowed a quote, and the disassembly did not reassemble.
      {"#allocation0 [shape = x 's32[1]{0}', space=sflag, size = 0x4, tag = 't']",
       "bad.llo:1:23: error: expected a quoted value for 'shape', like shape = 'f32[8,128]'"},
      {"{ %v1 = vpop.f32.mrf.mxu }", "unknown mnemonic 'vpop.f32.mrf.mxu'; did you mean 'vpop.f32.mrf.mxu0'?"},
      {"{ %p1 = scmp.lt.s32.totalorder (%s1), %s2, 3 }", "expected a predicate guard like (%p1) or (!%p1)"},
      {"{ %v1 = vmul.f32 1.5.5, %v2 }", "bad.llo:1:18: error: '1.5.5' is not a number"},
      {"  0x1   :  { %s1 = sbr.rel target bundleno = 5 (0x6), region = 2 }",
       "target (0x6) does not match bundleno = 5"},
      // Found by fuzz_assembler: a `}` inside a line comment must not close the bundle (and the next
      // line must not silently become the bundle's trailing comment).
      {"0x0 : { %v1 = vlaneseq //} /* note */\n0x1 : { %v2 = vlaneseq }",
       "bad.llo:1:7: error: expected '}' closing the bundle"},
      {"{ %v1 = vlaneseq } // fine\n{ %v2 = vlaneseq } junk",
       "bad.llo:2:20: error: unexpected text after the bundle's closing '}'"},
      // Found by fuzz_assembler: a declaration's bracket left open joined the lines below into its
      // shape, comments included, and the disassembly did not reassemble.
      {"{ %s1 = inlined_call_operand.hbm [shape: f32[8,\n8], index: 0, kind: input] }",
       "error: operand declaration field 'shape:' runs over a line break (a bracket left open?)"},
      {"{ %s1 = inlined_call_operand.hbm [shape: f32 /* c */, index: 0, kind: input] }",
       "error: operand declaration field 'shape:' runs over a comment"},
      {"{ %s1 = inlined_call_operand.hbm [shape: f32[8,8], index: 1e3, kind: input] }", "bad operand index '1e3'"},
      {"{ %s1 = inlined_call_operand.hbm [shape: f32[8,8], index: 99999999999999999999, kind: input] }",
       "bad operand index '99999999999999999999'"},
  };
  for (const Row& r : rows) {
    INFO(r.text);
    CHECK_THAT(error_of(r.text), Catch::Contains(r.message));
  }
}

TEST_CASE("assembler: several errors are reported together", "[isa][asm][errors]") {
  const std::string e = error_of("{ %v1 = vfoo %v2 }\n{ %v1 = vlaneseq }\n{ %v9 = vbar }");
  CHECK_THAT(e, Catch::Contains("bad.llo:1:9: error: unknown mnemonic 'vfoo'"));
  CHECK_THAT(e, Catch::Contains("bad.llo:3:9: error: unknown mnemonic 'vbar'"));
}
