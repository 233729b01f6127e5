// The ranks as a forked child of a rank sees them: the child simulates, its
// parent (the MPI process) makes the collective calls for it. MPI may not be
// used in a child forked after MPI_Init, and SystemC elaborates once per
// process, so a rank that runs several pods (several collective sizes, a run
// after a dry run) runs each in a child that reaches the other ranks through
// its parent.
//
// Contract: the child's calls reach `real` in the parent one by one, in the
// child's order, with the same arguments and results as if the child had made
// them; rank() and size() are the parent's. A child that calls abort() ends
// every rank as the parent's abort() would. The channel is a socket pair: one
// request, then its reply, per call (frames of a u64 length and the bytes).
#pragma once

#include <cstdint>
#include <memory>

#include "dist/ranks.hpp"

namespace tpuemu::dist {

class ChildRanks final : public Ranks {
 public:
  ChildRanks(int fd, std::uint32_t rank, std::uint32_t size) : fd_(fd), rank_(rank), size_(size) {}
  [[nodiscard]] std::uint32_t rank() const override { return rank_; }
  [[nodiscard]] std::uint32_t size() const override { return size_; }
  double min_all(double value) override;
  std::uint64_t max_all(std::uint64_t value) override;
  std::vector<Bytes> exchange(std::vector<Bytes> to_each) override;
  std::vector<Bytes> all_gather(const Bytes& mine) override;
  std::vector<Bytes> gather(const Bytes& mine) override;
  Bytes broadcast(const Bytes& value) override;
  [[noreturn]] void abort(int exit_code) override;

 private:
  int fd_;
  std::uint32_t rank_;
  std::uint32_t size_;
};

// The parent's end: answers one request of the child on `fd` with `real`.
// Returns false when the child has closed the channel (it ended, or died).
// A child's abort() does not return: real.abort() ends this process.
bool serve_child_request(int fd, Ranks& real);

// From now on world() is `ranks` in this process (a child installs its
// ChildRanks first thing); the process keeps it until it exits.
void replace_world(std::unique_ptr<Ranks> ranks);

}  // namespace tpuemu::dist
