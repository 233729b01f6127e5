#include "tools/run_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chip/fault.hpp"
#include "chip/host_io.hpp"
#include "chip/run.hpp"
#include "common/npy.hpp"
#include "isa/assembler.hpp"
#include "isa/image.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"
#include "tools/program_loader.hpp"
#include "tools/roofline.hpp"

namespace tpuemu::cli {
namespace {

// "IDX=path" -> (IDX, path).
std::optional<std::pair<std::uint32_t, std::string>> parse_binding(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return std::nullopt;
  std::uint32_t index = 0;
  for (char c : text.substr(0, eq)) {
    if (c < '0' || c > '9' || index > 100000) return std::nullopt;
    index = index * 10 + static_cast<std::uint32_t>(c - '0');
  }
  return std::make_pair(index, text.substr(eq + 1));
}

std::string percent(double part, double whole) { return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-"; }

struct Summary {
  std::string program;
  const ChipConfig* chip;
  chip::RunResult result;
  Roofline roofline;
};

void print_summary(const Summary& s) {
  const auto& r = s.result;
  const double cycles = static_cast<double>(r.cycles);
  std::uint64_t bundles = 0;
  std::uint64_t ops = 0;
  std::array<std::uint64_t, chip::kStallCauseCount> stalls{};
  for (const auto& c : r.cores) {
    bundles += c.bundles;
    ops += c.ops;
    for (std::size_t i = 0; i < stalls.size(); ++i) stalls[i] += c.stall_cycles[i];
  }
  fmt::print("program   {} on {} ({} TensorCore{})\n", s.program, s.chip->name, s.chip->tensorcores_per_chip,
             s.chip->tensorcores_per_chip == 1 ? "" : "s");
  fmt::print("cycles    {}  ({} at {})\n", r.cycles, format_quantity(r.seconds, Quantity::kTime),
             format_quantity(s.chip->clock_hz, Quantity::kFrequency));
  fmt::print("issued    {} bundles, {} ops\n", bundles, ops);
  std::string units;
  for (const auto& u : r.units) units += fmt::format("{}{} {}", units.empty() ? "" : ", ", u.name, percent(u.busy_cycles, cycles));
  fmt::print("busy      {}\n", units);
  std::string stall_text;
  for (std::size_t i = 0; i < stalls.size(); ++i) {
    stall_text += fmt::format("{}{} {} ({})", i ? ", " : "", to_string(static_cast<chip::StallCause>(i)), stalls[i],
                              percent(static_cast<double>(stalls[i]), cycles));
  }
  fmt::print("stalls    {}\n", stall_text);
  const Roofline& f = s.roofline;
  fmt::print("roofline  MXU {:.4g} FLOP -> {}; VPU {:.4g} FLOP -> {}; HBM {:.4g} B -> {}\n", f.mxu_flops,
             format_quantity(f.mxu_seconds, Quantity::kTime), f.vpu_flops, format_quantity(f.vpu_seconds, Quantity::kTime),
             f.hbm_bytes, format_quantity(f.hbm_seconds, Quantity::kTime));
  fmt::print("          predicted {} ({}-bound), measured {}: measured/predicted = {:.3f}\n",
             format_quantity(f.predicted_seconds, Quantity::kTime), f.bound, format_quantity(f.measured_seconds, Quantity::kTime),
             f.measured_over_predicted());
  if (f.mxu_flops > 0) {
    fmt::print("          MXU utilisation {:.1f}% of peak ({:.4g} FLOP/s achieved)\n",
               100.0 * f.mxu_seconds / f.measured_seconds, f.mxu_flops / f.measured_seconds);
  }
  if (f.hbm_bytes > 0) {
    fmt::print("          HBM {:.4g} B/s achieved ({:.1f}% of {})\n", f.hbm_bytes / f.measured_seconds,
               100.0 * f.hbm_seconds / f.measured_seconds, format_quantity(s.chip->hbm.bandwidth, Quantity::kBandwidth));
  }
}

nlohmann::json report_json(const Summary& s) {
  using nlohmann::json;
  const auto& r = s.result;
  json j;
  j["program"] = s.program;
  j["chip"] = json::parse(chip_config_json(*s.chip));
  j["cycles"] = r.cycles;
  j["seconds"] = r.seconds;
  json stalls = json::object();
  json cores = json::array();
  std::array<std::uint64_t, chip::kStallCauseCount> total{};
  for (const auto& c : r.cores) {
    json core;
    core["bundles"] = c.bundles;
    core["ops"] = c.ops;
    core["dmas"] = c.dmas;
    core["dma_bytes"] = c.dma_bytes;
    json cs = json::object();
    for (std::size_t i = 0; i < total.size(); ++i) {
      cs[std::string(to_string(static_cast<chip::StallCause>(i)))] = c.stall_cycles[i];
      total[i] += c.stall_cycles[i];
    }
    core["stalls"] = cs;
    json slots = json::object();
    for (std::size_t i = 0; i < kSlotClassCount; ++i) slots[std::string(to_string(static_cast<SlotClass>(i)))] = c.slot_ops[i];
    core["ops_per_slot"] = slots;
    cores.push_back(core);
  }
  for (std::size_t i = 0; i < total.size(); ++i) stalls[std::string(to_string(static_cast<chip::StallCause>(i)))] = total[i];
  j["stalls"] = stalls;
  j["cores"] = cores;
  json units = json::object();
  for (const auto& u : r.units) {
    units[u.name] = {{"busy_cycles", u.busy_cycles},
                     {"utilisation", r.cycles > 0 ? u.busy_cycles / static_cast<double>(r.cycles) : 0.0}};
  }
  j["units"] = units;
  const Roofline& f = s.roofline;
  j["roofline"] = {{"flops", f.mxu_flops + f.vpu_flops},
                   {"mxu_flops", f.mxu_flops},
                   {"vpu_flops", f.vpu_flops},
                   {"hbm_bytes", f.hbm_bytes},
                   {"mxu_seconds", f.mxu_seconds},
                   {"vpu_seconds", f.vpu_seconds},
                   {"hbm_seconds", f.hbm_seconds},
                   {"predicted_seconds", f.predicted_seconds},
                   {"bound", f.bound},
                   {"measured_over_predicted", f.measured_over_predicted()}};
  if (r.fault) j["fault"] = *r.fault;
  return j;
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  options.add_options()
      ("program", po::value<std::string>(), "LLO program (.llo, a dump's *-final_bundles.txt) or image (.tpub)")
      ("in", po::value<std::vector<std::string>>()->composing(), "IDX=FILE.npy: input operand IDX (repeatable)")
      ("out", po::value<std::vector<std::string>>()->composing(),
       "IDX=FILE.npy: write output operand IDX (bf16/f8 as float32; as raw bits if FILE ends in .bits.npy)")
      ("report", po::value<std::string>(), "write the run report as JSON")
      ("strict", "treat stalls on register hazards as errors (checks a compiler's schedule)")
      ("no-data", "timing only: skip MXU arithmetic and bulk data movement (same cycle counts)")
      ("quantum", po::value<std::uint64_t>()->default_value(1000), "cycles a core may run ahead of SystemC time");
  po::positional_options_description positional;
  positional.add("program", 1);
  bool help = false;
  const auto vm = parse_options("run", "PROGRAM [--chip v5e] [--in IDX=FILE.npy]... [--out IDX=FILE.npy]... [--report R.json]",
                                args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  if (vm->count("program") == 0U) {
    fmt::print(stderr, "tpuemu run: no program given (usage: tpuemu run PROGRAM ...)\n");
    return kExitBadInput;
  }
  const std::string program_path = (*vm)["program"].as<std::string>();

  // 1. Everything that can be wrong with the input is checked before the run.
  chip::RunRequest request;
  isa::Program program;
  std::vector<std::pair<std::uint32_t, std::string>> outputs;
  try {
    request.chip = load_chip(chip_request(*vm));
    program = load_program(program_path);
    request.program = &program;
    request.options.strict = vm->count("strict") != 0U;
    request.options.compute_numerics = vm->count("no-data") == 0U;
    request.quantum_cycles = std::max<std::uint64_t>(1, (*vm)["quantum"].as<std::uint64_t>());
    if (vm->count("in") != 0U) {
      for (const auto& text : (*vm)["in"].as<std::vector<std::string>>()) {
        const auto b = parse_binding(text);
        if (!b) throw std::invalid_argument(fmt::format("--in {}: expected IDX=FILE.npy", text));
        request.inputs[b->first] = read_npy(b->second);
        request.input_origins[b->first] = b->second;
      }
    }
    if (vm->count("out") != 0U) {
      for (const auto& text : (*vm)["out"].as<std::vector<std::string>>()) {
        const auto b = parse_binding(text);
        if (!b) throw std::invalid_argument(fmt::format("--out {}: expected IDX=FILE.npy", text));
        outputs.push_back(*b);
      }
    }
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  } catch (const isa::AsmError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitBadInput;
  } catch (const isa::ImageError& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  } catch (const NpyError& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  }

  // 2. Run.
  Summary summary;
  summary.program = program_path;
  summary.chip = &request.chip;
  try {
    summary.result = chip::run_program(request);
  } catch (const chip::LoadError& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "tpuemu run: {}\n", e.what());
    return kExitBadInput;
  }
  for (const auto& [index, path] : outputs) {
    bool found = false;
    for (const auto& b : summary.result.bindings) found = found || (b.index == index && b.is_output);
    if (!found) {
      fmt::print(stderr, "tpuemu run: --out {}: operand {} is not an output of the program\n", index, index);
      return kExitBadInput;
    }
  }
  std::uint64_t mxu_flops = 0;
  std::uint64_t vpu_flops = 0;
  for (const auto& c : summary.result.cores) {
    mxu_flops += c.mxu_flops;
    vpu_flops += c.vpu_flops;
  }
  summary.roofline = compute_roofline(request.chip, static_cast<double>(mxu_flops), static_cast<double>(vpu_flops),
                                      static_cast<double>(summary.result.hbm_bytes), summary.result.seconds);
  if (summary.result.fault) {
    fmt::print(stderr, "tpuemu run: program fault: {}\n", *summary.result.fault);
  } else {
    print_summary(summary);
  }
  std::fflush(stdout);

  // 3. Outputs and report.
  if (!summary.result.fault) {
    for (const auto& [index, path] : outputs) {
      for (const auto& b : summary.result.bindings) {
        if (b.index != index) continue;
        try {
          write_npy(path, chip::from_device(b, summary.result.output_bytes.at(index), path.ends_with(".bits.npy")));
        } catch (const NpyError& e) {
          fmt::print(stderr, "tpuemu run: {}\n", e.what());
          return kExitBadInput;
        }
      }
    }
  }
  if (vm->count("report") != 0U) {
    const std::string path = (*vm)["report"].as<std::string>();
    std::ofstream out(path);
    out << report_json(summary).dump(2) << "\n";
    if (!out) {
      fmt::print(stderr, "tpuemu run: cannot write report '{}'\n", path);
      return kExitBadInput;
    }
  }
  return summary.result.fault ? kExitProgramFault : kExitOk;
}

}  // namespace tpuemu::cli
