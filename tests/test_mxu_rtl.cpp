// The verilated RTL systolic array (mxu/rtl) co-simulated with the C++ MXU
// (mxu/mxu.hpp): identical f32 bits for every result (NaN: both NaN, the MXU
// contract leaves payloads open) and the documented cycle relation. SystemC
// elaborates once per process, so each TEST_CASE builds at most one RtlMxu
// (CTest runs each in its own process).
#include <array>
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/machine_classes.hpp"
#include "common/numerics.hpp"
#include "mxu/mxu.hpp"
#include "mxu/rtl/rtl_mxu.hpp"
#include "mxu/small_tile.hpp"
#include "tests/test_support.hpp"

using namespace tpuemu;
using mxu::rtl::RtlMxu;

namespace {

std::vector<std::uint32_t> cpp_mxu(std::uint32_t n, const std::vector<std::uint16_t>& w,
                                   const std::vector<std::uint16_t>& lhs) {
  return mxu::small_tile_reference(n, w, lhs);
}

bool is_nan(std::uint32_t bits) {
  return (bits & 0x7fff'ffffU) > 0x7f80'0000U;
}

bool same_result(std::uint32_t cpp, std::uint32_t rtl) {
  return is_nan(cpp) ? is_nan(rtl) : cpp == rtl;
}

// Value mixes for random tiles (bf16 bit patterns).
enum class Mix { kNormal, kAnyBits, kSpecials, kCancelling, kTiny, kHuge, kCount };

constexpr std::array<std::uint16_t, 18> kSpecialBf16 = {
    0x0000, 0x8000,  // +-0
    0x0001, 0x8001,  // +-smallest subnormal
    0x007f, 0x807f,  // +-largest subnormal
    0x0080, 0x8080,  // +-smallest normal
    0x7f7f, 0xff7f,  // +-largest finite
    0x7f80, 0xff80,  // +-Inf
    0x7fc0, 0x7f81,  // quiet, signalling NaN
    0xffc1, 0x3f80,  // negative NaN, 1
    0xbf80, 0x3380,  // -1, 2^-24
};

std::uint16_t with_exponent(std::mt19937_64& rng, std::uint32_t lo, std::uint32_t hi) {
  const auto exponent = std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
  return static_cast<std::uint16_t>((rng() & 0x807fU) | (exponent << 7));
}

std::uint16_t draw(Mix mix, std::mt19937_64& rng) {
  switch (mix) {
    case Mix::kNormal:
      return with_exponent(rng, 120, 134);
    case Mix::kAnyBits:
      return static_cast<std::uint16_t>(rng());
    case Mix::kSpecials:  // one value in 16 special, so that some results stay finite
      return rng() % 16 == 0 ? kSpecialBf16[rng() % kSpecialBf16.size()] : with_exponent(rng, 120, 134);
    case Mix::kCancelling:  // few magnitudes, both signs: partial sums cancel exactly or nearly
      return static_cast<std::uint16_t>((rng() % 2 == 0 ? 0x8000U : 0U) | ((126U + rng() % 3) << 7) | (rng() % 4));
    case Mix::kTiny:  // products underflow: subnormal, rounded, or zero
      return with_exponent(rng, 0, 80);
    case Mix::kHuge:  // some products and sums overflow, Inf - Inf
      return with_exponent(rng, 150, 200);
    case Mix::kCount:
      break;
  }
  return 0;
}

struct Tile {
  std::vector<std::uint16_t> w;
  std::vector<std::uint16_t> lhs;
};

Tile random_tile(std::uint32_t n, std::size_t rows, Mix mix, std::mt19937_64& rng) {
  Tile t;
  for (std::size_t i = 0; i < std::size_t{n} * n; ++i) t.w.push_back(draw(mix, rng));
  for (std::size_t i = 0; i < rows * n; ++i) t.lhs.push_back(draw(mix, rng));
  return t;
}

// What the C++ MXU charges (chip/semantics_mxu.cpp) from the first of
// `multiplies` back-to-back 8-row multiplies to the cycle the last result can
// be popped: one multiply every cycles_per_tile cycles, each result ready
// latency.mxu_matmul after its multiply issues.
std::uint64_t cpp_charge(std::uint64_t multiplies, std::uint64_t cycles_per_tile, std::uint64_t matmul_latency) {
  return (multiplies - 1) * cycles_per_tile + matmul_latency;
}

// The latency.mxu_matmul that makes the C++ MXU charge what an n x n array
// fed one row per cycle takes: the last of a multiply's 8 rows enters 7
// cycles after its first, and is popped result_latency(n) = 2n + 1 later.
std::uint64_t rtl_matmul_latency(std::uint32_t n) {
  return 2ULL * n + vpu::kSublanes;
}

// Kinds of the C++ MXU's results, to show what the random tiles reach.
struct Reached {
  std::size_t results = 0;
  std::size_t nan = 0;
  std::size_t inf = 0;
  std::size_t zero = 0;
  std::size_t subnormal = 0;

  void add(std::uint32_t bits) {
    const std::uint32_t magnitude = bits & 0x7fff'ffffU;
    ++results;
    nan += magnitude > 0x7f80'0000U ? 1 : 0;
    inf += magnitude == 0x7f80'0000U ? 1 : 0;
    zero += magnitude == 0 ? 1 : 0;
    subnormal += magnitude != 0 && magnitude < 0x0080'0000U ? 1 : 0;
  }
};

struct Comparison {
  std::size_t differing = 0;  // results whose bits differ (NaN: one side only)
  std::string first;          // the first difference
};

// Runs `tile` through both models and checks the RTL's cycle counts.
Comparison compare(RtlMxu& rtl, const Tile& tile, Reached& reached) {
  const std::uint32_t n = rtl.size();
  const mxu::rtl::TileRun run = rtl.run_tile(tile.w, tile.lhs);
  const std::vector<std::uint32_t> expected = cpp_mxu(n, tile.w, tile.lhs);
  REQUIRE(run.results.size() == expected.size());
  const std::size_t rows = tile.lhs.size() / n;
  CHECK(run.cycles == mxu::rtl::tile_cycles(n, rows));
  if (rows % vpu::kSublanes == 0) {
    CHECK(run.cycles == cpp_charge(rows / vpu::kSublanes, vpu::kSublanes, rtl_matmul_latency(n)));
  }
  CHECK(run.weight_cycles == n);
  Comparison cmp;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto got = std::bit_cast<std::uint32_t>(run.results[i]);
    reached.add(expected[i]);
    if (same_result(expected[i], got)) continue;
    if (cmp.differing++ == 0) {
      std::ostringstream s;
      s << "row " << i / n << " column " << i % n << ": C++ 0x" << std::hex << expected[i] << ", RTL 0x" << got;
      cmp.first = s.str();
    }
  }
  return cmp;
}

void random_tiles(std::uint32_t n, int tiles, std::uint64_t seed) {
  RtlMxu rtl(n);
  std::mt19937_64 rng(seed);
  Reached reached;
  for (int t = 0; t < tiles; ++t) {
    const auto mix = static_cast<Mix>(t % static_cast<int>(Mix::kCount));
    const std::size_t rows = 1 + rng() % 20;
    const Tile tile = random_tile(n, rows, mix, rng);
    INFO("tile " << t << " (mix " << static_cast<int>(mix) << ", " << rows << " rows)");
    const Comparison cmp = compare(rtl, tile, reached);
    INFO(cmp.first);
    CHECK(cmp.differing == 0);
  }
  // Every kind of result is reached, and finite non-zero ones dominate.
  INFO(reached.results << " results: " << reached.nan << " NaN, " << reached.inf << " Inf, " << reached.zero
                       << " zero, " << reached.subnormal << " subnormal");
  CHECK(reached.nan > 0);
  CHECK(reached.inf > 0);
  CHECK(reached.zero > 0);
  CHECK(reached.subnormal > 0);
  CHECK(reached.nan + reached.inf + reached.zero < reached.results / 2);
}

}  // namespace

