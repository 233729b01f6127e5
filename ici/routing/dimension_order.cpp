// Routing policy "dimension-order": all hops along x, then along y, then
// along z. On a wrapping axis it goes the shorter way round (a tie, at half
// the ring, goes in the positive direction); on an unwrapped axis the only
// way. Routes are shortest: their length is Topology::hop_distance.
#include <memory>

#include "ici/routing.hpp"

namespace tpuemu::ici {

namespace {

class DimensionOrderRouting final : public RoutingPolicy {
 public:
  [[nodiscard]] std::vector<Link> route(const Topology& topology, ChipId from, ChipId to) const override {
    const Coords src = topology.coords(from);
    const Coords dst = topology.coords(to);
    std::vector<Link> links;
    links.reserve(topology.hop_distance(from, to));
    ChipId at = from;
    for (std::size_t axis = 0; axis < topology.axis_count(); ++axis) {
      if (src[axis] == dst[axis]) continue;
      const std::uint32_t len = topology.length(axis);
      // Hops needed going up (+1) and going down (-1), wrapping where the axis does.
      const std::uint32_t up = (dst[axis] + len - src[axis]) % len;
      const std::uint32_t down = len - up;
      const bool positive = topology.wraps(axis) ? up <= down : dst[axis] > src[axis];
      const int direction = positive ? 1 : -1;
      const std::uint32_t hops = topology.axis_distance(axis, src[axis], dst[axis]);
      for (std::uint32_t h = 0; h < hops; ++h) {
        // A neighbour exists: the hop count stays on the axis or uses its wraparound.
        const ChipId next = *topology.neighbour(at, axis, direction);
        links.push_back(Link{at, next, static_cast<std::uint8_t>(axis), static_cast<std::int8_t>(direction)});
        at = next;
      }
    }
    return links;
  }

  [[nodiscard]] std::string_view name() const override { return "dimension-order"; }
};

const RoutingPolicyRegistrar kDimensionOrderRegistrar{std::make_unique<DimensionOrderRouting>()};

}  // namespace

}  // namespace tpuemu::ici
