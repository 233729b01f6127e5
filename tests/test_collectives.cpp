// Collective program generators (programs/collectives.hpp) and their host
// reference (programs/collective_reference.hpp), plain C++: sizes and errors,
// every generated program assembles and fits its chip, the reference against
// independent expectations, the book's predictions.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/numerics.hpp"
#include "isa/assembler.hpp"
#include "isa/checker.hpp"
#include "programs/collective_algorithm.hpp"
#include "programs/collective_reference.hpp"
#include "programs/collectives.hpp"
#include "tests/test_support.hpp"

using namespace tpuemu;
using namespace tpuemu::programs;
using Catch::Contains;

namespace {

using test::preset;

ici::Topology topo(const std::string& chip, const std::string& shape) {
  return ici::make_topology(ici::TopologyRequest{shape, std::nullopt, false}, preset(chip));
}

CollectiveSpec spec(std::string op, std::string algorithm, std::string dtype, std::uint64_t bytes,
                    std::vector<std::size_t> axes, std::uint64_t piece = 0) {
  return CollectiveSpec{std::move(op), std::move(algorithm), std::move(dtype), bytes, std::move(axes), piece};
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no exception>";
}

// Chip inputs filled by value(chip, element index) as f32 or bf16.
template <class F>
std::vector<std::vector<std::uint8_t>> inputs_of(const ici::Topology& t, std::uint64_t bytes, bool bf16, F&& value) {
  std::vector<std::vector<std::uint8_t>> in(t.chip_count(), std::vector<std::uint8_t>(bytes));
  for (std::uint32_t c = 0; c < t.chip_count(); ++c) {
    for (std::uint64_t e = 0; e < bytes / (bf16 ? 2 : 4); ++e) {
      const float v = value(c, e);
      if (bf16) {
        const std::uint16_t b = f32_to_bf16_bits(v);
        std::memcpy(in[c].data() + 2 * e, &b, 2);
      } else {
        std::memcpy(in[c].data() + 4 * e, &v, 4);
      }
    }
  }
  return in;
}

float element(const std::vector<std::uint8_t>& bytes, std::uint64_t e, bool bf16) {
  if (bf16) {
    std::uint16_t b = 0;
    std::memcpy(&b, bytes.data() + 2 * e, 2);
    return bf16_bits_to_f32(b);
  }
  float v = 0;
  std::memcpy(&v, bytes.data() + 4 * e, 4);
  return v;
}

// Group rank of a chip and the chip of a rank in its group (first listed axis fastest).
std::uint64_t rank_of(const ici::Topology& t, const std::vector<std::size_t>& axes, std::uint32_t chip) {
  const ici::Coords c = t.coords(ChipId(chip));
  std::uint64_t r = 0;
  std::uint64_t stride = 1;
  for (std::size_t a : axes) {
    r += c[a] * stride;
    stride *= t.length(a);
  }
  return r;
}
std::uint32_t chip_of(const ici::Topology& t, const std::vector<std::size_t>& axes, std::uint32_t member,
                      std::uint64_t rank) {
  ici::Coords c = t.coords(ChipId(member));
  for (std::size_t a : axes) {
    c[a] = static_cast<std::uint32_t>(rank % t.length(a));
    rank /= t.length(a);
  }
  return t.linear_id(c).value();
}

// Occurrences of `what` in `text` (overlapping ones too).
std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("collectives: sizes per op and algorithm", "[collectives]") {
  struct Row {
    const char* chip;
    const char* shape;
    CollectiveSpec spec;
    CollectiveShapes want;
  };
  const std::uint64_t v = 1 << 20;
  const std::vector<Row> rows = {
      {"v5e", "4", spec("all-gather", "ring", "f32", v, {0}), {v / 4, v, 0, 4}},
      {"v5e", "4", spec("reduce-scatter", "ring", "f32", v, {0}), {v, v / 4, 3 * v / 4, 4}},
      // Two streams of 3 slots of V/8 each.
      {"v5e", "4", spec("all-reduce", "bidir-ring", "bf16", v, {0}), {v, v, 3 * v / 4, 4}},
      {"v5e", "4", spec("all-to-all", "ring", "f32", v, {0}), {v / 4, v / 4, 0, 4}},
      {"v5e", "8x16", spec("all-gather", "bidir-ring", "f32", v, {1}), {v / 16, v, 0, 16}},
      // Units of V/32; part 0 (x then y): 4 + 4 + 3 units, part 1 (y then x): 6 + 2 + 1, two directions each.
      {"v5e", "2x4", spec("reduce-scatter", "multi-axis", "f32", v, {0, 1}), {v, v / 8, 40 * v / 32, 8}},
      // Axes of length 1 take no part.
      {"v5p", "4x4x1", spec("all-gather", "multi-axis", "f32", v, {0, 2}), {v / 4, v, 0, 4}},
      // Ring over y then x of 2x4: reduce through y (3 slots of 2 units + a 2-unit result), then x (1 slot).
      {"v5e", "2x4", spec("all-reduce", "ring", "f32", v, {1, 0}), {v, v, 9 * v / 8, 8}},
      // Direct: N-1 slots of the reduced length (one-shot all-reduce: V; else Q); all-gather none.
      {"h100", "node:8", spec("all-reduce", "one-shot", "f32", v, {0}), {v, v, 7 * v, 8}},
      {"h100", "node:8", spec("all-reduce", "two-shot", "bf16", v, {0}), {v, v, 7 * v / 8, 8}},
      {"h100", "node:8", spec("reduce-scatter", "one-shot", "f32", v, {0}), {v, v / 8, 7 * v / 8, 8}},
      {"h100", "fat-tree:2x4", spec("all-gather", "one-shot", "f32", v, {0, 1}), {v / 8, v, 0, 8}},
  };
  for (const Row& r : rows) {
    INFO(r.spec.op << " " << r.spec.algorithm << " on " << r.shape);
    const CollectiveShapes s = collective_shapes(r.spec, topo(r.chip, r.shape));
    CHECK(s.input_bytes == r.want.input_bytes);
    CHECK(s.output_bytes == r.want.output_bytes);
    CHECK(s.group_size == r.want.group_size);
    CHECK(s.scratch_bytes == r.want.scratch_bytes);
  }
}

TEST_CASE("collectives: bad specs are refused with the reason", "[collectives]") {
  const ici::Topology t = topo("v5e", "8x16");
  struct Row {
    CollectiveSpec spec;
    const char* message;
  };
  const std::vector<Row> rows = {
      {spec("all-sum", "ring", "f32", 1024, {1}), "unknown op 'all-sum'"},
      {spec("all-gather", "pat", "f32", 1024, {1}),
       "unknown algorithm 'pat' (bidir-ring, halving-doubling, in-network, multi-axis, one-shot, ring, tree, "
       "two-shot)"},
      {spec("all-gather", "ring", "f16", 1024, {1}), "unknown dtype 'f16' (f32, bf16)"},
      {spec("all-gather", "ring", "f32", 1024, {}), "no participating axes"},
      {spec("all-gather", "ring", "f32", 1024, {1, 1}), "axis y is listed twice"},
      {spec("all-gather", "ring", "f32", 1024, {2}), "axis z is not an axis of topology 8x16 (2 axes)"},
      {spec("all-gather", "ring", "f32", 0, {1}),
       "all-gather ring over y of 8x16 (16 chips per group): bytes must be positive"},
      {spec("all-reduce", "bidir-ring", "f32", 1000, {1}),
       "all-reduce bidir-ring over y of 8x16 (16 chips per group): bytes 1000 must be a multiple of 1024 (16 chips x 1 "
       "part x 2 directions x 32-byte granules)"},
      {spec("reduce-scatter", "multi-axis", "bf16", 4096, {0, 1}),
       "bytes 4096 must be a multiple of 16384 (128 chips x 2 parts x 2 directions x 32-byte granules)"},
      {spec("all-to-all", "ring", "f32", 1 << 12, {1}), "bytes 4096 must be a multiple of 8192 (N^2 = 256 blocks"},
      {spec("all-gather", "ring", "f32", 1 << 20, {1}, 3000),
       "piece_bytes 3000 must be a multiple of 32 that divides the unit of 65536 bytes"},
      {spec("all-gather", "ring", "f32", 1 << 20, {1}, 1 << 17), "piece_bytes 131072 must be a multiple of 32"},
  };
  for (const Row& r : rows) {
    INFO(r.message);
    CHECK_THAT(error_of([&] { collective_shapes(r.spec, t); }), Contains(r.message));
    CHECK_THAT(error_of([&] { generate_collective(r.spec, t, preset("v5e")); }), Contains(r.message));
  }
  // Pieces whose VMEM buffers do not fit: 4 streams (2 half rings per half chunk) x 4 x 32 MiB on v5e's 128 MiB.
  CHECK_THAT(error_of([&] {
               generate_collective(spec("all-reduce", "bidir-ring", "f32", 1ULL << 30, {1}, 32 << 20), t,
                                   preset("v5e"));
             }),
             Contains("piece_bytes 33554432 needs 536870912 bytes of VMEM buffers (4 streams x 4 pieces)"));
  // One arrival flag per stream and round (4 x 17: 9 reduce and 8 gather
  // rounds on a half ring of 16, the short streams' padding included), 4 per
  // stream, 1 more.
  CHECK_THAT(error_of([&] {
               generate_collective(spec("all-reduce", "bidir-ring", "f32", 1 << 20, {1}), t,
                                   preset("v5e", {"sflag.count=8"}));
             }),
             Contains("needs 85 sync flags, v5e has 8 (sflag.count)"));
}

TEST_CASE("collectives: padded sizes are the next aligned multiple of the split, whole elements only",
          "[collectives]") {
  const ici::Topology t = topo("v5e", "8x16");
  // bidir-ring over y (16 chips): multiples of 16 x 2 directions x 32 B = 1024 B.
  CHECK(padded_collective_bytes(spec("all-reduce", "bidir-ring", "f32", 1000, {1}), t) == 1024);
  CHECK(padded_collective_bytes(spec("all-reduce", "bidir-ring", "f32", 1 << 20, {1}), t) == 1 << 20);  // divides
  CHECK(padded_collective_bytes(spec("all-gather", "ring", "bf16", 1002, {1}), t) == 1024);             // ring: 512 B
  // 2 MiB over 20 chips (bidir-ring: 1280 B a granule of every unit): at least 1639 granules, a prime, rounded
  // up to a multiple of 16 (the power of two <= 1639 / 64): 1648 x 1280 B.
  const ici::Topology y20 = ici::make_topology(ici::TopologyRequest{"1x20x1", std::nullopt, true}, preset("v5p"));
  CHECK(padded_collective_bytes(spec("all-reduce", "bidir-ring", "f32", 2 << 20, {1}), y20) == 1648 * 1280);
  CHECK(padded_collective_bytes(spec("all-reduce", "bidir-ring", "f32", 1648 * 1280 - 4, {1}), y20) == 1648 * 1280);
  CHECK(padded_collective_bytes(spec("all-reduce", "bidir-ring", "f32", 1639 * 1280, {1}), y20) == 1639 * 1280);
  // multi-axis over the 3 axes of v5p 2x3x1 (z has one chip): 6 chips x 2 parts x 2 directions x 32 B.
  CHECK(padded_collective_bytes(spec("all-reduce", "multi-axis", "f32", 4000, {0, 1, 2}), topo("v5p", "2x3x1")) ==
        6 * 768);
  // The padded size is one the plan takes.
  for (const std::uint64_t v : {4ULL, 1000ULL, 65540ULL, (2ULL << 20) + 4, 100000000ULL}) {
    for (const char* op : {"all-gather", "reduce-scatter", "all-reduce"}) {
      const CollectiveSpec s = spec(op, "bidir-ring", "f32", v, {0, 1});
      const std::uint64_t padded = padded_collective_bytes(s, t);
      INFO(op << " " << v << " -> " << padded);
      CHECK(padded >= v);
      // Beyond V by less than max(1, least / 64) granules of every unit (m = 128 chips x 2 directions x 32 B).
      const std::uint64_t m = 128 * 2 * 32;
      CHECK(padded - v < m * std::max<std::uint64_t>(1, (v / m + 1) / 64));
      CHECK_NOTHROW(plan_collective(spec(op, "bidir-ring", "f32", padded, {0, 1}), t));
    }
  }
  // Refused: no bytes, not whole elements, and all-to-all (not padded: the plan names its multiple).
  CHECK_THAT(error_of([&] { padded_collective_bytes(spec("all-reduce", "ring", "f32", 0, {1}), t); }),
             Contains("bytes must be positive"));
  CHECK_THAT(error_of([&] { padded_collective_bytes(spec("all-reduce", "ring", "f32", 1002, {1}), t); }),
             Contains("all-reduce ring over y of 8x16 (16 chips per group): bytes 1002 must be a multiple of the "
                      "4-byte f32 element"));
  CHECK_THAT(error_of([&] { padded_collective_bytes(spec("all-reduce", "ring", "bf16", 1001, {1}), t); }),
             Contains("bytes 1001 must be a multiple of the 2-byte bf16 element"));
  CHECK(padded_collective_bytes(spec("all-to-all", "ring", "f32", 4096, {1}), t) == 4096);
  CHECK_THAT(error_of([&] { plan_collective(spec("all-to-all", "ring", "f32", 4096, {1}), t); }),
             Contains("must be a multiple of 8192"));
  // Unequal pieces: 1000 B in 6 chunks of 192 B.
  CHECK(collective_valid_chunk_bytes(1000, 1152, 6, 0) == 192);
  CHECK(collective_valid_chunk_bytes(1000, 1152, 6, 5) == 40);
  CHECK(collective_valid_chunk_bytes(100, 1152, 6, 1) == 0);
  CHECK(collective_valid_chunk_bytes(1152, 1152, 6, 5) == 192);
}

TEST_CASE("collectives: every generated program assembles and fits its chip", "[collectives]") {
  struct Where {
    const char* chip;
    const char* shape;
    std::vector<std::size_t> axes;
  };
  const std::vector<Where> places = {
      {"v5e", "4", {0}},
      {"v5e", "2x4", {0, 1}},
      {"v5e", "2x4", {1, 0}},
      {"v5e", "2x4", {1}},
      {"v5e", "8x16", {1}},
      {"v5p", "4x4x4", {0, 1, 2}},
      {"v5p", "4x4x4", {2}},
      {"v4p", "4x4x4", {2, 0, 1}},
      {"v5e", "1x4", {0, 1}},
      {"h100", "node:8", {0}},
      {"h100", "fat-tree:2x4", {1, 0}},
      {"gb200", "nvl:16", {0}},
      {"h100", "fat-tree:2x4", {0}},
  };
  const std::vector<std::string> ops = {"all-gather", "reduce-scatter", "all-reduce", "all-to-all"};
  const std::vector<std::string> algorithms = collective_algorithm_names();
  std::size_t programs = 0;
  for (const Where& where : places) {
    const ici::Topology t = topo(where.chip, where.shape);
    const ChipConfig chip = preset(where.chip);
    for (const std::string& op : ops) {
      for (const std::string& algorithm : algorithms) {
        for (const std::string dtype : {"f32", "bf16"}) {
          if (dtype == "bf16" && (op == "all-gather" || op == "all-to-all")) continue;
          // 3 MiB divides evenly for every case here; 1 KiB pieces divide its units.
          for (const std::uint64_t piece : {std::uint64_t{0}, std::uint64_t{1024}}) {
            const CollectiveSpec s = spec(op, algorithm, dtype, 3 << 20, where.axes, piece);
            INFO(op << " " << algorithm << " " << dtype << " on " << where.chip << " " << where.shape << " piece "
                    << piece);
            if (piece != 0 && op == "all-to-all") continue;
            if ((algorithm == "two-shot" || algorithm == "tree") && (op == "all-gather" || op == "reduce-scatter")) {
              continue;
            }
            // In-network: one switched domain's group (axis x of a switched fabric), no all-to-all.
            if (algorithm == "in-network" &&
                (!t.switched() || op == "all-to-all" || where.axes != std::vector<std::size_t>{0})) {
              continue;
            }
            if (piece != 0 && algorithm == "in-network") continue;
            if (piece != 0 && (algorithm == "one-shot" || algorithm == "two-shot" || algorithm == "tree")) continue;
            const std::string text = generate_collective(s, t, chip);
            const isa::Program program = isa::assemble(text, "collective.llo");
            const isa::CheckResult check = isa::check_program(program, chip);
            std::string problems;
            for (const auto& d : check.violations) problems += isa::format_diagnostic(d) + "\n";
            INFO(problems);
            CHECK(check.violations.empty());
            CHECK(program.bundles.size() < 20000);
            ++programs;
          }
        }
      }
    }
  }
  CHECK(programs > 100);
}

TEST_CASE("collectives: large arrays keep programs small (loops over pieces)", "[collectives]") {
  const ici::Topology t = topo("v5e", "16x16");
  const ChipConfig chip = preset("v5e");
  for (const std::string op : {"all-gather", "all-reduce", "all-to-all"}) {
    INFO(op);
    const std::string text = generate_collective(spec(op, "multi-axis", "f32", 1ULL << 30, {0, 1}), t, chip);
    const isa::Program program = isa::assemble(text, "collective.llo");
    CHECK(isa::check_program(program, chip).violations.empty());
    CHECK(program.bundles.size() < 40000);
  }
}

TEST_CASE("collectives: unit layout per op (all-reduce: each stream's units contiguous)", "[collectives]") {
  const ici::Topology t = topo("v5p", "4x4x4");
  const std::uint64_t v = 32768;  // Q = 512, u = 256 (bidir-ring)
  auto rank = [](std::uint64_t x, std::uint64_t y, std::uint64_t z) { return x + 4 * y + 16 * z; };
  const CollectivePlan rs = plan_collective(spec("reduce-scatter", "bidir-ring", "f32", v, {0, 1, 2}), t);
  CHECK(rs.unit_offset(rank(1, 2, 3), 0, 1, t) == rank(1, 2, 3) * 512 + 256);
  const CollectivePlan ar = plan_collective(spec("all-reduce", "bidir-ring", "f32", v, {0, 1, 2}), t);
  // Direction 1 owns the second half; O_0 = (x, y, z), z fastest.
  CHECK(ar.unit_offset(rank(0, 0, 0), 0, 0, t) == 0);
  CHECK(ar.unit_offset(rank(1, 2, 3), 0, 0, t) == (1 * 16 + 2 * 4 + 3) * 256);
  CHECK(ar.unit_offset(rank(1, 2, 3), 0, 1, t) == v / 2 + (1 * 16 + 2 * 4 + 3) * 256);
  // multi-axis part 1: O_1 = (y, z, x), x fastest, from 2 V/6 on.
  const CollectivePlan ma = plan_collective(spec("all-reduce", "multi-axis", "f32", 3 * v, {0, 1, 2}), t);
  CHECK(ma.unit_offset(rank(1, 2, 3), 1, 0, t) == 2 * (3 * v / 6) + (2 * 16 + 3 * 4 + 1) * 256);
}

TEST_CASE("collectives: pieces span units where a step's chunk is contiguous and units are small", "[collectives]") {
  const ici::Topology t = topo("v5p", "4x4x4");
  const ChipConfig v5p = preset("v5p");
  // all-reduce of 32 KiB: 256-byte units; the x steps move 16 units (4 KiB) as
  // one piece, the y steps 4 units, the z steps (1 unit) unit pieces.
  const std::string ar = generate_collective(spec("all-reduce", "bidir-ring", "f32", 32768, {0, 1, 2}), t, v5p);
  // Half rings of 4: reduce steps 0..2 for the long streams (0, 1), 0..1 for
  // the short ones (2, 3), which sit out round 2.
  CHECK_THAT(ar, Contains("stream 3 (0u1+): reduce x step 1 (pieces of 4096 bytes)"));
  CHECK_THAT(ar, Contains("round 2: stream 0 (0u0+): reduce x step 2; stream 1 (0u1-): reduce x step 2 (pieces of "
                          "4096 bytes)"));
  CHECK_THAT(ar, Contains("stream 3 (0u1+): reduce y step 1 (pieces of 1024 bytes)"));
  CHECK_THAT(ar, Contains("stream 3 (0u1+): reduce z step 1\n"));
  CHECK_THAT(ar, Contains("/*size_in_granules=*/128,"));
  // reduce-scatter's chunks are strided (rank order fixes its layout): no
  // spanning pieces; its first phase takes strided pieces of 4 units.
  const std::string rs = generate_collective(spec("reduce-scatter", "bidir-ring", "f32", 32768, {0, 1, 2}), t, v5p);
  CHECK_THAT(rs, !Contains(" bytes)"));
  CHECK_THAT(rs, Contains("reduce x step 1 (pieces of 4 strided units)"));
  // Bidirectional all-gather: past its first phase the streams of half d
  // carry half d of a block of whole chunks, one contiguous range (512-byte
  // units here); on an axis of 4 the short streams (2, 3) take one step.
  const std::string ag = generate_collective(spec("all-gather", "bidir-ring", "f32", 65536, {0, 1, 2}), t, v5p);
  CHECK_THAT(ag, Contains("gather x step 1; stream 1 (0u1-): gather x step 1\n"));
  CHECK_THAT(ag, Contains("gather y step 1; stream 1 (0u1-): gather y step 1 (pieces of 2048 bytes)"));
  CHECK_THAT(ag, Contains("gather z step 1; stream 1 (0u1-): gather z step 1 (pieces of 2048 bytes)"));
  // Large contiguous chunks: at least an eighth of the chunk per piece (64 MiB:
  // the x steps' 8 MiB in 1 MiB pieces, not 128 KiB quarters of a unit).
  const std::string big = generate_collective(spec("all-reduce", "bidir-ring", "f32", 64 << 20, {0, 1, 2}), t, v5p);
  CHECK_THAT(
      big,
      Contains("reduce x step 1; stream 1 (0u1-): reduce x step 1; stream 2 (0u0-): reduce x step 1; stream 3 (0u1+): "
               "reduce x step 1 (pieces of 1048576 bytes)"));
  // One axis: a chunk is one unit, which keeps the generator's piece (a quarter).
  const std::string one =
      generate_collective(spec("all-reduce", "bidir-ring", "f32", 64 << 20, {0}), topo("v5e", "16"), preset("v5e"));
  CHECK_THAT(one, !Contains("(pieces of"));
  CHECK_THAT(one, Contains("pieces of 524288 bytes."));
  // f32 pieces of an even number (>= 4) of 16 KiB groups: the software-pipelined
  // add loop (loads of the next 32 KiB, 64 rows on); 4 KiB pieces: the 16 KiB loop.
  CHECK_THAT(one, Contains("vld [vmem:[%s42 + $0x78] sm:$0xff]"));
  CHECK_THAT(ar, !Contains("vld [vmem:[%s42 + $0x78] sm:$0xff]"));
  CHECK_THAT(ar, Contains("vld [vmem:[%s42 + $0x18] sm:$0xff]"));
}

TEST_CASE("collectives: a one-hop reduce phase issues its sends inside the reduction loop (lead rounds)",
          "[collectives]") {
  // The book's v2 ReduceScatter (128 MiB of bf16 over the 2-way y of a 4x2):
  // one reduce step of 64 pieces of 512 KiB per long stream. Round 0 sends
  // pieces 0..2 of each; round 1's loop sends piece i + 3 (while i < 61)
  // before it adds piece i.
  const ChipConfig v2 = preset("v2");
  const std::string rs =
      generate_collective(spec("reduce-scatter", "bidir-ring", "bf16", 128 << 20, {1}), topo("v2", "4x2"), v2);
  CHECK(isa::check_program(isa::assemble(rs, "rs.llo"), v2).violations.empty());
  CHECK_THAT(rs, Contains("pieces of 524288 bytes."));
  CHECK_THAT(rs, Contains("stream 1 (0u1-): reduce y step 0 (leads: its first 3 pieces here, the rest from round 1's "
                          "loop)\n"));
  CHECK(count(rs, "dma.remote.hbm_to_hbm") == 4);
  CHECK(count(rs, "target = led_") == 1);
  CHECK_THAT(rs, Contains("%p5 = scmp.ge.s32.totalorder %s11, 61"));
  CHECK(count(rs, "%p1 = scmp.lt.s32.totalorder %s11, 3") == 1);   // round 0's loop
  CHECK(count(rs, "%p1 = scmp.lt.s32.totalorder %s11, 64") == 1);  // round 1's
  // The led sends go where the unled ones went: the scratch slot, three pieces on.
  CHECK_THAT(rs, Contains("%s20 = sadd.s32 %s20, 49152"));
  // All-reduce: its reduce phase leads, its gather phase does not.
  const std::string ar =
      generate_collective(spec("all-reduce", "bidir-ring", "bf16", 128 << 20, {1}), topo("v2", "4x2"), v2);
  CHECK(count(ar, "target = led_") == 1);
  // Longer rings keep their first round whole (their forwards overlap the
  // reductions), and so does a single piece.
  CHECK(count(generate_collective(spec("reduce-scatter", "bidir-ring", "f32", 256 << 20, {0}), topo("v5e", "16"),
                                  preset("v5e")),
              "led_") == 0);
  CHECK(count(generate_collective(spec("reduce-scatter", "bidir-ring", "bf16", 1 << 20, {1}), topo("v2", "4x2"), v2),
              "led_") == 0);
  // multi-axis on a 2x2x2 cube: every part's phases are one hop; the first
  // (rank-addressed, strided units) cannot lead, the two after it do (their
  // reduce rounds are prefetched: each issues its led sends in two loops).
  // At 96 MiB the partial sums do not fit a quarter of VMEM; at 3 MiB they
  // land in VMEM (choose_landing), whose programs do not lead.
  const std::string cube = generate_collective(spec("all-reduce", "multi-axis", "f32", 96 << 20, {0, 1, 2}, 8192),
                                               topo("v5p", "2x2x2"), preset("v5p"));
  CHECK(count(cube, "(leads: its first") == 2);
  CHECK(count(cube, "target = led_") == 4);
  const std::string landing = generate_collective(spec("all-reduce", "multi-axis", "f32", 3 << 20, {0, 1, 2}, 8192),
                                                  topo("v5p", "2x2x2"), preset("v5p"));
  CHECK_THAT(landing, Contains("landing zones"));
  CHECK(count(landing, "led_") == 0);
}

TEST_CASE("collectives: reduce rounds of pieces short on their link load them three pieces ahead", "[collectives]") {
  // v5p 4x4x4 ring reduce-scatter of 256 KiB over x, y, z: units (pieces)
  // of 4 KiB take 46 ns on a 90 GB/s link, well under half of hbm.latency
  // (500 ns). A reduce round of n pieces runs up to three loops over 4
  // buffers, each with its load flag: issue pieces 0..d-1; reduce piece i -
  // d, issue piece i; reduce the last d (d = min(3, n)). Per axis 3 reduce
  // rounds of 16, 4 and 1 pieces: 2 + 2 + 1 loops issue, as many reduce.
  const ChipConfig v5p = preset("v5p");
  const std::string short_pieces =
      generate_collective(spec("reduce-scatter", "ring", "f32", 256 << 10, {0, 1, 2}), topo("v5p", "4x4x4"), v5p);
  CHECK(isa::check_program(isa::assemble(short_pieces, "rs.llo"), v5p).violations.empty());
  CHECK_THAT(short_pieces, Contains("pieces of 4096 bytes."));
  CHECK(count(short_pieces, "%s15 = sand.u32 %s11, 3") == 15);  // issue loops
  CHECK(count(short_pieces, "%s51 = sand.u32 %s51, 3") == 15);  // reduce loops
  CHECK(count(short_pieces, "%s22 = scalar_lea.sflag") == 15);  // a buffer's load flag
  CHECK(count(short_pieces, "%s15 = sand.u32 %s11, 1") == 0);
  // v5e 16 ring reduce-scatter of 256 MiB: pieces of 1 MiB take 23 us on a
  // 45 GB/s link, more than half of hbm.latency (and the partial sums do not
  // fit VMEM): one loop per round, two buffers, one load flag per stream
  // (the same program as before prefetch).
  const std::string long_pieces =
      generate_collective(spec("reduce-scatter", "ring", "f32", 256 << 20, {0}), topo("v5e", "16"), preset("v5e"));
  CHECK(count(long_pieces, "%s51") == 0);
  CHECK(count(long_pieces, "%s15 = sand.u32 %s11, 1") == 15);  // 15 reduce rounds
}

TEST_CASE("collectives: a reduce-scatter's strided first-phase units go in pieces of several units", "[collectives]") {
  // multi-axis on v5p 4x4x4, 2 MiB: each of the 6 streams' first phase
  // reduces 16 units of 5504 bytes (172 granules) per step, a unit for each
  // rank of the other two axes. Pieces of the 4 units of the fastest digit:
  // step 0 sends them by 4 DMAs, later steps load the local operand by one
  // strided DMA; the later phases' chunks are contiguous and keep their pieces.
  const ChipConfig v5p = preset("v5p");
  const std::string rs =
      generate_collective(spec("reduce-scatter", "multi-axis", "f32", 2113536, {0, 1, 2}), topo("v5p", "4x4x4"), v5p);
  CHECK(isa::check_program(isa::assemble(rs, "rs.llo"), v5p).violations.empty());
  CHECK_THAT(rs, Contains("units of 5504 bytes"));
  CHECK(count(rs, "(pieces of 4 strided units)") == 4);  // the first phase's 4 rounds
  CHECK(count(rs, "/*block_granules=*/172, /*hbm_stride=*/") > 0);
  const std::size_t round0 = rs.find("=== round 0");
  const std::string step0 = rs.substr(round0, rs.find("=== round 1") - round0);
  CHECK(count(step0, "dma.remote.hbm_to_hbm") == 4 * 6);  // step 0: a DMA per unit of a piece, 6 streams
  CHECK(count(step0, "/*size_in_granules=*/172, /*chip=*/") == 4 * 6);
  // All-reduce's units are contiguous: no strided pieces.
  const std::string ar =
      generate_collective(spec("all-reduce", "multi-axis", "f32", 2113536, {0, 1, 2}), topo("v5p", "4x4x4"), v5p);
  CHECK(count(ar, "strided") == 0);
  // One stream, whose prefetched loads the DMA queue holds: unit pieces of
  // 8 KiB (0.18 us on the link) stay prefetchable; 2 units would not be.
  const std::string ring =
      generate_collective(spec("reduce-scatter", "ring", "f32", 1 << 20, {0, 1}), topo("v5e", "8x16"), preset("v5e"));
  CHECK(count(ring, "strided") == 0);
  CHECK(count(ring, "%s51 = sand.u32 %s51, 3") > 0);
}

TEST_CASE("collectives: the program's identity, operands and remote DMAs", "[collectives]") {
  const std::string text =
      generate_collective(spec("all-reduce", "bidir-ring", "f32", 1 << 20, {1}), topo("v5e", "8x16"), preset("v5e"));
  CHECK_THAT(text, Contains("inlined_call_operand.hbm [shape: f32[262144], index: 0, kind: input"));
  CHECK_THAT(text, Contains("inlined_call_operand.hbm [shape: f32[262144], index: 1, kind: output"));
  CHECK_THAT(text, Contains("index: 2, kind: output"));
  CHECK_THAT(text, Contains("sid.core"));
  CHECK_THAT(text, Contains("sid.dim_y"));
  CHECK_THAT(text, Contains("shalt.err"));
  CHECK_THAT(text, Contains("dma.remote.hbm_to_hbm"));    // step 0 into the successor's scratch
  CHECK_THAT(text, Contains("dma.remote.vmem_to_vmem"));  // later steps into its landing slots
  CHECK_THAT(text, Contains("vsyncadd.remote"));          // this chip's zones are ready
  CHECK_THAT(text, !Contains("dma.remote.vmem_to_hbm"));
  CHECK_THAT(text, Contains("vadd.f32"));
  // 256 MiB: the partial sums do not fit VMEM, so they land in scratch.
  const std::string large =
      generate_collective(spec("all-reduce", "bidir-ring", "f32", 256 << 20, {1}), topo("v5e", "8x16"), preset("v5e"));
  CHECK_THAT(large, Contains("dma.remote.vmem_to_hbm"));
  CHECK_THAT(large, !Contains("dma.remote.vmem_to_vmem"));
  CHECK_THAT(large, !Contains("landing zones"));
  const std::string bf16 =
      generate_collective(spec("reduce-scatter", "ring", "bf16", 1 << 20, {1}), topo("v5e", "8x16"), preset("v5e"));
  CHECK_THAT(bf16, Contains("vpack.c.bf16"));
  CHECK_THAT(bf16, Contains("shape: bf16[524288], index: 0"));
  const std::string gather =
      generate_collective(spec("all-gather", "ring", "f32", 1 << 20, {1}), topo("v5e", "8x16"), preset("v5e"));
  CHECK_THAT(gather, !Contains("index: 2"));
  CHECK_THAT(gather, !Contains("vadd"));
}

TEST_CASE("collectives: reference all-gather and all-to-all move data exactly", "[collectives]") {
  const ici::Topology t = topo("v5e", "2x4");
  for (const std::vector<std::size_t>& axes : {std::vector<std::size_t>{1}, std::vector<std::size_t>{1, 0}}) {
    const CollectiveSpec ag = spec("all-gather", "bidir-ring", "f32", 8192, axes);
    const CollectiveShapes s = collective_shapes(ag, t);
    const auto in = inputs_of(t, s.input_bytes, false,
                              [](std::uint32_t c, std::uint64_t e) { return static_cast<float>(c * 1000ULL + e); });
    const auto out = collective_reference(ag, t, in);
    for (std::uint32_t c = 0; c < t.chip_count(); ++c) {
      const std::uint64_t per = s.input_bytes / 4;
      for (std::uint64_t r = 0; r < s.group_size; ++r) {
        const std::uint32_t from = chip_of(t, axes, c, r);
        for (std::uint64_t e = 0; e < per; ++e)
          REQUIRE(element(out[c], r * per + e, false) == static_cast<float>(from * 1000ULL + e));
      }
    }
    const CollectiveSpec a2a = spec("all-to-all", "ring", "f32", 8192 * s.group_size, axes);
    const CollectiveShapes sa = collective_shapes(a2a, t);
    const auto ina = inputs_of(t, sa.input_bytes, false,
                               [](std::uint32_t c, std::uint64_t e) { return static_cast<float>(c * 100000ULL + e); });
    const auto outa = collective_reference(a2a, t, ina);
    const std::uint64_t block = sa.input_bytes / 4 / s.group_size;
    for (std::uint32_t c = 0; c < t.chip_count(); ++c) {
      const std::uint64_t me = rank_of(t, axes, c);
      for (std::uint64_t i = 0; i < s.group_size; ++i) {
        const std::uint32_t from = chip_of(t, axes, c, i);
        for (std::uint64_t e = 0; e < block; ++e) {
          REQUIRE(element(outa[c], i * block + e, false) == static_cast<float>(from * 100000ULL + me * block + e));
        }
      }
    }
  }
}

TEST_CASE("collectives: reference sums of small integers are exact for every algorithm", "[collectives]") {
  struct Where {
    const char* chip;
    const char* shape;
    std::vector<std::size_t> axes;
    std::uint64_t bytes;
  };
  const std::vector<Where> places = {
      {"v5e", "2x4", {0, 1}, 4096}, {"v5e", "2x4", {1}, 4096}, {"v5p", "4x4x4", {1, 2, 0}, 12288}};
  for (const Where& w : places) {
    const ici::Topology t = topo(w.chip, w.shape);
    for (const std::string op : {"reduce-scatter", "all-reduce"}) {
      for (const std::string& algorithm : collective_algorithm_names()) {
        if ((algorithm == "two-shot" || algorithm == "tree") && op == std::string("reduce-scatter")) continue;
        if (algorithm == "in-network") continue;  // needs a switched fabric: its own case below
        for (const std::string dtype : {"f32", "bf16"}) {
          INFO(op << " " << algorithm << " " << dtype << " on " << w.shape);
          const bool bf16 = dtype == "bf16";
          const CollectiveSpec s = spec(op, algorithm, dtype, w.bytes, w.axes);
          const CollectiveShapes sh = collective_shapes(s, t);
          // Sums stay below 256, exact in bf16 too.
          auto value = [](std::uint32_t c, std::uint64_t e) { return static_cast<float>((c + e) % 4); };
          const auto out = collective_reference(s, t, inputs_of(t, sh.input_bytes, bf16, value));
          const std::uint64_t elements = sh.input_bytes / (bf16 ? 2 : 4);
          const std::uint64_t q = elements / sh.group_size;
          std::uint64_t wrong = 0;
          for (std::uint32_t c = 0; c < t.chip_count(); ++c) {
            std::vector<float> sum(elements, 0.0f);
            for (std::uint64_t r = 0; r < sh.group_size; ++r) {
              const std::uint32_t from = chip_of(t, w.axes, c, r);
              for (std::uint64_t e = 0; e < elements; ++e) sum[e] += value(from, e);
            }
            const std::uint64_t first = op == "reduce-scatter" ? rank_of(t, w.axes, c) * q : 0;
            for (std::uint64_t e = 0; e < sh.output_bytes / (bf16 ? 2 : 4); ++e) {
              wrong += element(out[c], e, bf16) != sum[first + e] ? 1 : 0;
            }
          }
          CHECK(wrong == 0);
        }
      }
    }
  }
}

TEST_CASE("collectives: reference rounds at every ring step in ring order", "[collectives]") {
  // Ring of 4 (direction +): chunk j is summed x_{j+1}, x_{j+2}, x_{j+3}, x_j; with
  // x = (big, 1, 1, 1) chunk 0 is ((1+1)+1)+big, chunk 3 ((big+1)+1)+1. In bf16 with
  // big = 256 (steps of 2): 3 + 256 = 259 rounds to 260 (tie to even), 256 + 1 to 256.
  // bidir-ring (half rings of 4, ring_hops: long 2, short 1): half 0 of chunk j
  // is (x_{j-2} + x_{j-1}) + (x_{j+1} + x_j), half 1 (x_{j+2} + x_{j+1}) +
  // (x_{j-1} + x_j): one pair holds big + 1 (rounds to big), the other 2, so
  // every half is big + 2 (in ring order chunk 0 would be big + 4, in rank
  // order big).
  // On a ring of 4 with wraparound (v5e's 4 has none: --wrap x).
  const ici::Topology wrapped =
      ici::make_topology(ici::TopologyRequest{"4", std::vector<bool>{true}, false}, preset("v5e"));
  // Without wraparound the ring is folded, 0 -> 2 -> 3 -> 1 -> 0: chunk c is
  // summed from the chip after c in that order round to c itself (chunk 0:
  // x_2, x_3, x_1, x_0; chunk 1: x_0, x_2, x_3, x_1; chunk 2: x_3, x_1, x_0,
  // x_2; chunk 3: x_1, x_0, x_2, x_3), so chunks 0 and 2 end on big. The
  // half rings' sums are again big + 2.
  const ici::Topology line = topo("v5e", "4");
  auto x = [](float big) { return [big](std::uint32_t c, std::uint64_t) { return c == 0 ? big : 1.0f; }; };
  struct Row {
    const ici::Topology* t;
    std::string dtype, algorithm;
    float big;
    std::vector<float> plus, minus;  // per chunk, direction + (half 0) and - (half 1)
  };
  const float f = 16777216.0f;  // 2^24: f32 steps of 2 above it
  const std::vector<Row> rows = {
      {&wrapped, "bf16", "ring", 256, {260, 260, 256, 256}, {}},
      {&wrapped, "bf16", "bidir-ring", 256, {258, 258, 258, 258}, {258, 258, 258, 258}},
      {&wrapped, "f32", "ring", f, {f + 4, f + 4, f, f}, {}},
      {&wrapped, "f32", "bidir-ring", f, {f + 2, f + 2, f + 2, f + 2}, {f + 2, f + 2, f + 2, f + 2}},
      {&line, "bf16", "ring", 256, {260, 256, 260, 256}, {}},
      {&line, "f32", "ring", f, {f + 4, f, f + 4, f}, {}},
      {&line, "bf16", "bidir-ring", 256, {258, 258, 258, 258}, {258, 258, 258, 258}},
  };
  for (const Row& r : rows) {
    const ici::Topology& t = *r.t;
    for (const std::string op : {"reduce-scatter", "all-reduce"}) {
      INFO(op << " " << r.algorithm << " " << r.dtype << (t.wraps(0) ? " wrapped" : " folded"));
      const bool bf16 = r.dtype == "bf16";
      const CollectiveSpec s = spec(op, r.algorithm, r.dtype, 1024, {0});
      const auto out = collective_reference(s, t, inputs_of(t, 1024, bf16, x(r.big)));
      const std::uint64_t q = 1024 / 4 / (bf16 ? 2 : 4);
      const std::uint64_t directions = r.minus.empty() ? 1 : 2;
      const std::uint64_t unit = q / directions;
      // Unit (chunk, d): reduce-scatter's output holds chunk c's units in
      // direction order; all-reduce's (its layout) direction d's units of
      // every chunk from d * V/2 on, in chunk order (one axis).
      for (std::uint32_t c = 0; c < 4; ++c) {
        for (std::uint64_t chunk = 0; chunk < 4; ++chunk) {
          if (op == "reduce-scatter" && chunk != c) continue;
          for (std::uint64_t d = 0; d < directions; ++d) {
            const std::uint64_t base = op == "reduce-scatter" ? d * unit : d * 4 * unit + chunk * unit;
            for (std::uint64_t e = 0; e < unit; ++e) {
              REQUIRE(element(out[c], base + e, bf16) == (d == 0 ? r.plus[chunk] : r.minus[chunk]));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("collectives: multi-axis reference reduces axis by axis in rotated order", "[collectives]") {
  // 2x2, axes x,y: part 0 reduces over x then y, part 1 over y then x. Chip (1,0)
  // holds big, the others 1. In bf16 (big = 256), part 0 direction + for chunk 0:
  // x first: (chip 1 + chip 0) on row y=0 -> 256 + 1 = 257 -> 256; row y=1: 2;
  // then y: 2 + 256 = 258. Part 1 (y first): column x=0: 1 + 1 = 2, column x=1:
  // 1 + 256 = 257 -> 256; then x: 256 + 2 = 258.
  const ici::Topology t = topo("v5e", "2x2");
  const CollectiveSpec s = spec("all-reduce", "multi-axis", "bf16", 512, {0, 1});
  const auto in = inputs_of(t, 512, true, [](std::uint32_t c, std::uint64_t) { return c == 1 ? 256.0f : 1.0f; });
  const auto out = collective_reference(s, t, in);
  for (std::uint32_t c = 0; c < 4; ++c) {
    for (std::uint64_t e = 0; e < 256; ++e) REQUIRE(element(out[c], e, true) == 258.0f);
  }
  // The ring algorithm reduces over x then y too (one stream, part 0's order).
  const auto ring = collective_reference(spec("all-reduce", "ring", "bf16", 512, {0, 1}), t, in);
  CHECK(element(ring[0], 0, true) == 258.0f);
}

TEST_CASE("collectives: reference refuses inputs of the wrong count or size", "[collectives]") {
  const ici::Topology t = topo("v5e", "4");
  const CollectiveSpec s = spec("all-gather", "ring", "f32", 1024, {0});
  CHECK_THAT(error_of([&] { collective_reference(s, t, std::vector<std::vector<std::uint8_t>>(3)); }),
             Contains("3 inputs for 4 chips"));
  CHECK_THAT(error_of([&] {
               collective_reference(s, t, std::vector<std::vector<std::uint8_t>>(4, std::vector<std::uint8_t>(100)));
             }),
             Contains("input of chip 0 has 100 bytes, expected 256"));
}

TEST_CASE("collectives: predictions follow the book's formulas", "[collectives]") {
  // The book's terms with the exact (N-1)/N of the bytes a ring moves (the
  // book drops it; it is 0.75 on a ring of 4).
  const ChipConfig v5e = preset("v5e");
  // W is the payload rate: the link's 45 GB/s x ici.payload_efficiency 0.95.
  const double w_one = 4.5e10 * 0.95;
  const double w = 2 * w_one;
  const ici::Topology t = topo("v5e", "8x16");
  // Bandwidth seconds per byte of V; hops of T_min; at 64 MiB the hops whose
  // latency the links' later pieces do not hide (a phase's last step, and a
  // reduce phase's step 0, which sends all its pieces at once:
  // CollectiveGen::pipelined_hop_seconds; at 64 KiB every step is one piece).
  // At 64 KiB reductions also wait 2 HBM round trips (their steps are one
  // DMA each: ring_family_load_waits). At 64 MiB every reduce step after the
  // first waits one too for what arrived in HBM, and the later pieces hide it
  // with the hop except in the phase's last sending step and its last step,
  // which only adds: 2 (CollectiveGen::pipelined_hop_seconds).
  struct Row {
    std::string op, algorithm;
    double per_byte, hops, hops_64mib, hbm_waits_64kib, hbm_waits_64mib;
    const char* formula;
  };
  const std::vector<Row> rows = {
      {"all-gather", "bidir-ring", 1 / w * 15 / 16, 8, 1, 0, 0,
       "all-gather bidir-ring: V/W*(N-1)/N + T_min*sum(floor(L/2))"},
      {"reduce-scatter", "bidir-ring", 1 / w * 15 / 16, 8, 2, 2, 2, "V/W*(N-1)/N + T_min*sum(floor(L/2) + (L odd))"},
      {"all-reduce", "bidir-ring", 2 / w * 15 / 16, 16, 3, 2, 2, "2V/W*(N-1)/N + T_min*sum(2*floor(L/2) + (L odd))"},
      {"all-gather", "ring", 1 / w_one * 15 / 16, 15, 1, 0, 0, "V/W_oneway*(N-1)/N + T_min*sum(L-1)"},
      {"all-reduce", "ring", 2 / w_one * 15 / 16, 30, 3, 2, 2, "2V/W_oneway*(N-1)/N"},
      {"all-to-all", "bidir-ring", 1 / (4 * w), 8, 8, 0, 0, "V*max(L)/(4*N*W)"},
  };
  for (const Row& r : rows) {
    for (const std::uint64_t bytes : {std::uint64_t{1} << 16, std::uint64_t{1} << 26}) {
      INFO(r.op << " " << r.algorithm << " " << bytes << " B");
      const CollectivePrediction p = predict_collective(spec(r.op, r.algorithm, "f32", bytes, {1}), t, v5e);
      const bool small = bytes == 1 << 16;
      const double hops = small ? r.hops : r.hops_64mib;
      const double latency = hops * 1e-6 + (small ? r.hbm_waits_64kib : r.hbm_waits_64mib) * v5e.hbm.latency_s;
      CHECK(p.bandwidth_seconds == Approx(r.per_byte * static_cast<double>(bytes)));
      CHECK(p.latency_seconds == Approx(latency));
      CHECK(p.seconds == Approx(r.per_byte * static_cast<double>(bytes) + latency));
      CHECK_THAT(p.formula, Contains(r.formula));
      CHECK((r.hops != hops) == (p.formula.find("less what a step's later pieces") != std::string::npos));
    }
  }
  // Multi-axis on 16x16: the bidir terms over 2 axes; the book's latency
  // over both axes, L-1 steps each (its rings are full rings), twice: 2 x (15
  // + 15) hops. At 64 MiB a stream's phases over its first axis move 16 units
  // of 64 KiB a step in pieces of one unit, so only their last steps and the
  // reduce phase's step 0 pay (3 hops), and its reduce phase 2 HBM waits (as
  // the rings' above); over its second axis a step is one unit, one piece: 2
  // x 15 hops, and each reduce step waits for its loads: 15 more.
  const double v = 64.0 * (1 << 20);
  const CollectivePrediction m =
      predict_collective(spec("all-reduce", "multi-axis", "f32", 1 << 26, {0, 1}), topo("v5e", "16x16"), v5e);
  CHECK(m.bandwidth_seconds == Approx(2 * v / (2 * w) * 255 / 256));
  CHECK(m.latency_seconds == Approx(33e-6 + 17 * v5e.hbm.latency_s));
  CHECK_THAT(m.formula, Contains("2V/(W*N_axes)*(N-1)/N + 2*T_min*sum(L-1) less what a step's later pieces"));
  CHECK_THAT(m.formula, Contains("4.15e-05 s of 7.5e-05 s, HBM waits included"));
  // The x axis of 8x16 has no wraparound: all-to-all, one program whatever
  // the algorithm, is predicted from its routes' link loads (one-shot's
  // model) for every name; over the wrapped y axis by the book's formula
  // (the table above) for every name.
  const CollectivePrediction x = predict_collective(spec("all-to-all", "bidir-ring", "f32", 1 << 26, {0}), t, v5e);
  CHECK_THAT(x.formula, Contains("all-to-all one-shot on 8x16: max(bytes out of a chip / B, the busiest link's"));
  CHECK_THAT(x.formula, Contains("all-to-all runs the same program for every --algo"));
  const double y = predict_collective(spec("all-to-all", "bidir-ring", "f32", 1 << 26, {1}), t, v5e).seconds;
  CHECK(y == Approx(static_cast<double>(1 << 26) / (4 * w) + 8e-6));
  for (const char* name : {"ring", "multi-axis", "tree", "halving-doubling", "one-shot", "two-shot"}) {
    INFO(name);
    CHECK(predict_collective(spec("all-to-all", name, "f32", 1 << 26, {0}), t, v5e).seconds == x.seconds);
    CHECK(predict_collective(spec("all-to-all", name, "f32", 1 << 26, {1}), t, v5e).seconds == y);
  }
}

TEST_CASE("collectives: rings over an axis without wraparound are predicted from their link loads", "[collectives]") {
  // x of v5e 8x16 (8 chips, no wraparound), V = 64 MiB, Q = V/8 (every step
  // moves a chunk of Q per stream direction: all-gather's gathered chunk,
  // reduce-scatter's partial sums). A folded ring
  // crosses each link direction once per ring direction; hops span 2 links.
  const ChipConfig v5e = preset("v5e");
  const double w_one = 4.5e10 * 0.95;
  const double v = 64.0 * (1 << 20);
  const double q = v / 8;
  const ici::Topology t = topo("v5e", "8x16");
  // Latency: T_min per link (2 a hop) of the rounds that pay it whole: at 64
  // MiB a round's later pieces keep its busiest link busy far longer than
  // 2 T_min, so only the rounds whose pieces are not forwarded in the next
  // round pay (a phase's last, a reduce phase's first, whose step 0 sends
  // all its pieces at once; with half rings also the round after which the
  // short streams stop).
  struct Row {
    std::string op, algorithm;
    double bytes;   // on the busiest link direction, summed over rounds
    double rounds;  // that send
    double paid;    // of those, the rounds that pay their latency
    // Reductions: the HBM round trips their steps wait for what arrived (one
    // per step of the reduce phase but its first: ring_family_load_waits),
    // and the rounds whose later pieces hide one of them with the hop.
    double waits, hiding;
  };
  const std::vector<Row> rows = {
      // One stream, 7 steps of Q per phase: the wrapped ring's own bandwidth.
      {"all-gather", "ring", 7 * q, 7, 1, 0, 0},
      {"all-reduce", "ring", 14 * q, 14, 3, 7, 5},
      // Half rings: 4 streams of Q/2 each cross every link direction: 3
      // rounds of 2Q, then the long streams' last hop (Q); all-gather 4
      // rounds, reduce-scatter 4 (its fifth round only adds).
      {"all-gather", "bidir-ring", 7 * q, 4, 2, 0, 0},
      {"reduce-scatter", "bidir-ring", 7 * q, 4, 3, 4, 1},
      {"all-reduce", "bidir-ring", 14 * q, 8, 5, 4, 1},
      // Full rings both ways: 2 streams of Q/2 on every link direction, 7 rounds per phase.
      {"all-reduce", "multi-axis", 14 * q, 14, 3, 7, 5},
  };
  const double l_hbm = v5e.hbm.latency_s;
  for (const Row& r : rows) {
    INFO(r.op << " " << r.algorithm);
    const CollectivePrediction p = predict_collective(spec(r.op, r.algorithm, "f32", 1 << 26, {0}), t, v5e);
    CHECK(p.bandwidth_seconds == Approx(r.bytes / w_one));
    CHECK(p.latency_seconds == Approx(r.paid * 2 * 1e-6 + (r.waits - r.hiding) * l_hbm));
    CHECK_THAT(p.formula,
               Contains(fmt::format("each round but a phase's last and a reduce phase's first; {:g} s hidden",
                                    (r.rounds - r.paid) * 2e-6 + r.hiding * l_hbm)));
    CHECK_THAT(p.formula, Contains("x without wraparound: x rings folded"));
  }
  // Over both axes of 8x16, multi-axis's two parts meet on y: part 0's
  // second reduce phase (y, 16 chips) runs in the rounds of part 1's first.
  const CollectivePrediction both =
      predict_collective(spec("all-reduce", "multi-axis", "f32", 1 << 26, {0, 1}), t, v5e);
  const CollectivePrediction bidir =
      predict_collective(spec("all-reduce", "bidir-ring", "f32", 1 << 26, {0, 1}), t, v5e);
  CHECK(both.bandwidth_seconds > 0.6 * bidir.bandwidth_seconds);
  // Wrapped axes keep the book's formula (with the exact (N-1)/N).
  const CollectivePrediction y = predict_collective(spec("all-gather", "bidir-ring", "f32", 1 << 26, {1}), t, v5e);
  CHECK_THAT(y.formula, Contains("all-gather bidir-ring: V/W*(N-1)/N + T_min*sum(floor(L/2))"));
}

TEST_CASE("collectives: reductions landing in VMEM in steps of several pieces wait phases + 1 HBM round trips",
          "[collectives]") {
  // v5p 2x2x2, reduce-scatter of 64 KiB on one ring over x, y, z: pieces of
  // 8 KiB, the first phase's chunk two of them; the partial sums land in
  // VMEM. The run waits out the first phase's load of what arrived in scratch
  // and each of the 3 phases' last store before the next sends from it: 4
  // L_hbm (before, none: 3.67 us predicted, 5.78 measured).
  const ChipConfig v5p = preset("v5p");
  const ici::Topology t = ici::make_topology(ici::TopologyRequest{"2x2x2", std::nullopt, true}, v5p);
  const CollectiveSpec s = spec("reduce-scatter", "ring", "f32", 1 << 16, {0, 1, 2});
  const CollectivePrediction p = predict_collective(s, t, v5p);
  CHECK_THAT(p.formula, Contains("+ 4*L_hbm"));
  // Three hops of 1 us (one link each), the waits, and each one-hop phase's
  // reductions after all of its pieces arrived (3 x its chunk: 32, 16, 8 KiB).
  CHECK(p.latency_seconds == Approx(3e-6 + 4 * v5p.hbm.latency_s + 3.0 * (56 << 10) / v5p.hbm.bandwidth).epsilon(1e-9));
  // The same where every step is one piece keeps two per phase: all-reduce of 8 KiB.
  const CollectivePrediction small = predict_collective(spec("all-reduce", "ring", "f32", 8 << 10, {0, 1, 2}), t, v5p);
  CHECK_THAT(small.formula, Contains("+ 6*L_hbm"));
}

TEST_CASE("collectives: a one-hop reduction whose pieces arrive together pays their loads and stores after",
          "[collectives]") {
  // v2 4x2 over y (2 chips): a reduce-scatter of 4 MiB sends its 2 MiB chunk
  // as four 512 KiB pieces at once (too few to lead: choose_leads), so they
  // arrive together after 37 us and are then each loaded twice and stored:
  // 3 x 2 MiB at 300 GB/s after the transfer (measured 61.28 us, predicted
  // 37.79 without this term); the first load waits one HBM round trip.
  const ChipConfig v2 = preset("v2");
  const ici::Topology t = topo("v2", "4x2");
  const CollectivePrediction p = predict_collective(spec("reduce-scatter", "ring", "f32", 4 << 20, {1}), t, v2);
  CHECK(p.latency_seconds == Approx(1e-6 + v2.hbm.latency_s + 3.0 * (2 << 20) / v2.hbm.bandwidth).epsilon(1e-9));
  // 128 MiB: enough pieces to lead, each reduced while the next ones are on
  // the link; the last one's loads still wait after it arrived.
  const CollectivePrediction led = predict_collective(spec("reduce-scatter", "ring", "f32", 128 << 20, {1}), t, v2);
  CHECK(led.latency_seconds == Approx(1e-6 + v2.hbm.latency_s));
}

TEST_CASE("collectives: axes of 2 chips are predicted from their one link each way", "[collectives]") {
  // v5e 2x2 (an axis of 2 cannot wrap): multi-axis all-gather, V = 64 MiB,
  // shards of Q = V/4. Part 0 gathers over x, then y; part 1 over y, then x;
  // each moves half of every shard. Round 1: on every link direction one
  // part's half of a shard (Q/2); round 2: the other part's half of the
  // shards gathered so far (2 x Q/2): 3Q/2 in all at W_oneway, where the
  // book's V/(W N_axes) with W = 2 W_oneway is Q (1.5x short, as measured
  // before this prediction: 75.63 us against 51.06 at 8 MiB).
  const ChipConfig v5e = preset("v5e");
  const double v = 64.0 * (1 << 20);
  const double q = v / 4;
  const CollectivePrediction p =
      predict_collective(spec("all-gather", "multi-axis", "f32", 1 << 26, {0, 1}), topo("v5e", "2x2"), v5e);
  CHECK(p.bandwidth_seconds == Approx(1.5 * q / v5e.link_payload_rate()));
  CHECK(p.latency_seconds == Approx(2e-6));
  CHECK_THAT(p.formula, Contains("x,y without wraparound: one link between neighbours, no wrap link"));
  // One axis of 2: each chip receives the other's half over its one link.
  const CollectivePrediction line =
      predict_collective(spec("all-gather", "bidir-ring", "f32", 1 << 26, {0}), topo("v5e", "2"), v5e);
  CHECK(line.bandwidth_seconds == Approx(v / 2 / v5e.link_payload_rate()));
}

TEST_CASE("collectives: direct algorithms on a torus are predicted no faster than their busiest link",
          "[collectives]") {
  // Every member sends to every other at once. On a line of 8 (v5p 1x8x1,
  // no wraparound) the middle link carries 4 x 4 pairs one way; on a ring of
  // 16 (v5e 8x16's y) a + link carries pairs 1..8 apart (ties go +): 36.
  const ChipConfig v5p = preset("v5p");
  const double v = 2.0 * (1 << 20);
  {
    const ici::Topology t = ici::make_topology(ici::TopologyRequest{"1x8x1", std::nullopt, true}, v5p);
    const double q = v / 8;
    const CollectivePrediction two = predict_collective(spec("all-reduce", "two-shot", "f32", 1 << 21, {1}), t, v5p);
    CHECK(two.bandwidth_seconds == Approx(2 * 16 * q / v5p.link_payload_rate() + 8 * q / v5p.hbm.bandwidth));
    const CollectivePrediction one = predict_collective(spec("all-reduce", "one-shot", "f32", 1 << 21, {1}), t, v5p);
    CHECK(one.bandwidth_seconds == Approx(16 * v / v5p.link_payload_rate() + 8 * v / v5p.hbm.bandwidth));
    CHECK_THAT(two.formula, Contains("the busiest link"));
  }
  const ChipConfig v5e = preset("v5e");
  const CollectivePrediction ag =
      predict_collective(spec("all-gather", "one-shot", "f32", 1 << 21, {1}), topo("v5e", "8x16"), v5e);
  CHECK(ag.bandwidth_seconds == Approx(36 * (v / 16) / v5e.link_payload_rate()));
  // Switched fabrics keep the egress bound.
  const ChipConfig h100 = preset("h100");
  const CollectivePrediction node =
      predict_collective(spec("all-gather", "one-shot", "f32", 1 << 21, {0}), topo("h100", "node:8"), h100);
  CHECK(node.bandwidth_seconds == Approx(7 * (v / 8) / h100.switched_egress()));
}

TEST_CASE("collectives: direct reductions on a torus wait 2 L_hbm per tile", "[collectives]") {
  // v5p 4x4x4 over z (a wrapped ring of 4): one-shot reduce-scatter of 64
  // KiB, one tile of 16 KiB; its farthest peer 2 links away. Measured 3.67
  // us; predicted 2.60 without the tile's two HBM round trips.
  const ChipConfig v5p = preset("v5p");
  const ici::Topology t = topo("v5p", "4x4x4");
  const CollectivePrediction p = predict_collective(spec("reduce-scatter", "one-shot", "f32", 1 << 16, {2}), t, v5p);
  CHECK(p.latency_seconds == Approx(2e-6 + 2 * v5p.hbm.latency_s));
  CHECK_THAT(p.formula, Contains("the reduction's 1 tiles x 2 L_hbm"));
  // An all-gather reduces nothing.
  const CollectivePrediction ag = predict_collective(spec("all-gather", "one-shot", "f32", 1 << 16, {2}), t, v5p);
  CHECK(ag.latency_seconds == Approx(2e-6));
}

TEST_CASE("collectives: on a torus the tree's latency counts the links of its longest root-to-leaf path",
          "[collectives]") {
  // A line of 16 (v5p 1x16x1): the trees' edges join ranks 1, 2, 4 and 8
  // links apart, 15 links from the deepest leaf to the root at depth 4; on
  // 8 x H100 every edge is one switched hop.
  const ChipConfig v5p = preset("v5p");
  const ici::Topology line = ici::make_topology(ici::TopologyRequest{"1x16x1", std::nullopt, true}, v5p);
  const CollectivePrediction p = predict_collective(spec("all-reduce", "tree", "f32", 1 << 16, {1}), line, v5p);
  CHECK_THAT(p.formula, Contains("depth = 4, path = 15 hops"));
  const CollectivePrediction node =
      predict_collective(spec("all-reduce", "tree", "f32", 1 << 16, {0}), topo("h100", "node:8"), preset("h100"));
  CHECK_THAT(node.formula, Contains("depth = 3, path = 3 hops"));
}

TEST_CASE("collectives: a ring over an axis without wraparound is folded", "[collectives]") {
  // Which axes fold: without wraparound and at least 4 chips.
  CHECK(folded_ring_axis(topo("v5e", "8x16"), 0));
  CHECK_FALSE(folded_ring_axis(topo("v5e", "8x16"), 1));  // wraps
  CHECK_FALSE(folded_ring_axis(topo("v5e", "3"), 0));     // 3 chips: the fold only reverses the ring
  CHECK_FALSE(folded_ring_axis(topo("v5e", "2x2"), 0));
  CHECK(folded_ring_axis(topo("v5e", "4x4"), 1));
  CHECK_FALSE(folded_ring_axis(topo("h100", "node:8"), 0));  // switched
  // The order: evens up, odds down.
  auto order = [](std::uint32_t l, bool folded) {
    std::vector<std::uint32_t> out;
    for (std::uint32_t p = 0; p < l; ++p) out.push_back(ring_coordinate(p, l, folded));
    return out;
  };
  CHECK(order(8, true) == std::vector<std::uint32_t>{0, 2, 4, 6, 7, 5, 3, 1});
  CHECK(order(5, true) == std::vector<std::uint32_t>{0, 2, 4, 3, 1});
  CHECK(order(4, true) == std::vector<std::uint32_t>{0, 2, 3, 1});
  CHECK(order(5, false) == std::vector<std::uint32_t>{0, 1, 2, 3, 4});
  for (std::uint32_t l = 2; l <= 20; ++l) {
    for (bool folded : {false, true}) {
      for (std::uint32_t p = 0; p < l; ++p) CHECK(ring_position(ring_coordinate(p, l, folded), l, folded) == p);
    }
  }
}

TEST_CASE("collectives: a folded ring crosses each link direction once, in hops of at most 2 links", "[collectives]") {
  for (std::uint32_t l = 4; l <= 20; ++l) {
    INFO("L = " << l);
    const RingLinkLoads f = ring_link_loads(l, false, true);
    CHECK(f.longest_hop == 2);
    CHECK(f.one_way == 1);
    CHECK(f.both_ways == 2);
    for (std::uint32_t i = 0; i + 1 < l; ++i) {
      CHECK(f.plus[i] == 1);
      CHECK(f.minus[i] == 1);
    }
    CHECK(f.plus[l - 1] + f.minus[l - 1] == 0);  // no wraparound link
    // The unfolded ring on the same line: its closing hop runs back over all
    // of it (the same loads, one hop of L-1 links).
    const RingLinkLoads line = ring_link_loads(l, false, false);
    CHECK(line.longest_hop == l - 1);
    CHECK(line.one_way == 1);
    CHECK(line.both_ways == 2);
    // With wraparound: every hop one link, a ring going one way uses one direction.
    const RingLinkLoads ring = ring_link_loads(l, true, false);
    CHECK(ring.longest_hop == 1);
    CHECK(ring.both_ways == 1);
    for (std::uint32_t i = 0; i < l; ++i) CHECK((ring.plus[i] == 1 && ring.minus[i] == 0));
  }
  // 3 chips, no wraparound: 0 -> 1 -> 2 -> 0, the last hop over 2 links.
  const RingLinkLoads three = ring_link_loads(3, false, false);
  CHECK(three.longest_hop == 2);
  CHECK(three.both_ways == 2);
}

TEST_CASE("collectives: direct algorithms sum in rank order, so every rank holds the same bits", "[collectives]") {
  // Ranks 0..3 hold 2^-24, 2^-24, 1, 0: in rank order 2^-24 + 2^-24 = 2^-23,
  // then 1 + 2^-23 (exact); a ring starting at rank 2 would give 1 (both
  // tiny terms lost to round-to-even).
  const ici::Topology t = topo("h100", "node:4");
  for (const std::string algorithm : {"one-shot", "two-shot"}) {
    INFO(algorithm);
    const CollectiveSpec s = spec("all-reduce", algorithm, "f32", 4 * 32, {0});
    const CollectiveShapes sh = collective_shapes(s, t);
    const float tiny = std::ldexp(1.0f, -24);
    auto value = [&](std::uint32_t c, std::uint64_t) { return c < 2 ? tiny : c == 2 ? 1.0f : 0.0f; };
    const auto out = collective_reference(s, t, inputs_of(t, sh.input_bytes, false, value));
    for (std::uint32_t c = 0; c < 4; ++c) {
      for (std::uint64_t e = 0; e < sh.output_bytes / 4; ++e) CHECK(element(out[c], e, false) == 1.0f + 2 * tiny);
    }
  }
  const CollectiveSpec ring = spec("all-reduce", "ring", "f32", 4 * 32, {0});
  const auto ring_out = collective_reference(ring, t, inputs_of(t, 4 * 32, false, [&](std::uint32_t c, std::uint64_t) {
                                               return c < 2 ? std::ldexp(1.0f, -24) : c == 2 ? 1.0f : 0.0f;
                                             }));
  bool differs = false;
  for (std::uint64_t e = 0; e < 32; ++e)
    differs = differs || element(ring_out[0], e, false) != 1.0f + std::ldexp(1.0f, -23);
  CHECK(differs);  // the order matters for these inputs
}

TEST_CASE("collectives: two-shot refuses a lone all-gather or reduce-scatter", "[collectives]") {
  const ici::Topology t = topo("h100", "node:8");
  CHECK_THAT(error_of([&] { collective_shapes(spec("all-gather", "two-shot", "f32", 1 << 16, {0}), t); }),
             Contains("two-shot is an all-reduce algorithm"));
}

TEST_CASE("collectives: in-network runs within one switched domain, sums in rank order", "[collectives]") {
  const ici::Topology t = topo("h100", "node:4");
  const CollectiveSpec s = spec("all-reduce", "in-network", "f32", 4 * 32, {0});
  const CollectiveShapes sh = collective_shapes(s, t);
  CHECK(sh.scratch_bytes == 0);
  const float tiny = std::ldexp(1.0f, -24);
  auto value = [&](std::uint32_t c, std::uint64_t) { return c < 2 ? tiny : c == 2 ? 1.0f : 0.0f; };
  const auto out = collective_reference(s, t, inputs_of(t, sh.input_bytes, false, value));
  for (std::uint32_t c = 0; c < 4; ++c) CHECK(element(out[c], 0, false) == 1.0f + 2 * tiny);
  // Refusals name what is missing.
  CHECK_THAT(
      error_of([&] { collective_shapes(spec("all-reduce", "in-network", "f32", 1 << 16, {0}), topo("v5e", "4x4")); }),
      Contains("in-network needs switches that reduce and multicast"));
  CHECK_THAT(error_of([&] { collective_shapes(spec("all-to-all", "in-network", "f32", 1 << 16, {0}), t); }),
             Contains("in-network has no all-to-all"));
  CHECK_THAT(
      error_of([&] {
        collective_shapes(spec("all-reduce", "in-network", "f32", 1 << 16, {0, 1}), topo("h100", "fat-tree:2x4"));
      }),
      Contains("the group must be axis x of fat-tree:2x4 (the chips of one node)"));
}

TEST_CASE("collectives: tree sums own + first child + second child, NCCL's trees, tree 1 shifted", "[collectives]") {
  // Three ranks: tree 0 is NCCL's btree 0 -> 2 -> 1 (rank 2's children 1 and
  // 3, the second past the group), tree 1 its shift by one (an odd group)
  // 1 -> 0 -> 2. With x = (2^24, 1, 1): half 0 = x0 + (x2 + x1) = 2^24 + 2,
  // half 1 = x1 + (x0 + x2) = 2^24 (each 1 lost to round-to-even).
  const ici::Topology t = topo("h100", "node:3");
  const float f = 16777216.0f;
  const CollectiveSpec s = spec("all-reduce", "tree", "f32", 192, {0});
  const auto out = collective_reference(
      s, t, inputs_of(t, 192, false, [f](std::uint32_t c, std::uint64_t) { return c == 0 ? f : 1.0f; }));
  for (std::uint32_t c = 0; c < 3; ++c) {
    for (std::uint64_t e = 0; e < 24; ++e) REQUIRE(element(out[c], e, false) == f + 2);
    for (std::uint64_t e = 24; e < 48; ++e) REQUIRE(element(out[c], e, false) == f);
  }
  CHECK_THAT(error_of([&] { collective_shapes(spec("reduce-scatter", "tree", "f32", 192, {0}), t); }),
             Contains("tree is an all-reduce algorithm"));
}

TEST_CASE("collectives: an NCCL protocol's base latency is a countdown loop at the program's start", "[collectives]") {
  const ici::Topology t = topo("h100", "node:8");
  const CollectiveSpec s = spec("all-reduce", "ring", "f32", 1 << 20, {0});
  const std::string plain = generate_collective(s, t, preset("h100"));
  CHECK(plain.find("launch_wait") == std::string::npos);
  // 6.6 us at 1.98 GHz: 13068 cycles, 1 + 6 x 2178.
  const std::string ll = generate_collective(s, t, preset("h100", {"fabric.protocol=LL"}));
  CHECK_THAT(ll, Contains("// LL base latency 6.6e-06 s (launch and set-up): 2178 x 6 bundles\n{ %s63 = smov 2178 }"));
  // The rest of the program is unchanged.
  std::string stripped = ll;
  const std::size_t from = stripped.find("// LL base latency");
  const std::size_t to = stripped.find("{}\n{}\n{}\n{}\n", from) + 12;
  stripped.erase(from, to - from);
  CHECK(stripped == plain);
  // The prediction carries it (and the protocol's hop and payload rate).
  const CollectivePrediction none = predict_collective(s, t, preset("h100"));
  const CollectivePrediction p =
      predict_collective(s, t, preset("h100", {"fabric.protocol=LL", "protocol.ll.max_bandwidth=0B/s"}));
  CHECK(p.latency_seconds == Approx(none.latency_seconds + 6.6e-6));
  CHECK(p.bandwidth_seconds == Approx(2 * none.bandwidth_seconds));  // LL: half the payload (without its cap)
  CHECK_THAT(p.formula, Contains("+ LL base latency 6.6e-06 s"));
}

TEST_CASE("collectives: NCCL's channel tuning, per size, protocol and kernel", "[collectives]") {
  // src/enqueue.cc topoGetAlgoInfo: the most channels c <= nChannels with
  // nBytes >= c x maxThreads x threadThreshold (the ring's LL threshold x ranks).
  const auto channels = [](const char* chip, const char* proto, const char* algorithm, std::uint64_t bytes,
                           const char* op = "all-reduce") {
    const ChipConfig c = preset(chip, {std::string("fabric.protocol=") + proto});
    return nccl_channels_in_use(spec(op, algorithm, "f32", bytes, {0}), 8, c);
  };
  // A100 (24 channels), ring: LL 512 threads x 8 B x 8 ranks = 32 KiB a channel,
  // LL128 640 x 8 B = 5 KiB, Simple 512 x 64 B = 32 KiB.
  CHECK(channels("a100", "LL", "ring", 32 << 10) == 1);
  CHECK(channels("a100", "LL", "ring", 64 << 10) == 2);
  CHECK(channels("a100", "LL", "ring", (768 << 10) - 1024) == 23);
  CHECK(channels("a100", "LL", "ring", 768 << 10) == 24);
  CHECK(channels("a100", "LL", "ring", 1 << 30) == 24);
  CHECK(channels("a100", "LL", "bidir-ring", 64 << 10) == 2);
  CHECK(channels("a100", "LL128", "ring", 32 << 10) == 6);
  CHECK(channels("a100", "Simple", "ring", 32 << 10) == 1);
  CHECK(channels("a100", "Simple", "ring", 1 << 20) == 24);
  CHECK(channels("a100", "LL", "ring", 32 << 10, "all-gather") == 1);
  // The tree's LL threshold is not x ranks: 512 x 8 B = 4 KiB a channel.
  CHECK(channels("a100", "LL", "tree", 32 << 10) == 8);
  // H100: 32 channels.
  CHECK(channels("h100", "LL", "ring", 2 << 20) == 32);
  CHECK(channels("h100", "LL", "ring", 512 << 10) == 16);
  // No tuning: algorithms NCCL runs without it, all-to-all, no protocol.
  CHECK(channels("a100", "LL", "one-shot", 32 << 10) == 0);
  CHECK(channels("a100", "LL", "halving-doubling", 32 << 10) == 0);
  CHECK(channels("h100", "NVLS", "in-network", 32 << 10) == 0);
  CHECK(channels("a100", "LL", "ring", 32 << 10, "all-to-all") == 0);
  CHECK(nccl_channels_in_use(spec("all-reduce", "ring", "f32", 32 << 10, {0}), 8, preset("a100")) == 0);
}

TEST_CASE("collectives: a small ring all-reduce on 8 x A100 runs on NCCL's one channel", "[collectives]") {
  // 32 KiB under LL: one channel of 24 moves 12 x 10 GB/s x 0.5 / 24 = 5 GB/s
  // out of a GPU, 5 / 6 GB/s over each of its 6 switches (2 NVLinks each). A
  // step's 4 KiB is sprayed over the 6 paths in 12 units of 352 B (4096 / 12
  // rounded up to 32 B), 2 per path: 704 B as one packet, which crosses the
  // GPU -> switch link and then, store-and-forward, the switch -> GPU link:
  // 2 x 704 B at 5 / 6 GB/s = 1.69 us a step on top of the 0.6 us hop, where
  // 4096 / 5e9 = 0.82 us streamed through would be 26.5 us in all. Each step
  // is one DMA, so the 7 reduce steps after the first (rounds 1 to 7) also
  // wait for their HBM loads, 0.5 us each. So the prediction is 6.6 + 14 x
  // (0.6 + 1408 / (5e9 / 6)) + 7 x 0.5 us = 42.2 us (measured 42.88); with every
  // channel (87.7 GB/s, LL's cap) 6.6 + 14 x (0.6 + 1408 / (87.7e9 / 6)) + 3.5 = 19.8 us.
  const ici::Topology t = topo("a100", "node:8");
  const CollectiveSpec s = spec("all-reduce", "ring", "f32", 32 << 10, {0});
  const ChipConfig one = preset("a100", {"fabric.protocol=LL", "fabric.active_channels=1"});
  const ChipConfig all = preset("a100", {"fabric.protocol=LL"});
  CHECK(predict_collective(s, t, one).seconds ==
        Approx(6.6e-6 + 14 * (0.6e-6 + 1408 / (5e9 / 6)) + 7 * 0.5e-6).epsilon(0.01));
  CHECK(predict_collective(s, t, all).seconds ==
        Approx(6.6e-6 + 14 * (0.6e-6 + 1408 / (87.7e9 / 6)) + 7 * 0.5e-6).epsilon(0.01));
  CHECK_THAT(predict_collective(s, t, one).formula, Contains("+ 7*L_hbm"));
  // The store-and-forward alone: what the 14 steps take beyond 4096 B / B each.
  const SwitchedHop hop = switched_hop(plan_collective(s, t), t, one);
  CHECK(hop.store_and_forward(4096) == Approx(1408 / (5e9 / 6) - 4096 / 5e9).epsilon(1e-6));
  // Two transfers at once: 1408 B of parts on each path, then the last 704 B packet.
  CHECK(hop.store_and_forward(4096, 2) == Approx(2112 / (5e9 / 6) - 8192 / 5e9).epsilon(1e-6));
  // A long transfer pays one 16 KiB packet per path once: 96 packets, 16 per path.
  CHECK(hop.store_and_forward(96 * 16384) == Approx(16384 / (5e9 / 6)).epsilon(1e-6));
}
