// Runs a generated f32 add on one emulated v5e through the installed
// libraries' run API (api/run.hpp) and checks c = a + b bit for bit; prints
// the emulated cycles. Then runs it again (the API forks a child for every
// run after a process's first) and checks both runs agree.
// A program that simulates starts where SystemC expects it: libsystemc.so's
// main() calls sc_main().
#include <cstdio>
#include <cstring>
#include <vector>

#include "api/run.hpp"
#include "common/presets.hpp"
#include "programs/generators.hpp"

int sc_main(int /*argc*/, char* /*argv*/[]) {
  using namespace tpuemu;
  api::Job job;
  job.chip.preset = "v5e";
  programs::AddSpec spec;
  spec.n = 100000;
  spec.chunk_bytes = 64 * 1024;
  job.steps.push_back({api::assemble(programs::generate_add(spec, load_chip(job.chip)), "add.llo"), "add.llo", {}});
  std::vector<float> a(spec.n), b(spec.n);
  for (std::size_t i = 0; i < spec.n; ++i) {
    a[i] = static_cast<float>(i) * 0.25F;
    b[i] = 1.0F / static_cast<float>(i + 1);
  }
  auto npy = [&](const std::vector<float>& v) {
    NpyArray arr;
    arr.dtype = NpyDtype::kFloat32;
    arr.shape = {spec.n};
    arr.data.resize(v.size() * 4);
    std::memcpy(arr.data.data(), v.data(), arr.data.size());
    return arr;
  };
  job.inputs["0"].per_chip = {npy(a)};
  job.inputs["1"].per_chip = {npy(b)};
  try {
    const api::Result first = api::run(job);  // in this process
    first.throw_if_fault();
    const api::Result second = api::run(job);  // in a child process
    const NpyArray c = first.output("2");
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < spec.n; ++i) {
      const float want = a[i] + b[i];
      wrong += std::memcmp(&c.as_f32()[i], &want, 4) != 0 ? 1 : 0;
    }
    const bool same = second.cycles == first.cycles && second.output("2").data == c.data && second.report == first.report;
    std::printf("add of %zu floats on v5e: %llu cycles, %zu wrong, second run %s\n", static_cast<std::size_t>(spec.n),
                static_cast<unsigned long long>(first.cycles), wrong, same ? "identical" : "DIFFERENT");
    return wrong == 0 && same ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
