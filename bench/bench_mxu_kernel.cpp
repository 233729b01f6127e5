// MXU arithmetic speed (Google Benchmark): MACs per host second of the tile
// kernels (mxu/matmul_kernel.hpp), portable and AVX2, on normal and denormal
// inputs; and of four Mxu units fed like a generated matmul (results popped
// 16 multiplies behind), with 1 and N host threads (common/host_pool.hpp);
// and the host's price for handing a 4 KiB result from one core to another
// (BM_handoff), what every deferred multiply pays on top of its arithmetic.
//   build/bin/bench_mxu_kernel [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "common/host_pool.hpp"
#include "common/numerics.hpp"
#include "mxu/matmul_kernel.hpp"
#include "mxu/mxu.hpp"

namespace {

using namespace tpuemu;
using mxu::KernelKind;
using vpu::kLanes;
using vpu::kSublanes;

constexpr double kTileMacs = static_cast<double>(kSublanes) * kLanes * kLanes;

// Normal: bf16 values in [-1, 1). Denormal: the LHS scaled into bf16's
// denormal range (exponent field 0), so products underflow and the AVX2
// kernel cannot fuse them. Some denormal: an eighth of the LHS values so
// scaled, the rest normal (products of both sizes in one tile).
enum class Inputs : std::uint8_t { kNormal, kDenormal, kSomeDenormal };

float input(std::mt19937& rng, bool denormal) {
  std::uniform_real_distribution<float> unit(-1.0F, 1.0F);
  return bf16_round(denormal ? unit(rng) * 1.0e-39F : unit(rng));
}

std::vector<std::shared_ptr<mxu::WeightTile>> weight_tiles(std::mt19937& rng) {
  std::vector<std::shared_ptr<mxu::WeightTile>> tiles;
  for (int t = 0; t < 4; ++t) {
    auto w = std::make_shared<mxu::WeightTile>();
    for (auto& v : w->values) v = input(rng, false);
    w->finish();
    tiles.push_back(w);
  }
  return tiles;
}

std::vector<vpu::Vreg> lhs_tiles(std::mt19937& rng, Inputs inputs) {
  std::vector<vpu::Vreg> lhs(64);
  for (auto& v : lhs) {
    for (std::size_t i = 0; i < v.words.size(); ++i) {
      const bool denormal = inputs == Inputs::kDenormal || (inputs == Inputs::kSomeDenormal && rng() % 8 == 0);
      v.set_f32(i, input(rng, denormal));
    }
  }
  return lhs;
}

std::vector<vpu::Vreg> lhs_tiles(std::mt19937& rng, bool denormal) {
  return lhs_tiles(rng, denormal ? Inputs::kDenormal : Inputs::kNormal);
}

void kernel(benchmark::State& state, KernelKind kind, Inputs inputs) {
  if (!mxu::kernel_available(kind)) {
    state.SkipWithError("kernel not available on this host");
    return;
  }
  std::mt19937 rng(1);
  const auto weights = weight_tiles(rng);
  const auto lhs = lhs_tiles(rng, inputs);
  vpu::Vreg out;
  std::size_t i = 0;
  for (auto _ : state) {
    mxu::multiply_tile(kind, mxu::TileJob{&lhs[i % lhs.size()], nullptr, weights[i % 4].get(), kLanes, kLanes}, out);
    benchmark::DoNotOptimize(out);
    ++i;
  }
  state.counters["macs_per_s"] = benchmark::Counter(kTileMacs, benchmark::Counter::kIsIterationInvariantRate);
}

// Four 128x128 units: 16 pushes and a latch, then 256 multiplies per unit,
// each result popped 16 multiplies after it was issued.
void units(benchmark::State& state, bool denormal) {
  const auto threads = static_cast<unsigned>(state.range(0));
  set_host_threads(threads);
  std::mt19937 rng(1);
  const auto lhs = lhs_tiles(rng, denormal);
  std::vector<vpu::Vreg> pushes(16);
  for (auto& v : pushes) {
    for (std::size_t i = 0; i < v.words.size(); ++i) v.set_f32(i, input(rng, false));
  }
  std::vector<mxu::Mxu> mxus;
  mxus.reserve(4);
  for (int u = 0; u < 4; ++u) mxus.emplace_back(kLanes, 64, mxu::MxuTiming{8, 1, 0, 264});
  constexpr int kMultiplies = 256;
  constexpr std::size_t kLag = 16;
  vpu::Vreg out;
  for (auto _ : state) {
    for (auto& m : mxus) {
      for (const auto& p : pushes) (void)m.push_weights(p, false, 0);
    }
    for (int i = 0; i < kMultiplies; ++i) {
      for (auto& m : mxus) {
        (void)m.matmul(lhs[static_cast<std::size_t>(i) % lhs.size()], nullptr, i == 0, 0);
        if (m.queued() > kLag) m.pop_into(out);
      }
    }
    for (auto& m : mxus) {
      while (m.queued() > 0) m.pop_into(out);
    }
    benchmark::DoNotOptimize(out);
  }
  state.counters["macs_per_s"] =
      benchmark::Counter(kTileMacs * 4 * kMultiplies, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = static_cast<double>(host_threads());
  set_host_threads(0);
}

// A 4 KiB vector result handed from the thread that writes it to the one
// that reads it, as an MXU tile computed on a host worker reaches the core
// that pops it: a ring of 32 buffers with a sequence word each; the writer
// fills buffer i once the reader has released buffer i - 32, the reader waits
// for it and copies it out. Arg 1: writer and reader are one thread (the
// anchor: the same bytes written and copied, no other core involved); 2: the
// writer is another thread, on another core where the host has one.
void BM_handoff(benchmark::State& state) {
  constexpr std::size_t kRing = 32;
  constexpr std::size_t kFloats = sizeof(vpu::Vreg::words) / 4;
  struct alignas(64) Buffer {
    std::atomic<std::int64_t> sequence{-1};
    alignas(64) std::array<float, kFloats> values{};
  };
  std::vector<Buffer> ring(kRing);
  std::array<float, kFloats> out{};
  const bool two_threads = state.range(0) == 2;
  const auto fill = [](Buffer& b, std::int64_t i) { b.values.fill(static_cast<float>(i)); };
  constexpr std::int64_t kPerIteration = 4096;
  std::int64_t next = 0;
  for (auto _ : state) {
    const std::int64_t first = next;
    next += kPerIteration;
    if (!two_threads) {
      for (std::int64_t i = first; i < next; ++i) {
        Buffer& b = ring[static_cast<std::size_t>(i) % kRing];
        fill(b, i);
        std::memcpy(out.data(), b.values.data(), sizeof out);
        benchmark::DoNotOptimize(out);
      }
      continue;
    }
    std::atomic<std::int64_t> released{first};
    std::thread writer([&] {
      for (std::int64_t i = first; i < next; ++i) {
        Buffer& b = ring[static_cast<std::size_t>(i) % kRing];
        while (i - released.load(std::memory_order_acquire) >= static_cast<std::int64_t>(kRing)) {
        }
        fill(b, i);
        b.sequence.store(i, std::memory_order_release);
      }
    });
    for (std::int64_t i = first; i < next; ++i) {
      Buffer& b = ring[static_cast<std::size_t>(i) % kRing];
      while (b.sequence.load(std::memory_order_acquire) != i) {
      }
      std::memcpy(out.data(), b.values.data(), sizeof out);
      benchmark::DoNotOptimize(out);
      released.store(i + 1, std::memory_order_release);
    }
    writer.join();
  }
  state.SetBytesProcessed(state.iterations() * kPerIteration * static_cast<std::int64_t>(sizeof out));
  state.counters["ns_per_buffer"] =
      benchmark::Counter(static_cast<double>(kPerIteration) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_kernel_portable(benchmark::State& s) {
  kernel(s, KernelKind::kPortable, Inputs::kNormal);
}
void BM_kernel_portable_denormal(benchmark::State& s) {
  kernel(s, KernelKind::kPortable, Inputs::kDenormal);
}
void BM_kernel_avx2(benchmark::State& s) {
  kernel(s, KernelKind::kAvx2Fma, Inputs::kNormal);
}
void BM_kernel_avx2_denormal(benchmark::State& s) {
  kernel(s, KernelKind::kAvx2Fma, Inputs::kDenormal);
}
void BM_kernel_avx512(benchmark::State& s) {
  kernel(s, KernelKind::kAvx512, Inputs::kNormal);
}
void BM_kernel_avx512_denormal(benchmark::State& s) {
  kernel(s, KernelKind::kAvx512, Inputs::kDenormal);
}
void BM_kernel_avx2_some_denormal(benchmark::State& s) {
  kernel(s, KernelKind::kAvx2Fma, Inputs::kSomeDenormal);
}
void BM_kernel_avx512_some_denormal(benchmark::State& s) {
  kernel(s, KernelKind::kAvx512, Inputs::kSomeDenormal);
}
void BM_units(benchmark::State& s) {
  units(s, false);
}
void BM_units_denormal(benchmark::State& s) {
  units(s, true);
}

// The data path of `gen matmul --m 2048 --k 2048 --n 2048` on v5e without
// the emulator around it (no issue, no timing, no DMAs): one column block of
// 512 outputs (a quarter of the run) per benchmark iteration: 16 k-blocks,
// each 16 weight pushes and a latch per unit, then 128 iterations of 2 LHS
// vregs x 4 units of 8x128x128 multiplies, each result popped 17 iterations
// later and added into a 4 MiB f32 accumulator (a load, an add, a store: the
// program's vld, vadd.f32, vst). Arg 0: one thread does everything; 1: the
// units defer their multiplies to a host worker and this thread pops and
// adds (the emulator today: every 4 KiB result crosses cores); 2: two
// threads each own two units end to end (their multiplies, pops and adds:
// no result crosses cores), the work a split of the data path by units or
// sublanes would give each host core. A 2048^3 run is 4 iterations.
void BM_data_path(benchmark::State& state) {
  const auto mode = state.range(0);
  constexpr std::size_t kBlocks = 16;    // k-blocks of 128
  constexpr std::size_t kPairs = 128;    // row-pair iterations per k-block
  constexpr std::size_t kLagPairs = 17;  // pops trail multiplies by 17 iterations
  std::mt19937 rng(1);
  const auto lhs = lhs_tiles(rng, false);  // 64 distinct LHS vregs, reused
  std::vector<vpu::Vreg> pushes(16);
  for (auto& v : pushes) {
    for (std::size_t i = 0; i < v.words.size(); ++i) v.set_f32(i, input(rng, false));
  }
  std::vector<vpu::Vreg> acc(kPairs * 8);  // [pair][half][unit]
  // One thread's share: units [first, first + count), with their pops and adds.
  const auto run_units = [&](std::vector<mxu::Mxu>& units, std::size_t first) {
    std::unique_ptr<vpu::Vreg> out = std::make_unique<vpu::Vreg>();
    vpu::Vreg loaded;
    const auto pop_and_add = [&](std::size_t pair) {
      for (std::size_t h = 0; h < 2; ++h) {
        for (std::size_t u = 0; u < units.size(); ++u) {
          units[u].pop_into(out);
          vpu::Vreg& slot = acc[pair * 8 + h * 4 + first + u];
          std::memcpy(&loaded, &slot, sizeof loaded);  // vld
          vpu::Vreg sum;
          for (std::size_t i = 0; i < sum.words.size(); ++i) sum.set_f32(i, loaded.f32(i) + out->f32(i));  // vadd
          std::memcpy(&slot, &sum, sizeof sum);                                                            // vst
        }
      }
    };
    std::size_t issued = 0;  // iterations multiplied, over every k-block
    std::size_t popped = 0;
    for (std::size_t kb = 0; kb < kBlocks; ++kb) {
      for (auto& m : units) {
        for (const auto& p : pushes) (void)m.push_weights(p, false, 0);
      }
      for (std::size_t t = 0; t < kPairs; ++t, ++issued) {
        for (std::size_t h = 0; h < 2; ++h) {
          for (auto& m : units) (void)m.matmul(lhs[(t * 2 + h) % lhs.size()], nullptr, t == 0 && h == 0, 0);
        }
        if (issued >= kLagPairs) pop_and_add(popped++ % kPairs);
      }
    }
    while (popped < issued) pop_and_add(popped++ % kPairs);
  };
  const auto make_units = [](std::size_t n) {
    std::vector<mxu::Mxu> units;
    units.reserve(n);
    for (std::size_t u = 0; u < n; ++u) units.emplace_back(kLanes, 64, mxu::MxuTiming{8, 1, 0, 264});
    return units;
  };
  set_host_threads(mode == 1 ? 2 : 1);
  for (auto _ : state) {
    if (mode == 2) {
      std::thread other([&] {
        auto units = make_units(2);
        run_units(units, 2);
      });
      auto units = make_units(2);
      run_units(units, 0);
      other.join();
    } else {
      auto units = make_units(4);
      run_units(units, 0);
    }
    benchmark::DoNotOptimize(acc.data());
  }
  state.counters["macs_per_s"] =
      benchmark::Counter(kTileMacs * 8 * kPairs * kBlocks, benchmark::Counter::kIsIterationInvariantRate);
  set_host_threads(0);
}

const auto kHostThreads = static_cast<std::int64_t>(std::max(2U, std::thread::hardware_concurrency()));

BENCHMARK(BM_kernel_portable)->UseRealTime();
BENCHMARK(BM_kernel_portable_denormal)->UseRealTime();
BENCHMARK(BM_kernel_avx2)->UseRealTime();
BENCHMARK(BM_kernel_avx2_denormal)->UseRealTime();
BENCHMARK(BM_kernel_avx512)->UseRealTime();
BENCHMARK(BM_kernel_avx512_denormal)->UseRealTime();
BENCHMARK(BM_kernel_avx2_some_denormal)->UseRealTime();
BENCHMARK(BM_kernel_avx512_some_denormal)->UseRealTime();
// Arg: host threads (1 = the calling thread only).
BENCHMARK(BM_units)->Arg(1)->Arg(kHostThreads)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_units_denormal)->Arg(1)->Arg(kHostThreads)->Unit(benchmark::kMillisecond)->UseRealTime();
// Arg: 1 = one thread writes and reads; 2 = a writer thread hands buffers to this one.
BENCHMARK(BM_handoff)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
// Arg: 0 one thread, 1 today's split (multiplies on a worker), 2 two threads owning two units each.
BENCHMARK(BM_data_path)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
