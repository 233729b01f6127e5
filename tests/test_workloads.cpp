// The sharded-matmul workload's planning, plain C++ (no simulation): the
// book's four cases from shardings (workloads/sharding.hpp), the plans each
// case allows, the refusals, and the plan picked by the book's costs
// (workloads/sharded_matmul.hpp). Runs on pods: tests/cli/workload_case.sh.
// Also: the attention workload's chain and prediction as built (no run).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/errors.hpp"
#include "programs/generators.hpp"
#include "tests/test_support.hpp"
#include "workloads/cast_blocks.hpp"
#include "workloads/mlp.hpp"
#include "workloads/pieces.hpp"
#include "workloads/sharded_matmul.hpp"
#include "workloads/sharding.hpp"
#include "workloads/softmax.hpp"
#include "workloads/sweep.hpp"
#include "workloads/workload.hpp"

using namespace tpuemu;
using namespace tpuemu::workloads;
using Catch::Contains;

namespace {

ici::Topology topo(const std::string& shape) {
  return ici::make_topology(ici::TopologyRequest{shape, std::nullopt, false}, test::preset("v5e"));
}

CaseAnalysis analyze(const std::string& lhs, const std::string& rhs, std::size_t axes = 2) {
  return analyze_case(parse_sharding(lhs, "--lhs", axes), parse_sharding(rhs, "--rhs", axes));
}

std::string allowed(const CaseAnalysis& a) {
  std::string out;
  for (const PlanOption& p : a.plans) {
    if (p.layout) out += (out.empty() ? "" : ",") + std::string(plan_name(p.plan));
  }
  return out;
}

}  // namespace

TEST_CASE("sharding notation parses dimension names and mesh axes, major first") {
  const OperandSharding s = parse_sharding("I_YX,J", "--lhs", 2);
  CHECK(s.rows.name == "I");
  CHECK(s.rows.axes == std::vector<std::size_t>{1, 0});
  CHECK(s.cols.name == "J");
  CHECK(s.cols.axes.empty());
  CHECK(format_sharding(s) == "I_YX,J");
  CHECK(format_sharding(parse_sharding("batch_x,d", "--lhs", 3)) == "batch_X,d");
}

TEST_CASE("bad shardings are refused naming the option") {
  struct Row {
    const char* text;
    std::size_t axes;
    const char* message;
  };
  const Row rows[] = {
      {"I_W,J", 2, "--lhs 'I_W': unknown mesh axis 'W': the topology's axes are XY"},
      {"I_Z,J", 2, "unknown mesh axis 'Z'"},
      {"I_X,J_X", 2, "mesh axis X is used twice"},
      {"I_XX,J", 2, "mesh axis X is used twice"},
      {"IJ", 2, "give two dimensions separated by a comma"},
      {"I,J,K", 2, "give two dimensions separated by a comma"},
      {"I_,J", 2, "no mesh axes after '_'"},
      {",J", 2, "a dimension is a name"},
      {"I,I", 2, "both dimensions are named I"},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    CHECK_THROWS_WITH(parse_sharding(row.text, "--lhs", row.axes), Contains(row.message));
  }
}

TEST_CASE("the book's four cases and the plans each allows") {
  struct Row {
    const char* lhs;
    const char* rhs;
    int book_case;
    const char* plans;
  };
  const Row rows[] = {
      {"I_X,J", "J,K_Y", 1, "local"},
      {"I_XY,J", "J,K", 1, "local"},
      {"I,J", "J_X,K", 2, "ag,rs,ar"},
      {"I_Y,J", "J_X,K", 2, "ag,rs,ar"},
      {"I,J_X", "J,K", 2, "ag,rs,ar"},
      {"I_X,J_Y", "J,K_Y", 2, "ag"},     // the book's collective matmul: gather A's column blocks
      {"I_X,J", "J_X,K", 2, "ag"},       // partial sums over X would be of different rows
      {"I,J", "J_X,K_X", 2, "ag"},       // impossible: an axis twice in B; see below
      {"I_Y,J_X", "J_X,K", 3, "rs,ar"},  // the book: C[I_Y,K]{U_X}
      {"I,J_XY", "J_XY,K", 3, "rs,ar"},
      {"I_X,J", "J,K_X", 4, "ag"},
      {"I_YX,J", "J,K_X", 4, "ag"},
  };
  for (const Row& row : rows) {
    INFO(row.lhs << " @ " << row.rhs);
    if (std::string(row.rhs) == "J_X,K_X") {
      CHECK_THROWS_WITH(analyze(row.lhs, row.rhs), Contains("used twice"));
      continue;
    }
    const CaseAnalysis a = analyze(row.lhs, row.rhs);
    CHECK(a.book_case == row.book_case);
    CHECK(allowed(a) == row.plans);
    for (const PlanOption& p : a.plans) CHECK(p.layout.has_value() == p.refusal.empty());
  }
}

