// vpu/valu: every VALU op on hand-computed values (edge cases included), the
// packed layouts, and real kernels of the corpus replayed op by op.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <span>
#include <stdexcept>
#include <vector>

#include "common/numerics.hpp"
#include "isa/op_table.hpp"
#include "vpu/valu.hpp"
#include "vpu_test_support.hpp"

using namespace tpuemu;
using namespace tpuemu::vpu;
using namespace tpuemu::vpu::test;
using isa::OpId;

namespace {

constexpr std::uint32_t kQNan = 0x7FC0'0000U;  // the canonical NaN
constexpr std::uint32_t kSNan = 0x7F80'0001U;
constexpr std::uint32_t kNegNanPayload = 0xFFC1'2345U;
constexpr std::uint32_t kInf = 0x7F80'0000U;
constexpr std::uint32_t kNegInf = 0xFF80'0000U;
constexpr std::uint32_t kNegZero = 0x8000'0000U;
constexpr std::uint32_t kMinSubnormal = 0x0000'0001U;
constexpr std::uint32_t kMinNormal = 0x0080'0000U;
constexpr std::uint32_t kMaxFloat = 0x7F7F'FFFFU;
constexpr std::uint32_t kIntMin = 0x8000'0000U;
constexpr std::uint32_t kIntMax = 0x7FFF'FFFFU;

constexpr std::uint32_t f(float value) {
  return bits_of(value);
}

std::string name(OpId op) {
  return isa::mnemonic_text(op, 0);
}

// Every element of `v` equals `expected`.
void check_all(const Vreg& v, std::uint32_t expected) {
  const auto wrong = std::find_if(v.words.begin(), v.words.end(), [&](std::uint32_t w) { return w != expected; });
  INFO("element " << (wrong - v.words.begin()) << " is 0x" << std::hex << (wrong == v.words.end() ? 0 : *wrong)
                  << ", expected 0x" << expected);
  CHECK(wrong == v.words.end());
}
void check_all(const Vmask& m, bool expected) {
  const auto count = std::count(m.bits.begin(), m.bits.end(), std::uint8_t{1});
  CHECK(count == (expected ? static_cast<long>(kElements) : 0L));
}

// The ops a function accepts: every row of the table it does not reject.
template <typename Call>
std::set<OpId> accepted_ops(Call call) {
  std::set<OpId> accepted;
  for (const isa::OpInfo& info : isa::op_table()) {
    try {
      call(info.id);
      accepted.insert(info.id);
    } catch (const std::invalid_argument&) {
    }
  }
  return accepted;
}

struct BinaryCase {
  OpId op;
  std::uint32_t a, b, expected;
};

const std::vector<BinaryCase> kBinaryCases = {
    {OpId::kVaddS32, 1, 2, 3},
    {OpId::kVaddS32, kIntMax, 1, kIntMin},
    {OpId::kVaddS32, 0xFFFF'FFFFU, 1, 0},
    {OpId::kVaddS32, 4294967169U, 200, 73},  // -127 + 200, as `vadd.s32 4294967169, %v`
    {OpId::kVsubS32, 32, 5, 27},             // first minus second
    {OpId::kVsubS32, 0, 1, 0xFFFF'FFFFU},
    {OpId::kVsubS32, kIntMin, 1, kIntMax},
    {OpId::kVmulU32, 3, 5, 15},
    {OpId::kVmulU32, 0x1'0000U, 0x1'0000U, 0},
    {OpId::kVmulU32, 0xFFFF'FFFFU, 0xFFFF'FFFFU, 1},
    {OpId::kVmulU32, 0x9E37'79B9U, 3, 0xDAA6'6D2BU},
    {OpId::kVandU32, 0xF0F0'F0F0U, 0x0FF0'0FF0U, 0x00F0'00F0U},
    {OpId::kVandU32, 2147483647U, f(-1.0F), f(1.0F)},  // abs by clearing the sign
    {OpId::kVorU32, 0xF0F0'F0F0U, 0x0F0F'0F0FU, 0xFFFF'FFFFU},
    {OpId::kVorU32, f(1.1754944e-38F), kNegZero, 0x8080'0000U},
    {OpId::kVxorU32, 2147483648U, f(1.0F), f(-1.0F)},  // negate by flipping the sign
    {OpId::kVxorU32, 0x1234'5678U, 0x1234'5678U, 0},
    {OpId::kVshllU32, 1, 31, 0x8000'0000U},
    {OpId::kVshllU32, 1, 32, 1},  // amount & 31
    {OpId::kVshllU32, 1, 33, 2},
    {OpId::kVshllU32, 0xFFFF'FFFFU, 4, 0xFFFF'FFF0U},
    {OpId::kVshrlU32, 0x8000'0000U, 31, 1},
    {OpId::kVshrlU32, 0x8000'0000U, 32, 0x8000'0000U},
    {OpId::kVshrlU32, 0xFFFF'FFFFU, 24, 0xFF},
    {OpId::kVshrlU32, 0x8000'0000U, 0, 0x8000'0000U},
    {OpId::kVshraS32, 0x8000'0000U, 31, 0xFFFF'FFFFU},
    {OpId::kVshraS32, 0x8000'0000U, 32, 0x8000'0000U},
    {OpId::kVshraS32, 0x8000'0000U, 4, 0xF800'0000U},
    {OpId::kVshraS32, 0x4000'0000U, 30, 1},
    {OpId::kVshraS32, 0x7FFF'FFFFU, 63, 0},
    {OpId::kVaddF32, f(1.0F), f(2.0F), f(3.0F)},
    {OpId::kVaddF32, f(1.0F), 0x3380'0000U, f(1.0F)},            // 1 + 2^-24: tie, to even
    {OpId::kVaddF32, 0x3F80'0001U, 0x3380'0000U, 0x3F80'0002U},  // tie, to even (up)
    {OpId::kVaddF32, kMaxFloat, kMaxFloat, kInf},
    {OpId::kVaddF32, kInf, kNegInf, kQNan},
    {OpId::kVaddF32, kInf, f(1.0F), kInf},
    {OpId::kVaddF32, kNegZero, kNegZero, kNegZero},
    {OpId::kVaddF32, kNegZero, 0, 0},
    {OpId::kVaddF32, kMinSubnormal, kMinSubnormal, 2},
    {OpId::kVaddF32, kSNan, f(1.0F), kQNan},  // NaN results are canonical
    {OpId::kVaddF32, f(1.0F), kNegNanPayload, kQNan},
    {OpId::kVsubF32, f(5.0F), f(3.0F), f(2.0F)},  // first minus second
    {OpId::kVsubF32, 0, 0, 0},
    {OpId::kVsubF32, kNegZero, 0, kNegZero},
    {OpId::kVsubF32, kInf, kInf, kQNan},
    {OpId::kVsubF32, kMinNormal, kMinSubnormal, 0x007F'FFFFU},  // gradual underflow
    {OpId::kVmulF32, f(0.5F), f(3.0F), f(1.5F)},
    {OpId::kVmulF32, kMinNormal, f(0.5F), 0x0040'0000U},  // subnormal result kept
    {OpId::kVmulF32, kMinSubnormal, f(0.5F), 0},          // tie between 0 and 2^-149: even
    {OpId::kVmulF32, 3, f(0.5F), 2},                      // 1.5 subnormal steps: to even
    {OpId::kVmulF32, 0, kInf, kQNan},
    {OpId::kVmulF32, kNegZero, f(5.0F), kNegZero},
    {OpId::kVmulF32, f(-2.0F), f(3.0F), f(-6.0F)},
    {OpId::kVmulF32, kMaxFloat, f(2.0F), kInf},
    {OpId::kVmaxF32, f(1.0F), f(2.0F), f(2.0F)},
    {OpId::kVmaxF32, f(-1.0F), f(-2.0F), f(-1.0F)},
    {OpId::kVmaxF32, kQNan, f(1.0F), kQNan},
    {OpId::kVmaxF32, f(1.0F), kSNan, kQNan},
    {OpId::kVmaxF32, kNegZero, 0, 0},
    {OpId::kVmaxF32, 0, kNegZero, 0},
    {OpId::kVmaxF32, kInf, kMaxFloat, kInf},
    {OpId::kVmaxF32, kMinSubnormal, 0, kMinSubnormal},
    {OpId::kVminF32, f(1.0F), f(2.0F), f(1.0F)},
    {OpId::kVminF32, kQNan, f(1.0F), kQNan},
    {OpId::kVminF32, f(1.0F), kNegNanPayload, kQNan},
    {OpId::kVminF32, kNegZero, 0, kNegZero},
    {OpId::kVminF32, 0, kNegZero, kNegZero},
    {OpId::kVminF32, kNegInf, f(1.0F), kNegInf},
};

struct CompareCase {
  OpId op;
  std::uint32_t a, b;
  bool expected;
};

const std::vector<CompareCase> kCompareCases = {
    {OpId::kVcmpEqS32, 5, 5, true},
    {OpId::kVcmpEqS32, 5, 6, false},
    {OpId::kVcmpEqS32, kIntMin, kIntMin, true},
    {OpId::kVcmpEqS32, kNegZero, 0, false},  // bit patterns, not floats
    {OpId::kVcmpNeS32, 5, 6, true},
    {OpId::kVcmpNeS32, 5, 5, false},
    {OpId::kVcmpLtS32, 0xFFFF'FFFFU, 0, true},  // signed: -1 < 0
    {OpId::kVcmpLtS32, 0, 0xFFFF'FFFFU, false},
    {OpId::kVcmpLtS32, kIntMin, kIntMax, true},
    {OpId::kVcmpLtS32, 3, 3, false},
    {OpId::kVcmpLeS32, 3, 3, true},
    {OpId::kVcmpLeS32, 4, 3, false},
    {OpId::kVcmpLeS32, kIntMin, 0, true},
    {OpId::kVcmpGtS32, 0, 0xFFFF'FFFFU, true},
    {OpId::kVcmpGtS32, kIntMax, kIntMin, true},
    {OpId::kVcmpGtS32, 3, 3, false},
    {OpId::kVcmpGeS32, 3, 3, true},
    {OpId::kVcmpGeS32, 0xFFFF'FFFFU, 0, false},
    {OpId::kVcmpEqF32, f(1.0F), f(1.0F), true},
    {OpId::kVcmpEqF32, kNegZero, 0, true},
    {OpId::kVcmpEqF32, kQNan, kQNan, false},
    {OpId::kVcmpEqF32, f(1.0F), kQNan, false},
    {OpId::kVcmpEqF32, kInf, kInf, true},
    {OpId::kVcmpNeF32, kQNan, kQNan, true},  // the NaN test of the f8 kernels
    {OpId::kVcmpNeF32, f(1.0F), kSNan, true},
    {OpId::kVcmpNeF32, f(1.0F), f(1.0F), false},
    {OpId::kVcmpNeF32, kNegZero, 0, false},
    {OpId::kVcmpLtF32, f(1.0F), f(2.0F), true},
    {OpId::kVcmpLtF32, kNegInf, 0xFF7F'FFFFU, true},
    {OpId::kVcmpLtF32, kQNan, f(1.0F), false},
    {OpId::kVcmpLtF32, f(1.0F), kQNan, false},
    {OpId::kVcmpLtF32, kNegZero, 0, false},
    {OpId::kVcmpLtF32, f(-1.0F), f(1.0F), true},  // unlike the signed-integer order of the bits
    {OpId::kVcmpLeF32, f(1.0F), f(1.0F), true},
    {OpId::kVcmpLeF32, f(2.0F), f(1.0F), false},
    {OpId::kVcmpLeF32, kQNan, kQNan, false},
    {OpId::kVcmpLeF32, kMinSubnormal, f(0.0009765625F), true},
    {OpId::kVcmpGtF32, f(30.0F), f(29.0F), true},
    {OpId::kVcmpGtF32, kQNan, f(29.0F), false},
    {OpId::kVcmpGtF32, kInf, kMaxFloat, true},
    {OpId::kVcmpGtF32, f(-1.0F), f(-2.0F), true},
    {OpId::kVcmpGeF32, kNegZero, 0, true},
    {OpId::kVcmpGeF32, kQNan, f(1.0F), false},
    {OpId::kVcmpGeF32, f(1.0F), f(2.0F), false},
    {OpId::kVcU32, 0xFFFF'FFFFU, 1, true},
    {OpId::kVcU32, 0xFFFF'FFFFU, 0, false},
    {OpId::kVcU32, 0x8000'0000U, 0x8000'0000U, true},
    {OpId::kVcU32, 0x7FFF'FFFFU, 0x8000'0000U, false},
    {OpId::kVcU32, 0xFFFF'FFFFU, 0xFFFF'FFFFU, true},
};

struct UnaryCase {
  OpId op;
  std::uint32_t a, expected;
};

const std::vector<UnaryCase> kUnaryCases = {
    {OpId::kVclz, 0, 32},
    {OpId::kVclz, 1, 31},
    {OpId::kVclz, 0x8000'0000U, 0},
    {OpId::kVclz, 0x0001'0000U, 15},
    {OpId::kVclz, 0x00FF'FFFFU, 8},
    {OpId::kVmov, 0x1234'5678U, 0x1234'5678U},
    {OpId::kVmov, kSNan, kSNan},  // a copy: NaN bits untouched
    {OpId::kVcvtS32F32, 0, 0},
    {OpId::kVcvtS32F32, 1, f(1.0F)},
    {OpId::kVcvtS32F32, 0xFFFF'FFFFU, f(-1.0F)},
    {OpId::kVcvtS32F32, 65535, f(65535.0F)},
    {OpId::kVcvtS32F32, 16777217, f(16777216.0F)},  // tie, to even (down)
    {OpId::kVcvtS32F32, 16777219, f(16777220.0F)},  // tie, to even (up)
    {OpId::kVcvtS32F32, kIntMin, f(-2147483648.0F)},
    {OpId::kVcvtS32F32, kIntMax, f(2147483648.0F)},
    {OpId::kVcvtF32S32, f(2.9F), 2},
    {OpId::kVcvtF32S32, f(-2.9F), 0xFFFF'FFFEU},  // toward zero
    {OpId::kVcvtF32S32, f(0.5F), 0},
    {OpId::kVcvtF32S32, f(-0.5F), 0},
    {OpId::kVcvtF32S32, kNegZero, 0},
    {OpId::kVcvtF32S32, kMinSubnormal, 0},
    {OpId::kVcvtF32S32, f(2147483520.0F), 2147483520U},  // largest float below 2^31
    {OpId::kVcvtF32S32, f(2147483648.0F), kIntMax},      // saturates
    {OpId::kVcvtF32S32, f(1e10F), kIntMax},
    {OpId::kVcvtF32S32, kInf, kIntMax},
    {OpId::kVcvtF32S32, f(-2147483648.0F), kIntMin},  // exact
    {OpId::kVcvtF32S32, 0xCF00'0001U, kIntMin},       // next float below -2^31: saturates
    {OpId::kVcvtF32S32, kNegInf, kIntMin},
    {OpId::kVcvtF32S32, kQNan, 0},
    {OpId::kVcvtF32S32, kNegNanPayload, 0},
    {OpId::kVcvtF32F8e4m3b11, f(1.0F), 0x58},  // exponent field 0 + 11
    {OpId::kVcvtF32F8e4m3b11, f(-1.0F), 0xD8},
    {OpId::kVcvtF32F8e4m3b11, 0, 0x00},
    {OpId::kVcvtF32F8e4m3b11, kNegZero, 0x00},  // fnuz: no negative zero
    {OpId::kVcvtF32F8e4m3b11, f(28.0F), 0x7E},  // largest finite
    {OpId::kVcvtF32F8e4m3b11, f(29.0F), 0x7E},  // (28, 29] saturates
    {OpId::kVcvtF32F8e4m3b11, f(29.5F), 0x7F},  // beyond 29: 30, the largest value
    {OpId::kVcvtF32F8e4m3b11, kInf, 0x7F},
    {OpId::kVcvtF32F8e4m3b11, kNegInf, 0xFF},
    {OpId::kVcvtF32F8e4m3b11, kQNan, 0x80},               // fnuz NaN
    {OpId::kVcvtF32F8e4m3b11, f(0x1p-13F), 0x01},         // smallest subnormal
    {OpId::kVcvtF32F8e4m3b11, f(0x1p-14F), 0x00},         // half of it: tie, to even
    {OpId::kVcvtF32F8e4m3b11, f(1.0625F), 0x58},          // tie between 1 and 1.125: even
    {OpId::kVcvtF32F8e4m3b11, f(1.1875F), 0x5A},          // tie between 1.125 and 1.25: even
    {OpId::kVunpackILoBf16, 0x3F80'4000U, f(2.0F)},       // low half only
    {OpId::kVunpackILoBf16, 0xFFFF'7FC1U, 0x7FC1'0000U},  // NaN payload kept
    {OpId::kVunpackILoBf16, 0x0000'8000U, kNegZero},
};

// A vreg whose elements differ: element i = i * 0x9E3779B9 (a spread of bit patterns).
Vreg spread(std::uint32_t salt) {
  Vreg v;
  for (std::size_t i = 0; i < kElements; ++i) v.words[i] = static_cast<std::uint32_t>(i + salt) * 0x9E37'79B9U;
  return v;
}

}  // namespace

TEST_CASE("vpu/valu: valu_binary: hand-computed cases, every operand form") {
  for (const BinaryCase& c : kBinaryCases) {
    INFO(name(c.op) << " 0x" << std::hex << c.a << ", 0x" << c.b << " -> 0x" << c.expected);
    const Vreg a = vstv(c.a);
    const Vreg b = vstv(c.b);
    check_all(valu_binary(c.op, vec(a), vec(b)), c.expected);
    check_all(valu_binary(c.op, splat(c.a), vec(b)), c.expected);
    check_all(valu_binary(c.op, vec(a), splat(c.b)), c.expected);
    check_all(valu_binary(c.op, splat(c.a), splat(c.b)), c.expected);
  }
}

TEST_CASE("vpu/valu: valu_binary: lane-wise on distinct elements, operand order kept") {
  const Vreg a = spread(1);
  Vreg amounts;
  for (std::size_t i = 0; i < kElements; ++i) amounts.words[i] = static_cast<std::uint32_t>(i % 40);
  const Vreg sub = valu_binary(OpId::kVsubS32, vec(a), vec(amounts));
  const Vreg shl = valu_binary(OpId::kVshllU32, vec(a), vec(amounts));
  const Vreg sra = valu_binary(OpId::kVshraS32, vec(a), vec(amounts));
  Vreg quarters;
  for (std::size_t i = 0; i < kElements; ++i) quarters.set_f32(i, static_cast<float>(i) * 0.25F);
  const Vreg fsub = valu_binary(OpId::kVsubF32, vec(quarters), splat(f(1.0F)));
  for (std::size_t i = 0; i < kElements; ++i) {
    INFO("element " << i);
    const std::uint32_t n = amounts.words[i] & 31U;
    CHECK(sub.words[i] == a.words[i] - amounts.words[i]);
    CHECK(shl.words[i] == a.words[i] << n);
    CHECK(sra.words[i] == static_cast<std::uint32_t>(static_cast<std::int32_t>(a.words[i]) >> n));
    CHECK(fsub.f32(i) == static_cast<float>(i) * 0.25F - 1.0F);
  }
}

TEST_CASE("vpu/valu: valu_compare: hand-computed cases, every operand form") {
  for (const CompareCase& c : kCompareCases) {
    INFO(name(c.op) << " 0x" << std::hex << c.a << ", 0x" << c.b << " -> " << c.expected);
    const Vreg a = vstv(c.a);
    const Vreg b = vstv(c.b);
    check_all(valu_compare(c.op, vec(a), vec(b)), c.expected);
    check_all(valu_compare(c.op, vec(a), splat(c.b)), c.expected);
    check_all(valu_compare(c.op, splat(c.a), vec(b)), c.expected);
  }
}

TEST_CASE("vpu/valu: valu_compare: lane-wise on distinct elements") {
  const Vmask lt = valu_compare(OpId::kVcmpLtS32, vec(vlaneseq()), splat(300));
  const Vmask ge = valu_compare(OpId::kVcmpGeS32, vec(vlaneseq()), splat(300));
  for (std::size_t i = 0; i < kElements; ++i) {
    CHECK(lt.bits[i] == (i < 300 ? 1 : 0));
    CHECK(ge.bits[i] == (i >= 300 ? 1 : 0));
  }
}

TEST_CASE("vpu/valu: valu_unary: hand-computed cases") {
  for (const UnaryCase& c : kUnaryCases) {
    INFO(name(c.op) << " 0x" << std::hex << c.a << " -> 0x" << c.expected);
    const Vreg a = vstv(c.a);
    check_all(valu_unary(c.op, vec(a)), c.expected);
    check_all(valu_unary(c.op, splat(c.a)), c.expected);
  }
}

TEST_CASE("vpu/valu: valu_unary: vmov copies a vreg element by element") {
  const Vreg a = spread(7);
  CHECK(valu_unary(OpId::kVmov, vec(a)) == a);
}

TEST_CASE("vpu/valu: valu_unary: vcvt.f32.f8e4m3b11 agrees with numerics.hpp on many values") {
  Vreg a = spread(3);
  for (std::size_t i = 0; i < 256; ++i) a.set_f32(i, static_cast<float>(i) / 8.0F - 16.0F);
  const Vreg codes = valu_unary(OpId::kVcvtF32F8e4m3b11, vec(a));
  for (std::size_t i = 0; i < kElements; ++i) {
    INFO("element " << i << " = 0x" << std::hex << a.words[i]);
    CHECK(codes.words[i] == f32_to_f8e4m3b11(a.f32(i)));
  }
}

TEST_CASE("vpu/valu: vunpack.c.l/h.bf16: row 2p in the low half, row 2p+1 in the high half") {
  // tile t, row r, column c holds the bf16 code 0x3C00 + 0x800 * t + 128 * r + c (all finite).
  const auto code = [](std::size_t t, std::size_t r, std::size_t c) {
    return static_cast<std::uint16_t>(0x3C00 + 0x800 * t + 128 * r + c);
  };
  Vreg packed;
  packed.at(0, 5) = 0x4040'3F80U;  // rows 0, 1 of column 5 of the first tile: 1.0 (low), 3.0 (high)
  packed.at(6, 2) = 0xC000'8000U;  // rows 4, 5 of column 2 of the second tile: -0.0, -2.0
  const Vreg lo = valu_unary(OpId::kVunpackCLoBf16, vec(packed));
  const Vreg hi = valu_unary(OpId::kVunpackCHiBf16, vec(packed));
  CHECK(lo.at(0, 5) == f(1.0F));
  CHECK(lo.at(1, 5) == f(3.0F));
  CHECK(hi.at(4, 2) == kNegZero);
  CHECK(hi.at(5, 2) == f(-2.0F));

  const Vreg tiles = bf16_tiles(code);
  const Vreg first = valu_unary(OpId::kVunpackCLoBf16, vec(tiles));
  const Vreg second = valu_unary(OpId::kVunpackCHiBf16, vec(tiles));
  for (std::size_t r = 0; r < kSublanes; ++r) {
    for (std::size_t c = 0; c < kLanes; ++c) {
      INFO("row " << r << " column " << c);
      CHECK(first.at(r, c) == static_cast<std::uint32_t>(code(0, r, c)) << 16);
      CHECK(second.at(r, c) == static_cast<std::uint32_t>(code(1, r, c)) << 16);
    }
  }
}

TEST_CASE("vpu/valu: vpack.c.bf16: low operand to sublanes 0-3, high to 4-7, nearest-even rounding") {
  const auto code = [](std::size_t t, std::size_t r, std::size_t c) {
    return static_cast<std::uint16_t>(0x3C00 + 0x800 * t + 128 * r + c);
  };
  Vreg low;
  Vreg high;
  for (std::size_t r = 0; r < kSublanes; ++r) {
    for (std::size_t c = 0; c < kLanes; ++c) {
      low.at(r, c) = static_cast<std::uint32_t>(code(0, r, c)) << 16;
      high.at(r, c) = static_cast<std::uint32_t>(code(1, r, c)) << 16;
    }
  }
  CHECK(vpack(OpId::kVpackCBf16, vec(high), vec(low)) == bf16_tiles(code));

  struct RoundCase {
    std::uint32_t f32;
    std::uint16_t bf16;
  };
  const RoundCase kRounding[] = {
      {0x3F80'8000U, 0x3F80},                                              // exactly halfway: to even (down)
      {0x3F81'8000U, 0x3F82},                                              // exactly halfway: to even (up)
      {0x3F80'8001U, 0x3F81},                                              // above halfway
      {0x3F80'7FFFU, 0x3F80},                                              // below halfway
      {0xBF80'8000U, 0xBF80},                                              // negative tie
      {kMaxFloat, 0x7F80},                                                 // rounds past the largest bf16: Inf
      {kInf, 0x7F80},         {kNegZero, 0x8000}, {0x0000'8000U, 0x0000},  // subnormal tie: to even
      {0x0001'8000U, 0x0002}, {kSNan, 0x7FC0},                             // NaN stays NaN, made quiet
      {0xFF81'0000U, 0xFFC1},
  };
  for (const RoundCase& c : kRounding) {
    INFO("f32 0x" << std::hex << c.f32 << " -> bf16 0x" << c.bf16);
    const Vreg packed = vpack(OpId::kVpackCBf16, splat(0), splat(c.f32));
    for (std::size_t s = 0; s < 4; ++s) CHECK(packed.at(s, 17) == (static_cast<std::uint32_t>(c.bf16) * 0x1'0001U));
    for (std::size_t s = 4; s < kSublanes; ++s) CHECK(packed.at(s, 17) == 0);  // `vpack.c.bf16 0.0, %v`
  }
}

TEST_CASE("vpu/valu: vpack.c.b16 and vpack.c.b8 truncate and pack in the compressed sublane layout") {
  Vreg low;
  Vreg high;
  for (std::size_t r = 0; r < kSublanes; ++r) {
    for (std::size_t c = 0; c < kLanes; ++c) {
      low.at(r, c) = 0xABCD'0000U | static_cast<std::uint32_t>(16 * r + c);
      high.at(r, c) = 0x1234'0000U | static_cast<std::uint32_t>(0x1000 + 16 * r + c);
    }
  }
  const Vreg b16 = vpack(OpId::kVpackCB16, vec(high), vec(low));
  for (std::size_t p = 0; p < 4; ++p) {
    for (std::size_t c = 0; c < kLanes; ++c) {
      INFO("sublane " << p << " lane " << c);
      CHECK(b16.at(p, c) == ((low.at(2 * p, c) & 0xFFFFU) | (low.at(2 * p + 1, c) << 16)));
      CHECK(b16.at(4 + p, c) == ((high.at(2 * p, c) & 0xFFFFU) | (high.at(2 * p + 1, c) << 16)));
    }
  }

  Vreg halves;  // word (s, c): bytes 0x11*s + c in the low half and 0x80 + that in the high half, above junk
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t c = 0; c < kLanes; ++c) {
      const auto byte = static_cast<std::uint32_t>((0x11 * s + c) & 0x7F);
      halves.at(s, c) = 0xEE00'EE00U | byte | ((0x80 | byte) << 16);
    }
  }
  const Vreg b8 = vpack(OpId::kVpackCB8, splat(0), vec(halves));
  for (std::size_t p = 0; p < 4; ++p) {
    for (std::size_t c = 0; c < kLanes; ++c) {
      INFO("sublane " << p << " lane " << c);
      const std::uint32_t even = halves.at(2 * p, c);
      const std::uint32_t odd = halves.at(2 * p + 1, c);
      const std::uint32_t expected =
          (even & 0xFF) | (((even >> 16) & 0xFF) << 8) | ((odd & 0xFF) << 16) | (((odd >> 16) & 0xFF) << 24);
      CHECK(b8.at(p, c) == expected);
      CHECK(b8.at(4 + p, c) == 0);
    }
  }
}

TEST_CASE("vpu/valu: f8 codes round-trip through vpack.c.b16, vpack.c.b8 and vunpack.c.0.f8e4m3b11") {
  Vreg codes;  // every one of the 256 codes, at row r, column c = (128 r + c) mod 256
  for (std::size_t i = 0; i < kElements; ++i) codes.words[i] = static_cast<std::uint32_t>(i % 256);
  const Vreg packed = vpack(OpId::kVpackCB8, splat(0), vec(vpack(OpId::kVpackCB16, splat(0), vec(codes))));
  CHECK(packed == f8_tile([&](std::size_t r, std::size_t c) { return codes.at(r, c); }));
  const Vreg widened = valu_unary(OpId::kVunpackC0F8e4m3b11, vec(packed));
  for (std::size_t i = 0; i < kElements; ++i) {
    INFO("code " << codes.words[i]);
    CHECK(widened.words[i] == bits_of(f8e4m3b11_to_f32(static_cast<std::uint8_t>(codes.words[i]))));
  }

  Vreg one_word;  // rows 0..3 of column 5: codes 0x01, 0x00, 0x58, 0xD8
  one_word.at(0, 5) = 0xD858'0001U;
  const Vreg w = valu_unary(OpId::kVunpackC0F8e4m3b11, vec(one_word));
  CHECK(w.at(0, 5) == f(0x1p-13F));
  CHECK(w.at(1, 5) == 0);
  CHECK(w.at(2, 5) == f(1.0F));
  CHECK(w.at(3, 5) == f(-1.0F));
}

TEST_CASE("vpu/valu: vweird.f32, vmor, vsel, vlaneseq, vstv") {
  Vreg a;
  const std::uint32_t kValues[] = {0, kMaxFloat, kInf, kNegInf, kQNan, 0xFF80'0001U, kMinSubnormal, kNegZero};
  const bool kWeird[] = {false, false, true, true, true, true, false, false};
  for (std::size_t i = 0; i < kElements; ++i) a.words[i] = kValues[i % 8];
  const Vmask weird = vweird_f32(a);
  for (std::size_t i = 0; i < kElements; ++i) CHECK(weird.bits[i] == (kWeird[i % 8] ? 1 : 0));

  Vmask even;
  Vmask low;
  for (std::size_t i = 0; i < kElements; ++i) {
    even.bits[i] = i % 2 == 0;
    low.bits[i] = i < 100;
  }
  const Vmask either = vmor(even, low);
  for (std::size_t i = 0; i < kElements; ++i) CHECK(either.bits[i] == ((i % 2 == 0 || i < 100) ? 1 : 0));

  const Vreg seq = vlaneseq();
  CHECK(seq.at(0, 0) == 0);
  CHECK(seq.at(3, 5) == 389);
  CHECK(seq.at(7, 127) == 1023);
  const Vreg picked = vsel(even, vec(seq), splat(kQNan));
  const Vreg picked_imm = vsel(even, splat(127), vec(seq));
  for (std::size_t i = 0; i < kElements; ++i) {
    CHECK(picked.words[i] == (i % 2 == 0 ? i : kQNan));
    CHECK(picked_imm.words[i] == (i % 2 == 0 ? 127 : i));
  }
  check_all(vstv(0xDEAD'BEEFU), 0xDEAD'BEEFU);
}

TEST_CASE("vpu/valu: vcmask: 64512 selects lanes 0..7 of every sublane, other immediates are refused") {
  const Vmask mask = vcmask(64512);
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t l = 0; l < kLanes; ++l) CHECK(mask.at(s, l) == (l < 8));
  }
  for (std::uint32_t imm : {0U, 64513U, 0xFC00U | (1U << 20), 7U, 0x3FF'FC00U}) {
    INFO("vcmask " << imm);
    CHECK_THROWS_AS(vcmask(imm), std::invalid_argument);
    CHECK_THROWS_WITH(vcmask(imm), Catch::Contains("unknown encoding"));
  }
  CHECK_THROWS_WITH(vcmask(0x1FC00), Catch::Contains("sublanes 0..7, lanes 0..15"));
}

TEST_CASE("vpu/valu: vrot.slane: sublane s moves to (s + amount) mod 8") {
  Vreg rows;
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t l = 0; l < kLanes; ++l) rows.at(s, l) = static_cast<std::uint32_t>(1000 * s + l);
  }
  CHECK(vrot_slane(rows, 0) == rows);
  CHECK(vrot_slane(rows, 8) == rows);
  for (std::uint32_t amount : {1U, 2U, 4U, 7U, 9U, 0xFFFF'FFFFU}) {
    const Vreg rotated = vrot_slane(rows, amount);
    for (std::size_t s = 0; s < kSublanes; ++s) {
      INFO("amount " << amount << " sublane " << s);
      CHECK(rotated.at((s + amount % 8) % 8, 3) == rows.at(s, 3));
    }
  }
  // The butterfly fold of the reduction kernels: every sublane ends with the total.
  Vreg v;
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t l = 0; l < kLanes; ++l) v.set_f32(s * kLanes + l, static_cast<float>(s + 1));
  }
  for (std::uint32_t amount : {4U, 2U, 1U}) v = valu_binary(OpId::kVaddF32, vec(vrot_slane(v, amount)), vec(v));
  check_all(v, f(36.0F));
}

TEST_CASE("vpu/valu: every op each VALU function accepts has a test case, others throw naming the mnemonic") {
  const Vreg zero;
  std::set<OpId> binary_tested;
  std::set<OpId> compare_tested;
  std::set<OpId> unary_tested = {OpId::kVunpackCLoBf16, OpId::kVunpackCHiBf16, OpId::kVunpackC0F8e4m3b11};
  for (const auto& c : kBinaryCases) binary_tested.insert(c.op);
  for (const auto& c : kCompareCases) compare_tested.insert(c.op);
  for (const auto& c : kUnaryCases) unary_tested.insert(c.op);
  CHECK(accepted_ops([&](OpId op) { valu_binary(op, vec(zero), vec(zero)); }) == binary_tested);
  CHECK(accepted_ops([&](OpId op) { valu_compare(op, vec(zero), vec(zero)); }) == compare_tested);
  CHECK(accepted_ops([&](OpId op) { valu_unary(op, vec(zero)); }) == unary_tested);
  CHECK(accepted_ops([&](OpId op) { vpack(op, vec(zero), vec(zero)); }) ==
        std::set<OpId>{OpId::kVpackCBf16, OpId::kVpackCB16, OpId::kVpackCB8});

  CHECK_THROWS_AS(valu_binary(OpId::kVclz, vec(zero), vec(zero)), std::invalid_argument);
  CHECK_THROWS_WITH(valu_binary(OpId::kVclz, vec(zero), vec(zero)), Catch::Contains("valu_binary: vclz is not"));
  CHECK_THROWS_WITH(valu_compare(OpId::kVaddS32, vec(zero), vec(zero)), Catch::Contains("vadd.s32"));
  CHECK_THROWS_WITH(valu_unary(OpId::kVxposeStart, vec(zero)), Catch::Contains("vxpose.xlu0.b32.start"));
  CHECK_THROWS_WITH(vpack(OpId::kVaddF32, vec(zero), vec(zero)), Catch::Contains("vadd.f32"));
}

// ---------------------------------------------------------------------------
// Real kernels replayed op by op (the op order and immediates of the dumps).

namespace {

constexpr std::uint32_t k65536 = f(65536.0F);

// `vcvt.s32.f32` of the high and low 16-bit halves, recombined: the iota
// kernels' exact int -> f32 of an index vreg.
Vreg index_to_f32(const Vreg& index) {
  const Vreg high = valu_binary(OpId::kVshrlU32, vec(index), splat(16));
  const Vreg low = valu_binary(OpId::kVandU32, splat(65535), vec(index));
  const Vreg high_f = valu_binary(OpId::kVmulF32, splat(k65536), vec(valu_unary(OpId::kVcvtS32F32, vec(high))));
  return valu_binary(OpId::kVaddF32, vec(valu_unary(OpId::kVcvtS32F32, vec(low))), vec(high_f));
}

// The f32 -> float8_e4m3fn code sequence of the f8 kernels (rescale by 1/16,
// vcvt to e4m3b11, Inf/NaN to 127, |x| <= 2^-10 to a signed zero), packed.
Vreg f32_to_f8_packed(const Vreg& value) {
  const Vreg magnitude = valu_binary(OpId::kVandU32, splat(2147483647U), vec(value));
  const Vreg scaled = valu_binary(OpId::kVmulF32, splat(f(0.0625F)), vec(value));
  const Vmask weird = vweird_f32(value);
  const Vreg sign = valu_binary(OpId::kVandU32, splat(128), vec(valu_binary(OpId::kVshrlU32, vec(value), splat(24))));
  const Vreg code = valu_unary(OpId::kVcvtF32F8e4m3b11, vec(scaled));
  const Vmask tiny = valu_compare(OpId::kVcmpLeF32, vec(magnitude), splat(f(0.0009765625F)));
  const Vreg fixed = vsel(tiny, vec(sign), vec(vsel(weird, splat(127), vec(code))));
  return vpack(OpId::kVpackCB8, splat(0), vec(vpack(OpId::kVpackCB16, splat(0), vec(fixed))));
}

// vunpack.c.0.f8e4m3b11 and the fix-ups of the f8 add kernel: rescale by 16,
// NaN -> -0.0, |x| > 29 (before scaling) -> NaN.
Vreg f8_packed_to_f32(const Vreg& packed) {
  const Vreg wide = valu_unary(OpId::kVunpackC0F8e4m3b11, vec(packed));
  const Vreg magnitude = valu_binary(OpId::kVandU32, splat(2147483647U), vec(wide));
  const Vmask nan = valu_compare(OpId::kVcmpNeF32, vec(wide), vec(wide));
  const Vreg scaled = valu_binary(OpId::kVmulF32, splat(f(16.0F)), vec(wide));
  const Vmask big = valu_compare(OpId::kVcmpGtF32, vec(magnitude), splat(f(29.0F)));
  return vsel(big, splat(kQNan), vec(vsel(nan, splat(kNegZero), vec(scaled))));
}

}  // namespace

TEST_CASE("vpu/valu corpus: vector_add_bf16's iota.1 kernel writes the bf16 iota (pins the bf16 row order)") {
  const auto x = corpus_array("vector_add_bf16/inputs/x.bits.npy");  // bf16(arange(2048)), shape (8,256)
  if (!x) return;
  const auto bits = x->as_u16();
  REQUIRE(bits.size() == 2048);
  const Vreg iota = vlaneseq();
  const Vreg low = index_to_f32(iota);
  const Vreg high = index_to_f32(valu_binary(OpId::kVaddS32, splat(1024), vec(iota)));
  const Vreg packed = vpack(OpId::kVpackCBf16, vec(high), vec(low));
  // bf16[2048]{0:T(1024)(128)(2,1)}: tile t = elements 1024t.., row r, column c = element 1024t + 128r + c.
  CHECK(packed ==
        bf16_tiles([&](std::size_t t, std::size_t r, std::size_t c) { return bits[1024 * t + 128 * r + c]; }));
}

TEST_CASE("vpu/valu corpus: vector_add_bf16's add.3 kernel (unpack, add, pack) matches expected.bits") {
  const auto x = corpus_array("vector_add_bf16/inputs/x.bits.npy");
  const auto x_f32 = corpus_array("vector_add_bf16/inputs/x.npy");
  const auto y = corpus_array("vector_add_bf16/inputs/y.bits.npy");
  const auto expected = corpus_array("vector_add_bf16/expected.bits.npy");
  if (!x || !x_f32 || !y || !expected) return;
  // bf16[8,256]{1,0:T(8,128)(2,1)}: tile t = columns 128t..128t+127.
  const auto tiles = [](const NpyArray& a) {
    const auto bits = a.as_u16();
    return bf16_tiles([&](std::size_t t, std::size_t r, std::size_t c) { return bits[256 * r + 128 * t + c]; });
  };
  const Vreg vx = tiles(*x);
  const Vreg vy = tiles(*y);
  const Vreg x_lo = valu_unary(OpId::kVunpackCLoBf16, vec(vx));
  const Vreg x_hi = valu_unary(OpId::kVunpackCHiBf16, vec(vx));
  const auto values = x_f32->as_f32();
  for (std::size_t r = 0; r < kSublanes; ++r) {
    for (std::size_t c = 0; c < kLanes; ++c) {
      CHECK(x_lo.f32(r * kLanes + c) == values[256 * r + c]);
      CHECK(x_hi.f32(r * kLanes + c) == values[256 * r + 128 + c]);
    }
  }
  CHECK(vpack(OpId::kVpackCBf16, vec(x_hi), vec(x_lo)) == vx);  // exact round trip
  const Vreg sum_lo = valu_binary(OpId::kVaddF32, vec(valu_unary(OpId::kVunpackCLoBf16, vec(vy))), vec(x_lo));
  const Vreg sum_hi = valu_binary(OpId::kVaddF32, vec(valu_unary(OpId::kVunpackCHiBf16, vec(vy))), vec(x_hi));
  CHECK(vpack(OpId::kVpackCBf16, vec(sum_hi), vec(sum_lo)) == tiles(*expected));
}

TEST_CASE("vpu/valu corpus: vector_add_bf16_16x128 (x + 1 with bf16 ties) matches expected.bits") {
  const auto x = corpus_array("vector_add_bf16_16x128/inputs/x.bits.npy");
  const auto y = corpus_array("vector_add_bf16_16x128/inputs/y.bits.npy");
  const auto expected = corpus_array("vector_add_bf16_16x128/expected.bits.npy");
  if (!x || !y || !expected) return;
  // bf16[16,128]{1,0:T(8,128)(2,1)}: tile t = rows 8t..8t+7.
  const auto tiles = [](const NpyArray& a) {
    const auto bits = a.as_u16();
    return bf16_tiles([&](std::size_t t, std::size_t r, std::size_t c) { return bits[128 * (8 * t + r) + c]; });
  };
  const Vreg vx = tiles(*x);
  const Vreg vy = tiles(*y);
  const Vreg lo = valu_binary(OpId::kVaddF32, vec(valu_unary(OpId::kVunpackCLoBf16, vec(vy))),
                              vec(valu_unary(OpId::kVunpackCLoBf16, vec(vx))));
  const Vreg hi = valu_binary(OpId::kVaddF32, vec(valu_unary(OpId::kVunpackCHiBf16, vec(vy))),
                              vec(valu_unary(OpId::kVunpackCHiBf16, vec(vx))));
  std::size_t inexact = 0;
  for (std::size_t i = 0; i < kElements; ++i) {
    inexact += bf16_round(lo.f32(i)) != lo.f32(i) ? 1U : 0U;
    inexact += bf16_round(hi.f32(i)) != hi.f32(i) ? 1U : 0U;
  }
  CHECK(inexact > 100);  // the data exercises the pack's rounding
  CHECK(vpack(OpId::kVpackCBf16, vec(hi), vec(lo)) == tiles(*expected));
}

TEST_CASE("vpu/valu corpus: vector_add_f8's iota.1 kernel writes the f8 iota (pins the b16/b8 packing)") {
  const auto x = corpus_array("vector_add_f8/inputs/x.bits.npy");  // f8e4m3fn(arange(4096)), shape (8,512)
  if (!x) return;
  const auto codes = x->as_u8();
  REQUIRE(codes.size() == 4096);
  const Vreg iota = vlaneseq();
  for (std::size_t t = 0; t < 4; ++t) {
    INFO("tile " << t);
    const Vreg index =
        t == 0 ? iota : valu_binary(OpId::kVaddS32, splat(static_cast<std::uint32_t>(1024 * t)), vec(iota));
    // f8e4m3fn[4096]{0:T(1024)(128)(4,1)}: row r, column c of tile t = element 1024t + 128r + c.
    CHECK(f32_to_f8_packed(index_to_f32(index)) ==
          f8_tile([&](std::size_t r, std::size_t c) { return codes[1024 * t + 128 * r + c]; }));
  }
}

TEST_CASE("vpu/valu corpus: vector_add_f8's add.3 kernel matches expected.bits on every non-NaN input") {
  const auto x = corpus_array("vector_add_f8/inputs/x.bits.npy");
  const auto y = corpus_array("vector_add_f8/inputs/y.bits.npy");
  const auto expected = corpus_array("vector_add_f8/expected.bits.npy");
  if (!x || !y || !expected) return;
  const auto xc = x->as_u8();
  const auto yc = y->as_u8();
  const auto ec = expected->as_u8();
  std::size_t compared = 0;
  std::size_t nan_inputs = 0;
  for (std::size_t t = 0; t < 4; ++t) {
    // f8e4m3fn[8,512]{1,0:T(8,128)(4,1)}: tile t = columns 128t..128t+127, loaded with sm:$0x3.
    const auto at = [t](std::span<const std::uint8_t> codes) {
      return [t, codes](std::size_t r, std::size_t c) { return codes[512 * r + 128 * t + c]; };
    };
    const Vreg sum =
        valu_binary(OpId::kVaddF32, vec(f8_packed_to_f32(f8_tile(at(yc)))), vec(f8_packed_to_f32(f8_tile(at(xc)))));
    const Vreg packed = f32_to_f8_packed(sum);
    for (std::size_t r = 0; r < kSublanes; ++r) {
      for (std::size_t c = 0; c < kLanes; ++c) {
        const std::size_t i = 512 * r + 128 * t + c;
        // This replay leaves out the kernel's NaN fix-ups (vcmp/vsel on |x| > 29 and on
        // the fnuz NaN code); inputs that need them are covered by `tpuemu run-case
        // vector_add_f8`, which runs the real kernel (llo-corpus tests).
        if ((xc[i] & 0x7F) == 0x7F || (yc[i] & 0x7F) == 0x7F) {
          ++nan_inputs;
          continue;
        }
        INFO("row " << r << " column " << 128 * t + c << ": x 0x" << std::hex << int{xc[i]} << " y 0x" << int{yc[i]});
        CHECK(((packed.at(r / 4, c) >> (8 * (r % 4))) & 0xFF) == ec[i]);
        ++compared;
      }
    }
  }
  CHECK(compared > 400);
  CHECK(compared + nan_inputs == 4096);
}
