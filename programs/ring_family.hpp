// The ring family of collective algorithms (ring, bidir-ring, multi-axis;
// programs/collectives.hpp describes their schedule, layout and summation
// order): the parts that programs/collective_algorithms/ring_family.cpp
// registers. Also the all-to-all program, which every algorithm shares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/chip_config.hpp"
#include "ici/topology.hpp"
#include "programs/collectives.hpp"

namespace tpuemu::programs {

std::string ring_family_generate(const CollectiveSpec& spec, const ici::Topology& topology, const ChipConfig& chip);
std::uint64_t ring_family_scratch_bytes(const CollectivePlan& plan, const ici::Topology& topology);
std::vector<std::vector<std::uint8_t>> ring_family_reference(const CollectivePlan& plan, const ici::Topology& topology,
                                                             const std::vector<std::vector<std::uint8_t>>& inputs);
CollectivePrediction ring_family_predict(const CollectiveSpec& spec, const CollectivePlan& plan,
                                         const ici::Topology& topology, const ChipConfig& chip);

}  // namespace tpuemu::programs
