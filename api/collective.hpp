// A generated collective (programs/collectives.hpp) run on a pod through the
// run API, checked against its host reference, beside the book's prediction
// and nccl-tests' bandwidth figures. Below `tpuemu collective` and
// tpuemu.collective in Python.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/run.hpp"
#include "programs/collectives.hpp"

namespace tpuemu::api {

struct CollectiveJob {
  ChipRequest chip;
  ici::TopologyRequest topology;
  std::string routing = "dimension-order";
  programs::CollectiveSpec spec;  // spec.bytes = V, the size
  bool no_data = false;           // timing only: no data, no check (identical times)
  // The cycle limit of the run (chip::RunOptions::max_cycles). None:
  // predicted_cycle_limit of the prediction.
  std::optional<std::uint64_t> max_cycles;
  bool keep_outputs = false;  // also return every chip's output buffer ("1") in Result::outputs
  std::string partition;      // under mpirun: Options::partition
  // The NCCL protocol it runs under ("LL", "LL128", "Simple"; switched
  // fabrics only): run_collective sets fabric.protocol to the algorithm's
  // parameters for it (CollectiveAlgorithm::protocol_params; in-network's
  // Simple is NVLS), after job.chip's overrides. "": the chip's
  // fabric.protocol as it is (none in the presets).
  std::string protocol;
};

struct CollectiveResult {
  Result run;  // the pod report, with "collective" (the fields below) added
  programs::CollectivePrediction prediction;
  std::uint64_t group_size = 0;  // N
  // nccl-tests' size S and count (S / element size): the buffer (all-reduce),
  // the whole output (all-gather), the whole input (reduce-scatter), one
  // rank's send buffer (all-to-all: V / N).
  std::uint64_t nccl_bytes = 0;
  std::uint64_t count = 0;
  std::uint64_t padded_bytes = 0;  // the size that ran (padded_collective_spec); = the job's V when it divides
  // With keep_outputs, per chip: the bytes of run.outputs["1"] that are the user's
  // output (the rest is padding); else empty.
  std::vector<std::uint64_t> output_bytes;
  std::optional<std::uint64_t> wrong_elements;  // elements unlike the reference, all chips; none with --no-data
  double algbw = 0;                             // S / time (B/s)
  double busbw = 0;                             // algbw x 2(N-1)/N (all-reduce) or (N-1)/N
  double linkbw = 0;                            // busbw / links a stream uses into one chip; 0 for all-to-all
  double link_fraction = 0;                     // linkbw / the link's rate
  std::string check;                            // "bit-exact", "MISMATCH on K chips", "skipped (--no-data)"
  bool ok = true;                               // no mismatch
  double host_seconds = 0;                      // this call's wall time (generation, run, check)
  std::string program;                          // the generated LLO program that ran (every chip runs it)
  // The chip overrides ("path=value") the run added to the chip asked for:
  // the NCCL protocol's parameters and the channels in use on a switched
  // fabric (`tpuemu run` of `program` needs them as --set to run the same).
  std::vector<std::string> run_overrides;
};

// The parts of a job that do not depend on its size, checked: chip,
// topology, routing, axes, op, algorithm, dtype. Throws BadInput.
struct CollectiveSetup {
  ChipConfig chip;
  ici::Topology topology{{1}, {false}};
};
CollectiveSetup check_collective_setup(const CollectiveJob& job);

// job.spec with its bytes padded to the size the program runs
// (programs::padded_collective_bytes: the next size its algorithm can split,
// zeros in the padding). Throws BadInput: V = 0, V not whole elements, and
// the refusals of plan_collective.
programs::CollectiveSpec padded_collective_spec(const CollectiveJob& job, const CollectiveSetup& setup);

// The plan the run runs: of the padded size (group size, directions, parts).
// Throws BadInput.
programs::CollectivePlan collective_plan(const CollectiveJob& job, const CollectiveSetup& setup);

// A size: "65536", "64K", "1G", "2MiB" (K, M, G and KiB, MiB, GiB are powers
// of 1024, as in nccl-tests). Sizes: "64K:1G" (doubling), "1M,4M", "16M".
// Throw BadInput.
std::uint64_t parse_collective_size(const std::string& text);
std::vector<std::uint64_t> parse_collective_sizes(const std::string& text);

// The deterministic input of chip `chip` (random values in [-1, 1) of the
// spec's dtype, seeded by the chip id), `bytes` long in device layout.
std::vector<std::uint8_t> collective_input(std::uint64_t bytes, bool bf16, std::uint32_t chip);

// Throws BadInput if size `job.spec.bytes` cannot run: not whole elements,
// an all-to-all the algorithm cannot split (naming the multiple it needs), or
// the pod would not fit the host's memory at the padded size (naming the
// estimate and the limit). Other sizes are padded (padded_collective_spec).
void check_collective_size(const CollectiveJob& job, const CollectiveSetup& setup);

// `--algo list`: every registered algorithm, its summary and, per op, why
// it cannot run on the setup's topology ("" if it can).
struct CollectiveAlgorithmInfo {
  std::string name;
  std::string summary;
  std::vector<std::pair<std::string, std::string>> refusals;  // (op, reason)
};
std::vector<CollectiveAlgorithmInfo> list_collective_algorithms(const CollectiveSetup& setup);

// `--algo auto` and `--proto auto`: the (algorithm, protocol) pair with the
// least predicted time (programs::predict_collective: latency + bytes /
// bandwidth, under each NCCL protocol's payload efficiency, hop and base
// latency, as NCCL's tuning.cc does) for the job's op and size, among
// `algorithms` (empty: every registered one) that can run it and
// `protocols` ("LL", "LL128", "Simple"; empty: none, the chip's fabric.protocol
// as it is). Ties go to the first algorithm name, then the first protocol.
// Throws BadInput naming each algorithm's reason when none can.
struct CollectiveChoice {
  std::string algorithm;
  std::string protocol;  // "" when `protocols` was empty
  // (algorithm, or "algorithm/protocol" when there are protocols; predicted seconds)
  std::vector<std::pair<std::string, double>> predictions;
};
CollectiveChoice choose_collective_algorithm(const CollectiveJob& job, const CollectiveSetup& setup,
                                             const std::vector<std::string>& algorithms = {},
                                             const std::vector<std::string>& protocols = {});
// "LL", "ll128", "simple" -> "LL", "LL128", "Simple" (NCCL_PROTO's names, any
// case); throws BadInput for anything else.
std::string collective_protocol_name(const std::string& text);

// The protocols `--proto TEXT` asks for on the setup's fabric: "auto" on a
// switched fabric is LL, LL128 and Simple (the cost model chooses among them,
// as NCCL does when NCCL_PROTO is unset), on a torus none (a torus has no
// protocols: its overhead is ici.payload_efficiency); a name is that one
// protocol (collective_protocol_name). Throws BadInput for a name that is no
// protocol and for a protocol on a torus.
std::vector<std::string> collective_protocols(const std::string& proto, const CollectiveSetup& setup);

// One run of `tpuemu collective` and tpuemu.collective: an algorithm, its
// protocol and a size, with the predictions it was chosen from.
struct PlannedCollective {
  std::string algorithm;
  std::string protocol;  // "" on a torus
  std::uint64_t bytes = 0;
  // With --algo auto or --proto auto on a switched fabric: every candidate
  // ("algorithm" or "algorithm/protocol", predicted seconds); else empty.
  std::vector<std::pair<std::string, double>> predictions;
};
// The runs of `algorithms` ("ring", "a,b" in turn, or "auto": the least
// predicted per size) x `sizes` under `proto` (collective_protocols), every
// one checked (check_collective_size under its protocol) before any runs.
// job.spec says op, axes, dtype and piece; its algorithm and bytes are
// ignored. Throws BadInput naming what cannot run: an unknown algorithm, a
// protocol an algorithm does not run (in-network with LL or LL128), a size.
std::vector<PlannedCollective> plan_collective_runs(const CollectiveJob& job, const CollectiveSetup& setup,
                                                    const std::string& algorithms, const std::string& proto,
                                                    const std::vector<std::uint64_t>& sizes);
// `job` set up to run `planned`: its algorithm, size and protocol.
CollectiveJob planned_collective_job(const CollectiveJob& job, const PlannedCollective& planned);

// Generates, runs (always in a child process, so the caller stays small and
// each size's peak RSS is its own) and checks one size. A size the algorithm
// cannot split runs padded (padded_collective_spec; programs/collectives.hpp
// has the semantics): the program, its time and the prediction are those of
// the padded size; the check compares the user's bytes of every output
// (reduce-scatter: the chip's valid chunk bytes) with the reference of the
// padded run; with keep_outputs the outputs are the whole (padded) operands
// and output_bytes says how many of their first bytes are the user's;
// report["collective"]["bytes"], nccl_bytes, count and algbw are the user's
// V and "padded_bytes" is what ran (= bytes when nothing was padded). Throws
// BadInput or InternalError; a program fault is run.fault.
CollectiveResult run_collective(const CollectiveJob& job);

}  // namespace tpuemu::api
