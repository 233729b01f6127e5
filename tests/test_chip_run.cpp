// Whole runs on the SystemC chip: generated programs against their host
// references, bit for bit. SystemC elaborates once per process, so each
// TEST_CASE does exactly one run (CTest runs each in its own process).
#include <catch2/catch.hpp>
#include <cstring>

#include "chip/host_io.hpp"
#include "chip/run.hpp"
#include "common/presets.hpp"
#include "isa/assembler.hpp"
#include "isa/checker.hpp"
#include "isa/op_table.hpp"
#include "programs/generators.hpp"
#include "programs/reference.hpp"
#include "tests/test_support.hpp"

using namespace tpuemu;

namespace {

using test::preset;

struct MatmulRun {
  chip::RunResult result;
  std::vector<float> expected;
  std::vector<float> got;
};

MatmulRun run_matmul(const programs::MatmulSpec& spec, const std::string& chip_name = "v5e", bool numerics = true) {
  chip::RunRequest request;
  request.chip = preset(chip_name);
  request.options.compute_numerics = numerics;
  const isa::Program program = isa::assemble(programs::generate_matmul(spec, request.chip), "matmul.llo");
  request.program = &program;
  const auto a = programs::random_bf16_values(spec.m * spec.k, 7);
  const auto b = programs::random_bf16_values(spec.k * spec.n, 8);
  request.inputs[0] = make_npy(NpyDtype::kFloat32, {spec.m, spec.k}, a.data());
  request.inputs[1] = make_npy(NpyDtype::kFloat32, {spec.k, spec.n}, b.data());
  MatmulRun r;
  r.result = chip::run_program(request);
  REQUIRE_FALSE(r.result.fault.has_value());
  const NpyArray c = chip::from_device(r.result.bindings.at(2), r.result.output_bytes.at(2), false);
  r.got.assign(c.as_f32().begin(), c.as_f32().end());
  r.expected = programs::matmul_reference(a, b, spec.m, spec.k, spec.n);
  return r;
}

void check_bit_exact(const MatmulRun& r) {
  REQUIRE(r.got.size() == r.expected.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < r.got.size(); ++i) mismatches += std::memcmp(&r.got[i], &r.expected[i], 4) != 0 ? 1 : 0;
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("run: matmul 8x128x128 bf16 equals the host reference bit for bit", "[run][numerics]") {
  check_bit_exact(run_matmul({8, 128, 128, "bf16", true}));
}

TEST_CASE("run: matmul 256x512x512 bf16 equals the host reference bit for bit", "[run][numerics]") {
  check_bit_exact(run_matmul({256, 512, 512, "bf16", true}));
}

TEST_CASE("run: matmul 200x300x700 (not multiples of 128) equals the host reference bit for bit", "[run][numerics]") {
  check_bit_exact(run_matmul({200, 300, 700, "bf16", true}));
}

TEST_CASE("run: matmul 72x1000x130 f32 inputs equals the host reference bit for bit", "[run][numerics]") {
  check_bit_exact(run_matmul({72, 1000, 130, "f32", true}));
}

TEST_CASE("run: matmul without double buffering gives the same result, slower", "[run][numerics]") {
  // Cycle counts of the double-buffered program for the same shape are pinned by the CLI tests.
  const MatmulRun r = run_matmul({128, 512, 512, "bf16", false});
  check_bit_exact(r);
  const auto& stalls = r.result.cores.front().stall_cycles;
  CHECK(stalls[static_cast<std::size_t>(chip::StallCause::kSyncFlag)] > r.result.cycles / 4);
}

TEST_CASE("run: a megacore chip (v5p) runs the program on both TensorCores sharing HBM", "[run][megacore]") {
  const MatmulRun r = run_matmul({64, 256, 512, "bf16", true}, "v5p");
  check_bit_exact(r);
  REQUIRE(r.result.cores.size() == 2);
  CHECK(r.result.cores[0].bundles == r.result.cores[1].bundles);
  CHECK(r.result.cores[0].hbm_bytes > 0);
}

TEST_CASE("run: the generated matmul fits v4p's 32 vregs and runs on its two cores", "[run][megacore]") {
  check_bit_exact(run_matmul({48, 384, 256, "bf16", true}, "v4p"));
}

namespace {

// Runs the generated add of `n` floats on `chip_name`; counts the elements of
// c that differ from a + b.
std::size_t add_mismatches(const std::string& chip_name, std::uint64_t n, const std::string& a_dtype = "f32") {
  chip::RunRequest request;
  request.chip = preset(chip_name);
  programs::AddSpec spec;
  spec.n = n;
  spec.chunk_bytes = 64 * 1024;
  spec.a_dtype = a_dtype;  // a bf16 A is given as float32 values, bf16-exact (random_bf16_values)
  const isa::Program program = isa::assemble(programs::generate_add(spec, request.chip), "add.llo");
  request.program = &program;
  const auto a = programs::random_bf16_values(spec.n, 3);
  std::vector<float> b(spec.n);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) * 0.37F;
  request.inputs[0] = make_npy(NpyDtype::kFloat32, {spec.n}, a.data());
  request.inputs[1] = make_npy(NpyDtype::kFloat32, {spec.n}, b.data());
  const chip::RunResult result = chip::run_program(request);
  REQUIRE_FALSE(result.fault.has_value());
  const NpyArray c = chip::from_device(result.bindings.at(2), result.output_bytes.at(2), false);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < spec.n; ++i) {
    const float expected = a[i] + b[i];
    mismatches += std::memcmp(&c.as_f32()[i], &expected, 4) != 0 ? 1 : 0;
  }
  return mismatches;
}

}  // namespace

