// The one-rank Ranks (a process not launched by mpirun, or a build without MPI).
#pragma once

#include <memory>

#include "dist/ranks.hpp"

namespace tpuemu::dist {

class LocalRanks final : public Ranks {
 public:
  [[nodiscard]] std::uint32_t rank() const override { return 0; }
  [[nodiscard]] std::uint32_t size() const override { return 1; }
  double min_all(double value) override;
  std::uint64_t max_all(std::uint64_t value) override;
  std::vector<Bytes> exchange(std::vector<Bytes> to_each) override;
  std::vector<Bytes> all_gather(const Bytes& mine) override;
  std::vector<Bytes> gather(const Bytes& mine) override;
  Bytes broadcast(const Bytes& value) override;
  [[noreturn]] void abort(int exit_code) override;
};

// Whether the environment says mpirun (Open MPI, PMIx or PMI) started this process.
bool launched_by_mpirun();

// What replace_world() installed (dist/child_ranks.hpp), or null: world() returns it when set.
std::unique_ptr<Ranks>& replaced_world();

}  // namespace tpuemu::dist
