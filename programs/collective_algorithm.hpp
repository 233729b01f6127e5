// Collective algorithms by name (house style 6): each lives in its own file
// under programs/collective_algorithms/ and registers itself; adding one is
// adding a file. An algorithm generates the SPMD LLO program of a collective
// (programs/collectives.hpp: operands, sizes, groups and ranks, the program
// contract), computes its host reference in the order the program adds, and
// predicts its time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/chip_config.hpp"
#include "ici/topology.hpp"
#include "programs/collectives.hpp"

namespace tpuemu::programs {

// Which of NCCL's kernels an algorithm stands for, for NCCL's channel tuning
// (nccl_channels_in_use): its ring (ring, bidir-ring, multi-axis), its tree,
// or none (NVLS runs on fixed channels; the symmetric-memory one-shot and
// two-shot kernels and halving-doubling have no channel tuning in NCCL).
enum class NcclKernel { kNone, kRing, kTree };

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // One line for `--algo list`: what it does and its reduction order.
  [[nodiscard]] virtual std::string_view summary() const = 0;
  // Why it cannot run `op` over the participating axes `axes` (those longer
  // than 1) of `topology`, naming what is missing, or "".
  [[nodiscard]] virtual std::string refusal(CollectivePlan::Op op, const std::vector<std::size_t>& axes,
                                            const ici::Topology& topology) const = 0;
  // Its streams (CollectivePlan::parts and directions) over `axes`
  // participating axes: one stream unless it says otherwise.
  [[nodiscard]] virtual std::uint64_t parts(std::size_t /*axes*/) const { return 1; }
  [[nodiscard]] virtual std::uint64_t directions() const { return 1; }
  // Why it cannot run on chips like `chip` (naming what is missing), or "".
  [[nodiscard]] virtual std::string chip_refusal(const ChipConfig& /*chip*/) const { return ""; }
  // Whether it runs under NCCL protocol `protocol` ("LL", "LL128", "Simple";
  // "" none): every one does, but in-network (NCCL runs NVLS with Simple only).
  [[nodiscard]] virtual bool runs_protocol(std::string_view /*protocol*/) const { return true; }
  // The parameters (ChipConfig::fabric.protocol) it runs under for `protocol`:
  // the same, but in-network's Simple is "NVLS" (NCCL's NVLS efficiency and latency).
  [[nodiscard]] virtual std::string_view protocol_params(std::string_view protocol) const { return protocol; }
  // The NCCL kernel whose channel tuning it follows (NcclKernel).
  [[nodiscard]] virtual NcclKernel nccl_kernel() const { return NcclKernel::kNone; }
  // The ring family's half rings (CollectivePlan::half_rings).
  [[nodiscard]] virtual bool half_rings() const { return false; }
  // All-to-all and a group of one chip are the same program for every
  // algorithm (programs/collectives.cpp writes them) and data movement has one
  // reference: scratch_bytes and generate are asked only for the other ops
  // over a group of at least 2 chips, reference only for reduce-scatter and
  // all-reduce.
  //
  // The HBM scratch operand it binds (0: none).
  [[nodiscard]] virtual std::uint64_t scratch_bytes(const CollectivePlan& plan,
                                                    const ici::Topology& topology) const = 0;
  // The LLO program (plan = plan_collective(spec, topology)); throws
  // std::invalid_argument when it does not fit the chip.
  [[nodiscard]] virtual std::string generate(const CollectiveSpec& spec, const CollectivePlan& plan,
                                             const ici::Topology& topology, const ChipConfig& chip) const = 0;
  // outputs[chip] from inputs[chip] (device bytes, checked sizes), bit for bit
  // what the program computes.
  [[nodiscard]] virtual std::vector<std::vector<std::uint8_t>> reference(
      const CollectivePlan& plan, const ici::Topology& topology,
      const std::vector<std::vector<std::uint8_t>>& inputs) const = 0;
  [[nodiscard]] virtual CollectivePrediction predict(const CollectiveSpec& spec, const CollectivePlan& plan,
                                                     const ici::Topology& topology, const ChipConfig& chip) const = 0;
};

// The registered algorithm called `name`; throws std::invalid_argument
// listing the known names if there is none.
const CollectiveAlgorithm& collective_algorithm(std::string_view name);
// Every registered name, sorted.
std::vector<std::string> collective_algorithm_names();

// NCCL's channel tuning (src/enqueue.cc topoGetAlgoInfo, NCCL 2.19 to 2.30):
// a ring or tree collective of nBytes (nccl-tests' size S: spec.bytes for
// all-gather, reduce-scatter and all-reduce) over `ranks` ranks under protocol
// P runs on the most channels c <= fabric.nccl_channels with nBytes >= c x
// P.max_threads x threshold (threshold = P.thread_threshold, x ranks for the
// ring's LL), at least 1. Returns that c, or 0 when no tuning applies: no
// protocol in effect (chip.fabric.protocol), fabric.nccl_channels or the
// protocol's max_threads / thread_threshold 0, an algorithm with
// NcclKernel::kNone, or all-to-all (point to point in NCCL).
std::uint64_t nccl_channels_in_use(const CollectiveSpec& spec, std::uint64_t ranks, const ChipConfig& chip);

// Registers an algorithm for the program's lifetime (from a namespace-scope
// object in its own file; a second one of the same name aborts at start).
class CollectiveAlgorithmRegistrar {
 public:
  explicit CollectiveAlgorithmRegistrar(std::unique_ptr<CollectiveAlgorithm> algorithm);
};

}  // namespace tpuemu::programs
