// The TensorCore as plain C++ (no SystemC): timing rules at their edge (one
// cycle early stalls, on time issues), stall attribution, and program faults
// with their locations.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <memory>

#include "chip/core.hpp"
#include "chip/exec_program.hpp"
#include "common/presets.hpp"
#include "isa/assembler.hpp"
#include "tests/test_support.hpp"

using namespace tpuemu;
using namespace tpuemu::chip;

namespace {

ChipConfig v5e(std::vector<std::string> overrides = {}) {
  return test::preset("v5e", std::move(overrides));
}

// A program, its chip and one core, run to the end.
struct Harness {
  explicit Harness(const std::string& text, ChipConfig config = v5e(), RunOptions options = {})
      : chip(std::move(config)),
        program(isa::assemble(text, "test.llo")),
        exec(decode_program(program, chip)),
        shared(chip),
        core(chip, shared, 0, exec, options) {}
  std::uint64_t run() {
    core.run_until(UINT64_MAX);
    core.drain();
    return core.cycle();
  }
  std::string fault() {
    try {
      run();
    } catch (const LocatedFault& f) {
      return f.what();
    }
    return "no fault";
  }
  ChipConfig chip;
  isa::Program program;
  ExecProgram exec;
  ChipShared shared;
  Core core;
};

constexpr const char* kMxuSetup =
    "{ %v0 = vlaneseq }\n"
    "{ %1 = vmatpush.xpose.msra.mxu0 %v0 }\n";

}  // namespace

TEST_CASE("core: one bundle per cycle when nothing stalls", "[core][timing]") {
  Harness h("{ %s1 = smov 1 }\n{ %s2 = smov 2 }\n{ %s3 = sadd.s32 %s1, %s2 }\n{}\n");
  CHECK(h.run() == 4);
  CHECK(h.core.sregs[3] == 3);
  CHECK(h.core.stats().bundles == 4);
}

TEST_CASE("core: a dependent op one bundle after its producer issues on time at latency 1", "[core][timing]") {
  Harness h("{ %v1 = vlaneseq }\n{ %v2 = vadd.s32 %v1, %v1 }\n");
  CHECK(h.run() == 2);
  CHECK(h.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kRegister)] == 0);
  CHECK(h.core.vregs[2].words[5] == 10);
}

TEST_CASE("core: one cycle early stalls on the scoreboard (latency 2)", "[core][timing]") {
  Harness h("{ %v1 = vlaneseq }\n{ %v2 = vadd.s32 %v1, %v1 }\n", v5e({"latency.valu=2"}));
  CHECK(h.run() == 3);
  CHECK(h.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kRegister)] == 1);
  // Two bundles later it issues on time.
  Harness on_time("{ %v1 = vlaneseq }\n{}\n{ %v2 = vadd.s32 %v1, %v1 }\n", v5e({"latency.valu=2"}));
  CHECK(on_time.run() == 3);
  CHECK(on_time.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kRegister)] == 0);
}

TEST_CASE("core: vdelay N holds the next bundle N cycles after its own (0 and 1 hold nothing)", "[core][timing]") {
  struct Row {
    std::int32_t count;
    std::uint64_t cycles;  // of "{ vdelay N }\n{ %s1 = smov 1 }\n"
    std::uint64_t delay_stalls;
  };
  for (const Row& r : std::vector<Row>{{0, 2, 0}, {1, 2, 0}, {2, 3, 1}, {100, 101, 99}}) {
    INFO("vdelay " << r.count);
    Harness h(fmt::format("{{ %0 = vdelay {} }}\n{{ %s1 = smov 1 }}\n", r.count));
    CHECK(h.run() == r.cycles);
    CHECK(h.core.sregs[1] == 1);
    CHECK(h.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kDelay)] == r.delay_stalls);
  }
  // At the edge: an op that waits 3 cycles for a register behind vdelay 3 stalls on neither.
  Harness both("{ %v1 = vlaneseq ;; %0 = vdelay 3 }\n{ %v2 = vadd.s32 %v1, %v1 }\n", v5e({"latency.valu=3"}));
  CHECK(both.run() == 4);
  CHECK(both.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kRegister)] == 0);
  CHECK(both.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kDelay)] == 2);
  // One cycle more for the register: it decides.
  Harness later("{ %v1 = vlaneseq ;; %0 = vdelay 3 }\n{ %v2 = vadd.s32 %v1, %v1 }\n", v5e({"latency.valu=4"}));
  CHECK(later.run() == 5);
  CHECK(later.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kRegister)] == 3);
  // A guarded vdelay whose predicate is false holds nothing.
  Harness guarded("{ %p1 = scmp.eq.s32.totalorder %s0, 1 }\n{ %0 = vdelay (%p1) 50 }\n{}\n");
  CHECK(guarded.run() == 3);
}

