// ICI topology (shapes, wraparound, chip ids, neighbours, hop distances) and
// routing policies, plain C++.
#include <catch2/catch.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ici/routing.hpp"
#include "ici/topology.hpp"
#include "tests/test_support.hpp"

using namespace tpuemu;
using namespace tpuemu::ici;
using Catch::Contains;

namespace {

using test::preset;

Topology topo(const std::string& chip, const std::string& shape, std::optional<std::vector<bool>> wrap = std::nullopt,
              bool force = false) {
  return make_topology(TopologyRequest{shape, std::move(wrap), force}, preset(chip));
}

std::vector<bool> wraps_of(const Topology& t) {
  std::vector<bool> out;
  for (std::size_t a = 0; a < t.axis_count(); ++a) out.push_back(t.wraps(a));
  return out;
}

// The what() of the E that f() throws; "<no exception>" if it returns.
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no exception>";
}

ChipId id(const Topology& t, std::uint32_t x, std::uint32_t y = 0, std::uint32_t z = 0) {
  return t.linear_id(Coords{x, y, z});
}

}  // namespace

TEST_CASE("ici: default wraparound follows the preset's rule", "[ici]") {
  struct Row {
    const char* chip;
    const char* shape;
    std::vector<bool> wraps;
  };
  const std::vector<Row> rows = {
      // v5e/v6e: an axis wraps iff its length is a multiple of 16.
      {"v5e", "8x16", {false, true}},
      {"v5e", "16x8", {true, false}},
      {"v5e", "16x16", {true, true}},
      {"v5e", "4x8", {false, false}},
      {"v5e", "16", {true}},
      {"v6e", "8x16", {false, true}},
      // v4p/v5p: wraparound only for slices of whole 4x4x4 cubes, then on every axis.
      {"v5p", "4x4x4", {true, true, true}},
      {"v5p", "2x4x4", {false, false, false}},
      {"v5p", "4x4x8", {true, true, true}},
      {"v5p", "4x4x6", {false, false, false}},
      {"v4p", "2x2x1", {false, false, false}},
      {"v4p", "8x4x4", {true, true, true}},
      {"v5p", "4x4", {false, false}},
  };
  for (const Row& r : rows) {
    INFO(r.chip << " " << r.shape);
    const Topology t = topo(r.chip, r.shape);
    CHECK(wraps_of(t) == r.wraps);
  }
}

TEST_CASE("ici: an axis of length 1 or 2 never wraps by default", "[ici]") {
  // With a wrap multiple of 2 (or 1), length 2 would qualify, but its two chips
  // are already direct neighbours: there is no separate wraparound link.
  const ChipConfig chip = preset("v5p", {"ici.wrap_multiple=2"});
  CHECK(wraps_of(make_topology({"2x4x4", std::nullopt, false}, chip)) == std::vector<bool>{false, true, true});
  const ChipConfig every = preset("v5p", {"ici.wrap_multiple=1"});
  CHECK(wraps_of(make_topology({"1x2x3", std::nullopt, false}, every)) == std::vector<bool>{false, false, true});
}

TEST_CASE("ici: an explicit --wrap overrides the preset's rule", "[ici]") {
  struct Row {
    const char* chip;
    const char* shape;
    const char* wrap;  // --wrap text
    std::vector<bool> wraps;
  };
  const std::vector<Row> rows = {
      {"v5e", "8x16", "x,y", {true, true}},
      {"v5e", "8x16", "x", {true, false}},
      {"v5e", "16x16", "none", {false, false}},
      {"v5p", "4x4x4", "x,z", {true, false, true}},
      {"v5p", "4x4x4", "none", {false, false, false}},
      {"v5p", "2x4x4", "y", {false, true, false}},
      {"v5e", "4x8", "y", {false, true}},
  };
  for (const Row& r : rows) {
    INFO(r.chip << " " << r.shape << " --wrap " << r.wrap);
    const auto wrap = parse_wrap_axes(r.wrap, r.wraps.size());
    CHECK(wrap == r.wraps);
    CHECK(wraps_of(topo(r.chip, r.shape, wrap)) == r.wraps);
  }
}

