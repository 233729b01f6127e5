// The tpuemu executable: everything lives in the library (tools/cli.cpp).
// libsystemc.so provides main() -> sc_elab_and_sim() -> sc_main(); ours
// silences the SystemC banner first and then takes the same path, so commands
// that simulate run inside SystemC's expected entry point.
#include <cstdlib>
#include <systemc>

#include "chip/systemc_reports.hpp"
#include "tools/cli.hpp"

int sc_main(int argc, char* argv[]) {
  tpuemu::chip::route_systemc_reports();  // stdout stays machine-readable
  return tpuemu::cli::run(argc, argv);
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
