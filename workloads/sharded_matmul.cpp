// The sharded-matmul workload: C = A @ B with A and B sharded over the mesh
// in the book's notation; the communication follows the book's four cases
// (workloads/sharding.hpp), the plan is the cheapest by the book's costs or
// --plan.
//
// Steps (one SPMD program each, every chip):
//   local  matmul A, B -> C
//   ag     all-gather "A shard" -> A (or "B shard" -> B), then matmul A, B -> C
//   ar/rs  matmul A, B -> "partial C", then all-reduce / reduce-scatter -> C
//          (an all-reduce or reduce-scatter its ring cannot split runs padded
//          with zeros; a padded reduce-scatter leaves each chip a byte range)
// The all-gather concatenates blocks in rank order (the collective's rank is
// the shard index: its axes are the sharding's, minor first): row blocks give
// the gathered matrix's own device layout when they are whole bf16 tiles;
// A's column blocks stay one after another, which the matmul reads as such
// (programs::MatmulSpec::a_column_blocks). Reductions sum f32 partial results; a reduce-scatter leaves rank r
// the r-th row block of C (whole f32 tiles).
// Under ar/rs, the operand whose contracting dimension is whole on a chip is
// given to it as the block of J the chip multiplies (a compiler reads that
// block of the local array; no data moves between chips for it).
//
// Host references: local and ag give every chip its block of the global
// C = A @ B (programs::matmul_reference, the MXU's order); ar and rs give
// every chip's partial matmul reduced in the collective's order
// (programs::collective_reference), bit for bit.
#include "workloads/sharded_matmul.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>

#include "api/errors.hpp"
#include "api/run.hpp"
#include "common/npy.hpp"
#include "common/units.hpp"
#include "programs/collective_algorithm.hpp"
#include "programs/collective_reference.hpp"
#include "programs/reference.hpp"
#include "workloads/pieces.hpp"

