// The collective algorithm registry. It knows no algorithm by name: each
// registers itself from its own file under programs/collective_algorithms/.
#include "programs/collective_algorithm.hpp"

#include <fmt/format.h>

#include <algorithm>
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

std::uint64_t nccl_channels_in_use(const CollectiveSpec& spec, std::uint64_t ranks, const ChipConfig& chip) {
  const ChipConfig::Protocol* p = chip.active_protocol();
  if (p == nullptr || chip.fabric.nccl_channels == 0 || p->max_threads == 0 || p->thread_threshold == 0) return 0;
  if (spec.op == "all-to-all") return 0;
  const NcclKernel kernel = collective_algorithm(spec.algorithm).nccl_kernel();
  if (kernel == NcclKernel::kNone) return 0;
  std::uint64_t threshold = p->thread_threshold;
  if (kernel == NcclKernel::kRing && p == &chip.protocol.ll) threshold *= std::max<std::uint64_t>(ranks, 1);
  const std::uint64_t per_channel = p->max_threads * threshold;
  // NCCL: while (nBytes < nc * nt * threshold && nc >= 2) nc--.
  const std::uint64_t fits = spec.bytes / per_channel;
  return std::clamp<std::uint64_t>(fits, 1, chip.fabric.nccl_channels);
}

std::vector<std::string> collective_algorithm_names() {
  std::vector<std::string> names;
  for (const auto& [name, algorithm] : registry()) names.push_back(name);
  return names;
}

}  // namespace tpuemu::programs
