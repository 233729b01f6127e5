#include "api/collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "chip/host_io.hpp"
#include "chip/host_memory.hpp"
#include "common/numerics.hpp"
#include "common/parse_number.hpp"
#include "dist/ranks.hpp"
#include "ici/routing.hpp"
#include "programs/collective_algorithm.hpp"
#include "programs/collective_reference.hpp"

namespace tpuemu::api {
namespace {

// Runs `f`, turning the generator's and the chip layer's refusals into BadInput.
template <typename F>
auto checked(F&& f) {
  try {
    return f();
  } catch (const BadInput&) {
    throw;
  } catch (const std::exception& e) {  // ConfigError, TopologyError, invalid_argument, LoadError
    throw BadInput(e.what());
  }
}

// Why `algorithm` cannot run under NCCL protocol `protocol` on `setup`'s
// fabric, or "" (also for no protocol).
std::string protocol_refusal(const std::string& algorithm, const std::string& protocol, const CollectiveSetup& setup) {
  if (protocol.empty()) return "";
  if (!setup.topology.switched()) {
    return fmt::format(
        "--proto {}: NCCL protocols run on switched fabrics; the torus {} of {} has ICI links (their overhead is "
        "ici.payload_efficiency)",
        protocol, setup.topology.shape(), setup.chip.name);
  }
  if (!programs::collective_algorithm(algorithm).runs_protocol(protocol)) {
    return fmt::format("--algo {} does not run with --proto {} (NCCL runs NVLS with Simple only)", algorithm, protocol);
  }
  return "";
}

// The fabric.protocol override that puts `protocol` into effect for `algorithm`.
std::string protocol_override(const std::string& algorithm, const std::string& protocol) {
  return "fabric.protocol=" + std::string(programs::collective_algorithm(algorithm).protocol_params(protocol));
}

// The channels NCCL would run `spec` on over `topology` under `chip`'s
// protocol (programs::nccl_channels_in_use; 0: no channel tuning applies).
std::uint64_t nccl_active_channels(const programs::CollectiveSpec& spec, const ici::Topology& topology,
                                   const ChipConfig& chip) {
  return programs::nccl_channels_in_use(spec, programs::plan_collective(spec, topology).group_size, chip);
}

}  // namespace

// "64K", "1G", "4096", "2MiB": K, M, G (and KiB, MiB, GiB) are powers of 1024, as in nccl-tests.
std::uint64_t parse_collective_size(const std::string& text) {
  const auto value = parse_bytes(text);
  if (!value) throw BadInput(fmt::format("size '{}' is not a whole number of bytes like 65536, 64K or 1G", text));
  if (*value == 0) throw BadInput(fmt::format("size '{}' must be positive", text));
  return *value;
}

// "64K:1G" (doubling), "1M,4M", "16M".
std::vector<std::uint64_t> parse_collective_sizes(const std::string& text) {
  std::vector<std::uint64_t> sizes;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    const std::uint64_t lo = parse_collective_size(text.substr(0, colon));
    const std::uint64_t hi = parse_collective_size(text.substr(colon + 1));
    if (hi < lo) throw BadInput(fmt::format("--sizes {}: the range ends below its start", text));
    for (std::uint64_t s = lo;; s *= 2) {
      sizes.push_back(s);
      if (s > hi / 2) break;  // the next doubling passes hi (or 64 bits)
    }
    return sizes;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    sizes.push_back(
        parse_collective_size(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return sizes;
}

std::vector<std::uint8_t> collective_input(std::uint64_t bytes, bool bf16, std::uint32_t chip) {
  std::vector<std::uint8_t> out(bytes);
  std::mt19937 rng(1000 + chip);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  if (bf16) {
    for (std::uint64_t i = 0; i + 2 <= bytes; i += 2) {
      const std::uint16_t b = f32_to_bf16_bits(dist(rng));
      std::memcpy(&out[i], &b, 2);
    }
  } else {
    for (std::uint64_t i = 0; i + 4 <= bytes; i += 4) {
      const float f = dist(rng);
      std::memcpy(&out[i], &f, 4);
    }
  }
  return out;
}

CollectiveSetup check_collective_setup(const CollectiveJob& job) {
  return checked([&job] {
    CollectiveSetup setup;
    setup.chip = load_chip(job.chip);
    setup.topology = ici::make_topology(job.topology, setup.chip);
    (void)ici::routing_policy(job.routing);
    return setup;
  });
}

programs::CollectiveSpec padded_collective_spec(const CollectiveJob& job, const CollectiveSetup& setup) {
  return checked([&] {
    programs::CollectiveSpec spec = job.spec;
    spec.bytes = programs::padded_collective_bytes(job.spec, setup.topology);
    return spec;
  });
}

programs::CollectivePlan collective_plan(const CollectiveJob& job, const CollectiveSetup& setup) {
  const programs::CollectiveSpec spec = padded_collective_spec(job, setup);
  return checked([&] { return programs::plan_collective(spec, setup.topology); });
}

void check_collective_size(const CollectiveJob& job, const CollectiveSetup& setup) {
  checked([&] {
    if (job.spec.algorithm == "in-network" && dist::world().size() > 1) {
      throw BadInput(
          "--algo in-network does not yet run on a pod split over MPI ranks (the switches' reduction "
          "rounds live in one process); run it in one process");
    }
    const ici::Topology& topology = setup.topology;
    const auto shapes = programs::collective_shapes(padded_collective_spec(job, setup), topology);
    if (const std::string why = programs::collective_algorithm(job.spec.algorithm).chip_refusal(setup.chip);
        !why.empty()) {
      throw BadInput(why);
    }
    const bool data = !job.no_data;
    const double touched = static_cast<double>(topology.chip_count()) *
                           static_cast<double>(shapes.input_bytes * 2 + shapes.output_bytes + shapes.scratch_bytes);
    chip::check_host_memory(
        chip::estimate_pod_host_memory(topology.chip_count(), setup.chip.tensorcores_per_chip,
                                       data ? static_cast<std::uint64_t>(touched) / topology.chip_count() : 0),
        fmt::format("size {}: the {} pod of {}", job.spec.bytes, topology.shape(), setup.chip.name));
    if (data && touched > 8.0 * (1ULL << 30)) {
      throw BadInput(fmt::format(
          "size {}: moving real data would touch {:.1f} GiB of host memory over {} chips; use --no-data for "
          "timing (identical times) or a smaller size",
          job.spec.bytes, touched / (1ULL << 30), topology.chip_count()));
    }
    return 0;
  });
}

CollectiveResult run_collective(const CollectiveJob& requested) {
  const auto started = std::chrono::steady_clock::now();
  CollectiveJob cjob = requested;
  if (!cjob.protocol.empty()) {
    // Checked on the chip as requested, then put into effect after its overrides.
    const std::string protocol = collective_protocol_name(cjob.protocol);
    checked([&] {
      if (const std::string why = protocol_refusal(cjob.spec.algorithm, protocol, check_collective_setup(cjob));
          !why.empty()) {
        throw BadInput(why);
      }
      cjob.chip.overrides.push_back(protocol_override(cjob.spec.algorithm, protocol));
      return 0;
    });
    cjob.protocol = protocol;
  }
  // NCCL's channel tuning for this size, put into effect after the protocol
  // (a chip that names no protocol keeps every channel).
  checked([&] {
    const CollectiveSetup under = check_collective_setup(cjob);
    // Of the size that runs (padded_collective_spec).
    if (const std::uint64_t channels =
            nccl_active_channels(padded_collective_spec(cjob, under), under.topology, under.chip);
        channels > 0) {
      cjob.chip.overrides.push_back(fmt::format("fabric.active_channels={}", channels));
    }
    return 0;
  });
  const CollectiveSetup setup = check_collective_setup(cjob);
  // The program runs on the padded size (programs::padded_collective_bytes:
  // the padded bytes travel); the user's size V is cjob.spec.bytes.
  const programs::CollectiveSpec spec = padded_collective_spec(cjob, setup);
  const std::uint64_t user_bytes = cjob.spec.bytes;
  const bool padded = spec.bytes != user_bytes;
  const ici::Topology& topology = setup.topology;
  const programs::CollectivePlan plan = collective_plan(cjob, setup);
  const programs::CollectiveShapes shapes = checked([&] { return programs::collective_shapes(spec, topology); });
  const bool bf16 = spec.dtype == "bf16";
  const bool data = !cjob.no_data;
  // The user's bytes of chip `id`'s input and output (the rest of each is the
  // zero padding): the first V bytes, but all-gather's input and
  // reduce-scatter's output, which are the chip's valid chunk bytes.
  const auto valid_chunk = [&](std::uint32_t id) {
    return programs::collective_valid_chunk_bytes(user_bytes, spec.bytes, plan.group_size,
                                                  plan.rank(topology.coords(ChipId{id})));
  };
  const auto user_input_bytes = [&](std::uint32_t id) {
    if (!padded) return shapes.input_bytes;
    return plan.op == programs::CollectivePlan::Op::kAllGather ? valid_chunk(id) : user_bytes;
  };
  const auto user_output_bytes = [&](std::uint32_t id) {
    if (!padded) return shapes.output_bytes;
    return plan.op == programs::CollectivePlan::Op::kReduceScatter ? valid_chunk(id) : user_bytes;
  };
  // Chip `id`'s input: the user's data, then zeros up to the padded operand.
  const auto padded_input = [&](std::uint32_t id) {
    std::vector<std::uint8_t> in = collective_input(user_input_bytes(id), bf16, id);
    in.resize(shapes.input_bytes, 0);
    return in;
  };

  Job job;
  job.chip = cjob.chip;
  job.topology = cjob.topology;
  job.routing = cjob.routing;
  job.options.no_data = cjob.no_data;
  const programs::CollectivePrediction prediction = programs::predict_collective(spec, topology, setup.chip);
  job.options.max_cycles = cjob.max_cycles.value_or(predicted_cycle_limit(prediction.seconds, setup.chip.clock_hz));
  job.options.partition = cjob.partition;
  // A child per size keeps every size's run fresh. Under mpirun the first
  // size runs in the rank itself and later ones in a child that reaches the
  // other ranks through its parent (api/child_process.hpp), which costs the
  // child path ~10 % (v5e 16x16 256M --no-data on 2 ranks: 1.79 s vs 1.63 s).
  job.isolation = dist::world().size() > 1 ? Isolation::kAuto : Isolation::kChild;
  const std::string name = fmt::format("{}-{}.llo", spec.op, spec.bytes);
  const std::string program = checked([&] { return programs::generate_collective(spec, topology, setup.chip); });
  job.steps.push_back({assemble(program, name), name, {}});
  if (data) {
    // A chunk below one (8,128) tile is padded to the operand's device size
    // (the program reads only its first input_bytes).
    job.inputs["0"].origin = "the collective's input";
    job.inputs["0"].device_provider = [&padded_input](std::uint32_t id, const chip::OperandBinding&) {
      return padded_input(id);
    };
  }
  std::string check = "skipped (--no-data)";
  bool ok = true;
  std::uint64_t wrong_elements = 0;
  job.on_result = [&](Result& r) {
    if (!data || r.fault) return;
    std::vector<std::vector<std::uint8_t>> inputs;
    for (std::uint32_t id = 0; id < topology.chip_count(); ++id) inputs.push_back(padded_input(id));
    const auto expected = programs::collective_reference(spec, topology, inputs);
    std::uint64_t wrong_chips = 0;
    const auto& got = r.outputs.at("1").device;
    const std::size_t element = bf16 ? 2 : 4;
    for (std::uint32_t id = 0; id < topology.chip_count(); ++id) {
      std::uint64_t wrong = 0;
      // Only the user's output bytes: the padded tail is no one's output.
      const std::uint64_t checked_bytes = std::min<std::uint64_t>(expected[id].size(), user_output_bytes(id));
      for (std::size_t at = 0; at < checked_bytes; at += element) {
        wrong +=
            at + element > got[id].size() || std::memcmp(got[id].data() + at, expected[id].data() + at, element) != 0
                ? 1
                : 0;
      }
      wrong_elements += wrong;
      wrong_chips += wrong != 0 ? 1 : 0;
    }
    r.report["collective_check"] = wrong_chips == 0 ? "bit-exact" : fmt::format("MISMATCH on {} chips", wrong_chips);
    r.report["collective_wrong"] = wrong_elements;  // this may run in a child: the count travels in the report
    if (!cjob.keep_outputs) r.outputs.clear();
  };
  CollectiveResult out;
  out.program = program;
  out.run_overrides.assign(cjob.chip.overrides.begin() + static_cast<std::ptrdiff_t>(requested.chip.overrides.size()),
                           cjob.chip.overrides.end());
  out.run = run(job);
  if (out.run.report.contains("collective_check")) {
    check = out.run.report["collective_check"].get<std::string>();
    out.run.report.erase("collective_check");
    wrong_elements = out.run.report["collective_wrong"].get<std::uint64_t>();
    out.run.report.erase("collective_wrong");
    ok = check == "bit-exact";
  }
  out.prediction = prediction;
  out.group_size = plan.group_size;
  const double n = static_cast<double>(plan.group_size);
  const double bus_factor = spec.op == "all-reduce" ? 2.0 * (n - 1) / n : (n - 1) / n;
  const double links_in_use = static_cast<double>(plan.directions * plan.parts);
  const bool per_link = spec.op != "all-to-all";  // all-to-all blocks travel different distances
  // nccl-tests' S: the buffer (all-reduce), the whole output (all-gather), the
  // whole input (reduce-scatter), one rank's send buffer (all-to-all).
  // The user's V, not the padded one: the padding is overhead.
  out.nccl_bytes = spec.op == "all-to-all" ? plan.chunk_bytes : user_bytes;
  out.count = out.nccl_bytes / (bf16 ? 2 : 4);
  out.padded_bytes = spec.bytes;
  if (cjob.keep_outputs) {
    for (std::uint32_t id = 0; id < topology.chip_count(); ++id) out.output_bytes.push_back(user_output_bytes(id));
  }
  out.wrong_elements = data ? std::optional<std::uint64_t>(wrong_elements) : std::nullopt;
  out.algbw = out.run.seconds > 0 ? static_cast<double>(out.nccl_bytes) / out.run.seconds : 0;
  out.busbw = out.algbw * bus_factor;
  if (setup.topology.switched()) {
    // A switched chip's "link" is its whole egress (every NVLink; its NIC once the group spans nodes).
    const bool spans_nodes = setup.topology.fabric() == "fat-tree" &&
                             std::find(plan.axes.begin(), plan.axes.end(), std::size_t{1}) != plan.axes.end();
    // link% is of the whole egress, every channel in use.
    ChipConfig all_channels = setup.chip;
    all_channels.fabric.active_channels = 0;
    const double egress = spans_nodes ? all_channels.nic_payload_rate() : all_channels.switched_egress();
    out.linkbw = per_link ? out.busbw : 0.0;
    out.link_fraction = per_link ? out.linkbw / egress : 0.0;
  } else {
    out.linkbw = per_link ? out.busbw / links_in_use : 0.0;
    out.link_fraction = per_link ? out.linkbw / setup.chip.ici.link_bandwidth : 0.0;
  }
  out.check = check;
  out.ok = ok;
  out.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::string axes;
  for (std::size_t a : spec.axes) axes += fmt::format("{}{}", axes.empty() ? "" : ",", ici::axis_name(a));
  out.run.report["collective"] = {
      {"op", spec.op},
      {"algorithm", spec.algorithm},
      {"protocol", setup.chip.fabric.protocol},
      {"channels", setup.chip.fabric.active_channels},
      {"dtype", spec.dtype},
      {"bytes", user_bytes},
      {"padded_bytes", spec.bytes},
      {"size", out.nccl_bytes},
      {"count", out.count},
      {"type", bf16 ? "bfloat16" : "float"},
      {"redop", plan.reduces() ? "sum" : "none"},
      {"wrong", out.wrong_elements ? nlohmann::json(*out.wrong_elements) : nlohmann::json(nullptr)},
      {"axes", axes},
      {"group_size", out.group_size},
      {"algbw", out.algbw},
      {"busbw", out.busbw},
      {"linkbw", out.linkbw},
      {"link_fraction", out.link_fraction},
      {"predicted_seconds", out.prediction.seconds},
      {"predicted_bandwidth_seconds", out.prediction.bandwidth_seconds},
      {"predicted_latency_seconds", out.prediction.latency_seconds},
      // null where nothing is predicted (a group of one chip: no transfer)
      {"measured_over_predicted",
       out.prediction.seconds > 0 ? nlohmann::json(out.run.seconds / out.prediction.seconds) : nlohmann::json(nullptr)},
      {"formula", out.prediction.formula},
      {"check", out.check}};
  return out;
}

}  // namespace tpuemu::api

namespace tpuemu::api {

std::vector<CollectiveAlgorithmInfo> list_collective_algorithms(const CollectiveSetup& setup) {
  std::vector<CollectiveAlgorithmInfo> out;
  static constexpr std::array<std::pair<const char*, programs::CollectivePlan::Op>, 4> kOps{{
      {"all-gather", programs::CollectivePlan::Op::kAllGather},
      {"reduce-scatter", programs::CollectivePlan::Op::kReduceScatter},
      {"all-reduce", programs::CollectivePlan::Op::kAllReduce},
      {"all-to-all", programs::CollectivePlan::Op::kAllToAll},
  }};
  for (const std::string& name : programs::collective_algorithm_names()) {
    const programs::CollectiveAlgorithm& a = programs::collective_algorithm(name);
    CollectiveAlgorithmInfo info{name, std::string(a.summary()), {}};
    std::vector<std::size_t> axes;
    for (std::size_t x = 0; x < setup.topology.axis_count(); ++x) {
      if (setup.topology.length(x) > 1) axes.push_back(x);
    }
    const std::string chip_why = a.chip_refusal(setup.chip);
    for (const auto& [op, kind] : kOps) {
      const std::string why = a.refusal(kind, axes, setup.topology);
      info.refusals.emplace_back(op, why.empty() ? chip_why : why);
    }
    out.push_back(std::move(info));
  }
  return out;
}

CollectiveChoice choose_collective_algorithm(const CollectiveJob& job, const CollectiveSetup& setup,
                                             const std::vector<std::string>& algorithms,
                                             const std::vector<std::string>& protocols) {
  CollectiveChoice choice;
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::string> why_not;
  const std::vector<std::string> names = algorithms.empty() ? programs::collective_algorithm_names() : algorithms;
  const std::vector<std::string> under = protocols.empty() ? std::vector<std::string>{""} : protocols;
  for (const std::string& name : names) {
    programs::CollectiveSpec spec = job.spec;
    spec.algorithm = name;
    try {
      spec.bytes = programs::padded_collective_bytes(spec, setup.topology);  // each algorithm's own padding
      (void)programs::collective_shapes(spec, setup.topology);               // refusals and sizes it cannot split
      if (const std::string why = programs::collective_algorithm(name).chip_refusal(setup.chip); !why.empty()) {
        throw std::invalid_argument(why);
      }
      for (const std::string& protocol : under) {
        if (!programs::collective_algorithm(name).runs_protocol(protocol)) continue;
        ChipConfig chip = setup.chip;
        if (!protocols.empty()) chip.fabric.protocol = programs::collective_algorithm(name).protocol_params(protocol);
        chip.fabric.active_channels = nccl_active_channels(spec, setup.topology, chip);
        const double t = programs::predict_collective(spec, setup.topology, chip).seconds;
        choice.predictions.emplace_back(protocols.empty() ? name : name + "/" + protocol, t);
        if (t < best) {  // names in order: a tie keeps the first
          best = t;
          choice.algorithm = name;
          choice.protocol = protocol;
        }
      }
    } catch (const std::invalid_argument& e) {
      why_not.push_back(fmt::format("{}: {}", name, e.what()));
    }
  }
  if (choice.algorithm.empty()) {
    if (algorithms.size() == 1 && why_not.size() == 1) throw BadInput(why_not.front());
    throw BadInput(
        fmt::format("--algo auto: no algorithm can run size {} ({})", job.spec.bytes, fmt::join(why_not, "; ")));
  }
  return choice;
}

std::vector<std::string> collective_protocols(const std::string& proto, const CollectiveSetup& setup) {
  if (proto == "auto") {
    if (setup.topology.switched()) return {"LL", "LL128", "Simple"};
    return {};
  }
  if (!setup.topology.switched()) {
    throw BadInput(fmt::format(
        "--proto {}: NCCL protocols run on switched fabrics; the torus {} of {} has ICI links (their overhead is "
        "ici.payload_efficiency)",
        proto, setup.topology.shape(), setup.chip.name));
  }
  return {collective_protocol_name(proto)};
}

std::vector<PlannedCollective> plan_collective_runs(const CollectiveJob& job, const CollectiveSetup& setup,
                                                    const std::string& algorithms, const std::string& proto,
                                                    const std::vector<std::uint64_t>& sizes) {
  const std::vector<std::string> protocols = collective_protocols(proto, setup);
  std::vector<std::string> names;
  for (std::size_t start = 0;;) {
    const std::size_t comma = algorithms.find(',', start);
    names.push_back(algorithms.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<PlannedCollective> runs;
  for (const std::string& algorithm : names) {
    for (const std::uint64_t v : sizes) {
      CollectiveJob sized = job;
      sized.spec.bytes = v;
      sized.spec.algorithm = algorithm;
      PlannedCollective p{algorithm, "", v, {}};
      if (algorithm == "auto" || protocols.size() > 1) {
        const CollectiveChoice choice = choose_collective_algorithm(
            sized, setup, algorithm == "auto" ? std::vector<std::string>{} : std::vector<std::string>{algorithm},
            protocols);
        p.algorithm = choice.algorithm;
        p.protocol = choice.protocol;
        p.predictions = choice.predictions;
      } else if (protocols.size() == 1) {
        p.protocol = protocols.front();
        if (const std::string why = checked([&] { return protocol_refusal(algorithm, p.protocol, setup); });
            !why.empty()) {
          throw BadInput(why);
        }
      }
      sized.spec.algorithm = p.algorithm;
      CollectiveSetup under = setup;
      if (!p.protocol.empty()) {
        under.chip.fabric.protocol = programs::collective_algorithm(p.algorithm).protocol_params(p.protocol);
      }
      check_collective_size(sized, under);
      runs.push_back(std::move(p));
    }
  }
  return runs;
}

CollectiveJob planned_collective_job(const CollectiveJob& job, const PlannedCollective& planned) {
  CollectiveJob out = job;
  out.spec.algorithm = planned.algorithm;
  out.spec.bytes = planned.bytes;
  out.protocol = planned.protocol;
  return out;
}

std::string collective_protocol_name(const std::string& text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "ll") return "LL";
  if (lower == "ll128") return "LL128";
  if (lower == "simple") return "Simple";
  throw BadInput(fmt::format("--proto '{}' is not an NCCL protocol: LL, LL128, Simple or auto", text));
}

}  // namespace tpuemu::api
