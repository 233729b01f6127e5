#include "chip/chip_module.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <limits>
#include <set>

#include "chip/stop_request.hpp"

namespace tpuemu::chip {

ChipModule::ChipModule(sc_core::sc_module_name name, const ChipConfig& chip, std::vector<const ExecProgram*> programs,
                       std::vector<std::map<std::uint32_t, std::uint32_t>> operand_values, RunOptions options,
                       std::uint64_t quantum_cycles)
    : sc_core::sc_module(name),
      shared(chip),
      step_ends(chip.tensorcores_per_chip),
      blocked(chip.tensorcores_per_chip, false),
      chip_(chip),
      programs_(std::move(programs)),
      operand_values_(std::move(operand_values)),
      quantum_(quantum_cycles),
      wake_events_(chip.tensorcores_per_chip),
      due_ps_(chip.tensorcores_per_chip, kNotDue) {
  for (std::uint64_t i = 0; i < chip.tensorcores_per_chip; ++i) {
    cores.push_back(std::make_unique<Core>(chip, shared, static_cast<std::uint32_t>(i), *programs_.front(), options));
    sc_core::sc_spawn_options opts;
    sc_core::sc_spawn([this, i] { core_thread(i); }, sc_core::sc_gen_unique_name("core"), &opts);
  }
  cores_running_ = cores.size();
  // Cores sharing the HBM port start transfers out of time order (each up
  // to a quantum ahead of SystemC time): the port serves what is known.
  if (cores.size() > 1) install_horizon();
}

void ChipModule::expect_hbm_arrivals() {
  hbm_arrivals_ = true;
  install_horizon();
}

void ChipModule::install_horizon() {
  const double clock_hz = chip_.clock_hz;
  shared.hbm_port.set_horizon(0);  // bounded before the first start
  shared.horizon = [this, clock_hz] {
    if (!hbm_arrivals_ && cores_running_ <= 1) return std::numeric_limits<double>::infinity();
    return sc_core::sc_time_stamp().to_seconds() * clock_hz;
  };
}

void ChipModule::attach_tracer(Tracer& tracer, const std::string& process_name) {
  tracer.name_process(shared.chip_id, process_name);
  for (auto& core : cores) core->attach_tracer(&tracer);
  const std::uint32_t id = shared.chip_id;
  shared.hbm_port.on_chunk = [&tracer, id](double begin, double end, std::uint64_t bytes) {
    tracer.add_bytes(id, "HBM bandwidth", begin, end, static_cast<double>(bytes));
  };
}

void ChipModule::attach_waveform(Waveform& waves) {
  std::set<std::uint32_t> flags;
  for (const ExecProgram* p : programs_) {
    for (const auto& a : p->program->allocations) {
      if (a.space != MemorySpace::kSflag) continue;
      const std::uint64_t first = a.offset.value_or(0) / 4;
      for (std::uint64_t f = first; f < first + std::max<std::uint64_t>(1, a.size / 4) && f < 256; ++f) {
        flags.insert(static_cast<std::uint32_t>(f));
      }
    }
  }
  const std::vector<std::uint32_t> traced(flags.begin(), flags.end());
  for (auto& core : cores) {
    core->attach_waveform(&waves, fmt::format("chip{}.core{}", shared.chip_id, core->core_index), traced);
  }
}

void ChipModule::attach_profile(MemoryProfile& profile, const std::vector<NamedRange>& hbm_buffers) {
  const std::uint32_t id = shared.chip_id;
  for (const auto& b : hbm_buffers) {
    profile.add_buffer(id, 0, MemoryProfile::Space::kHbm, b.name, b.offset, b.size, chip_.hbm.size_bytes);
  }
  for (auto& core : cores) {
    std::set<std::tuple<MemorySpace, std::uint64_t, std::uint64_t>> seen;
    for (const ExecProgram* p : programs_) {
      for (const auto& a : p->program->allocations) {
        if (a.space != MemorySpace::kVmem && a.space != MemorySpace::kSmem) continue;
        if (!seen.insert({a.space, a.offset.value_or(0), a.size}).second) continue;
        const bool vmem = a.space == MemorySpace::kVmem;
        std::string name = fmt::format("#allocation{}{}", a.id, a.spill ? "_spill" : "");
        if (!a.tag.empty()) name += fmt::format(" '{}'", a.tag);
        if (programs_.size() > 1) name = p->program->name + " " + name;
        profile.add_buffer(id, core->core_index, vmem ? MemoryProfile::Space::kVmem : MemoryProfile::Space::kSmem, name,
                           a.offset.value_or(0), a.size, vmem ? chip_.vmem.size_bytes : chip_.smem.size_bytes);
      }
    }
    core->profile = &profile;
  }
}

void ChipModule::attach_mxu_backends(const MxuBackendFactory& factory) {
  for (auto& core : cores) {
    for (std::size_t m = 0; m < core->mxus.size(); ++m) {
      if (mxu::ArrayBackend* backend = factory(core->core_index, static_cast<std::uint32_t>(m))) {
        core->mxus[m].attach_backend(backend);
        quantum_ = 1;
      }
    }
  }
}

void ChipModule::let_lower_cores_due_now_run(std::size_t index) {
  // Cores of this chip due at the same time run in index order: the kernel's
  // timed events do not say which of them comes first (the order would
  // depend on the other chips' events, e.g. on how a pod is split over MPI
  // ranks). A lower core due now runs in this delta.
  const std::uint64_t now = sc_core::sc_time_stamp().value();
  while (std::any_of(due_ps_.begin(), due_ps_.begin() + static_cast<std::ptrdiff_t>(index),
                     [now](std::uint64_t t) { return t == now; })) {
    sc_core::wait(sc_core::SC_ZERO_TIME);
  }
}

void ChipModule::core_thread(std::size_t index) {
  Core& core = *cores[index];
  try {
    for (std::size_t step = 0; step < programs_.size() && !fault; ++step) {
      if (step > 0) core.start(*programs_[step]);
      core.operand_values = operand_values_[step];
      while (!fault) {
        const std::uint64_t limit = core.cycle() + quantum_;
        const Core::Status status = core.run_until(limit);
        if (const int signal_number = stop_requested(); signal_number != 0) [[unlikely]] {
          if (!fault) {
            fault_cycle = core.cycle();
            fault = fmt::format("interrupted by {}: {}",
                                signal_number == SIGINT    ? std::string("SIGINT")
                                : signal_number == SIGTERM ? std::string("SIGTERM")
                                                           : fmt::format("signal {}", signal_number),
                                core.position());
          }
          sc_core::sc_stop();
          break;
        }
        if (core.tracer() != nullptr && core.tracer()->overflowed()) {
          if (!fault) {
            fault_cycle = core.cycle();
            fault = core.tracer()->overflow_message();
          }
          sc_core::sc_stop();
          break;
        }
        if (status == Core::Status::kHalted) break;
        if (status == Core::Status::kBlocked) {
          // Until a delivery; if none ever comes, the simulation ends with
          // this core still blocked and the pod reports a deadlock.
          blocked[index] = true;
          sc_core::wait(wake_events_[index]);
          blocked[index] = false;
          ++resumes;
          core.wake();
          continue;
        }
        // Synchronise: SystemC time catches up with this core's local time.
        ++syncs;
        const sc_core::sc_time local = time_of_cycle(static_cast<double>(core.cycle()), chip_.clock_hz);
        if (local > sc_core::sc_time_stamp()) {
          due_ps_[index] = local.value();
          sc_core::wait(local - sc_core::sc_time_stamp());
          due_ps_[index] = kNotDue;
          let_lower_cores_due_now_run(index);
        } else if (status == Core::Status::kWaiting) {
          // Every delivery before this core's time is known and the op still
          // waits: until its deadline or a delivery to this core.
          const sc_core::sc_time deadline = time_of_cycle(static_cast<double>(core.wait_deadline()), chip_.clock_hz);
          if (deadline > sc_core::sc_time_stamp()) {
            due_ps_[index] = deadline.value();
            blocked[index] = true;
            sc_core::wait(deadline - sc_core::sc_time_stamp(), wake_events_[index]);
            blocked[index] = false;
            due_ps_[index] = kNotDue;
          }
          ++resumes;
          core.resume_wait(sc_core::sc_time_stamp() >= deadline);
          let_lower_cores_due_now_run(index);
        } else {
          sc_core::wait(sc_core::SC_ZERO_TIME);
        }
      }
      if (step + 1 == programs_.size() && !fault) {
        // DMAs whose completion arrivals may still delay: let SystemC time
        // reach their estimates until every one is final.
        while (const auto until = core.undecided_dmas()) {
          const sc_core::sc_time at = time_of_cycle(static_cast<double>(*until), chip_.clock_hz);
          if (at > sc_core::sc_time_stamp()) {
            sc_core::wait(at - sc_core::sc_time_stamp());
          } else {
            sc_core::wait(sc_core::SC_ZERO_TIME);
          }
        }
        core.drain();
      }
      step_ends[index].push_back({core.cycle(), core.stats()});
    }
  } catch (const std::exception& f) {  // LocatedFault, WaveformOverflow
    if (!fault) {
      fault_cycle = core.cycle();
      fault = f.what();
    }
    if (shared.fabric != nullptr) sc_core::sc_stop();  // a pod stops at its first fault
  }
  --cores_running_;
  // A finished core's thread never returns: SystemC removes a terminated
  // process by a scan of its process table, which would make a pod's ends
  // quadratic in its cores, and ASan loses track of the stacks after a
  // thread ends (chip/simulate.hpp). Waiting on an event nobody notifies
  // keeps no activity pending, so the simulation still ends when the last
  // core does.
  sc_core::wait(finished_);
}

}  // namespace tpuemu::chip
