// --mxu cpp|rtl and --rtl-vcd FILE: which MXU model a chip run uses
// (mxu/mxu.hpp's C++ MXU, or the verilated RTL array behind it,
// mxu/rtl/rtl_backend.hpp).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chip/run.hpp"
#include "mxu/rtl/rtl_backend.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {

void add_mxu_options(po::options_description& options);

// The RTL arrays of one run: created by the factory during elaboration and
// kept here until the run's outputs have been read.
struct MxuModels {
  bool rtl = false;
  std::string rtl_vcd;  // "" = no RTL waveform
  std::vector<std::unique_ptr<mxu::rtl::RtlArrayBackend>> arrays;
  // Fills request.mxu_backends / request.elaborated for --mxu rtl.
  void configure(chip::RunRequest& request, double clock_hz);
  // Clock edges and rows off the C++ timing model, over all arrays.
  struct Totals {
    std::uint64_t edges = 0;
    std::uint64_t rows_off_prediction = 0;
  };
  [[nodiscard]] Totals totals() const;
  // One line for the summary, and the report's "mxu" object.
  [[nodiscard]] std::string summary_line() const;
  [[nodiscard]] nlohmann::json report() const;
};

// Checks the options against the chip before any run: --mxu rtl needs an MXU
// size the RTL was built for (mxu::rtl::built_sizes());
// --rtl-vcd needs --mxu rtl and a writable FILE.vcd. Throws
// std::invalid_argument with the reason.
MxuModels mxu_models(const po::variables_map& vm, const ChipConfig& chip);

}  // namespace tpuemu::cli
