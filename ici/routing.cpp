// The routing policy registry. It knows no policy by name: each registers
// itself from its own file under ici/routing/ (see ici/CMakeLists.txt for how
// those files are kept in every link).
#include "ici/routing.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>

namespace tpuemu::ici {

namespace {

using RoutingPolicies = std::map<std::string, std::unique_ptr<RoutingPolicy>, std::less<>>;

// Constructed on first use, so registrars in other translation units may run
// before or after this one's static initialisation.
RoutingPolicies& routing_policies() {
  static RoutingPolicies policies;
  return policies;
}

}  // namespace

RoutingPolicyRegistrar::RoutingPolicyRegistrar(std::unique_ptr<RoutingPolicy> policy) {
  std::string name(policy->name());
  if (!routing_policies().emplace(name, std::move(policy)).second) {
    // Static initialisation: no caller to throw to.
    std::fprintf(stderr, "tpuemu: two routing policies are named '%s'\n", name.c_str());
    std::abort();
  }
}

const RoutingPolicy& routing_policy(std::string_view name) {
  const auto it = routing_policies().find(name);
  if (it == routing_policies().end()) {
    throw RoutingError(
        fmt::format("unknown routing policy '{}' (known: {})", name, fmt::join(routing_policy_names(), ", ")));
  }
  return *it->second;
}

std::vector<std::string> routing_policy_names() {
  std::vector<std::string> names;
  for (const auto& [name, policy] : routing_policies()) names.push_back(name);
  return names;
}

}  // namespace tpuemu::ici
