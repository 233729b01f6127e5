// The attention workload: one multi-head self-attention layer, forward, with
// Megatron's tensor parallelism over heads (training.md's TP applied to
// attention; ../shared/WORKLOADS.md section 2). Global shapes: X[B*T, D]
// bf16 (replicated), W_q, W_k, W_v [D, H*d_head] bf16 (columns split over the
// model axes by heads), W_o[H*d_head, D] bf16 (rows split by heads), all
// pseudo-random from --seed. On a chip holding heads h0 .. h0+h-1:
//   QKV = X @ [W_q | W_k | W_v] (the chip's heads' columns, one matmul, f32)
//   for every sequence b and local head j:
//     S  = bf16(Q_bj) @ bf16(K_bj)^T                       [T, T] f32
//     P  = bf16(softmax(S / sqrt(d_head)) over keys)       [T, T] (on the VPU)
//     O  = P @ bf16(V_bj)                                  [T, d_head] f32
//   partial = bf16(O_b0 .. concatenated by heads) @ W_o rows of the chip's heads
//   out = all-reduce of partial over the model axes (f32); with --plan rs a
//         reduce-scatter instead (each chip B*T / Y token rows of out; a
//         padded one, where the ring cannot split the bytes, a byte range)
// No causal mask. Chips that differ only on the other axes are replicas.
//
// Steps (one SPMD program each, every chip): the QKV matmul; per sequence,
// the cast of every local head's Q, K^T (XLU transposes) and V out of QKV to
// bf16 (workloads/cast_blocks.hpp), per local head the scores matmul, the
// softmax (a generated VPU/EUP/XLU program: workloads/softmax.hpp) and P @ V,
// then the cast of the heads' O into the sequence's rows of "O cat"; the
// output projection; the collective. Everything runs on the device; the host
// gives only X and the weights.
//
// Host reference, bit for bit: every matmul by programs::matmul_reference
// (the MXU's order), the softmax by softmax_bf16_reference (the program's
// order of f32 operations), the reduction by programs::collective_reference
// (the collective's order, on device bytes).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "api/errors.hpp"
#include "api/roofline.hpp"
#include "api/run.hpp"
#include "common/numerics.hpp"
#include "common/units.hpp"
#include "programs/collective_algorithm.hpp"
#include "programs/collective_reference.hpp"
#include "programs/generators.hpp"
#include "programs/reference.hpp"
#include "workloads/cast_blocks.hpp"
#include "workloads/pieces.hpp"
#include "workloads/sharding.hpp"
#include "workloads/softmax.hpp"
#include "workloads/workload.hpp"

namespace tpuemu::workloads {
namespace {

using nlohmann::json;

// Heads whose Q, K^T and V one generated cast program slices out of QKV (3 operands each).
constexpr std::uint64_t kHeadsPerCast = 16;
// Heads per chip the concatenation of their outputs (one operand each) can bind.
constexpr std::uint64_t kMaxHeadsPerChip = 59;

// Rows [row0, row0 + rows), columns [col0, col0 + cols) of an f32 matrix of
// `width` columns, rounded to bf16.
std::vector<float> bf16_block(const std::vector<float>& m, std::uint64_t width, std::uint64_t row0, std::uint64_t rows,
                              std::uint64_t col0, std::uint64_t cols) {
  std::vector<float> out = matrix_block(m, width, row0, rows, col0, cols);
  for (float& v : out) v = bf16_round(v);
  return out;
}

// Every chip's host values and references, by model shard (replicas share
// them), computed once on first use.
struct AttentionReference {
  std::once_flag once;
  // Per model shard s.
  std::vector<std::vector<float>> w_qkv, w_o, qkv, o_cat, partial;
  // Per model shard, sequence b, local head j: index (b * h + j).
  std::vector<std::vector<std::vector<float>>> q, k_t, v, s, p, o;
  // Per chip, as host values: out after the all-reduce.
  std::vector<std::vector<float>> out;
  // A padded reduce-scatter's out instead: each chip's valid chunk bytes.
  std::vector<std::vector<std::uint8_t>> out_chunk;
};

class AttentionWorkload final : public Workload {
 public:
  [[nodiscard]] std::string_view name() const override { return "attention"; }
  [[nodiscard]] std::string_view summary() const override {
    return "one multi-head self-attention layer forward (QKV projection, softmax(QK^T/sqrt(d_head)) V per head, "
           "output projection), heads split over --model-axis (Megatron), partial outputs all-reduced (or "
           "reduce-scattered, --plan rs); all on the device";
  }
  [[nodiscard]] std::vector<OptionSpec> options() const override {
    return {{"batch", "2", "B: sequences"},
            {"seq", "256", "T: tokens per sequence (a multiple of 128)"},
            {"d-model", "512", "D: d_model (a multiple of 128)"},
            {"heads", "4", "H: attention heads, split over the model axes"},
            {"d-head", "128", "d_head: each head's width (a multiple of 128)"},
            {"model-axis", "X",
             "the mesh axes the heads are split over (X, Y, Z or several, major first, e.g. XY), or none; other "
             "axes hold replicas"},
            {"plan", "ar",
             "how the partial outputs are summed over the model axes: ar (all-reduce: out[B*T, D] on every chip) or rs "
             "(reduce-scatter: each chip its block of B*T / Y token rows)"},
            {"algo", "multi-axis", "the collective's algorithm (tpuemu collective --algo list)"},
            {"seed", "1", "seed of the pseudo-random bf16 inputs"}};
  }

