// Algorithms "ring", "bidir-ring" and "multi-axis": the ring family
// (programs/collectives.hpp has their schedule, layout and summation order;
// the code is in programs/collectives.cpp and collective_reference.cpp).
// They run on every fabric: on a switched one each ring step is one
// chip-to-chip transfer through a switch.
#include "programs/ring_family.hpp"

#include <algorithm>
#include <memory>

#include "programs/collective_algorithm.hpp"

// Each algorithm file has its own namespace: unity builds compile several of
// them as one translation unit.
namespace tpuemu::programs::ring_family_algorithms {

namespace {

class RingFamilyAlgorithm final : public CollectiveAlgorithm {
 public:
  RingFamilyAlgorithm(std::string name, std::string summary, bool per_axis_parts, std::uint64_t directions,
                      bool half_rings)
      : name_(std::move(name)),
        summary_(std::move(summary)),
        per_axis_parts_(per_axis_parts),
        directions_(directions),
        half_rings_(half_rings) {}

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] std::string_view summary() const override { return summary_; }
  [[nodiscard]] std::string refusal(CollectivePlan::Op /*op*/, const std::vector<std::size_t>& /*axes*/,
                                    const ici::Topology& /*topology*/) const override {
    return "";
  }
  [[nodiscard]] std::uint64_t parts(std::size_t axes) const override {
    return per_axis_parts_ ? std::max<std::size_t>(axes, 1) : 1;
  }
  [[nodiscard]] std::uint64_t directions() const override { return directions_; }
  [[nodiscard]] bool half_rings() const override { return half_rings_; }
  [[nodiscard]] NcclKernel nccl_kernel() const override { return NcclKernel::kRing; }
  [[nodiscard]] std::uint64_t scratch_bytes(const CollectivePlan& plan, const ici::Topology& topology) const override {
    return ring_family_scratch_bytes(plan, topology);
  }
  [[nodiscard]] std::string generate(const CollectiveSpec& spec, const CollectivePlan& /*plan*/,
                                     const ici::Topology& topology, const ChipConfig& chip) const override {
    return ring_family_generate(spec, topology, chip);
  }
  [[nodiscard]] std::vector<std::vector<std::uint8_t>> reference(
      const CollectivePlan& plan, const ici::Topology& topology,
      const std::vector<std::vector<std::uint8_t>>& inputs) const override {
    return ring_family_reference(plan, topology, inputs);
  }
  [[nodiscard]] CollectivePrediction predict(const CollectiveSpec& spec, const CollectivePlan& plan,
                                             const ici::Topology& topology, const ChipConfig& chip) const override {
    return ring_family_predict(spec, plan, topology, chip);
  }

 private:
  std::string name_;
  std::string summary_;
  bool per_axis_parts_;
  std::uint64_t directions_;
  bool half_rings_;
};

const CollectiveAlgorithmRegistrar kRing{std::make_unique<RingFamilyAlgorithm>(
    "ring", "one stream going + round each axis in turn (N-1 steps per axis); sums in ring order", false, 1, false)};
const CollectiveAlgorithmRegistrar kBidirRing{std::make_unique<RingFamilyAlgorithm>(
    "bidir-ring",
    "each chunk in two halves, each half sent both ways round every ring, floor(N/2) steps per axis (reductions: "
    "one more on an odd axis); sums the two half-ring chains, then adds them",
    false, 2, true)};
const CollectiveAlgorithmRegistrar kMultiAxis{std::make_unique<RingFamilyAlgorithm>(
    "multi-axis",
    "each chunk in one part per axis, part p going through the axes starting at axis p, all at once (the book's "
    "V/(W N_axes)); sums in ring order",
    true, 2, false)};

}  // namespace

}  // namespace tpuemu::programs::ring_family_algorithms
