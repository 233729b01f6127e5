#include "mxu/rtl/rtl_fp_units.hpp"

#include <verilated.h>

#include "Vfp_units.h"

namespace tpuemu::mxu::rtl {

struct FpUnits::Impl {
  VerilatedContext context;
  Vfp_units model{&context, "fp_units"};
};

FpUnits::FpUnits() : impl_(std::make_unique<Impl>()) {}

FpUnits::~FpUnits() {
  impl_->model.final();
}

std::uint32_t FpUnits::mul(std::uint16_t a, std::uint16_t b) {
  impl_->model.mul_a = a;
  impl_->model.mul_b = b;
  impl_->model.eval();
  return impl_->model.mul_p;
}

std::uint32_t FpUnits::add(std::uint32_t a, std::uint32_t b) {
  impl_->model.add_a = a;
  impl_->model.add_b = b;
  impl_->model.eval();
  return impl_->model.add_y;
}

}  // namespace tpuemu::mxu::rtl
