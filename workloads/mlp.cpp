// The mlp workload: one transformer MLP block, forward and backward, under
// the book's parallelism strategies (training.md; ../shared/WORKLOADS.md
// section 2). Global shapes: In[B, D] bf16, Wi[D, F], Wo[F, D] bf16, the
// upstream gradient G = dOut[B, D] bf16 (pseudo-random from --seed):
//   forward   H = In @ Wi (f32); A = bf16(relu(H)); Y = A @ Wo; Out = Y + In
//   backward  dWo = A^T @ G; dA = G @ Wo^T; dH = bf16(dA * (H > 0));
//             dWi = In^T @ dH; dX = dH @ Wi^T (the residual's + G is not added)
//   optimizer the weight gradients summed over the data axes.
//
// Strategies: mesh axes split into data axes (the book's X: tokens split,
// gradients reduced) and model axes (Y: F split, Megatron), major first:
//   dp       data = every axis; weights whole on every chip; dWi, dWo all-reduced
//   fsdp     data = every axis; weights' rows split over X, all-gathered before
//            each use (forward and backward), gradients reduce-scattered
//   tp       model = every axis; Wi[D, F_Y], Wo[F_Y, D]; activations between
//            layers split over tokens, all-gathered over Y before the block,
//            the partial outputs reduce-scattered over Y after it
//   fsdp+tp  data = x, model = the other axes (y, or y and z): both
// Activations between blocks (In, G, Out, dX) are split over tokens, data
// axes major, model axes minor (B_XY): the book's TP splits In over D
// instead; the bytes gathered and scattered are the same.
//
// Steps (every chip, one SPMD program each; "AG"/"RS" only where an axis set
// has more than one chip):
//   AG In over Y; AG Wi over X (fsdp); H = In @ Wi; AG Wo over X (fsdp);
//   Y = A @ Wo; RS Y over Y; Out = Y + In (f32 add);
//   AG G over Y; dWo = A^T @ G; RS (fsdp) / AR (dp) dWo over X;
//   AG Wo^T over X (fsdp); dA = G @ Wo^T; dWi = In^T @ dH;
//   RS / AR dWi over X; AG Wi^T over X (fsdp); dX = dH @ Wi^T; RS dX over Y.
// Not generated on the device (no generator for them yet): relu, its
// derivative, the f32 -> bf16 casts and the transposes. The chips are given
// A, dH, A^T, In^T and the transposed weights (as their own shards under
// fsdp) as the host computes them from its reference, so every matmul and
// collective runs on real data and every output is checked; the VPU/XLU
// time of those elementwise steps is missing from the step time.
//
// Padding: a gradient all-reduce (dp, sp), and fsdp's weight all-gathers and
// gradient reduce-scatters (not under sp), whose ring cannot split their
// bytes run padded with zeros (programs::padded_collective_bytes); a padded
// all-gather's or reduce-scatter's pieces are byte ranges of the device
// layout, not row blocks (docs/workloads.md, "Padded fsdp all-gathers").
//
// Host reference, bit for bit: every matmul by programs::matmul_reference
// (the MXU's order), every reduction by programs::collective_reference (the
// collective's order), the residual as one f32 add per element.
#include "workloads/mlp.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "api/errors.hpp"
#include "api/run.hpp"
#include "common/numerics.hpp"
#include "common/units.hpp"
#include "programs/collective_reference.hpp"
#include "programs/generators.hpp"
#include "programs/reference.hpp"
#include "workloads/cast_blocks.hpp"
#include "workloads/pieces.hpp"
#include "workloads/sharding.hpp"
#include "workloads/workload.hpp"

