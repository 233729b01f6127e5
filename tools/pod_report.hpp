// The result of a pod run for people and programs: a text summary (time,
// per-chip spread, ICI traffic and link utilisation, stalls) and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "chip/pod.hpp"
#include "common/chip_config.hpp"
#include "ici/topology.hpp"

namespace tpuemu::cli {

struct PodSummary {
  std::string program;
  const ChipConfig* chip = nullptr;
  const ici::Topology* topology = nullptr;
  chip::PodResult result;
};

void print_pod_summary(const PodSummary& summary);
nlohmann::json pod_report_json(const PodSummary& summary);

}  // namespace tpuemu::cli
