// The inference-layer workload (inference.md; ../shared/WORKLOADS.md section
// 3): one transformer layer's two matmuls at inference,
//   out[B, D] = bf16(x[B, D] @ W_in[D, F]) @ W_out[F, D]
// (bf16 weights and activations, f32 accumulation; no activation function,
// as in the book's example), with d_ff split over one mesh axis
// (--model-axis, the book's model parallelism for inference: W_in[D, F_Y],
// W_out[F_Y, D]) or not at all (--model-axis none). Chips that differ only on
// the other axes are replicas: they hold the same weights and the same x.
//
// Steps (one SPMD program each, every chip):
//   matmul    x @ "W_in" -> "h" (f32)
//   cast      "h" -> "h bf16" (rounded to nearest even on the VPU: the
//             program below, vpack.c.bf16 over pairs of f32 tiles)
//   matmul    "h bf16" @ "W_out" -> "out" (model axis of length 1 or none),
//             else -> "partial out", then
//   all-reduce "partial out" over the model axis -> "out" (f32; padded with
//             zeros where its ring cannot split the bytes, the reference
//             cut back to out)
//
// The book's prediction for the layer: T_math = 2 x 2 B D F_Y / C against
// T_HBM = the weight bytes 2 x 2 D F_Y / HBM bandwidth; the step is flat
// (HBM-bound) below the critical batch C / HBM bandwidth (about 240 on v5e)
// and grows linearly above it.
//
// Host reference: h = programs::matmul_reference(x, W_in block), rounded to
// bf16 element by element, times the W_out block, then (sharded) the chips'
// partial outs reduced in the collective's order
// (programs::collective_reference), bit for bit.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

#include "api/errors.hpp"
#include "api/run.hpp"
#include "common/numerics.hpp"
#include "common/types.hpp"
#include "common/units.hpp"
#include "programs/collective_algorithm.hpp"
#include "programs/collective_reference.hpp"
#include "programs/collectives.hpp"
#include "programs/generators.hpp"
#include "programs/llo_writer.hpp"
#include "programs/reference.hpp"
#include "workloads/cast_blocks.hpp"
#include "workloads/pieces.hpp"
#include "workloads/workload.hpp"

namespace tpuemu::workloads {
namespace {

// The model axis: none, or the index of X, Y, Z on the topology.
std::optional<std::size_t> parse_model_axis(const std::string& text, const ici::Topology& topology) {
  if (text == "none") return std::nullopt;
  const std::string axes = std::string("XYZ").substr(0, topology.axis_count());
  if (text.size() == 1 && axes.find(text[0]) != std::string::npos) return axes.find(text[0]);
  throw api::BadInput(fmt::format("--model-axis '{}': expected none or a mesh axis of the topology ({})", text,
                                  fmt::join(std::vector<char>(axes.begin(), axes.end()), ", ")));
}

class InferenceLayerWorkload final : public Workload {
 public:
  [[nodiscard]] std::string_view name() const override { return "inference-layer"; }
  [[nodiscard]] std::string_view summary() const override {
    return "the book's inference layer: out = bf16(x[B,D] @ W_in[D,F]) @ W_out[F,D], d_ff split over --model-axis; "
           "HBM-bound (weight bytes / HBM bandwidth) below the critical batch, MXU-bound above";
  }
  [[nodiscard]] std::vector<OptionSpec> options() const override {
    return {{"batch", "240", "B: tokens in the batch (rows of x and out)"},
            {"d-model", "8192", "D: columns of x and out, rows of W_in"},
            {"d-ff", "32768", "F: columns of W_in, rows of W_out, split over the model axis"},
            {"model-axis", "X", "the mesh axis d_ff is split over (X, Y, Z), or none; other axes hold replicas"},
            {"algo", "multi-axis", "the all-reduce's algorithm (tpuemu collective --algo list)"},
            {"seed", "1", "seed of the pseudo-random bf16 inputs"}};
  }

