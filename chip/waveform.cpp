#include "chip/waveform.hpp"

#include "chip/sim_time.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

namespace tpuemu::chip {

Waveform::Waveform(sc_core::sc_module_name name, const std::string& path, double clock_hz, std::uint64_t max_changes)
    : sc_core::sc_module(name), clock_hz_(clock_hz), max_changes_(max_changes) {
  std::string base = path;
  if (base.size() > 4 && base.ends_with(".vcd")) base.resize(base.size() - 4);
  {
    std::ofstream probe(base + ".vcd");
    if (!probe) throw std::runtime_error(fmt::format("--vcd {}: cannot write this file", path));
  }
  // SystemC announces the timescale as an info report on stdout; stdout stays the run's summary.
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  file_ = sc_core::sc_create_vcd_trace_file(base.c_str());
  file_->set_time_unit(1, sc_core::SC_PS);
  sc_core::sc_spawn([this] { play(); }, "player");
}

Waveform::~Waveform() {
  if (file_ != nullptr) sc_core::sc_close_vcd_trace_file(file_);
}

std::uint32_t Waveform::bit(const std::string& name) {
  bits_.emplace_back(sc_core::sc_gen_unique_name("bit"));
  sc_core::sc_trace(file_, bits_.back(), name);
  signals_.emplace_back(true, bits_.size() - 1);
  return static_cast<std::uint32_t>(signals_.size() - 1);
}

std::uint32_t Waveform::word(const std::string& name) {
  words_.emplace_back(sc_core::sc_gen_unique_name("word"));
  sc_core::sc_trace(file_, words_.back(), name);
  signals_.emplace_back(false, words_.size() - 1);
  return static_cast<std::uint32_t>(signals_.size() - 1);
}

void Waveform::change(std::uint32_t signal, double cycle, std::uint32_t value) {
  if (++changes_ > max_changes_) {
    throw WaveformOverflow(fmt::format(
        "the waveform would exceed {} value changes; run a smaller program or raise --vcd-max-changes", max_changes_));
  }
  pending_.push(Change{cycle, changes_, signal, value});
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void Waveform::play() {
  for (;;) {
    if (pending_.empty()) {
      sc_core::wait(wake_);
      continue;
    }
    const sc_core::sc_time at = time_of_cycle(pending_.top().cycle, clock_hz_);
    if (at > sc_core::sc_time_stamp()) {
      sc_core::wait(at - sc_core::sc_time_stamp(), wake_);
      continue;
    }
    while (!pending_.empty() && time_of_cycle(pending_.top().cycle, clock_hz_) <= sc_core::sc_time_stamp()) {
      const Change c = pending_.top();
      pending_.pop();
      const auto [is_bit, index] = signals_[c.signal];
      if (is_bit) {
        bits_[index].write(c.value != 0);
      } else {
        words_[index].write(c.value);
      }
    }
  }
}

}  // namespace tpuemu::chip