namespace tpuemu::workloads {
namespace {

// The collective's axes: the sharding's major-first axes, minor first (the
// collective's first listed axis varies fastest in its rank).
std::vector<std::size_t> collective_axes(std::vector<std::size_t> axes) {
  std::reverse(axes.begin(), axes.end());
  return axes;
}

// A chip's block of a matrix [rows, cols] split as `blocks`.
struct Block {
  std::uint64_t row0 = 0, rows = 0, col0 = 0, cols = 0;
  std::uint64_t row_index = 0, col_index = 0;
};
Block block_of(const Blocks& blocks, std::uint64_t rows, std::uint64_t cols, const std::vector<std::uint32_t>& coords,
               const std::vector<std::uint32_t>& lengths) {
  Block b;
  b.rows = rows / shard_count(lengths, blocks.rows);
  b.cols = cols / shard_count(lengths, blocks.cols);
  b.row_index = shard_index(coords, lengths, blocks.rows);
  b.col_index = shard_index(coords, lengths, blocks.cols);
  b.row0 = b.row_index * b.rows;
  b.col0 = b.col_index * b.cols;
  return b;
}

void check_split(std::uint64_t size, const DimSharding& dim, const std::vector<std::uint32_t>& lengths,
                 const char* option) {
  const std::uint64_t shards = shard_count(lengths, dim.axes);
  if (size % shards != 0) {
    throw std::invalid_argument(
        fmt::format("--{} {}: {} is split over {} ({} blocks), but {} does not split into {} "
                    "equal blocks",
                    option, size, dim.name, axes_text(dim.axes), shards, size, shards));
  }
}

// Sizes `plan` (layout given); returns the refusal or "".
std::string size_plan(SizedPlan& sp, const ShardedMatmul& mm, const ChipConfig& chip, const ici::Topology& topology) {
  const PlanLayout& l = *sp.layout;
  const auto lengths = axis_lengths(topology);
  const std::uint64_t group = shard_count(lengths, l.axes);
  sp.local.m = mm.m / shard_count(lengths, l.a.rows);
  sp.local.k = mm.k / shard_count(lengths, l.a.cols);
  sp.local.n = mm.n / shard_count(lengths, l.b.cols);
  sp.local.dtype = "bf16";
  // A gathered from its column blocks stays in them (the gather's rank order).
  if (l.gathered == 'A' && !l.a_in.cols.empty()) sp.local.a_column_blocks = group;
  sp.local = on_every_core(sp.local, chip);  // a megacore chip's cores share it
  if (mm.m % shard_count(lengths, l.c.rows) != 0) {
    return fmt::format("--m {} does not split into {} row blocks of C", mm.m, shard_count(lengths, l.c.rows));
  }
  try {
    (void)programs::generate_matmul(sp.local, chip);
  } catch (const std::invalid_argument& e) {
    return fmt::format("the {}x{}x{} matmul on every chip: {}", sp.local.m, sp.local.k, sp.local.n, e.what());
  }
  const Phase matmul = matmul_phase(sp.local, chip);
  if (sp.plan == Plan::kLocal) {
    sp.phases = {matmul};
  } else {
    programs::CollectiveSpec spec;
    spec.algorithm = mm.algorithm;
    spec.axes = collective_axes(l.axes);
    std::string what;
    if (sp.plan == Plan::kAllGather) {
      // Row blocks of rows x cols per chip, gathered over the group.
      const bool a = l.gathered == 'A';
      const Blocks& in = a ? l.a_in : l.b_in;
      const std::uint64_t rows = (a ? mm.m : mm.k) / shard_count(lengths, in.rows);
      const std::uint64_t cols = (a ? mm.k : mm.n) / shard_count(lengths, in.cols);
      if (rows % kBf16TileRows != 0 || cols % kTileCols != 0) {
        return fmt::format(
            "the all-gather moves {}'s blocks of {} rows x {} columns: they must be whole bf16 tiles (rows a "
            "multiple of {}, columns of {}) to concatenate in device layout",
            l.gathered, rows, cols, kBf16TileRows, kTileCols);
      }
      spec.op = "all-gather";
      spec.dtype = "bf16";
      spec.bytes = rows * cols * 2 * group;
      what = std::string(1, l.gathered);
    } else {
      const std::uint64_t rows = sp.plan == Plan::kReduceScatter ? sp.local.m / group : sp.local.m;
      if (sp.local.m % group != 0 || rows % kF32TileRows != 0 || sp.local.n % kTileCols != 0) {
        return fmt::format(
            "the {} of the partial C ({} x {} per chip, f32) needs whole f32 tiles in every block: {} rows a "
            "multiple of {} and {} columns a multiple of {}",
            sp.plan == Plan::kAllReduce ? "all-reduce" : "reduce-scatter", sp.local.m, sp.local.n, rows, kF32TileRows,
            sp.local.n, kTileCols);
      }
      spec.op = sp.plan == Plan::kAllReduce ? "all-reduce" : "reduce-scatter";
      spec.dtype = "f32";
      spec.bytes = sp.local.m * sp.local.n * 4;
      what = "partial C";
      // An all-reduce its ring cannot split runs padded with zeros
      // (programs::padded_collective_bytes; "partial C" and "C" take the
      // padded size, the reference cuts back), as the other workloads' do.
      // So does a reduce-scatter, rank r then left the bytes [r Q_pad,
      // min((r+1) Q_pad, V)) of the summed C's device layout (Q_pad = V_pad /
      // N; programs/collectives.hpp), not a block of C's rows.
      if (!spec.axes.empty()) {
        try {
          spec.bytes = programs::padded_collective_bytes(spec, topology);
        } catch (const std::invalid_argument&) {  // generate_collective names the problem below
        }
      }
    }
    try {
      (void)programs::generate_collective(spec, topology, chip);
      const programs::CollectivePlan plan = programs::plan_collective(spec, topology);
      for (std::uint32_t id = 0; id < topology.chip_count(); ++id) {
        if (plan.rank(topology.coords(ChipId(id))) != shard_index(chip_coords(topology, id), lengths, l.axes)) {
          throw std::logic_error(
              fmt::format("sharded-matmul: the collective's rank of chip {} is not its shard index", id));
        }
      }
    } catch (const std::invalid_argument& e) {
      return fmt::format("the {} of {}: {}", spec.op, what, e.what());
    }
    Phase comm = collective_phase(spec, topology, chip, what);
    if (const std::uint64_t asked = sp.local.m * sp.local.n * 4; sp.plan != Plan::kAllGather && spec.bytes != asked) {
      comm.name += fmt::format(" (padded {} -> {} B)", asked, spec.bytes);
      comm.detail["padded_from_bytes"] = asked;
    }
    sp.phases = sp.plan == Plan::kAllGather ? std::vector<Phase>{comm, matmul} : std::vector<Phase>{matmul, comm};
    sp.collective = spec;
  }
  for (const Phase& p : sp.phases) {
    (p.communication ? sp.comms_seconds : sp.math_seconds) += p.book_seconds;
    sp.predicted_seconds += p.predicted_seconds;
  }
  return "";
}

}  // namespace

std::vector<SizedPlan> size_plans(const ShardedMatmul& mm, const CaseAnalysis& analysis, const ChipConfig& chip,
                                  const ici::Topology& topology) {
  const auto lengths = axis_lengths(topology);
  check_split(mm.m, mm.lhs.rows, lengths, "m");
  check_split(mm.k, mm.lhs.cols, lengths, "k");
  check_split(mm.k, mm.rhs.rows, lengths, "k");
  check_split(mm.n, mm.rhs.cols, lengths, "n");
  std::vector<SizedPlan> out;
  for (const PlanOption& option : analysis.plans) {
    SizedPlan sp;
    sp.plan = option.plan;
    sp.layout = option.layout;
    sp.refusal = option.layout ? size_plan(sp, mm, chip, topology) : option.refusal;
    out.push_back(std::move(sp));
  }
  return out;
}

const SizedPlan& pick_plan(const std::vector<SizedPlan>& plans, std::optional<Plan> forced) {
  if (forced) {
    for (const SizedPlan& p : plans) {
      if (p.plan != *forced) continue;
      if (!p.refusal.empty()) throw std::invalid_argument(fmt::format("--plan {}: {}", plan_name(p.plan), p.refusal));
      return p;
    }
  }
  const SizedPlan* best = nullptr;
  for (const SizedPlan& p : plans) {
    if (!p.refusal.empty() || p.plan == Plan::kReduceScatter) continue;
    if (best == nullptr || p.predicted_seconds < best->predicted_seconds) best = &p;
  }
  if (best == nullptr) {
    std::vector<std::string> reasons;
    for (const SizedPlan& p : plans) reasons.push_back(fmt::format("{}: {}", plan_name(p.plan), p.refusal));
    throw std::invalid_argument(fmt::format("no plan can run this matmul ({})", fmt::join(reasons, "; ")));
  }
  return *best;
}

namespace {

std::string sharding_text(const std::string& rows, const std::string& cols, const Blocks& b) {
  return format_sharding({{rows, b.rows}, {cols, b.cols}});
}

class ShardedMatmulWorkload final : public Workload {
 public:
  [[nodiscard]] std::string_view name() const override { return "sharded-matmul"; }
  [[nodiscard]] std::string_view summary() const override {
    return "C = A @ B with A, B sharded in the book's notation (--lhs 'I_X,J' --rhs 'J,K_Y'); communication by the "
           "book's four cases, plan ag|rs|ar|local";
  }
  [[nodiscard]] std::vector<OptionSpec> options() const override {
    return {{"m", "512", "rows of A and C (I)"},
            {"k", "512", "columns of A, rows of B (J, the contracting dimension)"},
            {"n", "512", "columns of B and C (K)"},
            {"lhs", "I_X,J", "A's sharding: dimension names, each with the mesh axes (X, Y, Z) it is split over"},
            {"rhs", "J,K", "B's sharding; its first dimension is A's second (the contracting one)"},
            {"plan", "auto", "auto (the book's cheapest of local, ag, ar), local, ag, rs or ar"},
            {"algo", "multi-axis", "the collective's algorithm (tpuemu collective --algo list)"},
            {"seed", "1", "seed of the pseudo-random bf16 inputs"}};
  }

