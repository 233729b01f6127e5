// The result of a run for people and programs: the text summary (cycles,
// utilisation, stalls, roofline) and the JSON report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "chip/run.hpp"
#include "common/chip_config.hpp"
#include "tools/roofline.hpp"

namespace tpuemu::cli {

struct Summary {
  std::string program;
  const ChipConfig* chip = nullptr;
  chip::RunResult result;
  Roofline roofline;
};

// Fills Summary::roofline from the run's counters.
void compute_summary_roofline(Summary& summary);
void print_summary(const Summary& summary);
nlohmann::json report_json(const Summary& summary);

}  // namespace tpuemu::cli