TEST_CASE("plan layouts: what is gathered or reduced, and the result's sharding") {
  const CaseAnalysis c2 = analyze("I_Y,J", "J_X,K");
  const PlanLayout& ag = *c2.option(Plan::kAllGather).layout;
  CHECK(ag.gathered == 'B');
  CHECK(ag.axes == std::vector<std::size_t>{0});
  CHECK(ag.b_in == Blocks{{0}, {}});
  CHECK(ag.b == Blocks{{}, {}});
  CHECK(ag.c == Blocks{{1}, {}});
  const PlanLayout& rs = *c2.option(Plan::kReduceScatter).layout;
  CHECK(rs.a == Blocks{{1}, {0}});    // A's block of J taken locally
  CHECK(rs.c == Blocks{{1, 0}, {}});  // I over Y, then X (minor)
  CHECK(c2.option(Plan::kAllReduce).layout->c == Blocks{{1}, {}});
  const CaseAnalysis collective_matmul = analyze("I_X,J_Y", "J,K_Y");
  const PlanLayout& ga = *collective_matmul.option(Plan::kAllGather).layout;
  CHECK(ga.gathered == 'A');
  CHECK(ga.a_in == Blocks{{0}, {1}});
  CHECK(ga.a == Blocks{{0}, {}});
  CHECK(ga.c == Blocks{{0}, {1}});
  const CaseAnalysis c4 = analyze("I_YX,J", "J,K_X");
  const PlanLayout& g = *c4.option(Plan::kAllGather).layout;
  CHECK(g.gathered == 'A');
  CHECK(g.a_in == Blocks{{1, 0}, {}});
  CHECK(g.a == Blocks{{1}, {}});
  CHECK(g.c == Blocks{{1}, {0}});
}

TEST_CASE("shardings outside the four cases are refused naming --lhs / --rhs") {
  CHECK_THROWS_WITH(analyze("I,J_X", "J_Y,K"), Contains("split over X in A and over Y in B"));
  CHECK_THROWS_WITH(analyze("I_X,J_Y", "J,K_X"), Contains("not one of the book's four cases"));
  CHECK_THROWS_WITH(analyze("I_XY,J", "J,K_X"), Contains("must be the last (minor) axes"));
  CHECK_THROWS_WITH(analyze("I,J", "K,L"), Contains("--rhs 'K,L': its first dimension (K) must be the contracting"));
}

TEST_CASE("shard index: mixed radix over the listed axes, major first") {
  const std::vector<std::uint32_t> lengths{2, 4};
  CHECK(shard_index({1, 3}, lengths, {0, 1}) == 1 * 4 + 3);
  CHECK(shard_index({1, 3}, lengths, {1, 0}) == 3 * 2 + 1);
  CHECK(shard_index({1, 3}, lengths, {}) == 0);
  CHECK(shard_count(lengths, {0, 1}) == 8);
}

TEST_CASE("case 2 picks the cheaper of gathering B and reducing C by the book's costs") {
  const ChipConfig chip = test::preset("v5e");
  const ici::Topology t = topo("2x2");
  struct Row {
    std::uint64_t m, k, n;
    Plan expected;
  };
  // B big, C small: the all-reduce of C moves less. B small, C big: the gather.
  const Row rows[] = {{256, 4096, 4096, Plan::kAllReduce}, {4096, 512, 256, Plan::kAllGather}};
  for (const Row& row : rows) {
    INFO(row.m << "x" << row.k << "x" << row.n);
    ShardedMatmul mm{row.m, row.k, row.n, parse_sharding("I,J", "--lhs", 2), parse_sharding("J_X,K", "--rhs", 2)};
    const auto plans = size_plans(mm, analyze_case(mm.lhs, mm.rhs), chip, t);
    const SizedPlan& best = pick_plan(plans, std::nullopt);
    CHECK(best.plan == row.expected);
    for (const SizedPlan& p : plans) {
      if (!p.refusal.empty() || p.plan == Plan::kReduceScatter) continue;
      CHECK(best.predicted_seconds <= p.predicted_seconds);
    }
    // The prediction is the phases' sum: T_math of the matmul + T_comms of the collective.
    CHECK(best.phases.size() == 2);
    CHECK(best.predicted_seconds == Approx(best.phases[0].predicted_seconds + best.phases[1].predicted_seconds));
    CHECK(best.comms_seconds > 0);
    // rs only when forced; local refused in case 2.
    CHECK(pick_plan(plans, Plan::kReduceScatter).plan == Plan::kReduceScatter);
    CHECK_THROWS_WITH(pick_plan(plans, Plan::kLocal), Contains("--plan local: J is split over X"));
  }
}

