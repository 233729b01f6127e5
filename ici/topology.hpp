// The pod's ICI topology: a 1- to 3-axis mesh of chips (axes x, y, z), each
// axis optionally closed into a ring by a wraparound link; linear chip ids,
// coordinates, neighbours and hop distances. Plain C++, no SystemC.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/chip_config.hpp"
#include "common/types.hpp"

namespace tpuemu::ici {

inline constexpr std::size_t kMaxAxes = 3;

// A chip's position: {x, y, z}; axes beyond the topology's axis count are 0.
using Coords = std::array<std::uint32_t, kMaxAxes>;

// 'x', 'y' or 'z'. Contract: axis < kMaxAxes.
char axis_name(std::size_t axis);

// A topology request that does not fit the chip, or malformed topology text.
// what() names the problem and, from make_topology, the preset.
class TopologyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the user asked for (--topology, --wrap / --no-wrap, --force).
struct TopologyRequest {
  std::string shape;                      // "8x16", "4x4x4", "16"
  std::optional<std::vector<bool>> wrap;  // explicit per-axis wraparound; nullopt = the preset's rule
  bool force = false;                     // allow shapes beyond the preset's largest slice
};

// An immutable topology.
// Contract:
//  * linear id = x + X*(y + Y*z) (docs/ISA.md section 5), ids 0..chip_count()-1.
//  * An axis of length 1 has no links; an axis of length 2 has one link per
//    direction between its two chips and never wraps (a wraparound link would
//    join the same two chips again); a wrapping axis of length L >= 3 is a ring.
//  * Methods taking a ChipId or Coords throw std::out_of_range for a chip
//    outside the topology; an axis >= axis_count() or a direction other than
//    +1/-1 throws std::invalid_argument.
class Topology {
 public:
  // Throws std::invalid_argument unless: 1..kMaxAxes axes, each >= 1;
  // wraps.size() == dims.size(); no wrap on an axis shorter than 3; the chip
  // count fits a ChipId. make_topology is the checked, user-facing way in.
  // `fabric` names the fabric kind (ici/fabric.hpp) that joins the chips:
  // "torus" (the ICI links are the topology's neighbours), or a switched kind
  // ("node", "nvl", "fat-tree"), where the axes only number the chips (a
  // fat tree's x is the chip in its node, y the node) and every chip reaches
  // every other; a wrapping axis then says that a ring over it closes.
  Topology(std::vector<std::uint32_t> dims, std::vector<bool> wraps, std::string fabric = "torus");

  [[nodiscard]] std::size_t axis_count() const { return dims_.size(); }
  [[nodiscard]] std::span<const std::uint32_t> dims() const { return dims_; }
  [[nodiscard]] std::uint32_t length(std::size_t axis) const;
  [[nodiscard]] bool wraps(std::size_t axis) const;
  [[nodiscard]] std::uint32_t chip_count() const { return chip_count_; }
  [[nodiscard]] bool contains(ChipId chip) const { return chip.value() < chip_count_; }
  // "8x16"; a switched fabric's as the user spells it: "node:8", "nvl:72",
  // "fat-tree:4x8" (nodes x chips per node).
  [[nodiscard]] std::string shape() const;
  [[nodiscard]] const std::string& fabric() const { return fabric_; }
  [[nodiscard]] bool switched() const { return fabric_ != "torus"; }

  [[nodiscard]] ChipId linear_id(const Coords& coords) const;
  [[nodiscard]] Coords coords(ChipId chip) const;

  // The chip one hop from `chip` along `axis` in `direction` (+1 or -1), or
  // nullopt where no link leaves that way (the edge of an unwrapped axis,
  // either end of an axis of length 1).
  [[nodiscard]] std::optional<ChipId> neighbour(ChipId chip, std::size_t axis, int direction) const;

  // Fewest hops from coordinate `from` to `to` along `axis`, the shorter way
  // round when the axis wraps.
  [[nodiscard]] std::uint32_t axis_distance(std::size_t axis, std::uint32_t from, std::uint32_t to) const;
  // Fewest hops between two chips: the sum of the axis distances.
  [[nodiscard]] std::uint32_t hop_distance(ChipId from, ChipId to) const;

  bool operator==(const Topology&) const = default;

 private:
  void check_axis(std::size_t axis) const;
  void check_chip(ChipId chip) const;

  std::vector<std::uint32_t> dims_;
  std::vector<bool> wraps_;
  std::string fabric_;
  std::uint32_t chip_count_ = 0;
};

// Resolves and validates a request against a chip preset.
// Switched shapes (chip.fabric.kind "nvswitch", the GPU presets): "node:N"
// and "nvl:N" (one NVSwitch domain of N <= chip.fabric.domain_size chips,
// axis x of length N), "fat-tree:NODESxN" (NODES domains of N chips joined
// through their NICs: x the chip in its node, y the node); their axes of
// length >= 3 wrap (a ring over them closes through a switch). A torus shape
// on a switched chip, other than a single chip "1", and a switched shape on
// a torus chip throw TopologyError, as do --wrap and --force with a switched shape.
// Default wraparound, per axis: the axis wraps iff its length is a multiple of
// chip.ici.wrap_multiple and at least 3 (v5e 8x16 wraps on y only; v5p 4x4x4
// on all axes). An explicit request.wrap replaces the rule.
// Throws TopologyError, naming the problem and the preset, on: malformed shape
// text ("", "8x", "x8", "8x-1"); a zero-length axis; more axes than
// chip.ici.torus_dims (or than kMaxAxes); unless request.force, more chips
// than the preset's largest slice or axes that do not fit it in any
// orientation (sorted longest first, each against the slice's axis of that
// rank: v5e 16x16 refuses 256 and 32x8, takes 8x16 and 16); a
// wrap vector whose length differs from the axis count; a wrap on an axis of
// length 1 or 2.
Topology make_topology(const TopologyRequest& request, const ChipConfig& chip);

// Parses `option`'s value, a comma-separated list of axis letters ("x,z",
// "y"), into axis indices in the order given. Throws TopologyError naming
// `option` (with `expected` as the hint, the axes listed after it, or before
// its tail " or 'none'") on an unknown letter, an axis the
// topology does not have, a repeated axis or an empty item.
std::vector<std::size_t> parse_axis_list(std::string_view text, std::size_t axis_count, std::string_view option,
                                         std::string_view expected);

// Parses a --wrap value into per-axis flags for a topology of `axis_count`
// axes: a comma-separated list of axis letters ("x,z", "y") or "none".
// Throws TopologyError on an unknown letter, an axis the topology does not
// have, a repeated axis or an empty item.
std::vector<bool> parse_wrap_axes(std::string_view text, std::size_t axis_count);

// "8x16 (128 chips), wraps: y" / "2x2 (4 chips), no wraparound".
std::string describe(const Topology& topology);

}  // namespace tpuemu::ici
