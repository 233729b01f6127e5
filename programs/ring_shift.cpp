// The ring shift's two programs (programs/generators.hpp: generate_ring_shift_send / _wait).
#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "programs/collectives.hpp"
#include "programs/generators.hpp"

namespace tpuemu::programs {
namespace {

constexpr std::uint64_t kShiftGranule = 32;

// The two flags at the top of the flag space: [sent, arrived].
std::string flag_allocation(const ChipConfig& chip) {
  if (chip.sflag.count < 2) throw std::invalid_argument("ring shift: the chip has fewer than 2 sync flags");
  return fmt::format(
      "#allocation0 [shape = 's32[2]{{0}}', space=sflag, size = 0x8, offset = 0x{:x}, tag = 'ring "
      "shift: sent, arrived']",
      (chip.sflag.count - 2) * 4);
}

std::uint64_t granules(const RingShiftSpec& spec) {
  const std::uint64_t bytes = spec.rows * spec.cols * 2;
  if (bytes == 0 || bytes % kShiftGranule != 0) {
    throw std::invalid_argument(
        fmt::format("ring shift: {} x {} bf16 is not a whole number of 32-byte granules", spec.rows, spec.cols));
  }
  return bytes / kShiftGranule;
}

}  // namespace

std::string generate_ring_shift_send(const RingShiftSpec& spec, const ici::Topology& topology, const ChipConfig& chip) {
  if (spec.axis >= topology.axis_count()) {
    throw std::invalid_argument(fmt::format("ring shift: axis {} is not one of the topology's {} axes",
                                            ici::axis_name(spec.axis), topology.axis_count()));
  }
  const std::uint64_t n = granules(spec);
  std::uint64_t stride = 1;  // linear ids: x + X*(y + Y*z)
  for (std::size_t a = 0; a < spec.axis; ++a) stride *= topology.length(a);
  const std::uint64_t length = topology.length(spec.axis);
  const std::string shape = fmt::format("bf16[{},{}]", spec.rows, spec.cols);
  std::string t;
  t += fmt::format(
      "// Ring shift, send: core 0 sends operand 0 ({} B) to operand 1 of the chip one step down axis {} ({} "
      "{}), then ends; the wait program completes it.\n",
      n * kShiftGranule, ici::axis_name(spec.axis),
      folded_ring_axis(topology, spec.axis) ? "the previous position of the folded ring of" : "c - 1 mod", length);
  t += flag_allocation(chip) + "\n\n";
  t += fmt::format(
      "{{ %s0 = inlined_call_operand.hbm [shape: {}, index: 0, kind: input, shape index: {{}}] ;; %s1 = "
      "inlined_call_operand.hbm [shape: {}, index: 1, kind: output, shape index: {{}}] }}\n",
      shape, shape);
  t += fmt::format("{{ %s2 = sid.{} ;; %s3 = sid.chip }}\n", ici::axis_name(spec.axis));
  t += "{ %s4 = sid.core ;; %p0 = scmp.eq.s32.totalorder %s2, 0 }\n";
  if (folded_ring_axis(topology, spec.axis)) {
    // The chip one ring position back on the folded ring (length - 1 on).
    t += "{ %p1 = scmp.eq.s32.totalorder %s4, 0 ;; %s8 = sshll.u32 %s0, 4 }\n";
    t += "{ %s9 = sshll.u32 %s1, 4 }\n";
    for (const ScalarOp& op : folded_ring_neighbour("s2", "s3", "s7", static_cast<std::uint32_t>(length),
                                                    static_cast<std::uint32_t>(length - 1), stride, "s5", "s6", "p2")) {
      t += "{ " + op.text + " }\n";
    }
  } else {
    t += fmt::format("{{ %p1 = scmp.eq.s32.totalorder %s4, 0 ;; %s5 = sadd.s32 %s3, {} }}\n", (length - 1) * stride);
    t += fmt::format("{{ %s6 = ssub.s32 %s3, {} ;; %s8 = sshll.u32 %s0, 4 }}\n", stride);
    t += "{ %s7 = scalar_select %p0, %s5, %s6 ;; %s9 = sshll.u32 %s1, 4 }\n";
  }
  t += fmt::format(
      "{{ %10 = dma.remote.hbm_to_hbm [thread:$0] (%p1) /*src=*/%s8, /*size_in_granules=*/{}, /*chip=*/%s7, "
      "/*core=*/%s4, /*dst=*/%s9, /*src_syncflagno=*/[#allocation0], /*dst_syncflagno=*/[#allocation0 + $0x1] }}\n",
      n);
  return t;
}

std::string generate_ring_shift_wait(const RingShiftSpec& spec, const ChipConfig& chip) {
  const std::uint64_t n = granules(spec);
  std::string t = "// Ring shift, wait: core 0 waits for its send to have left and its neighbour's to have arrived.\n";
  t += flag_allocation(chip) + "\n\n";
  t += "{ %s4 = sid.core }\n";
  t += "{ %p1 = scmp.eq.s32.totalorder %s4, 0 }\n";
  t += fmt::format("{{ %10 = dma.done.wait (%p1) [#allocation0], {} }}\n", n);
  t += fmt::format("{{ %11 = vsyncadd (%p1) [#allocation0], {} }}\n", (1ULL << 32) - n);
  t += fmt::format("{{ %12 = dma.done.wait (%p1) [#allocation0 + $0x1], {} }}\n", n);
  t += fmt::format("{{ %13 = vsyncadd (%p1) [#allocation0 + $0x1], {} }}\n", (1ULL << 32) - n);
  return t;
}

}  // namespace tpuemu::programs
