// The run report: one JSON schema for a run on one chip and on a pod
// (documented field by field in docs/report.md; kReportSchemaVersion changes
// whenever a field changes meaning or goes away). The text summary the CLI
// prints is a rendering of this report (print_report), so both always agree.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chip/pod.hpp"
#include "chip/run.hpp"
#include "common/chip_config.hpp"
#include "ici/topology.hpp"

namespace tpuemu::api {

inline constexpr int kReportSchemaVersion = 1;

// A run of `program` (the name shown: a path, or a kernel name) on one chip.
// `steps` are a chain's kernels (run_chain); empty for one program.
nlohmann::json chip_report(const std::string& program, const ChipConfig& chip, const chip::RunResult& result,
                           const std::vector<chip::StepResult>& steps = {});
// A run on every core of every chip of `topology`.
nlohmann::json pod_report(const std::string& program, const ChipConfig& chip, const ici::Topology& topology,
                          const std::string& routing, const chip::PodResult& result);

// The CLI's text summary of a report (stdout).
void print_report(const nlohmann::json& report);

}  // namespace tpuemu::api