TEST_CASE("sizes that do not split or tile are refused naming the option") {
  const ChipConfig chip = test::preset("v5e");
  const ici::Topology t = topo("2x2");
  ShardedMatmul mm{101, 512, 512, parse_sharding("I_X,J", "--lhs", 2), parse_sharding("J,K", "--rhs", 2)};
  CHECK_THROWS_WITH(size_plans(mm, analyze_case(mm.lhs, mm.rhs), chip, t),
                    Contains("--m 101: I is split over X (2 blocks)"));
  // 64 columns of B per chip: neither whole bf16 tiles to gather nor whole f32 tiles to reduce.
  ShardedMatmul narrow{256, 512, 64, parse_sharding("I,J", "--lhs", 2), parse_sharding("J_X,K", "--rhs", 2)};
  const auto plans = size_plans(narrow, analyze_case(narrow.lhs, narrow.rhs), chip, t);
  CHECK_THAT(plans[static_cast<std::size_t>(Plan::kAllGather)].refusal, Contains("whole bf16 tiles"));
  CHECK_THAT(plans[static_cast<std::size_t>(Plan::kAllReduce)].refusal, Contains("whole f32 tiles"));
  CHECK_THROWS_WITH(pick_plan(plans, std::nullopt), Contains("no plan can run this matmul"));
}

TEST_CASE("the workload registry knows sharded-matmul and refuses unknown names and options") {
  CHECK(workload("sharded-matmul").name() == "sharded-matmul");
  CHECK_THROWS_WITH(workload("sharded-matmull"), Contains("unknown workload 'sharded-matmull' (workloads: "));
  CHECK_THROWS_WITH(OptionValues({{"mm", "1"}}, workload("sharded-matmul").options()), Contains("unknown option --mm"));
  const OptionValues values({{"m", "1K"}}, workload("sharded-matmul").options());
  CHECK_THROWS_WITH(values.whole("m", 1, 1 << 20), Contains("--m '1K': expected a whole number"));
  CHECK(OptionValues({{"m", "1e3"}}, workload("sharded-matmul").options()).whole("m", 1, 1 << 20) == 1000);
}

TEST_CASE("the matmul's column-block and accumulate forms, and the ring shift, are refused where they cannot run") {
  const ChipConfig chip = test::preset("v5e");
  programs::MatmulSpec spec{128, 768, 128, "bf16", true};
  spec.a_column_blocks = 2;  // 3 tiles per block: not a power of two
  CHECK_THROWS_WITH(programs::generate_matmul(spec, chip), Contains("power-of-two number of 128-column tiles"));
  spec.a_column_blocks = 3;  // 2 tiles per block
  CHECK_THAT(programs::generate_matmul(spec, chip), Contains("A in HBM as 3 column blocks [128, 256]"));
  spec.a_column_blocks = 1;
  spec.accumulate = true;
  // Prefetch ring (small M): C's next block is staged while one computes.
  CHECK_THAT(programs::generate_matmul(spec, chip), Contains("accumulate: the staged C block -> the accumulator"));
  spec.double_buffer = false;  // no prefetch: C's block is loaded when its column block starts
  CHECK_THAT(programs::generate_matmul(spec, chip), Contains("accumulate: C's block -> the accumulator"));
  spec.double_buffer = true;
  const ici::Topology t = topo("2x4");
  CHECK_THROWS_WITH(programs::generate_ring_shift_send({1, 8, 1}, t, chip), Contains("32-byte granules"));
  CHECK_THROWS_WITH(programs::generate_ring_shift_send({16, 128, 2}, t, chip), Contains("axis z"));
  // The shift's flags are the last two of the flag space.
  CHECK_THAT(programs::generate_ring_shift_wait({16, 128, 1}, chip),
             Contains(fmt::format("offset = 0x{:x}", (chip.sflag.count - 2) * 4)));
}

