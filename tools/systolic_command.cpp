#include "tools/systolic_command.hpp"

#include <fmt/format.h>

#include <random>

#include "api/output_files.hpp"
#include "common/numerics.hpp"
#include "mxu/rtl/rtl_mxu.hpp"
#include "mxu/small_tile.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {

using api::check_writable;

int systolic_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  options.add_options()("n", whole_value(1, 1024)->default_value(8), "array size N (a size the RTL was built for)")(
      "rows", whole_value(1)->default_value(8), "LHS rows pushed through the array")(
      "seed", whole_value(0, UINT32_MAX)->default_value(1), "seed of the random bf16 values (small integers)")(
      "vcd", po::value<std::string>(), "write the array's waveform (every PE register) to this VCD file");
  po::positional_options_description positional;
  bool help = false;
  const auto vm = parse_options("systolic", "[--n 8] [--rows 8] [--vcd systolic.vcd]", args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  const auto n = static_cast<std::uint32_t>((*vm)["n"].as<std::uint64_t>());
  const std::uint64_t rows = (*vm)["rows"].as<std::uint64_t>();
  std::string vcd;
  const auto sizes = mxu::rtl::built_sizes();
  if (std::find(sizes.begin(), sizes.end(), n) == sizes.end()) {
    fmt::print(stderr, "tpuemu systolic: the RTL array was built for N = {} (CMake TPUEMU_MXU_RTL_SIZES), not {}\n",
               fmt::join(sizes, ", "), n);
    return kExitBadInput;
  }
  if (rows == 0 || rows > 4096) {
    fmt::print(stderr, "tpuemu systolic: --rows must be 1..4096\n");
    return kExitBadInput;
  }
  if (vm->count("vcd") != 0U) {
    vcd = (*vm)["vcd"].as<std::string>();
    try {
      check_writable("--vcd", vcd);
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "tpuemu systolic: {}\n", e.what());
      return kExitBadInput;
    }
  }
  // Small integers keep every product and sum exact, so a student can check a result by hand.
  std::mt19937 rng(static_cast<std::uint32_t>((*vm)["seed"].as<std::uint64_t>()));
  std::uniform_int_distribution<int> value(-4, 4);
  std::vector<std::uint16_t> weights(std::size_t{n} * n);
  std::vector<std::uint16_t> lhs(rows * n);
  for (auto& w : weights) w = f32_to_bf16_bits(static_cast<float>(value(rng)));
  for (auto& a : lhs) a = f32_to_bf16_bits(static_cast<float>(value(rng)));

  mxu::rtl::TileRun run;
  {
    mxu::rtl::RtlMxu rtl(n, vcd);
    run = rtl.run_tile(weights, lhs);
  }
  const std::vector<std::uint32_t> expected = mxu::small_tile_reference(n, weights, lhs);
  std::uint64_t mismatches = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    std::uint32_t got = 0;
    std::memcpy(&got, &run.results[i], 4);
    mismatches += got != expected[i] ? 1 : 0;
  }
  fmt::print("tpuemu systolic: {} rows x {} through a {}x{} weight-stationary systolic array (RTL, verilated)\n", rows,
             n, n, n);
  fmt::print("weights   {} cycles (one row per cycle, K row {} first)\n", run.weight_cycles, n - 1);
  fmt::print("tile      {} cycles from the first push to the last pop = rows + 2N = {} + {}\n", run.cycles, rows,
             2 * n);
  fmt::print("row 0     ");
  for (std::uint32_t c = 0; c < n && c < 16; ++c) fmt::print("{} ", run.results[c]);
  fmt::print("\n");
  if (!vcd.empty()) fmt::print("waveform  {} (open with gtkwave; see docs/teaching.md)\n", vcd);
  if (mismatches != 0 || run.cycles != mxu::rtl::tile_cycles(n, rows)) {
    fmt::print("check     FAIL: {} results differ from the C++ MXU; {} cycles (expected {})\n", mismatches, run.cycles,
               mxu::rtl::tile_cycles(n, rows));
    return kExitFailure;
  }
  fmt::print("check     PASS: all {} results equal the C++ MXU's bit for bit\n", expected.size());
  return kExitOk;
}

}  // namespace tpuemu::cli
