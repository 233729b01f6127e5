// The RTL arithmetic units alone (bf16_mul.sv and f32_add.sv under the
// fp_units.sv top), verilated as plain C++ without SystemC: fast enough to
// check them against the host's float over millions of operands.
#pragma once

#include <cstdint>
#include <memory>

namespace tpuemu::mxu::rtl {

class FpUnits {
 public:
  FpUnits();
  ~FpUnits();
  FpUnits(const FpUnits&) = delete;
  FpUnits& operator=(const FpUnits&) = delete;

  // bf16_mul.sv: the f32 bit pattern of a * b (bf16 bit patterns).
  std::uint32_t mul(std::uint16_t a, std::uint16_t b);
  // f32_add.sv: the f32 bit pattern of a + b (f32 bit patterns).
  std::uint32_t add(std::uint32_t a, std::uint32_t b);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpuemu::mxu::rtl
