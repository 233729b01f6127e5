#include "tools/demo_command.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <fstream>

#include "chip/fault.hpp"
#include "chip/host_io.hpp"
#include "chip/run.hpp"
#include "common/npy.hpp"
#include "isa/assembler.hpp"
#include "programs/generators.hpp"
#include "programs/reference.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"
#include "tools/run_report.hpp"

namespace tpuemu::cli {

int demo_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  options.add_options()("m", po::value<std::uint64_t>()->default_value(2048), "rows of A and C")(
      "k", po::value<std::uint64_t>()->default_value(2048), "columns of A, rows of B")(
      "n", po::value<std::uint64_t>()->default_value(2048), "columns of B and C")(
      "seed", po::value<std::uint32_t>()->default_value(1), "seed of the pseudo-random inputs")(
      "report", po::value<std::string>(), "write the run report as JSON");
  po::positional_options_description positional;
  bool help = false;
  const auto vm = parse_options("demo", "[--m M --k K --n N] [--chip v5e]", args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  const std::uint64_t m = (*vm)["m"].as<std::uint64_t>();
  const std::uint64_t k = (*vm)["k"].as<std::uint64_t>();
  const std::uint64_t n = (*vm)["n"].as<std::uint64_t>();
  const std::uint32_t seed = (*vm)["seed"].as<std::uint32_t>();

  chip::RunRequest request;
  isa::Program program;
  try {
    request.chip = load_chip(chip_request(*vm));
    programs::MatmulSpec spec;
    spec.m = m;
    spec.k = k;
    spec.n = n;
    program = isa::assemble(programs::generate_matmul(spec, request.chip), "demo_matmul.llo");
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu demo: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "tpuemu demo: {}\n", e.what());
    return kExitBadInput;
  }
  request.program = &program;
  const auto a = programs::random_bf16_values(m * k, seed);
  const auto b = programs::random_bf16_values(k * n, seed + 1);
  request.inputs[0] = make_npy(NpyDtype::kFloat32, {m, k}, a.data());
  request.inputs[1] = make_npy(NpyDtype::kFloat32, {k, n}, b.data());

  fmt::print("tpuemu demo: C[{},{}] = A[{},{}] @ B[{},{}], bf16 inputs, f32 output, on an emulated {}\n", m, n, m, k, k,
             n, request.chip.name);
  fmt::print("program: `tpuemu gen matmul --m {} --k {} --n {}` ({} bundles)\n\n", m, k, n, program.bundles.size());
  const auto start = std::chrono::steady_clock::now();
  Summary summary;
  summary.program = "demo matmul";
  summary.chip = &request.chip;
  try {
    summary.result = chip::run_program(request);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu demo: {}\n", e.what());
    return kExitBadInput;
  }
  const double host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (summary.result.fault) {
    fmt::print(stderr, "tpuemu demo: program fault: {}\n", *summary.result.fault);
    return kExitProgramFault;
  }
  compute_summary_roofline(summary);
  print_summary(summary);

  // Bit-exact check against the host reference (same accumulation order).
  const auto& binding = summary.result.bindings.at(2);
  const NpyArray c = chip::from_device(binding, summary.result.output_bytes.at(2), false);
  const auto expected = programs::matmul_reference(a, b, m, k, n);
  const auto got = c.as_f32();
  std::uint64_t mismatches = 0;
  std::uint64_t first = 0;
  for (std::uint64_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&got[i], &expected[i], 4) != 0) {
      if (mismatches++ == 0) first = i;
    }
  }
  fmt::print("\nhost      {:.2f} s to emulate {} bundles ({:.3g} bundles/s)\n", host_seconds,
             summary.result.cores.front().bundles,
             static_cast<double>(summary.result.cores.front().bundles) / host_seconds);
  if (vm->count("report") != 0U) {
    std::ofstream out((*vm)["report"].as<std::string>());
    out << report_json(summary).dump(2) << "\n";
  }
  if (mismatches != 0) {
    fmt::print("check     FAIL: {} of {} elements differ from the host reference; first C[{},{}] = {} (expected {})\n",
               mismatches, expected.size(), first / n, first % n, got[first], expected[first]);
    return kExitFailure;
  }
  fmt::print("check     PASS: C equals the host reference bit for bit ({} elements)\n", expected.size());
  return kExitOk;
}

}  // namespace tpuemu::cli
