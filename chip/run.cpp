#include "chip/run.hpp"

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <set>
#include <stdexcept>

#include "chip/chip_module.hpp"
#include "chip/exec_program.hpp"
#include "chip/host_io.hpp"
#include "chip/host_memory.hpp"
#include "chip/simulate.hpp"
#include "common/huge_pages.hpp"
#include "isa/checker.hpp"

namespace tpuemu::chip {
namespace {

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) {
  return (v + a - 1) / a * a;
}

}  // namespace

void check_fits(const isa::Program& program, const ChipConfig& chip) {
  const isa::CheckResult check = isa::check_program(program, chip);
  if (check.violations.empty()) return;
  std::string message = isa::format_diagnostic(check.violations.front());
  if (check.violations.size() > 1)
    message += fmt::format("\n({} more; see `tpuemu check`)", check.violations.size() - 1);
  throw LoadError(message);
}

namespace {

void collect_units(ChipModule& chip, RunResult& result) {
  for (const auto& core : chip.cores) {
    result.cycles = std::max(result.cycles, core->cycle());
    result.cores.push_back(core->stats());
    for (std::size_t m = 0; m < core->mxus.size(); ++m) {
      result.units.push_back(
          {fmt::format("core{}.mxu{}", core->core_index, m), static_cast<double>(core->mxus[m].busy_cycles)});
    }
    result.units.push_back({fmt::format("core{}.vmem_port", core->core_index), core->vmem_port.busy_cycles()});
  }
  result.units.push_back({"hbm", chip.shared.hbm_port.busy_cycles()});
  result.hbm_bytes = chip.shared.hbm_port.bytes();
}

// run_chain with the host arrays of the input buffers given by `inputs`
// (request.inputs is not read), so callers holding them need not copy them.
// `loaded(name)`, if set, is called once the input buffer `name` is in its
// device layout: the run reads its host array no more.
ChainResult run_chain_on(const ChainRequest& request, const std::map<std::string, NpyView>& inputs,
                         const std::function<void(const std::string&)>& loaded = {});
// run_program, calling `loaded(index)` once input `index` is in its device layout.
RunResult run_program_on(const RunRequest& request, const std::function<void(std::uint32_t)>& loaded);

}  // namespace

ChainResult run_chain(const ChainRequest& request) {
  std::map<std::string, NpyView> inputs;
  for (const auto& [name, array] : request.inputs) inputs[name] = NpyView(array);
  return run_chain_on(request, inputs);
}

