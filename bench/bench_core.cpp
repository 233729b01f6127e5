// Interpreter speed (Google Benchmark): one TensorCore without SystemC
// running a VPU-dense loop (two loads, four VALU ops, two stores and the
// loop's scalar ops per iteration, in 8 bundles including the branch's delay
// slots), timing only and with numerics. Reports emulated bundles per host
// second. Pods are measured by the CLI's own report (`tpuemu collective`
// prints a `# host:` line per size).
//   build/bin/bench_core [--benchmark_filter=...]   (TPUEMU_BENCH_ITERATIONS=N loop trips, default 2,000,000)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "chip/core.hpp"
#include "chip/exec_program.hpp"
#include "common/presets.hpp"
#include "isa/assembler.hpp"

namespace {

using namespace tpuemu;

std::uint64_t trips() {
  const char* env = std::getenv("TPUEMU_BENCH_ITERATIONS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 2'000'000;
}

std::string vpu_loop(std::uint64_t n) {
  return R"(#allocation0 [shape = 'f32[8192]', space=vmem, size = 0x8000, tag = 'X']
{ %s3 = smov [#allocation0] ;; %s6 = smov 0 }
loop:
{ %v0 = vld [vmem:[%s3] sm:$0xff] ;; %v1 = vld [vmem:[%s3 + $0x8] sm:$0xff] ;; %s6 = sadd.s32 %s6, 1 }
{ %v2 = vadd.f32 %v0, %v1 ;; %v3 = vmul.f32 %v0, %v1 ;; %p0 = scmp.lt.s32.totalorder %s6, )" +
         std::to_string(n) + R"( }
{ %v4 = vmax.f32 %v2, %v3 ;; %v5 = vsub.f32 %v2, %v3 }
{ %10 = vst [vmem:[%s3 + $0x10] sm:$0xff] /*vst_source=*/%v4 ;; %11 = sbr.rel (%p0) target = loop }
{ %12 = vst [vmem:[%s3 + $0x18] sm:$0xff] /*vst_source=*/%v5 }
{}
{}
{}
)";
}

void run_loop(benchmark::State& state, bool numerics) {
  const std::uint64_t n = numerics ? trips() / 10 : trips();
  ChipRequest request;
  request.preset = "v5e";
  const ChipConfig chip = load_chip(request);
  const isa::Program program = isa::assemble(vpu_loop(n), "vpu_loop.llo");
  const chip::ExecProgram exec = chip::decode_program(program, chip);
  std::uint64_t bundles = 0;
  for (auto _ : state) {
    chip::ChipShared shared(chip);
    chip::RunOptions options;
    options.compute_numerics = numerics;
    chip::Core core(chip, shared, 0, exec, options);
    core.run_until(UINT64_MAX);
    bundles = core.stats().bundles;
    benchmark::DoNotOptimize(core.cycle());
  }
  state.counters["bundles"] = static_cast<double>(bundles);
  state.counters["bundles_per_s"] =
      benchmark::Counter(static_cast<double>(bundles), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_vpu_loop_timing_only(benchmark::State& state) {
  run_loop(state, false);
}
void BM_vpu_loop_numerics(benchmark::State& state) {
  run_loop(state, true);
}

BENCHMARK(BM_vpu_loop_timing_only)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_vpu_loop_numerics)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

// libsystemc.so needs an sc_main (declared extern "C" by SystemC); the
// benchmark never starts SystemC.
extern "C" int sc_main(int /*argc*/, char* /*argv*/[]) {
  return 0;
}
