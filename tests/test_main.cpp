// Catch2 v2 runner for SystemC-based tests.
// libsystemc.so exports main() (which calls sc_elab_and_sim() -> sc_main());
// ours wins, silences the SystemC banner (also during catch_discover_tests'
// listing run at build time) and hands control to Catch. SystemC elaborates
// once per process, so CTest runs each TEST_CASE in its own process.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>
#include <systemc>

#include "common/log.hpp"

int sc_main(int argc, char* argv[]) {
  tpuemu::log::set_level(tpuemu::log::Level::kWarn);
  return Catch::Session().run(argc, argv);
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