TEST_CASE("the collective matmul program: its ring's flags, and refusals where it cannot run") {
  const ChipConfig chip = test::preset("v5e");
  const ici::Topology t = topo("2x4");
  const std::string text = programs::generate_collective_matmul({256, 512, 1024, 4, 1}, t, chip);
  // The shift's two flags at the top of the flag space; the ring's pinned at 0 below them.
  CHECK_THAT(text,
             Contains(fmt::format("offset = 0x{:x}, tag = 'ring shift: sent, arrived'", (chip.sflag.count - 2) * 4)));
  CHECK_THAT(text, Contains("offset = 0x0, tag = 'flags:"));
  CHECK_THAT(text, Contains("accumulators: one per column block (2 of f32[256,512])"));
  CHECK_THAT(text, Contains("dma.remote.hbm_to_hbm"));
  CHECK_THAT(text, Contains("sid.y"));
  CHECK_THROWS_WITH(programs::generate_collective_matmul({256, 512, 1024, 2, 1}, t, chip),
                    Contains("2 chunks on an axis of 4 chips"));
  CHECK_THROWS_WITH(programs::generate_collective_matmul({256, 512, 1024, 4, 2}, t, chip), Contains("axis z"));
  CHECK_THROWS_WITH(programs::generate_collective_matmul({256, 500, 1024, 4, 1}, t, chip),
                    Contains("whole 128-column tiles"));
  CHECK_THROWS_WITH(programs::generate_collective_matmul({256, 512, 768, 4, 1}, t, chip),
                    Contains("whole column blocks of 512 columns"));
  CHECK_THROWS_WITH(programs::generate_collective_matmul({64, 512, 1024, 4, 1}, t, chip),
                    Contains("fewer than the MXU pipeline's"));
  const ici::Topology line = topo("2x1");
  CHECK_THROWS_WITH(programs::generate_collective_matmul({256, 512, 1024, 1, 1}, line, chip),
                    Contains("needs 2 or more"));
}

// The mlp workload's strategies and the book's thresholds (workloads/mlp.hpp).
TEST_CASE("mlp strategies name their data and model axes") {
  CHECK(parse_mlp_strategy("fsdp+tp") == MlpStrategy::kFsdpTp);
  CHECK_FALSE(parse_mlp_strategy("zero3"));
  const MlpAxes dp = mlp_axes(MlpStrategy::kDp, 3);
  CHECK(dp.data == std::vector<std::size_t>{0, 1, 2});
  CHECK(dp.model.empty());
  CHECK_FALSE(dp.fsdp);
  CHECK(mlp_axes(MlpStrategy::kFsdp, 2).fsdp);
  const MlpAxes tp = mlp_axes(MlpStrategy::kTp, 2);
  CHECK(tp.data.empty());
  CHECK(tp.model == std::vector<std::size_t>{0, 1});
  const MlpAxes both = mlp_axes(MlpStrategy::kFsdpTp, 3);
  CHECK(both.data == std::vector<std::size_t>{0});
  CHECK(both.model == std::vector<std::size_t>{1, 2});
  CHECK(both.fsdp);
  const MlpAxes sp = mlp_axes(MlpStrategy::kSp, 3);
  CHECK(sp.data == std::vector<std::size_t>{0});
  CHECK(sp.sequence == std::vector<std::size_t>{1});
  CHECK(sp.model == std::vector<std::size_t>{2});
  CHECK(sp.fsdp);
  CHECK(parse_mlp_strategy("sp") == MlpStrategy::kSp);
}