  [[nodiscard]] Built build(const Setup& setup, const OptionValues& options) const override {
    const ChipConfig& chip = setup.chip;
    const ici::Topology& topology = setup.topology;
    constexpr std::uint64_t kMaxDim = 1ULL << 20;
    const std::uint64_t B = options.whole("batch", 1, kMaxDim);
    const std::uint64_t T = options.whole("seq", 1, kMaxDim);
    const std::uint64_t D = options.whole("d-model", 1, kMaxDim);
    const std::uint64_t H = options.whole("heads", 1, 1 << 16);
    const std::uint64_t dh = options.whole("d-head", 1, kMaxDim);
    const auto seed = static_cast<std::uint32_t>(options.whole("seed", 0, std::numeric_limits<std::uint32_t>::max()));
    const std::string axis_text = options.text("model-axis");
    const std::vector<std::size_t> model = [&] {
      try {
        return parse_mesh_axes(axis_text, "--model-axis", topology.axis_count());
      } catch (const std::invalid_argument& e) {
        throw api::BadInput(e.what());
      }
    }();
    const auto lengths = axis_lengths(topology);
    const std::uint64_t ways = shard_count(lengths, model);
    const std::string y_name = model.empty() ? "none" : axes_text(model);

    // 1. Sizes, and what the generators need of them.
    const auto need = [](bool ok, const std::string& message) {
      if (!ok) throw api::BadInput(message);
    };
    need(H % ways == 0, fmt::format("--heads {}: the heads are split over {} ({} ways), but {} heads do not split "
                                    "into {} equal groups",
                                    H, y_name, ways, H, ways));
    // The generated matmul contracts over whole 128-row k-blocks (a shorter K
    // faults on the MXU): D (QKV), d_head (scores) and T (P @ V).
    need(T % kTileCols == 0, fmt::format("--seq {}: P @ V contracts over the {} keys of a sequence; the generated "
                                         "matmul needs a multiple of {}",
                                         T, T, kTileCols));
    need(D % kTileCols == 0, fmt::format("--d-model {}: the QKV projection contracts over D; the generated matmul "
                                         "needs a multiple of {}",
                                         D, kTileCols));
    need(dh % kTileCols == 0, fmt::format("--d-head {}: the scores Q K^T contract over d_head; the generated matmul "
                                          "needs a multiple of {}",
                                          dh, kTileCols));
    const std::uint64_t h = H / ways;  // heads per chip
    need(h <= kMaxHeadsPerChip,
         fmt::format(
             "--heads {}: {} heads per chip; the program that concatenates their outputs binds at most {} (split "
             "them over more chips)",
             H, h, kMaxHeadsPerChip));
    const std::uint64_t hd = h * dh;  // the chip's columns of Q, K, V
    const std::uint64_t BT = B * T;
    const float scale = 1.0F / std::sqrt(static_cast<float>(dh));

    const programs::MatmulSpec mm_qkv{BT, D, 3 * hd, "bf16"};
    const programs::MatmulSpec mm_s{T, dh, T, "bf16"};
    const programs::MatmulSpec mm_o{T, T, dh, "bf16"};
    const programs::MatmulSpec mm_out{BT, hd, D, "bf16"};
    const bool reduces = ways > 1;
    const std::string plan = options.text("plan");
    need(plan == "ar" || plan == "rs",
         fmt::format("--plan '{}': expected ar (all-reduce) or rs (reduce-scatter)", plan));
    const bool scatter = reduces && plan == "rs";
    const std::uint64_t out_rows = scatter ? BT / ways : BT;  // out's token rows on a chip
    need(
        !scatter || BT % (ways * kF32TileRows) == 0,
        fmt::format("--plan rs: the reduce-scatter over {} leaves each chip {} / {} token rows; they must be whole f32 "
                    "tiles (a multiple of {})",
                    y_name, BT, ways, kF32TileRows));
    programs::CollectiveSpec reduce;
    reduce.op = scatter ? "reduce-scatter" : "all-reduce";
    reduce.dtype = "f32";
    reduce.bytes = BT * D * 4;
    reduce.algorithm = options.text("algo");
    reduce.axes.assign(model.rbegin(), model.rend());  // the collective's first axis varies fastest in its rank
    const std::uint64_t asked_bytes = reduce.bytes;
    // An all-reduce or reduce-scatter its ring cannot split runs padded with
    // zeros (programs::padded_collective_bytes; "partial out" and "out" take
    // the padded size, the reference cuts back). A padded reduce-scatter
    // leaves rank r the bytes [r Q_pad, min((r+1) Q_pad, V)) of the summed
    // out's device layout, Q_pad = V_pad / N, not a block of token rows.
    if (!reduce.axes.empty()) {
      try {
        reduce.bytes = programs::padded_collective_bytes(reduce, topology);
      } catch (const std::invalid_argument&) {  // generate_collective names the problem below
      }
    }
    const bool padded_scatter = scatter && reduce.bytes != asked_bytes;

    try {
      refuse_other_mxu(chip, "attention");
      if (chip.mxu.count == 0) throw std::invalid_argument(fmt::format("{} has no MXU (mxu.count 0)", chip.name));
    } catch (const std::invalid_argument& e) {
      throw api::BadInput(fmt::format("--chip {}: {}", chip.name, e.what()));
    }
    try {
      (void)programs::collective_algorithm(reduce.algorithm);
    } catch (const std::invalid_argument& e) {
      throw api::BadInput(fmt::format("--algo: {}", e.what()));
    }

    // 2. Steps and phases.
    Built built;
    std::map<std::string, std::shared_ptr<const isa::Program>> programs_by_file;
    const auto add_matmul = [&](const std::string& what, const programs::MatmulSpec& whole, const std::string& a,
                                const std::string& b, const std::string& c) {
      const programs::MatmulSpec spec = on_every_core(whole, chip);
      const std::string file = fmt::format("matmul_{}x{}x{}.llo", spec.m, spec.k, spec.n);
      auto& program = programs_by_file[file];
      if (!program) {
        try {
          program = api::assemble(programs::generate_matmul(spec, chip), file);
        } catch (const std::invalid_argument& e) {
          throw api::BadInput(
              fmt::format("--batch {} --seq {} --d-model {} --heads {} --d-head {}: the {}x{}x{} "
                          "matmul of '{}' on every chip: {}",
                          B, T, D, H, dh, spec.m, spec.k, spec.n, what, e.what()));
        }
      }
      built.steps.push_back({program, file, {{0, a}, {1, b}, {2, c}}});
      Phase p = matmul_phase(spec, chip);
      p.name = fmt::format("{} {}x{}x{}", what, spec.m, spec.k, spec.n);
      built.phases.push_back(std::move(p));
    };
    const auto head_buffer = [](const char* what, std::uint64_t b, std::uint64_t j) {
      return fmt::format("{} b{} h{}", what, b, j);
    };
    const auto add_softmax = [&](std::uint64_t b, std::uint64_t j) {
      const std::string file = fmt::format("softmax_{}x{}.llo", T, T);
      auto& program = programs_by_file[file];
      if (!program) {
        try {
          program = api::assemble(generate_softmax_bf16(T, T, scale, chip), file);
        } catch (const std::invalid_argument& e) {
          throw api::BadInput(
              fmt::format("--seq {}: the softmax over the {}x{} scores on every chip: {}", T, T, T, e.what()));
        }
      }
      built.steps.push_back({program, file, {{0, head_buffer("S", b, j)}, {1, head_buffer("P", b, j)}}});
      const SoftmaxOps ops = softmax_ops(T, T);
      const double bytes = 6.0 * static_cast<double>(T * T);
      const api::Roofline roof = api::compute_roofline(
          chip, 0, static_cast<double>(ops.valu) * static_cast<double>(chip.vpu.lanes * 8), bytes, 0);
      Phase p;
      p.name = fmt::format("P = softmax(S / sqrt(d_head)) (seq {}, head {}) {}x{}", b, j, T, T);
      p.predicted_seconds = roof.hbm_seconds + roof.vpu_seconds;
      p.prediction = fmt::format(
          "T_HBM = {} (S f32 in, P bf16 out) / HBM bandwidth = {} + T_VPU = {} VALU vreg ops / VPU rate = {}, "
          "one after the other (the program overlaps neither; the book counts no time for it)",
          format_quantity(bytes, Quantity::kBytes), format_quantity(roof.hbm_seconds, Quantity::kTime), ops.valu,
          format_quantity(roof.vpu_seconds, Quantity::kTime));
      p.detail = {{"op", "softmax"},
                  {"m", T},
                  {"n", T},
                  {"valu_ops", ops.valu},
                  {"eup_ops", ops.eup},
                  {"xlu_ops", ops.xlu},
                  {"least_hbm_bytes", bytes}};
      built.phases.push_back(std::move(p));
    };
    // A generated cast of blocks (workloads/cast_blocks.hpp): its phase predicted by its HBM bytes and its packs.
    const auto add_cast = [&](const std::string& what, const std::string& file,
                              const std::vector<CastOperand>& operands, const std::vector<CastBlock>& blocks,
                              std::map<std::uint32_t, std::string> buffers) {
      try {
        built.steps.push_back({api::assemble(generate_cast_blocks(operands, blocks, chip), file), file, buffers});
      } catch (const std::invalid_argument& e) {
        throw api::BadInput(fmt::format("--seq {} --d-head {}: {} on every chip: {}", T, dh, what, e.what()));
      }
      double elements = 0;
      std::uint64_t transposes = 0;
      for (const CastBlock& c : blocks) {
        elements += static_cast<double>(c.rows * c.cols);
        if (c.transpose) transposes += c.rows / 128 * (c.cols / 128);
      }
      const double bytes = 6 * elements;
      const api::Roofline roof = api::compute_roofline(chip, 0, elements, bytes, 0);
      Phase p;
      p.name = what;
      p.predicted_seconds = roof.hbm_seconds + roof.vpu_seconds;
      p.prediction = fmt::format(
          "T_HBM = {} (f32 in, bf16 out) / HBM bandwidth = {} + T_VPU = one pack per f32 tile = {}, one after the "
          "other{} (the book counts no time for it)",
          format_quantity(bytes, Quantity::kBytes), format_quantity(roof.hbm_seconds, Quantity::kTime),
          format_quantity(roof.vpu_seconds, Quantity::kTime),
          transposes > 0 ? fmt::format("; {} XLU transposes of 128x128 not counted", transposes) : std::string());
      p.detail = {{"op", "cast"}, {"elements", elements}, {"transposes", transposes}, {"least_hbm_bytes", bytes}};
      built.phases.push_back(std::move(p));
    };
    add_matmul("QKV = X @ W_qkv", mm_qkv, "X", "W_qkv", "QKV");
    for (std::uint64_t b = 0; b < B; ++b) {
      // The sequence's Q, K^T and V of every local head out of QKV, kHeadsPerCast heads a program.
      for (std::uint64_t j0 = 0; j0 < h; j0 += kHeadsPerCast) {
        const std::uint64_t j1 = std::min(h, j0 + kHeadsPerCast);
        std::vector<CastOperand> operands{{BT, 3 * hd, "f32", false}};
        std::vector<CastBlock> blocks;
        std::map<std::uint32_t, std::string> buffers{{0, "QKV"}};
        for (std::uint64_t j = j0; j < j1; ++j) {
          const auto q = static_cast<std::uint32_t>(operands.size());
          operands.insert(operands.end(), {{T, dh, "bf16", true}, {dh, T, "bf16", true}, {T, dh, "bf16", true}});
          blocks.push_back({0, b * T, j * dh, T, dh, q, 0, 0, false});
          blocks.push_back({0, b * T, hd + j * dh, T, dh, q + 1, 0, 0, true});
          blocks.push_back({0, b * T, 2 * hd + j * dh, T, dh, q + 2, 0, 0, false});
          buffers[q] = head_buffer("Q", b, j);
          buffers[q + 1] = head_buffer("KT", b, j);
          buffers[q + 2] = head_buffer("V", b, j);
        }
        add_cast(j1 - j0 == 1 ? fmt::format("Q, K^T, V (seq {}, head {}) to bf16", b, j0)
                              : fmt::format("Q, K^T, V (seq {}, heads {}..{}) to bf16", b, j0, j1 - 1),
                 fmt::format("cast_heads_b{}_h{}.llo", b, j0), operands, blocks, buffers);
      }
      for (std::uint64_t j = 0; j < h; ++j) {
        add_matmul(fmt::format("S = Q K^T (seq {}, head {})", b, j), mm_s, head_buffer("Q", b, j),
                   head_buffer("KT", b, j), head_buffer("S", b, j));
        add_softmax(b, j);
        add_matmul(fmt::format("O = P V (seq {}, head {})", b, j), mm_o, head_buffer("P", b, j), head_buffer("V", b, j),
                   head_buffer("O", b, j));
      }
      // The sequence's O of every local head, side by side, into its rows of O cat.
      std::vector<CastOperand> operands;
      std::vector<CastBlock> blocks;
      std::map<std::uint32_t, std::string> buffers;
      for (std::uint64_t j = 0; j < h; ++j) {
        const auto o = static_cast<std::uint32_t>(j);
        operands.push_back({T, dh, "f32", false});
        blocks.push_back({o, 0, 0, T, dh, static_cast<std::uint32_t>(h), b * T, j * dh, false});
        buffers[o] = head_buffer("O", b, j);
      }
      operands.push_back({BT, hd, "bf16", true});
      buffers[static_cast<std::uint32_t>(h)] = "O cat";
      add_cast(fmt::format("O (seq {}, every local head) to bf16 into O cat", b), fmt::format("cast_o_b{}.llo", b),
               operands, blocks, buffers);
    }
    add_matmul("partial = O @ W_o", mm_out, "O cat", "W_o", reduces ? "partial out" : "out");
    if (reduces) {
      std::uint64_t next_flag = kCollectiveFlagBase;
      try {
        const std::string file = fmt::format("{}_f32_{}_{}.llo", reduce.op, reduce.bytes, axes_text(reduce.axes));
        const std::string text =
            with_own_flags(programs::generate_collective(reduce, topology, chip), next_flag, chip, "attention");
        built.steps.push_back({api::assemble(text, file), file, {{0, "partial out"}, {1, "out"}, {2, "scratch"}}});
      } catch (const std::invalid_argument& e) {
        throw api::BadInput(fmt::format("--batch {} --seq {} --d-model {}: the {} of out[{},{}] (f32) over {}: {}", B,
                                        T, D, reduce.op, BT, D, y_name, e.what()));
      }
      Phase p = collective_phase(reduce, topology, chip, "partial out");
      if (reduce.bytes != asked_bytes) {
        p.name += fmt::format(" (padded {} -> {} B)", asked_bytes, reduce.bytes);
        p.detail["padded_from_bytes"] = asked_bytes;
      }
      p.own_flags = true;
      built.phases.push_back(std::move(p));
    }
    const double bd = static_cast<double>(B), td = static_cast<double>(T), dd = static_cast<double>(D);
    const double hdd = static_cast<double>(H * dh);
    built.model_flops = 8 * bd * td * dd * hdd + 4 * bd * td * td * hdd;

    // 3. Host data (only with data: a timing-only run needs none).
    const std::uint32_t chips = topology.chip_count();
    const auto shard = [=](std::uint32_t id) { return shard_index(chip_coords(topology, id), lengths, model); };
    if (!setup.no_data) {
      const auto x = std::make_shared<const std::vector<float>>(programs::random_bf16_values(BT * D, seed));
      const auto wq = std::make_shared<const std::vector<float>>(programs::random_bf16_values(D * H * dh, seed + 1));
      const auto wk = std::make_shared<const std::vector<float>>(programs::random_bf16_values(D * H * dh, seed + 2));
      const auto wv = std::make_shared<const std::vector<float>>(programs::random_bf16_values(D * H * dh, seed + 3));
      const auto wo = std::make_shared<const std::vector<float>>(programs::random_bf16_values(H * dh * D, seed + 4));
      const auto ref = std::make_shared<AttentionReference>();
      const auto compute = [=]() {
        AttentionReference& R = *ref;
        const std::uint64_t HD = H * dh;
        R.q.resize(ways);
        R.k_t.resize(ways);
        R.v.resize(ways);
        R.s.resize(ways);
        R.p.resize(ways);
        R.o.resize(ways);
        std::vector<std::vector<std::uint8_t>> partials;
        for (std::uint64_t s = 0; s < ways; ++s) {
          // The chip's weights: its heads' columns of W_q, W_k, W_v side by side, its heads' rows of W_o.
          std::vector<float> w_qkv(D * 3 * hd);
          for (std::uint64_t r = 0; r < D; ++r) {
            for (std::uint64_t part = 0; part < 3; ++part) {
              const std::vector<float>& w = part == 0 ? *wq : part == 1 ? *wk : *wv;
              std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(r * HD + s * hd), hd,
                          w_qkv.begin() + static_cast<std::ptrdiff_t>(r * 3 * hd + part * hd));
            }
          }
          R.w_qkv.push_back(std::move(w_qkv));
          R.w_o.push_back(matrix_block(*wo, D, s * hd, hd, 0, D));
          R.qkv.push_back(programs::matmul_reference(*x, R.w_qkv[s], BT, D, 3 * hd));
          const std::vector<float>& qkv = R.qkv[s];
          std::vector<float> o_cat(BT * hd);
          for (std::uint64_t b = 0; b < B; ++b) {
            for (std::uint64_t j = 0; j < h; ++j) {
              R.q[s].push_back(bf16_block(qkv, 3 * hd, b * T, T, j * dh, dh));
              R.k_t[s].push_back(transpose(bf16_block(qkv, 3 * hd, b * T, T, hd + j * dh, dh), T, dh));
              R.v[s].push_back(bf16_block(qkv, 3 * hd, b * T, T, 2 * hd + j * dh, dh));
              const std::size_t i = R.q[s].size() - 1;
              R.s[s].push_back(programs::matmul_reference(R.q[s][i], R.k_t[s][i], T, dh, T));
              R.p[s].push_back(softmax_bf16_reference(R.s[s][i], T, T, scale));
              R.o[s].push_back(programs::matmul_reference(R.p[s][i], R.v[s][i], T, T, dh));
              for (std::uint64_t r = 0; r < T; ++r) {
                for (std::uint64_t c = 0; c < dh; ++c) {
                  o_cat[(b * T + r) * hd + j * dh + c] = bf16_round(R.o[s][i][r * dh + c]);
                }
              }
            }
          }
          R.o_cat.push_back(std::move(o_cat));
          R.partial.push_back(programs::matmul_reference(R.o_cat[s], R.w_o[s], BT, hd, D));
        }
        if (reduces) {
          for (std::uint32_t id = 0; id < chips; ++id) {
            partials.push_back(device_matrix(R.partial[shard(id)], BT, D, "f32", "partial out"));
            partials.back().resize(std::max<std::size_t>(partials.back().size(), reduce.bytes), 0);  // padding: zeros
          }
          std::uint32_t id = 0;
          for (auto bytes : programs::collective_reference(reduce, topology, partials)) {
            if (padded_scatter) {
              bytes.resize(programs::collective_valid_chunk_bytes(asked_bytes, reduce.bytes, ways, shard(id++)));
              R.out_chunk.push_back(std::move(bytes));
              continue;
            }
            bytes.resize(std::min<std::size_t>(bytes.size(), out_rows * D * 4));  // a padded all-reduce's tail
            R.out.push_back(host_matrix_f32(bytes, out_rows, D));
          }
        } else {
          for (std::uint32_t id = 0; id < chips; ++id) R.out.push_back(R.partial[shard(id)]);
        }
      };
      const auto reference = [=]() -> const AttentionReference& {
        std::call_once(ref->once, compute);
        return *ref;
      };
      const auto give = [&](const std::string& buffer, std::uint64_t rows, std::uint64_t cols,
                            std::function<std::vector<float>(std::uint32_t)> values) {
        api::Input in;
        in.origin = buffer;
        in.device_provider = [=](std::uint32_t id, const chip::OperandBinding&) {
          return device_matrix(values(id), rows, cols, "bf16", buffer);
        };
        built.inputs[buffer] = std::move(in);
      };
      give("X", BT, D, [=](std::uint32_t) { return *x; });
      give("W_qkv", D, 3 * hd, [=](std::uint32_t id) { return reference().w_qkv[shard(id)]; });
      give("W_o", hd, D, [=](std::uint32_t id) { return reference().w_o[shard(id)]; });

      // 4. The check: every output of every chip, bit for bit.
      built.check = [=](const api::Result& result) {
        const AttentionReference& R = reference();
        struct Output {
          std::string buffer;
          std::uint64_t rows, cols;
          std::function<std::vector<float>(std::uint32_t)> expected;
          std::string dtype = "f32";
        };
        std::vector<Output> outputs = {{"QKV", BT, 3 * hd, [&](std::uint32_t id) { return R.qkv[shard(id)]; }}};
        for (std::uint64_t b = 0; b < B; ++b) {
          for (std::uint64_t j = 0; j < h; ++j) {
            const std::size_t i = b * h + j;
            outputs.push_back(
                {head_buffer("Q", b, j), T, dh, [&, i](std::uint32_t id) { return R.q[shard(id)][i]; }, "bf16"});
            outputs.push_back(
                {head_buffer("KT", b, j), dh, T, [&, i](std::uint32_t id) { return R.k_t[shard(id)][i]; }, "bf16"});
            outputs.push_back(
                {head_buffer("V", b, j), T, dh, [&, i](std::uint32_t id) { return R.v[shard(id)][i]; }, "bf16"});
            outputs.push_back({head_buffer("S", b, j), T, T, [&, i](std::uint32_t id) { return R.s[shard(id)][i]; }});
            outputs.push_back(
                {head_buffer("P", b, j), T, T, [&, i](std::uint32_t id) { return R.p[shard(id)][i]; }, "bf16"});
            outputs.push_back({head_buffer("O", b, j), T, dh, [&, i](std::uint32_t id) { return R.o[shard(id)][i]; }});
          }
        }
        outputs.push_back({"O cat", BT, hd, [&](std::uint32_t id) { return R.o_cat[shard(id)]; }, "bf16"});
        if (reduces) {
          outputs.push_back({"partial out", BT, D, [&](std::uint32_t id) { return R.partial[shard(id)]; }});
        }
        outputs.push_back({"out", out_rows, D, [&](std::uint32_t id) { return R.out[id]; }});
        json verdict{{"ok", true}, {"elements", 0}};
        std::vector<std::string> lines;
        for (const Output& o : outputs) {
          if (o.buffer == "out" && padded_scatter) {
            // A padded reduce-scatter's out: the chip's valid chunk bytes, byte for byte.
            const nlohmann::json c = check_chunk_outputs(result.outputs.at(o.buffer).device, chips, o.buffer,
                                                         [&](std::uint32_t id) { return R.out_chunk[id]; });
            verdict["elements"] = verdict["elements"].get<std::uint64_t>() + c["elements"].get<std::uint64_t>();
            if (!c["ok"].get<bool>()) {
              verdict["ok"] = false;
              lines.push_back(fmt::format("out: {}", c["check"].get<std::string>()));
            }
            continue;
          }
          // A padded all-reduce's output is longer: its first rows x cols f32 are out.
          std::vector<std::vector<std::uint8_t>> device = result.outputs.at(o.buffer).device;
          if (o.buffer == "out" && reduces && !scatter) {
            for (auto& d : device) d.resize(std::min<std::size_t>(d.size(), o.rows * o.cols * 4));
          }
          const json v = check_outputs(
              device, chips, o.buffer, o.dtype, [&](std::uint32_t) { return std::make_pair(o.rows, o.cols); },
              o.expected);
          verdict["elements"] = verdict["elements"].get<std::uint64_t>() + v.at("elements").get<std::uint64_t>();
          if (!v.at("ok").get<bool>()) {
            verdict["ok"] = false;
            lines.push_back(fmt::format("{}: {}", o.buffer, v.at("check").get<std::string>()));
          }
        }
        verdict["check"] = verdict["ok"].get<bool>() ? fmt::format(
                                                           "bit-exact ({} elements of QKV, Q, K^T, V, S, P and O of {} "
                                                           "heads x {} sequences, O cat, {}out on {} chips)",
                                                           verdict["elements"].get<std::uint64_t>(), h, B,
                                                           reduces ? "partial out, " : "", chips)
                                                     : fmt::format("MISMATCH: {}", fmt::join(lines, "; "));
        return verdict;
      };
    }