  [[nodiscard]] Built build(const Setup& setup, const OptionValues& options) const override {
    const ChipConfig& chip = setup.chip;
    const ici::Topology& topology = setup.topology;
    ShardedMatmul mm;
    constexpr std::uint64_t kMaxDim = 1ULL << 20;
    mm.m = options.whole("m", 1, kMaxDim);
    mm.k = options.whole("k", 1, kMaxDim);
    mm.n = options.whole("n", 1, kMaxDim);
    const auto seed = static_cast<std::uint32_t>(options.whole("seed", 0, std::numeric_limits<std::uint32_t>::max()));
    mm.algorithm = options.text("algo");
    std::optional<Plan> forced;
    if (options.text("plan") != "auto") {
      forced = parse_plan(options.text("plan"));
      if (!forced) {
        throw api::BadInput(fmt::format("--plan '{}': expected auto, local, ag, rs or ar", options.text("plan")));
      }
    }
    CaseAnalysis analysis;
    std::vector<SizedPlan> plans;
    const SizedPlan* chosen = nullptr;
    try {
      refuse_other_mxu(chip, "sharded-matmul");
      (void)programs::collective_algorithm(mm.algorithm);
      mm.lhs = parse_sharding(options.text("lhs"), "--lhs", topology.axis_count());
      mm.rhs = parse_sharding(options.text("rhs"), "--rhs", topology.axis_count());
      analysis = analyze_case(mm.lhs, mm.rhs);
      plans = size_plans(mm, analysis, chip, topology);
      chosen = &pick_plan(plans, forced);
    } catch (const std::invalid_argument& e) {
      if (std::string_view(e.what()).starts_with("collective: unknown algorithm")) {
        throw api::BadInput(fmt::format("--algo: {}", e.what()));
      }
      throw api::BadInput(e.what());
    }
    const SizedPlan plan = *chosen;
    const PlanLayout& l = *plan.layout;
    const std::string& i = mm.lhs.rows.name;
    const std::string& k = mm.rhs.cols.name;

    Built built;
    // 1. Programs and buffers.
    const auto matmul_step = [&](const std::string& a, const std::string& b, const std::string& c) {
      const std::string file = fmt::format("matmul_{}x{}x{}.llo", plan.local.m, plan.local.k, plan.local.n);
      return api::Step{
          api::assemble(programs::generate_matmul(plan.local, chip), file), file, {{0, a}, {1, b}, {2, c}}};
    };
    const auto collective_step = [&](const std::string& in, const std::string& out) {
      const programs::CollectiveSpec& spec = *plan.collective;
      const std::string file = fmt::format("{}_{}.llo", spec.op, spec.bytes);
      std::map<std::uint32_t, std::string> buffers{{0, in}, {1, out}};
      if (spec.op != "all-gather") buffers[2] = "scratch";
      // Its own sync flags: after a matmul step, a chip that finishes first
      // starts the collective while its peers still run the matmul.
      std::uint64_t next_flag = kCollectiveFlagBase;
      return api::Step{api::assemble(with_own_flags(programs::generate_collective(spec, topology, chip), next_flag,
                                                    chip, "sharded-matmul"),
                                     file),
                       file, buffers};
    };
    const std::string a_input = l.gathered == 'A' ? "A shard" : "A";
    const std::string b_input = l.gathered == 'B' ? "B shard" : "B";
    switch (plan.plan) {
      case Plan::kLocal:
        built.steps = {matmul_step("A", "B", "C")};
        break;
      case Plan::kAllGather:
        built.steps = {collective_step(l.gathered == 'A' ? a_input : b_input, std::string(1, l.gathered)),
                       matmul_step("A", "B", "C")};
        break;
      case Plan::kReduceScatter:
      case Plan::kAllReduce:
        built.steps = {matmul_step("A", "B", "partial C"), collective_step("partial C", "C")};
        break;
    }
    built.phases = plan.phases;
    for (Phase& phase : built.phases) phase.own_flags = phase.communication;  // collective_step's flags
    built.model_flops = 2.0 * static_cast<double>(mm.m) * static_cast<double>(mm.k) * static_cast<double>(mm.n);

    // 2. Host data and every chip's input blocks.
    const LazyBf16 a = lazy_bf16_values(mm.m * mm.k, seed);
    const LazyBf16 b = lazy_bf16_values(mm.k * mm.n, seed + 1);
    const auto lengths = axis_lengths(topology);
    const auto input = [&](LazyBf16 host, Blocks blocks, std::uint64_t rows, std::uint64_t cols, std::string origin) {
      api::Input in;
      in.origin = origin;
      in.device_provider = [host, blocks, rows, cols, origin, topology, lengths](std::uint32_t id,
                                                                                 const chip::OperandBinding&) {
        const Block blk = block_of(blocks, rows, cols, chip_coords(topology, id), lengths);
        return device_matrix(matrix_block(host->get(), cols, blk.row0, blk.rows, blk.col0, blk.cols), blk.rows,
                             blk.cols, "bf16", origin);
      };
      return in;
    };
    built.inputs[a_input] = input(a, l.a_in, mm.m, mm.k, "A");
    built.inputs[b_input] = input(b, l.b_in, mm.k, mm.n, "B");

    // 3. The check against the host reference, where the run happened.
    built.check = [mm, l, plan, a, b, topology, lengths](const api::Result& r) {
      std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>, std::vector<float>> products;
      // A's block rows x (J block) times B's (J block) x cols block, cached.
      const auto product = [&](std::uint32_t id) -> const std::vector<float>& {
        const auto coords = chip_coords(topology, id);
        const Block ab = block_of(l.a, mm.m, mm.k, coords, lengths);
        const Block bb = block_of(l.b, mm.k, mm.n, coords, lengths);
        const auto key = std::make_tuple(ab.row_index, ab.col_index, bb.col_index);
        auto it = products.find(key);
        if (it == products.end()) {
          it = products
                   .emplace(key,
                            programs::matmul_reference(matrix_block(a->get(), mm.k, ab.row0, ab.rows, ab.col0, ab.cols),
                                                       matrix_block(b->get(), mm.n, bb.row0, bb.rows, bb.col0, bb.cols),
                                                       ab.rows, ab.cols, bb.cols))
                   .first;
        }
        return it->second;
      };
      std::vector<std::vector<std::uint8_t>> reduced;
      if (plan.plan == Plan::kAllReduce || plan.plan == Plan::kReduceScatter) {
        std::vector<std::vector<std::uint8_t>> partials;
        for (std::uint32_t id = 0; id < topology.chip_count(); ++id) {
          partials.push_back(device_matrix(product(id), plan.local.m, plan.local.n, "f32", "partial C"));
          partials.back().resize(std::max<std::size_t>(partials.back().size(), plan.collective->bytes), 0);  // padding
        }
        reduced = programs::collective_reference(*plan.collective, topology, partials);
        if (plan.plan == Plan::kAllReduce) {
          for (auto& bytes : reduced) bytes.resize(plan.local.m * plan.local.n * 4);  // a padded all-reduce's tail
        }
      }
      const std::uint64_t asked = plan.local.m * plan.local.n * 4;
      if (plan.plan == Plan::kReduceScatter && plan.collective->bytes != asked) {
        // A padded reduce-scatter's C: the chip's valid chunk bytes, byte for byte.
        const std::uint64_t group = shard_count(lengths, l.axes);
        return check_chunk_outputs(r.outputs.at("C").device, topology.chip_count(), "C", [&](std::uint32_t id) {
          std::vector<std::uint8_t> want = reduced.at(id);
          want.resize(programs::collective_valid_chunk_bytes(asked, plan.collective->bytes, group,
                                                             shard_index(chip_coords(topology, id), lengths, l.axes)));
          return want;
        });
      }
      // A padded all-reduce's C is longer: its first m x n f32 are C.
      std::vector<std::vector<std::uint8_t>> got_c = r.outputs.at("C").device;
      if (plan.plan == Plan::kAllReduce) {
        for (auto& bytes : got_c) bytes.resize(std::min<std::size_t>(bytes.size(), plan.local.m * plan.local.n * 4));
      }
      const auto c_block = [&](std::uint32_t id) {
        return block_of(l.c, mm.m, mm.n, chip_coords(topology, id), lengths);
      };
      return check_f32_outputs(
          got_c, topology.chip_count(), "C",
          [&](std::uint32_t id) {
            const Block cb = c_block(id);
            return std::make_pair(cb.rows, cb.cols);
          },
          [&](std::uint32_t id) {
            const Block cb = c_block(id);
            return reduced.empty() ? product(id) : host_matrix_f32(reduced.at(id), cb.rows, cb.cols);
          });
    };

    // 4. What was chosen, and why.
    nlohmann::json candidates = nlohmann::json::array();
    std::vector<std::string> costs;
    for (const SizedPlan& p : plans) {
      nlohmann::json c{{"plan", plan_name(p.plan)}};
      if (p.refusal.empty()) {
        c["predicted_seconds"] = p.predicted_seconds;
        c["math_seconds"] = p.math_seconds;
        c["comms_seconds"] = p.comms_seconds;
        costs.push_back(fmt::format("{} {}", plan_name(p.plan), format_quantity(p.predicted_seconds, Quantity::kTime)));
      } else {
        c["refusal"] = p.refusal;
      }
      candidates.push_back(std::move(c));
    }
    const std::string output = sharding_text(i, k, l.c);
    const bool reduces = plan.plan == Plan::kAllReduce || plan.plan == Plan::kReduceScatter;
    built.choice = {{"case", analysis.book_case},
                    {"case_description", analysis.description},
                    {"plan", plan_name(plan.plan)},
                    {"plan_choice", forced ? "--plan" : "auto: the least predicted time of local, ag and ar"},
                    {"plans", candidates},
                    {"m", mm.m},
                    {"k", mm.k},
                    {"n", mm.n},
                    {"lhs", format_sharding(mm.lhs)},
                    {"rhs", format_sharding(mm.rhs)},
                    {"output", output},
                    {"per_chip", {{"m", plan.local.m}, {"k", plan.local.k}, {"n", plan.local.n}}},
                    {"reference", reduces ? "every chip's partial matmul (programs::matmul_reference), reduced in the "
                                            "collective's order (programs::collective_reference)"
                                          : "every chip's block of the global C = A @ B (programs::matmul_reference)"}};
    built.intro = {
        fmt::format("sharded-matmul: C[{},{}] = A[{},{}] @ B[{},{}] (bf16 in, f32 out) on a {} pod of {}", mm.m, mm.n,
                    mm.m, mm.k, mm.k, mm.n, ici::describe(topology), chip.name),
        fmt::format("  A[{}] @ B[{}] -> C[{}]", format_sharding(mm.lhs), format_sharding(mm.rhs), output),
        fmt::format("  {}", analysis.description),
        fmt::format("  plan {} ({}; predicted: {})", plan_name(plan.plan),
                    forced ? "forced by --plan" : "the least predicted time", fmt::join(costs, ", ")),
        fmt::format("  every chip: {}x{}x{} matmul{}", plan.local.m, plan.local.k, plan.local.n,
                    plan.collective ? fmt::format(", {} of {} B", plan.collective->op, plan.collective->bytes) : ""),
    };
    return built;
  }
};

const WorkloadRegistrar kShardedMatmulRegistrar(std::make_unique<ShardedMatmulWorkload>());

}  // namespace
}  // namespace tpuemu::workloads
