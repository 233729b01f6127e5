// The typed errors of the run API (api/run.hpp). Every error a run can end
// in is one of these; the CLI maps them to its exit codes, the Python module
// to its exceptions (AssemblyError, BadInput, ProgramFault, InternalError).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace tpuemu::api {

// Anything wrong with what the caller asked for, found before the run: an
// unknown preset, a bad override, a topology the chip cannot form, an input
// whose dtype or shape does not match its operand, a program that cannot run
// on the chip. CLI exit code 2.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// LLO text that does not assemble, or an image that does not decode; the
// message is the assembler's (every diagnostic, "file:line:col: error: ..."),
// file/line/col those of the first diagnostic. CLI exit code 2.
class AssemblyError : public BadInput {
 public:
  AssemblyError(const std::string& message, std::string file, std::uint32_t line, std::uint32_t col)
      : BadInput(message), file(std::move(file)), line(line), col(col) {}
  std::string file;
  std::uint32_t line = 0;
  std::uint32_t col = 0;
};

// Where a program fault happened, parsed from the engine's message
// "chip C core K bundle 0xB (file:line:col): what" (chip/fault.hpp); a
// deadlock report names every waiting core and has no single place: then
// only `message` is set.
struct FaultSite {
  std::string message;  // the whole report, as the CLI prints it
  std::optional<std::uint32_t> chip;
  std::optional<std::uint32_t> core;
  std::optional<std::uint64_t> bundle;
  std::string file;  // source of the faulting bundle ("" if unknown)
  std::uint32_t line = 0;
  std::uint32_t col = 0;
};
FaultSite parse_fault(const std::string& message);

// The emulated program faulted (bad address, FIFO misuse, a hazard under
// strict, deadlock, the cycle limit, a stop signal). CLI exit code 3.
class ProgramFault : public std::runtime_error {
 public:
  explicit ProgramFault(FaultSite site) : std::runtime_error(site.message), site(std::move(site)) {}
  FaultSite site;
};

// A bug in tpuemu: the run died (a signal in the child process) or threw
// what no layer expected. CLI exit code 4.
class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tpuemu::api