TEST_CASE("core: vdelay of a negative count is a fault naming it", "[core][timing][faults]") {
  Harness h("{ %0 = vdelay -5 }\n");
  CHECK_THAT(h.fault(), Catch::Contains("vdelay -5: the count of cycles must be 0 or more"));
}

TEST_CASE("core: --strict turns a register hazard into an error naming both ops", "[core][timing][faults]") {
  RunOptions strict;
  strict.strict = true;
  Harness h("{ %v1 = vlaneseq }\n{ %v2 = vadd.s32 %v1, %v1 }\n", v5e({"latency.valu=2"}), strict);
  const std::string f = h.fault();
  CHECK_THAT(f,
             Catch::Contains("chip 0 core 0 bundle 0x1 (test.llo:2:3): vadd.s32: register hazard (--strict): reads %v1 "
                             "at cycle 1, but chip 0 core 0 bundle 0x0 (test.llo:1:3): vlaneseq writes it with latency "
                             "2 so it is ready at cycle 2"));
}

TEST_CASE("core: an MXU pop waits for the result: latency.mxu_matmul after the multiply", "[core][timing][mxu]") {
  Harness h(std::string(kMxuSetup) + "{ %2 = vmatmul.f32.vlgmr.msra.gmra.mxu0 %v0 }\n{ %v3 = vpop.f32.mrf.mxu0 }\n");
  const std::uint64_t latency = h.chip.latency(LatencyClass::kMxuMatmul).value();
  // matmul at cycle 2, result ready at 2 + latency, the pop issues then.
  CHECK(h.run() == 2 + latency + 1);
  CHECK(h.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kFifo)] == latency - 1);
}

TEST_CASE("core: one multiply per MXU every cycles_per_tile cycles, other MXUs in parallel", "[core][timing][mxu]") {
  const std::string push =
      "{ %v0 = vlaneseq }\n{ %1 = vmatpush.xpose.msra.mxu0 %v0 ;; %2 = vmatpush.xpose.msra.mxu1 %v0 }\n";
  Harness same(push + "{ %3 = vmatmul.f32.vlgmr.msra.gmra.mxu0 %v0 }\n{ %4 = vmatmul.f32.gmra.mxu0 %v0 }\n");
  CHECK(same.run() == 2 + 8 + 1);  // second multiply stalls 7 cycles (unit busy), issues 8 after the first
  CHECK(same.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kUnitBusy)] == 7);
  Harness other(push +
                "{ %3 = vmatmul.f32.vlgmr.msra.gmra.mxu0 %v0 }\n{ %4 = vmatmul.f32.vlgmr.msra.gmra.mxu1 %v0 }\n");
  CHECK(other.run() == 4);
  Harness spaced(push +
                 "{ %3 = vmatmul.f32.vlgmr.msra.gmra.mxu0 %v0 }\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n"
                 "{ %4 = vmatmul.f32.gmra.mxu0 %v0 }\n");
  CHECK(spaced.run() == 11);
  CHECK(spaced.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kUnitBusy)] == 0);
}

