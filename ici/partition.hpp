// How one pod is split over the processes (MPI ranks) that simulate it: every
// chip goes to exactly one rank, whole (a chip's TensorCores never split).
// Plain C++, no MPI: the same assignment is computed on every rank.
//
// Forms of --partition:
//   (default)      contiguous runs of linear chip ids, rank r getting chips
//                  [r*N/R, (r+1)*N/R): slabs across the slowest-varying axis
//                  when R divides its length
//   slab:AXIS      slabs across AXIS (x, y or z): rank floor(coord*R/length)
//   block:AxBxC    A x B x C blocks along x, y, z (A*B*C == R; missing
//                  trailing factors are 1): block (bx, by, bz) is rank
//                  bx + A*(by + B*bz), bx = floor(x*A/X)
//   file:PATH      one rank number per chip in linear-id order, separated by
//                  blanks or newlines; '#' starts a comment to the line's end
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ici/topology.hpp"

namespace tpuemu::ici {

// A partition that cannot be used: malformed text, more ranks than chips, a
// rank without chips, a file that does not cover the pod. what() says what
// and where (file:line:col for a partition file).
class PartitionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PartitionSpec {
  enum class Kind : std::uint8_t { kLinear, kSlab, kBlock, kFile };
  Kind kind = Kind::kLinear;
  std::size_t axis = 0;               // kSlab
  std::vector<std::uint32_t> blocks;  // kBlock: parts per axis
  std::string path;                   // kFile
  std::string text;                   // as given ("" for the default)
};

// Parses a --partition value (see above). Throws PartitionError.
PartitionSpec parse_partition(std::string_view text);

// The rank of every chip (index: linear chip id) for `ranks` ranks. Throws
// PartitionError unless 1 <= ranks <= chips, every chip gets a rank < ranks,
// every rank gets a chip, and the spec fits the topology (an existing axis,
// at least as long as the ranks across it; block factors that multiply to
// `ranks` and do not exceed the axes).
std::vector<std::uint32_t> partition_chips(const Topology& topology, const PartitionSpec& spec, std::uint32_t ranks);

// Directed links whose two chips are on different ranks (each direction counts).
std::uint64_t cut_links(const Topology& topology, const std::vector<std::uint32_t>& rank_of);

}  // namespace tpuemu::ici
