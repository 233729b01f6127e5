// Ranks over MPI_COMM_WORLD (Open MPI), and the entry points of a build with MPI.
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "dist/local_ranks.hpp"
#include "dist/ranks.hpp"

namespace tpuemu::dist {
namespace {

int original_stderr = 2;

int checked_count(std::uint64_t bytes) {
  if (bytes > static_cast<std::uint64_t>(INT_MAX)) {
    throw std::length_error("an exchange between ranks of more than 2 GiB at once");
  }
  return static_cast<int>(bytes);
}

// Displacements of `counts` laid end to end; throws past 2 GiB in all.
std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size());
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    d[i] = checked_count(at);
    at += static_cast<std::uint64_t>(counts[i]);
  }
  (void)checked_count(at);
  return d;
}

class MpiRanks final : public Ranks {
 public:
  MpiRanks() {
    int r = 0;
    int n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    rank_ = static_cast<std::uint32_t>(r);
    size_ = static_cast<std::uint32_t>(n);
  }
  [[nodiscard]] std::uint32_t rank() const override { return rank_; }
  [[nodiscard]] std::uint32_t size() const override { return size_; }

  double min_all(double value) override {
    double out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    return out;
  }
  std::uint64_t max_all(std::uint64_t value) override {
    std::uint64_t out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return out;
  }

  std::vector<Bytes> exchange(std::vector<Bytes> to_each) override {
    if (to_each.size() != size_) throw std::invalid_argument("exchange: one batch per rank");
    std::vector<int> send_counts(size_);
    std::vector<int> recv_counts(size_);
    for (std::uint32_t r = 0; r < size_; ++r) send_counts[r] = checked_count(to_each[r].size());
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    const std::vector<int> send_at = displacements(send_counts);
    const std::vector<int> recv_at = displacements(recv_counts);
    Bytes send(static_cast<std::size_t>(send_at.back()) + static_cast<std::size_t>(send_counts.back()));
    for (std::uint32_t r = 0; r < size_; ++r) {
      std::copy(to_each[r].begin(), to_each[r].end(), send.begin() + send_at[r]);
    }
    Bytes recv(static_cast<std::size_t>(recv_at.back()) + static_cast<std::size_t>(recv_counts.back()));
    MPI_Alltoallv(send.data(), send_counts.data(), send_at.data(), MPI_BYTE, recv.data(), recv_counts.data(),
                  recv_at.data(), MPI_BYTE, MPI_COMM_WORLD);
    std::vector<Bytes> out(size_);
    for (std::uint32_t r = 0; r < size_; ++r) {
      out[r].assign(recv.begin() + recv_at[r], recv.begin() + recv_at[r] + recv_counts[r]);
    }
    return out;
  }

  std::vector<Bytes> all_gather(const Bytes& mine) override {
    int count = checked_count(mine.size());
    std::vector<int> counts(size_);
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    const std::vector<int> at = displacements(counts);
    Bytes all(static_cast<std::size_t>(at.back()) + static_cast<std::size_t>(counts.back()));
    MPI_Allgatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), at.data(), MPI_BYTE, MPI_COMM_WORLD);
    std::vector<Bytes> out(size_);
    for (std::uint32_t r = 0; r < size_; ++r) out[r].assign(all.begin() + at[r], all.begin() + at[r] + counts[r]);
    return out;
  }

  std::vector<Bytes> gather(const Bytes& mine) override {
    int count = checked_count(mine.size());
    std::vector<int> counts(size_);
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> at(size_);
    Bytes all;
    if (rank_ == 0) {
      at = displacements(counts);
      all.resize(static_cast<std::size_t>(at.back()) + static_cast<std::size_t>(counts.back()));
    }
    MPI_Gatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), at.data(), MPI_BYTE, 0, MPI_COMM_WORLD);
    std::vector<Bytes> out;
    if (rank_ != 0) return out;
    out.resize(size_);
    for (std::uint32_t r = 0; r < size_; ++r) out[r].assign(all.begin() + at[r], all.begin() + at[r] + counts[r]);
    return out;
  }

  Bytes broadcast(const Bytes& value) override {
    std::uint64_t size = value.size();
    MPI_Bcast(&size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    Bytes out = rank_ == 0 ? value : Bytes(size);
    MPI_Bcast(out.data(), checked_count(size), MPI_BYTE, 0, MPI_COMM_WORLD);
    return out;
  }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; keeps [[noreturn]] honest
  }

 private:
  std::uint32_t rank_ = 0;
  std::uint32_t size_ = 1;
};

std::unique_ptr<Ranks>& ranks() {
  static std::unique_ptr<Ranks> r = std::make_unique<LocalRanks>();
  return r;
}

}  // namespace

Ranks& world() {
  if (replaced_world()) return *replaced_world();
  return *ranks();
}

bool init(int* argc, char*** argv) {
  if (!launched_by_mpirun()) return false;
  MPI_Init(argc, argv);
  ranks() = std::make_unique<MpiRanks>();
  // Every rank computes the same result and messages: rank 0 speaks for
  // all. TPUEMU_RANK_OUTPUT=all keeps every rank's standard error (debugging).
  if (ranks()->rank() != 0) {
    original_stderr = ::dup(2);
    std::fflush(stdout);
    std::fflush(stderr);
    const char* keep = std::getenv("TPUEMU_RANK_OUTPUT");
    const bool keep_stderr = keep != nullptr && std::string(keep) == "all";
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, 1);
      if (!keep_stderr) ::dup2(null, 2);
      ::close(null);
    }
  }
  return true;
}

void finalize() {
  MPI_Finalize();
}

std::string mpi_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string v(text, static_cast<std::size_t>(length));
  const auto end = v.find_first_of(",\n");
  return "MPI (" + v.substr(0, end) + ")";
}

void rank_message(const std::string& text) {
  const std::string line = "rank " + std::to_string(world().rank()) + ": " + text + "\n";
  [[maybe_unused]] const auto written = ::write(original_stderr, line.data(), line.size());
}

}  // namespace tpuemu::dist
