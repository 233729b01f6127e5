// The processes that simulate one pod together (MPI ranks) and the few
// collective exchanges a pod split over them needs: a global minimum per
// conservative window, one all-to-all of byte batches per window, a gather of
// results to rank 0 and a broadcast back. One process is one rank: the same
// calls, done locally, so a run without MPI takes the same code path.
//
// Contract: every rank calls the collective members (min_all .. broadcast)
// the same number of times in the same order. A rank that fails before a
// collective must call abort() (every rank then exits non-zero within
// seconds) instead of leaving the others waiting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpuemu::dist {

using Bytes = std::vector<std::uint8_t>;

class Ranks {
 public:
  virtual ~Ranks() = default;
  [[nodiscard]] virtual std::uint32_t rank() const = 0;
  [[nodiscard]] virtual std::uint32_t size() const = 0;
  // The least / greatest of every rank's value.
  virtual double min_all(double value) = 0;
  virtual std::uint64_t max_all(std::uint64_t value) = 0;
  // to_each[r] goes to rank r (to_each.size() == size(); the own entry is
  // returned as is); result[r] is what rank r sent to this one.
  virtual std::vector<Bytes> exchange(std::vector<Bytes> to_each) = 0;
  // Every rank's `mine`, by rank: on every rank (all-gather).
  virtual std::vector<Bytes> all_gather(const Bytes& mine) = 0;
  // On rank 0: every rank's `mine`, by rank; elsewhere: empty.
  virtual std::vector<Bytes> gather(const Bytes& mine) = 0;
  // Rank 0's `value` on every rank.
  virtual Bytes broadcast(const Bytes& value) = 0;
  // Ends every rank with `exit_code` (MPI_Abort); one process just exits.
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

// Rank 0's `part` takes in every other rank's (`Part` has
// `std::vector<std::uint8_t> serialize() const` and `void absorb(bytes)`);
// the others' parts stay as they are. Collective: every rank calls it.
template <typename Part>
void gather_into_rank0(Ranks& ranks, Part& part) {
  if (ranks.size() == 1) return;
  const std::vector<Bytes> all = ranks.gather(part.serialize());
  for (std::size_t r = 1; r < all.size(); ++r) part.absorb(all[r]);
}

// The ranks of this process: MPI_COMM_WORLD when init() found an MPI launch,
// otherwise one rank.
Ranks& world();

// Call first thing in main: starts MPI when the process was launched by
// mpirun (and tpuemu was built with MPI), and then sends the standard output
// and error of every rank but 0 to /dev/null (TPUEMU_RANK_OUTPUT=all keeps
// their standard error): every rank has the same result, rank 0 reports it.
// Returns whether MPI runs. Launched by mpirun in a build without MPI: prints why and exits 2.
bool init(int* argc, char*** argv);
// Call at the end of main when init() returned true.
void finalize();
// Whether this build can run several ranks ("MPI (Open MPI 4.1.4)" or "").
std::string mpi_version();

// A message for the user from one rank that the others do not share (a file
// missing on one host): written to the process's original standard error
// with a "rank N: " prefix, even on ranks whose output is silenced.
void rank_message(const std::string& text);

}  // namespace tpuemu::dist
