// Cycles to SystemC time: the one conversion every SystemC module of the
// emulator uses (cores, the pod's network).
#pragma once

#include <cmath>
#include <systemc>

namespace tpuemu::chip {

// SystemC time of (fractional) cycle `cycle` of a clock of `clock_hz`, rounded to the picosecond.
inline sc_core::sc_time time_of_cycle(double cycle, double clock_hz) {
  return sc_core::sc_time(std::round(cycle * 1e12 / clock_hz), sc_core::SC_PS);
}

}  // namespace tpuemu::chip