  [[nodiscard]] Built build(const Setup& setup, const OptionValues& options) const override {
    const ChipConfig& chip = setup.chip;
    const ici::Topology& topology = setup.topology;
    constexpr std::uint64_t kMaxDim = 1ULL << 20;
    const std::uint64_t b = options.whole("batch", 1, kMaxDim);
    const std::uint64_t d = options.whole("d-model", 1, kMaxDim);
    const std::uint64_t f = options.whole("d-ff", 1, kMaxDim);
    const auto seed = static_cast<std::uint32_t>(options.whole("seed", 0, std::numeric_limits<std::uint32_t>::max()));
    const std::optional<std::size_t> axis = parse_model_axis(options.text("model-axis"), topology);
    const std::uint64_t ways = axis ? topology.length(*axis) : 1;
    if (f % ways != 0) {
      throw api::BadInput(
          fmt::format("--d-ff {}: d_ff is split over {} ({} ways), but {} does not split into {} equal "
                      "blocks",
                      f, options.text("model-axis"), ways, f, ways));
    }
    const std::uint64_t fl = f / ways;  // d_ff per chip
    const programs::MatmulSpec up = on_every_core({b, d, fl, "bf16"}, chip);
    const programs::MatmulSpec down = on_every_core({b, fl, d, "bf16"}, chip);
    programs::CollectiveSpec reduce;
    reduce.op = "all-reduce";
    reduce.dtype = "f32";
    // The whole device buffer: f32 (8,128) tiles, padding included, so every
    // element of out is reduced whatever B and D are.
    reduce.bytes = ceil_div(b, 8) * 8 * ceil_div(d, 128) * 128 * 4;
    reduce.algorithm = options.text("algo");
    if (axis) reduce.axes = {*axis};
    const bool reduces = ways > 1;
    const std::uint64_t out_bytes = reduce.bytes;
    // An all-reduce its ring cannot split runs padded with zeros
    // (programs::padded_collective_bytes; "partial out" and "out" take the
    // padded size, the reference cuts back), as attention's and mlp's do.
    if (reduces) {
      try {
        reduce.bytes = programs::padded_collective_bytes(reduce, topology);
      } catch (const std::invalid_argument&) {  // generate_collective names the problem below
      }
    }

    Built built;
    std::shared_ptr<const isa::Program> up_program, cast_program, down_program, reduce_program;
    try {
      refuse_other_mxu(chip, "inference-layer");
      if (chip.mxu.count == 0) throw std::invalid_argument(fmt::format("{} has no MXU (mxu.count 0)", chip.name));
    } catch (const std::invalid_argument& e) {
      throw api::BadInput(fmt::format("--chip {}: {}", chip.name, e.what()));
    }
    try {
      up_program = api::assemble(programs::generate_matmul(up, chip), "matmul_up.llo");
      cast_program = api::assemble(generate_cast_bf16(b, fl, chip), "cast_bf16.llo");
      down_program = api::assemble(programs::generate_matmul(down, chip), "matmul_down.llo");
    } catch (const std::invalid_argument& e) {
      throw api::BadInput(fmt::format("--batch {} --d-model {} --d-ff {}: {}", b, d, f, e.what()));
    }
    try {
      (void)programs::collective_algorithm(reduce.algorithm);
    } catch (const std::invalid_argument& e) {
      throw api::BadInput(fmt::format("--algo: {}", e.what()));
    }
    if (reduces) {
      try {
        reduce_program = api::assemble(programs::generate_collective(reduce, topology, chip), "all-reduce.llo");
      } catch (const std::invalid_argument& e) {
        throw api::BadInput(fmt::format("--batch {} --d-model {}: the all-reduce of out[{},{}] (f32) over {}: {}", b, d,
                                        b, d, options.text("model-axis"), e.what()));
      }
    }

    // 1. Steps and phases with their predictions.
    built.steps.push_back({up_program, "matmul_up.llo", {{0, "x"}, {1, "W_in"}, {2, "h"}}});
    built.steps.push_back({cast_program, "cast_bf16.llo", {{0, "h"}, {1, "h bf16"}}});
    built.steps.push_back(
        {down_program, "matmul_down.llo", {{0, "h bf16"}, {1, "W_out"}, {2, reduces ? "partial out" : "out"}}});
    Phase up_phase = matmul_phase(up, chip);
    up_phase.name = fmt::format("up: x @ W_in {}x{}x{}", b, d, fl);
    const double cast_bytes = 6.0 * static_cast<double>(b * fl);
    Phase cast;
    cast.name = fmt::format("cast h to bf16 {}x{}", b, fl);
    cast.predicted_seconds = cast_bytes / chip.hbm.bandwidth;
    cast.prediction = fmt::format("T_HBM = {} (f32 read, bf16 written) / HBM bandwidth",
                                  format_quantity(cast_bytes, Quantity::kBytes));
    cast.detail = {{"m", b}, {"n", fl}, {"least_hbm_bytes", cast_bytes}};
    Phase down_phase = matmul_phase(down, chip);
    down_phase.name = fmt::format("down: h @ W_out {}x{}x{}", b, fl, d);
    built.phases = {up_phase, cast, down_phase};
    if (reduces) {
      built.steps.push_back({reduce_program, "all-reduce.llo", {{0, "partial out"}, {1, "out"}, {2, "scratch"}}});
      Phase p = collective_phase(reduce, topology, chip, "partial out");
      if (reduce.bytes != out_bytes) {
        p.name += fmt::format(" (padded {} -> {} B)", out_bytes, reduce.bytes);
        p.detail["padded_from_bytes"] = out_bytes;
      }
      built.phases.push_back(std::move(p));
    }
    built.model_flops = 2.0 * 2.0 * static_cast<double>(b) * static_cast<double>(d) * static_cast<double>(f);

    // The book's layer: T_math of both matmuls against the weight bytes.
    const double peak = chip.peak_bf16_flops();
    const double weight_bytes = 2.0 * 2.0 * static_cast<double>(d) * static_cast<double>(fl);
    const double t_math = 2.0 * 2.0 * static_cast<double>(b * d) * static_cast<double>(fl) / peak;
    const double t_hbm = weight_bytes / chip.hbm.bandwidth;
    const double critical_batch = peak / chip.hbm.bandwidth;

    // 2. Host data (only with data: a timing-only run needs none, and the book's
    // weights are 537 M floats): x [B, D], W_in [D, F], W_out [F, D];
    // chip blocks of F.
    if (!setup.no_data) {
      const auto x = std::make_shared<const std::vector<float>>(programs::random_bf16_values(b * d, seed));
      const auto w_in = std::make_shared<const std::vector<float>>(programs::random_bf16_values(d * f, seed + 1));
      const auto w_out = std::make_shared<const std::vector<float>>(programs::random_bf16_values(f * d, seed + 2));
      const auto shard = [topology, axis](std::uint32_t id) -> std::uint64_t {
        return axis ? topology.coords(ChipId(id))[*axis] : 0;
      };
      built.inputs["x"].origin = "x";
      built.inputs["x"].device_provider = [=](std::uint32_t, const chip::OperandBinding&) {
        return device_matrix(*x, b, d, "bf16", "x");
      };
      built.inputs["W_in"].origin = "W_in";
      built.inputs["W_in"].device_provider = [=](std::uint32_t id, const chip::OperandBinding&) {
        return device_matrix(matrix_block(*w_in, f, 0, d, shard(id) * fl, fl), d, fl, "bf16", "W_in");
      };
      built.inputs["W_out"].origin = "W_out";
      built.inputs["W_out"].device_provider = [=](std::uint32_t id, const chip::OperandBinding&) {
        return device_matrix(matrix_block(*w_out, d, shard(id) * fl, fl, 0, d), fl, d, "bf16", "W_out");
      };

      // 3. The check: every chip's out against the host reference.
      built.check = [=](const api::Result& r) {
        std::map<std::uint64_t, std::vector<float>> partial;  // by shard
        const auto partial_of = [&](std::uint64_t s) -> const std::vector<float>& {
          auto it = partial.find(s);
          if (it == partial.end()) {
            std::vector<float> h = programs::matmul_reference(*x, matrix_block(*w_in, f, 0, d, s * fl, fl), b, d, fl);
            for (float& v : h) v = bf16_round(v);
            it = partial.emplace(s, programs::matmul_reference(h, matrix_block(*w_out, d, s * fl, fl, 0, d), b, fl, d))
                     .first;
          }
          return it->second;
        };
        std::vector<std::vector<std::uint8_t>> reduced;
        if (reduces) {
          std::vector<std::vector<std::uint8_t>> partials;
          for (std::uint32_t id = 0; id < topology.chip_count(); ++id) {
            partials.push_back(device_matrix(partial_of(shard(id)), b, d, "f32", "partial out"));
            partials.back().resize(reduce.bytes, 0);  // padding: zeros
          }
          reduced = programs::collective_reference(reduce, topology, partials);
          for (auto& bytes : reduced) bytes.resize(out_bytes);  // a padded all-reduce's tail
        }
        // A padded all-reduce's output is longer: its first out_bytes are out.
        std::vector<std::vector<std::uint8_t>> device = r.outputs.at("out").device;
        for (auto& bytes : device) bytes.resize(std::min<std::size_t>(bytes.size(), out_bytes));
        return check_f32_outputs(
            device, topology.chip_count(), "out", [&](std::uint32_t) { return std::make_pair(b, d); },
            [&](std::uint32_t id) { return reduces ? host_matrix_f32(reduced.at(id), b, d) : partial_of(shard(id)); });
      };
    }

    // 4. The report's fields and the intro.
    built.choice = {
        {"batch", b},
        {"d_model", d},
        {"d_ff", f},
        {"model_axis", options.text("model-axis")},
        {"model_ways", ways},
        {"per_chip", {{"d_ff", fl}, {"weight_bytes", weight_bytes}}},
        {"book",
         {{"t_math_seconds", t_math},
          {"t_hbm_weights_seconds", t_hbm},
          {"predicted_seconds", std::max(t_math, t_hbm)},
          {"bound", t_math >= t_hbm ? "MXU" : "HBM"},
          {"critical_batch", critical_batch},
          {"formula", "max(T_math = 2 x 2 B D F_chip / C, T_HBM = weight bytes 2 x 2 D F_chip / HBM bandwidth)"}}},
        {"reference", reduces ? "per chip bf16(x @ W_in block) @ W_out block (programs::matmul_reference), "
                                "reduced in the all-reduce's order (programs::collective_reference)"
                              : "bf16(x @ W_in) @ W_out (programs::matmul_reference)"}};
    built.intro = {
        fmt::format("inference-layer: out[{},{}] = bf16(x[{},{}] @ W_in[{},{}]) @ W_out[{},{}] on a {} pod of {}", b, d,
                    b, d, d, f, f, d, ici::describe(topology), chip.name),
        fmt::format("  {}: every chip holds W_in[{},{}] and W_out[{},{}] ({} of weights){}",
                    axis ? fmt::format("d_ff split {} ways over {}", ways, options.text("model-axis"))
                         : std::string("d_ff not split"),
                    d, fl, fl, d, format_quantity(weight_bytes, Quantity::kBytes),
                    reduces ? ", then an all-reduce of out (f32) over the model axis" : ""),
        fmt::format("  the book: T_math {} vs T_HBM (weights) {}: {}-bound (critical batch C / HBM bandwidth = {:.0f})",
                    format_quantity(t_math, Quantity::kTime), format_quantity(t_hbm, Quantity::kTime),
                    t_math >= t_hbm ? "MXU" : "HBM", critical_batch)};
    return built;
  }
};

const WorkloadRegistrar kInferenceLayerRegistrar(std::make_unique<InferenceLayerWorkload>());

}  // namespace
}  // namespace tpuemu::workloads