namespace tpuemu::workloads {

namespace {

// Every strategy with its --strategy name (pp is build_mlp_pipeline's).
constexpr std::array<std::pair<MlpStrategy, std::string_view>, 5> kStrategyNames{{{MlpStrategy::kDp, "dp"},
                                                                                  {MlpStrategy::kFsdp, "fsdp"},
                                                                                  {MlpStrategy::kTp, "tp"},
                                                                                  {MlpStrategy::kFsdpTp, "fsdp+tp"},
                                                                                  {MlpStrategy::kSp, "sp"}}};

std::string_view strategy_name(MlpStrategy strategy) {
  for (const auto& [s, name] : kStrategyNames) {
    if (s == strategy) return name;
  }
  return "?";
}

}  // namespace

std::optional<MlpStrategy> parse_mlp_strategy(std::string_view text) {
  for (const auto& [s, name] : kStrategyNames) {
    if (name == text) return s;
  }
  return std::nullopt;
}

MlpAxes mlp_axes(MlpStrategy strategy, std::size_t axis_count) {
  MlpAxes axes;
  for (std::size_t a = 0; a < axis_count; ++a) {
    const bool data = strategy == MlpStrategy::kDp || strategy == MlpStrategy::kFsdp || a == 0;
    if (strategy == MlpStrategy::kSp && a == 1) {
      axes.sequence.push_back(a);
    } else {
      (data && strategy != MlpStrategy::kTp ? axes.data : axes.model).push_back(a);
    }
  }
  axes.fsdp = strategy != MlpStrategy::kDp && strategy != MlpStrategy::kTp;
  return axes;
}

MlpAxes mlp_axes_with_roles(MlpStrategy strategy, std::size_t axis_count, const std::string& data,
                            const std::string& model, const std::string& sequence) {
  MlpAxes axes = mlp_axes(strategy, axis_count);
  struct Role {
    const char* option;
    const std::string& text;
    std::vector<std::size_t>& axes;
    bool allowed;
  };
  const bool fsdp_tp = strategy == MlpStrategy::kFsdpTp;
  const bool sp = strategy == MlpStrategy::kSp;
  std::array<Role, 3> roles{{{"--data-axes", data, axes.data, strategy != MlpStrategy::kTp},
                             {"--model-axes", model, axes.model, strategy == MlpStrategy::kTp || fsdp_tp || sp},
                             {"--sequence-axes", sequence, axes.sequence, sp}}};
  std::vector<std::size_t> taken;
  std::size_t unspecified = 0;
  for (Role& r : roles) {
    if (r.text.empty()) {
      unspecified += r.allowed ? 1 : 0;
      continue;
    }
    if (!r.allowed) {
      throw std::invalid_argument(
          fmt::format("{} {}: --strategy {} has no such axes", r.option, r.text, strategy_name(strategy)));
    }
    r.axes = parse_mesh_axes(r.text, r.option, axis_count);
    std::sort(r.axes.begin(), r.axes.end());
    for (std::size_t a : r.axes) {
      if (std::find(taken.begin(), taken.end(), a) != taken.end()) {
        throw std::invalid_argument(
            fmt::format("{} {}: mesh axis {} already has a role", r.option, r.text, axes_text({a})));
      }
      taken.push_back(a);
    }
  }
  for (Role& r : roles) {
    if (!r.text.empty() || !r.allowed) continue;
    if (unspecified == 1) {
      r.axes.clear();
      for (std::size_t a = 0; a < axis_count; ++a) {
        if (std::find(taken.begin(), taken.end(), a) == taken.end()) r.axes.push_back(a);
      }
    } else {
      std::erase_if(r.axes, [&](std::size_t a) { return std::find(taken.begin(), taken.end(), a) != taken.end(); });
    }
  }
  // Roles are disjoint by construction (given ones checked above, the others the defaults' disjoint sets
  // minus the given axes); what remains to check is that none is left out.
  for (std::size_t a = 0; a < axis_count; ++a) {
    const auto has = [&](const std::vector<std::size_t>& v) { return std::find(v.begin(), v.end(), a) != v.end(); };
    if (!has(axes.data) && !has(axes.model) && !has(axes.sequence)) {
      throw std::invalid_argument(fmt::format(
          "mesh axis {} has no role: give every axis to --data-axes, --model-axes or --sequence-axes (the workload "
          "has no replicas)",
          axes_text({a})));
    }
  }
  if ((fsdp_tp || sp) && axes.data.empty()) {
    throw std::invalid_argument(fmt::format("--strategy {} needs data axes (--data-axes)", fsdp_tp ? "fsdp+tp" : "sp"));
  }
  if (fsdp_tp && axes.model.empty()) throw std::invalid_argument("--strategy fsdp+tp needs model axes (--model-axes)");
  if (sp && axes.sequence.empty()) throw std::invalid_argument("--strategy sp needs sequence axes (--sequence-axes)");
  return axes;
}

MlpBook mlp_book(MlpStrategy strategy, double b, double d, double f, double x, double y, double m_x, double m_y,
                 const ChipConfig& chip, double s, double m_s) {
  const double c = chip.peak_bf16_flops();
  const double w = 2 * chip.ici.link_bandwidth;
  MlpBook book;
  book.t_math = 12 * b * d * f / (x * s * y * c);
  switch (strategy) {
    case MlpStrategy::kDp:
      book.t_comms = 8 * d * f / (w * m_x);
      book.formula = "T_math = 12BDF/(XC); T_comms = 8DF/(W M_X) (all-reduce of the bf16 gradients)";
      book.threshold_name = "tokens per chip B/X = C/(W M_X)";
      book.threshold = c / (w * m_x);
      break;
    case MlpStrategy::kFsdp:
      book.t_comms = 12 * d * f / (w * m_x);
      book.formula =
          "T_math = 12BDF/(XC); T_comms = (4DF + 8DF)/(W M_X) (all-gather the weights, reduce-scatter "
          "the gradients)";
      book.threshold_name = "tokens per chip B/X = C/(W M_X)";
      book.threshold = c / (w * m_x);
      break;
    case MlpStrategy::kTp:
      book.t_comms = 8 * b * d / (w * m_y);
      book.formula =
          "T_math = 12BDF/(YC); T_comms = (4BD + 4BD)/(W M_Y) (all-gather the activations, "
          "reduce-scatter the outputs)";
      book.threshold_name = "Y = M_Y F W / C (comms-bound above)";
      book.threshold = m_y * f * w / c;
      break;
    case MlpStrategy::kFsdpTp:
      // The book (training.md) lets the TP collectives (over Y) and the FSDP
      // ones (over X) overlap each other, T_comms = max of the two; at the
      // optimal X both are equal and compute-bound means B/N > (C/W)^2 /
      // (M_X M_Y F), its 2550^2 / (2F) at M_X M_Y = 2. T_comms here is their
      // sum: the workload runs them one after another.
      book.t_comms_tp = (4 * b * d / x + 8 * b * d / x) / (w * m_y);
      book.t_comms_fsdp = (4 * d * f / y + 8 * d * f / y) / (w * m_x);
      book.t_comms = book.t_comms_tp + book.t_comms_fsdp;
      book.formula = "T_math = 12BDF/(NC); T_comms = (4BD/X + 8BD/X)/(W M_Y) (TP) + (4DF/Y + 8DF/Y)/(W M_X) (FSDP)";
      book.threshold_name = "tokens per chip B/N = (C/W)^2 / (M_X M_Y F) (at the optimal X, TP and FSDP overlapped)";
      book.threshold = (c / w) * (c / w) / (m_x * m_y * f);
      break;
    case MlpStrategy::kSp:
      book.t_comms = (y > 1 ? (4 * b * d / (x * s) + 8 * b * d / (x * s)) / (w * m_y) : 0.0) +
                     (4 * d * f / y + 8 * d * f / y) / (w * m_x) + 8 * d * f / (x * y) / (w * m_s);
      book.formula =
          "T_math = 12BDF/(NC); T_comms = (4BD/(XS) + 8BD/(XS))/(W M_Y) (TP, when Y > 1) + (4DF/Y + 8DF/Y)/(W M_X) "
          "(FSDP) + 8DF/(XY)/(W M_S) (all-reduce of the gradient shards over the sequence axis S)";
      book.threshold_name = "none (the book gives no threshold for sequence parallelism)";
      book.threshold = 0;
      break;
  }
  return book;
}

namespace {

using nlohmann::json;

// Axes of length > 1 among `axes`: the book's M (hardware axes spanned).
double spanned(const std::vector<std::uint32_t>& lengths, const std::vector<std::size_t>& axes) {
  double n = 0;
  for (std::size_t a : axes) n += lengths[a] > 1 ? 1 : 0;
  return std::max(1.0, n);
}

std::string axes_name(const std::vector<std::size_t>& axes) {
  return axes.empty() ? "-" : axes_text(axes);
}

// Every chip's host values and references, computed once on first use (a
// run with data asks for inputs chip by chip, then checks).
struct MlpReference {
  std::once_flag once;
  // Inputs (per chip).
  std::vector<std::vector<float>> in_rows, in_gathered, g_rows, g_gathered, wi, wo, a, d_h;
  // Outputs before reduction (per chip, f32) and after, as device bytes.
  std::vector<std::vector<float>> h, y, d_wo, d_a, d_wi, d_x;
  std::vector<std::vector<float>> y_reduced, d_wo_reduced, d_wi_reduced, d_x_reduced;
  std::vector<std::vector<float>> out;
  // A padded fsdp reduce-scatter's outputs instead of d_wo_reduced and
  // d_wi_reduced: each chip's valid chunk bytes of the reduced gradient.
  std::vector<std::vector<std::uint8_t>> d_wo_chunk, d_wi_chunk;
};

class MlpWorkload final : public Workload {
 public:
  [[nodiscard]] std::string_view name() const override { return "mlp"; }
  [[nodiscard]] std::string_view summary() const override {
    return "a transformer MLP block (In @ Wi, relu, @ Wo, + In) forward and backward with the optimizer's gradient "
           "reduction, --strategy dp|fsdp|tp|fsdp+tp|sp|pp (the book's training.md)";
  }
  [[nodiscard]] std::vector<OptionSpec> options() const override {
    return {
        {"batch", "512", "B: tokens (batch x sequence)"},
        {"d-model", "256", "D: d_model"},
        {"d-ff", "512", "F: d_ff"},
        {"strategy", "fsdp",
         "dp (data over all axes), fsdp (data and weights over all axes), tp (model over all axes), fsdp+tp "
         "(fsdp over x, tp over the other axes), sp (fsdp over x, sequence over y, tp over z), pp (a pipeline of one "
         "block per chip along x); --data-axes, --model-axes and --sequence-axes move the roles"},
        {"data-axes", "",
         "mesh axes of the data role (the book's X: tokens split; fsdp: weights too), e.g. XY; default: the "
         "strategy's"},
        {"model-axes", "", "mesh axes of the model role (the book's Y: d_ff split; tp, fsdp+tp, sp), e.g. Z"},
        {"sequence-axes", "", "mesh axes of the sequence role (sp only: tokens split, weights whole)"},
        {"microbatches", "", "pipeline microbatches (only with --strategy pp; default 1)"},
        {"grad-dtype", "bf16",
         "the weight gradients' dtype in their reductions over the data (and sequence) axes: bf16 (the book's: each "
         "chip's gradient matmul accumulates in f32 and writes bf16, then the reduction adds in bf16) or f32"},
        {"act-dtype", "bf16",
         "the activations' partial sums in their reduce-scatters over the model axes (Y forward, dX backward; tp, "
         "fsdp+tp, sp): bf16 (the book's: the matmul accumulates in f32 and writes bf16, then the reduction adds in "
         "bf16, and Out = Y + In widens Y) or f32"},
        {"algo", "multi-axis", "the collectives' algorithm (tpuemu collective --algo list)"},
        {"seed", "1", "seed of the pseudo-random bf16 inputs"}};
  }

