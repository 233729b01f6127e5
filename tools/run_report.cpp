#include "tools/run_report.hpp"

#include <fmt/format.h>

#include <array>

namespace tpuemu::cli {

void compute_summary_roofline(Summary& s) {
  std::uint64_t mxu_flops = 0;
  std::uint64_t vpu_flops = 0;
  for (const auto& c : s.result.cores) {
    mxu_flops += c.mxu_flops;
    vpu_flops += c.vpu_flops;
  }
  s.roofline = compute_roofline(*s.chip, static_cast<double>(mxu_flops), static_cast<double>(vpu_flops),
                                static_cast<double>(s.result.hbm_bytes), s.result.seconds);
}

namespace {
std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

}  // namespace

void print_summary(const Summary& s) {
  const auto& r = s.result;
  const double cycles = static_cast<double>(r.cycles);
  std::uint64_t bundles = 0;
  std::uint64_t ops = 0;
  std::array<std::uint64_t, chip::kStallCauseCount> stalls{};
  for (const auto& c : r.cores) {
    bundles += c.bundles;
    ops += c.ops;
    for (std::size_t i = 0; i < stalls.size(); ++i) stalls[i] += c.stall_cycles[i];
  }
  fmt::print("program   {} on {} ({} TensorCore{})\n", s.program, s.chip->name, s.chip->tensorcores_per_chip,
             s.chip->tensorcores_per_chip == 1 ? "" : "s");
  fmt::print("cycles    {}  ({} at {})\n", r.cycles, format_quantity(r.seconds, Quantity::kTime),
             format_quantity(s.chip->clock_hz, Quantity::kFrequency));
  fmt::print("issued    {} bundles, {} ops\n", bundles, ops);
  std::string units;
  for (const auto& u : r.units)
    units += fmt::format("{}{} {}", units.empty() ? "" : ", ", u.name, percent(u.busy_cycles, cycles));
  fmt::print("busy      {}\n", units);
  std::string stall_text;
  for (std::size_t i = 0; i < stalls.size(); ++i) {
    stall_text += fmt::format("{}{} {} ({})", i ? ", " : "", to_string(static_cast<chip::StallCause>(i)), stalls[i],
                              percent(static_cast<double>(stalls[i]), cycles));
  }
  fmt::print("stalls    {}\n", stall_text);
  const Roofline& f = s.roofline;
  fmt::print("roofline  MXU {:.4g} FLOP -> {}; VPU {:.4g} FLOP -> {}; HBM {:.4g} B -> {}\n", f.mxu_flops,
             format_quantity(f.mxu_seconds, Quantity::kTime), f.vpu_flops,
             format_quantity(f.vpu_seconds, Quantity::kTime), f.hbm_bytes,
             format_quantity(f.hbm_seconds, Quantity::kTime));
  fmt::print("          predicted {} ({}-bound), measured {}: measured/predicted = {:.3f}\n",
             format_quantity(f.predicted_seconds, Quantity::kTime), f.bound,
             format_quantity(f.measured_seconds, Quantity::kTime), f.measured_over_predicted());
  if (f.mxu_flops > 0) {
    fmt::print("          MXU utilisation {:.1f}% of peak ({:.4g} FLOP/s achieved)\n",
               100.0 * f.mxu_seconds / f.measured_seconds, f.mxu_flops / f.measured_seconds);
  }
  if (f.hbm_bytes > 0) {
    fmt::print("          HBM {:.4g} B/s achieved ({:.1f}% of {})\n", f.hbm_bytes / f.measured_seconds,
               100.0 * f.hbm_seconds / f.measured_seconds,
               format_quantity(s.chip->hbm.bandwidth, Quantity::kBandwidth));
  }
}

nlohmann::json report_json(const Summary& s) {
  using nlohmann::json;
  const auto& r = s.result;
  json j;
  j["program"] = s.program;
  j["chip"] = json::parse(chip_config_json(*s.chip));
  j["cycles"] = r.cycles;
  j["seconds"] = r.seconds;
  json stalls = json::object();
  json cores = json::array();
  std::array<std::uint64_t, chip::kStallCauseCount> total{};
  for (const auto& c : r.cores) {
    json core;
    core["bundles"] = c.bundles;
    core["ops"] = c.ops;
    core["dmas"] = c.dmas;
    core["dma_bytes"] = c.dma_bytes;
    json cs = json::object();
    for (std::size_t i = 0; i < total.size(); ++i) {
      cs[std::string(to_string(static_cast<chip::StallCause>(i)))] = c.stall_cycles[i];
      total[i] += c.stall_cycles[i];
    }
    core["stalls"] = cs;
    json slots = json::object();
    for (std::size_t i = 0; i < kSlotClassCount; ++i)
      slots[std::string(to_string(static_cast<SlotClass>(i)))] = c.slot_ops[i];
    core["ops_per_slot"] = slots;
    cores.push_back(core);
  }
  for (std::size_t i = 0; i < total.size(); ++i)
    stalls[std::string(to_string(static_cast<chip::StallCause>(i)))] = total[i];
  j["stalls"] = stalls;
  j["cores"] = cores;
  json units = json::object();
  for (const auto& u : r.units) {
    units[u.name] = {{"busy_cycles", u.busy_cycles},
                     {"utilisation", r.cycles > 0 ? u.busy_cycles / static_cast<double>(r.cycles) : 0.0}};
  }
  j["units"] = units;
  const Roofline& f = s.roofline;
  j["roofline"] = {{"flops", f.mxu_flops + f.vpu_flops},
                   {"mxu_flops", f.mxu_flops},
                   {"vpu_flops", f.vpu_flops},
                   {"hbm_bytes", f.hbm_bytes},
                   {"mxu_seconds", f.mxu_seconds},
                   {"vpu_seconds", f.vpu_seconds},
                   {"hbm_seconds", f.hbm_seconds},
                   {"predicted_seconds", f.predicted_seconds},
                   {"bound", f.bound},
                   {"measured_over_predicted", f.measured_over_predicted()}};
  if (r.fault) j["fault"] = *r.fault;
  return j;
}

}  // namespace tpuemu::cli
