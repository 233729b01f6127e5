#include "tools/gen_command.hpp"

#include <fmt/format.h>

#include "api/output_files.hpp"
#include "common/npy.hpp"
#include "common/numerics.hpp"
#include "programs/generators.hpp"
#include "programs/reference.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {

using api::check_writable;
using api::write_text_file;

int gen_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  options.add_options()("kind", po::value<std::string>(), "matmul or add")(
      "m", whole_value(1), "matmul: rows of A and C")("k", whole_value(1), "matmul: columns of A, rows of B")(
      "n", whole_value(1), "matmul: columns of B and C; add: elements")(
      "dtype", po::value<std::string>()->default_value("bf16"),
      "matmul: input dtype, bf16 or f32; f32 only (and the default) on MXUs narrower than 128")(
      "out-dtype", po::value<std::string>()->default_value("f32"),
      "matmul: C's dtype, f32 or bf16 (the f32 sums rounded to nearest even as C is stored; M a multiple of 16)")(
      "no-double-buffer", "matmul: fetch each k-block only when it is needed (no DMA/compute overlap)")(
      "split-cores",
      "matmul: split C over the chip's TensorCores (megacore, e.g. v5p: 2), with barriers between the cores; run it "
      "on a pod (tpuemu run --topology 1)")(
      "row-blocks", whole_value(1),
      "matmul: compute C in R blocks of M/R rows so that a block's C is stored while the next computes (one column "
      "block only: N <= the MXU count x 128; 1 = none)")("chunk", bytes_value(1)->default_value(1 << 20),
                                                         "add: bytes per DMA chunk (65536, 64K, 1M)")(
      "inputs", po::value<std::string>(),
      "matmul: also write PREFIX.a.npy and PREFIX.b.npy (pseudo-random bf16 values in [-1, 1), seeds 7 and 8, as "
      "float32) and PREFIX.expected.npy (C as the program computes it, bit for bit, as float32 also for a bf16 C, as "
      "run --out writes it; check it with run --expect)")("output,o", po::value<std::string>()->default_value("-"),
                                                          "output file (default: stdout)");
  po::positional_options_description positional;
  positional.add("kind", 1);
  bool help = false;
  const auto vm = parse_options(
      "gen",
      "matmul --m M --k K --n N [--dtype bf16|f32] [--out-dtype f32|bf16] [--no-double-buffer] [--split-cores] "
      "[--row-blocks R] [--inputs PREFIX] [-o F] | add --n N [-o F]",
      args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  const std::string kind = vm->count("kind") != 0U ? (*vm)["kind"].as<std::string>() : "";
  std::string text;
  const std::string out = (*vm)["output"].as<std::string>();
  try {
    if (out != "-") check_writable("--output", out);
    if (vm->count("inputs") != 0U) {
      for (const char* suffix : {".a.npy", ".b.npy", ".expected.npy"}) {
        check_writable("--inputs", (*vm)["inputs"].as<std::string>() + suffix);
      }
    }
    const ChipConfig chip = load_chip(chip_request(*vm));
    auto need = [&](const char* name) -> std::uint64_t {
      if (vm->count(name) == 0U) throw std::invalid_argument(fmt::format("gen {}: --{} is required", kind, name));
      return (*vm)[name].as<std::uint64_t>();
    };
    if (kind == "matmul") {
      programs::MatmulSpec spec;
      spec.m = need("m");
      spec.k = need("k");
      spec.n = need("n");
      spec.dtype = (*vm)["dtype"].as<std::string>();
      // Narrow MXUs (edu) take f32 inputs only: that is their default.
      if (chip.mxu.size < 128 && (*vm)["dtype"].defaulted()) spec.dtype = "f32";
      spec.out_dtype = (*vm)["out-dtype"].as<std::string>();
      spec.double_buffer = vm->count("no-double-buffer") == 0U;
      if (vm->count("split-cores") != 0U) spec.split_cores = chip.tensorcores_per_chip;
      if (vm->count("row-blocks") != 0U) spec.row_blocks = (*vm)["row-blocks"].as<std::uint64_t>();
      text = programs::generate_matmul(spec, chip);
      if (vm->count("inputs") != 0U) {
        const std::string prefix = (*vm)["inputs"].as<std::string>();
        const auto a = programs::random_bf16_values(spec.m * spec.k, 7);
        const auto b = programs::random_bf16_values(spec.k * spec.n, 8);
        auto c = programs::matmul_reference(a, b, spec.m, spec.k, spec.n, std::min<std::uint64_t>(128, chip.mxu.size));
        if (spec.out_dtype == "bf16") {
          for (float& v : c) v = bf16_round(v);
        }
        write_npy(prefix + ".a.npy", make_npy(NpyDtype::kFloat32, {spec.m, spec.k}, a.data()));
        write_npy(prefix + ".b.npy", make_npy(NpyDtype::kFloat32, {spec.k, spec.n}, b.data()));
        write_npy(prefix + ".expected.npy", make_npy(NpyDtype::kFloat32, {spec.m, spec.n}, c.data()));
      }
    } else if (kind == "add") {
      programs::AddSpec spec;
      spec.n = need("n");
      spec.chunk_bytes = (*vm)["chunk"].as<std::uint64_t>();
      text = programs::generate_add(spec, chip);
    } else {
      fmt::print(stderr, "tpuemu gen: expected `matmul` or `add`, got '{}'\n", kind);
      return kExitBadInput;
    }
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu gen: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "tpuemu gen: {}\n", e.what());
    return kExitBadInput;
  } catch (const NpyError& e) {
    fmt::print(stderr, "tpuemu gen: --inputs: {}\n", e.what());
    return kExitBadInput;
  }
  if (out == "-") {
    fmt::print("{}", text);
    return kExitOk;
  }
  if (auto error = write_text_file("--output", out, text)) {
    fmt::print(stderr, "tpuemu gen: {}\n", *error);
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace tpuemu::cli
