#include "ici/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>

namespace tpuemu::ici {

namespace {

// Longest axis a shape may name; keeps the chip count's arithmetic exact.
constexpr std::uint64_t kMaxAxisLength = 1'000'000;
// An axis needs at least this many chips for a wraparound link that is not
// a second link between the same two chips.
constexpr std::uint32_t kMinWrapLength = 3;

// "longest", "second longest", "third longest": an axis by its rank in length.
std::string ordinal_longest(std::size_t rank) {
  static constexpr std::array<const char*, 3> kOrdinals{"longest", "second longest", "third longest"};
  return rank < kOrdinals.size() ? kOrdinals[rank] : fmt::format("{}th longest", rank + 1);
}

std::string axis_label(std::size_t axis) {
  return axis < kMaxAxes ? fmt::format("axis {}", axis_name(axis)) : fmt::format("axis {}", axis + 1);
}

std::string axis_list(std::size_t axis_count) {
  std::string out;
  for (std::size_t a = 0; a < axis_count && a < kMaxAxes; ++a) {
    if (!out.empty()) out += ", ";
    out += axis_name(a);
  }
  return out;
}

}  // namespace

char axis_name(std::size_t axis) {
  static constexpr std::array<char, kMaxAxes> kNames{'x', 'y', 'z'};
  if (axis >= kMaxAxes) throw std::invalid_argument(fmt::format("axis {} does not exist (at most {})", axis, kMaxAxes));
  return kNames[axis];
}

Topology::Topology(std::vector<std::uint32_t> dims, std::vector<bool> wraps, std::string fabric)
    : dims_(std::move(dims)), wraps_(std::move(wraps)), fabric_(std::move(fabric)) {
  if (dims_.empty() || dims_.size() > kMaxAxes) {
    throw std::invalid_argument(fmt::format("a topology has 1 to {} axes, not {}", kMaxAxes, dims_.size()));
  }
  if (wraps_.size() != dims_.size()) {
    throw std::invalid_argument(
        fmt::format("{} wraparound flags for a topology of {} axes", wraps_.size(), dims_.size()));
  }
  std::uint64_t count = 1;
  for (std::size_t a = 0; a < dims_.size(); ++a) {
    if (dims_[a] == 0) throw std::invalid_argument(fmt::format("{} has length 0", axis_label(a)));
    if (wraps_[a] && dims_[a] < kMinWrapLength) {
      throw std::invalid_argument(fmt::format("{} of length {} cannot wrap", axis_label(a), dims_[a]));
    }
    count *= dims_[a];
    if (count > std::numeric_limits<ChipId::rep>::max()) {
      throw std::invalid_argument("the topology has more chips than a chip id can number");
    }
  }
  chip_count_ = static_cast<std::uint32_t>(count);
}

std::uint32_t Topology::length(std::size_t axis) const {
  check_axis(axis);
  return dims_[axis];
}

bool Topology::wraps(std::size_t axis) const {
  check_axis(axis);
  return wraps_[axis];
}

std::string Topology::shape() const {
  if (fabric_ == "fat-tree" && dims_.size() == 2) return fmt::format("fat-tree:{}x{}", dims_[1], dims_[0]);
  std::string out;
  for (std::uint32_t d : dims_) out += (out.empty() ? "" : "x") + std::to_string(d);
  return fabric_ == "torus" ? out : fabric_ + ":" + out;
}

ChipId Topology::linear_id(const Coords& coords) const {
  std::uint32_t id = 0;
  // Horner's rule from the outermost axis: x + X*(y + Y*z).
  for (std::size_t a = kMaxAxes; a-- > 0;) {
    const std::uint32_t len = a < dims_.size() ? dims_[a] : 1;
    if (coords[a] >= len) {
      throw std::out_of_range(fmt::format("coordinate {}={} is outside topology {}", axis_name(a), coords[a], shape()));
    }
    id = id * len + coords[a];
  }
  return ChipId(id);
}

Coords Topology::coords(ChipId chip) const {
  check_chip(chip);
  Coords out{};
  std::uint32_t rest = chip.value();
  for (std::size_t a = 0; a < dims_.size(); ++a) {
    out[a] = rest % dims_[a];
    rest /= dims_[a];
  }
  return out;
}

std::optional<ChipId> Topology::neighbour(ChipId chip, std::size_t axis, int direction) const {
  check_axis(axis);
  if (direction != 1 && direction != -1) {
    throw std::invalid_argument(fmt::format("direction {} is neither +1 nor -1", direction));
  }
  Coords c = coords(chip);
  const std::uint32_t len = dims_[axis];
  std::uint32_t& pos = c[axis];
  if (direction > 0) {
    if (pos + 1 < len) {
      ++pos;
    } else if (wraps_[axis]) {
      pos = 0;
    } else {
      return std::nullopt;
    }
  } else {
    if (pos > 0) {
      --pos;
    } else if (wraps_[axis]) {
      pos = len - 1;
    } else {
      return std::nullopt;
    }
  }
  return linear_id(c);
}

std::uint32_t Topology::axis_distance(std::size_t axis, std::uint32_t from, std::uint32_t to) const {
  check_axis(axis);
  const std::uint32_t len = dims_[axis];
  if (from >= len || to >= len) {
    throw std::out_of_range(
        fmt::format("coordinate {} or {} is outside axis {} of length {}", from, to, axis_name(axis), len));
  }
  const std::uint32_t direct = from > to ? from - to : to - from;
  return wraps_[axis] ? std::min(direct, len - direct) : direct;
}

std::uint32_t Topology::hop_distance(ChipId from, ChipId to) const {
  const Coords a = coords(from);
  const Coords b = coords(to);
  std::uint32_t hops = 0;
  for (std::size_t axis = 0; axis < dims_.size(); ++axis) hops += axis_distance(axis, a[axis], b[axis]);
  return hops;
}

void Topology::check_axis(std::size_t axis) const {
  if (axis >= dims_.size()) {
    throw std::invalid_argument(fmt::format("axis {} does not exist in topology {}", axis, shape()));
  }
}

void Topology::check_chip(ChipId chip) const {
  if (!contains(chip)) {
    throw std::out_of_range(
        fmt::format("chip {} is outside topology {} ({} chips)", chip.value(), shape(), chip_count_));
  }
}

namespace {

// A decimal count of at most kMaxAxisLength, or 0 when `text` is not one.
std::uint64_t parse_length(std::string_view text) {
  if (text.empty()) return 0;
  std::uint64_t value = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return 0;
    value = value * 10 + static_cast<std::uint64_t>(ch - '0');
    if (value > kMaxAxisLength) return 0;
  }
  return value;
}

Topology make_switched_topology(const TopologyRequest& request, const ChipConfig& chip) {
  const std::string& text = request.shape;
  auto fail = [&](const std::string& problem) -> TopologyError {
    return TopologyError(fmt::format("topology '{}' on {}: {}", text, chip.name, problem));
  };
  const std::size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string_view size = std::string_view(text).substr(colon + 1);
  const std::string kinds = "node:N, nvl:N or fat-tree:NODESxN";
  if (kind != "node" && kind != "nvl" && kind != "fat-tree") {
    throw fail(fmt::format("unknown fabric '{}'; switched topologies are {}", kind, kinds));
  }
  if (!chip.fabric.switched()) {
    throw fail(
        fmt::format("{} is joined by a torus (fabric.kind {}), not by switches; {} need a switched chip "
                    "(the GPU presets a100, h100, h200, b200, gb200)",
                    chip.name, chip.fabric.kind, kinds));
  }
  if (request.wrap) throw fail("--wrap applies to tori; a switched topology has no wraparound links to choose");
  if (request.force) throw fail("--force applies to tori; a switched domain's size is fabric.domain_size");
  std::uint64_t nodes = 1;
  std::uint64_t per_node = 0;
  if (kind == "fat-tree") {
    const std::size_t x = size.find('x');
    nodes = x == std::string_view::npos ? 0 : parse_length(size.substr(0, x));
    per_node = x == std::string_view::npos ? 0 : parse_length(size.substr(x + 1));
    if (nodes == 0 || per_node == 0) {
      throw fail(
          "expected fat-tree:NODESxN with whole numbers NODES (switched domains) and N (chips in each), like "
          "fat-tree:4x8");
    }
  } else {
    per_node = parse_length(size);
    if (per_node == 0) throw fail(fmt::format("expected {}:N with a whole number N of chips, like {}:8", kind, kind));
  }
  if (per_node > chip.fabric.domain_size) {
    throw fail(fmt::format("{} chips in one switched domain, but {}'s domain joins at most {} (fabric.domain_size)",
                           per_node, chip.name, chip.fabric.domain_size));
  }
  if (nodes * per_node > std::numeric_limits<ChipId::rep>::max()) {
    throw fail(fmt::format("{} chips is more than a chip id can number", nodes * per_node));
  }
  std::vector<std::uint32_t> dims{static_cast<std::uint32_t>(per_node)};
  if (kind == "fat-tree") dims.push_back(static_cast<std::uint32_t>(nodes));
  std::vector<bool> wraps;
  for (std::uint32_t d : dims) wraps.push_back(d >= kMinWrapLength);
  return Topology(std::move(dims), std::move(wraps), kind);
}

}  // namespace

