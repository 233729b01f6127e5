// ISA subcommands: `tpuemu asm`, `disasm`, `check` and `isa-doc`.
#pragma once

#include <string>
#include <vector>

namespace tpuemu::cli {

int asm_command(const std::vector<std::string>& args);
int disasm_command(const std::vector<std::string>& args);
int check_command(const std::vector<std::string>& args);
int isa_doc_command(const std::vector<std::string>& args);

}  // namespace tpuemu::cli
