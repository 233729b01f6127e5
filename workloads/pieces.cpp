#include "workloads/pieces.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "api/result.hpp"
#include "api/roofline.hpp"
#include "chip/host_io.hpp"
#include "common/npy.hpp"
#include "common/units.hpp"
#include "programs/reference.hpp"

namespace tpuemu::workloads {

const std::vector<float>& LazyBf16Values::get() const {
  std::call_once(once_, [this] { values_ = programs::random_bf16_values(count_, seed_); });
  return values_;
}

std::vector<std::uint32_t> axis_lengths(const ici::Topology& topology) {
  std::vector<std::uint32_t> lengths;
  for (std::size_t a = 0; a < topology.axis_count(); ++a) lengths.push_back(topology.length(a));
  return lengths;
}

std::vector<std::uint32_t> chip_coords(const ici::Topology& topology, std::uint32_t id) {
  const ici::Coords c = topology.coords(ChipId(id));
  return {c.begin(), c.begin() + static_cast<std::ptrdiff_t>(topology.axis_count())};
}

std::vector<float> transpose(const std::vector<float>& m, std::uint64_t rows, std::uint64_t cols) {
  std::vector<float> t(m.size());
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
  }
  return t;
}

std::vector<float> matrix_block(const std::vector<float>& m, std::uint64_t width, std::uint64_t row0,
                                std::uint64_t rows, std::uint64_t col0, std::uint64_t cols) {
  std::vector<float> out;
  out.reserve(rows * cols);
  for (std::uint64_t r = row0; r < row0 + rows; ++r) {
    const auto start = m.begin() + static_cast<std::ptrdiff_t>(r * width + col0);
    out.insert(out.end(), start, start + static_cast<std::ptrdiff_t>(cols));
  }
  return out;
}

std::vector<std::uint8_t> device_matrix(const std::vector<float>& values, std::uint64_t rows, std::uint64_t cols,
                                        const std::string& dtype, const std::string& origin) {
  const chip::OperandBinding binding{0, "hbm", dtype, {rows, cols}, false};
  return chip::to_device(binding, make_npy(NpyDtype::kFloat32, {rows, cols}, values.data()), origin);
}

std::vector<float> host_matrix(const std::vector<std::uint8_t>& device, std::uint64_t rows, std::uint64_t cols,
                               const std::string& dtype) {
  const chip::OperandBinding binding{0, "hbm", dtype, {rows, cols}, true};
  const NpyArray host = chip::from_device(binding, device, false);
  const auto values = host.as_f32();
  return {values.begin(), values.end()};
}

nlohmann::json check_outputs(const std::vector<std::vector<std::uint8_t>>& device, std::uint32_t chips,
                             const std::string& what, const std::string& dtype,
                             const std::function<std::pair<std::uint64_t, std::uint64_t>(std::uint32_t chip)>& shape,
                             const std::function<std::vector<float>(std::uint32_t chip)>& expected) {
  std::uint64_t elements = 0;
  std::uint64_t wrong_chips = 0;
  std::string first_wrong;
  for (std::uint32_t id = 0; id < chips; ++id) {
    const auto [rows, cols] = shape(id);
    const std::vector<float> want = expected(id);
    std::string verdict;
    try {
      const std::vector<float> got = host_matrix(device.at(id), rows, cols, dtype);
      verdict = api::compare_bits(make_npy(NpyDtype::kFloat32, {rows, cols}, got.data()),
                                  make_npy(NpyDtype::kFloat32, {rows, cols}, want.data()));
    } catch (const std::exception& e) {  // a missing chip or a device buffer of another size
      verdict = e.what();
    }
    elements += rows * cols;
    if (!api::is_bit_exact(verdict) && wrong_chips++ == 0) first_wrong = fmt::format("chip {}: {}", id, verdict);
  }
  const bool ok = wrong_chips == 0;
  return nlohmann::json{{"check", ok ? fmt::format("bit-exact ({} elements of {} on {} chips)", elements, what, chips)
                                     : fmt::format("MISMATCH on {} of {} chips; {}", wrong_chips, chips, first_wrong)},
                        {"ok", ok},
                        {"elements", elements},
                        {"wrong_chips", wrong_chips}};
}

nlohmann::json check_chunk_outputs(const std::vector<std::vector<std::uint8_t>>& device, std::uint32_t chips,
                                   const std::string& what,
                                   const std::function<std::vector<std::uint8_t>(std::uint32_t chip)>& want,
                                   std::uint64_t element_bytes) {
  std::uint64_t elements = 0;
  std::uint64_t wrong_chips = 0;
  std::string first_wrong;
  for (std::uint32_t id = 0; id < chips; ++id) {
    const std::vector<std::uint8_t> w = want(id);
    const bool same =
        id < device.size() && device[id].size() >= w.size() && std::equal(w.begin(), w.end(), device[id].begin());
    if (!same && wrong_chips++ == 0)
      first_wrong = fmt::format("chip {}: its {} B chunk differs from the reference", id, w.size());
    elements += w.size() / element_bytes;
  }
  const bool ok = wrong_chips == 0;
  return nlohmann::json{{"check", ok ? fmt::format("bit-exact ({} elements of {} on {} chips)", elements, what, chips)
                                     : fmt::format("MISMATCH on {} of {} chips; {}", wrong_chips, chips, first_wrong)},
                        {"ok", ok},
                        {"elements", elements},
                        {"wrong_chips", wrong_chips}};
}