Topology make_topology(const TopologyRequest& request, const ChipConfig& chip) {
  const std::string& text = request.shape;
  auto fail = [&](const std::string& problem) -> TopologyError {
    return TopologyError(fmt::format("topology '{}' on {}: {}", text, chip.name, problem));
  };
  if (text.find(':') != std::string::npos) return make_switched_topology(request, chip);
  if (chip.fabric.switched() && text != "1") {
    throw fail(
        fmt::format("{} joins chips through switches (fabric.kind nvswitch), not a torus: use node:N or nvl:N "
                    "(N <= {}), or fat-tree:NODESxN",
                    chip.name, chip.fabric.domain_size));
  }
  const std::string example = fmt::format("expected axis lengths joined by 'x', like {}", chip.ici.max_slice);

  // 1. Syntax: positive decimal lengths joined by 'x'.
  if (text.empty()) throw fail(fmt::format("the shape is empty; {}", example));
  std::vector<std::uint64_t> lengths;
  for (std::size_t start = 0;;) {
    const std::size_t end = std::min(text.find('x', start), text.size());
    const std::string_view part = std::string_view(text).substr(start, end - start);
    const std::string axis = axis_label(lengths.size());
    if (part.empty()) throw fail(fmt::format("{} is empty; {}", axis, example));
    std::uint64_t value = 0;
    for (char ch : part) {
      if (ch < '0' || ch > '9') throw fail(fmt::format("{}: '{}' is not a whole number; {}", axis, part, example));
      value = value * 10 + static_cast<std::uint64_t>(ch - '0');
      if (value > kMaxAxisLength)
        throw fail(fmt::format("{}: {} is too long (at most {})", axis, part, kMaxAxisLength));
    }
    if (value == 0) throw fail(fmt::format("{} has length 0", axis));
    lengths.push_back(value);
    if (end == text.size()) break;
    start = end + 1;
  }

  // 2. Axis count and chip count against the preset.
  const std::size_t max_axes = std::min<std::uint64_t>(chip.ici.torus_dims, kMaxAxes);
  if (lengths.size() > max_axes) {
    throw fail(
        fmt::format("{} axes, but {} is a {}D torus (ici.torus_dims)", lengths.size(), chip.name, chip.ici.torus_dims));
  }
  std::uint64_t chips = 1;
  for (std::uint64_t len : lengths) chips *= len;
  std::uint64_t max_chips = 1;
  for (std::uint64_t len : chip.max_slice_dims()) max_chips *= len;
  if (chips > max_chips && !request.force) {
    throw fail(
        fmt::format("{} chips is more than {}'s largest slice {} ({} chips, ici.max_slice); pass --force to "
                    "allow it",
                    chips, chip.name, chip.ici.max_slice, max_chips));
  }
  // Each axis must fit the largest slice too, in some orientation: the
  // lengths sorted longest first, each at most the slice's axis of that rank.
  if (!request.force && chips <= max_chips) {
    std::vector<std::uint64_t> want = lengths;
    std::vector<std::uint64_t> have = chip.max_slice_dims();
    want.resize(std::max(want.size(), have.size()), 1);
    have.resize(want.size(), 1);
    std::sort(want.begin(), want.end(), std::greater<>());
    std::sort(have.begin(), have.end(), std::greater<>());
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (want[i] <= have[i]) continue;
      throw fail(
          fmt::format("the axes do not fit {}'s largest slice {} (ici.max_slice) in any orientation: "
                      "its {} axis holds at most {} chips, this shape needs {}; pass --force to allow it",
                      chip.name, chip.ici.max_slice, ordinal_longest(i), have[i], want[i]));
    }
  }
  if (chips > std::numeric_limits<ChipId::rep>::max()) {
    throw fail(fmt::format("{} chips is more than a chip id can number", chips));
  }
  std::vector<std::uint32_t> dims(lengths.begin(), lengths.end());

  // 3. Wraparound: explicit, or the preset's rule.
  std::vector<bool> wraps(dims.size(), false);
  if (request.wrap) {
    if (request.wrap->size() != dims.size()) {
      throw fail(fmt::format("--wrap gives {} axes, but the shape has {}", request.wrap->size(), dims.size()));
    }
    wraps = *request.wrap;
    for (std::size_t a = 0; a < dims.size(); ++a) {
      if (wraps[a] && dims[a] < kMinWrapLength) {
        throw fail(
            fmt::format("{} has length {} and cannot wrap: a wraparound link needs at least {} chips on the "
                        "axis (on 2 it would join the same two chips again)",
                        axis_label(a), dims[a], kMinWrapLength));
      }
    }
  } else {
    // 2-D tori (v5e, v6e): each axis on its own wraps iff its length is a multiple
    // of ici.wrap_multiple (an 8x16 slice wraps on its 16 axis only). 3-D tori
    // built from cubes (v4p, v5p): the wraparound links exist only when the slice
    // is made of whole cubes, i.e. every one of the 3 axes is a multiple; then
    // every axis wraps (4x4x4, 4x4x8), else none (2x2x1, 2x4x4) [facts.md].
    const std::uint64_t multiple = chip.ici.wrap_multiple;
    const auto is_multiple = [&](std::uint64_t length) { return multiple > 0 && length % multiple == 0; };
    bool whole_cubes = chip.ici.torus_dims == 3;
    for (std::size_t a = 0; a < chip.ici.torus_dims && whole_cubes; ++a) {
      whole_cubes = a < dims.size() && is_multiple(dims[a]);
    }
    for (std::size_t a = 0; a < dims.size(); ++a) {
      const bool qualifies = chip.ici.torus_dims == 3 ? whole_cubes : is_multiple(dims[a]);
      wraps[a] = qualifies && dims[a] >= kMinWrapLength;
    }
  }
  return Topology(std::move(dims), std::move(wraps));
}

