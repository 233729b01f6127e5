#include "workloads/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "api/errors.hpp"
#include "api/line_plot.hpp"
#include "common/parse_number.hpp"

namespace tpuemu::workloads {

namespace {

std::uint64_t sweep_number(std::string_view text, std::string_view whole) {
  const auto v = parse_unsigned(std::string(text));
  if (!v) throw api::BadInput(fmt::format("--sweep '{}': '{}' is not a whole number", whole, text));
  return *v;
}

}  // namespace

SweepSpec parse_sweep(std::string_view text, const std::vector<OptionSpec>& options) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw api::BadInput(
        fmt::format("--sweep '{}': expected VAR=a:b, VAR=a:b:step or VAR=a:b:xF (e.g. batch=256:4096)", text));
  }
  SweepSpec spec;
  spec.option = std::string(text.substr(0, eq));
  if (spec.option.starts_with("--")) spec.option.erase(0, 2);
  const auto known =
      std::find_if(options.begin(), options.end(), [&](const OptionSpec& o) { return o.name == spec.option; });
  if (known == options.end()) {
    std::string names;
    for (const auto& o : options) names += (names.empty() ? "" : ", ") + o.name;
    throw api::BadInput(
        fmt::format("--sweep '{}': the workload has no option --{} (options: {})", text, spec.option, names));
  }
  // Only whole-number options sweep: one whose default is a word (a
  // strategy, a plan) would fail at every point.
  if (!known->default_value.empty() && !parse_unsigned(known->default_value)) {
    throw api::BadInput(fmt::format("--sweep '{}': --{} is not a whole-number option (its default is '{}')", text,
                                    spec.option, known->default_value));
  }
  std::vector<std::string_view> parts;
  std::string_view rest = text.substr(eq + 1);
  while (true) {
    const auto colon = rest.find(':');
    parts.push_back(rest.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rest = rest.substr(colon + 1);
  }
  if (parts.size() < 2 || parts.size() > 3) {
    throw api::BadInput(fmt::format("--sweep '{}': expected VAR=a:b, VAR=a:b:step or VAR=a:b:xF", text));
  }
  const std::uint64_t lo = sweep_number(parts[0], text);
  const std::uint64_t hi = sweep_number(parts[1], text);
  if (hi < lo) throw api::BadInput(fmt::format("--sweep '{}': the range ends below its start", text));
  std::uint64_t factor = 2;
  std::uint64_t step = 0;
  if (parts.size() == 3) {
    if (parts[2].starts_with("x")) {
      factor = sweep_number(parts[2].substr(1), text);
      if (factor < 2) throw api::BadInput(fmt::format("--sweep '{}': the factor must be 2 or more", text));
    } else {
      step = sweep_number(parts[2], text);
      if (step == 0) throw api::BadInput(fmt::format("--sweep '{}': the step must be 1 or more", text));
    }
  }
  if (step == 0 && lo == 0) throw api::BadInput(fmt::format("--sweep '{}': a factor needs a start above 0", text));
  for (std::uint64_t v = lo; v <= hi;) {
    if (spec.values.size() == kMaxSweepValues) {
      throw api::BadInput(fmt::format("--sweep '{}': more than {} values", text, kMaxSweepValues));
    }
    spec.values.push_back(v);
    if (step != 0 ? v > hi - step : v > hi / factor) break;  // the next value passes hi (or 64 bits)
    v = step != 0 ? v + step : v * factor;
  }
  return spec;
}

namespace {

using nlohmann::json;

double number(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : 0.0;
}

struct Book {
  double t_math = 0, t_comms = 0, seconds = 0;
};
Book book_of(const json& report) {
  const json& b = report.contains("book") ? report.at("book") : report.at("predicted");
  Book out{number(b, "t_math_seconds"), number(b, "t_comms_seconds"), 0};
  out.seconds = report.contains("book") ? number(b, "seconds") : std::max(out.t_math, out.t_comms);
  return out;
}

}  // namespace

std::string sweep_csv(const std::string& series_option, const std::string& option,
                      const std::vector<SweepPoint>& points) {
  std::string out = fmt::format(
      "{},{},step_seconds,compute_seconds,communication_seconds,exposed_communication_seconds,mfu,"
      "predicted_seconds,book_t_math_seconds,book_t_comms_seconds,book_seconds,check\n",
      series_option.empty() ? "series" : series_option, option);
  for (const SweepPoint& p : points) {
    const json& r = p.report;
    const Book book = book_of(r);
    std::string check = r.value("no_data", false) ? "skipped" : (r.value("ok", false) ? "pass" : "fail");
    out += fmt::format("{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{}\n", p.series, p.value,
                       number(r, "seconds"), number(r, "compute_seconds"), number(r, "communication_seconds"),
                       number(r, "exposed_communication_seconds"), number(r, "mfu"),
                       number(r.at("predicted"), "seconds"), book.t_math, book.t_comms, book.seconds, check);
  }
  return out;
}

std::string sweep_svg(const std::string& workload, const std::string& option, const std::vector<SweepPoint>& points) {
  api::LinePlot time;
  time.title = fmt::format("{}: step time vs {}", workload, option);
  time.x_label = option;
  time.y_label = "step time (us)";
  api::LinePlot mfu = time;
  mfu.title = fmt::format("{}: MFU vs {}", workload, option);
  mfu.y_label = "MFU (%)";
  // Log x when the values span a factor of 8 or more (a doubling sweep).
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (const SweepPoint& p : points) {
    lo = std::min(lo, p.value);
    hi = std::max(hi, p.value);
  }
  time.log2_x = mfu.log2_x = lo > 0 && hi >= 8 * lo;
  std::map<std::string, std::size_t> index;  // series -> position in the charts
  for (const SweepPoint& p : points) {
    const std::string name = p.series.empty() ? workload : p.series;
    if (index.emplace(name, time.series.size()).second) {
      time.series.push_back({name, {}});
      mfu.series.push_back({name, {}});
      const json* at = nullptr;
      if (p.report.contains("book") && p.report.at("book").contains("threshold_at")) {
        at = &p.report.at("book").at("threshold_at");
      }
      if (at != nullptr && at->contains(option) && at->at(option).is_number()) {
        const double x = at->at(option).get<double>();
        const std::string label = fmt::format("{}: the book's threshold ({:.4g})", name, x);
        if (x > 0 || !time.log2_x) {
          time.markers.emplace_back(x, label);
          mfu.markers.emplace_back(x, label);
        }
      }
    }
    const std::size_t s = index.at(name);
    const auto x = static_cast<double>(p.value);
    time.series[s].points.emplace_back(x, number(p.report, "seconds") * 1e6);
    mfu.series[s].points.emplace_back(x, number(p.report, "mfu") * 100);
  }
  return api::line_plots_svg({time, mfu});
}

}  // namespace tpuemu::workloads
