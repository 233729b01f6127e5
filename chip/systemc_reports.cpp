#include "chip/systemc_reports.hpp"

#include <systemc>

#include <cstdio>
#include <string>

namespace tpuemu::chip {
namespace {

void to_stderr(const sc_core::sc_report& report, const sc_core::sc_actions& actions) {
  if ((actions & sc_core::SC_DISPLAY) != 0U) {
    const std::string text = sc_core::sc_report_compose_message(report);
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  sc_core::sc_report_handler::default_handler(report, actions & ~sc_core::SC_DISPLAY);
}

}  // namespace

void route_systemc_reports() {
  sc_core::sc_report_handler::set_handler(to_stderr);
  sc_core::sc_report_handler::set_actions(sc_core::SC_ID_SIMULATION_STOP_CALLED_TWICE_, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
}

}  // namespace tpuemu::chip