std::vector<std::size_t> parse_axis_list(std::string_view text, std::size_t axis_count, std::string_view option,
                                         std::string_view expected) {
  auto fail = [&](const std::string& problem) -> TopologyError {
    return TopologyError(fmt::format("{} '{}': {}", option, text, problem));
  };
  // "like x,z or 'none'" reads "like x,z (axes: x, y) or 'none'".
  const std::size_t none = expected.find(" or 'none'");
  const std::string hint =
      none == std::string_view::npos
          ? fmt::format("{} (axes: {})", expected, axis_list(axis_count))
          : fmt::format("{} (axes: {}){}", expected.substr(0, none), axis_list(axis_count), expected.substr(none));
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  if (trim(text).empty()) throw fail(fmt::format("empty; {}", hint));
  std::vector<std::size_t> axes;
  for (std::size_t start = 0;;) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string_view item = trim(text.substr(start, end - start));
    if (item.empty()) throw fail(fmt::format("an axis name is missing; {}", hint));
    const std::size_t axis = item == "x" ? 0 : item == "y" ? 1 : item == "z" ? 2 : kMaxAxes;
    if (axis == kMaxAxes) throw fail(fmt::format("unknown axis '{}'; {}", item, hint));
    if (axis >= axis_count) {
      throw fail(fmt::format("axis {} does not exist in a {}-axis topology; {}", item, axis_count, hint));
    }
    if (std::find(axes.begin(), axes.end(), axis) != axes.end())
      throw fail(fmt::format("axis {} is named twice", item));
    axes.push_back(axis);
    if (end == text.size()) break;
    start = end + 1;
  }
  return axes;
}

std::vector<bool> parse_wrap_axes(std::string_view text, std::size_t axis_count) {
  std::vector<bool> wraps(axis_count, false);
  std::string_view trimmed = text;
  while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) trimmed.remove_prefix(1);
  while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t')) trimmed.remove_suffix(1);
  if (trimmed == "none") return wraps;
  for (const std::size_t axis : parse_axis_list(text, axis_count, "--wrap", "name axes like x,z or 'none'")) {
    wraps[axis] = true;
  }
  return wraps;
}

std::string describe(const Topology& topology) {
  std::string wrapped;
  for (std::size_t a = 0; a < topology.axis_count(); ++a) {
    if (!topology.wraps(a)) continue;
    if (!wrapped.empty()) wrapped += ", ";
    wrapped += axis_name(a);
  }
  if (topology.switched()) {
    return fmt::format("{} ({} chip{}), switched", topology.shape(), topology.chip_count(),
                       topology.chip_count() == 1 ? "" : "s");
  }
  return fmt::format("{} ({} chip{}), {}", topology.shape(), topology.chip_count(),
                     topology.chip_count() == 1 ? "" : "s", wrapped.empty() ? "no wraparound" : "wraps: " + wrapped);
}

}  // namespace tpuemu::ici
