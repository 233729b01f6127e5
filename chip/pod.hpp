// Running one SPMD program on every TensorCore of every chip of a pod: chips
// joined by the ICI network (ici/network.hpp) in a SystemC simulation.
// SystemC elaborates once per process: call run_pod once per process.
//
// Time: each core runs ahead of SystemC time by at most a quantum (capped at
// one hop latency) and blocks (Core::kBlocked) only on what another chip must
// do. A core whose next bundle waits for a local DMA while a delivery could
// make it ready sooner (Core::kWaiting: a remote DMA leaving frees a queue
// slot, a remote credit reaches the flag first) lets SystemC time reach its
// own, then waits until the local DMA's cycle or a delivery, whichever comes
// first: it never stalls past a delivery, so cycles do not depend on the
// quantum (nor do the turns of a chip's cores on its HBM port:
// chip/chip_module.hpp). Sends enter the network at the sender's local
// time, which is never behind SystemC time, so the network sees them in time
// order; deliveries (flag credits, data) happen at their SystemC time, never
// ahead of the receiver's local time, and wake a blocked receiver. Only a
// racy program (reading data before the sync flag that guards it says it has
// arrived) can see a result that depends on the quantum.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chip/core.hpp"
#include "chip/exec_program.hpp"
#include "chip/trace.hpp"
#include "common/chip_config.hpp"
#include "dist/ranks.hpp"
#include "ici/network.hpp"
#include "ici/topology.hpp"
#include "isa/program.hpp"

namespace tpuemu::chip {

// A chain of programs run back to back on every core (the way a top-level
// program calls its kernels): operand i of step s binds to the named buffer
// operand_buffers[i], which keeps one HBM place on every chip for the chain:
// laid out (dtype, shape) as its first use declares it, as large as its
// largest use (a padded collective reads and writes past the matrix that
// produced its input; bytes no step wrote read as zeros).
struct PodStep {
  const isa::Program* program = nullptr;
  std::map<std::uint32_t, std::string> operand_buffers;
};

struct PodRequest {
  // One program (its operands are buffers "0", "1", ...) or a chain (steps).
  const isa::Program* program = nullptr;
  std::vector<PodStep> steps;
  ChipConfig chip;
  ici::Topology topology{{1}, {false}};
  std::string routing = "dimension-order";
  RunOptions options;
  std::uint64_t quantum_cycles = 1000;  // capped at the hop latency
  // Device bytes of the input buffer `buffer` (first bound as `binding`) on
  // chip `chip_id` (host_io layout, device_bytes(binding) long); an empty
  // result or an unset function leaves it zero.
  std::function<std::vector<std::uint8_t>(std::uint32_t chip_id, const std::string& buffer,
                                          const OperandBinding& binding)>
      input;
  bool read_outputs = true;  // collect output buffers (only with numerics)
  Tracer* tracer = nullptr;  // trace events of every chip, link and remote DMA
  std::string vcd;           // waveform file; empty = off (forces a one-cycle quantum)
  std::uint64_t vcd_max_changes = 20'000'000;
  MemoryProfile* profile = nullptr;  // memory profile of every chip; null = off
  // Several processes simulating this pod together (dist/ranks.hpp): each
  // builds and runs only the chips rank_of gives it (rank_of[chip] = rank,
  // every rank at least one chip), and they exchange what crosses between
  // them in conservative windows of one hop latency (pod.cpp). Null, or one
  // rank: this process runs every chip. Each rank observes (tracer, vcd,
  // profile) its own chips; when the run ends rank 0's tracer and profile
  // hold the whole pod, and rank 0 alone writes the VCD.
  dist::Ranks* ranks = nullptr;
  std::vector<std::uint32_t> rank_of;
};

struct PodChipResult {
  std::uint64_t cycles = 0;  // the chip's slowest core, including its DMAs
  std::vector<CoreStats> cores;
  std::map<std::string, std::vector<std::uint8_t>> outputs;  // device bytes by buffer name
  // At the end of each step: core 0's cycle, and the cumulative statistics of
  // the chip's cores (each core's at its own end of the step), summed.
  std::vector<std::uint64_t> step_end_cycles;
  std::vector<CoreStats> step_end_stats;
};

struct PodResult {
  std::uint64_t cycles = 0;  // the last core to finish or the last delivery, whichever is later
  double seconds = 0;
  std::vector<PodChipResult> chips;
  std::vector<ici::Network::LinkStats> links;
  std::map<std::string, OperandBinding> buffers;  // the binding that lays each buffer out
  std::vector<std::uint64_t> step_end_cycles;     // per step: when its last core ended it
  std::uint64_t ici_bytes = 0;
  // Host-cost statistics: bundles issued by all cores, network events processed.
  std::uint64_t bundles = 0;
  std::uint64_t network_events = 0;
  std::uint64_t core_resumes = 0;  // blocked cores woken by a delivery
  std::uint64_t core_syncs = 0;    // cores catching up with SystemC time (quantum ends)
  // The first program fault (the earliest by (cycle, chip) where several
  // chips fault), or a deadlock report naming every waiting core.
  std::optional<std::string> fault;
  // Over several ranks every rank returns this whole result (all chips'
  // results and outputs, gathered from their ranks).
  std::uint32_t ranks = 1;
  std::uint64_t windows = 0;         // conservative windows run (0 in one process)
  bool waveform_overflowed = false;  // the fault is the waveform's limit (--vcd-max-changes)
};

// Throws LoadError (program does not fit the chip, operands the pod cannot
// place) or std::invalid_argument (bad routing name) before simulating.
PodResult run_pod(const PodRequest& request);

}  // namespace tpuemu::chip
