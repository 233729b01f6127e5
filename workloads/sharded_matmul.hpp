// The sharded-matmul workload's sizing and plan choice (workloads/sharding.hpp
// gives the case and the layouts): per plan the generated programs' specs,
// the book's costs, or why the sizes do not fit it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/chip_config.hpp"
#include "ici/topology.hpp"
#include "programs/collectives.hpp"
#include "programs/generators.hpp"
#include "workloads/sharding.hpp"
#include "workloads/workload.hpp"

namespace tpuemu::workloads {

// C[M, N] = A[M, K] @ B[K, N] (bf16 in, f32 out) under shardings.
struct ShardedMatmul {
  std::uint64_t m = 0, k = 0, n = 0;
  OperandSharding lhs, rhs;
  std::string algorithm = "multi-axis";  // of the collective
};

// A plan sized for a matmul on a topology.
struct SizedPlan {
  Plan plan = Plan::kLocal;
  std::string refusal;  // why it cannot run ("" if it can)
  std::optional<PlanLayout> layout;
  programs::MatmulSpec local;  // every chip's matmul
  std::optional<programs::CollectiveSpec> collective;
  std::vector<Phase> phases;     // in step order
  double math_seconds = 0;       // the book's T_math: sum of the matmul phases
  double comms_seconds = 0;      // the book's T_comms: sum of the collective phases
  double predicted_seconds = 0;  // sum of the phases' predictions (no overlap)
};

// Every plan of `analysis` sized for `mm`: refused where the case refuses it
// or the sizes do not fit the generators (whole bf16 tiles of gathered row
// blocks, whole f32 tiles of reduced blocks, the collective's granules, the
// chip's VMEM). Throws std::invalid_argument naming --m, --k or --n when the
// operands' own shardings do not split them.
std::vector<SizedPlan> size_plans(const ShardedMatmul& mm, const CaseAnalysis& analysis, const ChipConfig& chip,
                                  const ici::Topology& topology);

// The plan to run: `forced` if given (std::invalid_argument naming --plan
// with its refusal if it cannot run), else the least predicted time among
// local, ag and ar (which keep C's sharding; rs splits C further, so only
// when forced), the first of kPlans order on a tie. Throws
// std::invalid_argument listing every refusal when none can run.
const SizedPlan& pick_plan(const std::vector<SizedPlan>& plans, std::optional<Plan> forced);

}  // namespace tpuemu::workloads
