// The generated ISA reference page (docs/ISA.md), derived from the
// instruction table. CI fails if the committed page differs from this output.
#pragma once

#include <string>

namespace tpuemu::isa {

std::string isa_reference_markdown();

}  // namespace tpuemu::isa
