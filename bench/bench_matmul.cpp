// Emulation speed (Google Benchmark): a generated bf16 matmul run on one v5e
// TensorCore, without SystemC (the plain-C++ core is the hot path), with and
// without numerics, with 1 and N host threads (common/host_pool.hpp; timing-only
// runs use none). Reports host wall time, emulated bundles per host second
// and emulated MXU MACs per host second.
//   build/bin/bench_matmul [--benchmark_filter=...]   (TPUEMU_BENCH_SIZE=N for N^3, default 2048)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "chip/core.hpp"
#include "chip/exec_program.hpp"
#include "chip/host_io.hpp"
#include "common/host_pool.hpp"
#include "common/npy.hpp"
#include "common/presets.hpp"
#include "isa/assembler.hpp"
#include "programs/generators.hpp"
#include "programs/reference.hpp"

namespace {

using namespace tpuemu;

std::uint64_t bench_size() {
  const char* env = std::getenv("TPUEMU_BENCH_SIZE");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 2048;
}

void run_matmul(benchmark::State& state, bool numerics) {
  const std::uint64_t n = bench_size();
  if (numerics) set_host_threads(static_cast<unsigned>(state.range(0)));
  ChipRequest request;
  request.preset = "v5e";
  const ChipConfig chip = load_chip(request);
  programs::MatmulSpec spec{n, n, n, "bf16", true};
  const isa::Program program = isa::assemble(programs::generate_matmul(spec, chip), "bench.llo");
  const chip::ExecProgram exec = chip::decode_program(program, chip);
  const auto a = programs::random_bf16_values(n * n, 1);
  const auto b = programs::random_bf16_values(n * n, 2);
  const auto a_dev = chip::to_device(exec.bindings[0], make_npy(NpyDtype::kFloat32, {n, n}, a.data()), "A");
  const auto b_dev = chip::to_device(exec.bindings[1], make_npy(NpyDtype::kFloat32, {n, n}, b.data()), "B");
  std::uint64_t bundles = 0;
  std::uint64_t cycles = 0;
  for (auto _ : state) {
    chip::ChipShared shared(chip);
    shared.hbm.write(0, a_dev);
    shared.hbm.write(a_dev.size(), b_dev);
    chip::RunOptions options;
    options.compute_numerics = numerics;
    chip::Core core(chip, shared, 0, exec, options);
    core.operand_values[0] = 0;
    core.operand_values[1] = static_cast<std::uint32_t>(a_dev.size() / 512);
    core.operand_values[2] = static_cast<std::uint32_t>((a_dev.size() + b_dev.size()) / 512);
    core.run_until(UINT64_MAX);
    core.drain();
    bundles = core.stats().bundles;
    cycles = core.cycle();
    benchmark::DoNotOptimize(core.cycle());
  }
  const double macs = static_cast<double>(n) * n * n;
  state.counters["emulated_cycles"] = static_cast<double>(cycles);
  state.counters["bundles_per_s"] =
      benchmark::Counter(static_cast<double>(bundles), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["mxu_macs_per_s"] = benchmark::Counter(macs, benchmark::Counter::kIsIterationInvariantRate);
  if (numerics) state.counters["threads"] = static_cast<double>(host_threads());
  set_host_threads(0);
}

void BM_matmul_bf16(benchmark::State& state) {
  run_matmul(state, true);
}
void BM_matmul_bf16_timing_only(benchmark::State& state) {
  run_matmul(state, false);
}

// Arg: host threads (1 = no workers).
BENCHMARK(BM_matmul_bf16)
    ->Arg(1)
    ->Arg(static_cast<std::int64_t>(std::max(2U, std::thread::hardware_concurrency())))
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(BM_matmul_bf16_timing_only)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

// libsystemc.so needs an sc_main (declared extern "C" by SystemC); the
// benchmark never starts SystemC.
extern "C" int sc_main(int /*argc*/, char* /*argv*/[]) {
  return 0;
}
