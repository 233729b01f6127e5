// Seed maker for fuzz/run.sh: assembles LLO files into .tpub images (seeds
// for fuzz_image) and writes a libFuzzer dictionary for fuzz_assembler: every
// mnemonic of the instruction table and the words of the operand syntax.
//
// Usage: fuzz_make_seeds IMAGE_DIR DICT_FILE [LLO_FILE...]
// A file that does not assemble is reported on stderr and skipped.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fuzz_make_seeds IMAGE_DIR DICT_FILE [LLO_FILE...]\n");
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