  [[nodiscard]] Built build(const Setup& setup, const OptionValues& options) const override {
    const ChipConfig& chip = setup.chip;
    const ici::Topology& topology = setup.topology;
    const std::string strategy_text = options.text("strategy");
    if (strategy_text == "pp") {
      for (const char* role : {"data-axes", "model-axes", "sequence-axes"}) {
        if (!options.text(role).empty()) {
          throw api::BadInput(fmt::format("--{} {}: a pipeline (--strategy pp) has its stages along x and no roles",
                                          role, options.text(role)));
        }
      }
      return build_mlp_pipeline(setup, options);
    }
    const auto strategy = parse_mlp_strategy(strategy_text);
    if (!strategy) {
      throw api::BadInput(fmt::format("--strategy '{}': expected dp, fsdp, tp, fsdp+tp, sp or pp", strategy_text));
    }
    if (!options.text("microbatches").empty()) {
      throw api::BadInput(fmt::format("--microbatches {}: only a pipeline (--strategy pp) has microbatches",
                                      options.text("microbatches")));
    }
    constexpr std::uint64_t kMaxDim = 1ULL << 22;
    const std::uint64_t B = options.whole("batch", 1, kMaxDim);
    const std::uint64_t D = options.whole("d-model", 1, kMaxDim);
    const std::uint64_t F = options.whole("d-ff", 1, kMaxDim);
    const auto seed = static_cast<std::uint32_t>(options.whole("seed", 0, std::numeric_limits<std::uint32_t>::max()));
    const std::string algorithm = options.text("algo");
    const auto reduction_dtype = [&](const char* option) {
      const std::string text = options.text(option);
      if (text != "bf16" && text != "f32") {
        throw api::BadInput(fmt::format("--{} '{}': expected bf16 or f32", option, text));
      }
      return text;
    };
    const std::string grad_dtype_text = reduction_dtype("grad-dtype");
    const std::string act_dtype_text = reduction_dtype("act-dtype");
    const auto lengths = axis_lengths(topology);
    if ((*strategy == MlpStrategy::kFsdpTp || *strategy == MlpStrategy::kSp) && topology.axis_count() < 2) {
      throw api::BadInput(fmt::format(
          "--strategy {}: needs a mesh of 2 or 3 axes ({}); --topology {} has one", strategy_text,
          *strategy == MlpStrategy::kSp ? "fsdp over x, sequence over y, tp over z" : "fsdp over x, tp over the others",
          topology.shape()));
    }
    const MlpAxes axes = [&] {
      try {
        return mlp_axes_with_roles(*strategy, topology.axis_count(), options.text("data-axes"),
                                   options.text("model-axes"), options.text("sequence-axes"));
      } catch (const std::invalid_argument& e) {
        throw api::BadInput(e.what());
      }
    }();
    const std::uint64_t dx = shard_count(lengths, axes.data);
    const std::uint64_t sq = shard_count(lengths, axes.sequence);  // sequence split (sp), else 1
    const std::vector<std::size_t> token_axes = concat_axes(axes.data, axes.sequence);
    const std::uint64_t tx = dx * sq;  // the tokens' split inside the block
    const std::uint64_t my = shard_count(lengths, axes.model);
    const std::string x_name = axes_name(axes.data);
    const std::string y_name = axes_name(axes.model);

    // 1. Sizes every chip works on, and what the generators need of them.
    if (B % (tx * my) != 0) {
      throw api::BadInput(
          fmt::format("--batch {}: the tokens are split over {} ({} x {} = {} blocks), but {} does "
                      "not split into {} equal blocks",
                      B, axes_text(concat_axes(token_axes, axes.model)), tx, my, tx * my, B, tx * my));
    }
    if (F % my != 0) {
      throw api::BadInput(
          fmt::format("--d-ff {}: F is split over the model axes {} ({} blocks), but {} does not "
                      "split into {} equal blocks",
                      F, y_name, my, F, my));
    }
    const std::uint64_t b = B / tx;  // tokens per chip inside the block
    const std::uint64_t r = b / my;  // tokens per chip between blocks
    const std::uint64_t f = F / my;  // F per chip
    // The weight gradients' reductions (over the data axes, then the sequence
    // axes) run in `gdt`: under bf16 (the book's bytes) each chip's gradient
    // matmul rounds its f32 sums to bf16 as it writes them; with no reduction
    // (one token block) they stay the matmul's f32.
    const bool grad_bf16 = grad_dtype_text == "bf16" && tx > 1;
    const std::string gdt = grad_bf16 ? "bf16" : "f32";
    const std::uint64_t ge = grad_bf16 ? 2 : 4;  // bytes per gradient element
    const std::uint64_t grad_tile_rows = grad_bf16 ? kBf16TileRows : kF32TileRows;
    // The activations' partial sums (Y, dX) reduce-scattered over the model
    // axes in `adt`: under bf16 (the book's bytes) their matmuls round the
    // f32 sums to bf16 as they write them, and the residual add widens Y.
    const bool act_bf16 = act_dtype_text == "bf16" && my > 1;
    const std::string adt = act_bf16 ? "bf16" : "f32";
    const std::uint64_t ae = act_bf16 ? 2 : 4;  // bytes per activation element in the reductions
    const auto need = [](bool ok, const std::string& message) {
      if (!ok) throw api::BadInput(message);
    };
    // The weight gradients contract over the chip's tokens: the generated
    // matmul needs whole 128-row k-blocks (a shorter K faults on the MXU).
    need(b % kTileCols == 0, fmt::format("--batch {}: each chip multiplies {} tokens (the weight gradients' "
                                         "contracting dimension); they must be a multiple of {}",
                                         B, b, kTileCols));
    need(D % kTileCols == 0, fmt::format("--d-model {}: D must be a multiple of {} (whole tiles)", D, kTileCols));
    need(f % kTileCols == 0,
         fmt::format("--d-ff {}: each chip's F block ({}) must be a multiple of {} (whole tiles)", F, f, kTileCols));
    if (my > 1) {
      need(r % kBf16TileRows == 0,
           fmt::format("--batch {}: the all-gather over {} moves {} token rows per chip; they must be whole bf16 "
                       "tiles (a multiple of {})",
                       B, y_name, r, kBf16TileRows));
    }
    if (axes.fsdp && dx > 1) {
      need(D % (dx * kBf16TileRows) == 0,
           fmt::format("--d-model {}: fsdp splits the weights' D rows over {} ({} blocks); each must be whole bf16 "
                       "tiles (a multiple of {} rows)",
                       D, x_name, dx, kBf16TileRows));
      need(f % (dx * kBf16TileRows) == 0,
           fmt::format("--d-ff {}: fsdp splits each chip's F block ({} rows) over {} ({} blocks); each must be whole "
                       "bf16 tiles (a multiple of {} rows)",
                       F, f, x_name, dx, kBf16TileRows));
    }

    // 2. Programs: matmuls, collectives, the residual add.
    const auto matmul_spec = [](std::uint64_t m, std::uint64_t k, std::uint64_t n) {
      return programs::MatmulSpec{m, k, n, "bf16", true};
    };
    const programs::MatmulSpec mm_h = matmul_spec(b, D, f);
    programs::MatmulSpec mm_y = matmul_spec(b, f, D);
    mm_y.out_dtype = adt;
    // The weight gradients' matmuls write gdt: under bf16 the matmul rounds its f32 accumulator to bf16 as it
    // stores C (an XLA dot with f32 accumulation and a bf16 result), the reduction's input.
    programs::MatmulSpec mm_dwo = matmul_spec(f, b, D);
    mm_dwo.out_dtype = gdt;
    const programs::MatmulSpec mm_da = matmul_spec(b, D, f);
    programs::MatmulSpec mm_dwi = matmul_spec(D, b, f);
    mm_dwi.out_dtype = gdt;
    programs::MatmulSpec mm_dx = matmul_spec(b, f, D);
    mm_dx.out_dtype = adt;
    // fsdp's weight all-gathers and gradient reduce-scatters over the data
    // axes pad too (below), except under sp, whose sequence all-reduce
    // needs whole gradient rows on every chip.
    const bool pad_fsdp = axes.fsdp && dx > 1 && sq == 1;
    const auto collective = [&](const std::string& op, const std::vector<std::size_t>& over, const std::string& dtype,
                                std::uint64_t bytes, bool pad = false) {
      programs::CollectiveSpec spec;
      spec.op = op;
      spec.algorithm = algorithm;
      spec.dtype = dtype;
      spec.bytes = bytes;
      spec.axes.assign(over.rbegin(), over.rend());  // the collective's first axis varies fastest in its rank
      // An all-reduce of a size its ring cannot split runs padded with zeros
      // (programs::padded_collective_bytes): its buffers take the padded size
      // (a pod buffer is as large as its largest use), the references cut back.
      // So does an all-gather or reduce-scatter asked to (`pad`): its pieces
      // are then byte ranges of the device layout, Q_pad = V_pad / N each
      // (programs/collectives.hpp), not the chips' row blocks.
      if ((op == "all-reduce" || pad) && !over.empty()) {
        try {
          spec.bytes = programs::padded_collective_bytes(spec, topology);
        } catch (const std::invalid_argument&) {  // generate_collective names the problem below
        }
      }
      return spec;
    };
    const std::string reduce_op = axes.fsdp ? "reduce-scatter" : "all-reduce";
    const auto ag_in = collective("all-gather", axes.model, "bf16", b * D * 2);
    const auto rs_y = collective("reduce-scatter", axes.model, adt, b * D * ae);
    const auto ag_wi = collective("all-gather", axes.data, "bf16", D * f * 2, pad_fsdp);
    const auto ag_wo = collective("all-gather", axes.data, "bf16", f * D * 2, pad_fsdp);
    const auto red_dwo = collective(reduce_op, axes.data, gdt, f * D * ge, pad_fsdp);
    const auto red_dwi = collective(reduce_op, axes.data, gdt, D * f * ge, pad_fsdp);
    // Padded: the weights' all-gathers (all four of D x f bf16) and the gradients' reduce-scatters
    // (both D x f of gdt); either may pad without the other.
    const bool padded_ag = pad_fsdp && ag_wi.bytes != D * f * 2;
    const bool padded_rs = pad_fsdp && red_dwo.bytes != f * D * ge;
    const std::uint64_t grad_f = axes.fsdp && dx > 1 ? f / dx : f;  // the gradients' rows after the data reduction
    const std::uint64_t grad_d = axes.fsdp && dx > 1 ? D / dx : D;
    const auto seq_dwo = collective("all-reduce", axes.sequence, gdt, grad_f * D * ge);
    const auto seq_dwi = collective("all-reduce", axes.sequence, gdt, grad_d * f * ge);
    // The bytes each collective was asked for (a padded all-reduce runs more).
    const std::map<const programs::CollectiveSpec*, std::uint64_t> asked{
        {&ag_in, b * D * 2},    {&rs_y, b * D * ae},    {&ag_wi, D * f * 2},         {&ag_wo, f * D * 2},
        {&red_dwo, f * D * ge}, {&red_dwi, D * f * ge}, {&seq_dwo, grad_f * D * ge}, {&seq_dwi, grad_d * f * ge}};
    if (dx > 1) {
      need(!axes.fsdp || (f % (dx * grad_tile_rows) == 0 && D % (dx * grad_tile_rows) == 0),
           fmt::format("--d-ff {} / --d-model {}: the gradients' reduce-scatter over {} leaves each chip {} and {} "
                       "rows; they must be whole {} tiles (a multiple of {})",
                       F, D, x_name, f / dx, D / dx, gdt, grad_tile_rows));
    }
    // The reduce-scatters over the model axes leave each chip r token rows, whole tiles of either
    // dtype: the all-gather's check above (r a multiple of 16) covers them.

    Built built;
    std::map<std::string, std::shared_ptr<const isa::Program>> programs_by_file;
    const auto assemble = [&](const std::string& file, const std::function<std::string()>& text) {
      auto& p = programs_by_file[file];
      if (!p) p = api::assemble(text(), file);
      return p;
    };
    const auto add_matmul = [&](const std::string& what, const programs::MatmulSpec& whole, const std::string& a,
                                const std::string& bb, const std::string& c) {
      const programs::MatmulSpec spec = on_every_core(whole, chip);
      const std::string file = fmt::format("matmul_{}x{}x{}{}.llo", spec.m, spec.k, spec.n,
                                           spec.out_dtype == "f32" ? "" : "_" + spec.out_dtype);
      built.steps.push_back(
          {assemble(file, [&] { return sized_matmul(spec, chip, what, B, D, F); }), file, {{0, a}, {1, bb}, {2, c}}});
      Phase p = matmul_phase(spec, chip);
      p.name = fmt::format("{} {}x{}x{}", what, spec.m, spec.k, spec.n);
      built.phases.push_back(std::move(p));
    };
    // Chips end a step at different times (a ring over an axis without
    // wraparound ends at different times on different chips, and nothing
    // waits between steps), so a collective's first deliveries may reach a
    // chip still in an earlier step. Each collective step therefore gets
    // its own sync flags (its allocation moved to a range no other step
    // uses: matmuls and adds use the bottom of the flag space, the ring
    // shift the top two) and its own HBM scratch, so early deliveries only
    // wait in its flags and buffers until the chip gets there.
    std::uint64_t next_flag = kCollectiveFlagBase;
    std::size_t collectives = 0;
    const auto add_collective = [&](const std::string& what, const programs::CollectiveSpec& spec,
                                    const std::string& in, const std::string& out) {
      const std::string file =
          fmt::format("{}_{}_{}_{}_{}.llo", spec.op, spec.dtype, spec.bytes, axes_text(spec.axes), collectives++);
      std::map<std::uint32_t, std::string> buffers{{0, in}, {1, out}};
      if (spec.op != "all-gather") buffers[2] = fmt::format("scratch {}", collectives);
      const std::string text =
          with_own_flags(programs::generate_collective(spec, topology, chip), next_flag, chip, "mlp");
      built.steps.push_back({api::assemble(text, file), file, buffers});
      Phase p = collective_phase(spec, topology, chip, what);
      if (const auto it = asked.find(&spec); it != asked.end() && it->second != spec.bytes) {
        p.name += fmt::format(" (padded {} -> {} B)", it->second, spec.bytes);
        p.detail["padded_from_bytes"] = it->second;
      }
      p.own_flags = true;
      built.phases.push_back(std::move(p));
    };
    try {
      refuse_other_mxu(chip, "mlp");
      // Forward.
      if (my > 1) add_collective("In", ag_in, "In shard", "In");
      if (axes.fsdp && dx > 1) add_collective("Wi", ag_wi, "Wi shard", "Wi");
      add_matmul("fwd H = In @ Wi", mm_h, "In", "Wi", "H");
      if (axes.fsdp && dx > 1) add_collective("Wo", ag_wo, "Wo shard", "Wo");
      add_matmul("fwd Y = A @ Wo", mm_y, "A", "Wo", my > 1 ? "Y partial" : "Y");
      if (my > 1) add_collective("Y", rs_y, "Y partial", "Y");
      {
        programs::AddSpec add{r * D, std::min<std::uint64_t>(1 << 20, r * D * 4)};
        add.a_dtype = adt;
        const std::string file = fmt::format("add_{}{}.llo", add.n, act_bf16 ? "_bf16" : "");
        built.steps.push_back({assemble(file, [&] { return programs::generate_add(add, chip); }),
                               file,
                               {{0, "Y"}, {1, "In f32"}, {2, "Out"}}});
        Phase p;
        p.name = fmt::format("fwd Out = Y + In ({} f32{})", add.n, act_bf16 ? ", Y bf16" : "");
        const double bytes = static_cast<double>(8 + ae) * static_cast<double>(add.n);
        p.predicted_seconds = bytes / chip.hbm.bandwidth;
        p.book_seconds = 0;
        p.prediction = fmt::format("T_HBM = {} / HBM bandwidth (the book counts no time for it)",
                                   format_quantity(bytes, Quantity::kBytes));
        p.detail = {{"op", "add"}, {"elements", add.n}};
        built.phases.push_back(std::move(p));
      }
      // Backward.
      if (my > 1) add_collective("G", ag_in, "G shard", "G");
      // Gradients: summed over the data axes (into "dW over X" when the sequence axes follow), then over the sequence
      // axes.
      add_matmul("bwd dWo = A^T @ G", mm_dwo, "AT", "G", tx > 1 ? "dWo partial" : "dWo");
      if (dx > 1) add_collective("dWo", red_dwo, "dWo partial", sq > 1 ? "dWo over X" : "dWo");
      if (sq > 1) add_collective("dWo", seq_dwo, dx > 1 ? "dWo over X" : "dWo partial", "dWo");
      if (axes.fsdp && dx > 1) add_collective("Wo^T", ag_wi, "WoT shard", "WoT");
      add_matmul("bwd dA = G @ Wo^T", mm_da, "G", "WoT", "dA");
      add_matmul("bwd dWi = In^T @ dH", mm_dwi, "InT", "dH", tx > 1 ? "dWi partial" : "dWi");
      if (dx > 1) add_collective("dWi", red_dwi, "dWi partial", sq > 1 ? "dWi over X" : "dWi");
      if (sq > 1) add_collective("dWi", seq_dwi, dx > 1 ? "dWi over X" : "dWi partial", "dWi");
      if (axes.fsdp && dx > 1) add_collective("Wi^T", ag_wo, "WiT shard", "WiT");
      add_matmul("bwd dX = dH @ Wi^T", mm_dx, "dH", "WiT", my > 1 ? "dX partial" : "dX");
      if (my > 1) add_collective("dX", rs_y, "dX partial", "dX");
    } catch (const std::invalid_argument& e) {
      if (std::string_view(e.what()).starts_with("collective: unknown algorithm")) {
        throw api::BadInput(fmt::format("--algo: {}", e.what()));
      }
      throw api::BadInput(e.what());
    }
    const double bd = static_cast<double>(B), dd = static_cast<double>(D), fd = static_cast<double>(F);
    built.model_flops = 12 * bd * dd * fd;

    // 3. Host data; every chip's blocks, shards and references.
    const LazyBf16 in_all = lazy_bf16_values(B * D, seed);
    const LazyBf16 wi_all = lazy_bf16_values(D * F, seed + 1);
    const LazyBf16 wo_all = lazy_bf16_values(F * D, seed + 2);
    const LazyBf16 g_all = lazy_bf16_values(B * D, seed + 3);
    const std::uint32_t chips = topology.chip_count();
    const auto data_index = [=](std::uint32_t id) {  // the chip's weight shard (fsdp)
      return shard_index(chip_coords(topology, id), lengths, axes.data);
    };
    const auto token_index = [=](std::uint32_t id) {  // the chip's block of tokens
      return shard_index(chip_coords(topology, id), lengths, token_axes);
    };
    const auto model_index = [=](std::uint32_t id) {
      return shard_index(chip_coords(topology, id), lengths, axes.model);
    };
    const auto ref = std::make_shared<MlpReference>();
    // Every chip's values, references and reduced outputs (once: the run asks chip by chip).
    const auto compute = [=]() {
      MlpReference& R = *ref;
      std::vector<std::vector<std::uint8_t>> y_bytes, dwo_bytes, dwi_bytes, dx_bytes;
      for (std::uint32_t id = 0; id < chips; ++id) {
        const std::uint64_t xi = token_index(id), yi = model_index(id);
        R.in_rows.push_back(matrix_block(in_all->get(), D, (xi * my + yi) * r, r, 0, D));
        R.in_gathered.push_back(matrix_block(in_all->get(), D, xi * b, b, 0, D));
        R.g_rows.push_back(matrix_block(g_all->get(), D, (xi * my + yi) * r, r, 0, D));
        R.g_gathered.push_back(matrix_block(g_all->get(), D, xi * b, b, 0, D));
        R.wi.push_back(matrix_block(wi_all->get(), F, 0, D, yi * f, f));
        R.wo.push_back(matrix_block(wo_all->get(), D, yi * f, f, 0, D));
        R.h.push_back(programs::matmul_reference(R.in_gathered[id], R.wi[id], b, D, f));
        std::vector<float> a(R.h[id].size());
        for (std::size_t e = 0; e < a.size(); ++e) a[e] = bf16_round(std::max(R.h[id][e], 0.0F));
        R.a.push_back(std::move(a));
        R.y.push_back(programs::matmul_reference(R.a[id], R.wo[id], b, f, D));
        R.d_wo.push_back(programs::matmul_reference(transpose(R.a[id], b, f), R.g_gathered[id], f, b, D));
        R.d_a.push_back(programs::matmul_reference(R.g_gathered[id], transpose(R.wo[id], f, D), b, D, f));
        std::vector<float> dh(R.d_a[id].size());
        for (std::size_t e = 0; e < dh.size(); ++e) dh[e] = R.h[id][e] > 0 ? bf16_round(R.d_a[id][e]) : 0.0F;
        R.d_h.push_back(std::move(dh));
        R.d_wi.push_back(programs::matmul_reference(transpose(R.in_gathered[id], b, D), R.d_h[id], D, b, f));
        R.d_x.push_back(programs::matmul_reference(R.d_h[id], transpose(R.wi[id], D, f), b, f, D));
        // Under act_bf16 the device layout of bf16 rounds to nearest even, as the matmul's bf16 C does.
        y_bytes.push_back(device_matrix(R.y[id], b, D, adt, "Y"));
        // Under grad_bf16 the device layout of bf16 rounds to nearest even, as the matmul's bf16 C does.
        dwo_bytes.push_back(device_matrix(R.d_wo[id], f, D, gdt, "dWo"));
        dwi_bytes.push_back(device_matrix(R.d_wi[id], D, f, gdt, "dWi"));
        dx_bytes.push_back(device_matrix(R.d_x[id], b, D, adt, "dX"));
      }
      // The collectives' order of f32 additions, on device bytes (which part
      // of a multi-axis collective sums an element depends on its place in
      // the device layout); a reduce-scatter leaves rank r the r-th row block.
      const auto reduce = [&](const programs::CollectiveSpec& spec, bool over,
                              const std::vector<std::vector<std::uint8_t>>& in, std::uint64_t cols,
                              const programs::CollectiveSpec* then = nullptr, const std::string& dtype = "f32") {
        // A padded all-reduce: zeros after each chip's bytes, the result cut back to them.
        const auto reduced = [&](const programs::CollectiveSpec& s, std::vector<std::vector<std::uint8_t>> chips) {
          std::vector<std::size_t> sizes;
          for (auto& c : chips) {
            sizes.push_back(c.size());
            if (s.op == "all-reduce") c.resize(std::max<std::size_t>(c.size(), s.bytes), 0);
          }
          auto out = programs::collective_reference(s, topology, chips);
          if (s.op == "all-reduce") {
            for (std::size_t i = 0; i < out.size(); ++i) out[i].resize(sizes[i]);
          }
          return out;
        };
        std::vector<std::vector<std::uint8_t>> bytes = over ? reduced(spec, in) : in;
        if (then != nullptr) bytes = reduced(*then, bytes);
        std::vector<std::vector<float>> out;
        const std::uint64_t element = dtype == "bf16" ? 2 : 4;
        for (const auto& chip_bytes : bytes) {
          out.push_back(host_matrix(chip_bytes, chip_bytes.size() / (cols * element), cols, dtype));
        }
        return out;
      };
      R.y_reduced = reduce(rs_y, my > 1, y_bytes, D, nullptr, adt);
      R.d_x_reduced = reduce(rs_y, my > 1, dx_bytes, D, nullptr, adt);
      if (padded_rs) {
        // Zeros after each chip's gradient; rank r keeps its valid bytes of the Q_pad chunk.
        const auto chunks = [&](const programs::CollectiveSpec& spec, std::vector<std::vector<std::uint8_t>> in) {
          const std::uint64_t bytes = in.front().size();
          for (auto& c : in) c.resize(spec.bytes, 0);
          auto out = programs::collective_reference(spec, topology, in);
          for (std::uint32_t id = 0; id < chips; ++id) {
            out[id].resize(programs::collective_valid_chunk_bytes(bytes, spec.bytes, dx, data_index(id)));
          }
          return out;
        };
        R.d_wo_chunk = chunks(red_dwo, dwo_bytes);
        R.d_wi_chunk = chunks(red_dwi, dwi_bytes);
      } else {
        R.d_wo_reduced = reduce(red_dwo, dx > 1, dwo_bytes, D, sq > 1 ? &seq_dwo : nullptr, gdt);
        R.d_wi_reduced = reduce(red_dwi, dx > 1, dwi_bytes, f, sq > 1 ? &seq_dwi : nullptr, gdt);
      }
      for (std::uint32_t id = 0; id < chips; ++id) {
        std::vector<float> out = R.y_reduced[id];
        for (std::size_t e = 0; e < out.size(); ++e) out[e] += R.in_rows[id][e];
        R.out.push_back(std::move(out));
      }
    };
    const auto reference = [=]() -> const MlpReference& {
      std::call_once(ref->once, compute);
      return *ref;
    };
    const auto give = [&](const std::string& buffer, const std::string& dtype, std::uint64_t rows, std::uint64_t cols,
                          std::function<std::vector<float>(std::uint32_t)> values) {
      api::Input in;
      in.origin = buffer;
      in.device_provider = [=](std::uint32_t id, const chip::OperandBinding&) {
        return device_matrix(values(id), rows, cols, dtype, buffer);
      };
      built.inputs[buffer] = std::move(in);
    };
    // Weight shards: rows of the chip's model block, split over the data axes (fsdp).
    const auto shard_rows = [=](const std::vector<float>& m, std::uint64_t rows, std::uint64_t cols, std::uint32_t id) {
      if (!axes.fsdp || dx == 1) return m;
      const std::uint64_t per = rows / dx;
      return matrix_block(m, cols, data_index(id) * per, per, 0, cols);
    };
    const bool gather_weights = axes.fsdp && dx > 1;
    // A padded all-gather's pieces: rank r gives the bytes [r Q_pad, min((r + 1) Q_pad, V)) of the
    // whole matrix's device layout, zeros after them up to Q_pad.
    const auto give_piece = [&](const std::string& buffer, std::uint64_t rows, std::uint64_t cols,
                                std::function<std::vector<float>(std::uint32_t)> whole) {
      api::Input in;
      in.origin = buffer;
      const std::uint64_t padded = ag_wi.bytes, q = padded / dx;
      in.device_provider = [=](std::uint32_t id, const chip::OperandBinding&) {
        const std::vector<std::uint8_t> all = device_matrix(whole(id), rows, cols, "bf16", buffer);
        const std::uint64_t start = std::min<std::uint64_t>(data_index(id) * q, all.size());
        std::vector<std::uint8_t> piece(q, 0);
        const std::uint64_t n = std::min<std::uint64_t>(q, all.size() - start);
        std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(start), n, piece.begin());
        return piece;
      };
      built.inputs[buffer] = std::move(in);
    };
    give(my > 1 ? "In shard" : "In", "bf16", my > 1 ? r : b, D,
         [=](std::uint32_t id) { return my > 1 ? reference().in_rows[id] : reference().in_gathered[id]; });
    give("In f32", "f32", r, D, [=](std::uint32_t id) { return reference().in_rows[id]; });
    give(my > 1 ? "G shard" : "G", "bf16", my > 1 ? r : b, D,
         [=](std::uint32_t id) { return my > 1 ? reference().g_rows[id] : reference().g_gathered[id]; });
    if (padded_ag) {
      give_piece("Wi shard", D, f, [=](std::uint32_t id) { return reference().wi[id]; });
      give_piece("Wo shard", f, D, [=](std::uint32_t id) { return reference().wo[id]; });
      give_piece("WoT shard", D, f, [=](std::uint32_t id) { return transpose(reference().wo[id], f, D); });
      give_piece("WiT shard", f, D, [=](std::uint32_t id) { return transpose(reference().wi[id], D, f); });
    } else {
      give(gather_weights ? "Wi shard" : "Wi", "bf16", gather_weights ? D / dx : D, f,
           [=](std::uint32_t id) { return shard_rows(reference().wi[id], D, f, id); });
      give(gather_weights ? "Wo shard" : "Wo", "bf16", gather_weights ? f / dx : f, D,
           [=](std::uint32_t id) { return shard_rows(reference().wo[id], f, D, id); });
      give(gather_weights ? "WoT shard" : "WoT", "bf16", gather_weights ? D / dx : D, f,
           [=](std::uint32_t id) { return shard_rows(transpose(reference().wo[id], f, D), D, f, id); });
      give(gather_weights ? "WiT shard" : "WiT", "bf16", gather_weights ? f / dx : f, D,
           [=](std::uint32_t id) { return shard_rows(transpose(reference().wi[id], D, f), f, D, id); });
    }
    give("A", "bf16", b, f, [=](std::uint32_t id) { return reference().a[id]; });
    give("AT", "bf16", f, b, [=](std::uint32_t id) { return transpose(reference().a[id], b, f); });
    give("InT", "bf16", D, b, [=](std::uint32_t id) { return transpose(reference().in_gathered[id], b, D); });
    give("dH", "bf16", b, f, [=](std::uint32_t id) { return reference().d_h[id]; });

