// `tpuemu workload NAME --sweep VAR=a:b[:step|:xF]`: a workload run for every
// value of one whole-number option (and every value of a series option such
// as --strategy dp,fsdp), tabulated as CSV and plotted as SVG (step time and
// MFU against the swept option, one line per series, the book's threshold as
// a vertical line where the workload reports one for that option).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/workload.hpp"

namespace tpuemu::workloads {

// Options whose comma-separated values make the sweep's series.
inline constexpr std::string_view kSweepSeriesOptions[] = {"strategy", "variant", "plan"};

struct SweepSpec {
  std::string option;                 // the workload's option, without "--"
  std::vector<std::uint64_t> values;  // in order, at most kMaxSweepValues
};
inline constexpr std::size_t kMaxSweepValues = 256;

// Parses "VAR=a:b" (a, 2a, 4a, ... up to b), "VAR=a:b:s" (a, a+s, ... up to
// b) or "VAR=a:b:xF" (a, aF, aF^2, ... up to b; F a whole number >= 2); a, b
// whole numbers (common/parse_number.hpp: 4096, 1e3). Throws api::BadInput naming
// --sweep: malformed text, an option `options` does not list, b < a, a zero
// start with a factor, more than kMaxSweepValues values.
SweepSpec parse_sweep(std::string_view text, const std::vector<OptionSpec>& options);

// One run of a sweep: its series value ("" when there is none), the swept
// option's value and the workload's report (docs/workloads.md).
struct SweepPoint {
  std::string series;
  std::uint64_t value = 0;
  nlohmann::json report;
};

// One row per point: series, the swept option, step time, compute,
// communication, exposed communication, MFU, the phases' predicted sum, and
// the book's T_math, T_comms and max of the two where the report has "book"
// (else its "predicted" sums), seconds as %.9g.
std::string sweep_csv(const std::string& series_option, const std::string& option,
                      const std::vector<SweepPoint>& points);

// Two stacked charts (api::line_plots_svg): step time (us) and MFU (%) against
// the option, one line per series; a vertical line at every series' book
// threshold for this option (report "book" / "threshold_at" / option).
std::string sweep_svg(const std::string& workload, const std::string& option, const std::vector<SweepPoint>& points);

}  // namespace tpuemu::workloads