TEST_CASE("ici: --wrap parsing", "[ici]") {
  CHECK(parse_wrap_axes("x,z", 3) == std::vector<bool>{true, false, true});
  CHECK(parse_wrap_axes("z,x", 3) == std::vector<bool>{true, false, true});
  CHECK(parse_wrap_axes(" y ", 2) == std::vector<bool>{false, true});
  CHECK(parse_wrap_axes("none", 3) == std::vector<bool>{false, false, false});
  CHECK(parse_wrap_axes("x", 1) == std::vector<bool>{true});

  struct Row {
    const char* text;
    std::size_t axes;
    const char* message;
  };
  const std::vector<Row> rows = {
      {"x,w", 3, "--wrap 'x,w': unknown axis 'w'; name axes like x,z (axes: x, y, z) or 'none'"},
      {"X", 2, "unknown axis 'X'"},
      {"xy", 2, "unknown axis 'xy'"},
      {"z", 2, "--wrap 'z': axis z does not exist in a 2-axis topology; name axes like x,z (axes: x, y)"},
      {"x,x", 2, "axis x is named twice"},
      {"x,", 2, "an axis name is missing"},
      {"", 2, "--wrap '': empty"},
  };
  for (const Row& r : rows) {
    INFO("--wrap '" << r.text << "'");
    CHECK_THAT(error_of<TopologyError>([&] { (void)parse_wrap_axes(r.text, r.axes); }), Contains(r.message));
  }
}

TEST_CASE("ici: linear ids and coordinates round-trip for every chip", "[ici]") {
  for (const auto& [chip, shape] : std::vector<std::pair<const char*, const char*>>{
           {"v5p", "4x4x4"}, {"v5e", "8x16"}, {"v5p", "2x3x5"}, {"v5e", "7"}}) {
    INFO(shape);
    const Topology t = topo(chip, shape);
    const std::uint32_t X = t.length(0);
    const std::uint32_t Y = t.axis_count() > 1 ? t.length(1) : 1;
    const std::uint32_t Z = t.axis_count() > 2 ? t.length(2) : 1;
    REQUIRE(t.chip_count() == X * Y * Z);
    std::uint32_t expected = 0;
    for (std::uint32_t z = 0; z < Z; ++z) {
      for (std::uint32_t y = 0; y < Y; ++y) {
        for (std::uint32_t x = 0; x < X; ++x, ++expected) {
          const ChipId chip_id = t.linear_id(Coords{x, y, z});
          CHECK(chip_id == ChipId(x + X * (y + Y * z)));
          CHECK(chip_id == ChipId(expected));
          CHECK(t.coords(chip_id) == Coords{x, y, z});
        }
      }
    }
  }
}

TEST_CASE("ici: chips and coordinates outside the topology are rejected", "[ici]") {
  const Topology t = topo("v5e", "8x16");
  CHECK(t.contains(ChipId(127)));
  CHECK_FALSE(t.contains(ChipId(128)));
  CHECK_THROWS_AS(t.coords(ChipId(128)), std::out_of_range);
  CHECK_THROWS_AS(t.linear_id(Coords{8, 0, 0}), std::out_of_range);
  CHECK_THROWS_AS(t.linear_id(Coords{0, 0, 1}), std::out_of_range);  // no z axis
  CHECK_THROWS_AS(t.neighbour(ChipId(0), 2, 1), std::invalid_argument);
  CHECK_THROWS_AS(t.neighbour(ChipId(0), 0, 0), std::invalid_argument);
  CHECK_THROWS_AS(t.hop_distance(ChipId(0), ChipId(500)), std::out_of_range);
  CHECK_THROWS_AS(Topology({2, 4}, {true, false}), std::invalid_argument);  // length 2 cannot wrap
  CHECK_THROWS_AS(Topology({4, 4}, {true}), std::invalid_argument);
  CHECK_THROWS_AS(Topology({}, {}), std::invalid_argument);
}