    // 4. The check: every output of every chip, bit for bit.
    built.check = [=](const api::Result& result) {
      const MlpReference& R = reference();
      struct Output {
        std::string buffer;
        std::uint64_t rows, cols;
        std::function<std::vector<float>(std::uint32_t)> expected;
      };
      const std::vector<Output> outputs = {{"H", b, f, [&](std::uint32_t id) { return R.h[id]; }},
                                           {"Out", r, D, [&](std::uint32_t id) { return R.out[id]; }},
                                           {"dWo", grad_f, D, [&](std::uint32_t id) { return R.d_wo_reduced[id]; }},
                                           {"dA", b, f, [&](std::uint32_t id) { return R.d_a[id]; }},
                                           {"dWi", grad_d, f, [&](std::uint32_t id) { return R.d_wi_reduced[id]; }},
                                           {"dX", r, D, [&](std::uint32_t id) { return R.d_x_reduced[id]; }}};
      json verdict{{"ok", true}, {"elements", 0}};
      std::vector<std::string> lines;
      for (const Output& o : outputs) {
        if (padded_rs && (o.buffer == "dWo" || o.buffer == "dWi")) {
          // A padded reduce-scatter's output: the chip's valid chunk bytes, byte for byte.
          const auto& want = o.buffer == "dWo" ? R.d_wo_chunk : R.d_wi_chunk;
          const nlohmann::json c = check_chunk_outputs(
              result.outputs.at(o.buffer).device, chips, o.buffer, [&](std::uint32_t id) { return want[id]; }, ge);
          verdict["elements"] = verdict["elements"].get<std::uint64_t>() + c["elements"].get<std::uint64_t>();
          if (!c["ok"].get<bool>()) {
            verdict["ok"] = false;
            lines.push_back(fmt::format("{}: {}", o.buffer, c["check"].get<std::string>()));
          }
          continue;
        }
        // A padded all-reduce's output (dWo, dWi) is longer: its first rows x cols elements (of gdt) are the
        // gradient.
        std::vector<std::vector<std::uint8_t>> device = result.outputs.at(o.buffer).device;
        const bool gradient = o.buffer == "dWo" || o.buffer == "dWi";
        if (gradient) {
          for (auto& d : device) d.resize(std::min<std::size_t>(d.size(), o.rows * o.cols * ge));
        }
        const json v = check_outputs(
            device, chips, o.buffer,
            gradient           ? gdt
            : o.buffer == "dX" ? adt
                               : "f32",
            [&](std::uint32_t) { return std::make_pair(o.rows, o.cols); }, o.expected);
        verdict["elements"] = verdict["elements"].get<std::uint64_t>() + v.at("elements").get<std::uint64_t>();
        if (!v.at("ok").get<bool>()) {
          verdict["ok"] = false;
          lines.push_back(fmt::format("{}: {}", o.buffer, v.at("check").get<std::string>()));
        }
      }
      verdict["check"] = verdict["ok"].get<bool>()
                             ? fmt::format("bit-exact ({} elements of H, Out, dWo, dA, dWi, dX on {} chips)",
                                           verdict["elements"].get<std::uint64_t>(), chips)
                             : fmt::format("MISMATCH: {}", fmt::join(lines, "; "));
      return verdict;
    };