namespace {

ChainResult run_chain_on(const ChainRequest& request, const std::map<std::string, NpyView>& inputs,
                         const std::function<void(const std::string&)>& loaded) {
  if (request.steps.empty()) throw std::invalid_argument("nothing to run");
  std::vector<ExecProgram> execs;
  execs.reserve(request.steps.size());
  for (const auto& step : request.steps) {
    check_fits(*step.program, request.chip);
    execs.push_back(decode_program(*step.program, request.chip));
  }

  // 1. Buffers: which binding lays each one out, in which spaces it is needed,
  //    and whether some kernel produces it (otherwise it needs host data).
  struct Buffer {
    OperandBinding binding;  // layout (dtype, shape) as the first kernel declares it
    std::set<std::string> spaces;
    bool produced = false;
    bool scalar = false;
    std::map<std::string, std::uint64_t> address;  // space -> byte address
  };
  std::map<std::string, Buffer> buffers;
  for (std::size_t s = 0; s < execs.size(); ++s) {
    for (const auto& b : execs[s].bindings) {
      const auto it = request.steps[s].operand_buffers.find(b.index);
      if (it == request.steps[s].operand_buffers.end()) {
        throw std::invalid_argument(fmt::format("kernel {}: operand {} ({}[{}], {}) is not bound to any buffer", s,
                                                b.index, b.dtype, fmt::join(b.shape, ","),
                                                b.is_output ? "output" : "input"));
      }
      Buffer& buf = buffers[it->second];
      if (buf.spaces.empty() && !buf.scalar) buf.binding = b;
      if (b.space == "<no memory space>") {
        buf.scalar = true;
        continue;
      }
      // Timing-only runs move no data: an input buffer without host data is fine.
      if (!b.is_output && !buf.produced && inputs.count(it->second) == 0U && request.options.compute_numerics) {
        throw std::invalid_argument(fmt::format(
            "kernel {} reads buffer '{}' ({}), which no earlier kernel produces and the host does not provide", s,
            it->second, b.space));
      }
      if (!b.is_output && buf.produced && buf.spaces.count(b.space) == 0U) {
        throw std::invalid_argument(fmt::format(
            "kernel {} reads buffer '{}' in {}, but it was produced in another space", s, it->second, b.space));
      }
      if (b.is_output) buf.produced = true;
      buf.spaces.insert(b.space);
    }
  }

  // 2. Places: HBM from address 0; VMEM above every kernel's VMEM allocations.
  std::uint64_t hbm_next = 0;
  std::uint64_t vmem_next = 0;
  for (const auto& step : request.steps) {
    for (const auto& a : step.program->allocations) {
      if (a.space == MemorySpace::kVmem) vmem_next = std::max(vmem_next, a.offset.value_or(0) + a.size);
    }
  }
  vmem_next = align_up(vmem_next, kOperandAlign);
  // Refuse what cannot fit the host before any device copy is made.
  if (request.options.compute_numerics) {
    std::uint64_t data_bytes = core_data_bytes(execs, request.chip);
    for (const auto& [name, buf] : buffers) {
      if (buf.scalar) continue;
      data_bytes += device_bytes(buf.binding) * buf.spaces.size() * (buf.produced ? 2 : 1);
    }
    check_host_memory(estimate_pod_host_memory(1, request.chip.tensorcores_per_chip, data_bytes),
                      fmt::format("the run on {}", request.chip.name));
  }
  std::map<std::string, std::vector<std::uint8_t>> device_data;
  for (auto& [name, buf] : buffers) {
    if (buf.scalar) continue;
    const bool transposed = request.transposed.count(name) != 0U && request.transposed.at(name);
    const OperandBinding layout = transposed ? transposed_binding(buf.binding) : buf.binding;
    const std::uint64_t size = device_bytes(layout);
    for (const auto& space : buf.spaces) {
      std::uint64_t& next = space == "hbm" ? hbm_next : vmem_next;
      buf.address[space] = next;
      next = align_up(next + size, kOperandAlign);
      const std::uint64_t limit = space == "hbm" ? request.chip.hbm.size_bytes : request.chip.vmem.size_bytes;
      if (next > limit)
        throw std::invalid_argument(fmt::format("buffer '{}' ({} bytes) does not fit in {}", name, size, space));
    }
    if (const auto in = inputs.find(name); in != inputs.end()) {
      const std::string origin = request.input_origins.count(name) != 0U ? request.input_origins.at(name) : name;
      const bool threads = request.options.compute_numerics;
      device_data[name] = transposed ? to_device(layout, transpose_2d(in->second), origin, threads)
                                     : to_device(layout, in->second, origin, threads);  // no copy of the array
      if (loaded) loaded(name);
    }
  }

  // 3. Operand registers per step: addresses in 512-byte units, scalars by value.
  std::vector<std::map<std::uint32_t, std::uint32_t>> operand_values(execs.size());
  for (std::size_t s = 0; s < execs.size(); ++s) {
    for (const auto& b : execs[s].bindings) {
      const std::string& name = request.steps[s].operand_buffers.at(b.index);
      if (b.space == "<no memory space>") {
        const auto it = request.scalars.find(name);
        if (it == request.scalars.end()) {
          throw std::invalid_argument(
              fmt::format("kernel {}: scalar operand {} ('{}') has no value", s, b.index, name));
        }
        operand_values[s][b.index] = it->second;
      } else {
        operand_values[s][b.index] = static_cast<std::uint32_t>(buffers.at(name).address.at(b.space) / 512);
      }
    }
  }

  // 4. Elaborate, write the inputs, simulate.
  std::vector<const ExecProgram*> programs;
  for (const auto& e : execs) programs.push_back(&e);
  // Waveforms need exact change times: a one-cycle quantum.
  ChipModule chip("chip0", request.chip, programs, operand_values, request.options,
                  request.vcd.empty() ? request.quantum_cycles : 1);
  if (request.tracer != nullptr) chip.attach_tracer(*request.tracer, fmt::format("chip 0 {}", request.chip.name));
  if (request.mxu_backends) chip.attach_mxu_backends(request.mxu_backends);
  // One chip computing with data: its VMEM in huge pages (a program's
  // buffers there are dense; memory/dense_memory.hpp).
  if (request.options.compute_numerics) {
    for (auto& core : chip.cores) core->vmem.prefer_huge_pages();
  }
  if (request.profile != nullptr) {
    std::vector<ChipModule::NamedRange> hbm;
    for (const auto& [name, buf] : buffers) {
      if (buf.scalar || buf.address.count("hbm") == 0U) continue;
      hbm.push_back({name, buf.address.at("hbm"), device_bytes(buf.binding)});
    }
    chip.attach_profile(*request.profile, hbm);
    // The host's inputs are live from the start.
    for (const auto& [name, bytes] : device_data) {
      const auto& address = buffers.at(name).address;
      if (address.count("hbm") != 0U)
        request.profile->write(0, 0, MemoryProfile::Space::kHbm, address.at("hbm"), bytes.size(), 0);
    }
  }
  std::unique_ptr<Waveform> waves;
  if (!request.vcd.empty()) {
    waves = std::make_unique<Waveform>(request.vcd, request.chip.clock_hz, request.vcd_max_changes);
    chip.attach_waveform(*waves);
  }
  // The inputs move into HBM (adopted, not copied); with data, every other
  // HBM buffer starts as a zeroed block too, which the run writes in place
  // and the collection below takes back without a copy.
  for (auto& [name, bytes] : device_data) {
    const auto& address = buffers.at(name).address;
    for (const auto& [space, at] : address) {
      if (space != "hbm") {
        for (auto& core : chip.cores) std::memcpy(core->vmem.data(at), bytes.data(), bytes.size());
      }
    }
    if (const auto hbm = address.find("hbm"); hbm != address.end())
      chip.shared.hbm.adopt(hbm->second, std::move(bytes));
  }
  if (request.options.compute_numerics) {
    for (const auto& [name, buf] : buffers) {
      const auto hbm = buf.address.find("hbm");
      if (buf.scalar || hbm == buf.address.end() || device_data.count(name) != 0U) continue;
      const bool transposed = request.transposed.count(name) != 0U && request.transposed.at(name);
      const OperandBinding layout = transposed ? transposed_binding(buf.binding) : buf.binding;
      chip.shared.hbm.adopt(hbm->second, zeroed_bytes(device_bytes(layout)));
    }
  }
  device_data.clear();
  if (request.elaborated) {
    simulate(sc_core::SC_ZERO_TIME);
    request.elaborated();
  }
  simulate();

  // 5. Collect.
  ChainResult result;
  result.run.fault = chip.fault;
  result.run.waveform_overflowed = waves != nullptr && waves->overflowed();
  if (waves != nullptr) waves->write();  // also what a run stopped by an overflow recorded
  collect_units(chip, result.run);
  result.run.seconds = static_cast<double>(result.run.cycles) / request.chip.clock_hz;
  result.run.bindings = execs.back().bindings;
  CoreStats previous;
  std::uint64_t start = 0;
  for (std::size_t s = 0; s < chip.step_ends.front().size(); ++s) {
    const auto& end = chip.step_ends.front()[s];
    StepResult step;
    step.kernel = request.steps[s].program->name;
    step.start_cycle = start;
    step.end_cycle = end.cycle;
    step.stats = end.stats;
    step.stats.bundles -= previous.bundles;
    step.stats.ops -= previous.ops;
    for (std::size_t i = 0; i < kStallCauseCount; ++i) step.stats.stall_cycles[i] -= previous.stall_cycles[i];
    step.stats.mxu_flops -= previous.mxu_flops;
    step.stats.vpu_flops -= previous.vpu_flops;
    step.stats.hbm_bytes -= previous.hbm_bytes;
    previous = end.stats;
    start = end.cycle;
    result.steps.push_back(step);
  }
  // A timing-only run's buffers hold nothing worth reading: collecting them
  // would materialise every never-written HBM page as zeros.
  for (const auto& [name, buf] : buffers) {
    if (!request.options.compute_numerics) break;
    if (buf.scalar || buf.address.empty()) continue;
    const bool transposed = request.transposed.count(name) != 0U && request.transposed.at(name);
    const OperandBinding layout = transposed ? transposed_binding(buf.binding) : buf.binding;
    const auto& [space, address] = *buf.address.begin();
    std::vector<std::uint8_t> bytes;
    if (space == "hbm") {
      bytes = chip.shared.hbm.take(address, device_bytes(layout));
    } else {
      bytes.resize(device_bytes(layout));
      std::memcpy(bytes.data(), chip.cores.front()->vmem.data(address), bytes.size());
    }
    result.buffers[name] = {layout, std::move(bytes)};
  }
  return result;
}

}  // namespace