TEST_CASE("run: add over a ragged length equals a + b bit for bit", "[run][numerics]") {
  CHECK(add_mismatches("v5e", 100000) == 0);
}

TEST_CASE("run: add with a bf16 A widens it exactly, and refuses half a tile pair", "[run][numerics]") {
  CHECK(add_mismatches("v5e", 100 * 2048, "bf16") == 0);  // 12.5 chunks of 64 KiB of f32
  programs::AddSpec odd;
  odd.n = 3 * 1024;
  odd.a_dtype = "bf16";
  CHECK_THROWS_WITH(programs::generate_add(odd, preset("v5e")),
                    Catch::Matchers::Contains("whole pairs of f32 tiles (n a multiple of 2048), n = 3072"));
}

TEST_CASE("run: add with a bf16 A on v5p's two cores", "[run][numerics]") {
  CHECK(add_mismatches("v5p", 16 * 2048, "bf16") == 0);
}

TEST_CASE("run: a program without MXU ops runs on v6e (256x256 MXUs, not modelled)", "[run][numerics][v6e]") {
  CHECK(add_mismatches("v6e", 100000) == 0);
}

TEST_CASE("run: every MXU op on v6e is refused before the run, at its source position", "[run][v6e]") {
  const std::string text = programs::generate_matmul({8, 128, 128, "bf16", true}, preset("v5e"));
  const isa::Program program = isa::assemble(text, "matmul.llo");
  std::size_t mxu_ops = 0;
  for (const auto& bundle : program.bundles) {
    for (const auto& op : bundle.ops) mxu_ops += isa::op_info(op.opcode).unit_kind == isa::UnitKind::kMxu ? 1 : 0;
  }
  REQUIRE(mxu_ops > 0);
  CHECK(isa::check_program(program, preset("v5e")).violations.empty());
  const isa::CheckResult check = isa::check_program(program, preset("v6e"));
  REQUIRE(check.violations.size() == mxu_ops);
  for (const auto& d : check.violations) {
    CHECK(d.file == "matmul.llo");
    CHECK(d.line > 0);
    CHECK_THAT(d.message, Catch::Matches(".*mxu[0-3]: v6e's 256x256 MXU is not modelled \\(the model's vreg interface "
                                         "to an MXU is 128 lanes wide.*; programs without MXU ops run"));
  }
  chip::RunRequest request;
  request.chip = preset("v6e");
  request.program = &program;
  // Refused at the check before the run, not for the inputs it lacks.
  CHECK_THROWS_WITH(chip::run_program(request), Catch::StartsWith(isa::format_diagnostic(check.violations.front())));
}