TEST_CASE("ici: neighbours at edges, with and without wraparound", "[ici]") {
  const Topology t816 = topo("v5e", "8x16");  // wraps y only
  const Topology t816w = topo("v5e", "8x16", {{true, true}});
  const Topology t444 = topo("v5p", "4x4x4");                                        // wraps all
  const Topology t244 = topo("v5p", "2x4x4", std::vector<bool>{false, true, true});  // x has length 2
  const Topology t1 = topo("v5e", "1x16");                                           // x has length 1
  struct Row {
    const Topology* t;
    Coords from;
    std::size_t axis;
    int direction;
    std::optional<Coords> to;
  };
  const std::vector<Row> rows = {
      {&t816, {0, 0, 0}, 0, +1, Coords{1, 0, 0}},
      {&t816, {0, 0, 0}, 0, -1, std::nullopt},  // x edge, no wrap
      {&t816, {7, 3, 0}, 0, +1, std::nullopt},
      {&t816, {7, 3, 0}, 0, -1, Coords{6, 3, 0}},
      {&t816, {2, 0, 0}, 1, -1, Coords{2, 15, 0}},  // y wraps
      {&t816, {2, 15, 0}, 1, +1, Coords{2, 0, 0}},
      {&t816w, {0, 5, 0}, 0, -1, Coords{7, 5, 0}},
      {&t816w, {7, 5, 0}, 0, +1, Coords{0, 5, 0}},
      {&t444, {3, 3, 3}, 2, +1, Coords{3, 3, 0}},
      {&t444, {0, 0, 0}, 2, -1, Coords{0, 0, 3}},
      {&t444, {1, 2, 3}, 1, +1, Coords{1, 3, 3}},
      {&t244, {0, 1, 1}, 0, +1, Coords{1, 1, 1}},
      {&t244, {1, 1, 1}, 0, +1, std::nullopt},  // length 2: no wraparound link
      {&t244, {0, 1, 1}, 0, -1, std::nullopt},
      {&t244, {1, 1, 1}, 0, -1, Coords{0, 1, 1}},
      {&t244, {0, 0, 3}, 2, +1, Coords{0, 0, 0}},
      {&t1, {0, 4, 0}, 0, +1, std::nullopt},  // length 1: no links
      {&t1, {0, 4, 0}, 0, -1, std::nullopt},
      {&t1, {0, 0, 0}, 1, -1, Coords{0, 15, 0}},
  };
  for (const Row& r : rows) {
    INFO(r.t->shape() << " from (" << r.from[0] << "," << r.from[1] << "," << r.from[2] << ") axis " << r.axis
                      << " direction " << r.direction);
    const auto n = r.t->neighbour(r.t->linear_id(r.from), r.axis, r.direction);
    REQUIRE(n.has_value() == r.to.has_value());
    if (r.to) CHECK(r.t->coords(*n) == *r.to);
  }
}

TEST_CASE("ici: hop distances take the wraparound where there is one", "[ici]") {
  const Topology t816 = topo("v5e", "8x16");
  const Topology t444 = topo("v5p", "4x4x4");
  const Topology t444n = topo("v5p", "4x4x4", std::vector<bool>{false, false, false});
  const Topology t244 = topo("v5p", "2x4x4", std::vector<bool>{false, true, true});
  struct Row {
    const Topology* t;
    Coords a;
    Coords b;
    std::uint32_t hops;
  };
  const std::vector<Row> rows = {
      {&t816, {0, 0, 0}, {0, 0, 0}, 0},  {&t816, {0, 0, 0}, {7, 0, 0}, 7},  // x does not wrap
      {&t816, {0, 0, 0}, {0, 15, 0}, 1},                                    // y wraps
      {&t816, {0, 0, 0}, {0, 8, 0}, 8},                                     // half the ring
      {&t816, {0, 3, 0}, {0, 12, 0}, 7}, {&t816, {1, 2, 0}, {6, 14, 0}, 5 + 4}, {&t444, {0, 0, 0}, {3, 3, 3}, 3},
      {&t444, {0, 0, 0}, {2, 2, 2}, 6},  {&t444n, {0, 0, 0}, {3, 3, 3}, 9},     {&t244, {0, 0, 0}, {1, 3, 3}, 3},
  };
  for (const Row& r : rows) {
    INFO(r.t->shape() << " " << r.a[0] << r.a[1] << r.a[2] << " -> " << r.b[0] << r.b[1] << r.b[2]);
    CHECK(r.t->hop_distance(r.t->linear_id(r.a), r.t->linear_id(r.b)) == r.hops);
    CHECK(r.t->hop_distance(r.t->linear_id(r.b), r.t->linear_id(r.a)) == r.hops);
  }
}

