// vpu/xlu: lane rotation, lane permutation, the transposer's chunk patterns
// and errors, and the corpus kernels that use them replayed op by op.
#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "common/numerics.hpp"
#include "isa/op_table.hpp"
#include "vpu/valu.hpp"
#include "vpu/xlu.hpp"
#include "vpu_test_support.hpp"

using namespace tpuemu;
using namespace tpuemu::vpu;
using namespace tpuemu::vpu::test;
using isa::OpId;

namespace {

constexpr std::uint32_t kJunk = 0xDEAD'BEEFU;

// Element (s, l) = base + 1000 s + l: every element distinct and traceable.
Vreg numbered(std::uint32_t base) {
  Vreg v;
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t l = 0; l < kLanes; ++l) v.at(s, l) = base + static_cast<std::uint32_t>(1000 * s + l);
  }
  return v;
}

TransposeChunk chunk(std::uint32_t index, std::uint32_t count, std::uint32_t width, bool narrow = false) {
  OpId op = OpId::kVxposeCont;
  if (count == 1) {
    op = OpId::kVxposeStartEnd;
  } else if (index == 1) {
    op = OpId::kVxposeStart;
  } else if (index == count) {
    op = OpId::kVxposeEnd;
  }
  return TransposeChunk{op, index, count, width, narrow};
}

// Feeds `inputs` as one transpose and returns the pops.
std::vector<Vreg> transpose(const std::vector<Vreg>& inputs, std::uint32_t width, bool narrow) {
  Transposer transposer;
  const auto count = static_cast<std::uint32_t>(inputs.size());
  for (std::uint32_t i = 1; i < count; ++i)
    REQUIRE(transposer.feed(chunk(i, count, width, narrow), inputs[i - 1]).empty());
  std::vector<Vreg> pops = transposer.feed(chunk(count, count, width, narrow), inputs.back());
  CHECK_FALSE(transposer.in_progress());
  return pops;
}

// Pop k, element (s, j) = row j, column 8k + s of the stacked input; zero
// outside the stacked rows and the width.
void check_transpose(const std::vector<Vreg>& inputs, std::uint32_t width, const std::vector<Vreg>& pops) {
  REQUIRE(pops.size() == (width + 7) / 8);
  const std::size_t rows = 8 * inputs.size();
  for (std::size_t k = 0; k < pops.size(); ++k) {
    for (std::size_t s = 0; s < kSublanes; ++s) {
      for (std::size_t j = 0; j < kLanes; ++j) {
        const std::size_t column = 8 * k + s;
        const std::uint32_t expected = j < rows && column < width ? inputs[j / 8].at(j % 8, column) : 0;
        INFO("pop " << k << " sublane " << s << " lane " << j);
        CHECK(pops[k].at(s, j) == expected);
      }
    }
  }
}

}  // namespace

TEST_CASE("vpu/xlu: rotate_lanes: lane j moves to (j + amount) mod 128") {
  const Vreg v = numbered(0);
  CHECK(rotate_lanes(v, 0) == v);
  CHECK(rotate_lanes(v, 128) == v);
  for (std::uint32_t amount : {1U, 88U, 127U, 200U, 0xFFFF'FFFFU}) {
    const Vreg r = rotate_lanes(v, amount);
    for (std::size_t s = 0; s < kSublanes; ++s) {
      for (std::size_t j = 0; j < kLanes; ++j) {
        INFO("amount " << amount << " sublane " << s << " lane " << j);
        CHECK(r.at(s, (j + amount % 128) % 128) == v.at(s, j));
      }
    }
  }
  CHECK(rotate_lanes(v, 88).at(2, 0) == v.at(2, 40));  // `aligned_sublanes <<< 40`
}

TEST_CASE("vpu/xlu: permute_lanes: result(s, l) = source(s, pattern(s, l) & 127)") {
  const Vreg source = numbered(0);
  Vreg reverse;
  Vreg wrapped;
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t l = 0; l < kLanes; ++l) {
      reverse.at(s, l) = static_cast<std::uint32_t>(127 - l);
      wrapped.at(s, l) = static_cast<std::uint32_t>(128 * (s + 1) + l);  // only the low 7 bits count
    }
  }
  const Vreg reversed = permute_lanes(source, reverse);
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t l = 0; l < kLanes; ++l) CHECK(reversed.at(s, l) == source.at(s, 127 - l));
  }
  CHECK(permute_lanes(source, wrapped) == source);
}

