// Waveforms: value changes of the emulated hardware, written as a VCD file
// (GTKWave opens it) when the run ends.
//
// Contract:
//  * Signals are declared before the simulation starts; each belongs to a
//    group (its chip), and the file lists groups in ascending order, each
//    group's signals in declaration order (scopes from the dots of the names:
//    a scope's signals first, then its sub-scopes in order of appearance).
//  * change() records a value at a cycle (any cycle: a change may be
//    recorded before its time comes). At one cycle a signal takes the value
//    recorded last; the file shows a value only where it differs from the one
//    before (every signal starts at 0). Times are picoseconds of the chip
//    clock (chip/sim_time.hpp).
//  * The file holds no date or version stamp: the same run writes the same
//    bytes, and a pod simulated by several MPI ranks, each recording its own
//    chips and merged with serialize() / absorb(), writes what one process
//    would.
//  * After max_changes recorded changes, recording throws WaveformOverflow;
//    the limit is the whole file's (absorb() counts every part). Changes are
//    kept in memory until write() (16 bytes each).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpuemu::chip {

class WaveformOverflow : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Waveform {
 public:
  // Checks that `path` (".vcd" appended if missing) can be written (throws std::runtime_error if not).
  Waveform(const std::string& path, double clock_hz, std::uint64_t max_changes);

  // A 1-bit or 32-bit signal called `name` (dots separate the VCD scopes) of group `group`.
  std::uint32_t bit(const std::string& name, std::uint32_t group);
  std::uint32_t word(const std::string& name, std::uint32_t group);
  void change(std::uint32_t signal, double cycle, std::uint32_t value);
  [[nodiscard]] std::uint64_t changes() const { return changes_.size(); }
  // The run was stopped (or, merged, would have been) because the waveform reached max_changes.
  [[nodiscard]] bool overflowed() const { return overflowed_; }
  // Another process's part of the same file overflowed.
  void set_overflowed() { overflowed_ = true; }
  [[nodiscard]] std::string overflow_message() const { return overflow_message(max_changes_); }
  static std::string overflow_message(std::uint64_t max_changes);

  // Writes the VCD file (throws std::runtime_error if writing fails).
  void write() const;

  // The signals and changes recorded here, for another process's absorb().
  [[nodiscard]] std::vector<std::uint8_t> serialize() const;
  // Adds another part's signals (names must be new: std::logic_error) and changes.
  void absorb(const std::vector<std::uint8_t>& bytes);

 private:
  struct Signal {
    std::string name;
    bool is_bit;
    std::uint32_t group;
  };
  struct Change {
    double cycle;
    std::uint32_t signal;
    std::uint32_t value;
  };
  std::uint32_t declare(const std::string& name, bool is_bit, std::uint32_t group);

  std::string path_;
  double clock_hz_;
  std::uint64_t max_changes_;
  bool overflowed_ = false;
  std::vector<Signal> signals_;
  std::vector<Change> changes_;  // in recording order
};

}  // namespace tpuemu::chip
