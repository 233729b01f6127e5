// Running the SystemC kernel from the host, and the rules that keep
// exceptions and AddressSanitizer apart on SystemC's coroutine stacks.
//
// Contract, for every SystemC process of the emulator (the cores' threads,
// the pod's network):
//  * A process catches every exception raised in its body on its own stack,
//    records it where the run reports it from (ChipModule::fault,
//    PodModule::fault, a unit's failure()), and stops the run or lets it end.
//    No exception unwinds into the kernel or across a coroutine switch.
//  * A thread never returns: when done it waits on an event nobody notifies.
//    SystemC 2.3.4 tells ASan about each switch between coroutines
//    (__sanitizer_start_switch_fiber) except the one out of a thread that
//    ended; ASan then takes the next coroutine to run for the ended one, and
//    a throw there is not cleaned up ("ignoring requested
//    __asan_handle_no_return", google/sanitizers#189): false reports follow.
//  * The host starts the kernel through simulate(), never sc_start(): when a
//    coroutine yields back to the host SystemC announces the host's stack as
//    empty, so after sc_start returns ASan would clean up no exception thrown
//    on the host stack. simulate() declares the host thread's stack again.
// Outside ASan builds simulate() is sc_start().
#pragma once

#include <systemc>

namespace tpuemu::chip {

// sc_start(): runs until no activity is left or a process calls sc_stop().
void simulate();
// sc_start(duration); SC_ZERO_TIME finishes elaboration and runs one delta.
void simulate(const sc_core::sc_time& duration);

// Only in a forked child process of one that has simulated (api/run.cpp):
// forgets the inherited simulation context, so the child elaborates afresh.
// The old context is leaked, not deleted (static events inside libsystemc
// still point into it: deleting it is a use-after-free at exit,
// ../shared/TOOLCHAIN.md section 5 rule 7); the child exits after its run.
void forget_simulation_context();

}  // namespace tpuemu::chip
