// The mlp workload's strategies and the book's prediction for them
// (training.md; ../shared/WORKLOADS.md section 2), apart from the programs so
// that tests and the sweep can use them without a run. The workload itself
// (workloads/mlp.cpp) registers as "mlp".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/chip_config.hpp"
#include "programs/generators.hpp"
#include "workloads/workload.hpp"

namespace tpuemu::workloads {

enum class MlpStrategy { kDp, kFsdp, kTp, kFsdpTp, kSp };

// "dp", "fsdp", "tp", "fsdp+tp", "sp"; nullopt otherwise ("pp" is
// build_mlp_pipeline's).
std::optional<MlpStrategy> parse_mlp_strategy(std::string_view text);

// Which mesh axes a strategy uses on a mesh of `axis_count` axes, major first:
// data axes (the book's X: tokens split, gradients reduced) and model axes
// (Y: d_ff split). dp, fsdp: every axis is data; tp: every axis is model;
// fsdp+tp: x is data, the others model; sp (sequence parallelism inside
// FSDP and TP, the book's LLaMA-3 layout): x is data, y sequence (tokens
// split, weights whole over it, gradients all-reduced over it), z model.
// fsdp: weights split over the data axes.
struct MlpAxes {
  std::vector<std::size_t> data;
  std::vector<std::size_t> model;
  std::vector<std::size_t> sequence;
  bool fsdp = false;
};
MlpAxes mlp_axes(MlpStrategy strategy, std::size_t axis_count);

// The roles of --data-axes, --model-axes and --sequence-axes (each "" when
// not given, "none", or mesh axes as parse_mesh_axes reads them; their order
// does not matter): a given role replaces the strategy's default axes, and a
// role not given keeps its default axes minus those a given role took, except
// that with one role left unspecified it takes every axis no other role has.
// Throws std::invalid_argument naming the option when a strategy lacks the
// role (dp and fsdp: data only; tp: model only; fsdp+tp: data and model; sp:
// all three), when two roles share an axis, when an axis of the mesh has no
// role, or when fsdp+tp lacks data or model axes, or sp data or sequence axes.
MlpAxes mlp_axes_with_roles(MlpStrategy strategy, std::size_t axis_count, const std::string& data,
                            const std::string& model, const std::string& sequence);

// The book's per-layer times for a strategy (WORKLOADS.md's table): T_math =
// 12BDF / (N C), T_comms by the table's bytes over W = 2 x the one-way link
// bandwidth times the axes spanned (m_x, m_y), and the threshold the book
// gives for the strategy (`threshold_name` says in what unit).
struct MlpBook {
  double t_math = 0;
  double t_comms = 0;
  // fsdp+tp only: T_comms's two parts, the collectives over the model axes
  // (TP) and over the data axes (FSDP); 0 for the other strategies.
  double t_comms_tp = 0;
  double t_comms_fsdp = 0;
  std::string formula;
  double threshold = 0;
  std::string threshold_name;
};
// b, d, f: the global B, D, F; x, y: the data and model axes' chip counts;
// m_x, m_y: the hardware axes each spans (at least 1); s, m_s: the same for
// the sequence axes (sp).
MlpBook mlp_book(MlpStrategy strategy, double b, double d, double f, double x, double y, double m_x, double m_y,
                 const ChipConfig& chip, double s = 1, double m_s = 1);

// programs::generate_matmul(spec, chip); a refusal (VMEM, shapes) becomes
// std::invalid_argument naming --batch, --d-model and --d-ff and the matmul (`what`).
std::string sized_matmul(const programs::MatmulSpec& spec, const ChipConfig& chip, const std::string& what,
                         std::uint64_t batch, std::uint64_t d_model, std::uint64_t d_ff);

// --strategy pp (workloads/mlp_pipeline.cpp): a GPipe pipeline of one MLP
// block per chip along x, --microbatches microbatches; throws api::BadInput.
Built build_mlp_pipeline(const Setup& setup, const OptionValues& options);

}  // namespace tpuemu::workloads
