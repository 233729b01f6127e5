// Loading a program for the CLI: LLO text (.llo, or a dump's
// *-final_bundles.txt) or a program image (.tpub). A final_bundles dump prints
// no allocation table; its sibling post-delay-converter dump (same id and
// kernel) supplies it when present.
#pragma once

#include <string>

#include "isa/program.hpp"

namespace tpuemu::api {

// Throws isa::AsmError or isa::ImageError with the file named.
isa::Program load_program(const std::string& path);

// Throws isa::AsmError at `file`:1:1 when `program` has no bundles (an empty
// text, or only comments, labels and directives): nothing to run.
void refuse_empty_program(const isa::Program& program, const std::string& file);

}  // namespace tpuemu::api