TEST_CASE("core: a DMA completes after issue latency + bytes/bandwidth + HBM latency", "[core][timing][dma]") {
  // 4096 bytes at 800 B/cycle (1.2e12 B/s at 1.5 GHz) = 5.12 cycles, HBM latency 100 cycles, issue 4.
  const ChipConfig chip = v5e({"hbm.bandwidth=1.2e12", "hbm.latency=66.666666667ns", "latency.dma_issue=4"});
  const std::string text =
      "#allocation0 [shape = 'u8[4096]', space=vmem, size = 0x1000, tag = 'buf']\n"
      "#allocation1 [shape = 's32[1]', space=sflag, size = 0x4, tag = 'flag']\n"
      "%s0 = inlined_call_operand.hbm [shape: f32[8,128], index: 0, kind: input, shape index: {}]\n"
      "{ %s1 = sshll.u32 %s0, 4 ;; %s2 = smov [#allocation0] }\n"
      "{ %s2 = sshll.u32 %s2, 4 }\n"
      "{ %3 = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s1, /*size_in_granules=*/128, /*vmem=*/%s2, "
      "/*dst_syncflagno=*/[#allocation1] }\n"
      "{ %4 = dma.done.wait [#allocation1], 128 }\n"
      "{ %5 = vsyncadd [#allocation1], 4294967168 }\n";
  Harness h(text, chip);
  h.core.operand_values[0] = 0;
  // DMA issued at cycle 3: ready at 7, bytes done at 12.12, +100 latency -> 112.12 -> lands at cycle 113.
  CHECK(h.run() == 113 + 2);
  CHECK(h.core.stats().stall_cycles[static_cast<std::size_t>(StallCause::kSyncFlag)] == 113 - 4);
  CHECK(h.core.flags[1] == 0);
}

TEST_CASE("core: branches have 4 delay slots", "[core][control]") {
  Harness h(
      "{ %s1 = smov 0 ;; %p0 = scmp.eq.s32.totalorder %s0, %s0 }\n"
      "{ %2 = sbr.rel (%p0) target = skip }\n"
      "{ %s1 = sadd.s32 %s1, 1 }\n{ %s1 = sadd.s32 %s1, 1 }\n{ %s1 = sadd.s32 %s1, 1 }\n{ %s1 = sadd.s32 %s1, 1 }\n"
      "{ %s1 = sadd.s32 %s1, 100 }\n"
      "skip:\n{ %s2 = smov 7 }\n");
  h.run();
  CHECK(h.core.sregs[1] == 4);  // the four delay slots ran, the bundle after them did not
  CHECK(h.core.sregs[2] == 7);
  CHECK(h.core.stats().bundles == 7);
}

TEST_CASE("core: all ops of a bundle read before any writes", "[core][semantics]") {
  Harness h("{ %s1 = smov 5 ;; %s2 = smov 9 }\n{ %s1 = smov %s2 ;; %s2 = smov %s1 }\n");
  h.run();
  CHECK(h.core.sregs[1] == 9);
  CHECK(h.core.sregs[2] == 5);
}

