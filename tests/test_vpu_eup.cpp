// vpu/eup: the documented approximations of vpow2, vrcp and vtanh, their
// special values, and the lane-wise application.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "isa/op_table.hpp"
#include "vpu/eup.hpp"
#include "vpu/valu.hpp"
#include "vpu_test_support.hpp"

using namespace tpuemu;
using namespace tpuemu::vpu;
using namespace tpuemu::vpu::test;
using isa::OpId;

namespace {

constexpr std::uint32_t kQuietNan = 0x7FC0'0000U;
constexpr float kInfinity = std::numeric_limits<float>::infinity();

struct EupCase {
  OpId op;
  std::uint32_t in, out;
};

const std::vector<EupCase> kCases = {
    {OpId::kVpow2F32, bits_of(0.0F), bits_of(1.0F)},
    {OpId::kVpow2F32, bits_of(-0.0F), bits_of(1.0F)},
    {OpId::kVpow2F32, bits_of(10.0F), bits_of(1024.0F)},  // integer powers exact
    {OpId::kVpow2F32, bits_of(-126.0F), 0x0080'0000U},
    {OpId::kVpow2F32, bits_of(-149.0F), 0x0000'0001U},  // smallest subnormal
    {OpId::kVpow2F32, bits_of(-150.0F), 0},             // half of it: tie, to even
    {OpId::kVpow2F32, bits_of(127.0F), 0x7F00'0000U},
    {OpId::kVpow2F32, bits_of(128.0F), bits_of(kInfinity)},
    {OpId::kVpow2F32, bits_of(0.5F), bits_of(static_cast<float>(std::sqrt(2.0)))},
    {OpId::kVpow2F32, bits_of(-kInfinity), 0},
    {OpId::kVpow2F32, bits_of(kInfinity), bits_of(kInfinity)},
    {OpId::kVpow2F32, 0x7F80'0001U, kQuietNan},
    {OpId::kVrcpF32, bits_of(2.0F), bits_of(0.5F)},
    {OpId::kVrcpF32, bits_of(3.0F), bits_of(1.0F / 3.0F)},  // correctly rounded 1/3
    {OpId::kVrcpF32, bits_of(-4.0F), bits_of(-0.25F)},
    {OpId::kVrcpF32, bits_of(0.0F), bits_of(kInfinity)},
    {OpId::kVrcpF32, bits_of(-0.0F), bits_of(-kInfinity)},
    {OpId::kVrcpF32, bits_of(kInfinity), 0},
    {OpId::kVrcpF32, bits_of(-kInfinity), 0x8000'0000U},
    {OpId::kVrcpF32, bits_of(0x1p126F), 0x0080'0000U},  // 2^-126, what softmax's fix-up forces
    {OpId::kVrcpF32, bits_of(0x1p127F), 0x0040'0000U},  // subnormal result kept
    {OpId::kVrcpF32, 0x0000'0001U, bits_of(kInfinity)},      // 2^149 overflows
    {OpId::kVrcpF32, 0xFFC1'2345U, kQuietNan},
    {OpId::kVtanhF32, bits_of(0.0F), bits_of(0.0F)},
    {OpId::kVtanhF32, bits_of(-0.0F), 0x8000'0000U},
    {OpId::kVtanhF32, bits_of(0.5F), bits_of(static_cast<float>(std::tanh(0.5)))},
    {OpId::kVtanhF32, bits_of(-0.5F), bits_of(static_cast<float>(std::tanh(-0.5)))},
    {OpId::kVtanhF32, bits_of(20.0F), bits_of(1.0F)},
    {OpId::kVtanhF32, bits_of(kInfinity), bits_of(1.0F)},
    {OpId::kVtanhF32, bits_of(-kInfinity), bits_of(-1.0F)},
    {OpId::kVtanhF32, 0x0000'0001U, 0x0000'0001U},  // tanh(x) = x for tiny x
    {OpId::kVtanhF32, 0x7FC0'0001U, kQuietNan},
};

}  // namespace

TEST_CASE("vpu/eup: hand-computed values and special values, scalar and lane-wise") {
  for (const EupCase& c : kCases) {
    INFO(isa::mnemonic_text(c.op, 0) << " 0x" << std::hex << c.in << " -> 0x" << c.out);
    const float in = f32_of(c.in);
    const float scalar = c.op == OpId::kVpow2F32 ? eup_pow2(in) : c.op == OpId::kVrcpF32 ? eup_rcp(in) : eup_tanh(in);
    CHECK(bits_of(scalar) == c.out);
    const Vreg out = eup_apply(c.op, vstv(c.in));
    for (std::size_t i = 0; i < kElements; ++i) CHECK(out.words[i] == c.out);
  }
}

TEST_CASE("vpu/eup: the functions are the double-precision ones rounded once, element by element") {
  Vreg in;
  for (std::size_t i = 0; i < kElements; ++i) in.set_f32(i, (static_cast<float>(i) - 512.0F) / 37.0F);
  const Vreg pow2 = eup_apply(OpId::kVpow2F32, in);
  const Vreg rcp = eup_apply(OpId::kVrcpF32, in);
  const Vreg tanh = eup_apply(OpId::kVtanhF32, in);
  for (std::size_t i = 0; i < kElements; ++i) {
    const float x = in.f32(i);
    INFO("x = " << x);
    CHECK(pow2.f32(i) == static_cast<float>(std::exp2(static_cast<double>(x))));
    CHECK(rcp.f32(i) == 1.0F / x);
    CHECK(tanh.f32(i) == static_cast<float>(std::tanh(static_cast<double>(x))));
  }
}

TEST_CASE("vpu/eup: eup_apply: other ops throw naming the mnemonic") {
  const Vreg zero;
  CHECK_THROWS_AS(eup_apply(OpId::kVpopEup, zero), std::invalid_argument);
  CHECK_THROWS_WITH(eup_apply(OpId::kVpopEup, zero), Catch::Contains("eup_apply: vpop.eup is not an EUP op"));
  CHECK_THROWS_WITH(eup_apply(OpId::kVaddF32, zero), Catch::Contains("vadd.f32"));
  int accepted = 0;
  for (const isa::OpInfo& info : isa::op_table()) {
    try {
      eup_apply(info.id, zero);
      ++accepted;
    } catch (const std::invalid_argument&) {
    }
  }
  CHECK(accepted == 3);
}
