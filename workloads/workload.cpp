// The workload registry and option values. It knows no workload by name:
// each registers itself from its own file.
#include "workloads/workload.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <cstdlib>

#include "api/errors.hpp"
#include "common/parse_number.hpp"

namespace tpuemu::workloads {

namespace {

using Registry = std::map<std::string, std::unique_ptr<Workload>, std::less<>>;

Registry& registry() {
  static Registry workloads;
  return workloads;
}

}  // namespace

WorkloadRegistrar::WorkloadRegistrar(std::unique_ptr<Workload> workload) {
  std::string name(workload->name());
  if (!registry().emplace(name, std::move(workload)).second) {
    std::fprintf(stderr, "tpuemu: two workloads are named '%s'\n", name.c_str());
    std::abort();
  }
}

const Workload& workload(std::string_view name) {
  const auto it = registry().find(name);
  if (it == registry().end()) {
    throw api::BadInput(fmt::format("unknown workload '{}' (workloads: {})", name, fmt::join(workload_names(), ", ")));
  }
  return *it->second;
}

std::vector<std::string> workload_names() {
  std::vector<std::string> names;
  for (const auto& [name, w] : registry()) names.push_back(name);
  return names;
}

OptionValues::OptionValues(std::map<std::string, std::string> given, const std::vector<OptionSpec>& specs) {
  for (const auto& spec : specs) values_[spec.name] = spec.default_value;
  for (auto& [name, value] : given) {
    if (values_.find(name) == values_.end()) {
      std::vector<std::string> names;
      for (const auto& spec : specs) names.push_back("--" + spec.name);
      throw api::BadInput(fmt::format("unknown option --{} (options: {})", name, fmt::join(names, ", ")));
    }
    values_[name] = std::move(value);
  }
}

const std::string& OptionValues::text(const std::string& name) const {
  return values_.at(name);
}

std::uint64_t OptionValues::whole(const std::string& name, std::uint64_t min, std::uint64_t max) const {
  const std::string& value = text(name);
  const auto parsed = parse_unsigned(value);
  if (!parsed || *parsed < min || *parsed > max) {
    throw api::BadInput(fmt::format("--{} '{}': expected a whole number from {} to {}", name, value, min, max));
  }
  return *parsed;
}

nlohmann::json OptionValues::resolved() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : values_) out[name] = value;
  return out;
}

}  // namespace tpuemu::workloads
