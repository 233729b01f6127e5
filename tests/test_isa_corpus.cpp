// Golden checks on the real v5e dumps in ../shared/llo: every final_bundles
// file assembles, disassembles and reassembles to the same program.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/presets.hpp"
#include "isa/assembler.hpp"
#include "isa/checker.hpp"

namespace fs = std::filesystem;
using namespace tpuemu::isa;

namespace {

const std::regex kBundleLine(R"(^\s*(0|0x[0-9a-f]+)\s+[A-Z]{0,2}\s*:)");
const std::regex kEmptyBundle(R"(^\s*(0|0x[0-9a-f]+)\s+[A-Z]{0,2}\s*:\s*>?\s*\{\})");

std::vector<fs::path> corpus_files(std::string_view suffix) {
  std::vector<fs::path> files;
  const fs::path root(TPUEMU_LLO_CORPUS);
  if (!fs::exists(root)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && entry.path().filename().string().ends_with(suffix)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("corpus: every final_bundles dump assembles and round-trips through the disassembler", "[isa][corpus]") {
  const auto files = corpus_files("-final_bundles.txt");
  if (files.empty()) {
    WARN("LLO corpus not found at " TPUEMU_LLO_CORPUS "; skipping");
    return;
  }
  std::size_t bundles = 0;
  std::size_t ops = 0;
  tpuemu::ChipRequest request;
  request.preset = "v5e";
  const tpuemu::ChipConfig v5e = tpuemu::load_chip(request);
  for (const auto& path : files) {
    INFO(path.string());
    Program p;
    REQUIRE_NOTHROW(p = assemble_file(path.string()));
    const std::string text = disassemble(p);
    Program again;
    REQUIRE_NOTHROW(again = assemble(text, "disassembled.llo"));
    CHECK(again == p);
    CHECK(disassemble(again) == text);
    // Independent count: bundle lines start with an address and a ':'.
    std::ifstream in(path);
    std::size_t bundle_lines = 0;
    std::size_t op_separators = 0;
    std::size_t empty_bundles = 0;
    for (std::string line; std::getline(in, line);) {
      if (std::regex_search(line, kBundleLine)) {
        ++bundle_lines;
        if (std::regex_search(line, kEmptyBundle)) ++empty_bundles;
      }
      for (std::size_t pos = line.find(";;"); pos != std::string::npos; pos = line.find(";;", pos + 2)) ++op_separators;
    }
    std::size_t file_ops = 0;
    for (const auto& b : p.bundles) file_ops += b.ops.size();
    CHECK(p.bundles.size() == bundle_lines);
    CHECK(file_ops == op_separators + bundle_lines - empty_bundles);
    // The v5e preset's slot capacities, units and registers hold every real v5e dump.
    const CheckResult check = check_program(p, v5e);
    for (const auto& d : check.violations) FAIL_CHECK(format_diagnostic(d));
    bundles += p.bundles.size();
    ops += file_ops;
  }
  WARN(files.size() << " dumps, " << bundles << " bundles, " << ops << " ops round-tripped");
}

TEST_CASE("corpus: every mnemonic counted in opcode_counts.tsv is in the instruction table", "[isa][corpus]") {
  std::ifstream in(fs::path(TPUEMU_LLO_CORPUS) / "opcode_counts.tsv");
  if (!in) {
    WARN("opcode_counts.tsv not found; skipping");
    return;
  }
  std::string line;
  std::getline(in, line);  // header
  std::size_t rows = 0;
  while (std::getline(in, line)) {
    const std::string mnemonic = line.substr(0, line.find('\t'));
    INFO(mnemonic);
    CHECK(find_mnemonic(mnemonic).has_value());
    ++rows;
  }
  CHECK(rows == 125);
}
