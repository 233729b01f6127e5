// Pieces every matmul workload (and the pod demo) builds from: blocks of host
// matrices in device layout, the bf16 MXU refusal, and the phases of a
// generated matmul or collective with the book's predictions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/chip_config.hpp"
#include "ici/topology.hpp"
#include "programs/collectives.hpp"
#include "programs/generators.hpp"
#include "workloads/workload.hpp"

namespace tpuemu::workloads {

// Rows of one (8, 128) vreg tile of an HBM operand by dtype, and its columns.
constexpr std::uint64_t kBf16TileRows = 16;
constexpr std::uint64_t kF32TileRows = 8;
constexpr std::uint64_t kTileCols = 128;

// A host tensor of random bf16 values (programs::random_bf16_values), made on
// first use: a timing-only run, which never asks for inputs or checks, never
// pays for it (the 70B MLP's activations are 134 GB of floats). Thread-safe.
class LazyBf16Values {
 public:
  LazyBf16Values(std::uint64_t count, std::uint32_t seed) : count_(count), seed_(seed) {}
  [[nodiscard]] const std::vector<float>& get() const;

 private:
  std::uint64_t count_;
  std::uint32_t seed_;
  mutable std::once_flag once_;
  mutable std::vector<float> values_;
};
using LazyBf16 = std::shared_ptr<const LazyBf16Values>;
inline LazyBf16 lazy_bf16_values(std::uint64_t count, std::uint32_t seed) {
  return std::make_shared<const LazyBf16Values>(count, seed);
}

// The topology's axis lengths, x first.
std::vector<std::uint32_t> axis_lengths(const ici::Topology& topology);
// Chip `id`'s coordinates, one per axis of the topology.
std::vector<std::uint32_t> chip_coords(const ici::Topology& topology, std::uint32_t id);

// The transpose [cols, rows] of a row-major host matrix [rows, cols].
std::vector<float> transpose(const std::vector<float>& m, std::uint64_t rows, std::uint64_t cols);

// Rows [row0, row0 + rows) and columns [col0, col0 + cols) of a row-major
// host matrix of `width` columns, row-major.
std::vector<float> matrix_block(const std::vector<float>& m, std::uint64_t width, std::uint64_t row0,
                                std::uint64_t rows, std::uint64_t col0, std::uint64_t cols);

// A host matrix [rows, cols] (float32 values) in the device layout of a
// `dtype` ("bf16", "f32") HBM operand of that shape (chip/host_io.hpp).
std::vector<std::uint8_t> device_matrix(const std::vector<float>& values, std::uint64_t rows, std::uint64_t cols,
                                        const std::string& dtype, const std::string& origin);
// Device bytes of a `dtype` ("f32", "bf16") [rows, cols] operand back to
// host values (bf16 widened to f32, exactly).
std::vector<float> host_matrix(const std::vector<std::uint8_t>& device, std::uint64_t rows, std::uint64_t cols,
                               const std::string& dtype);
inline std::vector<float> host_matrix_f32(const std::vector<std::uint8_t>& device, std::uint64_t rows,
                                          std::uint64_t cols) {
  return host_matrix(device, rows, cols, "f32");
}

// Every chip's output (device bytes of a `dtype` operand of `shape(chip)` =
// {rows, cols}) against `expected(chip)`, bit for bit: the verdict as
// Built::check returns it, {"check", "ok", "elements", "wrong_chips"};
// `what` names the output ("C").
nlohmann::json check_outputs(const std::vector<std::vector<std::uint8_t>>& device, std::uint32_t chips,
                             const std::string& what, const std::string& dtype,
                             const std::function<std::pair<std::uint64_t, std::uint64_t>(std::uint32_t chip)>& shape,
                             const std::function<std::vector<float>(std::uint32_t chip)>& expected);
inline nlohmann::json check_f32_outputs(
    const std::vector<std::vector<std::uint8_t>>& device, std::uint32_t chips, const std::string& what,
    const std::function<std::pair<std::uint64_t, std::uint64_t>(std::uint32_t chip)>& shape,
    const std::function<std::vector<float>(std::uint32_t chip)>& expected) {
  return check_outputs(device, chips, what, "f32", shape, expected);
}

// A padded reduce-scatter's output (programs/collectives.hpp, "Padded
// collectives"): every chip's first want(chip).size() device bytes against
// want(chip), byte for byte (want: the chip's valid chunk of the reference);
// the verdict as check_outputs returns it, elements counted as words of
// `element_bytes` (4: f32, 2: bf16).
nlohmann::json check_chunk_outputs(const std::vector<std::vector<std::uint8_t>>& device, std::uint32_t chips,
                                   const std::string& what,
                                   const std::function<std::vector<std::uint8_t>(std::uint32_t chip)>& want,
                                   std::uint64_t element_bytes = 4);

// Throws std::invalid_argument unless `chip` has 128x128 MXUs (what the
// bf16 matmul generator targets); `who` names the caller ("the demo", ...).
void refuse_other_mxu(const ChipConfig& chip, std::string_view who);

// `spec` split over every TensorCore of the chip (MatmulSpec::split_cores =
// tensorcores_per_chip; programs/generators.hpp, "Core split") where the chip
// has more than one and the shape splits evenly; otherwise `spec` as it is
// (on a one-core chip, every v5e, unchanged). Every workload's per-chip
// matmuls go through it, as a compiler splits a megacore chip's work.
programs::MatmulSpec on_every_core(programs::MatmulSpec spec, const ChipConfig& chip);

// The phase of a generated matmul of `spec` on every chip: T_math = 2mkn /
// peak bf16 FLOP/s (the book's), predicted by the roofline over its least
// HBM traffic (A and B read once, C written once, and read once when it accumulates).
Phase matmul_phase(const programs::MatmulSpec& spec, const ChipConfig& chip);
// The first sync flag of a chain's collectives when each has its own
// (below it: the generated matmuls' and adds'; the ring shift uses the top
// two, a core split's barriers the two below them: with_own_flags stays below
// all four).
constexpr std::uint64_t kCollectiveFlagBase = 256;

// A generated collective's program text with its sync-flag allocation moved
// to start at flag `next_flag`, which is advanced past it. Chips end a step
// at different times and nothing waits between steps, so a collective's
// first deliveries may reach a chip still in an earlier step: in flags no
// other step uses, they wait harmlessly until the chip gets there. Throws
// std::invalid_argument (naming `who`) when the chip's flags run out.
std::string with_own_flags(std::string text, std::uint64_t& next_flag, const ChipConfig& chip, std::string_view who);

// The phase of a generated collective: T_comms = predict_collective.
Phase collective_phase(const programs::CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip,
                       const std::string& what);

}  // namespace tpuemu::workloads
