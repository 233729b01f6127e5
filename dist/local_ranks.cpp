// One process as the only rank, and the entry points of a build without MPI.
#include "dist/local_ranks.hpp"

#include <cstdio>
#include <cstdlib>

namespace tpuemu::dist {

double LocalRanks::min_all(double value) {
  return value;
}
std::uint64_t LocalRanks::max_all(std::uint64_t value) {
  return value;
}
std::vector<Bytes> LocalRanks::exchange(std::vector<Bytes> to_each) {
  return to_each;
}
std::vector<Bytes> LocalRanks::all_gather(const Bytes& mine) {
  return {mine};
}
std::vector<Bytes> LocalRanks::gather(const Bytes& mine) {
  return {mine};
}
Bytes LocalRanks::broadcast(const Bytes& value) {
  return value;
}
void LocalRanks::abort(int exit_code) {
  std::exit(exit_code);
}

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMI_RANK") != nullptr;
}

std::unique_ptr<Ranks>& replaced_world() {
  static std::unique_ptr<Ranks> replaced;
  return replaced;
}

}  // namespace tpuemu::dist