TEST_CASE("ici: dimension-order routes are shortest chains, x first", "[ici]") {
  const RoutingPolicy& policy = routing_policy("dimension-order");
  CHECK(policy.name() == "dimension-order");
  const std::vector<Topology> topologies = {topo("v5p", "4x4x4"),
                                            topo("v5p", "2x4x4", std::vector<bool>{false, true, true}),
                                            topo("v5e", "8x16"),
                                            topo("v5e", "3x5"),
                                            topo("v5e", "5x3", std::vector<bool>{true, true}),
                                            topo("v5e", "6", std::vector<bool>{true}),
                                            topo("v5e", "1"),
                                            topo("v5p", "3x1x4", std::vector<bool>{true, false, true})};
  for (const Topology& t : topologies) {
    INFO(describe(t));
    for (std::uint32_t a = 0; a < t.chip_count(); ++a) {
      for (std::uint32_t b = 0; b < t.chip_count(); ++b) {
        const std::vector<Link> route = policy.route(t, ChipId(a), ChipId(b));
        INFO("route " << a << " -> " << b);
        REQUIRE(route.size() == t.hop_distance(ChipId(a), ChipId(b)));
        if (route.empty()) continue;
        CHECK(route.front().from == ChipId(a));
        CHECK(route.back().to == ChipId(b));
        for (std::size_t i = 0; i < route.size(); ++i) {
          const Link& l = route[i];
          CHECK(t.neighbour(l.from, l.axis, l.direction) == l.to);
          if (i + 1 < route.size()) {
            CHECK(l.to == route[i + 1].from);
            CHECK(l.axis <= route[i + 1].axis);  // x, then y, then z
            if (l.axis == route[i + 1].axis) CHECK(l.direction == route[i + 1].direction);
          }
        }
      }
    }
  }
}

TEST_CASE("ici: dimension-order routes, worked examples", "[ici]") {
  const RoutingPolicy& policy = routing_policy("dimension-order");
  const Topology t816 = topo("v5e", "8x16");
  // (1,14) -> (3,1): x up two hops (no wrap on x), then y up 3 hops through the wraparound.
  const auto r = policy.route(t816, id(t816, 1, 14), id(t816, 3, 1));
  const std::vector<Link> expected = {{id(t816, 1, 14), id(t816, 2, 14), 0, 1},
                                      {id(t816, 2, 14), id(t816, 3, 14), 0, 1},
                                      {id(t816, 3, 14), id(t816, 3, 15), 1, 1},
                                      {id(t816, 3, 15), id(t816, 3, 0), 1, 1},
                                      {id(t816, 3, 0), id(t816, 3, 1), 1, 1}};
  CHECK(r == expected);
  // x does not wrap: 7 -> 0 goes down 7 hops, not up 1.
  const auto down = policy.route(t816, id(t816, 7, 0), id(t816, 0, 0));
  REQUIRE(down.size() == 7);
  for (const Link& l : down) CHECK((l.axis == 0 && l.direction == -1));
  // y wraps: (0,1) -> (0,15) goes down 2 hops through the wraparound.
  const auto wrap = policy.route(t816, id(t816, 0, 1), id(t816, 0, 15));
  CHECK(wrap == std::vector<Link>{{id(t816, 0, 1), id(t816, 0, 0), 1, -1}, {id(t816, 0, 0), id(t816, 0, 15), 1, -1}});
  // A tie (half the ring) goes the positive way.
  const Topology ring = topo("v5p", "4x4x4");
  for (std::uint32_t from = 0; from < 4; ++from) {
    INFO("ring position " << from);
    const auto tie = policy.route(ring, id(ring, 0, 0, from), id(ring, 0, 0, (from + 2) % 4));
    REQUIRE(tie.size() == 2);
    CHECK((tie[0].axis == 2 && tie[0].direction == 1 && tie[1].direction == 1));
  }
  const auto tie16 = policy.route(t816, id(t816, 0, 12), id(t816, 0, 4));
  REQUIRE(tie16.size() == 8);
  CHECK(tie16.front().direction == 1);
  CHECK(policy.route(t816, ChipId(5), ChipId(5)).empty());
  CHECK_THROWS_AS(policy.route(t816, ChipId(0), ChipId(128)), std::out_of_range);
}

TEST_CASE("ici: routing policies are found by name", "[ici]") {
  const auto names = routing_policy_names();
  CHECK(std::set<std::string>(names.begin(), names.end()).count("dimension-order") == 1);
  CHECK(&routing_policy("dimension-order") == &routing_policy("dimension-order"));
  const std::string message = error_of<RoutingError>([] { (void)routing_policy("shortest-random"); });
  CHECK_THAT(message, Contains("unknown routing policy 'shortest-random' (known: ") && Contains("dimension-order"));
}

