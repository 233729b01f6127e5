#include "tools/demo_command.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "api/output_files.hpp"
#include "api/report.hpp"
#include "api/roofline.hpp"
#include "api/run.hpp"
#include "chip/fault.hpp"
#include "chip/host_io.hpp"
#include "chip/pod.hpp"
#include "chip/run.hpp"
#include "common/npy.hpp"
#include "isa/assembler.hpp"
#include "programs/collectives.hpp"
#include "programs/generators.hpp"
#include "programs/reference.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"
#include "tools/trace_options.hpp"
#include "workloads/pieces.hpp"

namespace tpuemu::cli {

using api::check_writable;
using api::compute_roofline;
using api::Roofline;
using api::write_text_file;
using workloads::device_matrix;
using workloads::matrix_block;
using workloads::refuse_other_mxu;

namespace {

int chip_demo(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  add_max_cycles_option(options);
  options.add_options()("m", whole_value(1)->default_value(2048), "rows of A and C")(
      "k", whole_value(1)->default_value(2048), "columns of A, rows of B")("n", whole_value(1)->default_value(2048),
                                                                           "columns of B and C")(
      "seed", whole_value(0, UINT32_MAX)->default_value(1), "seed of the pseudo-random inputs")(
      "report", po::value<std::string>(), "write the run report as JSON");
  po::positional_options_description positional;
  bool help = false;
  const auto vm =
      parse_options("demo --single-chip", "[--m M --k K --n N] [--chip v5e]", args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  const std::uint64_t m = (*vm)["m"].as<std::uint64_t>();
  const std::uint64_t k = (*vm)["k"].as<std::uint64_t>();
  const std::uint64_t n = (*vm)["n"].as<std::uint64_t>();
  const std::uint32_t seed = static_cast<std::uint32_t>((*vm)["seed"].as<std::uint64_t>());

  api::Job job;
  job.options.max_cycles = max_cycles(*vm);
  ChipConfig chip;
  std::uint64_t split_cores = 1;
  try {
    if (vm->count("report") != 0U) check_writable("--report", (*vm)["report"].as<std::string>());
    job.chip = chip_request(*vm);
    chip = load_chip(job.chip);
    programs::MatmulSpec spec;
    spec.m = m;
    spec.k = k;
    spec.n = n;
    refuse_other_mxu(chip, "the demo");
    // A chip of several TensorCores (megacore: v5p, v4p) splits C over them,
    // as a workload's matmul does; the split's barriers need a pod, of one
    // chip here. Unsplit, every core would compute the whole C (twice the
    // FLOPs, counted twice).
    spec.split_cores = chip.tensorcores_per_chip;
    if (programs::matmul_core_split(spec, chip) == programs::CoreSplit::kNone) spec.split_cores = 1;
    if (spec.split_cores > 1) job.topology = ici::TopologyRequest{"1", std::nullopt, false};
    split_cores = spec.split_cores;
    job.steps.push_back({api::assemble(programs::generate_matmul(spec, chip), "demo_matmul.llo"), "demo matmul", {}});
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu demo: {}\n", e.what());
    return kExitBadInput;
  }
  const auto a = programs::random_bf16_values(m * k, seed);
  const auto b = programs::random_bf16_values(k * n, seed + 1);
  job.inputs["0"].per_chip = {make_npy(NpyDtype::kFloat32, {m, k}, a.data())};
  job.inputs["1"].per_chip = {make_npy(NpyDtype::kFloat32, {k, n}, b.data())};

  fmt::print("tpuemu demo: C[{},{}] = A[{},{}] @ B[{},{}], bf16 inputs, f32 output, on an emulated {}\n", m, n, m, k, k,
             n, chip.name);
  fmt::print("program: `tpuemu gen matmul --m {} --k {} --n {}{}` ({} bundles){}\n\n", m, k, n,
             split_cores > 1 ? " --split-cores" : "", job.steps.front().program->bundles.size(),
             split_cores > 1 ? fmt::format(", C split over the chip's {} TensorCores", split_cores) : std::string());
  if (split_cores == 1 && chip.tensorcores_per_chip > 1) {
    fmt::print(
        "note: this shape does not split over {}'s {} TensorCores: each computes the whole C, so the FLOPs "
        "and bytes below are {} times the matmul's\n\n",
        chip.name, chip.tensorcores_per_chip, chip.tensorcores_per_chip);
  }
  const auto start = std::chrono::steady_clock::now();
  api::Result run;
  try {
    run = api::run(job);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu demo: {}\n", e.what());
    return kExitBadInput;
  }
  const double host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (run.fault) {
    fmt::print(stderr, "tpuemu demo: program fault: {}\n", run.fault->message);
    return kExitProgramFault;
  }
  const nlohmann::json& report = run.report;
  api::print_report(report);

  // Bit-exact check against the host reference (same accumulation order).
  const NpyArray c = run.output("2");
  const auto expected = programs::matmul_reference(a, b, m, k, n);
  const auto got = c.as_f32();
  std::uint64_t mismatches = 0;
  std::uint64_t first = 0;
  for (std::uint64_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&got[i], &expected[i], 4) != 0) {
      if (mismatches++ == 0) first = i;
    }
  }
  const auto bundles = report["bundles"].get<std::uint64_t>();
  fmt::print("\nhost      {:.2f} s to emulate {} bundles ({:.3g} bundles/s)\n", host_seconds, bundles,
             static_cast<double>(bundles) / host_seconds);
  if (vm->count("report") != 0U) {
    if (auto error = write_text_file("--report", (*vm)["report"].as<std::string>(), report.dump(2) + "\n")) {
      fmt::print(stderr, "tpuemu demo: {}\n", *error);
      return kExitBadInput;
    }
  }
  if (mismatches != 0) {
    fmt::print("check     FAIL: {} of {} elements differ from the host reference; first C[{},{}] = {} (expected {})\n",
               mismatches, expected.size(), first / n, first % n, got[first], expected[first]);
    return kExitFailure;
  }
  fmt::print("check     PASS: C equals the host reference bit for bit ({} elements)\n", expected.size());
  return kExitOk;
}

// The pod demo: Y = X @ W with X sharded by rows (batch) and W by rows
// (the contracting dimension) over every chip. Each chip all-gathers W
// (the book's case 2: an input sharded on the contracting dimension is
// gathered first), then multiplies its rows of X by the whole W.
int pod_demo(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  add_max_cycles_option(options);
  add_topology_options(options);
  add_partition_option(options);
  add_trace_options(options);
  add_profile_options(options);
  options.add_options()("topology", po::value<std::string>()->default_value("2x2"), "pod shape")(
      "b", whole_value(1)->default_value(2048), "rows of X and Y (split over the chips)")(
      "d", whole_value(1)->default_value(2048), "columns of X, rows of W (split over the chips)")(
      "f", whole_value(1)->default_value(2048), "columns of W and Y")(
      "algo", po::value<std::string>()->default_value("multi-axis"), "all-gather algorithm")(
      "seed", whole_value(0, UINT32_MAX)->default_value(1), "seed of the pseudo-random inputs")(
      "report", po::value<std::string>(), "write the pod run report as JSON")(
      "single-chip", "the single-chip demo instead (see --single-chip --help)");
  po::positional_options_description positional;
  bool help = false;
  const auto vm = parse_options("demo", "[--chip v5e] [--topology 2x2] [--b B --d D --f F] [--single-chip]", args,
                                options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  const std::uint64_t b = (*vm)["b"].as<std::uint64_t>();
  const std::uint64_t d = (*vm)["d"].as<std::uint64_t>();
  const std::uint64_t f = (*vm)["f"].as<std::uint64_t>();
  const std::uint32_t seed = static_cast<std::uint32_t>((*vm)["seed"].as<std::uint64_t>());

  ChipConfig chip;
  ici::Topology topology{{1}, {false}};
  programs::CollectiveSpec gather;
  isa::Program gather_program;
  isa::Program matmul_program;
  std::uint64_t n = 1;
  TraceOutput trace;
  ProfileOutput profile;
  try {
    if (vm->count("report") != 0U) check_writable("--report", (*vm)["report"].as<std::string>());
    chip = load_chip(chip_request(*vm));
    trace = trace_output(*vm, chip.clock_hz);
    profile = profile_output(*vm);
    topology = topology_from(*vm, (*vm)["topology"].as<std::string>(), chip);
    n = topology.chip_count();
    if (b % n != 0 || d % n != 0 || (d / n) % 16 != 0) {
      throw std::invalid_argument(fmt::format(
          "--b {} and --d {} must split evenly over {} chips, and each chip's rows of W (d/{}) must be a multiple of "
          "16 (whole bf16 tiles)",
          b, d, n, n));
    }
    if (f % 128 != 0) {
      throw std::invalid_argument(fmt::format(
          "--f {} must be a multiple of 128: the all-gathered rows of W are the matmul's operand in device layout "
          "(bf16 tiles of 128 columns)",
          f));
    }
    gather.op = "all-gather";
    gather.algorithm = (*vm)["algo"].as<std::string>();
    gather.dtype = "bf16";
    gather.bytes = d * f * 2;
    for (std::size_t a = 0; a < topology.axis_count(); ++a) gather.axes.push_back(a);
    gather_program = isa::assemble(programs::generate_collective(gather, topology, chip), "demo_all_gather.llo");
    programs::MatmulSpec spec;
    spec.m = b / n;
    spec.k = d;
    spec.n = f;
    refuse_other_mxu(chip, "the demo");
    // Split over a megacore chip's cores as the workloads' matmuls (the pod's per-step counters
    // count the chip's cores together).
    spec = workloads::on_every_core(spec, chip);
    matmul_program = isa::assemble(programs::generate_matmul(spec, chip), "demo_matmul.llo");
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu demo: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu demo: {}\n", e.what());
    return kExitBadInput;
  }

  // Host data: X and W, and each chip's shards in device layout. The
  // all-gather concatenates W's row blocks in rank order, which is W's own
  // device layout because bf16 tiles hold whole rows.
  const auto x = programs::random_bf16_values(b * d, seed);
  const auto w = programs::random_bf16_values(d * f, seed + 1);
  const std::uint64_t rows_x = b / n;
  const std::uint64_t rows_w = d / n;
  const programs::CollectivePlan plan = programs::plan_collective(gather, topology);
  api::Job job;
  job.chip = chip_request(*vm);
  job.topology = topology_request_from(*vm, (*vm)["topology"].as<std::string>());
  job.routing = (*vm)["routing"].as<std::string>();
  job.options.partition = partition_option(*vm);
  job.options.max_cycles = max_cycles(*vm);
  if (trace.tracer) {
    job.observers.trace = trace.path;
    job.observers.trace_options = trace.tracer->options();
  }
  job.observers.memory_profile = profile.json_path;
  job.steps = {{std::make_shared<const isa::Program>(std::move(gather_program)),
                "demo_all_gather.llo",
                {{0, "w shard"}, {1, "w"}}},
               {std::make_shared<const isa::Program>(std::move(matmul_program)),
                "demo_matmul.llo",
                {{0, "x"}, {1, "w"}, {2, "y"}}}};
  job.inputs["x"].device_provider = [&](std::uint32_t id, const chip::OperandBinding&) {
    const std::uint64_t rank = plan.rank(topology.coords(ChipId(id)));
    return device_matrix(matrix_block(x, d, rank * rows_x, rows_x, 0, d), rows_x, d, "bf16", "x");
  };
  job.inputs["w shard"].device_provider = [&](std::uint32_t id, const chip::OperandBinding&) {
    const std::uint64_t rank = plan.rank(topology.coords(ChipId(id)));
    return device_matrix(matrix_block(w, f, rank * rows_w, rows_w, 0, f), rows_w, f, "bf16", "w");
  };

  fmt::print("tpuemu demo: Y[{},{}] = X[{},{}] @ W[{},{}] (bf16 in, f32 out) on a {} pod of {}\n", b, f, b, d, d, f,
             ici::describe(topology), chip.name);
  fmt::print(
      "  X split by rows over the {} chips, W by rows (the contracting dimension): each chip all-gathers W\n"
      "  ({} all-gather, `tpuemu collective`), then computes its {} rows of Y (`tpuemu gen matmul`).\n\n",
      n, gather.algorithm, rows_x);
  const auto start = std::chrono::steady_clock::now();
  api::Result r;
  try {
    r = api::run(job);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpuemu demo: {}\n", e.what());
    return kExitBadInput;
  }
  const double host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r.fault) {
    fmt::print(stderr, "tpuemu demo: program fault: {}\n", r.fault->message);
    return kExitProgramFault;
  }
  nlohmann::json report = r.report;
  report["program"] = "demo: all-gather W, then matmul";
  api::print_report(report);

  // Phase by phase against the predictions.
  std::uint64_t gather_end = 0;
  std::uint64_t matmul_cycles = 0;
  chip::CoreStats matmul_stats;
  for (const auto& c : report["per_chip"]) {
    const auto& steps = c["steps"];
    const auto end = [&steps](std::size_t s) { return steps.at(s)["end_cycle"].get<std::uint64_t>(); };
    const auto delta = [&steps](const char* key) {
      return steps.at(1)[key].get<std::uint64_t>() - steps.at(0)[key].get<std::uint64_t>();
    };
    gather_end = std::max(gather_end, end(0));
    const std::uint64_t mm = end(1) - end(0);
    if (mm >= matmul_cycles) {
      matmul_cycles = mm;
      matmul_stats.mxu_flops = delta("mxu_flops");
      matmul_stats.vpu_flops = delta("vpu_flops");
      matmul_stats.hbm_bytes = delta("hbm_bytes");
    }
  }
  const programs::CollectivePrediction predicted = programs::predict_collective(gather, topology, chip);
  const double gather_seconds = static_cast<double>(gather_end) / chip.clock_hz;
  fmt::print("\nall-gather  W ({} B): {} measured, {} predicted ({}): measured/predicted = {:.3f}\n", gather.bytes,
             format_quantity(gather_seconds, Quantity::kTime), format_quantity(predicted.seconds, Quantity::kTime),
             predicted.formula, gather_seconds / predicted.seconds);
  const Roofline roof =
      compute_roofline(chip, static_cast<double>(matmul_stats.mxu_flops), static_cast<double>(matmul_stats.vpu_flops),
                       static_cast<double>(matmul_stats.hbm_bytes), static_cast<double>(matmul_cycles) / chip.clock_hz);
  fmt::print(
      "matmul      {}x{}x{} per chip (slowest chip): {} measured, roofline {} ({}-bound): measured/predicted = "
      "{:.3f}\n",
      rows_x, d, f, format_quantity(roof.measured_seconds, Quantity::kTime),
      format_quantity(roof.predicted_seconds, Quantity::kTime), roof.bound, roof.measured_over_predicted());
  fmt::print("total       {} = all-gather then matmul (no overlap in this demo)\n",
             format_quantity(r.seconds, Quantity::kTime));

  // Every chip's rows of Y against the host reference, bit for bit.
  std::uint64_t mismatches = 0;
  for (std::uint32_t id = 0; id < topology.chip_count(); ++id) {
    const std::uint64_t rank = plan.rank(topology.coords(ChipId(id)));
    const auto rows = matrix_block(x, d, rank * rows_x, rows_x, 0, d);
    const auto expected = programs::matmul_reference(rows, w, rows_x, d, f);
    const NpyArray got = r.output("y", id);
    const auto values = got.as_f32();
    for (std::uint64_t i = 0; i < expected.size(); ++i)
      mismatches += std::memcmp(&values[i], &expected[i], 4) != 0 ? 1 : 0;
  }
  fmt::print("\nhost      {:.2f} s to emulate {} chips\n", host_seconds, topology.chip_count());
  if (vm->count("report") != 0U) {
    if (auto error = write_text_file("--report", (*vm)["report"].as<std::string>(), report.dump(2) + "\n")) {
      fmt::print(stderr, "tpuemu demo: {}\n", *error);
      return kExitBadInput;
    }
  }
  if (mismatches != 0) {
    fmt::print("check     FAIL: {} elements of Y differ from the host reference\n", mismatches);
    return kExitFailure;
  }
  fmt::print("check     PASS: every chip's rows of Y equal the host reference bit for bit ({} elements)\n", b * f);
  return kExitOk;
}

}  // namespace

int demo_command(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--single-chip") {
      std::vector<std::string> rest;
      for (const auto& other : args) {
        if (other != "--single-chip") rest.push_back(other);
      }
      return chip_demo(rest);
    }
  }
  return pod_demo(args);
}

}  // namespace tpuemu::cli