TEST_CASE("core: program faults name chip, core, bundle, source line and the problem", "[core][faults]") {
  struct Row {
    std::string text;
    const char* message;
  };
  const Row rows[] = {
      {"{ %s1 = smov 4194304 }\n{ %v0 = vld [vmem:[%s1] sm:$0xff] }\n",
       "chip 0 core 0 bundle 0x1 (test.llo:2:3): vld: VMEM access out of range: bytes [0x80000000, 0x80000200) but "
       "VMEM "
       "holds 0x8000000 bytes"},
      {"{ %v0 = vpop.f32.mrf.mxu0 }\n",
       "bundle 0x0 (test.llo:1:3): vpop.f32.mrf.mxu0: pop from the empty result FIFO of mxu0: no multiply is queued or "
       "in "
       "flight"},
      {"#allocation1 [shape = 's32[1]', space=sflag, size = 0x4, tag = 'f']\n{ %1 = dma.done.wait [#allocation1], 128 "
       "}\n",
       "bundle 0x0 (test.llo:2:3): dma.done.wait: deadlock: waits for sync flag 0 to reach 128; it holds 0 and no DMA "
       "in "
       "flight adds to it"},
      {"{ %v0 = vlaneseq }\n{ %1 = vmatpush.msra.mxu0 %v0 }\n{ %2 = vmatmul.f32.vlgmr.msra.gmra.mxu0 %v0 }\n",
       "bundle 0x2 (test.llo:3:3): vmatmul.f32.vlgmr.msra.gmra.mxu0: latched weights cover K rows 0..7 but the "
       "multiply "
       "uses K lanes up to 127 (push 15 more weight vregs, or mask the LHS)"},
      {"{ %v0 = vlaneseq }\n{ %2 = vmatmul.f32.gmra.mxu1 %v0 }\n",
       "vmatmul.f32.gmra.mxu1: multiply with no weights latched"},
      {"{ %v0 = vlaneseq }\n{ %2 = vmatmul.f32.gmra.mxu7 %v0 }\n", "mxu7 does not exist: v5e has 4 MXUs per core"},
      {"{ %v1 = vpop.eup %5 }\n", "pop of %5: no EUP op with that token is queued or in flight"},
      {"{ %1 = shalt.err }\n", "the program halted with an error (a bounds check failed)"},
      {"{ %s0 = smov 9999 }\n{ %1 = vsyncadd %s0, 1 }\n",
       "sync flag 9999 out of range: the core has 4096 (sflag.count)"},
  };
  for (const Row& r : rows) {
    INFO(r.text);
    Harness h(r.text);
    CHECK_THAT(h.fault(), Catch::Contains(r.message));
  }
}

TEST_CASE("core: the EUP and XLU result FIFOs hold their preset's depth and pop in issue order", "[core][faults]") {
  // At the depth: runs; one more push: a fault naming the parameter (the FIFOs had no limit).
  const std::string two = "{ %v1 = vlaneseq }\n{ %10 = vpow2.f32 %v1 }\n{ %11 = vpow2.f32 %v1 }\n";
  Harness at_depth(two + "{ %v2 = vpop.eup %10 }\n{ %v3 = vpop.eup %11 }\n", v5e({"eup.fifo_depth=2"}));
  CHECK(at_depth.fault() == "no fault");
  Harness over(two + "{ %12 = vpow2.f32 %v1 }\n", v5e({"eup.fifo_depth=2"}));
  CHECK_THAT(over.fault(), Catch::Contains("bundle 0x3 (test.llo:4:3): vpow2.f32: the EUP result FIFO is full (2 "
                                           "results, eup.fifo_depth): pop results before pushing more"));
  const std::string rotates =
      "{ %v1 = vlaneseq }\n{ %20 = vrot.lane.b32.xlu0 %v1, 1 }\n{ %21 = vrot.lane.b32.xlu0 %v1, 2 }\n";
  Harness xlu_over(rotates, v5e({"xlu.fifo_depth=1"}));
  CHECK_THAT(xlu_over.fault(),
             Catch::Contains("the rotate/permute result FIFO of xlu0 is full (1 results, xlu.fifo_depth)"));
  // A pop naming a younger push than the oldest: a schedule error, not a reordering (it gave %11's result).
  Harness out_of_order(two + "{ %v2 = vpop.eup %11 }\n");
  CHECK_THAT(out_of_order.fault(),
             Catch::Contains("vpop.eup: pop of %11: the oldest EUP result is %10's (the FIFO pops in issue order)"));
  Harness stranger(two + "{ %v2 = vpop.eup %12 }\n");
  CHECK_THAT(stranger.fault(), Catch::Contains("pop of %12: the oldest EUP result is %10's, and no %12 is queued"));
  Harness xlu_order(rotates + "{ %v2 = vpop.permute.xlu0 %21 }\n");
  CHECK_THAT(xlu_order.fault(), Catch::Contains("pop of %21: the oldest XLU rotate/permute result is %20's"));
  // A token pushed twice (a loop body's push before its pop) keeps both results, in order (the second overwrote
  // the first).
  Harness twice(
      "{ %v1 = vlaneseq }\n{ %v4 = vadd.s32 %v1, %v1 }\n{ %30 = vrot.lane.b32.xlu0 %v1, 1 }\n"
      "{ %30 = vrot.lane.b32.xlu0 %v4, 1 }\n{ %v2 = vpop.permute.xlu0 %30 }\n{ %v3 = vpop.permute.xlu0 %30 }\n");
  CHECK(twice.fault() == "no fault");
  CHECK(twice.core.vregs[2].words[1] == 0);  // lane 1 of the first result holds lane 0 of %v1
  CHECK(twice.core.vregs[3].words[2] == 2);  // lane 2 of the second holds lane 1 of %v4 = 2 x 1
}