TEST_CASE("ici: malformed or unfit topologies are rejected by name", "[ici]") {
  struct Row {
    const char* chip;
    const char* shape;
    std::optional<std::vector<bool>> wrap;
    bool force;
    const char* message;
  };
  const std::vector<Row> rows = {
      {"v5e", "", std::nullopt, false,
       "topology '' on v5e: the shape is empty; expected axis lengths joined by 'x', like 16x16"},
      {"v5e", "8x", std::nullopt, false, "topology '8x' on v5e: axis y is empty; expected axis lengths joined by 'x'"},
      {"v5e", "x8", std::nullopt, false, "topology 'x8' on v5e: axis x is empty"},
      {"v5e", "8xx8", std::nullopt, false, "topology '8xx8' on v5e: axis y is empty"},
      {"v5e", "8x-1", std::nullopt, false, "topology '8x-1' on v5e: axis y: '-1' is not a whole number"},
      {"v5e", "8X16", std::nullopt, false, "topology '8X16' on v5e: axis x: '8X16' is not a whole number"},
      {"v5e", " 8x16", std::nullopt, false, "axis x: ' 8' is not a whole number"},
      {"v5e", "0x4", std::nullopt, false, "topology '0x4' on v5e: axis x has length 0"},
      {"v5p", "4x0x4", std::nullopt, false, "topology '4x0x4' on v5p: axis y has length 0"},
      {"v5e", "99999999x1", std::nullopt, false, "axis x: 99999999 is too long"},
      {"v5e", "4x4x4", std::nullopt, false, "topology '4x4x4' on v5e: 3 axes, but v5e is a 2D torus (ici.torus_dims)"},
      {"v5p", "2x2x2x2", std::nullopt, false, "topology '2x2x2x2' on v5p: 4 axes, but v5p is a 3D torus"},
      {"v5e", "32x16", std::nullopt, false,
       "topology '32x16' on v5e: 512 chips is more than v5e's largest slice 16x16 (256 chips, ici.max_slice); pass "
       "--force to allow it"},
      {"v5e", "257", std::nullopt, false, "257 chips is more than v5e's largest slice 16x16 (256 chips"},
      {"v5p", "32x32x32", std::nullopt, false, "32768 chips is more than v5p's largest slice 16x20x28 (8960 chips"},
      {"v5e", "256", std::nullopt, false,
       "topology '256' on v5e: the axes do not fit v5e's largest slice 16x16 (ici.max_slice) in any orientation: its "
       "longest axis holds at most 16 chips, this shape needs 256; pass --force to allow it"},
      {"v5e", "4x64", std::nullopt, false, "its longest axis holds at most 16 chips, this shape needs 64"},
      {"v2", "8x1", std::nullopt, false, "v2's largest slice 4x2 (ici.max_slice) in any orientation: its longest axis"},
      {"v5p", "28x28x1", std::nullopt, false, "its second longest axis holds at most 20 chips, this shape needs 28"},
      {"v5e", "8x32", std::nullopt, false, "its longest axis holds at most 16 chips, this shape needs 32"},
      {"v6e", "2x2x2", std::nullopt, false, "3 axes, but v6e is a 2D torus"},
      {"v5p", "20x20x20", std::nullopt, false, "its third longest axis holds at most 16 chips, this shape needs 20"},
      {"v5e", "8x16", std::vector<bool>{true, true, false}, false,
       "topology '8x16' on v5e: --wrap gives 3 axes, but the shape has 2"},
      {"v5e", "8x16", std::vector<bool>{true}, false, "--wrap gives 1 axes, but the shape has 2"},
      {"v5p", "2x4x4", std::vector<bool>{true, true, true}, false,
       "topology '2x4x4' on v5p: axis x has length 2 and cannot wrap"},
      {"v5e", "1x16", std::vector<bool>{true, true}, false, "axis x has length 1 and cannot wrap"},
      {"v5e", "100000x100000", std::nullopt, true, "10000000000 chips is more than a chip id can number"},
  };
  for (const Row& r : rows) {
    INFO(r.chip << " '" << r.shape << "'");
    CHECK_THAT(error_of<TopologyError>([&] { (void)topo(r.chip, r.shape, r.wrap, r.force); }), Contains(r.message));
  }
}

TEST_CASE("ici: --force allows more chips than the largest slice", "[ici]") {
  const Topology t = topo("v5e", "32x16", std::nullopt, true);
  CHECK(t.chip_count() == 512);
  CHECK(wraps_of(t) == std::vector<bool>{true, true});  // 32 is a multiple of 16
  // And axes longer than the slice's: 4x64 has v5e's 256 chips on a 64-chip axis.
  CHECK(topo("v5e", "4x64", std::nullopt, true).chip_count() == 256);
  CHECK(topo("v5e", "16x16").chip_count() == 256);
}

