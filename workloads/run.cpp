#include "workloads/run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "api/errors.hpp"
#include "api/run.hpp"
#include "common/presets.hpp"
#include "common/units.hpp"
#include "dist/ranks.hpp"
#include "workloads/workload.hpp"

namespace tpuemu::workloads {
namespace {

using nlohmann::json;

std::string time_text(double seconds) {
  return format_quantity(seconds, Quantity::kTime);
}

// Per step, from the pod report's per_chip[].steps (core 0's end cycle and
// the cumulative counters of the chip's cores): the slowest chip's cycles in the step, the counters
// summed over the chips, and how far apart the chips ended the step before.
struct StepMeasure {
  std::uint64_t cycles = 0;
  std::uint64_t mxu_flops = 0;
  std::uint64_t hbm_bytes = 0;
  std::uint64_t start_skew_cycles = 0;
};

std::vector<StepMeasure> measure_steps(const json& report, std::size_t steps) {
  std::vector<StepMeasure> out(steps);
  for (std::size_t s = 0; s < steps; ++s) {
    std::uint64_t earliest_start = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t latest_start = 0;
    for (const auto& chip : report.at("per_chip")) {
      const auto& st = chip.at("steps");
      const auto at = [&st](std::size_t i, const char* key) {
        return i < st.size() ? st.at(i).at(key).get<std::uint64_t>() : 0;
      };
      const std::uint64_t start = s == 0 ? 0 : at(s - 1, "end_cycle");
      out[s].cycles = std::max(out[s].cycles, at(s, "end_cycle") - start);
      out[s].mxu_flops += at(s, "mxu_flops") - (s == 0 ? 0 : at(s - 1, "mxu_flops"));
      out[s].hbm_bytes += at(s, "hbm_bytes") - (s == 0 ? 0 : at(s - 1, "hbm_bytes"));
      earliest_start = std::min(earliest_start, start);
      latest_start = std::max(latest_start, start);
    }
    out[s].start_skew_cycles = latest_start - earliest_start;
  }
  return out;
}

// Under mpirun every rank must run the same workload with the same options:
// the pod's own digests (chip/pod.cpp) cover the programs, but not the inputs
// an option such as --seed makes. Collective: every rank calls it once per
// workload run, in the same order.
void check_workload_ranks_agree(const WorkloadRequest& request, const json& resolved) {
  dist::Ranks& ranks = dist::world();
  if (ranks.size() <= 1) return;
  const std::string text = fmt::format("{} no_data {} options {}", request.name, request.no_data, resolved.dump());
  const std::vector<dist::Bytes> all = ranks.all_gather(dist::Bytes(text.begin(), text.end()));
  std::vector<std::uint32_t> odd;
  for (std::uint32_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0]) odd.push_back(r);
  }
  if (!odd.empty()) {
    throw api::BadInput(fmt::format(
        "the MPI ranks do not agree on: workload options (rank {} differs from rank 0); every rank needs the same "
        "tpuemu build, presets and arguments",
        fmt::join(odd, ", ")));
  }
}

}  // namespace

