#include "tools/cli.hpp"

#include <fmt/format.h>

#include <array>
#include <csignal>
#include <cstdio>
#include <exception>

#include "api/environment.hpp"
#include "chip/stop_request.hpp"
#include "common/edit_distance.hpp"
#include "common/log.hpp"
#include "tools/chips_command.hpp"
#include "tools/collective_command.hpp"
#include "tools/demo_command.hpp"
#include "tools/gen_command.hpp"
#include "tools/isa_commands.hpp"
#include "tools/run_case_command.hpp"
#include "tools/run_command.hpp"
#include "tools/systolic_command.hpp"
#include "tools/topology_command.hpp"
#include "tools/workload_command.hpp"

namespace tpuemu::cli {
namespace {

constexpr std::array kCommands{
    Command{"demo", "the default job: a pipelined bf16 matmul on an emulated v5e, checked and compared to its roofline",
            demo_command},
    Command{"chips", "list chip presets with their headline numbers, or print one fully resolved", chips_command},
    Command{"topology", "resolve a pod topology on a chip (axes, wraparound) and show routes", topology_command},
    Command{"params", "list every chip parameter with its unit and meaning", params_command},
    Command{"collective",
            "benchmark a collective (all-gather, reduce-scatter, all-reduce, all-to-all) on a pod, nccl-tests style",
            collective_command},
    Command{"workload",
            "run a sharded workload (sharded-matmul, ...) on a pod: its phases against the book, checked bit for bit",
            workload_command},
    Command{"run", "run a program on an emulated chip or pod (--topology): cycles, stalls, roofline, .npy operands",
            run_command},
    Command{"run-case", "run a case of the real-dump corpus and compare with its expected output", run_case_command},
    Command{"systolic",
            "one tile through the RTL systolic array (Verilator), checked against the C++ MXU; --vcd waveform",
            systolic_command},
    Command{"gen", "generate a tiled LLO program (matmul, add)", gen_command},
    Command{"asm", "assemble an LLO program into a program image (.tpub)", asm_command},
    Command{"disasm", "print a program image (or LLO file) as canonical final_bundles text", disasm_command},
    Command{"check", "assemble LLO files and check them against a chip (slots, units, registers)", check_command},
    Command{"isa-doc", "print the ISA reference generated from the instruction table (docs/ISA.md)", isa_doc_command},
};

}  // namespace

std::span<const Command> commands() {
  return kCommands;
}

std::string usage() {
  std::string out =
      "usage: tpuemu [-v|-q]... COMMAND [ARGS]\n"
      "       tpuemu COMMAND --help\n\n"
      "A cycle-approximate TPU chip and pod emulator.\n\ncommands:\n";
  for (const auto& c : kCommands) out += fmt::format("  {:<10} {}\n", c.name, c.summary);
  out +=
      "\nglobal flags:\n"
      "  -v, --verbose   more log output (repeatable)\n"
      "  -q, --quiet     less log output (repeatable)\n"
      "  -h, --help      this text\n"
      "  --version       print the version\n"
      "\nexit codes: 0 ok, 1 check failed, 2 bad usage or input, 3 emulated program fault (or --max-cycles\n"
      "reached), 4 internal error (a bug in tpuemu), 130/143 stopped by SIGINT/SIGTERM\n";
  return out;
}

int run(int argc, char** argv) {
  // 1. Strip the global verbosity flags wherever they stand (before "--").
  std::vector<std::string> args;
  int verbose = 0;
  int quiet = 0;
  bool passthrough = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (!passthrough && a == "--") {
      passthrough = true;
    } else if (!passthrough && (a == "--verbose")) {
      ++verbose;
      continue;
    } else if (!passthrough && (a == "--quiet")) {
      ++quiet;
      continue;
    } else if (!passthrough && a.size() >= 2 && a[0] == '-' && a[1] != '-' &&
               a.find_first_not_of('v', 1) == std::string_view::npos) {
      verbose += static_cast<int>(a.size() - 1);
      continue;
    } else if (!passthrough && a.size() >= 2 && a[0] == '-' && a[1] != '-' &&
               a.find_first_not_of('q', 1) == std::string_view::npos) {
      quiet += static_cast<int>(a.size() - 1);
      continue;
    }
    args.emplace_back(a);
  }
  log::set_verbosity(verbose, quiet);

  // 2. Dispatch.
  if (args.empty()) {
    std::fputs(usage().c_str(), stderr);
    return kExitBadInput;
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(usage().c_str(), stdout);
    return kExitOk;
  }
  if (args[0] == "--version") {
    std::puts("tpuemu 0.1.0");
    return kExitOk;
  }
  for (const auto& c : kCommands) {
    if (c.name == args[0]) {
      if (const auto problem = api::environment_problem()) {
        fmt::print(stderr, "tpuemu {}: {}\n", c.name, *problem);
        return kExitBadInput;
      }
      // SIGINT/SIGTERM stop a run as a fault does (its message, then exit 128 + the signal).
      chip::install_stop_signal_handlers(/*second_kills=*/true);
      int code = kExitInternalError;
      try {
        code = c.run(std::vector<std::string>(args.begin() + 1, args.end()));
      } catch (const std::exception& e) {
        fmt::print(stderr, "tpuemu {}: internal error (a bug in tpuemu; please report it): {}\n", c.name, e.what());
      }
      if (const int signal_number = chip::stop_requested(); signal_number != 0) {
        // A signal after the emulation ended (the command's own work, or its
        // checks and files after it) stopped nothing: say so, as a fault
        // message says where a stopped emulation was.
        if (code == kExitOk) {
          fmt::print(stderr, "tpuemu {}: {} came when no emulation was left to stop: the output above is complete\n",
                     c.name,
                     signal_number == SIGINT    ? "SIGINT"
                     : signal_number == SIGTERM ? "SIGTERM"
                                                : "a signal");
        }
        return 128 + signal_number;
      }
      return code;
    }
  }
  // A near miss gets a suggestion (two edits at most, and fewer than the word's length).
  std::string_view closest;
  std::size_t best = 3;
  for (const auto& c : kCommands) {
    const std::size_t d = edit_distance(args[0], c.name);
    if (d < best && d < args[0].size()) {
      best = d;
      closest = c.name;
    }
  }
  const std::string hint = closest.empty() ? std::string() : fmt::format("; did you mean '{}'?", closest);
  fmt::print(stderr, "tpuemu: unknown command or flag '{}'{}\n\n{}", args[0], hint, usage());
  return kExitBadInput;
}

}  // namespace tpuemu::cli
