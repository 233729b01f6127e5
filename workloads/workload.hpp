// Workloads by name (house style 6): each lives in its own file under
// workloads/ and registers itself; adding one is adding a file. A workload
// turns a chip, a topology and its options into a chain of SPMD programs over
// named buffers (an api::Job's steps and inputs), a host reference for every
// output (checked where the run happened) and the book's prediction of every
// phase. workloads/run.hpp runs one and reports it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/job.hpp"
#include "api/result.hpp"
#include "common/chip_config.hpp"
#include "ici/topology.hpp"

namespace tpuemu::workloads {

// An option of a workload: `--NAME VALUE` on the command line, NAME=value in Python.
struct OptionSpec {
  std::string name;
  std::string default_value;  // "" = no default (optional)
  std::string help;
};

// The options given to a workload, as text (command-line values; Python
// values converted with str()).
class OptionValues {
 public:
  // Throws api::BadInput naming an option `specs` does not list.
  OptionValues(std::map<std::string, std::string> given, const std::vector<OptionSpec>& specs);
  // The value, or the default; "" when neither.
  [[nodiscard]] const std::string& text(const std::string& name) const;
  // A whole number in [min, max] (common/parse_number.hpp: 4096, 1e3, 4K);
  // throws api::BadInput naming --NAME and the range.
  [[nodiscard]] std::uint64_t whole(const std::string& name, std::uint64_t min, std::uint64_t max) const;
  // Every option with its value (defaults included), for the report.
  [[nodiscard]] nlohmann::json resolved() const;

 private:
  std::map<std::string, std::string> values_;
};

struct Setup {
  ChipConfig chip;
  ici::Topology topology{{1}, {false}};
  bool no_data = false;
};

// One step of the chain, measured and predicted.
struct Phase {
  std::string name;  // "all-gather B over X", "matmul 256x512x512"
  bool communication = false;
  // The book's time: T_math = FLOPs / peak (compute) or T_comms, the
  // collective's formula (communication).
  double book_seconds = 0;
  // What the phase should take: the roofline max(T_math, T_HBM) for compute,
  // T_comms for communication; `prediction` says which formula.
  double predicted_seconds = 0;
  std::string prediction;
  double flops = 0;  // per chip, as generated (2 m k n)
  // Its sync flags are its own (no other step uses them), so deliveries
  // reaching a chip still in the step before are harmless.
  bool own_flags = false;
  nlohmann::json detail;  // the workload's fields: op, axes, bytes, m, k, n, ...
};

// A workload's job for a setup and options.
struct Built {
  std::vector<api::Step> steps;  // one Phase each
  std::map<std::string, api::Input> inputs;
  std::vector<Phase> phases;
  double model_flops = 0;          // the whole problem's FLOPs, once (MFU's numerator)
  nlohmann::json choice;           // the workload's own report fields (its case, plan, shardings, ...)
  std::vector<std::string> intro;  // lines printed before the run
  // Runs in the process that simulated, on a run with data that did not
  // fault: compares every output of every chip with its host reference and
  // returns {"check": "bit-exact (...)" or what differs, "ok": bool}.
  std::function<nlohmann::json(const api::Result&)> check;
  // Optional, after every run (with or without data, not after a fault): adds
  // the workload's own measured fields to `report` (the workload report, its
  // "phases" filled in) from `run_report` (the run's report, docs/report.md).
  std::function<void(nlohmann::json& report, const nlohmann::json& run_report)> finish;
};

class Workload {
 public:
  virtual ~Workload() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // One line for `--list`.
  [[nodiscard]] virtual std::string_view summary() const = 0;
  [[nodiscard]] virtual std::vector<OptionSpec> options() const = 0;
  // Throws api::BadInput naming the option at fault (shapes, shardings,
  // sizes the generators cannot do), before anything runs.
  [[nodiscard]] virtual Built build(const Setup& setup, const OptionValues& options) const = 0;
};

// The registered workload called `name`; throws api::BadInput listing the names.
const Workload& workload(std::string_view name);
// Every registered name, sorted.
std::vector<std::string> workload_names();

// Registers a workload for the program's lifetime (from a namespace-scope
// object in its own file; a second one of the same name aborts at start).
class WorkloadRegistrar {
 public:
  explicit WorkloadRegistrar(std::unique_ptr<Workload> workload);
};

}  // namespace tpuemu::workloads
