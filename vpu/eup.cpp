#include "vpu/eup.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

#include "vpu/unhandled_op.hpp"

namespace tpuemu::vpu {
namespace {

float canonical(float value) {
  return value != value ? std::bit_cast<float>(kCanonicalNan) : value;
}

template <typename F>
Vreg map_f32(const Vreg& a, F f) {
  Vreg out;
  for (std::size_t i = 0; i < kElements; ++i) out.set_f32(i, f(a.f32(i)));
  return out;
}

}  // namespace

float eup_pow2(float x) {
  return canonical(static_cast<float>(std::exp2(static_cast<double>(x))));
}

float eup_rcp(float x) {
  return canonical(1.0F / x);
}

float eup_tanh(float x) {
  return canonical(static_cast<float>(std::tanh(static_cast<double>(x))));
}

Vreg eup_apply(isa::OpId op, const Vreg& a) {
  switch (op) {
    case isa::OpId::kVpow2F32:
      return map_f32(a, eup_pow2);
    case isa::OpId::kVrcpF32:
      return map_f32(a, eup_rcp);
    case isa::OpId::kVtanhF32:
      return map_f32(a, eup_tanh);
    default:
      throw_unhandled_op("eup_apply", op, "an EUP op");
  }
}

}  // namespace tpuemu::vpu
