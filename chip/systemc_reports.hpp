// SystemC's own reports (warnings, infos) go to stdout by default, which the
// CLI promises is machine-readable. route_systemc_reports() sends what SystemC
// displays to stderr and drops the kernel's chatter that is expected here:
// "sc_stop has already been called" (W545: every core of a pod that faults
// stops the simulation) and the info "Simulation stopped by user". Errors
// and fatals keep SystemC's actions (throw, stop, abort). Call it once per
// process before the first elaboration; calling it again is harmless.
#pragma once

namespace tpuemu::chip {

void route_systemc_reports();

}  // namespace tpuemu::chip
