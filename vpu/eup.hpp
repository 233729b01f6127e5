// Semantics of the transcendental unit (EUP): what vpow2.f32, vrcp.f32 and
// vtanh.f32 push into the EUP FIFO. The FIFO and its timing belong to the
// caller.
//
// Approximation contract (tpuemu's choice; the TPU's own approximations are
// not visible in the dumps, which only show the compiler's refinements around
// them, e.g. one Newton step after vrcp and a fix-up of |x| = 2^126):
//  * vrcp.f32: exactly 1/x in binary32, round to nearest even (the kernels'
//    Newton step after it may still move the result by an ulp). Subnormal
//    results are kept, where the hardware probably flushes them (the fix-up
//    above).
//  * vpow2.f32, vtanh.f32: std::exp2 / std::tanh evaluated in double on the
//    f32 input, rounded once to f32, nearest even. Deterministic on every run;
//    the same on every host whose libm is accurate to within an ulp of double
//    (glibc, musl, macOS), except where the exact result lies within about
//    2^-29 f32 ulp of a midpoint between two floats. Integer powers of two
//    are exact.
//  * Special values follow IEEE / C: pow2(-Inf) = 0, pow2(+Inf) = +Inf,
//    tanh(+-Inf) = +-1, rcp(+-0) = +-Inf, rcp(+-Inf) = +-0, signed zeros kept;
//    a NaN result is the canonical quiet NaN 0x7FC00000 (as in valu.hpp).
#pragma once

#include "isa/op_table.hpp"
#include "vpu/vreg.hpp"

namespace tpuemu::vpu {

float eup_pow2(float x);
float eup_rcp(float x);
float eup_tanh(float x);

// The op applied to every element of `a` (as f32). Throws
// std::invalid_argument naming the mnemonic for an op other than vpow2.f32,
// vrcp.f32 and vtanh.f32.
Vreg eup_apply(isa::OpId op, const Vreg& a);

}  // namespace tpuemu::vpu
