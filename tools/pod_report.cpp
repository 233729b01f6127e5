#include "tools/pod_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "common/units.hpp"

namespace tpuemu::cli {
namespace {

struct Totals {
  std::uint64_t bundles = 0;
  std::array<std::uint64_t, chip::kStallCauseCount> stalls{};
  std::uint64_t cores = 0;
  double busiest_link = 0;  // cycles
  double link_busy = 0;
};

Totals totals(const chip::PodResult& r) {
  Totals t;
  for (const auto& c : r.chips) {
    for (const auto& core : c.cores) {
      t.bundles += core.bundles;
      t.cores += 1;
      for (std::size_t i = 0; i < t.stalls.size(); ++i) t.stalls[i] += core.stall_cycles[i];
    }
  }
  for (const auto& l : r.links) {
    t.busiest_link = std::max(t.busiest_link, l.busy_cycles);
    t.link_busy += l.busy_cycles;
  }
  return t;
}

}  // namespace

void print_pod_summary(const PodSummary& s) {
  const auto& r = s.result;
  const Totals t = totals(r);
  const double cycles = std::max<double>(1, static_cast<double>(r.cycles));
  std::uint64_t fastest = UINT64_MAX;
  for (const auto& c : r.chips) fastest = std::min(fastest, c.cycles);
  fmt::print("program   {} on a {} pod of {} ({} TensorCore{} in all)\n", s.program, ici::describe(*s.topology),
             s.chip->name, t.cores, t.cores == 1 ? "" : "s");
  fmt::print("cycles    {}  ({} at {}); fastest chip {}\n", r.cycles, format_quantity(r.seconds, Quantity::kTime),
             format_quantity(s.chip->clock_hz, Quantity::kFrequency), fastest);
  fmt::print("issued    {} bundles\n", t.bundles);
  fmt::print("ICI       {} B sent over {} directed links; busiest link {:.1f}% busy, mean {:.1f}%\n", r.ici_bytes,
             r.links.size(), 100.0 * t.busiest_link / cycles,
             r.links.empty() ? 0.0 : 100.0 * t.link_busy / (cycles * static_cast<double>(r.links.size())));
  std::string stall_text;
  const double core_cycles = cycles * static_cast<double>(std::max<std::uint64_t>(1, t.cores));
  for (std::size_t i = 0; i < t.stalls.size(); ++i) {
    stall_text += fmt::format("{}{} {:.1f}%", i ? ", " : "", to_string(static_cast<chip::StallCause>(i)),
                              100.0 * static_cast<double>(t.stalls[i]) / core_cycles);
  }
  fmt::print("stalls    {} (of all cores' cycles)\n", stall_text);
}

nlohmann::json pod_report_json(const PodSummary& s) {
  const auto& r = s.result;
  const Totals t = totals(r);
  nlohmann::json j;
  j["program"] = s.program;
  j["chip"] = s.chip->name;
  j["topology"] = s.topology->shape();
  std::vector<std::string> wraps;
  for (std::size_t a = 0; a < s.topology->axis_count(); ++a) {
    if (s.topology->wraps(a)) wraps.emplace_back(1, ici::axis_name(a));
  }
  j["wraps"] = wraps;
  j["chips"] = s.topology->chip_count();
  j["cycles"] = r.cycles;
  j["seconds"] = r.seconds;
  j["bundles"] = t.bundles;
  j["ici_bytes"] = r.ici_bytes;
  nlohmann::json stalls = nlohmann::json::object();
  for (std::size_t i = 0; i < t.stalls.size(); ++i) {
    stalls[std::string(to_string(static_cast<chip::StallCause>(i)))] = t.stalls[i];
  }
  j["stall_cycles"] = stalls;
  nlohmann::json chips = nlohmann::json::array();
  for (const auto& c : r.chips) chips.push_back({{"cycles", c.cycles}});
  j["per_chip"] = chips;
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : r.links) {
    links.push_back({{"from", l.link.from.value()},
                     {"to", l.link.to.value()},
                     {"axis", std::string(1, ici::axis_name(l.link.axis))},
                     {"direction", l.link.direction},
                     {"bytes", l.bytes},
                     {"busy_cycles", l.busy_cycles}});
  }
  j["links"] = links;
  if (r.fault) j["fault"] = *r.fault;
  return j;
}

}  // namespace tpuemu::cli