TlpResult run_tlp(const TlpRequest& request) {
  check_fits(*request.tlp, request.chip);
  for (const auto& [name, program] : request.kernels) check_fits(*program, request.chip);
  const ExecProgram tlp = decode_program(*request.tlp, request.chip);
  // The kernels' scoped allocations live above the TLP's own.
  const auto base = allocation_ends(*request.tlp);
  std::map<std::string, ExecProgram> kernels;
  for (const auto& [name, program] : request.kernels)
    kernels.emplace(name, decode_program(*program, request.chip, base));

  // 1. HBM: parameters, then the output.
  std::uint64_t next = 0;
  std::vector<std::uint32_t> parameter_values;
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> writes;
  for (std::size_t k = 0; k < request.parameters.size(); ++k) {
    const auto& [binding, data] = request.parameters[k];
    writes.emplace_back(next, to_device(binding, data, fmt::format("parameter {}", k)));
    parameter_values.push_back(static_cast<std::uint32_t>(next / 512));
    next = align_up(next + device_bytes(binding), kOperandAlign);
  }
  const std::uint64_t output_address = next;

  // 2. SMEM words of the TLP, by allocation tag.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> smem_words;
  for (const auto& a : request.tlp->allocations) {
    if (a.space != MemorySpace::kSmem || !a.offset) continue;
    if (a.tag.find("program descriptor state") != std::string::npos) smem_words.emplace_back(*a.offset, 1);
    if (a.tag.find("output ptr") != std::string::npos) {
      smem_words.emplace_back(*a.offset, static_cast<std::uint32_t>(output_address / 512));
    }
  }

  // 3. Elaborate, initialise, simulate.
  ChipModule chip("chip0", request.chip, {&tlp}, {{}}, request.options, request.quantum_cycles);
  if (request.tracer != nullptr) chip.attach_tracer(*request.tracer, fmt::format("chip 0 {}", request.chip.name));
  for (const auto& [address, bytes] : writes) chip.shared.hbm.write(address, bytes);
  for (auto& core : chip.cores) {
    core->parameter_values = parameter_values;
    for (const auto& [name, exec] : kernels) core->callees[name] = &exec;
    for (const auto& [offset, value] : smem_words) {
      if (!core->smem.in_range(offset, 4)) throw LoadError(fmt::format("SMEM word 0x{:x} is outside SMEM", offset));
      std::memcpy(core->smem.data(offset), &value, 4);
    }
  }
  simulate();

  TlpResult result;
  result.run.fault = chip.fault;
  collect_units(chip, result.run);
  result.run.seconds = static_cast<double>(result.run.cycles) / request.chip.clock_hz;
  result.output_bytes.resize(device_bytes(request.output));
  chip.shared.hbm.read(output_address, result.output_bytes);
  return result;
}

