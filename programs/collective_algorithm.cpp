// The collective algorithm registry. It knows no algorithm by name: each
// registers itself from its own file under programs/collective_algorithms/.
#include "programs/collective_algorithm.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>

namespace tpuemu::programs {

namespace {

using Registry = std::map<std::string, std::unique_ptr<CollectiveAlgorithm>, std::less<>>;

Registry& registry() {
  static Registry algorithms;
  return algorithms;
}

}  // namespace

CollectiveAlgorithmRegistrar::CollectiveAlgorithmRegistrar(std::unique_ptr<CollectiveAlgorithm> algorithm) {
  std::string name(algorithm->name());
  if (!registry().emplace(name, std::move(algorithm)).second) {
    std::fprintf(stderr, "tpuemu: two collective algorithms are named '%s'\n", name.c_str());
    std::abort();
  }
}

const CollectiveAlgorithm& collective_algorithm(std::string_view name) {
  const auto it = registry().find(name);
  if (it == registry().end()) {
    throw std::invalid_argument(
        fmt::format("collective: unknown algorithm '{}' ({})", name, fmt::join(collective_algorithm_names(), ", ")));
  }
  return *it->second;
}

std::vector<std::string> collective_algorithm_names() {
  std::vector<std::string> names;
  for (const auto& [name, algorithm] : registry()) names.push_back(name);
  return names;
}

}  // namespace tpuemu::programs
