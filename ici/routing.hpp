// Routing policies by name (house style 6): a policy maps (topology, source
// chip, destination chip) to the directed links a transfer traverses. Each
// policy lives in its own file under ici/routing/ and registers itself; adding
// one is adding a file.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.hpp"
#include "ici/topology.hpp"

namespace tpuemu::ici {

// One directed ICI link: `from` sends to its neighbour `to` along `axis`
// (0 = x, 1 = y, 2 = z) in `direction` (+1 or -1).
struct Link {
  ChipId from;
  ChipId to;
  std::uint8_t axis = 0;
  std::int8_t direction = 0;
  bool operator==(const Link&) const = default;
};

// An unknown routing policy name. what() lists the known names.
class RoutingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Contract for every policy:
//  * route(t, a, b) is a chain of links of t: route[0].from == a, route.back().to
//    == b, route[i].to == route[i+1].from, and each link is
//    {c, t.neighbour(c, axis, direction), axis, direction}; a == b gives an empty route.
//  * The route depends only on its arguments (deterministic, stateless), so one
//    policy object serves every topology and thread.
//  * A chip outside the topology throws std::out_of_range.
class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  [[nodiscard]] virtual std::vector<Link> route(const Topology& topology, ChipId from, ChipId to) const = 0;
  [[nodiscard]] virtual std::string_view name() const = 0;
};

// The registered policy called `name`. Throws RoutingError listing the known
// names if there is none.
const RoutingPolicy& routing_policy(std::string_view name);

// The names of every registered policy, sorted.
std::vector<std::string> routing_policy_names();

// Registers a policy under its name() for the program's lifetime. Define one
// at namespace scope in the policy's own file:
//   const RoutingPolicyRegistrar kRegistrar{std::make_unique<MyRouting>()};
// Registration runs during static initialisation; lookups after it are
// read-only. A second policy with the same name aborts the program at start.
class RoutingPolicyRegistrar {
 public:
  explicit RoutingPolicyRegistrar(std::unique_ptr<RoutingPolicy> policy);
};

}  // namespace tpuemu::ici
