// Binds each row of the instruction table to its semantics and readiness check.
#include <array>

#include "chip/core.hpp"
#include "chip/semantics.hpp"

namespace tpuemu::chip {

std::uint64_t ready_dma_done_wait(Core&, const ExecOp&);
std::uint64_t ready_dma_issue(Core&, const ExecOp&);
std::uint64_t ready_mxu_matmul(Core&, const ExecOp&);
std::uint64_t ready_mxu_pop(Core&, const ExecOp&);
std::uint64_t ready_token_pop(Core&, const ExecOp&);
std::uint64_t ready_transpose_pop(Core&, const ExecOp&);

namespace {

constexpr std::array kSemantics{
#define TPUEMU_GROUP(title)
#define TPUEMU_OP(name, mnemonic, syntax, slot, latency, origin, summary) &exec_##name,
#include "isa/ops.def"
#undef TPUEMU_OP
#undef TPUEMU_GROUP
};

}  // namespace

ExecFn semantics_of(isa::OpId id) {
  return kSemantics.at(static_cast<std::size_t>(id));
}

ReadyFn readiness_of(isa::OpId id) {
  using isa::OpId;
  switch (id) {
    case OpId::kDmaDoneWait:
      return &ready_dma_done_wait;
    case OpId::kDmaHbmToVmem:
    case OpId::kDmaVmemToHbm:
    case OpId::kDmaHbmToSmem:
    case OpId::kDmaSmemToHbm:
    case OpId::kDmaHbmToHbm:
    case OpId::kDmaHbmToVmemStrided:
    case OpId::kDmaVmemToHbmStrided:
    case OpId::kDmaRemoteHbmToHbm:
    case OpId::kDmaRemoteVmemToVmem:
    case OpId::kDmaRemoteHbmToVmem:
    case OpId::kDmaRemoteVmemToHbm:
    case OpId::kDmaNvlsReduce:
    case OpId::kDmaNvlsMulticast:
      return &ready_dma_issue;
    case OpId::kVmatmulLatch:
    case OpId::kVmatmul:
    case OpId::kVmatmulMskLatch:
    case OpId::kVmatmulMsk:
      return &ready_mxu_matmul;
    case OpId::kVpopMrf:
      return &ready_mxu_pop;
    case OpId::kVpopEup:
    case OpId::kVpopPermute:
    case OpId::kSpop:
      return &ready_token_pop;
    case OpId::kVpopTrf:
      return &ready_transpose_pop;
    default:
      return nullptr;
  }
}

}  // namespace tpuemu::chip
