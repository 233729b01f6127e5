// The entry points of a build without MPI: always one rank.
#include <cstdio>
#include <cstdlib>

#include "dist/local_ranks.hpp"
#include "dist/ranks.hpp"

namespace tpuemu::dist {

Ranks& world() {
  static LocalRanks r;
  if (replaced_world()) return *replaced_world();
  return r;
}

bool init(int* /*argc*/, char*** /*argv*/) {
  if (launched_by_mpirun()) {
    std::fputs("tpuemu: launched by mpirun, but this build has no MPI (install libopenmpi-dev and rebuild)\n", stderr);
    std::exit(2);
  }
  return false;
}

void finalize() {}

std::string mpi_version() {
  return "";
}

void rank_message(const std::string& text) {
  std::fprintf(stderr, "rank 0: %s\n", text.c_str());
}

}  // namespace tpuemu::dist