// --data-axes, --model-axes, --sequence-axes (mlp_axes_with_roles): one row per case.
TEST_CASE("mlp roles move the strategy's axes") {
  using V = std::vector<std::size_t>;
  struct Row {
    MlpStrategy strategy;
    const char *data, *model, *sequence;
    V want_data, want_model, want_sequence;
  };
  const Row rows[] = {
      {MlpStrategy::kFsdpTp, "", "", "", {0}, {1, 2}, {}},     // the default
      {MlpStrategy::kFsdpTp, "XY", "", "", {0, 1}, {2}, {}},   // the book's 4x4x4 X = 16, Y = 4
      {MlpStrategy::kFsdpTp, "yx", "z", "", {0, 1}, {2}, {}},  // order and case do not matter
      {MlpStrategy::kFsdpTp, "", "X", "", {1, 2}, {0}, {}},    // the one role left takes the rest
      {MlpStrategy::kSp, "XY", "", "Z", {0, 1}, {}, {2}},      // no tp
      {MlpStrategy::kSp, "", "Y", "Z", {0}, {1}, {2}},         // two given, data keeps x
      {MlpStrategy::kDp, "XYZ", "", "", {0, 1, 2}, {}, {}},    // the default, given
      {MlpStrategy::kTp, "", "ZYX", "", {}, {0, 1, 2}, {}},    // the default, given
  };
  for (const Row& r : rows) {
    INFO(r.data << " / " << r.model << " / " << r.sequence);
    const MlpAxes axes = mlp_axes_with_roles(r.strategy, 3, r.data, r.model, r.sequence);
    CHECK(axes.data == r.want_data);
    CHECK(axes.model == r.want_model);
    CHECK(axes.sequence == r.want_sequence);
  }
  struct Bad {
    MlpStrategy strategy;
    const char *data, *model, *sequence, *message;
  };
  const Bad bad[] = {
      {MlpStrategy::kFsdpTp, "W", "", "", "--data-axes 'W': expected none or mesh axes of the topology (X, Y, Z)"},
      {MlpStrategy::kFsdpTp, "XX", "", "", "each at most once"},
      {MlpStrategy::kFsdpTp, "X", "X", "", "--model-axes X: mesh axis X already has a role"},
      {MlpStrategy::kFsdpTp, "X", "Y", "", "mesh axis Z has no role"},
      {MlpStrategy::kFsdpTp, "XYZ", "", "", "--strategy fsdp+tp needs model axes"},
      {MlpStrategy::kFsdpTp, "", "", "Z", "--sequence-axes Z: --strategy fsdp+tp has no such axes"},
      {MlpStrategy::kDp, "", "Z", "", "--model-axes Z: --strategy dp has no such axes"},
      {MlpStrategy::kTp, "X", "", "", "--data-axes X: --strategy tp has no such axes"},
      {MlpStrategy::kSp, "XY", "Z", "none", "--strategy sp needs sequence axes"},
  };
  for (const Bad& b : bad) {
    INFO(b.message);
    CHECK_THROWS_WITH(mlp_axes_with_roles(b.strategy, 3, b.data, b.model, b.sequence),
                      Catch::Matchers::Contains(b.message));
  }
}

TEST_CASE("mlp: the book's thresholds on v5p") {
  const ChipConfig v5p = test::preset("v5p");
  const double c_over_w = v5p.peak_bf16_flops() / (2 * v5p.ici.link_bandwidth);
  // The book's C/W for v5p is about 2550 tokens.
  CHECK(c_over_w == Approx(2550).epsilon(0.01));
  // FSDP over 3 axes: 2550 / 3 = 850 tokens per chip; at that batch T_math = 12BDF/(XC) equals
  // the backward pass's 8DF/(W M_X) x 1.5 (the table's 12DF for all of forward and backward).
  const MlpBook fsdp = mlp_book(MlpStrategy::kFsdp, 850 * 8, 1024, 4096, 8, 1, 3, 1, v5p);
  CHECK(fsdp.threshold == Approx(c_over_w / 3));
  CHECK(fsdp.t_math == Approx(fsdp.t_comms).epsilon(0.02));
  // TP over one axis: comms-bound above Y = M_Y F / (C/W).
  const MlpBook tp = mlp_book(MlpStrategy::kTp, 4096, 8192, 28672, 1, 8, 1, 1, v5p);
  CHECK(tp.threshold == Approx(28672 / c_over_w));
  // FSDP + TP: B/N > (C/W)^2 / (M_X M_Y F), the book's 2550^2 / (2F) at M_X M_Y = 2: F = 32768 -> about 99.
  const MlpBook both = mlp_book(MlpStrategy::kFsdpTp, 48000, 8192, 32768, 16, 4, 2, 1, v5p);
  CHECK(both.threshold == Approx(99).epsilon(0.02));
  CHECK(both.t_comms == Approx(both.t_comms_tp + both.t_comms_fsdp));
  // At that batch per chip and the optimal X = sqrt((B/F)(M_X/M_Y)N), the two parts are equal and
  // each equals T_math (the book's max(T_FSDP, T_TP) = T_math). v5p 2x2x2 with X over one axis and
  // Y over two (M_X = 1, M_Y = 2): X_opt = 2 where F = Y (C/W) / M_Y.
  const double f_opt = 4 * c_over_w / 2;
  const double b_opt = 8 * c_over_w * c_over_w / (1 * 2 * f_opt);
  const MlpBook tangent = mlp_book(MlpStrategy::kFsdpTp, b_opt, 768, f_opt, 2, 4, 1, 2, v5p);
  CHECK(tangent.threshold * 8 == Approx(b_opt));
  CHECK(tangent.t_comms_tp == Approx(tangent.t_math));
  CHECK(tangent.t_comms_fsdp == Approx(tangent.t_math));
  // Both parts over one axis each (M_X M_Y = 1): twice the literal 2550^2 / (2F).
  const MlpBook flat = mlp_book(MlpStrategy::kFsdpTp, 48000, 8192, 32768, 16, 4, 1, 1, v5p);
  CHECK(flat.threshold == Approx(2 * both.threshold));
}

