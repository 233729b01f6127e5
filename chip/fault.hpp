// Program faults: an emulated program did something the hardware would not
// allow (bad address, pop from an empty FIFO, deadlock, ...). The core adds
// chip, core, bundle and source line before it reaches the user.
#pragma once

#include <stdexcept>
#include <string>

namespace tpuemu::chip {

// Thrown by op semantics with what went wrong; the core catches it and
// rethrows a LocatedFault.
class ProgramFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A fault with its location: "chip 0 core 0 bundle 0x1c (prog.llo:12:3): message".
class LocatedFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The program cannot be loaded on this chip (unknown allocation, branch
// target that is not a bundle, operand binding missing, ...).
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tpuemu::chip
