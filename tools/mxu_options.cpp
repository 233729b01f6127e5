#include "tools/mxu_options.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "api/output_files.hpp"
#include "mxu/rtl/rtl_mxu.hpp"

namespace tpuemu::cli {

using api::check_writable;

void add_mxu_options(po::options_description& options) {
  options.add_options()("mxu", po::value<std::string>()->default_value("cpp"),
                        "MXU model: cpp (the C++ MXU) or rtl (the verilated RTL systolic array of mxu/rtl, clocked "
                        "every cycle; needs a preset whose mxu.size the RTL was built for, e.g. --chip edu)")(
      "rtl-vcd", po::value<std::string>(),
      "with --mxu rtl: write every RTL signal (PE registers, skew, FIFO) to this VCD, on the chip's time axis");
}

MxuModels mxu_models(const po::variables_map& vm, const ChipConfig& chip) {
  MxuModels models;
  const std::string kind = vm["mxu"].as<std::string>();
  if (kind != "cpp" && kind != "rtl") throw std::invalid_argument(fmt::format("--mxu {}: expected cpp or rtl", kind));
  models.rtl = kind == "rtl";
  if (vm.count("rtl-vcd") != 0U) {
    if (!models.rtl) throw std::invalid_argument("--rtl-vcd needs --mxu rtl");
    models.rtl_vcd = vm["rtl-vcd"].as<std::string>();
    if (!models.rtl_vcd.ends_with(".vcd")) {
      throw std::invalid_argument(fmt::format("--rtl-vcd {}: the file name must end in .vcd", models.rtl_vcd));
    }
    check_writable("--rtl-vcd", models.rtl_vcd);
  }
  if (!models.rtl) return models;
  const auto sizes = mxu::rtl::built_sizes();
  if (std::find(sizes.begin(), sizes.end(), chip.mxu.size) == sizes.end()) {
    throw std::invalid_argument(
        fmt::format("--mxu rtl: {0} has {1}x{1} MXUs, but the RTL array is built for N = {2} only (CMake "
                    "TPUEMU_MXU_RTL_SIZES); try --chip edu, or --set mxu.size=N with a built N",
                    chip.name, chip.mxu.size, fmt::join(sizes, ", ")));
  }
  return models;
}

void MxuModels::configure(chip::RunRequest& request, double clock_hz) {
  if (!rtl) return;
  const bool trace = !rtl_vcd.empty();
  const auto n = static_cast<std::uint32_t>(request.chip.mxu.size);
  request.mxu_backends = [this, n, clock_hz, trace](std::uint32_t core, std::uint32_t m) -> mxu::ArrayBackend* {
    arrays.push_back(
        std::make_unique<mxu::rtl::RtlArrayBackend>(fmt::format("core{}_mxu{}_rtl", core, m), n, clock_hz, trace));
    return arrays.back().get();
  };
  if (trace) {
    request.elaborated = [this] {
      // One VCD for the first array (edu has one); others get FILE.mxuK.vcd.
      for (std::size_t i = 0; i < arrays.size(); ++i) {
        arrays[i]->open_trace(i == 0 ? rtl_vcd : fmt::format("{}.mxu{}.vcd", rtl_vcd.substr(0, rtl_vcd.size() - 4), i));
      }
    };
  }
}

MxuModels::Totals MxuModels::totals() const {
  Totals t;
  for (const auto& a : arrays) {
    t.edges += a->edges();
    t.rows_off_prediction += a->rows_off_prediction();
  }
  return t;
}

std::string MxuModels::summary_line() const {
  if (!rtl) return {};
  const Totals t = totals();
  return fmt::format(
      "mxu       RTL {0}x{0} array{1}: {2} clock edges; rows entering at another cycle than the C++ "
      "timing model predicts: {3}",
      arrays.empty() ? 0 : arrays.front()->size(), arrays.size() == 1 ? "" : "s", t.edges, t.rows_off_prediction);
}

nlohmann::json MxuModels::report() const {
  nlohmann::json j;
  j["model"] = rtl ? "rtl" : "cpp";
  if (rtl) {
    const Totals t = totals();
    j["rtl_arrays"] = arrays.size();
    j["rtl_clock_edges"] = t.edges;
    j["rtl_rows_off_prediction"] = t.rows_off_prediction;
  }
  return j;
}

}  // namespace tpuemu::cli