TEST_CASE("sweep ranges: doubling, steps, factors, refusals name --sweep") {
  const std::vector<OptionSpec> options{{"batch", "512", ""}, {"strategy", "fsdp", ""}};
  CHECK(parse_sweep("batch=256:2048", options).values == std::vector<std::uint64_t>{256, 512, 1024, 2048});
  CHECK(parse_sweep("batch=256:1000", options).values == std::vector<std::uint64_t>{256, 512});
  CHECK(parse_sweep("--batch=256:1024:256", options).values == std::vector<std::uint64_t>{256, 512, 768, 1024});
  CHECK(parse_sweep("batch=1:100:x10", options).values == std::vector<std::uint64_t>{1, 10, 100});
  CHECK(parse_sweep("batch=1e3:1e3", options).values == std::vector<std::uint64_t>{1000});
  CHECK(parse_sweep("batch=256:2048", options).option == "batch");
  CHECK_THROWS_WITH(parse_sweep("batch", options), Contains("--sweep 'batch': expected VAR=a:b"));
  CHECK_THROWS_WITH(parse_sweep("tokens=1:2", options), Contains("the workload has no option --tokens"));
  CHECK_THROWS_WITH(parse_sweep("batch=8:4", options), Contains("the range ends below its start"));
  CHECK_THROWS_WITH(parse_sweep("batch=1:8:x1", options), Contains("the factor must be 2 or more"));
  CHECK_THROWS_WITH(parse_sweep("batch=1:8:0", options), Contains("the step must be 1 or more"));
  CHECK_THROWS_WITH(parse_sweep("batch=a:8", options), Contains("'a' is not a whole number"));
  CHECK_THROWS_WITH(parse_sweep("batch=0:8", options), Contains("a factor needs a start above 0"));
  CHECK_THROWS_WITH(parse_sweep("batch=1:1000:1", options), Contains("more than 256 values"));
}

namespace {

Built build_attention(const std::string& chip, const std::string& shape, std::map<std::string, std::string> options) {
  const Workload& w = workload("attention");
  Setup setup;
  setup.chip = test::preset(chip);
  setup.topology = ici::make_topology(ici::TopologyRequest{shape, std::nullopt, false}, setup.chip);
  setup.no_data = true;
  return w.build(setup, OptionValues(std::move(options), w.options()));
}

}  // namespace

TEST_CASE("attention: Megatron over heads, one all-reduce of out[B*T, D] per layer") {
  const Built b = build_attention("v5e", "2x2", {{"model-axis", "XY"}, {"batch", "2"}, {"seq", "256"}, {"heads", "8"}});
  // Per chip 2 heads: QKV; per sequence the heads' Q, K^T, V cast, per head the scores, the softmax and P @ V, the
  // heads' O cast into O cat; the output projection, the all-reduce.
  REQUIRE(b.phases.size() == 1 + 2 * (1 + 3 * 2 + 1) + 1 + 1);
  REQUIRE(b.steps.size() == b.phases.size());
  CHECK(b.phases.front().detail.at("n") == 3 * 2 * 128);
  CHECK(b.phases[1].detail.at("op") == "cast");
  CHECK(b.phases[1].detail.at("transposes") == 2 * 2);  // K of 2 heads: 256 x 128, two 128x128 blocks each
  CHECK(b.steps[1].operand_buffers.at(0) == "QKV");
  CHECK(b.steps[1].operand_buffers.at(2) == "KT b0 h0");
  CHECK(b.phases[2].detail.at("m") == 256);  // scores: T x d_head x T
  CHECK(b.phases[2].detail.at("k") == 128);
  CHECK(b.phases[3].detail.at("op") == "softmax");
  CHECK(b.steps[3].operand_buffers.at(0) == "S b0 h0");
  CHECK(b.steps[3].operand_buffers.at(1) == "P b0 h0");
  CHECK(b.phases[4].detail.at("k") == 256);  // P @ V contracts over the keys
  CHECK(b.steps[8].operand_buffers.at(2) == "O cat");
  std::size_t communication = 0;
  for (const Phase& p : b.phases) communication += p.communication ? 1 : 0;
  CHECK(communication == 1);
  const Phase& reduce = b.phases.back();
  CHECK(reduce.communication);
  CHECK(reduce.detail.at("op") == "all-reduce");
  CHECK(reduce.detail.at("axes") == "YX");
  CHECK(reduce.detail.at("bytes") == 2 * 256 * 512 * 4);
  // Model FLOPs 8 B T D H d_head + 4 B T^2 H d_head; the book's T_math splits them over Y = 4 chips.
  const double flops = 8.0 * 512 * 512 * 1024 + 4.0 * 2 * 256 * 256 * 1024;
  CHECK(b.model_flops == Approx(flops));
  const ChipConfig v5e = test::preset("v5e");
  CHECK(b.choice.at("book").at("t_math_seconds").get<double>() == Approx(flops / (4 * v5e.peak_bf16_flops())));
  CHECK(b.choice.at("book").at("t_comms_seconds").get<double>() ==
        Approx(8.0 * 512 * 512 / (2 * v5e.ici.link_bandwidth * 2)));
  CHECK(b.choice.at("per_chip").at("heads") == 2);
}

