#include "api/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "api/roofline.hpp"
#include "common/units.hpp"

namespace tpuemu::api {
namespace {

using nlohmann::json;
using StallTotals = std::array<std::uint64_t, chip::kStallCauseCount>;

json stall_json(const StallTotals& stalls) {
  json j = json::object();
  for (std::size_t i = 0; i < stalls.size(); ++i)
    j[std::string(to_string(static_cast<chip::StallCause>(i)))] = stalls[i];
  return j;
}

StallTotals stalls_of(const chip::CoreStats& c) {
  StallTotals s{};
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = c.stall_cycles[i];
  return s;
}

json core_json(const chip::CoreStats& c) {
  json core;
  core["bundles"] = c.bundles;
  core["ops"] = c.ops;
  core["dmas"] = c.dmas;
  core["dma_bytes"] = c.dma_bytes;
  core["stall_cycles"] = stall_json(stalls_of(c));
  json slots = json::object();
  for (std::size_t i = 0; i < kSlotClassCount; ++i)
    slots[std::string(to_string(static_cast<SlotClass>(i)))] = c.slot_ops[i];
  core["ops_per_slot"] = slots;
  return core;
}

// The fields every report has, from the cores of every chip.
json common_fields(const std::string& program, const ChipConfig& chip, std::uint64_t cycles, double seconds,
                   const std::vector<const std::vector<chip::CoreStats>*>& chip_cores,
                   const std::vector<std::uint64_t>& chip_cycles) {
  json j;
  j["schema"] = "tpuemu-report";
  j["schema_version"] = kReportSchemaVersion;
  j["program"] = program;
  j["chip"] = chip.name;
  j["config"] = json::parse(chip_config_json(chip));
  j["clock_hz"] = chip.clock_hz;
  j["hbm_bandwidth"] = chip.hbm.bandwidth;
  j["cycles"] = cycles;
  j["seconds"] = seconds;
  std::uint64_t bundles = 0;
  std::uint64_t ops = 0;
  std::uint64_t cores = 0;
  StallTotals stalls{};
  json per_chip = json::array();
  for (std::size_t c = 0; c < chip_cores.size(); ++c) {
    json list = json::array();
    for (const auto& core : *chip_cores[c]) {
      bundles += core.bundles;
      ops += core.ops;
      cores += 1;
      for (std::size_t i = 0; i < stalls.size(); ++i) stalls[i] += core.stall_cycles[i];
      list.push_back(core_json(core));
    }
    per_chip.push_back({{"cycles", chip_cycles[c]}, {"cores", std::move(list)}});
  }
  j["chips"] = chip_cores.size();
  j["tensorcores"] = cores;
  j["bundles"] = bundles;
  j["ops"] = ops;
  j["stall_cycles"] = stall_json(stalls);
  j["per_chip"] = std::move(per_chip);
  j["topology"] = nullptr;
  j["units"] = json::object();
  j["roofline"] = nullptr;
  j["ici_bytes"] = 0;
  j["links"] = json::array();
  j["steps"] = json::array();
  j["fault"] = nullptr;
  return j;
}

std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

json roofline_json(const Roofline& f) {
  return {{"flops", f.mxu_flops + f.vpu_flops},
          {"mxu_flops", f.mxu_flops},
          {"vpu_flops", f.vpu_flops},
          {"hbm_bytes", f.hbm_bytes},
          {"mxu_seconds", f.mxu_seconds},
          {"vpu_seconds", f.vpu_seconds},
          {"hbm_seconds", f.hbm_seconds},
          {"predicted_seconds", f.predicted_seconds},
          {"measured_seconds", f.measured_seconds},
          {"bound", f.bound},
          // null where nothing is predicted (no FLOP, no HBM byte)
          {"measured_over_predicted", f.predicted_seconds > 0 ? json(f.measured_over_predicted()) : json(nullptr)}};
}

}  // namespace

json chip_report(const std::string& program, const ChipConfig& chip, const chip::RunResult& r,
                 const std::vector<chip::StepResult>& steps) {
  json j = common_fields(program, chip, r.cycles, r.seconds, {&r.cores}, {r.cycles});
  json units = json::object();
  for (const auto& u : r.units) {
    units[u.name] = {{"busy_cycles", u.busy_cycles},
                     {"utilisation", r.cycles > 0 ? u.busy_cycles / static_cast<double>(r.cycles) : 0.0}};
  }
  j["units"] = units;
  std::uint64_t mxu_flops = 0;
  std::uint64_t vpu_flops = 0;
  for (const auto& c : r.cores) {
    mxu_flops += c.mxu_flops;
    vpu_flops += c.vpu_flops;
  }
  const Roofline f = compute_roofline(chip, static_cast<double>(mxu_flops), static_cast<double>(vpu_flops),
                                      static_cast<double>(r.hbm_bytes), r.seconds);
  j["roofline"] = roofline_json(f);
  json step_list = json::array();
  for (const auto& s : steps) {
    step_list.push_back({{"kernel", s.kernel},
                         {"start_cycle", s.start_cycle},
                         {"end_cycle", s.end_cycle},
                         {"cycles", s.end_cycle - s.start_cycle},
                         {"bundles", s.stats.bundles},
                         {"stall_cycles", stall_json(stalls_of(s.stats))}});
  }
  j["steps"] = step_list;
  if (r.fault) j["fault"] = *r.fault;
  return j;
}

json pod_report(const std::string& program, const ChipConfig& chip, const ici::Topology& topology,
                const std::string& routing, const chip::PodResult& r) {
  std::vector<const std::vector<chip::CoreStats>*> cores;
  std::vector<std::uint64_t> cycles;
  cores.reserve(r.chips.size());
  for (const auto& c : r.chips) {
    cores.push_back(&c.cores);
    cycles.push_back(c.cycles);
  }
  json j = common_fields(program, chip, r.cycles, r.seconds, cores, cycles);
  for (std::size_t c = 0; c < r.chips.size(); ++c) {
    json steps = json::array();
    const auto& chip_result = r.chips[c];
    for (std::size_t s = 0; s < chip_result.step_end_cycles.size() && s < chip_result.step_end_stats.size(); ++s) {
      const chip::CoreStats& st = chip_result.step_end_stats[s];
      steps.push_back({{"end_cycle", chip_result.step_end_cycles[s]},
                       {"bundles", st.bundles},
                       {"mxu_flops", st.mxu_flops},
                       {"vpu_flops", st.vpu_flops},
                       {"hbm_bytes", st.hbm_bytes}});
    }
    j["per_chip"][c]["steps"] = std::move(steps);
  }
  std::vector<std::string> wraps;
  for (std::size_t a = 0; a < topology.axis_count(); ++a) {
    if (topology.wraps(a)) wraps.emplace_back(1, ici::axis_name(a));
  }
  const std::vector<std::uint32_t> dims(topology.dims().begin(), topology.dims().end());
  j["topology"] = {{"shape", topology.shape()},
                   {"dims", dims},
                   {"wraps", wraps},
                   {"routing", routing},
                   {"name", ici::describe(topology)}};
  // One chip (a split over its TensorCores, `run --topology 1`): its roofline, as a chip run's.
  if (r.chips.size() == 1) {
    double mxu_flops = 0;
    double vpu_flops = 0;
    double hbm_bytes = 0;
    for (const auto& core : r.chips.front().cores) {
      mxu_flops += static_cast<double>(core.mxu_flops);
      vpu_flops += static_cast<double>(core.vpu_flops);
      hbm_bytes += static_cast<double>(core.hbm_bytes);
    }
    j["roofline"] = roofline_json(compute_roofline(chip, mxu_flops, vpu_flops, hbm_bytes, r.seconds));
  }
  j["ici_bytes"] = r.ici_bytes;
  json links = json::array();
  for (const auto& l : r.links) {
    json link = {{"from", l.from}, {"to", l.to}, {"kind", l.kind}, {"name", l.name}};
    if (l.axis != ici::kNoAxis) {
      link["axis"] = std::string(1, ici::axis_name(l.axis));
      link["direction"] = l.direction;
    }
    link["bytes"] = l.bytes;
    link["busy_cycles"] = l.busy_cycles;
    links.push_back(std::move(link));
  }
  j["links"] = links;
  json steps = json::array();
  for (std::size_t s = 0; s < r.step_end_cycles.size(); ++s) steps.push_back({{"end_cycle", r.step_end_cycles[s]}});
  j["steps"] = steps;
  if (r.fault) j["fault"] = *r.fault;
  return j;
}

namespace {

// The roofline lines of a report whose "roofline" is set (a chip run, a one-chip pod).
void print_roofline(const json& j) {
  const auto& f = j["roofline"];
  const auto num = [&f](const char* key) { return f[key].get<double>(); };
  fmt::print("roofline  MXU {:.4g} FLOP -> {}; VPU {:.4g} FLOP -> {}; HBM {:.4g} B -> {}\n", num("mxu_flops"),
             format_quantity(num("mxu_seconds"), Quantity::kTime), num("vpu_flops"),
             format_quantity(num("vpu_seconds"), Quantity::kTime), num("hbm_bytes"),
             format_quantity(num("hbm_seconds"), Quantity::kTime));
  if (f["measured_over_predicted"].is_null()) {
    fmt::print("          nothing to predict (no MXU or VPU FLOP, no HBM byte), measured {}\n",
               format_quantity(num("measured_seconds"), Quantity::kTime));
  } else {
    fmt::print("          predicted {} ({}-bound), measured {}: measured/predicted = {:.3f}\n",
               format_quantity(num("predicted_seconds"), Quantity::kTime), f["bound"].get<std::string>(),
               format_quantity(num("measured_seconds"), Quantity::kTime), num("measured_over_predicted"));
  }
  if (num("mxu_flops") > 0) {
    fmt::print("          MXU utilisation {:.1f}% of peak ({:.4g} FLOP/s achieved)\n",
               100.0 * num("mxu_seconds") / num("measured_seconds"), num("mxu_flops") / num("measured_seconds"));
  }
  if (num("hbm_bytes") > 0) {
    fmt::print("          HBM {:.4g} B/s achieved ({:.1f}% of {})\n", num("hbm_bytes") / num("measured_seconds"),
               100.0 * num("hbm_seconds") / num("measured_seconds"),
               format_quantity(j["hbm_bandwidth"].get<double>(), Quantity::kBandwidth));
  }
}

void print_chip_report(const json& j) {
  const auto cycles = j["cycles"].get<std::uint64_t>();
  const auto cores = j["tensorcores"].get<std::uint64_t>();
  fmt::print("program   {} on {} ({} TensorCore{})\n", j["program"].get<std::string>(), j["chip"].get<std::string>(),
             cores, cores == 1 ? "" : "s");
  fmt::print("cycles    {}  ({} at {})\n", cycles, format_quantity(j["seconds"].get<double>(), Quantity::kTime),
             format_quantity(j["clock_hz"].get<double>(), Quantity::kFrequency));
  fmt::print("issued    {} bundles, {} ops\n", j["bundles"].get<std::uint64_t>(), j["ops"].get<std::uint64_t>());
  std::string units;
  for (const auto& [name, u] : j["units"].items()) {
    units += fmt::format("{}{} {}", units.empty() ? "" : ", ", name,
                         percent(u["busy_cycles"].get<double>(), static_cast<double>(cycles)));
  }
  fmt::print("busy      {}\n", units);
  // stall_cycles are summed over the chip's cores: percentages of all cores' cycles (a megacore
  // chip's two cores stalled all along are 100 %, not 200 %).
  std::string stall_text;
  const double core_cycles = static_cast<double>(cycles) * static_cast<double>(std::max<std::uint64_t>(1, cores));
  for (std::size_t i = 0; i < chip::kStallCauseCount; ++i) {
    const std::string cause(to_string(static_cast<chip::StallCause>(i)));
    const auto n = j["stall_cycles"][cause].get<std::uint64_t>();
    stall_text += fmt::format("{}{} {} ({})", i ? ", " : "", cause, n, percent(static_cast<double>(n), core_cycles));
  }
  fmt::print("stalls    {}{}\n", stall_text, cores > 1 ? " (of all cores' cycles)" : "");
  print_roofline(j);
}

void print_pod_report(const json& j) {
  const auto cycles_total = j["cycles"].get<std::uint64_t>();
  const double cycles = std::max<double>(1, static_cast<double>(cycles_total));
  const auto cores = j["tensorcores"].get<std::uint64_t>();
  std::uint64_t fastest = UINT64_MAX;
  for (const auto& c : j["per_chip"]) fastest = std::min(fastest, c["cycles"].get<std::uint64_t>());
  double busiest = 0;
  double busy = 0;
  for (const auto& l : j["links"]) {
    busiest = std::max(busiest, l["busy_cycles"].get<double>());
    busy += l["busy_cycles"].get<double>();
  }
  const std::size_t links = j["links"].size();
  fmt::print("program   {} on a {} pod of {} ({} TensorCore{} in all)\n", j["program"].get<std::string>(),
             j["topology"]["name"].get<std::string>(), j["chip"].get<std::string>(), cores, cores == 1 ? "" : "s");
  fmt::print("cycles    {}  ({} at {}); fastest chip {}\n", cycles_total,
             format_quantity(j["seconds"].get<double>(), Quantity::kTime),
             format_quantity(j["clock_hz"].get<double>(), Quantity::kFrequency), fastest);
  fmt::print("issued    {} bundles\n", j["bundles"].get<std::uint64_t>());
  fmt::print("ICI       {} B sent over {} directed links; busiest link {:.1f}% busy, mean {:.1f}%\n",
             j["ici_bytes"].get<std::uint64_t>(), links, 100.0 * busiest / cycles,
             links == 0 ? 0.0 : 100.0 * busy / (cycles * static_cast<double>(links)));
  std::string stall_text;
  const double core_cycles = cycles * static_cast<double>(std::max<std::uint64_t>(1, cores));
  for (std::size_t i = 0; i < chip::kStallCauseCount; ++i) {
    const std::string cause(to_string(static_cast<chip::StallCause>(i)));
    stall_text +=
        fmt::format("{}{} {:.1f}%", i ? ", " : "", cause, 100.0 * j["stall_cycles"][cause].get<double>() / core_cycles);
  }
  fmt::print("stalls    {} (of all cores' cycles)\n", stall_text);
  if (!j["roofline"].is_null()) print_roofline(j);
}

}  // namespace

void print_report(const json& report) {
  if (report["topology"].is_null()) {
    print_chip_report(report);
  } else {
    print_pod_report(report);
  }
}

}  // namespace tpuemu::api