RunResult run_program(const RunRequest& request) {
  return run_program_on(request, {});
}

RunResult run_program_freeing_inputs(RunRequest& request) {
  return run_program_on(request, [&request](std::uint32_t index) {
    if (const auto file = request.input_files.find(index); file != request.input_files.end()) {
      file->second = NpyFile(NpyArray{});  // unmapped or freed
    } else {
      std::vector<std::uint8_t>().swap(request.inputs.at(index).data);
    }
  });
}

namespace {

RunResult run_program_on(const RunRequest& request, const std::function<void(std::uint32_t)>& loaded) {
  ChainRequest chain;
  chain.chip = request.chip;
  chain.options = request.options;
  chain.quantum_cycles = request.quantum_cycles;
  chain.tracer = request.tracer;
  chain.vcd = request.vcd;
  chain.vcd_max_changes = request.vcd_max_changes;
  chain.profile = request.profile;
  chain.mxu_backends = request.mxu_backends;
  chain.elaborated = request.elaborated;
  ChainStep step;
  step.program = request.program;
  std::map<std::string, NpyView> inputs;  // request's arrays and files, not copied
  std::map<std::string, std::uint32_t> input_index;
  check_fits(*request.program, request.chip);  // the program's own faults before those of its inputs
  const ExecProgram exec = decode_program(*request.program, request.chip);
  for (const auto& [index, file] : request.input_files) {
    if (request.inputs.count(index) != 0U)
      throw std::invalid_argument(fmt::format("operand {}: given both as an array and as a file", index));
  }
  std::vector<std::uint32_t> given;
  for (const auto& [index, array] : request.inputs) given.push_back(index);
  for (const auto& [index, file] : request.input_files) given.push_back(index);
  for (const std::uint32_t index : given) {
    bool bound = false;
    for (const auto& b : exec.bindings) bound = bound || b.index == index;
    if (!bound) throw std::invalid_argument(fmt::format("--in {}: the program has no operand {}", index, index));
  }
  for (const auto& b : exec.bindings) {
    const std::string name = fmt::format("operand {}", b.index);
    step.operand_buffers[b.index] = name;
    const auto array = request.inputs.find(b.index);
    const auto file = request.input_files.find(b.index);
    if (array == request.inputs.end() && file == request.input_files.end()) {
      // Timing-only runs need no array data; a by-value operand steers the
      // program (loop counts), so it needs its value either way.
      if (!b.is_output && (request.options.compute_numerics || b.space == "<no memory space>")) {
        throw std::invalid_argument(
            fmt::format("operand {} ({}[{}], input) has no data: give it an input (tpuemu run: --in {}=FILE.npy; "
                        "the API: inputs[{}])",
                        b.index, b.dtype, fmt::join(b.shape, ","), b.index, b.index));
      }
      continue;
    }
    if (b.space == "<no memory space>") {
      const NpyView host = array != request.inputs.end() ? NpyView(array->second) : file->second.view();
      const auto bytes =
          to_device(b, host, request.input_origins.count(b.index) != 0U ? request.input_origins.at(b.index) : name);
      std::uint32_t v = 0;
      std::memcpy(&v, bytes.data(), std::min<std::size_t>(4, bytes.size()));
      chain.scalars[name] = v;
    } else {
      inputs[name] = array != request.inputs.end() ? NpyView(array->second) : file->second.view();
      input_index[name] = b.index;
      if (request.input_origins.count(b.index) != 0U) chain.input_origins[name] = request.input_origins.at(b.index);
    }
  }
  chain.steps.push_back(step);
  std::function<void(const std::string&)> loaded_buffer;
  if (loaded) {
    loaded_buffer = [&](const std::string& name) { loaded(input_index.at(name)); };
  }
  ChainResult chain_result = run_chain_on(chain, inputs, loaded_buffer);
  RunResult result = std::move(chain_result.run);
  result.bindings = exec.bindings;
  for (const auto& b : exec.bindings) {
    if (!b.is_output) continue;
    const auto it = chain_result.buffers.find(fmt::format("operand {}", b.index));
    if (it != chain_result.buffers.end()) result.output_bytes[b.index] = std::move(it->second.second);
  }
  return result;
}

}  // namespace
}  // namespace tpuemu::chip