TEST_CASE("attention --plan rs: one reduce-scatter, half the all-reduce's T_comms") {
  const ChipConfig v5e = test::preset("v5e");
  const Built ar = build_attention("v5e", "4", {{"batch", "1"}});
  const Built rs = build_attention("v5e", "4", {{"batch", "1"}, {"plan", "rs"}});
  REQUIRE(rs.phases.size() == ar.phases.size());
  CHECK(rs.phases.back().detail.at("op") == "reduce-scatter");
  CHECK(rs.phases.back().detail.at("bytes") == ar.phases.back().detail.at("bytes"));
  CHECK(rs.choice.at("book").at("t_comms_seconds").get<double>() ==
        Approx(ar.choice.at("book").at("t_comms_seconds").get<double>() / 2));
  CHECK(rs.choice.at("book").at("t_comms_seconds").get<double>() ==
        Approx(4.0 * 256 * 512 / (2 * v5e.ici.link_bandwidth)));
  CHECK(rs.choice.at("collective") == "reduce-scatter");
  // The threshold doubles: Y = M_Y (H d_head / D) (2D + T) W / C.
  CHECK(rs.choice.at("book").at("threshold").get<double>() ==
        Approx(2 * ar.choice.at("book").at("threshold").get<double>()));
}

TEST_CASE("attention: heads not split, and refusals naming the option") {
  const Built one = build_attention("v5e", "1", {});
  for (const Phase& p : one.phases) CHECK_FALSE(p.communication);
  CHECK(one.choice.at("book").at("t_comms_seconds").get<double>() == 0);
  CHECK_THROWS_WITH(build_attention("v5e", "4", {{"heads", "6"}}),
                    Contains("--heads 6: the heads are split over X (4 ways), but 6 heads do not split"));
  CHECK_THROWS_WITH(build_attention("v5e", "2", {{"seq", "200"}}), Contains("--seq 200"));
  CHECK_THROWS_WITH(build_attention("v5e", "2", {{"d-head", "64"}}), Contains("--d-head 64"));
  CHECK_THROWS_WITH(build_attention("v5e", "2x2", {{"model-axis", "Z"}}), Contains("--model-axis 'Z'"));
  CHECK_THROWS_WITH(build_attention("v5e", "2x2", {{"model-axis", "YY"}}), Contains("each at most once"));
  CHECK_THROWS_AS(build_attention("v5e", "2", {{"heads", "0"}}), api::BadInput);
  CHECK_THROWS_WITH(build_attention("v5e", "2", {{"plan", "ag"}}), Contains("--plan 'ag'"));
}

TEST_CASE("attention: the softmax program's reference is a softmax, within bf16") {
  const std::uint64_t rows = 16, cols = 256;
  std::vector<float> s(rows * cols);
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<float>(static_cast<int>(i * 7919 % 1000) - 500) / 25;
  const float scale = 1.0F / std::sqrt(128.0F);
  const std::vector<float> p = softmax_bf16_reference(s, rows, cols, scale);
  for (std::uint64_t r = 0; r < rows; ++r) {
    double max = -1e30, total = 0, sum = 0;
    for (std::uint64_t c = 0; c < cols; ++c) max = std::max(max, static_cast<double>(s[r * cols + c]) * scale);
    for (std::uint64_t c = 0; c < cols; ++c) total += std::exp(static_cast<double>(s[r * cols + c]) * scale - max);
    for (std::uint64_t c = 0; c < cols; ++c) {
      const double want = std::exp(static_cast<double>(s[r * cols + c]) * scale - max) / total;
      CHECK(p[r * cols + c] == Approx(want).epsilon(1.0 / 128));  // bf16: 8 significant bits
      sum += p[r * cols + c];
    }
    CHECK(sum == Approx(1).epsilon(0.02));
  }
  CHECK_THROWS_WITH(generate_softmax_bf16(8, 256, scale, test::preset("v5e")), Contains("rows a multiple of 16"));
  CHECK_THROWS_WITH(generate_softmax_bf16(16, 100, scale, test::preset("v5e")), Contains("columns a multiple of 128"));
  const SoftmaxOps ops = softmax_ops(rows, cols);
  CHECK(ops.eup == 2 * (2 + 1));  // per 8-row group: a vpow2 per tile and one vrcp
  CHECK(ops.xlu == 2 * 28);
}