WorkloadResult run_workload(const WorkloadRequest& request) {
  const auto started = std::chrono::steady_clock::now();
  const Workload& w = workload(request.name);
  const OptionValues options(request.options, w.options());
  check_workload_ranks_agree(request, options.resolved());
  Setup setup;
  try {
    setup.chip = load_chip(request.chip);
    setup.topology = ici::make_topology(request.topology, setup.chip);
  } catch (const std::exception& e) {  // ConfigError, TopologyError
    throw api::BadInput(e.what());
  }
  // Every workload multiplies on the MXUs: a chip without them (the GPU
  // presets) is refused before its options are weighed.
  if (setup.chip.mxu.count == 0) {
    throw api::BadInput(fmt::format(
        "--chip {1}: {0}'s matmuls run on TPU MXUs, and {1} has none (mxu.count 0: GPU SMs are not modelled); use a "
        "TPU chip (e.g. --chip v5e), or `tpuemu collective` for {1}'s fabric",
        request.name, setup.chip.name));
  }
  setup.no_data = request.no_data;
  const Built built = w.build(setup, options);

  api::Job job;
  job.chip = request.chip;
  job.topology = request.topology;
  job.routing = request.routing;
  job.name = fmt::format("workload {}", request.name);
  job.steps = built.steps;
  job.options.no_data = request.no_data;
  double predicted_total = 0;
  for (const Phase& p : built.phases) predicted_total += p.predicted_seconds;
  job.options.max_cycles =
      request.max_cycles.value_or(api::predicted_cycle_limit(predicted_total, setup.chip.clock_hz));
  job.options.partition = request.partition;
  job.observers = request.observers;
  job.isolation = request.isolation;
  if (!request.no_data) {
    job.inputs = built.inputs;
    // The check runs where the simulation ran; its verdict travels in the report.
    job.on_result = [&built](api::Result& r) {
      if (r.fault) return;
      r.report["workload_check"] = built.check(r);
      r.outputs.clear();
    };
  }
  api::Result run = api::run(job);

  WorkloadResult out;
  out.host = run.host;
  out.fault = run.fault;
  json check{{"check", "skipped (--no-data)"}, {"ok", true}};
  if (run.report.contains("workload_check")) {
    check = run.report["workload_check"];
    run.report.erase("workload_check");
  } else if (run.fault) {
    check = {{"check", "not run (program fault)"}, {"ok", false}};
  }
  out.ok = check.at("ok").get<bool>();

  const ChipConfig& chip = setup.chip;
  const double clock = chip.clock_hz;
  const auto measures = measure_steps(run.report, built.phases.size());
  std::size_t communication_phases = 0;
  for (const Phase& p : built.phases) communication_phases += p.communication ? 1 : 0;
  const auto ici_bytes = run.report.value("ici_bytes", std::uint64_t{0});
  json phases = json::array();
  json warnings = json::array();
  // Steps start when each chip ends the one before, with no barrier: a
  // collective's first sends reach other chips one hop latency after the
  // earliest start, so chips further apart could still be in the step before.
  const double hop_cycles = chip.ici.hop_latency_s * clock;
  double compute = 0;
  double communication = 0;
  double math = 0;
  double comms = 0;
  double predicted = 0;
  std::uint64_t hbm_bytes = 0;
  for (std::size_t s = 0; s < built.phases.size(); ++s) {
    const Phase& p = built.phases[s];
    const StepMeasure& m = measures[s];
    const double seconds = static_cast<double>(m.cycles) / clock;
    (p.communication ? communication : compute) += seconds;
    (p.communication ? comms : math) += p.book_seconds;
    predicted += p.predicted_seconds;
    hbm_bytes += m.hbm_bytes;
    json j{{"name", p.name},
           {"kind", p.communication ? "communication" : "compute"},
           {"step", s},
           {"cycles", m.cycles},
           {"seconds", seconds},
           {p.communication ? "t_comms_seconds" : "t_math_seconds", p.book_seconds},
           {"predicted_seconds", p.predicted_seconds},
           {"prediction", p.prediction},
           {"measured_over_predicted", p.predicted_seconds > 0 ? seconds / p.predicted_seconds : 0.0},
           {"mxu_flops", m.mxu_flops},
           {"hbm_bytes", m.hbm_bytes},
           {"start_skew_cycles", m.start_skew_cycles}};
    // The compute steps send nothing over ICI: one collective carries it all.
    if (p.communication && communication_phases == 1) j["ici_bytes"] = ici_bytes;
    if (p.communication && !p.own_flags && static_cast<double>(m.start_skew_cycles) > hop_cycles) {
      warnings.push_back(fmt::format(
          "the chips entered '{}' up to {} cycles apart, more than one ICI hop ({:.0f} cycles): its first deliveries "
          "may have reached chips still in the step before",
          p.name, m.start_skew_cycles, hop_cycles));
    }
    j.update(p.detail);
    json buffers = json::array();  // the step's operands, in operand order (tpuemu workload --graph)
    for (const auto& [index, buffer] : built.steps.at(s).operand_buffers) buffers.push_back(buffer);
    j["buffers"] = buffers;
    phases.push_back(std::move(j));
  }
  const double chips = static_cast<double>(setup.topology.chip_count());
  const double peak = chip.peak_bf16_flops();
  json report{{"schema", "tpuemu-workload"},
              {"schema_version", kWorkloadReportSchemaVersion},
              {"workload", request.name},
              {"chip", chip.name},
              {"topology", setup.topology.shape()},
              {"chips", setup.topology.chip_count()},
              {"options", options.resolved()},
              {"no_data", request.no_data},
              {"intro", built.intro}};
  report.update(built.choice);
  report["phases"] = phases;
  report["cycles"] = run.cycles;
  report["seconds"] = run.seconds;
  report["compute_seconds"] = compute;
  report["communication_seconds"] = communication;
  report["exposed_communication_seconds"] = std::max(0.0, run.seconds - compute);
  report["model_flops"] = built.model_flops;
  report["mfu"] = run.seconds > 0 && peak > 0 ? built.model_flops / (chips * peak * run.seconds) : 0.0;
  report["hbm_bytes"] = hbm_bytes;
  report["ici_bytes"] = ici_bytes;
  report["predicted"] = {{"t_math_seconds", math},
                         {"t_comms_seconds", comms},
                         {"seconds", predicted},
                         {"formula", "the phases run one after another: the sum of the phases' predictions"}};
  report["measured_over_predicted"] = predicted > 0 ? run.seconds / predicted : 0.0;
  report["warnings"] = warnings;
  report["check"] = check.at("check");
  report["ok"] = out.ok;
  report["fault"] = out.fault ? json(out.fault->message) : json(nullptr);
  if (built.finish && !out.fault) built.finish(report, run.report);
  report["report"] = run.report;
  // This process's costs (under mpirun: each rank's own; rank 0 reports).
  // The only part of the report that differs from run to run, or between one
  // process and a pod over MPI ranks.
  report["host"] = {{"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()},
                    {"simulation_seconds", run.host.seconds},
                    {"peak_rss_bytes", run.host.peak_rss_bytes},
                    {"ranks", dist::world().size()},
                    {"windows", run.host.windows}};
  out.report = std::move(report);
  return out;
}

void print_workload(const json& r) {
  for (const auto& line : r.at("intro")) fmt::print("{}\n", line.get<std::string>());
  fmt::print("\n{:<36} {:>12} {:>12} {:>9}  {}\n", "phase", "measured", "predicted", "meas/pred", "prediction");
  for (const auto& p : r.at("phases")) {
    fmt::print("{:<36} {:>12} {:>12} {:>9.3f}  {}\n", p.at("name").get<std::string>(),
               time_text(p.at("seconds").get<double>()), time_text(p.at("predicted_seconds").get<double>()),
               p.at("measured_over_predicted").get<double>(), p.at("prediction").get<std::string>());
  }
  const auto& predicted = r.at("predicted");
  fmt::print("{:<36} {:>12} {:>12} {:>9.3f}  {}\n", "total", time_text(r.at("seconds").get<double>()),
             time_text(predicted.at("seconds").get<double>()), r.at("measured_over_predicted").get<double>(),
             predicted.at("formula").get<std::string>());
  fmt::print(
      "\ncompute {}, communication {}, exposed communication {}; the book: T_math {}, T_comms {}\n"
      "MFU {:.1f} % ({:.4g} model FLOPs over {} chips), HBM {} B, ICI {} B\n",
      time_text(r.at("compute_seconds").get<double>()), time_text(r.at("communication_seconds").get<double>()),
      time_text(r.at("exposed_communication_seconds").get<double>()),
      time_text(predicted.at("t_math_seconds").get<double>()), time_text(predicted.at("t_comms_seconds").get<double>()),
      100.0 * r.at("mfu").get<double>(), r.at("model_flops").get<double>(), r.at("chips").get<std::uint64_t>(),
      r.at("hbm_bytes").get<std::uint64_t>(), r.at("ici_bytes").get<std::uint64_t>());
  for (const auto& w : r.at("warnings")) fmt::print("warning   {}\n", w.get<std::string>());
  if (r.at("no_data").get<bool>()) {
    fmt::print("check     skipped (--no-data)\n");
  } else {
    fmt::print("check     {}: {}\n", r.at("ok").get<bool>() ? "PASS" : "FAIL", r.at("check").get<std::string>());
  }
  if (r.contains("host")) {
    const auto& host = r.at("host");
    const auto ranks = host.at("ranks").get<std::uint32_t>();
    fmt::print("host      {:.2f} s ({:.2f} s simulating), peak RSS {:.0f} MiB{}\n", host.at("seconds").get<double>(),
               host.at("simulation_seconds").get<double>(),
               static_cast<double>(host.at("peak_rss_bytes").get<std::uint64_t>()) / (1 << 20),
               ranks <= 1 ? std::string()
                          : fmt::format(" on rank 0 of {}, {} windows between ranks", ranks,
                                        host.at("windows").get<std::uint64_t>()));
  }
}

json workload_list() {
  json out = json::array();
  for (const auto& name : workload_names()) {
    const Workload& w = workload(name);
    json options = json::array();
    for (const auto& o : w.options()) {
      options.push_back({{"name", o.name}, {"default", o.default_value}, {"help", o.help}});
    }
    out.push_back({{"name", name}, {"summary", std::string(w.summary())}, {"options", options}});
  }
  return out;
}

}  // namespace tpuemu::workloads