    // 5. The book's prediction (derived: the book has no attention line; see
    // docs/workloads.md) and the report's fields.
    const double c = chip.peak_bf16_flops();
    const double w = 2 * chip.ici.link_bandwidth;
    double m_y = 0;
    for (std::size_t a : model) m_y += lengths[a] > 1 ? 1 : 0;
    m_y = std::max(1.0, m_y);
    const double y = static_cast<double>(ways);
    const double t_math = built.model_flops / (y * c);
    // The collective's passes over the bytes: an all-reduce is a reduce-scatter and an all-gather.
    const double passes = scatter ? 1 : 2;
    const double t_comms = reduces ? passes * 4 * bd * td * dd / (w * m_y) : 0.0;
    // Compute-bound while Y < M_Y (H d_head / D) (2D + T) W / (passes C); as a sequence length, the others fixed.
    const double threshold_y = m_y * (hdd / dd) * (2 * dd + td) * w / (passes * c);
    const double threshold_seq = passes * y * c * dd / (m_y * w * hdd) - 2 * dd;
    json threshold_at = json::object();
    if (reduces && threshold_seq > 0) threshold_at["seq"] = threshold_seq;
    built.choice = {
        {"batch", B},
        {"seq", T},
        {"d_model", D},
        {"heads", H},
        {"d_head", dh},
        {"model_axes", y_name},
        {"model_ways", ways},
        {"plan", plan},
        {"collective", reduces ? reduce.op : "none"},
        {"per_chip", {{"heads", h}, {"qkv_columns", 3 * hd}}},
        {"softmax",
         "on the device (workloads/softmax.hpp: vmax, vsub, vmul, vpow2 on the EUP, lane rotations on the XLU, "
         "vrcp, vpack to bf16); the casts of Q, K, V, O to bf16 and K's transpose too (workloads/cast_blocks.hpp)"},
        {"book",
         {{"t_math_seconds", t_math},
          {"t_comms_seconds", t_comms},
          {"seconds", std::max(t_math, t_comms)},
          {"formula",
           scatter ? "T_math = (8 B T D H d_head + 4 B T^2 H d_head) / (Y C); T_comms = 4BTD / (W M_Y) (reduce-scatter "
                     "of the f32 partial outputs; the book's TP forward scatters 2BD bytes of bf16)"
                   : "T_math = (8 B T D H d_head + 4 B T^2 H d_head) / (Y C); T_comms = 2 x 4BTD / (W M_Y) (all-reduce "
                     "= reduce-scatter + all-gather of the f32 partial outputs; the book's TP forward moves 4BD in "
                     "bf16)"},
          {"threshold", threshold_y},
          {"threshold_name", scatter ? "Y = M_Y (H d_head / D) (2D + T) W / C (comms-bound above; derived, f32 "
                                       "reduce-scatter)"
                                     : "Y = M_Y (H d_head / D) (D + T/2) W / C (comms-bound above; derived, f32 "
                                       "all-reduce)"},
          {"threshold_at", threshold_at}}},
        {"reference",
         "matmuls by programs::matmul_reference (the MXU's order), the softmax by softmax_bf16_reference (the "
         "program's order), the reduction by programs::collective_reference (the collective's order), the casts by "
         "bf16_round"}};
    built.intro = {
        fmt::format("attention: X[{},{}] -> {} heads x d_head {} (B {} x T {}), softmax(Q K^T / sqrt({})) V, @ W_o on "
                    "a {} pod of {}",
                    BT, D, H, dh, B, T, dh, ici::describe(topology), chip.name),
        reduces
            ? fmt::format("  heads split {} ways over {}: {} heads per chip (W_qkv[{},{}], W_o[{},{}]), then {} of "
                          "out (f32) over the model axes",
                          ways, y_name, h, D, 3 * hd, hd, D,
                          padded_scatter ? fmt::format("a padded reduce-scatter (a {} B range of out per chip)",
                                                       reduce.bytes / ways)
                          : scatter      ? fmt::format("a reduce-scatter (out[{},{}] per chip)", out_rows, D)
                                         : std::string("an all-reduce"))
            : fmt::format("  heads not split (model axes {}): every chip holds all {} heads (W_qkv[{},{}], W_o[{},{}])",
                          y_name, h, D, 3 * hd, hd, D),
        fmt::format("  the book (derived): T_math {}, T_comms {}; comms-bound above Y = {:.4g}",
                    format_quantity(t_math, Quantity::kTime), format_quantity(t_comms, Quantity::kTime), threshold_y)};
    return built;
  }
};

const WorkloadRegistrar kAttentionRegistrar(std::make_unique<AttentionWorkload>());

}  // namespace
}  // namespace tpuemu::workloads