TEST_CASE("rtl mxu 8x8: 120 random tiles equal the C++ MXU bit for bit in tile_cycles", "[rtl][cosim]") {
  random_tiles(8, 120, 11);
}

#if TPUEMU_MXU_RTL_HAS_16
TEST_CASE("rtl mxu 16x16: 60 random tiles equal the C++ MXU bit for bit in tile_cycles", "[rtl][cosim]") {
  random_tiles(16, 60, 12);
}
#endif

#if TPUEMU_MXU_RTL_HAS_128
TEST_CASE("rtl mxu 128x128: 4 random tiles equal the C++ MXU bit for bit in tile_cycles", "[rtl][cosim][slow]") {
  random_tiles(128, 4, 13);
}
#endif

TEST_CASE("rtl mxu 8x8: edge values give the IEEE results the C++ MXU gives", "[rtl][cosim]") {
  constexpr std::uint32_t n = 8;
  RtlMxu rtl(n);
  // Each case is one tile: every weight column holds `w` in K rows 0..3 (zero
  // below), the single LHS row holds `lhs` in K lanes 0..3 (zero beyond).
  struct Case {
    const char* what;
    std::array<std::uint16_t, 4> lhs;
    std::array<std::uint16_t, 4> w;
    std::uint32_t expected;  // f32 bits; any NaN matches 0x7fc00000
  };
  const std::vector<Case> cases = {
      {"-1 x +0: every product -0, the sum starts at +0", {0xbf80, 0xbf80, 0, 0}, {0, 0, 0, 0}, 0x0000'0000},
      {"max finite + max finite overflows", {0x7f7f, 0x7f7f, 0, 0}, {0x3f80, 0x3f80, 0, 0}, 0x7f80'0000},
      {"-max finite - max finite overflows", {0xff7f, 0xff7f, 0, 0}, {0x3f80, 0x3f80, 0, 0}, 0xff80'0000},
      {"max finite x 2 overflows in the product", {0x7f7f, 0, 0, 0}, {0x4000, 0, 0, 0}, 0x7f80'0000},
      {"Inf - Inf", {0x7f80, 0x7f80, 0, 0}, {0x3f80, 0xbf80, 0, 0}, 0x7fc0'0000},
      {"Inf x 0", {0x7f80, 0, 0, 0}, {0, 0, 0, 0}, 0x7fc0'0000},
      {"NaN input", {0x3f80, 0x7f81, 0x3f80, 0}, {0x3f80, 0x3f80, 0x3f80, 0}, 0x7fc0'0000},
      {"Inf + finite", {0xff80, 0x7f7f, 0, 0}, {0x3f80, 0x3f80, 0, 0}, 0xff80'0000},
      {"subnormal x 0.5 = 2^-134, exact", {0x0001, 0, 0, 0}, {0x3f00, 0, 0, 0}, 0x0000'8000},
      {"subnormal x 2^-16 = smallest subnormal", {0x0001, 0, 0, 0}, {0x3780, 0, 0, 0}, 0x0000'0001},
      {"2^-150 ties to even: 0", {0x0001, 0, 0, 0}, {0x3700, 0, 0, 0}, 0x0000'0000},
      {"3 x 2^-150 ties to even: 2 x 2^-149", {0x0003, 0, 0, 0}, {0x3700, 0, 0, 0}, 0x0000'0002},
      {"-2^-150 underflows to -0, +0 + -0 = +0", {0x8001, 0, 0, 0}, {0x3700, 0, 0, 0}, 0x0000'0000},
      {"subnormal + subnormal", {0x0040, 0x0040, 0, 0}, {0x3f80, 0x3f80, 0, 0}, 0x0080'0000},
      {"1 + 2^-24 ties to even (1), - 1 = +0", {0x3f80, 0x3380, 0xbf80, 0}, {0x3f80, 0x3f80, 0x3f80, 0}, 0x0000'0000},
      {"1 - 1 + 2^-24 keeps 2^-24", {0x3f80, 0xbf80, 0x3380, 0}, {0x3f80, 0x3f80, 0x3f80, 0}, 0x3380'0000},
      {"(1 + 3 x 2^-24) rounds up to 1 + 2^-22", {0x3f80, 0x3440, 0, 0}, {0x3f80, 0x3f80, 0, 0}, 0x3f80'0002},
      {"1.5 x 2^127 - max finite: huge operands, finite result",
       {0x7f00, 0xff7f, 0, 0},
       {0x3fc0, 0x3f80, 0, 0},
       0xfe7c'0000},
  };
  // Every weight column is equal, so all n results must agree.
  Tile tile;
  tile.w.assign(n * n, 0);
  for (const Case& cs : cases) {
    INFO(cs.what);
    for (std::size_t c = 0; c < n; ++c) {
      for (std::size_t k = 0; k < 4; ++k) tile.w[k * n + c] = cs.w[k];
    }
    tile.lhs.assign(n, 0);
    for (std::size_t k = 0; k < 4; ++k) tile.lhs[k] = cs.lhs[k];
    const mxu::rtl::TileRun run = rtl.run_tile(tile.w, tile.lhs);
    const std::vector<std::uint32_t> cpp = cpp_mxu(n, tile.w, tile.lhs);
    for (std::size_t c = 0; c < n; ++c) {
      const auto got = std::bit_cast<std::uint32_t>(run.results[c]);
      CHECK(same_result(cs.expected, got));
      CHECK(same_result(cpp[c], got));
    }
  }
}

TEST_CASE("rtl mxu 8x8: double buffering and back-pressure follow the handshakes", "[rtl][protocol]") {
  constexpr std::uint32_t n = 8;
  RtlMxu rtl(n);
  std::mt19937_64 rng(21);
  // Tile a streams exactly as long as the latch wave plus tile b's weight load.
  const std::size_t a_rows = mxu::rtl::latch_wave_cycles(n) + 1 + n;
  const Tile a = random_tile(n, a_rows, Mix::kNormal, rng);
  const Tile b = random_tile(n, 12, Mix::kNormal, rng);
  const auto weight_row = [&](const Tile& t, std::size_t i) {  // K row n-1 first
    return std::vector<std::uint16_t>(t.w.begin() + static_cast<std::ptrdiff_t>((n - 1 - i) * n),
                                      t.w.begin() + static_cast<std::ptrdiff_t>((n - i) * n));
  };
  std::vector<std::vector<std::uint16_t>> lhs_rows;
  for (const Tile* t : {&a, &b}) {
    for (std::size_t r = 0; r < t->lhs.size() / n; ++r) {
      lhs_rows.emplace_back(t->lhs.begin() + static_cast<std::ptrdiff_t>(r * n),
                            t->lhs.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
    }
  }

  // 1. Tile a's weights, one row per edge.
  for (std::size_t i = 0; i < n; ++i) {
    mxu::rtl::EdgeInputs in;
    in.w_valid = true;
    in.w_row = weight_row(a, i);
    REQUIRE(rtl.step(in).w_accepted);
  }

  // 2. Both tiles' rows on consecutive edges; b's weights load while a streams, as soon as w_ready allows.
  std::vector<float> results;
  std::vector<std::uint64_t> push_edges;
  std::vector<std::uint64_t> pop_edges;
  std::vector<std::uint64_t> weight_edges;
  mxu::rtl::EdgeResult last;
  while (pop_edges.size() < lhs_rows.size()) {
    mxu::rtl::EdgeInputs in;
    if (push_edges.size() < lhs_rows.size()) {
      in.lhs_valid = true;
      in.lhs_latch = push_edges.empty() || push_edges.size() == a_rows;
      in.lhs_row = lhs_rows[push_edges.size()];
    }
    if (weight_edges.size() < n) {
      in.w_valid = true;
      in.w_row = weight_row(b, weight_edges.size());
    }
    in.res_pop = last.res_valid;
    const std::vector<float> head = last.res_row;
    last = rtl.step(in);
    if (last.lhs_accepted) push_edges.push_back(rtl.cycle());
    if (last.w_accepted) weight_edges.push_back(rtl.cycle());
    if (last.popped) {
      pop_edges.push_back(rtl.cycle());
      results.insert(results.end(), head.begin(), head.end());
    }
    REQUIRE(rtl.cycle() < 1000);
  }
  CHECK_FALSE(last.busy);
  const std::uint64_t e0 = push_edges.front();
  for (std::size_t i = 0; i < lhs_rows.size(); ++i) {
    CHECK(push_edges[i] == e0 + i);
    CHECK(pop_edges[i] == push_edges[i] + mxu::rtl::result_latency(n));
  }
  for (std::size_t i = 0; i < n; ++i) CHECK(weight_edges[i] == e0 + mxu::rtl::latch_wave_cycles(n) + 1 + i);
  // Rows of a used a's weights, rows of b (latched right after a's last row) b's.
  std::vector<std::uint32_t> expected = cpp_mxu(n, a.w, a.lhs);
  const std::vector<std::uint32_t> expected_b = cpp_mxu(n, b.w, b.lhs);
  expected.insert(expected.end(), expected_b.begin(), expected_b.end());
  REQUIRE(results.size() == expected.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    differing += same_result(expected[i], std::bit_cast<std::uint32_t>(results[i])) ? 0 : 1;
  }
  CHECK(differing == 0);

  // 3. A weight row offered with a latching push waits.
  mxu::rtl::EdgeInputs both;
  both.w_valid = true;
  both.w_row = weight_row(a, 0);
  both.lhs_valid = true;
  both.lhs_latch = true;
  both.lhs_row = lhs_rows[0];
  const mxu::rtl::EdgeResult r = rtl.step(both);
  CHECK(r.lhs_accepted);
  CHECK_FALSE(r.w_accepted);

  // 4. Without pops, pushes stop once fifo_rows rows are unpopped (the one above counts).
  mxu::rtl::EdgeInputs push;
  push.lhs_valid = true;
  push.lhs_row = lhs_rows[1];
  std::uint64_t accepted = 1;
  for (std::uint32_t i = 0; i < 3 * n + 20; ++i) {
    last = rtl.step(push);
    accepted += last.lhs_accepted ? 1 : 0;
  }
  CHECK(accepted == mxu::rtl::fifo_rows(n));
  CHECK(last.res_valid);
  CHECK_FALSE(last.busy);
  // A pop frees a row for the push on the next edge, not the same one.
  push.res_pop = true;
  last = rtl.step(push);
  CHECK(last.popped);
  CHECK_FALSE(last.lhs_accepted);
  push.res_pop = false;
  CHECK(rtl.step(push).lhs_accepted);
  CHECK_FALSE(rtl.step(push).lhs_accepted);
}

TEST_CASE("rtl mxu 8x8: the VCD holds the skew and PE and FIFO registers", "[rtl][vcd]") {
  const std::string path = "mxu_rtl_8x8.vcd";
  std::mt19937_64 rng(5);
  {
    RtlMxu rtl(8, path);
    const Tile tile = random_tile(8, 8, Mix::kNormal, rng);
    const mxu::rtl::TileRun run = rtl.run_tile(tile.w, tile.lhs);
    CHECK(run.cycles == mxu::rtl::tile_cycles(8, 8));
  }
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string vcd = text.str();
  for (const char* needle : {"$enddefinitions", "$scope module skew", "$scope module row", "$scope module pe", " a_q ",
                             " psum_q ", " w_shadow_q ", " w_active_q ", " lhs_row ", " res_row ", " busy "}) {
    INFO(needle);
    CHECK(vcd.find(needle) != std::string::npos);
  }
  // Value changes over the whole run: reset (2) + weights (8) + 8 rows + latency + pop.
  std::size_t timestamps = 0;
  for (std::size_t at = vcd.find("\n#"); at != std::string::npos; at = vcd.find("\n#", at + 1)) ++timestamps;
  CHECK(timestamps >= 2 + 8 + mxu::rtl::tile_cycles(8, 8));
}

TEST_CASE("rtl mxu: one array per process and only of a built size", "[rtl]") {
  CHECK_THROWS_AS(RtlMxu(7), std::invalid_argument);
  RtlMxu rtl(8);
  CHECK(rtl.cycle() == 2);  // the reset cycles
  CHECK_THROWS_AS(RtlMxu(8), std::logic_error);
  CHECK_THROWS_AS(rtl.run_tile(std::vector<std::uint16_t>(63), std::vector<std::uint16_t>(8)), std::invalid_argument);
  CHECK_THROWS_AS(rtl.run_tile(std::vector<std::uint16_t>(64), std::vector<std::uint16_t>(12)), std::invalid_argument);
}

TEST_CASE("rtl mxu timing: every preset's MXU charges what an RTL array of its size takes", "[rtl][timing]") {
  // Each preset feeds one LHS row per cycle, the RTL's rate, and its
  // latency.mxu_matmul is the RTL's 2 x size + 8, so the C++ MXU's charge for
  // back-to-back multiplies equals tile_cycles for every count.
  for (const char* name : {"edu", "v4p", "v5e", "v5p", "v6e"}) {
    const ChipConfig chip = test::preset(name);
    INFO(name);
    CHECK(chip.mxu.cycles_per_tile == vpu::kSublanes);
    CHECK(chip.latency(LatencyClass::kMxuMatmul).value() ==
          rtl_matmul_latency(static_cast<std::uint32_t>(chip.mxu.size)));
    for (std::uint64_t multiplies = 1; multiplies <= 64; ++multiplies) {
      const std::uint64_t rows = multiplies * vpu::kSublanes;
      INFO(multiplies << " multiplies");
      CHECK(mxu::rtl::tile_cycles(static_cast<std::uint32_t>(chip.mxu.size), rows) ==
            cpp_charge(multiplies, chip.mxu.cycles_per_tile, chip.latency(LatencyClass::kMxuMatmul).value()));
    }
  }
  // edu's weight path and latch wave are the RTL's (the in-chip co-simulation checks them cycle by cycle).
  const ChipConfig edu = test::preset("edu");
  CHECK(edu.latency(LatencyClass::kMxuPush).value() == vpu::kSublanes);
  CHECK(edu.mxu.latch_wave_cycles == mxu::rtl::latch_wave_cycles(8) + 1);
  CHECK(mxu::rtl::tile_cycles(8, 1) == 17);
  CHECK(mxu::rtl::tile_cycles(16, 20) == 52);
}