TEST_CASE("core: an integer literal where an op reads f32 values means its value", "[core]") {
  // vpack.c.bf16 packs f32 values: `1` is 1.0 there, as in vadd.f32 (it was the bit pattern 0x00000001).
  Harness integer("{ %v1 = vlaneseq }\n{ %v2 = vpack.c.bf16 1, %v1 }\n{ %v3 = vadd.f32 %v1, 2 }\n");
  Harness real("{ %v1 = vlaneseq }\n{ %v2 = vpack.c.bf16 1.0, %v1 }\n{ %v3 = vadd.f32 %v1, 2.0 }\n");
  integer.run();
  real.run();
  CHECK(integer.core.vregs[2].words == real.core.vregs[2].words);
  CHECK(integer.core.vregs[3].words == real.core.vregs[3].words);
  // Elsewhere a literal is a bit pattern: vadd.s32 adds the integer.
  Harness bits("{ %v1 = vlaneseq }\n{ %v2 = vadd.s32 %v1, 1 }\n");
  bits.run();
  CHECK(bits.core.vregs[2].words[0] == 1);
}

TEST_CASE("core: loading fails on an undeclared allocation or a branch to nowhere", "[core][faults]") {
  const ChipConfig chip = v5e();
  const isa::Program p = isa::assemble("{ %s1 = smov [#allocation3] }\n", "x.llo");
  CHECK_THROWS_WITH(decode_program(p, chip), Catch::Contains("x.llo:1:3: #allocation3 is not declared"));
  const isa::Program q = isa::assemble("  0x0   :  { %1 = sbr.rel target bundleno = 9 (0x9), region = 1 }\n", "y.llo");
  CHECK_THROWS_WITH(decode_program(q, chip),
                    Catch::Contains("y.llo:1:14: branch target bundleno = 9 is not the address of a bundle"));
}

TEST_CASE("core: timing-only mode gives the same cycle counts", "[core][timing]") {
  const std::string text = std::string(kMxuSetup) +
                           "{ %2 = vmatmul.f32.vlgmr.msra.gmra.mxu0 %v0 }\n{ %v3 = vpop.f32.mrf.mxu0 }\n"
                           "{ %v4 = vadd.f32 %v3, %v3 }\n";
  RunOptions timing_only;
  timing_only.compute_numerics = false;
  Harness a(text);
  Harness b(text, v5e(), timing_only);
  CHECK(a.run() == b.run());
  CHECK(a.core.stats().stall_cycles == b.core.stats().stall_cycles);
}

TEST_CASE("core: the cycle limit lets the last bundle issue on time and stops it one cycle early", "[core][timing]") {
  const char* four_bundles = "{ %s1 = smov 1 }\n{ %s2 = smov 2 }\n{ %s3 = sadd.s32 %s1, %s2 }\n{}\n";
  RunOptions on_time;
  on_time.max_cycles = 4;  // bundles issue at cycles 0..3
  Harness ok(four_bundles, v5e(), on_time);
  CHECK(ok.run() == 4);
  RunOptions early;
  early.max_cycles = 3;
  Harness stopped(four_bundles, v5e(), early);
  CHECK(stopped.fault() ==
        "chip 0 core 0 bundle 0x3 (test.llo:4): the run reached the cycle limit (3 cycles, --max-cycles) with this "
        "bundle still to issue; an endless loop? A program that needs more cycles runs with a larger --max-cycles");
}
