// LLO text <-> Program: the assembler (real final_bundles dumps as they stand,
// and hand-written programs per ISA.md section 3) and the disassembler, which
// prints the canonical final_bundles form: assemble(disassemble(p)) == p.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "isa/program.hpp"

namespace tpuemu::isa {

// One problem in a source file, with the line it is on for a caret display.
struct Diagnostic {
  std::string file;
  std::uint32_t line = 0;    // 1-based; 0 = about the whole file (it cannot be read)
  std::uint32_t column = 0;  // 1-based
  std::string message;
  std::string line_text;
};
// "file:line:col: error: message\n    <line>\n    <caret>", or "file: error: message" for line 0
std::string format_diagnostic(const Diagnostic& d);

// Thrown by the assembler with every problem found (at most 20); what() holds
// them formatted.
class AsmError : public std::runtime_error {
 public:
  explicit AsmError(std::vector<Diagnostic> diagnostics);
  [[nodiscard]] const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

struct AssembleOptions {
  std::vector<std::string> include_dirs;  // searched after the including file's folder
};

// Assembles LLO text. `file_name` names the source in diagnostics and
// SourceLocs, and is the base for relative `.include`s.
Program assemble(std::string_view text, const std::string& file_name, const AssembleOptions& options = {});
// Reads and assembles a file; an unreadable file is an AsmError too.
Program assemble_file(const std::string& path, const AssembleOptions& options = {});

// The allocation table of a post-delay-converter dump (its `#allocationN [...]`
// lines; everything else is ignored). final_bundles dumps print no allocations.
std::vector<Allocation> parse_allocation_table(std::string_view text, const std::string& file_name);

// Canonical final_bundles text of a whole program (with the control-target key
// block and allocation declarations as comments-free `#allocation` lines).
std::string disassemble(const Program& program);
// One op / one operand as printed inside a bundle.
std::string format_op(const Op& op);
std::string format_operand(const Operand& operand);

}  // namespace tpuemu::isa
