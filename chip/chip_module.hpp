// The SystemC shell of one chip: a module per chip with one thread per
// TensorCore. Each thread lets its plain-C++ core run ahead of SystemC time by
// at most one quantum (temporal decoupling, TLM-2.0 quantum keeper style) and
// then waits. Cores sharing the chip's HBM port start transfers out of time
// order: the port serves only up to SystemC time (ChipShared::horizon) and
// orders what waits by (ready cycle, core), so cycles do not depend on the
// quantum. No process wakes every cycle.
#pragma once

#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <systemc>
#include <vector>

#include "chip/core.hpp"
#include "chip/sim_time.hpp"

namespace tpuemu::chip {

// The back end of MXU `mxu` of core `core` (an RTL array, `--mxu rtl`), or
// null for the C++ MXU. Called during elaboration; the caller owns what it
// returns and keeps it alive until the simulation is over.
using MxuBackendFactory = std::function<mxu::ArrayBackend*(std::uint32_t core, std::uint32_t mxu)>;

class ChipModule : public sc_core::sc_module {
 public:
  // Each core runs `programs` one after the other; before program i starts,
  // its operand registers come from operand_values[i] (index -> value).
  ChipModule(sc_core::sc_module_name name, const ChipConfig& chip, std::vector<const ExecProgram*> programs,
             std::vector<std::map<std::uint32_t, std::uint32_t>> operand_values, RunOptions options,
             std::uint64_t quantum_cycles);

  ChipShared shared;
  std::vector<std::unique_ptr<Core>> cores;
  // The first fault of any core; the run stops at it.
  std::optional<std::string> fault;
  std::uint64_t fault_cycle = 0;  // the faulting core's cycle then
  // Per core, per program: the cycle it ended at and the core's statistics then.
  struct StepEnd {
    std::uint64_t cycle = 0;
    CoreStats stats;
  };
  std::vector<std::vector<StepEnd>> step_ends;
  // Cores that wait for something only another chip can do (Core::kBlocked),
  // and the events that wake them (notified by wake_core).
  std::vector<bool> blocked;
  // After a delivery to core `index`: wakes it if it is blocked on what the
  // delivery may have made possible (a waiting core costs nothing until then).
  void wake_core(std::size_t index) {
    if (blocked[index] && cores[index]->may_proceed()) wake_events_[index].notify();
  }
  // Remote DMAs may write this chip's HBM (a pod whose programs send there):
  // its HBM port serves only up to SystemC time (ChipShared::horizon).
  void expect_hbm_arrivals();
  // Host-cost statistics: resumes of blocked cores, quantum synchronisations.
  std::uint64_t resumes = 0;
  std::uint64_t syncs = 0;
  // Sends every core's events and the HBM bandwidth counter to `tracer`, as
  // process shared.chip_id named `process_name`.
  void attach_tracer(Tracer& tracer, const std::string& process_name);
  // Declares every core's signals (scope "chipN.coreK") in `waves`: the sync
  // flags traced are those of the programs' sflag allocations.
  void attach_waveform(Waveform& waves);
  // Declares the programs' VMEM and SMEM allocations (per core) and
  // `hbm_buffers` (name, byte offset, size) in `profile` and attaches it.
  struct NamedRange {
    std::string name;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
  };
  void attach_profile(MemoryProfile& profile, const std::vector<NamedRange>& hbm_buffers);
  // Puts each MXU the factory gives a back end for behind it. Back ends
  // clocked by SystemC need the cores in lockstep: the quantum becomes one
  // cycle. Only during elaboration.
  void attach_mxu_backends(const MxuBackendFactory& factory);

 private:
  void core_thread(std::size_t index);

  const ChipConfig& chip_;
  std::vector<const ExecProgram*> programs_;
  std::vector<std::map<std::uint32_t, std::uint32_t>> operand_values_;
  std::uint64_t quantum_;
  std::deque<sc_core::sc_event> wake_events_;
  // Per core: the SystemC time (ps) it waits for, kNotDue when it does not.
  static constexpr std::uint64_t kNotDue = UINT64_MAX;
  // What ChipShared::horizon follows: arrivals expected, cores still running.
  bool hbm_arrivals_ = false;
  std::size_t cores_running_ = 0;
  void install_horizon();
  // After core `index` reached SystemC time by a timed wait: yields while a
  // lower core of this chip is due at the same time.
  void let_lower_cores_due_now_run(std::size_t index);
  std::vector<std::uint64_t> due_ps_;
  sc_core::sc_event finished_;  // never notified (core_thread)
};

}  // namespace tpuemu::chip
