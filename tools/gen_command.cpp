#include "tools/gen_command.hpp"

#include <fmt/format.h>

#include <fstream>

#include "programs/generators.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {

int gen_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  options.add_options()("kind", po::value<std::string>(), "matmul or add")("m", po::value<std::uint64_t>(),
                                                                           "matmul: rows of A and C")(
      "k", po::value<std::uint64_t>(), "matmul: columns of A, rows of B")("n", po::value<std::uint64_t>(),
                                                                          "matmul: columns of B and C; add: elements")(
      "dtype", po::value<std::string>()->default_value("bf16"), "matmul: input dtype, bf16 or f32 (C is f32)")(
      "no-double-buffer", "matmul: fetch each k-block only when it is needed (no DMA/compute overlap)")(
      "chunk", po::value<std::uint64_t>()->default_value(1 << 20), "add: bytes per DMA chunk")(
      "output,o", po::value<std::string>()->default_value("-"), "output file (default: stdout)");
  po::positional_options_description positional;
  positional.add("kind", 1);
  bool help = false;
  const auto vm =
      parse_options("gen", "matmul --m M --k K --n N [--dtype bf16|f32] [--no-double-buffer] [-o F] | add --n N [-o F]",
                    args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  const std::string kind = vm->count("kind") != 0U ? (*vm)["kind"].as<std::string>() : "";
  std::string text;
  try {
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
      spec.double_buffer = vm->count("no-double-buffer") == 0U;
      text = programs::generate_matmul(spec, chip);
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
  }
  const std::string out = (*vm)["output"].as<std::string>();
  if (out == "-") {
    fmt::print("{}", text);
    return kExitOk;
  }
  std::ofstream file(out);
  file << text;
  file.close();
  if (!file) {
    fmt::print(stderr, "tpuemu gen: cannot write '{}'\n", out);
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace tpuemu::cli
