// Semantics of vector loads/stores, sync flags and DMAs.
#include <fmt/format.h>

#include <cstring>

#include "chip/core.hpp"
#include "chip/semantics.hpp"

namespace tpuemu::chip {
namespace {

constexpr std::uint64_t kRowBytes = vpu::kLanes * 4;
constexpr std::uint64_t kGranuleBytes = 32;

struct VmemAccess {
  std::uint64_t row;     // first row
  std::uint32_t stride;  // rows between sublanes
  std::uint32_t mask;    // enabled sublanes
};

VmemAccess vmem_access(const Core& core, const ExecOp& op, std::size_t i) {
  const isa::Operand& o = op.op->operands[i];
  VmemAccess a{};
  a.row = op.value[i];
  if (o.mem.base_reg) a.row = static_cast<std::uint32_t>(core.sregs[o.mem.base_reg->index] + op.value[i]);
  a.stride = o.mem.sublane_stride.value_or(1);
  a.mask = o.mem.sublane_mask.value_or(0xFF);
  if (o.mem.sublane_mask_reg) a.mask = core.sregs[o.mem.sublane_mask_reg->index] & 0xFFU;
  return a;
}

std::uint32_t flag_index(const Core& core, const ExecOp& op, std::size_t i) {
  const std::uint32_t f = core.scalar_operand(op, i);
  if (f >= core.flags.size()) {
    throw ProgramFault(fmt::format("sync flag {} out of range: the core has {} (sflag.count)", f, core.flags.size()));
  }
  return f;
}

void store(Core& core, const ExecOp& op, const vpu::Vmask* element_mask, std::size_t source_operand) {
  const VmemAccess a = vmem_access(core, op, 0);
  const vpu::Vreg& v = core.vregs[op.op->operands[source_operand].reg.index];
  for (std::size_t s = 0; s < vpu::kSublanes; ++s) {
    if ((a.mask >> s & 1U) == 0) continue;
    const std::uint64_t address = (a.row + s * a.stride) * kRowBytes;
    std::uint8_t* out = core.stage_vmem_write(op, address, kRowBytes);
    if (element_mask == nullptr) {
      std::memcpy(out, &v.words[s * vpu::kLanes], kRowBytes);
    } else {
      for (std::size_t l = 0; l < vpu::kLanes; ++l) {
        if (element_mask->bits[s * vpu::kLanes + l] != 0) std::memcpy(out + l * 4, &v.words[s * vpu::kLanes + l], 4);
      }
    }
  }
}

PendingDma::Kind dma_kind(isa::OpId id) {
  switch (id) {
    case isa::OpId::kDmaHbmToVmem:
    case isa::OpId::kDmaHbmToVmemStrided:
      return PendingDma::Kind::kHbmToVmem;
    case isa::OpId::kDmaVmemToHbm:
    case isa::OpId::kDmaVmemToHbmStrided:
      return PendingDma::Kind::kVmemToHbm;
    case isa::OpId::kDmaHbmToSmem:
      return PendingDma::Kind::kHbmToSmem;
    case isa::OpId::kDmaSmemToHbm:
      return PendingDma::Kind::kSmemToHbm;
    default:
      return PendingDma::Kind::kHbmToHbm;
  }
}

// Operands: [thread], src, size_in_granules, dst, flag (+ block_granules, src/dst stride for .strided).
void dma(Core& core, const ExecOp& op, bool strided) {
  PendingDma d;
  d.kind = dma_kind(op.id);
  const std::uint64_t src = core.scalar_operand(op, 1);
  const std::uint64_t granules = core.scalar_operand(op, 2);
  const std::uint64_t dst = core.scalar_operand(op, 3);
  d.flag = flag_index(core, op, 4);
  d.src = src * kGranuleBytes;
  d.dst = dst * kGranuleBytes;
  d.credit = static_cast<std::int32_t>(granules);
  if (granules == 0) throw ProgramFault("DMA of 0 granules");
  if (strided) {
    const std::uint64_t block = core.scalar_operand(op, 5);
    const std::uint64_t stride = core.scalar_operand(op, 6);
    if (block == 0 || granules % block != 0) {
      throw ProgramFault(
          fmt::format("strided DMA: size_in_granules {} is not a multiple of block_granules {}", granules, block));
    }
    d.block_bytes = block * kGranuleBytes;
    d.blocks = granules / block;
    const bool hbm_is_src = d.kind == PendingDma::Kind::kHbmToVmem;
    d.src_stride = hbm_is_src ? stride * kGranuleBytes : d.block_bytes;
    d.dst_stride = hbm_is_src ? d.block_bytes : stride * kGranuleBytes;
  } else {
    d.block_bytes = granules * kGranuleBytes;
    d.blocks = 1;
  }
  // Bounds of every block, in the space it touches.
  const std::uint64_t src_span = (d.blocks - 1) * d.src_stride + d.block_bytes;
  const std::uint64_t dst_span = (d.blocks - 1) * d.dst_stride + d.block_bytes;
  auto check_hbm = [&](std::uint64_t address, std::uint64_t bytes) {
    if (!core.shared.hbm.in_range(address, bytes)) {
      throw ProgramFault(fmt::format("HBM access out of range: bytes [0x{:x}, 0x{:x}) but HBM holds 0x{:x} bytes",
                                     address, address + bytes, core.shared.hbm.size()));
    }
  };
  switch (d.kind) {
    case PendingDma::Kind::kHbmToVmem:
      check_hbm(d.src, src_span);
      core.check_range(core.vmem, "VMEM", d.dst, dst_span);
      break;
    case PendingDma::Kind::kVmemToHbm:
      core.check_range(core.vmem, "VMEM", d.src, src_span);
      check_hbm(d.dst, dst_span);
      break;
    case PendingDma::Kind::kHbmToSmem:
      check_hbm(d.src, src_span);
      core.check_range(core.smem, "SMEM", d.dst, dst_span);
      break;
    case PendingDma::Kind::kSmemToHbm:
      core.check_range(core.smem, "SMEM", d.src, src_span);
      check_hbm(d.dst, dst_span);
      break;
    case PendingDma::Kind::kHbmToHbm:
      check_hbm(d.src, src_span);
      check_hbm(d.dst, dst_span);
      break;
  }
  core.issue_dma(d);
}

}  // namespace

void exec_Vld(Core& c, const ExecOp& op) {
  const VmemAccess a = vmem_access(c, op, 0);
  vpu::Vreg& out = c.stage_vreg(op);
  for (std::size_t s = 0; s < vpu::kSublanes; ++s) {
    if ((a.mask >> s & 1U) == 0) {
      std::memset(&out.words[s * vpu::kLanes], 0, kRowBytes);  // disabled sublanes read as zero (assumed)
      continue;
    }
    const std::uint64_t address = (a.row + s * a.stride) * kRowBytes;
    c.check_range(c.vmem, "VMEM", address, kRowBytes);
    std::memcpy(&out.words[s * vpu::kLanes], c.vmem.data(address), kRowBytes);
  }
}
void exec_Vst(Core& c, const ExecOp& op) {
  store(c, op, nullptr, 1);
}
void exec_VstMsk(Core& c, const ExecOp& op) {
  store(c, op, &c.masks[op.op->operands[1].reg.index], 2);
}

void exec_Vsyncpa(Core& c, const ExecOp& op) {
  c.flags[flag_index(c, op, 0)] = static_cast<std::int32_t>(c.scalar_operand(op, 1));
}
void exec_Vsyncadd(Core& c, const ExecOp& op) {
  const std::uint32_t f = flag_index(c, op, 0);
  c.flags[f] = static_cast<std::int32_t>(static_cast<std::uint32_t>(c.flags[f]) + c.scalar_operand(op, 1));
}
// The wait itself is the readiness check (ready_dma_done_wait); at issue the flag holds enough.
void exec_DmaDoneWait(Core&, const ExecOp&) {}

void exec_DmaHbmToVmem(Core& c, const ExecOp& op) {
  dma(c, op, false);
}
void exec_DmaVmemToHbm(Core& c, const ExecOp& op) {
  dma(c, op, false);
}
void exec_DmaHbmToSmem(Core& c, const ExecOp& op) {
  dma(c, op, false);
}
void exec_DmaSmemToHbm(Core& c, const ExecOp& op) {
  dma(c, op, false);
}
void exec_DmaHbmToHbm(Core& c, const ExecOp& op) {
  dma(c, op, false);
}
void exec_DmaHbmToVmemStrided(Core& c, const ExecOp& op) {
  dma(c, op, true);
}
void exec_DmaVmemToHbmStrided(Core& c, const ExecOp& op) {
  dma(c, op, true);
}

namespace {
[[noreturn]] void needs_pod(const ExecOp& op) {
  throw ProgramFault(fmt::format("{} is a pod extension; running it needs a pod (not modelled yet)",
                                 isa::mnemonic_text(op.id, op.unit)));
}
}  // namespace
void exec_DmaRemoteHbmToHbm(Core&, const ExecOp& op) {
  needs_pod(op);
}
void exec_DmaRemoteVmemToVmem(Core&, const ExecOp& op) {
  needs_pod(op);
}
void exec_DmaRemoteHbmToVmem(Core&, const ExecOp& op) {
  needs_pod(op);
}
void exec_DmaRemoteVmemToHbm(Core&, const ExecOp& op) {
  needs_pod(op);
}
void exec_VsyncaddRemote(Core&, const ExecOp& op) {
  needs_pod(op);
}

std::uint64_t ready_dma_done_wait(Core& c, const ExecOp& op) {
  const std::uint32_t f = flag_index(c, op, 0);
  const auto want = static_cast<std::int32_t>(c.scalar_operand(op, 1));
  c.set_stall_cause(StallCause::kSyncFlag);
  const auto at = c.flag_satisfied_at(f, want);
  if (!at) {
    throw ProgramFault(
        fmt::format("deadlock: waits for sync flag {} to reach {}; it holds {} and no DMA in flight adds to it", f,
                    want, c.flags[f]));
  }
  return *at;
}

std::uint64_t ready_dma_issue(Core& c, const ExecOp&) {
  c.set_stall_cause(StallCause::kDmaQueue);
  return c.dmas_in_flight() >= c.chip.dma.max_in_flight ? c.earliest_dma_completion() : c.now();
}

}  // namespace tpuemu::chip