TEST_CASE("ici: a shape fits the largest slice in any orientation", "[ici]") {
  struct Row {
    const char* chip;
    const char* shape;
    std::uint32_t chips;
  };
  for (const Row& r : std::vector<Row>{{"v5e", "8x16", 128},
                                       {"v5e", "16x8", 128},
                                       {"v5e", "16", 16},
                                       {"v5e", "1x16", 16},
                                       {"v5p", "28x16x20", 8960},
                                       {"v5p", "1x28x1", 28},
                                       {"v2", "2x4", 8}}) {
    INFO(r.chip << " '" << r.shape << "'");
    CHECK(topo(r.chip, r.shape).chip_count() == r.chips);
  }
}

TEST_CASE("ici: describe", "[ici]") {
  CHECK(describe(topo("v5e", "8x16")) == "8x16 (128 chips), wraps: y");
  CHECK(describe(topo("v5e", "16x16")) == "16x16 (256 chips), wraps: x, y");
  CHECK(describe(topo("v5p", "4x4x4")) == "4x4x4 (64 chips), wraps: x, y, z");
  CHECK(describe(topo("v5p", "2x4x4")) == "2x4x4 (32 chips), no wraparound");
  CHECK(describe(topo("v5p", "2x4x4", std::vector<bool>{false, true, true})) == "2x4x4 (32 chips), wraps: y, z");
  CHECK(describe(topo("v5e", "2x2")) == "2x2 (4 chips), no wraparound");
  CHECK(describe(topo("v5p", "4x4x4", std::vector<bool>{true, false, true})) == "4x4x4 (64 chips), wraps: x, z");
  CHECK(describe(topo("v5e", "1")) == "1 (1 chip), no wraparound");
}

TEST_CASE("ici: switched topologies on GPU presets", "[ici][fabric]") {
  const Topology node = topo("h100", "node:8");
  CHECK(node.switched());
  CHECK(node.fabric() == "node");
  CHECK(node.shape() == "node:8");
  CHECK(node.chip_count() == 8);
  CHECK(wraps_of(node) == std::vector<bool>{true});  // a ring over the node closes through a switch
  CHECK(describe(node) == "node:8 (8 chips), switched");
  CHECK(wraps_of(topo("h100", "node:2")) == std::vector<bool>{false});
  const Topology rack = topo("gb200", "nvl:72");
  CHECK(rack.chip_count() == 72);
  const Topology tree = topo("h100", "fat-tree:4x8");
  CHECK(tree.shape() == "fat-tree:4x8");
  CHECK(tree.length(0) == 8);  // x: the chip in its node
  CHECK(tree.length(1) == 4);  // y: the node
  CHECK(tree.chip_count() == 32);
  CHECK(topo("h100", "1").chip_count() == 1);  // one GPU needs no fabric
}

TEST_CASE("ici: switched topologies the chip cannot form are rejected by name", "[ici][fabric]") {
  const auto error = [](const std::string& chip, const std::string& shape,
                        std::optional<std::vector<bool>> wrap = std::nullopt, bool force = false) {
    return error_of<TopologyError>([&] { topo(chip, shape, std::move(wrap), force); });
  };
  CHECK(error("v5e", "node:8") ==
        "topology 'node:8' on v5e: v5e is joined by a torus (fabric.kind torus), not by switches; node:N, nvl:N or "
        "fat-tree:NODESxN need a switched chip (the GPU presets a100, h100, h200, b200, gb200)");
  CHECK_THAT(error("h100", "4x4"), Contains("h100 joins chips through switches (fabric.kind nvswitch), not a torus"));
  CHECK(error("h100", "nvl:72") ==
        "topology 'nvl:72' on h100: 72 chips in one switched domain, but h100's domain joins at most 8 "
        "(fabric.domain_size)");
  CHECK_THAT(error("h100", "ring:8"), Contains("unknown fabric 'ring'; switched topologies are node:N, nvl:N"));
  CHECK_THAT(error("h100", "node:"), Contains("expected node:N with a whole number N of chips"));
  CHECK_THAT(error("h100", "node:0"), Contains("expected node:N"));
  CHECK_THAT(error("h100", "fat-tree:8"), Contains("expected fat-tree:NODESxN"));
  CHECK_THAT(error("h100", "fat-tree:2x16"), Contains("16 chips in one switched domain"));
  CHECK_THAT(error("h100", "node:8", std::vector<bool>{true}), Contains("--wrap applies to tori"));
  CHECK_THAT(error("h100", "node:8", std::nullopt, true), Contains("--force applies to tori"));
}
