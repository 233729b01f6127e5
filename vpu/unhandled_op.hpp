// The one error every vpu entry point raises when handed an op it does not
// implement (a caller bug: the dispatcher routed the op to the wrong unit).
#pragma once

#include <stdexcept>
#include <string>

#include "isa/op_table.hpp"

namespace tpuemu::vpu {

// Throws std::invalid_argument("<function>: <mnemonic> is not <what>").
[[noreturn]] inline void throw_unhandled_op(const char* function, isa::OpId op, const char* what) {
  throw std::invalid_argument(std::string(function) + ": " + isa::mnemonic_text(op, 0) + " is not " + what);
}

}  // namespace tpuemu::vpu
