#include "api/program_loader.hpp"

#include <filesystem>

#include "common/input_file.hpp"
#include "common/log.hpp"
#include "isa/assembler.hpp"
#include "isa/image.hpp"

namespace tpuemu::api {
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

void refuse_empty_program(const isa::Program& program, const std::string& file) {
  if (!program.bundles.empty()) return;
  isa::Diagnostic d;
  d.file = file;
  d.line = 1;
  d.column = 1;
  d.message = "no bundles: the file holds no program (it is empty, or only comments, labels and directives)";
  throw isa::AsmError({d});
}

isa::Program load_program(const std::string& path) {
  isa::Program program = path.ends_with(".tpub") ? isa::read_image(path) : isa::assemble_file(path);
  refuse_empty_program(program, path);
  TPUEMU_LOG_INFO("program {}: {} bundles, {} allocations", path, program.bundles.size(), program.allocations.size());
  if (program.allocations.empty()) {
    const std::string table = sibling_allocation_file(path);
    if (!table.empty()) {
      program.allocations = isa::parse_allocation_table(read_input_file(table, kMaxProgramTextBytes), table);
      // Diagnostics of an allocation name the table's file.
      const auto table_file = static_cast<std::uint32_t>(program.files.size());
      program.files.push_back(table);
      for (auto& a : program.allocations) a.source.file = table_file;
      TPUEMU_LOG_INFO("allocations of {} read from {}", path, table);
    }
  }
  return program;
}

}  // namespace tpuemu::api
