#include "tools/program_loader.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/log.hpp"
#include "isa/assembler.hpp"
#include "isa/image.hpp"

namespace tpuemu::cli {
namespace {

namespace fs = std::filesystem;

// "<id>-<kernel>-74-final_bundles.txt" -> the "<id>-<kernel>-NN-post-delay-converter.txt" beside it.
std::string sibling_allocation_file(const std::string& path) {
  const fs::path p(path);
  const std::string name = p.filename().string();
  const std::string suffix = "-final_bundles.txt";
  if (!name.ends_with(suffix)) return {};
  const std::string stem = name.substr(0, name.size() - suffix.size());  // <id>-<kernel>-74
  const auto dash = stem.rfind('-');
  if (dash == std::string::npos) return {};
  const std::string prefix = stem.substr(0, dash + 1);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(p.parent_path().empty() ? fs::path(".") : p.parent_path(), ec)) {
    const std::string candidate = entry.path().filename().string();
    if (candidate.starts_with(prefix) && candidate.ends_with("-post-delay-converter.txt") &&
        candidate.find('-', prefix.size()) == candidate.size() - std::string("-post-delay-converter.txt").size()) {
      return entry.path().string();
    }
  }
  return {};
}

}  // namespace

isa::Program load_program(const std::string& path) {
  if (path.ends_with(".tpub")) return isa::read_image(path);
  isa::Program program = isa::assemble_file(path);
  if (program.allocations.empty()) {
    const std::string table = sibling_allocation_file(path);
    if (!table.empty()) {
      std::ifstream in(table, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      program.allocations = isa::parse_allocation_table(ss.str(), table);
      TPUEMU_LOG_INFO("allocations of {} read from {}", path, table);
    }
  }
  return program;
}

}  // namespace tpuemu::cli
