// The RTL systolic array (systolic_array.sv, verilated with --sc) as the back
// end of a chip's Mxu (`tpuemu run --mxu rtl`): the core's pushes and
// multiplies become rows clocked into the array, and the results the core
// pops are the rows the array produced, when it produced them.
//
// Contract:
//  * Construct during elaboration (before sc_start), one per MXU. Cycle c of
//    the chip is SystemC time c / clock_hz; the array's clock rises at
//    (c + 1/2) / clock_hz. The core must call push_weights / multiply at the
//    SystemC time of the cycle it issues them in (a one-cycle quantum).
//  * Rows enter in program order, as early as the array allows: the 8 rows of
//    a push (K row 7 of its block first, so the last push's K row 0 enters
//    last), the 8 rows of a multiply (row 0 first, the first one latching
//    when asked). A weight row waits for every earlier latching row, a
//    latching row for every earlier weight row; w_ready / lhs_ready decide
//    the rest. No row enters before the cycle it was issued in.
//  * Every row is popped from the array's FIFO at the edge after it reaches
//    the head; a multiply's result can be popped by the core from the cycle
//    after the edge that showed its eighth row (oldest_ready_cycle).
//  * Lanes n..127 of a result are +0; lanes n..127 of the rows are not used.
//  * The array is clocked only while it has rows to take or in flight.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "mxu/mxu.hpp"

namespace tpuemu::mxu::rtl {

class RtlArrayBackend final : public ArrayBackend {
 public:
  // `n` must be one of built_sizes() (else std::invalid_argument). With
  // `trace`, Verilator tracing is switched on (before the model exists, as it
  // requires), so open_trace() can be called later.
  RtlArrayBackend(const std::string& instance_name, std::uint32_t n, double clock_hz, bool trace);
  ~RtlArrayBackend() override;
  RtlArrayBackend(const RtlArrayBackend&) = delete;
  RtlArrayBackend& operator=(const RtlArrayBackend&) = delete;

  void push_weights(const vpu::Vreg& rows, std::uint64_t cycle, std::uint64_t predicted_start) override;
  void multiply(const vpu::Vreg& lhs, bool latch, std::uint64_t cycle, std::uint64_t predicted_feed) override;
  [[nodiscard]] std::optional<std::uint64_t> oldest_ready_cycle() const override;
  vpu::Vreg take_oldest() override;
  [[nodiscard]] std::string name() const override;
  [[nodiscard]] std::optional<std::string> failure() const override;

  // Writes every RTL signal (PE registers included) to the VCD `path`. Only
  // after elaboration has finished (sc_start(SC_ZERO_TIME)) and only when
  // constructed with `trace`; throws std::logic_error otherwise.
  void open_trace(const std::string& path);

  // Clock edges the array saw, and rows (weights and LHS) that entered it at
  // another cycle than MxuTiming predicted (0 when the model is exact).
  [[nodiscard]] std::uint64_t edges() const;
  [[nodiscard]] std::uint64_t rows_off_prediction() const;
  [[nodiscard]] std::uint32_t size() const { return n_; }

  struct Impl;

 private:
  std::uint32_t n_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpuemu::mxu::rtl
