// The result of a run of the run API (api/run.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/errors.hpp"
#include "chip/exec_program.hpp"
#include "common/npy.hpp"

namespace tpuemu::api {

// An output buffer as the chips left it: its binding (dtype, shape, space)
// and its device bytes per chip (host_io layout).
struct OutputBuffer {
  chip::OperandBinding binding;
  std::vector<std::vector<std::uint8_t>> device;  // by chip
};

// What a run cost the host (not part of the report, which stays the same
// from run to run): wall time and peak RSS of the simulating process, and
// its work counters (pods only: bundles over all cores, network events,
// blocked cores woken, quantum synchronisations, conservative windows
// between MPI ranks: 0 in one process).
struct HostCost {
  double seconds = 0;
  std::uint64_t peak_rss_bytes = 0;
  std::uint64_t bundles = 0;
  std::uint64_t network_events = 0;
  std::uint64_t core_resumes = 0;
  std::uint64_t core_syncs = 0;
  std::uint64_t windows = 0;
};

struct Result {
  std::uint64_t cycles = 0;
  double seconds = 0;
  nlohmann::json report;  // schema: docs/report.md (api/report.hpp)
  // Output buffers by name; empty for a timing-only run (Options::no_data)
  // and after a fault.
  std::map<std::string, OutputBuffer> outputs;
  std::optional<FaultSite> fault;
  HostCost host;

  // Output buffer `name` of chip `chip` in host layout: float32 values for
  // bf16/f8 buffers, or their raw uint16/uint8 codes with `raw_bits`.
  // Throws BadInput naming the buffers there are if there is no such output.
  [[nodiscard]] NpyArray output(const std::string& name, std::uint32_t chip = 0, bool raw_bits = false) const;
  // Throws ProgramFault if the run faulted.
  void throw_if_fault() const;
};

// "bit-exact (N elements)", or what differs: shape, dtype, or the count of
// elements whose bits differ and the first of them.
std::string compare_bits(const NpyArray& got, const NpyArray& expected);
// The same against a file's data, read a piece at a time (no buffer of the
// array's size); throws NpyError if the file cannot be read.
std::string compare_bits(const NpyArray& got, const NpyFileHeader& expected);
[[nodiscard]] inline bool is_bit_exact(const std::string& verdict) {
  return verdict.starts_with("bit-exact");
}

}  // namespace tpuemu::api