TEST_CASE("vpu/xlu: permute_lanes: softmax's broadcast of element s across sublane s") {
  // fusion kernel: pattern = vlaneseq >> 7 (the sublane index), source = an f32[8] row loaded with ss:$0.
  const Vreg pattern = valu_binary(OpId::kVshrlU32, vec(vlaneseq()), splat(7));
  Vreg row;
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t l = 0; l < kLanes; ++l) row.at(s, l) = static_cast<std::uint32_t>(l < 8 ? 100 + l : kJunk);
  }
  const Vreg broadcast = permute_lanes(row, pattern);
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t l = 0; l < kLanes; ++l) CHECK(broadcast.at(s, l) == 100 + s);
  }
}

TEST_CASE("vpu/xlu: Transposer: one 8x128 chunk (short, width 128) gives 16 pops, lanes 0..7 valid") {
  const std::vector<Vreg> inputs = {numbered(1)};
  const auto pops = transpose(inputs, 128, false);
  check_transpose(inputs, 128, pops);
  CHECK(pops[3].at(2, 5) == inputs[0].at(5, 26));
}

TEST_CASE("vpu/xlu: Transposer: two chunks (16x128) give 16 pops, lanes 0..15 valid") {
  const std::vector<Vreg> inputs = {numbered(1), numbered(500'000)};
  const auto pops = transpose(inputs, 128, false);
  check_transpose(inputs, 128, pops);
  CHECK(pops[15].at(7, 12) == inputs[1].at(4, 127));
}

TEST_CASE("vpu/xlu: Transposer: 16 narrow chunks of width 8 give one pop, lanes >= width ignored") {
  std::vector<Vreg> inputs;
  for (std::uint32_t i = 0; i < 16; ++i) {
    Vreg v = numbered(10'000 * i);
    for (std::size_t s = 0; s < kSublanes; ++s) {
      for (std::size_t l = 8; l < kLanes; ++l) v.at(s, l) = kJunk;
    }
    inputs.push_back(v);
  }
  const auto pops = transpose(inputs, 8, true);
  check_transpose(inputs, 8, pops);
  CHECK(pops[0].at(6, 127) == inputs[15].at(7, 6));
}

TEST_CASE("vpu/xlu: Transposer: a width that is not a multiple of 8 zeroes the missing rows") {
  const std::vector<Vreg> inputs = {numbered(1), numbered(2), numbered(3)};
  const auto pops = transpose(inputs, 12, false);
  check_transpose(inputs, 12, pops);
  CHECK(pops[1].at(4, 0) == 0);
}

TEST_CASE("vpu/xlu: Transposer: malformed chunk sequences throw and leave the transposer unchanged") {
  const Vreg v = numbered(0);
  Transposer t;
  const auto rejects = [&](const TransposeChunk& c, const char* why) {
    INFO(why);
    CHECK_THROWS_AS(t.feed(c, v), std::runtime_error);
  };
  rejects(chunk(2, 16, 8, true), "a cont with no transpose in progress");
  rejects(chunk(16, 16, 8, true), "an end with no transpose in progress");
  rejects(chunk(1, 17, 8, true), "too many chunks");
  rejects(chunk(1, 0, 8, true), "zero chunks");
  rejects(TransposeChunk{OpId::kVxposeStart, 0, 2, 8, true}, "index 0");
  rejects(TransposeChunk{OpId::kVxposeEnd, 3, 2, 8, true}, "index beyond count");
  rejects(chunk(1, 1, 0), "width 0");
  rejects(chunk(1, 1, 129), "width 129");
  rejects(TransposeChunk{OpId::kVxposeStart, 1, 1, 128, false}, "start for a single chunk");
  rejects(TransposeChunk{OpId::kVxposeStartEnd, 1, 2, 128, false}, "start.end for the first of two");
  rejects(TransposeChunk{OpId::kVxposeCont, 2, 2, 128, false}, "cont for the last chunk");
  CHECK_FALSE(t.in_progress());

  REQUIRE(t.feed(chunk(1, 3, 8, true), v).empty());
  rejects(chunk(3, 3, 8, true), "skipped chunk");
  rejects(chunk(1, 3, 8, true), "a new start in the middle");
  rejects(chunk(2, 3, 16, true), "mixed widths");
  rejects(chunk(2, 3, 8, false), "mixed flags");
  rejects(chunk(2, 4, 8, true), "mixed counts");
  CHECK_THROWS_WITH(t.feed(chunk(3, 3, 8, true), v), Catch::Contains("out of order: expected chunk 2/3"));
  CHECK_THROWS_WITH(t.feed(chunk(2, 3, 16, true), v), Catch::Contains("differs from the transpose's first chunk"));
  CHECK(t.in_progress());
  REQUIRE(t.feed(chunk(2, 3, 8, true), v).empty());  // the sequence goes on after the rejected chunks
  CHECK(t.feed(chunk(3, 3, 8, true), v).size() == 1);

  REQUIRE(t.feed(chunk(1, 2, 128), v).empty());
  t.reset();
  CHECK_FALSE(t.in_progress());
  CHECK(t.feed(chunk(1, 1, 128), v).size() == 16);

  CHECK_THROWS_AS(t.feed(TransposeChunk{OpId::kVaddF32, 1, 1, 128, false}, v), std::invalid_argument);
  CHECK_THROWS_WITH(t.feed(TransposeChunk{OpId::kVaddF32, 1, 1, 128, false}, v),
                    Catch::Contains("vadd.f32 is not a vxpose op"));
}

// ---------------------------------------------------------------------------
// Corpus kernels replayed op by op.

namespace {

// Sums the pops in order (the first plus `init`), then folds the sublanes with
// vrot.slane 4, 2, 1: every sublane's lane j ends with the sum of row j.
Vreg sum_pops_and_fold(const std::vector<Vreg>& pops, const Vreg& init) {
  Vreg acc = valu_binary(OpId::kVaddF32, vec(pops[0]), vec(init));
  for (std::size_t k = 1; k < pops.size(); ++k) acc = valu_binary(OpId::kVaddF32, vec(acc), vec(pops[k]));
  for (std::uint32_t amount : {4U, 2U, 1U}) acc = valu_binary(OpId::kVaddF32, vec(vrot_slane(acc, amount)), vec(acc));
  return acc;
}

}  // namespace

TEST_CASE("vpu/xlu corpus: reduce_row_f32's reduce.7 (row sum via transpose) matches expected.npy") {
  const auto x = corpus_array("reduce_row_f32/inputs/x.npy");
  const auto expected = corpus_array("reduce_row_f32/expected.npy");
  if (!x || !expected) return;
  Vreg vx;
  for (std::size_t i = 0; i < kElements; ++i) vx.set_f32(i, x->as_f32()[i]);
  const Vreg init = vstv(bits_of(0.0F));
  Transposer t;
  const auto pops = t.feed(chunk(1, 1, 128), valu_binary(OpId::kVaddF32, vec(vx), vec(init)));
  REQUIRE(pops.size() == 16);
  const Vreg sums = sum_pops_and_fold(pops, init);
  const auto want = expected->as_f32();
  REQUIRE(want.size() == 8);
  for (std::size_t j = 0; j < 8; ++j) CHECK(sums.f32(j) == want[j]);
}

TEST_CASE("vpu/xlu corpus: lane_reduce_bf16's reduce (unpack, 2-chunk transpose, pack) matches expected.bits") {
  const auto x = corpus_array("lane_reduce_bf16/inputs/x.bits.npy");
  const auto expected = corpus_array("lane_reduce_bf16/expected.bits.npy");
  if (!x || !expected) return;
  const auto bits = x->as_u16();
  // bf16[16,128]{1,0:T(8,128)(2,1)} in VMEM: tile t = rows 8t..8t+7, one coalesced vld.
  const Vreg packed =
      bf16_tiles([&](std::size_t t, std::size_t r, std::size_t c) { return bits[128 * (8 * t + r) + c]; });
  const Vreg init = valu_unary(OpId::kVunpackILoBf16, vec(vstv(f32_to_bf16_bits(0.0F))));
  const Vreg rows_0_7 = valu_binary(OpId::kVaddF32, vec(valu_unary(OpId::kVunpackCLoBf16, vec(packed))), vec(init));
  const Vreg rows_8_15 = valu_binary(OpId::kVaddF32, vec(valu_unary(OpId::kVunpackCHiBf16, vec(packed))), vec(init));
  Transposer t;
  REQUIRE(t.feed(chunk(1, 2, 128), rows_0_7).empty());
  const auto pops = t.feed(chunk(2, 2, 128), rows_8_15);
  REQUIRE(pops.size() == 16);
  const Vreg sums = sum_pops_and_fold(pops, init);
  // vst sm:$0x1 of the sums over a buffer holding `init`, vld sm:$0x3: row 0 = sums, row 1 = init.
  Vreg staged;
  for (std::size_t l = 0; l < kLanes; ++l) {
    staged.at(0, l) = sums.at(0, l);
    staged.at(1, l) = init.at(1, l);
  }
  const Vreg out = vpack(OpId::kVpackCBf16, splat(bits_of(0.0F)), vec(staged));
  // bf16[16]: element j is row 0, column j of the packed tile = the low half of word (0, j).
  const auto want = expected->as_u16();
  REQUIRE(want.size() == 16);
  for (std::size_t j = 0; j < 16; ++j) {
    INFO("row " << j);
    CHECK((out.at(0, j) & 0xFFFFU) == want[j]);
  }
}

TEST_CASE("vpu/xlu corpus: matmul_bf16_rhs_transpose's pops, pushed last first, are y.T as MXU weights") {
  const auto x = corpus_array("matmul_bf16_rhs_transpose/inputs/x.npy");
  const auto y = corpus_array("matmul_bf16_rhs_transpose/inputs/y.bits.npy");
  const auto expected = corpus_array("matmul_bf16_rhs_transpose/expected.npy");
  if (!x || !y || !expected) return;
  const auto ybits = y->as_u16();
  // bf16[8,128] loaded with sm:$0xf: one tile in sublanes 0-3.
  const Vreg packed = bf16_tiles(
      [&](std::size_t t, std::size_t r, std::size_t c) -> std::uint16_t { return t == 0 ? ybits[128 * r + c] : 0; });
  Transposer t;
  const auto pops = t.feed(chunk(1, 1, 128), valu_unary(OpId::kVunpackCLoBf16, vec(packed)));
  REQUIRE(pops.size() == 16);
  // The last push (pop 0) holds K rows 0..7: weight (k, n) = pop k/8, sublane k mod 8, lane n.
  const auto weight = [&](std::size_t k, std::size_t n) { return pops[k / 8].f32(k % 8 * kLanes + n); };
  for (std::size_t k = 0; k < 128; ++k) {
    for (std::size_t n = 0; n < kLanes; ++n) {
      INFO("k " << k << " n " << n);
      CHECK(weight(k, n) == (n < 8 ? bf16_bits_to_f32(ybits[128 * n + k]) : 0.0F));
    }
  }
  const auto xs = x->as_f32();
  const auto want = expected->as_f32();
  for (std::size_t i = 0; i < 8; ++i) {
    for (std::size_t n = 0; n < 8; ++n) {
      double sum = 0;  // exact: integer products and sums below 2^53
      for (std::size_t k = 0; k < 128; ++k) sum += static_cast<double>(xs[128 * i + k]) * weight(k, n);
      CHECK(static_cast<float>(sum) == want[8 * i + n]);
    }
  }
}

TEST_CASE("vpu/xlu corpus: linear_f32's reshape.2 (lane rotations) and copy (16 narrow chunks) build w.T") {
  const auto w = corpus_array("linear_f32/inputs/w.npy");  // arange(1024).reshape(128, 8)
  if (!w) return;
  const auto ws = w->as_f32();
  REQUIRE(ws.size() == 1024);

  // reshape.2: f32[1024] as one vreg; w row 16i + m = lanes 8m..8m+7 of sublane i,
  // brought to lanes 0..7 by a rotation of 128 - 8m and stored under vcmask 64512.
  Vreg flat;
  for (std::size_t e = 0; e < kElements; ++e) flat.set_f32(e, ws[e]);
  const Vmask lanes_0_7 = vcmask(64512);
  std::vector<Vreg> w_rows(16);  // f32[128,8]{1,0:T(8,128)}: vreg i = rows 8i..8i+7
  for (auto& v : w_rows) v.words.fill(kJunk);
  for (std::uint32_t m = 0; m < 16; ++m) {
    const Vreg rotated = m == 0 ? flat : rotate_lanes(flat, 128 - 8 * m);
    for (std::size_t i = 0; i < kSublanes; ++i) {
      const std::size_t row = 16 * i + m;
      for (std::size_t l = 0; l < kLanes; ++l) {
        if (lanes_0_7.at(i, l)) w_rows[row / 8].at(row % 8, l) = rotated.at(i, l);
      }
    }
  }
  for (std::size_t row = 0; row < 128; ++row) {
    for (std::size_t c = 0; c < 8; ++c) CHECK(w_rows[row / 8].f32(row % 8 * kLanes + c) == ws[8 * row + c]);
  }

  // copy: 16 narrow chunks of width 8 -> one pop = w.T, the f32[128,8]{0,1} tile.
  const auto pops = transpose(w_rows, 8, true);
  REQUIRE(pops.size() == 1);
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t l = 0; l < kLanes; ++l) CHECK(pops[0].f32(s * kLanes + l) == ws[8 * l + s]);
  }
}
