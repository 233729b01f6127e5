// The semantics of every op of the instruction table: one function per row of
// isa/ops.def, named exec_<Name> (the table's "pointer to semantics"). A row
// without a definition is a link error, so the table and the emulator cannot
// drift apart. Ops whose effect tpuemu does not model yet fault explicitly.
#pragma once

#include "chip/exec_program.hpp"

namespace tpuemu::chip {

#define TPUEMU_GROUP(title)
#define TPUEMU_OP(name, mnemonic, syntax, slot, latency, origin, summary) void exec_##name(Core&, const ExecOp&);
#include "isa/ops.def"
#undef TPUEMU_OP
#undef TPUEMU_GROUP

// exec_<Name> of an op.
ExecFn semantics_of(isa::OpId id);
// The readiness check of an op beyond its source registers, or null.
ReadyFn readiness_of(isa::OpId id);

}  // namespace tpuemu::chip