TEST_CASE("cast blocks: refusals name the block") {
  const ChipConfig v5e = test::preset("v5e");
  const std::vector<CastOperand> ops{{256, 384, "f32", false}, {256, 128, "bf16", true}, {128, 256, "bf16", true}};
  CHECK_NOTHROW(generate_cast_blocks(ops, {{0, 0, 128, 256, 128, 1, 0, 0, false}}, v5e));
  CHECK_NOTHROW(generate_cast_blocks(ops, {{0, 0, 256, 256, 128, 2, 0, 0, true}}, v5e));
  CHECK_THROWS_WITH(generate_cast_blocks(ops, {{1, 0, 0, 256, 128, 2, 0, 0, false}}, v5e),
                    Contains("the source must be f32 and the destination bf16"));
  CHECK_THROWS_WITH(generate_cast_blocks(ops, {{0, 4, 0, 8, 128, 1, 0, 0, false}}, v5e), Contains("off the (8,128)"));
  CHECK_THROWS_WITH(generate_cast_blocks(ops, {{0, 0, 0, 8, 128, 2, 0, 0, true}}, v5e), Contains("128x128 blocks"));
  CHECK_THROWS_WITH(generate_cast_blocks(ops, {{0, 0, 384, 256, 128, 1, 0, 0, false}}, v5e),
                    Contains("outside its operands"));
  // Rows 0..8 of operand 2 are 256 columns wide; a 128-column block leaves half the band unwritten.
  CHECK_THROWS_WITH(generate_cast_blocks(ops, {{0, 0, 0, 8, 128, 2, 0, 0, false}}, v5e),
                    Contains("write 128 of its 256 columns"));
}

// The megacore split of a workload's per-chip matmul (programs/generators.hpp,
// "Core split"; pieces.hpp on_every_core): by columns or rows, whichever takes
// fewer MXU cycles; one-core chips and shapes that do not split unchanged.
TEST_CASE("workload matmuls split over a megacore chip's TensorCores", "[workloads][megacore]") {
  const ChipConfig v5p = test::preset("v5p");
  const ChipConfig v5e = test::preset("v5e");
  const auto split_of = [&](std::uint64_t m, std::uint64_t k, std::uint64_t n, std::uint64_t blocks = 1) {
    programs::MatmulSpec spec{m, k, n, "bf16"};
    spec.a_column_blocks = blocks;
    return programs::matmul_core_split(on_every_core(spec, v5p), v5p);
  };
  // 1280 columns: 5 tiles per core (a block of 4 MXUs and one of 1, in quarters) cost within 2 % of half the rows
  // over 10 tiles (4 + 4 + 2 in halves), and rows read the smaller operand, B, twice (16.70 against 17.40 us).
  CHECK(split_of(2560, 768, 1280) == programs::CoreSplit::kRows);
  // 1024 columns: one full column block of 4 MXUs per core.
  CHECK(split_of(256, 512, 1024) == programs::CoreSplit::kColumns);
  CHECK(split_of(512, 256, 384) == programs::CoreSplit::kRows);
  // A in column blocks cannot split by rows; 384 columns do not split into whole tiles per core.
  CHECK(split_of(512, 256, 384, 2) == programs::CoreSplit::kNone);
  CHECK(on_every_core({512, 256, 384, "bf16"}, v5p).split_cores == 2);
  CHECK(on_every_core({8, 128, 128, "bf16"}, v5p).split_cores == 1);
  CHECK(on_every_core({256, 512, 1024, "bf16"}, v5e).split_cores == 1);
  // The split program binds the whole operands and names its share.
  const std::string text = programs::generate_matmul(on_every_core({256, 512, 1024, "bf16"}, v5p), v5p);
  CHECK_THAT(text, Contains("shape: f32[256,1024], index: 2"));
  CHECK_THAT(text, Contains("core c computes columns [c 512, (c+1) 512) of C[256,1024], a 256x512x512 matmul"));
  CHECK_THAT(text, Contains("vsyncadd.remote"));
  programs::MatmulSpec wrong{256, 512, 1024, "bf16"};
  wrong.split_cores = 4;
  CHECK_THROWS_WITH(programs::generate_matmul(wrong, v5p),
                    Contains("a split over 4 cores on v5p, which has 2 TensorCore(s) per chip"));
}
