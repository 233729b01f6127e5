// The tpuemu command line: global flags, subcommand dispatch, exit codes.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tpuemu::cli {

// Exit codes, documented in README.md.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // the run completed but a check failed (e.g. FAIL)
inline constexpr int kExitBadInput = 2;      // usage, preset, assembly or input-file errors
inline constexpr int kExitProgramFault = 3;  // the emulated program faulted or deadlocked
inline constexpr int kExitInternalError = 4;  // a bug in tpuemu (an exception no command expected)

struct Command {
  std::string_view name;
  std::string_view summary;
  // Receives the arguments after the command name.
  int (*run)(const std::vector<std::string>& args);
};

// All subcommands, in the order `tpuemu --help` lists them.
std::span<const Command> commands();

// Entry point of the executable.
int run(int argc, char** argv);

// Usage text of the whole tool.
std::string usage();

}  // namespace tpuemu::cli
