// Running a workload (workloads/workload.hpp) through the run API and
// reporting it: every phase measured beside the book's prediction, compute,
// communication, exposed communication, MFU, HBM and ICI bytes, and the
// check of every output against its host reference. Below `tpuemu workload`
// and tpuemu.workload in Python; the report's fields: docs/workloads.md.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/job.hpp"
#include "api/result.hpp"

namespace tpuemu::workloads {

inline constexpr int kWorkloadReportSchemaVersion = 1;

struct WorkloadRequest {
  std::string name;
  ChipRequest chip;
  ici::TopologyRequest topology;
  std::string routing = "dimension-order";
  std::map<std::string, std::string> options;  // the workload's own, by name, as text
  bool no_data = false;                        // timing only: same times, no check
  // The cycle limit; none: api::predicted_cycle_limit of the phases' predictions.
  std::optional<std::uint64_t> max_cycles;
  std::string partition;  // under mpirun: api::Options::partition
  api::Observers observers;
  api::Isolation isolation = api::Isolation::kAuto;
};

struct WorkloadResult {
  nlohmann::json report;  // schema "tpuemu-workload" (docs/workloads.md); "report" inside is the run's
  bool ok = true;         // every output equals its reference (true without data)
  std::optional<api::FaultSite> fault;
  api::HostCost host;
};

// Throws api::BadInput (unknown workload or option, bad shapes or shardings,
// a chip or topology the workload cannot use) before anything runs, or
// api::InternalError; a program fault is WorkloadResult::fault.
WorkloadResult run_workload(const WorkloadRequest& request);

// The CLI's text rendering of a workload report (stdout).
void print_workload(const nlohmann::json& report);

// Every registered workload: name, summary, options (name, default, help).
nlohmann::json workload_list();

}  // namespace tpuemu::workloads