    // 5. The book's prediction for the strategy, and the report's fields.
    const MlpBook book =
        mlp_book(*strategy, bd, dd, fd, static_cast<double>(dx), static_cast<double>(my), spanned(lengths, axes.data),
                 spanned(lengths, axes.model), chip, static_cast<double>(sq), spanned(lengths, axes.sequence));
    // The threshold as a value of an option, the others fixed (the sweep's vertical line).
    json threshold_at = json::object();
    if (*strategy == MlpStrategy::kTp) {
      threshold_at["d-ff"] = static_cast<double>(my) * chip.peak_bf16_flops() /
                             (2 * chip.ici.link_bandwidth * spanned(lengths, axes.model));
    } else {
      if (book.threshold > 0) threshold_at["batch"] = book.threshold * static_cast<double>(tx * my);
    }
    built.choice = {
        {"strategy", strategy_text},
        {"data_axes", axes_text(axes.data)},
        {"model_axes", axes_text(axes.model)},
        {"sequence_axes", axes_text(axes.sequence)},
        {"batch", B},
        {"d_model", D},
        {"d_ff", F},
        {"per_chip", {{"tokens", b}, {"tokens_between_blocks", r}, {"d_ff", f}}},
        {"tokens_per_chip", static_cast<double>(B) / (static_cast<double>(tx) * static_cast<double>(my))},
        {"activation", "relu (applied on the host between the matmuls)"},
        {"grad_dtype", gdt},
        {"act_dtype", adt},
        {"book",
         {{"t_math_seconds", book.t_math},
          {"t_comms_seconds", book.t_comms},
          {"seconds", std::max(book.t_math, book.t_comms)},
          {"formula", book.formula},
          {"threshold", book.threshold},
          {"threshold_name", book.threshold_name},
          {"threshold_at", threshold_at}}},
        {"reference",
         fmt::format("matmuls by programs::matmul_reference (the MXU's order), reductions by "
                     "programs::collective_reference (the collective's order{}), Out = Y + In in f32",
                     std::string(grad_bf16 ? "; the weight gradients rounded to bf16 (nearest even) first "
                                             "and summed in bf16, rounded at every add"
                                           : "") +
                         (act_bf16 ? "; Y and dX rounded to bf16 (nearest even) first and summed in bf16" : ""))}};
    std::string comms_text = format_quantity(book.t_comms, Quantity::kTime);
    if (*strategy == MlpStrategy::kFsdpTp) {
      built.choice["book"]["t_comms_tp_seconds"] = book.t_comms_tp;
      built.choice["book"]["t_comms_fsdp_seconds"] = book.t_comms_fsdp;
      comms_text += fmt::format(" (TP {} + FSDP {})", format_quantity(book.t_comms_tp, Quantity::kTime),
                                format_quantity(book.t_comms_fsdp, Quantity::kTime));
    }
    built.intro = {
        fmt::format("mlp: In[{},{}] @ Wi[{},{}] -> relu -> @ Wo[{},{}] + In, forward and backward, on a {} pod of {}",
                    B, D, D, F, F, D, ici::describe(topology), chip.name),
        fmt::format("  strategy {}: data axes X = {} ({} way{}), {}model axes Y = {} ({} way); per chip {} tokens, "
                    "F block {}",
                    strategy_text, x_name, dx, axes.fsdp ? ", weights sharded" : "",
                    sq > 1 ? fmt::format("sequence axes S = {} ({} way), ", axes_text(axes.sequence), sq) : "", y_name,
                    my, b, f),
        fmt::format("  the book: T_math {}, T_comms {}; {} = {:.4g}", format_quantity(book.t_math, Quantity::kTime),
                    comms_text, book.threshold_name, book.threshold),
        fmt::format("  weight gradients reduced in {}{}", gdt,
                    grad_bf16 ? " (the matmuls write bf16 from their f32 sums; the book's bytes)"
                    : tx > 1  ? " (--grad-dtype f32: twice the book's bytes)"
                              : " (no reduction: one token block)")};
    if (my > 1) {
      built.intro.push_back(fmt::format("  activations (Y, dX) reduce-scattered over {} in {}{}", y_name, adt,
                                        act_bf16 ? " (the matmuls write bf16 from their f32 sums; the book's bytes)"
                                                 : " (--act-dtype f32: twice the book's bytes)"));
    }
    return built;
  }
};

const WorkloadRegistrar kMlpRegistrar(std::make_unique<MlpWorkload>());

}  // namespace

std::string sized_matmul(const programs::MatmulSpec& spec, const ChipConfig& chip, const std::string& what,
                         std::uint64_t batch, std::uint64_t d_model, std::uint64_t d_ff) {
  try {
    return programs::generate_matmul(spec, chip);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(
        fmt::format("--batch {} --d-model {} --d-ff {}: the {}x{}x{} matmul of '{}' on every "
                    "chip: {}",
                    batch, d_model, d_ff, spec.m, spec.k, spec.n, what, e.what()));
  }
}

}  // namespace tpuemu::workloads
