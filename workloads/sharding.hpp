// Shardings of a matmul's operands in the book's notation ("How to Scale Your
// Model", sharding.md) and its four cases (../shared/WORKLOADS.md section 1):
// which communication C = A @ B needs for given shardings of A[I, J] and
// B[J, K], and the plans that provide it, as blocks every chip holds.
//
// Notation: "I_X,J" is A with I split over mesh axis X and J whole; "I_XY"
// splits I over X and Y, X major (shard index x * Y + y, as JAX's
// P(('x','y'))). Mesh axes X, Y, Z are the topology's axes x, y, z.
//
// Cases (J is the contracting dimension, R the axes J is split over):
//   1  J whole in both, no axis shared by I and K: local matmul, C[I, K] sharded as A's I and B's K.
//   2  J split in one operand: all-gather that operand over R first (plan ag),
//      or multiply the chip's J block locally and sum the partial results over
//      R: all-reduce (plan ar, C whole over R) or reduce-scatter (plan rs, C's
//      I also split over R, minor).
//   3  J split over the same axes in both: local matmul, then ar or rs.
//   4  J whole in both, I and K split over a shared axis S: all-gather A over S first.
// Other combinations (J split over different axes in A and B, case 4 together
// with a split J) are refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpuemu::workloads {

// One dimension of an operand: its name and the mesh axes it is split over, major first.
struct DimSharding {
  std::string name;
  std::vector<std::size_t> axes;
};

struct OperandSharding {
  DimSharding rows;
  DimSharding cols;
};

// Parses "I_X,J": two comma-separated dims, each a name (letters, digits)
// optionally followed by "_" and mesh axes (X, Y, Z; lower case accepted).
// Throws std::invalid_argument starting with `option`: not two dims, an empty
// or malformed name, an axis the topology (axis_count axes) lacks, an axis
// used twice in the operand.
OperandSharding parse_sharding(std::string_view text, std::string_view option, std::size_t axis_count);
// "I_X,J" (axes upper case).
std::string format_sharding(const OperandSharding& sharding);
// "XY"; "" for no axes.
std::string axes_text(const std::vector<std::size_t>& axes);

// "none" (no axes) or distinct mesh axes of a topology of `axis_count` axes,
// major first ("X", "YX"; lower case accepted). Throws std::invalid_argument
// starting with `option` and the text otherwise.
std::vector<std::size_t> parse_mesh_axes(std::string_view text, std::string_view option, std::size_t axis_count);

// `a` followed by `b` (mesh axes, major first).
std::vector<std::size_t> concat_axes(std::vector<std::size_t> a, const std::vector<std::size_t>& b);

enum class Plan { kLocal, kAllGather, kReduceScatter, kAllReduce };
inline constexpr Plan kPlans[] = {Plan::kLocal, Plan::kAllGather, Plan::kReduceScatter, Plan::kAllReduce};
// "local", "ag", "rs", "ar".
std::string_view plan_name(Plan plan);
std::optional<Plan> parse_plan(std::string_view text);

// How a matrix is split over the mesh: its rows over `rows`, its columns
// over `cols` (major first); the other axes hold copies.
struct Blocks {
  std::vector<std::size_t> rows;
  std::vector<std::size_t> cols;
  bool operator==(const Blocks&) const = default;
};

// What every chip holds and computes under a plan.
struct PlanLayout {
  Plan plan = Plan::kLocal;
  std::vector<std::size_t> axes;  // the collective's mesh axes, major first; empty for kLocal
  char gathered = 0;              // 'A' or 'B' for kAllGather
  Blocks a_in, b_in;              // the inputs as the chips hold them (for the contracting
                                  // dimension of the operand not split on it: the block the chip uses)
  Blocks a, b;                    // the operands of each chip's local matmul
  Blocks c;                       // the result on every chip
};

// A plan of a case: its layout, or why the case cannot use it.
struct PlanOption {
  Plan plan = Plan::kLocal;
  std::optional<PlanLayout> layout;
  std::string refusal;
};

struct CaseAnalysis {
  int book_case = 0;  // 1..4
  std::string description;
  std::vector<PlanOption> plans;  // one per Plan, in kPlans order
  [[nodiscard]] const PlanOption& option(Plan plan) const;
};

// Throws std::invalid_argument naming --lhs / --rhs when the contracting
// dimension's names differ or the shardings are none of the four cases.
CaseAnalysis analyze_case(const OperandSharding& lhs, const OperandSharding& rhs);

// Index of a chip's block of a dimension split over `axes` (major first):
// the mixed-radix number of its coordinates on them; `lengths` are the
// topology's axis lengths.
std::uint64_t shard_index(const std::vector<std::uint32_t>& coords, const std::vector<std::uint32_t>& lengths,
                          const std::vector<std::size_t>& axes);
// Product of the lengths of `axes`.
std::uint64_t shard_count(const std::vector<std::uint32_t>& lengths, const std::vector<std::size_t>& axes);

}  // namespace tpuemu::workloads
