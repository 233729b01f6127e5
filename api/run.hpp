// The run API: Job (api/job.hpp) -> Result (api/result.hpp). Below every CLI
// command that runs programs and below the Python module.
//
//   api::Job job;
//   job.chip.preset = "v5e";
//   job.steps.push_back({api::load("matmul.llo"), "matmul.llo", {}});
//   job.inputs["0"].per_chip = {a};
//   job.inputs["1"].per_chip = {b};
//   const api::Result r = api::run(job);   // throws BadInput / AssemblyError
//   r.throw_if_fault();                    // or look at r.fault
//   NpyArray c = r.output("2");
//
// Any number of runs per process (Isolation, api/job.hpp): the first may
// simulate in this process, later ones run in forked children; results are
// bit-identical either way. A run's failure never changes the next run.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "api/job.hpp"
#include "api/result.hpp"

namespace tpuemu::api {

// Throws BadInput, AssemblyError (before simulating) or InternalError; a
// program fault is Result::fault.
Result run(const Job& job);

// Whether this process has simulated (SystemC elaborated) already.
bool process_has_simulated();

// A program from a file: LLO text (.llo, a dump's *-final_bundles.txt) or an
// image (.tpub). Throws AssemblyError (text) or BadInput (image, unreadable).
std::shared_ptr<const isa::Program> load(const std::string& path);
// A program from LLO text; `file_name` names it in diagnostics. Throws AssemblyError.
std::shared_ptr<const isa::Program> assemble(std::string_view text, const std::string& file_name);

}  // namespace tpuemu::api
