// Work that must run in a process of its own (SystemC elaborates once per
// process: a dry run before the real one, one collective size after another).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace tpuemu::api {

struct ChildOutcome {
  std::optional<std::string> output;  // what `work` returned; nullopt if the child died or returned nothing
  std::string death;                  // why not: "the emulation died of signal 11", ...
};

// Runs `work` in a forked child and returns the text it produced. The child
// is tied to this process: it is killed if this process dies
// (PR_SET_PDEATHSIG), and a SIGINT/SIGTERM that reaches this process while it
// waits is passed on to the child, whose run then stops as a fault would
// (chip/stop_request.hpp) and reports through `work` as usual. With
// `quiet`, the child's stdout and stderr go to /dev/null. An exception
// escaping `work` ends the child without output.
// Under mpirun (dist::world().size() > 1) the child's dist::world() is a
// dist::ChildRanks whose calls this process makes for it while it waits, so
// every rank may run its part of a pod in a child; a child that dies then
// ends every rank (dist::Ranks::abort with kDeadChildExitCode) instead of
// leaving the others waiting for its next call.
inline constexpr int kDeadChildExitCode = 4;  // tools/cli.hpp's kExitInternalError
ChildOutcome run_in_child(const std::function<std::string()>& work, bool quiet);

}  // namespace tpuemu::api
