// How a run treats the program: the options every run request carries
// (chip/run.hpp, chip/pod.hpp) down to each core.
#pragma once

#include <cstdint>

namespace tpuemu::chip {

struct RunOptions {
  bool strict = false;           // register hazards are faults, not stalls
  bool compute_numerics = true;  // false = timing-only (identical cycle counts)
  // A core about to issue a bundle at this cycle (or later) faults instead,
  // naming the bundle: an endless loop stops (the CLI's --max-cycles).
  std::uint64_t max_cycles = kDefaultMaxCycles;
  // 1e8 cycles: 67 ms of a v5e; a one-chip endless loop stops after ~2 s of host time.
  static constexpr std::uint64_t kDefaultMaxCycles = 100'000'000;
};

}  // namespace tpuemu::chip