void refuse_other_mxu(const ChipConfig& chip, std::string_view who) {
  if (chip.mxu.size == 128) return;
  if (chip.mxu.size > chip.vpu.lanes) {
    throw std::invalid_argument(fmt::format(
        "{} multiplies bf16 tiles on 128x128 MXUs; {}'s {}x{} MXU is not modelled (the model's vreg interface "
        "to an MXU is {} lanes wide): programs without MXU ops run on {}, e.g. `tpuemu collective --chip {}`",
        who, chip.name, chip.mxu.size, chip.mxu.size, chip.vpu.lanes, chip.name, chip.name));
  }
  throw std::invalid_argument(fmt::format(
      "{} multiplies bf16 tiles on 128x128 MXUs; {} has {}x{} MXUs: try `tpuemu gen matmul --chip {} --m 8 --k 8 "
      "--n 8` (f32) and `tpuemu run`, or `tpuemu systolic`",
      who, chip.name, chip.mxu.size, chip.mxu.size, chip.name));
}

programs::MatmulSpec on_every_core(programs::MatmulSpec spec, const ChipConfig& chip) {
  if (chip.tensorcores_per_chip <= 1 || chip.mxu.size != 128) return spec;
  programs::MatmulSpec split = spec;
  split.split_cores = chip.tensorcores_per_chip;
  return programs::matmul_core_split(split, chip) == programs::CoreSplit::kNone ? spec : split;
}

Phase matmul_phase(const programs::MatmulSpec& spec, const ChipConfig& chip) {
  const double element = spec.dtype == "bf16" ? 2.0 : 4.0;
  const double m = static_cast<double>(spec.m);
  const double k = static_cast<double>(spec.k);
  const double n = static_cast<double>(spec.n);
  Phase p;
  p.name = fmt::format("matmul {}x{}x{}", spec.m, spec.k, spec.n);
  p.flops = 2 * m * k * n;
  const double c_element = spec.out_dtype == "bf16" ? 2.0 : 4.0;
  const double hbm_bytes = element * (m * k + k * n) + (spec.accumulate ? 2 : 1) * c_element * m * n;  // C read too
  const api::Roofline roof = api::compute_roofline(chip, p.flops, 0, hbm_bytes, 0);
  p.book_seconds = roof.mxu_seconds;
  p.predicted_seconds = roof.predicted_seconds;
  p.prediction =
      fmt::format("roofline: max(T_math = 2mkn/C = {}, T_HBM = {} / HBM bandwidth = {}): {}-bound",
                  format_quantity(roof.mxu_seconds, Quantity::kTime), format_quantity(hbm_bytes, Quantity::kBytes),
                  format_quantity(roof.hbm_seconds, Quantity::kTime), roof.bound);
  p.detail = {{"m", spec.m}, {"k", spec.k}, {"n", spec.n}, {"dtype", spec.dtype}, {"least_hbm_bytes", hbm_bytes}};
  if (spec.out_dtype != "f32") p.detail["out_dtype"] = spec.out_dtype;
  const programs::CoreSplit split = programs::matmul_core_split(spec, chip);
  if (split != programs::CoreSplit::kNone) {  // the report says how the chip's cores share it
    p.detail["split_cores"] = spec.split_cores;
    p.detail["core_split"] = split == programs::CoreSplit::kColumns ? "columns" : "rows";
  }
  return p;
}

std::string with_own_flags(std::string text, std::uint64_t& next_flag, const ChipConfig& chip, std::string_view who) {
  const std::size_t at = text.find("space=sflag, size = 0x");
  if (at == std::string::npos)
    throw std::logic_error(fmt::format("{}: the collective has no sync-flag allocation", who));
  const std::size_t size_end = text.find(',', at + 13);
  const std::uint64_t flag_bytes = std::stoull(text.substr(at + 22, size_end - at - 22), nullptr, 16);
  // The top four flags: the core split's barriers and the ring shift's (programs/generators.hpp).
  if (next_flag + flag_bytes / 4 + 4 > chip.sflag.count) {
    throw std::invalid_argument(
        fmt::format("{}: the collectives need more than the chip's {} sync flags", who, chip.sflag.count));
  }
  text.insert(size_end, fmt::format(", offset = 0x{:x}", next_flag * 4));
  next_flag += flag_bytes / 4;
  return text;
}

Phase collective_phase(const programs::CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip,
                       const std::string& what) {
  const programs::CollectivePrediction predicted = programs::predict_collective(spec, topology, chip);
  std::string axes;
  for (std::size_t a : spec.axes) axes += static_cast<char>(ici::axis_name(a) - 'a' + 'A');
  Phase p;
  p.name = fmt::format("{} {} over {}", spec.op, what, axes);
  p.communication = true;
  p.book_seconds = predicted.seconds;
  p.predicted_seconds = predicted.seconds;
  p.prediction = predicted.formula;
  p.detail = {{"op", spec.op},
              {"operand", what},
              {"axes", axes},
              {"algorithm", spec.algorithm},
              {"dtype", spec.dtype},
              {"bytes", spec.bytes},
              {"predicted_bandwidth_seconds", predicted.bandwidth_seconds},
              {"predicted_latency_seconds", predicted.latency_seconds}};
  return p;
}

}  // namespace tpuemu::workloads
