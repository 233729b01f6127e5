// Seed maker for fuzz/run.sh: assembles LLO files into .tpub images (seeds
// for fuzz_image) and writes a libFuzzer dictionary for fuzz_assembler: every
// mnemonic of the instruction table and the words of the operand syntax.
// With --chip: seeds for fuzz_chip_config (every preset's resolved JSON dump,
// and one with --set lines after a NUL) and its dictionary (every parameter
// path and its parts, the keys of a chip file, units).
//
// Usage: fuzz_make_seeds IMAGE_DIR DICT_FILE [LLO_FILE...]
//        fuzz_make_seeds --chip SEED_DIR DICT_FILE
// A file that does not assemble is reported on stderr and skipped.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "common/chip_config.hpp"
#include "common/presets.hpp"
#include "isa/assembler.hpp"
#include "isa/image.hpp"
#include "isa/op_table.hpp"

namespace {

// A dictionary entry: the text in double quotes, with \\, \" and \xNN escapes.
std::string dict_entry(std::string_view word) {
  std::string out = "\"";
  for (const char c : word) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      out += fmt::format("\\x{:02X}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

constexpr std::string_view kSyntaxWords[] = {
    ";;",
    "{",
    "}",
    ">",
    "/*",
    "*/",
    "//",
    "%v",
    "%vm",
    "%s",
    "%p",
    "%",
    "_v",
    "_s",
    "$0x",
    "$",
    "+ $0x",
    "- $0x",
    "[#allocation",
    "#allocation",
    "_spill",
    "[vmem:[",
    "[smem:[",
    "ss:$",
    "sm:$0x",
    "sm:%s",
    "[thread:$0]",
    "[resolvable:$true]",
    "[resolvable:$false]",
    "(narrow)",
    "(short)",
    "(%p",
    "(!%p",
    "target bundleno = ",
    "target = ",
    ", region = ",
    "[shape: ",
    ", index: ",
    ", kind: input",
    ", kind: output",
    ", shape index: {}",
    "[1/16]",
    "/*name=*/",
    ".const ",
    ".include \"",
    "nan",
    "-inf",
    "0.5",
    "-1",
    "0xffffffff",
    "4294967296",
    " LB: ",
    " LH: ",
    " LE: ",
    " PB: ",
    " PF: ",
    " CT: ",
    "= control target key start\n",
    "= control target key end\n",
    "space=vmem",
    "space=smem",
    "space=sflag",
    "space=hbm",
    "shape = '",
    "size = 0x",
    "offset = 0x",
    "tag = '",
    "loc(\"f.py\":1:2 to :3)",
};

constexpr std::string_view kChipWords[] = {
    "\"name\"",
    "\"description\"",
    "\"base\"",
    "\"params\"",
    "\"$comment\"",
    "\"value\"",
    "\"unit\"",
    "\"note\"",
    "\"source\"",
    "\"derived\"",
    "\"assumed\"",
    "\"user\"",
    "\"v5e\"",
    "\"v9\"",
    "\"edu\"",
    "Hz",
    "GHz",
    "B",
    "KiB",
    "MiB",
    "GiB",
    "TiB",
    "GB",
    "B/s",
    "GB/s",
    "TB/s",
    "ns",
    "us",
    "ms",
    "cycles",
    "1e308",
    "-1",
    "0",
    "18446744073709551616",
    "16x16",
    "16x20x28",
    "\\u0000",
    "=",
    std::string_view("\0", 1),
};

int write_chip_seeds(const std::filesystem::path& seed_dir, const char* dict_path) {
  std::filesystem::create_directories(seed_dir);
  std::ofstream dict(dict_path);
  dict << "# libFuzzer dictionary for fuzz_chip_config, written by fuzz_make_seeds from the parameter table\n";
  for (const tpuemu::ParamSpec& p : tpuemu::chip_params()) {
    dict << dict_entry(p.path) << '\n' << dict_entry(p.path + "=") << '\n';
    std::string_view rest = p.path;
    while (!rest.empty()) {
      const std::size_t dot = std::min(rest.find('.'), rest.size());
      dict << dict_entry(fmt::format("\"{}\"", rest.substr(0, dot))) << '\n';
      rest.remove_prefix(std::min(dot + 1, rest.size()));
    }
  }
  for (const std::string_view word : kChipWords) dict << dict_entry(word) << '\n';
  if (!dict) {
    std::fprintf(stderr, "fuzz_make_seeds: cannot write %s\n", dict_path);
    return 1;
  }
  int written = 0;
  for (const std::string& name : tpuemu::preset_names()) {
    tpuemu::ChipRequest request;
    request.preset = name;
    std::ofstream(seed_dir / fmt::format("dump-{}.json", name)) << tpuemu::chip_config_json(tpuemu::load_chip(request));
    ++written;
  }
  const std::string with_sets = std::string(R"({"base": "v5e", "name": "set", "mxu": {"count": 2}})") + '\0' +
                                "hbm.bandwidth=1TB/s\nvpu.lanes=128\nici.max_slice=8x8\n";
  std::ofstream(seed_dir / "override-with-sets.bin", std::ios::binary) << with_sets;
  std::printf("fuzz_make_seeds: %d chip seeds in %s\n", written + 1, seed_dir.string().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string_view(argv[1]) == "--chip") return write_chip_seeds(argv[2], argv[3]);
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: fuzz_make_seeds IMAGE_DIR DICT_FILE [LLO_FILE...]\n"
                 "       fuzz_make_seeds --chip SEED_DIR DICT_FILE\n");
    return 2;
  }
  const std::filesystem::path image_dir(argv[1]);
  std::filesystem::create_directories(image_dir);

  std::ofstream dict(argv[2]);
  dict << "# libFuzzer dictionary for fuzz_assembler, written by fuzz_make_seeds from isa/ops.def\n";
  for (const auto& info : tpuemu::isa::op_table()) dict << dict_entry(tpuemu::isa::mnemonic_text(info.id, 0)) << '\n';
  for (const std::string_view word : kSyntaxWords) dict << dict_entry(word) << '\n';
  if (!dict) {
    std::fprintf(stderr, "fuzz_make_seeds: cannot write %s\n", argv[2]);
    return 1;
  }

  int written = 0;
  for (int i = 3; i < argc; ++i) {
    try {
      const tpuemu::isa::Program program = tpuemu::isa::assemble_file(argv[i]);
      const std::string stem = std::filesystem::path(argv[i]).stem().string();
      tpuemu::isa::write_image((image_dir / fmt::format("{:03}-{}.tpub", i - 3, stem)).string(), program);
      ++written;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz_make_seeds: skipping %s:\n%s\n", argv[i], e.what());
    }
  }
  std::printf("fuzz_make_seeds: %d images in %s\n", written, image_dir.string().c_str());
  return 0;
}
