// A case of the dump corpus (../shared/llo, README "case.json fields") as a
// run of the run API: load_case reads a case folder into a Job (the kernel
// chain over the case's buffers, its inputs, by-value scalars, transposed
// buffers) plus the expected output and the check; run_case runs it through
// api::run (so any number of cases run in one process) and checks the output:
// bit for bit, or within rtol/atol where the case's notes say it is not
// bit-exact. `tpuemu run-case` and tpuemu.run_case (Python) are front ends.
//
//   api::CaseJob c = api::load_case("shared/llo/vector_add_f32");
//   c.job.chip.preset = "v5e";
//   const api::CaseResult r = api::run_case(c);
//   std::puts(r.text().c_str());   // "PASS vector_add_f32: 1024 elements bit-exact, ..."
//
// The top-level-program mode (`tpuemu run-case --tlp`: the TLP's copy-in
// DMAs and inlined_calls call the kernels) is the same Job with
// Job::top_level set to {the TLP, input_names, output}.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/job.hpp"
#include "api/result.hpp"
#include "common/npy.hpp"

namespace tpuemu::api {

struct CaseOptions {
  double rtol = 1e-5;   // where the case is not bit-exact: |got - want| <= atol + rtol * |want|
  double atol = 1e-30;  // both finite and >= 0
  // Buffer -> input: the host provides the buffer as the row maxima of the
  // 2-D float32 input (for a case whose notes say to take a missing kernel's
  // output as x.max(axis=1), softmax_f32/older/952f7bb: {"m", "x"}).
  std::map<std::string, std::string> row_max;
};

struct CaseJob {
  std::string name;  // the case folder's name (report.program, messages)
  std::string dir;
  // The kernel chain (Job::chain, on one chip): steps named by kernel, every
  // case input as an Input of the buffer it names (origin: its file), by-value
  // constants and scalar inputs in Job::scalars, layout-{0,1} buffers in
  // Job::transposed. The caller sets chip, options, observers, isolation.
  Job job;
  std::vector<std::string> input_names;   // case.json's inputs, in order (a TLP's parameter order)
  std::string output = "output";          // the buffer checked
  NpyArray expected;                      // expected.npy (float32 values)
  std::optional<NpyArray> expected_bits;  // raw uint16/uint8 codes of a bf16/f8 output (checked instead)
  bool exact = true;                      // false where the notes say "NOT bit-exact"
  CaseOptions options;
  std::string tlp_dump;  // path of the top-level program; empty for old-format dumps
};

// Reads DIR/case.json, the kernels' dumps, the inputs and the expected
// output. Throws AssemblyError (a dump), BadInput (anything else: a missing
// file or field, "DIR/case.json: not a case description: ...", a scalar
// input that does not convert to its operand's dtype, bad options).
CaseJob load_case(const std::string& dir, const CaseOptions& options = {});

struct CaseResult {
  std::string name;
  Result run;  // run.report carries "case" (docs/report.md) when the output was compared
  bool passed = false;
  // Why it failed before any element was compared: "program fault: ..."
  // (run.fault) or "output is float32 of shape 8x128 but the expected array
  // is ..."; "" when elements were compared.
  std::string failure;
  bool compared = false;  // elements were compared (the fields below are set)
  NpyArray output;        // the checked output: float32 values, or raw codes against expected_bits
  NpyArray expected;      // what it was checked against (CaseJob::expected or expected_bits)
  std::uint64_t elements = 0;
  std::uint64_t mismatches = 0;
  std::optional<std::uint64_t> first_mismatch;  // flat index
  std::vector<std::uint64_t> first_mismatch_index;
  std::string first_got, first_expected;  // "1.5 (0x3fc00000)", or a raw code "0x3fc0"
  bool exact = true;
  double rtol = 0;
  double atol = 0;
  double max_relative_error = 0;  // over finite pairs, where the case is not bit-exact
  double max_ulp = 0;

  // The verdict as `tpuemu run-case` prints it: "PASS NAME: ..." or
  // "FAIL NAME: ...", then one line per kernel (cycles, bundles, stalls).
  [[nodiscard]] std::string text() const;
};

// Checks `run` (of c.job, or of the case's top-level program) against the
// expected output. Throws BadInput "NAME: no kernel writes the buffer
// 'output'" if the run has no such output (and did not fault).
CaseResult check_case(const CaseJob& c, Result run);

// Makes `c` run through the case's top-level program (`run-case --tlp`:
// its copy-in DMAs and inlined_calls call the chain's kernels). Throws
// BadInput "NAME: the case has no top-level program ..." for an old-format
// dump, AssemblyError for a bad one.
void use_top_level_program(CaseJob& c);

// api::run(c.job), then check_case. Errors of the run name the case:
// BadInput "NAME: ...", InternalError.
CaseResult run_case(const CaseJob& c);

}  // namespace tpuemu::api
