// The graph viewer (`--graph F.dot` / `--graph F.svg` on run, run-case and
// workload): Graphviz DOT of a program's static dependency graph or of a
// workload's chain of steps, written as text or rendered to SVG by Graphviz's
// `dot` (the analogue of the JAX profiler's graph viewer).
#pragma once

#include <boost/program_options.hpp>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/job.hpp"
#include "common/chip_config.hpp"
#include "isa/program.hpp"

namespace tpuemu::cli {

inline constexpr std::size_t kGraphMaxNodes = 2000;

// A program's ops as nodes, one cluster per bundle, with edges for
//   register: an op reads a register (or a unit's result token) that an op of
//             an earlier bundle last wrote (program order; loops' back edges
//             are not drawn);
//   sync flag: a sync op (vsyncadd, vsyncpa, ...) changed a flag a later
//             wait (dma.done.wait, ...) waits on;
//   DMA:       a DMA that signals a flag, to the wait on that flag.
// The critical path (the longest chain by each op's latency from the
// chip's latency table, at least one cycle) is drawn red. Only the first
// bundles holding at most `max_nodes` ops are drawn; `note` then says how
// many were left out (and the graph's label says so too).
// Several programs (a chain's steps) are clusters of one graph, drawn in
// order while the node budget lasts.
struct GraphProgram {
  std::string name;  // the step's name (file or kernel)
  const isa::Program* program;
};
std::string program_graph_dot(const std::vector<GraphProgram>& programs, const ChipConfig& chip, std::size_t max_nodes,
                              std::string& note);

// A workload report's phases (schema tpuemu-workload) as nodes in step
// order, each with its measured and predicted time; an edge from the last
// earlier step that used a buffer to the next step that uses it, labelled
// with the buffer; the chain of steps (the critical path: steps run one
// after another) drawn red. Communication phases are drawn as hexagons.
std::string workload_graph_dot(const nlohmann::json& report);

// Checks `path` can be produced before anything runs: ".dot" or ".svg"; for
// ".svg" Graphviz's `dot` must be on PATH. Throws std::invalid_argument
// naming --graph otherwise.
void check_graph_path(const std::string& path);

// Writes `dot_text` to `path` (.dot as is; .svg through `dot -Tsvg`); under
// mpirun only rank 0 writes. Returns an error message naming --graph, or ""
// on success.
std::string write_graph(const std::string& path, const std::string& dot_text);

// `--graph F.dot|F.svg` for a command's options.
void add_graph_option(boost::program_options::options_description& options, const char* what);

// Writes the program graph of `steps` to `path`, printing the cap's note
// (if any) to stderr. Returns an error message naming --graph, or "".
std::string write_program_graph(const std::string& path, const std::vector<api::Step>& steps, const ChipConfig& chip);

}  // namespace tpuemu::cli
