// Runs a generated f32 add on one emulated v5e through the installed
// libraries and checks c = a + b bit for bit; prints the emulated cycles.
// A program that simulates starts where SystemC expects it: libsystemc.so's
// main() calls sc_main() (one simulation per process: chip/run.hpp).
#include <cstdio>
#include <cstring>
#include <vector>

#include "chip/host_io.hpp"
#include "chip/run.hpp"
#include "common/presets.hpp"
#include "isa/assembler.hpp"
#include "programs/generators.hpp"

int sc_main(int /*argc*/, char* /*argv*/[]) {
  using namespace tpuemu;
  chip::RunRequest request;
  ChipRequest chip;
  chip.preset = "v5e";
  request.chip = load_chip(chip);
  programs::AddSpec spec;
  spec.n = 100000;
  spec.chunk_bytes = 64 * 1024;
  const isa::Program program = isa::assemble(programs::generate_add(spec, request.chip), "add.llo");
  request.program = &program;
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
  request.inputs[0] = npy(a);
  request.inputs[1] = npy(b);
  const chip::RunResult result = chip::run_program(request);
  if (result.fault) {
    std::printf("fault: %s\n", result.fault->c_str());
    return 1;
  }
  const NpyArray c = chip::from_device(result.bindings.at(2), result.output_bytes.at(2), false);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < spec.n; ++i) {
    const float want = a[i] + b[i];
    wrong += std::memcmp(&c.as_f32()[i], &want, 4) != 0 ? 1 : 0;
  }
  std::printf("add of %zu floats on v5e: %llu cycles, %zu wrong\n", static_cast<std::size_t>(spec.n),
              static_cast<unsigned long long>(result.cycles), wrong);
  return wrong == 0 ? 0 : 1;
}
