// The result of a run of the run API (api/run.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
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

// The piece size output_pieces and the comparisons use: a multiple of every
// element size; 2 MiB, so that the tpuemu executable takes a piece buffer
// from its large blocks (tools/large_allocations.cpp: one huge page, or a
// block a freed array left) instead of 512 small pages.
inline constexpr std::uint64_t kOutputPieceBytes = std::uint64_t{2} << 20;

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
  // The same array a piece at a time, with no buffer of its size: calls
  // take(piece) with consecutive runs of its bytes (C order, each at most
  // `piece_bytes` or one tile row of 8 rows, whichever is more) that together are
  // output()'s data. Throws as output() does, and what take throws.
  // The dtype and shape of output() are output_dtype() and the binding's.
  void output_pieces(const std::string& name, std::uint32_t chip, bool raw_bits, std::uint64_t piece_bytes,
                     const std::function<void(std::span<const std::uint8_t>)>& take) const;
  [[nodiscard]] NpyDtype output_dtype(const std::string& name, bool raw_bits) const;
  [[nodiscard]] const std::vector<std::uint64_t>& output_shape(const std::string& name) const;
  // Throws ProgramFault if the run faulted.
  void throw_if_fault() const;
};

// "bit-exact (N elements)", or what differs: shape, dtype, or the count of
// elements whose bits differ and the first of them.
std::string compare_bits(const NpyArray& got, const NpyArray& expected);
// The same against a file's data, read a piece at a time (no buffer of the
// array's size); throws NpyError if the file cannot be read.
std::string compare_bits(const NpyArray& got, const NpyFileHeader& expected);

// compare_bits with the got array fed a piece at a time (no buffer of its
// size either): its dtype and shape when made, then its data in C order in
// pieces of any size that are multiples of the element size (add); once all
// of it came, verdict() is what compare_bits of the whole array says. The
// expected array (or file header) must outlive it; the file's data is read
// in the pieces add receives. add throws NpyError if the file cannot be read;
// verdict() before all the data came is a contract violation (std::logic_error).
class BitComparison {
 public:
  // `expected`: an array, or a mapped file (common/npy_file.hpp).
  BitComparison(NpyDtype dtype, const std::vector<std::uint64_t>& shape, const NpyView& expected);
  BitComparison(NpyDtype dtype, const std::vector<std::uint64_t>& shape, const NpyFileHeader& expected);
  void add(std::span<const std::uint8_t> got);
  [[nodiscard]] std::string verdict() const;

 private:
  BitComparison(NpyDtype dtype, const std::vector<std::uint64_t>& shape, NpyDtype expected_dtype,
                std::span<const std::uint64_t> expected_shape, std::uint64_t expected_bytes);

  NpyDtype dtype_;
  std::uint64_t count_ = 0;
  std::uint64_t bytes_ = 0;               // expected and got, when they agree
  std::string mismatch_;                  // shape or dtype differ: the verdict, whatever the data
  std::span<const std::uint8_t> viewed_;  // the expected data, when not read from a file
  const NpyFileHeader* file_ = nullptr;
  std::vector<std::uint8_t> piece_;  // the file's bytes for the current piece
  std::uint64_t at_ = 0;             // bytes compared so far
  std::uint64_t differing_ = 0;
  std::uint64_t first_ = 0;  // flat index of the first differing element
  float first_got_ = 0;
  float first_expected_ = 0;
};
[[nodiscard]] inline bool is_bit_exact(const std::string& verdict) {
  return verdict.starts_with("bit-exact");
}

}  // namespace tpuemu::api
