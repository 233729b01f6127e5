// Private to mxu/rtl: one verilated array of size N with its signals bound,
// shared by the host-driven harness (rtl_mxu.cpp) and the in-chip backend
// (rtl_backend.cpp). Includes Verilator's headers: never include it from a
// public header.
#pragma once

#include <fmt/format.h>
#include <verilated.h>
#include <verilated_vcd_sc.h>

#include <bit>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <systemc>
#include <vector>

namespace tpuemu::mxu::rtl {

// Contract: construct during elaboration; the owner binds `model->clk` to its
// clock. With `trace`, Verilator tracing is on before the model exists (its
// rule); open_trace() only after elaboration has finished.
template <class Model, std::uint32_t N>
struct ArrayPorts {
  using Row16 = sc_dt::sc_bv<16 * N>;
  using Row32 = sc_dt::sc_bv<32 * N>;

  explicit ArrayPorts(bool trace) : tracing(trace) {
    if (trace) Verilated::traceEverOn(true);
    model = std::make_unique<Model>("systolic_array");
    model->rst(rst);
    model->w_valid(w_valid);
    model->w_row(w_row);
    model->w_ready(w_ready);
    model->lhs_valid(lhs_valid);
    model->lhs_latch(lhs_latch);
    model->lhs_row(lhs_row);
    model->lhs_ready(lhs_ready);
    model->res_valid(res_valid);
    model->res_row(res_row);
    model->res_pop(res_pop);
    model->busy(busy);
  }
  ~ArrayPorts() {
    if (vcd) {
      vcd->close();
      // VerilatedVcdSc registered itself with the kernel through a private
      // base; only a C-style cast reaches it (with the right pointer adjustment).
      sc_core::sc_get_curr_simcontext()->remove_trace_file((sc_core::sc_trace_file*)vcd.get());
    }
  }
  ArrayPorts(const ArrayPorts&) = delete;
  ArrayPorts& operator=(const ArrayPorts&) = delete;

  void open_trace(const std::string& path) {
    if (!tracing) throw std::logic_error("RTL MXU: open_trace on an array constructed without tracing");
    vcd = std::make_unique<VerilatedVcdSc>();
    model->trace(vcd.get(), 99);
    vcd->open(path.c_str());
  }

  // N bf16 bit patterns into a row (element i in bits 16i..16i+15).
  static Row16 pack(const std::vector<std::uint16_t>& values) {
    if (values.size() != N) {
      throw std::invalid_argument(fmt::format("RTL MXU {0}x{0}: a row of {1} values, expected {0}", N, values.size()));
    }
    Row16 row;
    for (std::uint32_t i = 0; i < N; ++i) row.range(16 * i + 15, 16 * i) = values[i];
    return row;
  }
  // The head result row as N f32 values.
  std::vector<float> result_row() const {
    const Row32 row = res_row.read();
    std::vector<float> out(N);
    for (std::uint32_t c = 0; c < N; ++c) {
      out[c] = std::bit_cast<float>(static_cast<std::uint32_t>(row.range(32 * c + 31, 32 * c).to_uint()));
    }
    return out;
  }

  bool tracing;
  sc_core::sc_signal<bool> rst{"rst"};
  sc_core::sc_signal<bool> w_valid{"w_valid"};
  sc_core::sc_signal<Row16> w_row{"w_row"};
  sc_core::sc_signal<bool> w_ready{"w_ready"};
  sc_core::sc_signal<bool> lhs_valid{"lhs_valid"};
  sc_core::sc_signal<bool> lhs_latch{"lhs_latch"};
  sc_core::sc_signal<Row16> lhs_row{"lhs_row"};
  sc_core::sc_signal<bool> lhs_ready{"lhs_ready"};
  sc_core::sc_signal<bool> res_valid{"res_valid"};
  sc_core::sc_signal<Row32> res_row{"res_row"};
  sc_core::sc_signal<bool> res_pop{"res_pop"};
  sc_core::sc_signal<bool> busy{"busy"};
  std::unique_ptr<Model> model;
  std::unique_ptr<VerilatedVcdSc> vcd;
};

}  // namespace tpuemu::mxu::rtl
