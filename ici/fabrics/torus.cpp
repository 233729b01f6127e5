// Fabric kind "torus": the ICI links of a TPU torus. Link id chip*6 + axis*2
// + (direction > 0), a slot for every chip, axis and direction (a link the
// chip lacks is a slot with exists = false); every link moves payload at the
// chip's ici.link_bandwidth x ici.payload_efficiency, with ici.hop_latency. One path per transfer: the routing
// policy's route.
#include <fmt/format.h>

#include <memory>

#include "ici/fabric.hpp"
#include "ici/routing.hpp"

namespace tpuemu::ici {

namespace {

class TorusFabric final : public Fabric {
 public:
  TorusFabric(const Topology& topology, const RoutingPolicy& routing, double bytes_per_second, double latency_s)
      : Fabric(topology), routing_(routing) {
    for (std::uint32_t c = 0; c < topology.chip_count(); ++c) {
      for (std::uint8_t axis = 0; axis < kMaxAxes; ++axis) {
        for (const int dir : {-1, 1}) {
          LinkInfo l{c, c, bytes_per_second, latency_s, "ici", axis, static_cast<std::int8_t>(dir), false};
          if (axis < topology.axis_count()) {
            if (const auto to = topology.neighbour(ChipId(c), axis, dir)) {
              l.to = to->value();
              l.exists = true;
            }
          }
          add_link(std::move(l));
        }
      }
    }
  }

  [[nodiscard]] std::string_view kind() const override { return "torus"; }

  void paths(ChipId from, ChipId to, std::vector<Path>& out) const override {
    out.clear();
    Path p;
    for (const Link& l : routing_.route(topology_, from, to)) {
      p.links.push_back(l.from.value() * 6 + l.axis * 2U + (l.direction > 0 ? 1U : 0U));
    }
    out.push_back(std::move(p));
  }

 private:
  const RoutingPolicy& routing_;
};

class TorusKind final : public FabricKind {
 public:
  [[nodiscard]] std::string_view name() const override { return "torus"; }
  [[nodiscard]] std::unique_ptr<Fabric> build(const Topology& topology, const ChipConfig& chip,
                                              std::string_view routing) const override {
    if (topology.switched()) throw TopologyError("a torus fabric for the switched topology " + topology.shape());
    return std::make_unique<TorusFabric>(topology, routing_policy(routing), chip.link_payload_rate(),
                                         chip.ici.hop_latency_s);
  }
};

const FabricKindRegistrar kTorusRegistrar{std::make_unique<TorusKind>()};

}  // namespace

std::unique_ptr<Fabric> make_torus_fabric(const Topology& topology, const RoutingPolicy& routing,
                                          double bytes_per_second, double latency_s) {
  return std::make_unique<TorusFabric>(topology, routing, bytes_per_second, latency_s);
}

}  // namespace tpuemu::ici
