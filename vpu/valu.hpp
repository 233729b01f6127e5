// Semantics of the vector ALU ops: pure lane-wise functions over Vreg / Vmask
// (arithmetic, compares, masks, conversions, packs, sublane rotation). No
// timing and no state: the core calls these when an op executes.
//
// Conventions shared by every function here:
//  * f32 arithmetic is IEEE binary32, round to nearest even, subnormals kept
//    (no flush to zero). Every NaN an f32 arithmetic op (vadd/vsub/vmul/vmax/
//    vmin.f32) produces is the canonical quiet NaN 0x7FC00000, whatever the NaN
//    inputs carried. tpuemu's choice: the dumps never show a NaN payload, and
//    x86 and Arm hosts disagree on payloads (x86's default NaN is negative), so
//    canonicalising is what makes results identical on every host. Bitwise ops
//    (vand/vxor/vsel/vmov...) copy bits; conversions keep what numerics.hpp
//    gives (bf16 widening is exact, NaN payload included).
//  * Packed narrow data ("compressed" layouts of the dumps). A 16-bit packed
//    vreg holds two (8,128) tiles: sublanes 0-3 the first, 4-7 the second;
//    tile row 2p and 2p+1 of column c share the 32-bit word (sublane p, lane c),
//    row 2p in the LOW 16 bits. An 8-bit packed vreg holds four (8,128) tiles of
//    two sublanes each; row 4p+q of column c is byte q (bits 8q..8q+7) of word
//    (sublane p, lane c). Evidence for the row order (tests reproduce both
//    kernels bit for bit against the corpus data):
//     - vector_add_bf16's iota.1 kernel writes bf16[2048]{0:T(1024)(128)(2,1)}
//       with one `vpack.c.bf16 %hi, %lo` of two f32 vregs holding the element
//       indices (row r, lane c = 128r + c) and one vst. XLA's (2,1) minor tile
//       stores row 2p before row 2p+1, and the machine is little-endian, so row
//       2p is the low half. lane_reduce_bf16 agrees: it packs its 16 row sums in
//       f32 row 0 (zeros in row 1) and its bf16[16] result holds the sums.
//     - vector_add_f8's iota.1 kernel writes f8e4m3fn[4096]{0:T(1024)(128)(4,1)}
//       the same way through vcvt.f32.f8e4m3b11, `vpack.c.b16 0, %v`,
//       `vpack.c.b8 0, %v` and a 2-sublane store, which pins f32 row r to byte
//       r % 4 of word (r / 4, c).
#pragma once

#include <cstddef>
#include <cstdint>

#include "isa/op_table.hpp"
#include "vpu/vreg.hpp"

namespace tpuemu::vpu {

// An operand: a vreg, or (reg == nullptr) a 32-bit pattern broadcast to every
// element. Callers pass float immediates as their f32 bits and integers as
// their 32-bit two's-complement pattern.
struct VecArg {
  const Vreg* reg = nullptr;
  std::uint32_t imm = 0;

