// Semantics of vector loads/stores, sync flags and DMAs.
#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "chip/core.hpp"
#include "chip/semantics.hpp"

namespace tpuemu::chip {
namespace {

constexpr std::uint64_t kRowBytes = vpu::kLanes * 4;
constexpr std::uint64_t kVregBytes = vpu::kSublanes * kRowBytes;
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

// Timing-only runs move no vector data: a load or store only checks its rows.
void check_rows(const Core& core, const VmemAccess& a) {
  const std::uint32_t sublanes = a.mask & 0xFFU;
  if (sublanes == 0) return;
  // The highest enabled sublane's row is the last one: in range, all are.
  const auto last = static_cast<std::uint64_t>(std::bit_width(sublanes) - 1);
  if ((a.row + last * a.stride + 1) * kRowBytes <= core.vmem.size()) return;
  for (std::size_t s = 0; s < vpu::kSublanes; ++s) {
    if ((a.mask >> s & 1U) != 0) core.check_range(core.vmem, "VMEM", (a.row + s * a.stride) * kRowBytes, kRowBytes);
  }
}

// The rows a load or store touches, for the memory profile.
void profile_rows(Core& core, const VmemAccess& a, bool is_write) {
  core.profile_access(MemoryProfile::Space::kVmem, a.row * kRowBytes, (7 * std::uint64_t{a.stride} + 1) * kRowBytes,
                      core.now(), is_write);
}

void store(Core& core, const ExecOp& op, const vpu::Vmask* element_mask, std::size_t source_operand) {
  const VmemAccess a = vmem_access(core, op, 0);
  if (core.profile != nullptr) profile_rows(core, a, true);
  if (!core.options.compute_numerics) {
    check_rows(core, a);
    return;
  }
  const vpu::Vreg& v = core.vregs[op.op->operands[source_operand].reg.index];
  if (element_mask == nullptr && a.stride == 1 && a.mask == 0xFF && core.vmem.in_range(a.row * kRowBytes, kVregBytes)) {
    // Eight consecutive rows, all written: one copy out of the register at commit.
    core.stage_vmem_copy(op, a.row * kRowBytes, reinterpret_cast<const std::uint8_t*>(v.words.data()), kVregBytes);
    return;
  }
  for (std::size_t s = 0; s < vpu::kSublanes; ++s) {
    if ((a.mask >> s & 1U) == 0) continue;
    const std::uint64_t address = (a.row + s * a.stride) * kRowBytes;
    std::uint8_t* out = core.stage_vmem_write(op, address, kRowBytes, element_mask == nullptr);
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
  if (c.profile != nullptr) profile_rows(c, a, false);
  if (!c.options.compute_numerics) {
    check_rows(c, a);
    return;
  }
  vpu::Vreg& out = c.stage_vreg(op);
  if (a.stride == 1 && a.mask == 0xFF && c.vmem.in_range(a.row * kRowBytes, kVregBytes)) {
    std::memcpy(out.words.data(), c.vmem.data(a.row * kRowBytes), kVregBytes);  // eight consecutive rows
    // Programs mostly walk VMEM upwards (accumulators, input blocks): ask for
    // the next eight rows now. A hint only.
    if (c.vmem.in_range((a.row + 8) * kRowBytes, kVregBytes)) {
      const auto* next = reinterpret_cast<const char*>(c.vmem.data((a.row + 8) * kRowBytes));
      for (std::size_t at = 0; at < kVregBytes; at += 64) __builtin_prefetch(next + at);
    }
    return;
  }
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
Fabric& fabric_of(Core& core, const ExecOp& op) {
  if (core.shared.fabric == nullptr) {
    throw ProgramFault(fmt::format("{} is a pod extension: run the program on a pod (tpuemu run --topology ...)",
                                   isa::mnemonic_text(op.id, op.unit)));
  }
  return *core.shared.fabric;
}

// Checks a destination chip and core named by a pod op.
void check_destination(const Core& core, std::uint32_t chip, std::uint32_t dst_core) {
  const PodIdentity& pod = core.shared.identity;
  if (chip >= pod.chip_count) {
    throw ProgramFault(fmt::format("destination chip {} does not exist: the pod has chips 0..{} ({}x{}x{})", chip,
                                   pod.chip_count - 1, pod.dims[0], pod.dims[1], pod.dims[2]));
  }
  if (dst_core >= core.chip.tensorcores_per_chip) {
    throw ProgramFault(fmt::format("destination core {} does not exist: {} has {} TensorCore(s) per chip", dst_core,
                                   core.chip.name, core.chip.tensorcores_per_chip));
  }
}

// Operands: [thread], src, size_in_granules, chip, core, dst, src_syncflagno, dst_syncflagno.
void remote_dma(Core& core, const ExecOp& op, bool src_vmem, bool dst_vmem) {
  Fabric& fabric = fabric_of(core, op);
  const std::uint64_t src = std::uint64_t{core.scalar_operand(op, 1)} * kGranuleBytes;
  const std::uint64_t granules = core.scalar_operand(op, 2);
  RemoteSend m;
  m.src_chip = core.shared.identity.chip;
  m.src_core = core.core_index;
  m.dst_chip = core.scalar_operand(op, 3);
  m.dst_core = core.scalar_operand(op, 4);
  m.dst_space = dst_vmem ? RemoteSend::Space::kVmem : RemoteSend::Space::kHbm;
  m.dst_address = std::uint64_t{core.scalar_operand(op, 5)} * kGranuleBytes;
  m.has_src_flag = true;
  m.src_flag = flag_index(core, op, 6);
  m.dst_flag = flag_index(core, op, 7);
  m.src_credit = static_cast<std::int32_t>(granules);
  m.dst_credit = static_cast<std::int32_t>(granules);
  m.bytes = granules * kGranuleBytes;
  if (granules == 0) throw ProgramFault("remote DMA of 0 granules");
  check_destination(core, m.dst_chip, m.dst_core);
  if (m.dst_chip == m.src_chip && m.dst_core == m.src_core) {
    throw ProgramFault("remote DMA to its own core: use a local DMA");
  }
  const std::uint64_t dst_size = dst_vmem ? core.chip.vmem.size_bytes : core.chip.hbm.size_bytes;
  if (m.dst_address + m.bytes > dst_size) {
    throw ProgramFault(
        fmt::format("remote DMA destination out of range: bytes [0x{:x}, 0x{:x}) of chip {}'s {}, which "
                    "holds 0x{:x} bytes",
                    m.dst_address, m.dst_address + m.bytes, m.dst_chip, dst_vmem ? "VMEM" : "HBM", dst_size));
  }
  if (src_vmem) {
    core.check_range(core.vmem, "VMEM", src, m.bytes);
  } else if (!core.shared.hbm.in_range(src, m.bytes)) {
    throw ProgramFault(fmt::format("HBM access out of range: bytes [0x{:x}, 0x{:x}) but HBM holds 0x{:x} bytes", src,
                                   src + m.bytes, core.shared.hbm.size()));
  }
  // The payload is read at issue: a program may reuse the source only once
  // its source flag is credited, so reading it later could not differ.
  if (core.options.compute_numerics) {
    m.payload.resize(m.bytes);
    if (src_vmem) {
      std::memcpy(m.payload.data(), core.vmem.data(src), m.bytes);
    } else {
      core.shared.hbm.read(src, m.payload);
    }
  }
  m.start_cycle = core.now() + core.chip.latency(LatencyClass::kDmaIssue).value();
  m.source_bundle = op.bundle;
  core.profile_access(src_vmem ? MemoryProfile::Space::kVmem : MemoryProfile::Space::kHbm, src, m.bytes, core.now(),
                      false);
  // Read from HBM: the bytes take their turns on the chip's HBM port from the
  // send's start, as a local DMA's would (the send itself is not held back:
  // the port outruns a link; README "HBM port").
  if (!src_vmem && core.chip.dma.remote_traffic != 0) {
    core.shared.hbm_port.start_untracked(static_cast<double>(m.start_cycle), m.bytes, core.core_index);
  }
  core.note_remote_issued(m.bytes);
  fabric.send(std::move(m));
}
}  // namespace

void exec_DmaRemoteHbmToHbm(Core& c, const ExecOp& op) {
  remote_dma(c, op, false, false);
}
void exec_DmaRemoteVmemToVmem(Core& c, const ExecOp& op) {
  remote_dma(c, op, true, true);
}
void exec_DmaRemoteHbmToVmem(Core& c, const ExecOp& op) {
  remote_dma(c, op, false, true);
}
void exec_DmaRemoteVmemToHbm(Core& c, const ExecOp& op) {
  remote_dma(c, op, true, false);
}
namespace {
// Operands: [thread], src, size_in_granules, (reduce: chip), dst, src_syncflagno, dst_syncflagno, (reduce: bf16).
// The pod matches reductions into rounds and checks that the fabric is switched.
void nvls_dma(Core& core, const ExecOp& op, bool reduce) {
  Fabric& fabric = fabric_of(core, op);
  if (core.core_index != 0) {
    throw ProgramFault(fmt::format("{}: in-network ops are issued by core 0 of each chip, not core {}",
                                   isa::mnemonic_text(op.id, op.unit), core.core_index));
  }
  const std::size_t at = reduce ? 1 : 0;  // operand shift after the chip operand
  const std::uint64_t src = std::uint64_t{core.scalar_operand(op, 1)} * kGranuleBytes;
  const std::uint64_t granules = core.scalar_operand(op, 2);
  if (granules == 0) throw ProgramFault("in-network DMA of 0 granules");
  RemoteSend m;
  m.kind = reduce ? RemoteSend::Kind::kNvlsReduce : RemoteSend::Kind::kNvlsMulticast;
  m.src_chip = core.shared.identity.chip;
  m.src_core = 0;
  m.dst_chip = reduce ? core.scalar_operand(op, 3) : m.src_chip;
  m.dst_core = 0;
  m.dst_space = RemoteSend::Space::kHbm;
  m.dst_address = std::uint64_t{core.scalar_operand(op, 3 + at)} * kGranuleBytes;
  m.has_src_flag = true;
  m.src_flag = flag_index(core, op, 4 + at);
  m.dst_flag = flag_index(core, op, 5 + at);
  m.src_credit = static_cast<std::int32_t>(granules);
  m.dst_credit = static_cast<std::int32_t>(granules);
  m.bytes = granules * kGranuleBytes;
  if (reduce) {
    const std::uint32_t bf16 = core.scalar_operand(op, 7);
    if (bf16 > 1) throw ProgramFault(fmt::format("dma.nvls.reduce: bf16={} is neither 0 (f32) nor 1 (bf16)", bf16));
    m.bf16 = bf16 == 1;
    check_destination(core, m.dst_chip, 0);
  }
  if (m.dst_address + m.bytes > core.chip.hbm.size_bytes) {
    throw ProgramFault(
        fmt::format("in-network DMA destination out of range: bytes [0x{:x}, 0x{:x}) of HBM, which "
                    "holds 0x{:x} bytes",
                    m.dst_address, m.dst_address + m.bytes, core.chip.hbm.size_bytes));
  }
  if (!core.shared.hbm.in_range(src, m.bytes)) {
    throw ProgramFault(fmt::format("HBM access out of range: bytes [0x{:x}, 0x{:x}) but HBM holds 0x{:x} bytes", src,
                                   src + m.bytes, core.shared.hbm.size()));
  }
  if (core.options.compute_numerics) {
    m.payload.resize(m.bytes);
    core.shared.hbm.read(src, m.payload);
  }
  m.start_cycle = core.now() + core.chip.latency(LatencyClass::kDmaIssue).value();
  m.source_bundle = op.bundle;
  core.profile_access(MemoryProfile::Space::kHbm, src, m.bytes, core.now(), false);
  if (core.chip.dma.remote_traffic != 0) {
    core.shared.hbm_port.start_untracked(static_cast<double>(m.start_cycle), m.bytes,
                                         core.core_index);  // read from HBM, as above
  }
  core.note_remote_issued(m.bytes);
  fabric.send(std::move(m));
}
}  // namespace

void exec_DmaNvlsReduce(Core& c, const ExecOp& op) {
  nvls_dma(c, op, true);
}
void exec_DmaNvlsMulticast(Core& c, const ExecOp& op) {
  nvls_dma(c, op, false);
}

// Operands: chip, core, flag, value. A one-granule message.
void exec_VsyncaddRemote(Core& c, const ExecOp& op) {
  Fabric& fabric = fabric_of(c, op);
  RemoteSend m;
  m.src_chip = c.shared.identity.chip;
  m.src_core = c.core_index;
  m.dst_chip = c.scalar_operand(op, 0);
  m.dst_core = c.scalar_operand(op, 1);
  check_destination(c, m.dst_chip, m.dst_core);
  m.dst_space = RemoteSend::Space::kFlagOnly;
  m.dst_flag = flag_index(c, op, 2);
  m.dst_credit = static_cast<std::int32_t>(c.scalar_operand(op, 3));
  m.bytes = kGranuleBytes;
  m.start_cycle = c.now() + 1;
  m.source_bundle = op.bundle;
  fabric.send(std::move(m));
}

std::uint64_t ready_dma_done_wait(Core& c, const ExecOp& op) {
  const std::uint32_t f = flag_index(c, op, 0);
  const auto want = static_cast<std::int32_t>(c.scalar_operand(op, 1));
  c.set_stall_cause(StallCause::kSyncFlag);
  const auto at = c.flag_satisfied_at(f, want);
  if (!at && c.in_pod()) {
    return c.block({Core::BlockReason::Kind::kSyncFlag, f, want});
  }
  // A remote credit not delivered yet may reach the flag before the local DMA does.
  if (at && *at > c.now() && c.in_pod()) return c.ready_unless_delivered_earlier(*at);
  if (!at) {
    throw ProgramFault(
        fmt::format("deadlock: waits for sync flag {} to reach {}; it holds {} and no DMA in flight adds to it", f,
                    want, c.flags[f]));
  }
  return *at;
}

std::uint64_t ready_dma_issue(Core& c, const ExecOp&) {
  c.set_stall_cause(StallCause::kDmaQueue);
  if (c.dmas_in_flight() < c.chip.dma.max_in_flight) return c.now();
  // Full: a local DMA's completion is known; a remote one's only when the network sends it.
  if (c.local_dmas_in_flight() > 0) {
    const std::uint64_t local = c.earliest_dma_completion();
    if (local > c.now() && c.has_remote_dmas_in_flight()) return c.ready_unless_delivered_earlier(local);
    return local;
  }
  return c.block({Core::BlockReason::Kind::kDmaQueue, 0, 0});
}

}  // namespace tpuemu::chip
