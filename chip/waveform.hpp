// Waveforms: value changes of the emulated hardware replayed into SystemC
// sc_signals, which sc_trace writes to a VCD file (GTKWave opens it).
//
// Contract:
//  * Signals are declared before the simulation starts (SystemC's rule for
//    tracing); changes may be recorded at any time, with the cycle at which
//    they happen, never before the current SystemC time.
//  * A player process writes each change into its signal at its cycle, so
//    the VCD shows it at that time; changes at one cycle apply in the order
//    they were recorded (the last one wins).
//  * Runs with waveforms use a one-cycle quantum (chip/pod runs set it), so
//    a core's local time never runs ahead of SystemC time by more than a
//    cycle: changes land at their exact cycle.
//  * After max_changes recorded changes, recording throws WaveformOverflow.
#pragma once

#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <cstdint>
#include <deque>
#include <queue>
#include <stdexcept>
#include <string>
#include <systemc>
#include <vector>

namespace tpuemu::chip {

class WaveformOverflow : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Waveform : public sc_core::sc_module {
 public:
  // Opens `path` for the VCD (throws std::runtime_error if it cannot).
  Waveform(sc_core::sc_module_name name, const std::string& path, double clock_hz, std::uint64_t max_changes);
  ~Waveform() override;
  Waveform(const Waveform&) = delete;
  Waveform& operator=(const Waveform&) = delete;

  // A 1-bit or 32-bit signal called `name` (dots separate the VCD scopes).
  std::uint32_t bit(const std::string& name);
  std::uint32_t word(const std::string& name);
  void change(std::uint32_t signal, double cycle, std::uint32_t value);
  [[nodiscard]] std::uint64_t changes() const { return changes_; }
  // The run was stopped because the waveform reached max_changes.
  [[nodiscard]] bool overflowed() const { return changes_ > max_changes_; }

 private:
  struct Change {
    double cycle;
    std::uint64_t order;
    std::uint32_t signal;
    std::uint32_t value;
  };
  struct Later {
    bool operator()(const Change& a, const Change& b) const {
      return a.cycle != b.cycle ? a.cycle > b.cycle : a.order > b.order;
    }
  };
  void play();

  double clock_hz_;
  std::uint64_t max_changes_;
  std::uint64_t changes_ = 0;
  sc_core::sc_trace_file* file_ = nullptr;
  std::deque<sc_core::sc_signal<bool>> bits_;
  std::deque<sc_core::sc_signal<sc_dt::sc_uint<32>>> words_;
  std::vector<std::pair<bool, std::size_t>> signals_;  // (is bit, index)
  std::priority_queue<Change, std::vector<Change>, Later> pending_;
  sc_core::sc_event wake_;
};

}  // namespace tpuemu::chip