  std::uint32_t operator[](std::size_t i) const { return reg != nullptr ? reg->words[i] : imm; }
};

inline VecArg vec(const Vreg& reg) {
  return VecArg{&reg, 0};
}
inline VecArg splat(std::uint32_t bits) {
  return VecArg{nullptr, bits};
}

// Two-operand lane-wise ops; `a` is the first operand as printed (vsub: a - b).
//  vadd.s32 / vsub.s32 wrap modulo 2^32; vmul.u32 keeps the low 32 bits;
//  vand/vor/vxor.u32 bitwise; vshll.u32 / vshrl.u32 (logical) / vshra.s32
//  (arithmetic) shift by b & 31 (masking the amount is tpuemu's choice, like the
//  scalar shifts: the dumps only shift by constants below 32);
//  vadd/vsub/vmul.f32 IEEE; vmax.f32 / vmin.f32 follow IEEE 754-2019 maximum /
//  minimum: a NaN in either operand gives NaN, and -0 < +0 (vmax(-0, +0) = +0,
//  vmin(-0, +0) = -0); the dumps show neither case.
// Throws std::invalid_argument naming the mnemonic for any other op.
Vreg valu_binary(isa::OpId op, VecArg a, VecArg b);
// The same, written into `out` (no temporary); `out` may be a's or b's vreg.
void valu_binary(isa::OpId op, VecArg a, VecArg b, Vreg& out);

// vcmp.{eq,ne,lt,le,gt,ge}.s32.totalorder: signed 32-bit compares;
// vcmp.*.f32.partialorder: IEEE compares, false when either side is NaN except
// ne, which is then true (-0 == +0); vc.u32: carry out of the unsigned a + b.
// Throws std::invalid_argument naming the mnemonic for any other op.
Vmask valu_compare(isa::OpId op, VecArg a, VecArg b);

// One-operand lane-wise ops.
//  vclz: leading zero bits (32 for 0). vmov: copy a vreg or broadcast an
//  immediate. vcvt.s32.f32: int32 -> f32, nearest even. vcvt.f32.s32: f32 ->
//  int32 toward zero, saturating to INT32_MIN / INT32_MAX (+-Inf included),
//  NaN -> 0 (tpuemu's choice, the op is not in the dumps). vcvt.f32.f8e4m3b11:
//  f32 -> e4m3 bias-11 code (numerics.hpp: nearest even, NaN/too large -> 0x7f
//  with the sign) in the low byte, upper 24 bits zero.
//  vunpack.c.l.bf16 / vunpack.c.h.bf16: the bf16 tile in sublanes 0-3 / 4-7 to
//  an 8x128 f32 vreg (layout above). vunpack.i.l.bf16: the low 16 bits of every
//  word as bf16, widened in place. vunpack.c.0.f8e4m3b11: the f8 tile in
//  sublanes 0-1 (codes decoded with numerics.hpp's bias-11 rules) to f32.
// Throws std::invalid_argument naming the mnemonic for any other op.
Vreg valu_unary(isa::OpId op, VecArg a);
// The same, written into `out` (no temporary). Contract: `out` is not a's vreg.
void valu_unary(isa::OpId op, VecArg a, Vreg& out);

// vpack.c.bf16 / vpack.c.b16 / vpack.c.b8 `high, low`: narrow both operands and
// pack them, `low` into sublanes 0-3 and `high` into 4-7 (output sublane p
// takes operand sublanes 2(p mod 4) and 2(p mod 4) + 1, layout above).
//  bf16: each f32 rounded to bf16, nearest even (numerics.hpp; NaN stays NaN).
//  b16: each 32-bit word truncated to its low 16 bits.
//  b8: each 16-bit half of a word truncated to its low 8 bits; operand sublane
//      2p gives bytes 0-1 of output word p, sublane 2p + 1 bytes 2-3.
// Truncation (rather than saturation) and the placement of `high` for b16/b8
// are tpuemu's choices: the dumps only pack codes that fit and always pass 0
// as `high`; the placement follows vpack.c.bf16, where it is observed.
// Throws std::invalid_argument naming the mnemonic for any other op.
Vreg vpack(isa::OpId op, VecArg high, VecArg low);

// vweird.f32: set where the element is Inf or NaN.
Vmask vweird_f32(const Vreg& a);
// vmor: element-wise or.
Vmask vmor(const Vmask& a, const Vmask& b);
// vsel: on_true where the mask is set, else on_false.
Vreg vsel(const Vmask& mask, VecArg on_true, VecArg on_false);
// vlaneseq: element (s, l) = 128 * s + l.
Vreg vlaneseq();
// vstv: the scalar in every element.
Vreg vstv(std::uint32_t scalar);

// vcmask: the mask of a rectangle of elements. Only one immediate occurs in
// the dumps, 64512 = 0xfc00, printed `[0:7,0:7]` and used to store lanes 0..7
// of every sublane. tpuemu reads it as two 10-bit corners, each
// (lane << 3) | sublane: bits [9:0] the first element, bits [19:10] the last,
// inclusive (0xfc00 = corner (lane 7, sublane 7) << 10 | corner (0, 0)). That
// reading is a guess consistent with one value, so every other immediate
// throws std::invalid_argument saying the encoding is unknown (and what the
// guess would give) instead of producing a mask silently.
Vmask vcmask(std::uint32_t imm);

// vrot.slane: sublane s moves to sublane (s + amount) mod 8. The direction is
// tpuemu's choice, the same as the lane rotation's: the dumps use the op only
// in butterfly folds (amounts 4, 2, 1 followed by an add or max), where both
// directions give the same result.
Vreg vrot_slane(const Vreg& a, std::uint32_t amount);

}  // namespace tpuemu::vpu
