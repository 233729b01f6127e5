#include "chip/run.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "chip/chip_module.hpp"
#include "chip/exec_program.hpp"
#include "chip/host_io.hpp"

namespace tpuemu::chip {
namespace {

constexpr std::uint64_t kHbmAlign = 4096;

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

RunResult run_program(const RunRequest& request) {
  const ExecProgram exec = decode_program(*request.program, request.chip);
  RunResult result;
  result.bindings = exec.bindings;

  // 1. Check the inputs against the bindings before anything runs.
  for (const auto& [index, array] : request.inputs) {
    bool bound = false;
    for (const auto& b : exec.bindings) bound = bound || b.index == index;
    if (!bound) throw std::invalid_argument(fmt::format("--in {}: the program has no operand {}", index, index));
  }
  std::map<std::uint32_t, std::vector<std::uint8_t>> device_inputs;
  for (const auto& b : exec.bindings) {
    const auto it = request.inputs.find(b.index);
    if (it == request.inputs.end()) {
      if (!b.is_output) {
        throw std::invalid_argument(fmt::format("operand {} ({}[{}], input) has no data: pass --in {}=FILE.npy", b.index,
                                                b.dtype, fmt::join(b.shape, ","), b.index));
      }
      continue;
    }
    const auto origin = request.input_origins.count(b.index) != 0U ? request.input_origins.at(b.index)
                                                                   : fmt::format("operand {}", b.index);
    device_inputs[b.index] = to_device(b, it->second, origin);
  }

  // 2. Elaborate the chip and place operands: HBM operands from address 0 up,
  //    VMEM operands above the program's VMEM allocations.
  ChipModule chip("chip0", request.chip, exec, request.options, request.quantum_cycles);
  std::uint64_t hbm_next = 0;
  std::uint64_t vmem_next = 0;
  for (const auto& a : request.program->allocations) {
    if (a.space == MemorySpace::kVmem) vmem_next = std::max(vmem_next, a.offset.value_or(0) + a.size);
  }
  vmem_next = align_up(vmem_next, kHbmAlign);
  std::map<std::uint32_t, std::pair<bool, std::uint64_t>> placement;  // index -> (in hbm, byte address)
  for (const auto& b : exec.bindings) {
    if (b.space == "<no memory space>") {
      const auto& bytes = device_inputs.at(b.index);
      std::uint32_t v = 0;
      std::memcpy(&v, bytes.data(), std::min<std::size_t>(4, bytes.size()));
      for (auto& core : chip.cores) core->operand_values[b.index] = v;
      continue;
    }
    const std::uint64_t size = device_bytes(b);
    const bool in_hbm = b.space == "hbm";
    std::uint64_t& next = in_hbm ? hbm_next : vmem_next;
    const std::uint64_t address = next;
    next = align_up(next + size, kHbmAlign);
    if (in_hbm ? !chip.shared.hbm.in_range(address, size) : address + size > request.chip.vmem.size_bytes) {
      throw std::invalid_argument(fmt::format("operand {} ({} bytes) does not fit in {}", b.index, size, b.space));
    }
    placement[b.index] = {in_hbm, address};
    for (auto& core : chip.cores) {
      core->operand_values[b.index] = static_cast<std::uint32_t>(address / 512);
      if (!in_hbm && device_inputs.count(b.index) != 0U) {
        std::memcpy(core->vmem.data(address), device_inputs.at(b.index).data(), size);
      }
    }
    if (in_hbm && device_inputs.count(b.index) != 0U) chip.shared.hbm.write(address, device_inputs.at(b.index));
  }

  // 3. Simulate.
  sc_core::sc_start();
  result.fault = chip.fault;

  // 4. Collect.
  for (const auto& core : chip.cores) {
    result.cycles = std::max(result.cycles, core->cycle());
    result.cores.push_back(core->stats());
    for (std::size_t m = 0; m < core->mxus.size(); ++m) {
      result.units.push_back({fmt::format("core{}.mxu{}", core->core_index, m),
                              static_cast<double>(core->mxus[m].busy_cycles)});
    }
    result.units.push_back({fmt::format("core{}.vmem_port", core->core_index), core->vmem_port.busy_cycles()});
  }
  result.units.push_back({"hbm", chip.shared.hbm_port.busy_cycles()});
  result.hbm_bytes = chip.shared.hbm_port.bytes();
  result.seconds = static_cast<double>(result.cycles) / request.chip.clock_hz;
  for (const auto& b : exec.bindings) {
    if (!b.is_output || !placement.count(b.index)) continue;
    const auto [in_hbm, address] = placement.at(b.index);
    std::vector<std::uint8_t> bytes(device_bytes(b));
    if (in_hbm) {
      chip.shared.hbm.read(address, bytes);
    } else {
      std::memcpy(bytes.data(), chip.cores.front()->vmem.data(address), bytes.size());
    }
    result.output_bytes[b.index] = std::move(bytes);
  }
  return result;
}

}  // namespace tpuemu::chip
