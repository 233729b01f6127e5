// Semantics of the matrix units: weight pushes, multiplies, result pops.
#include <fmt/format.h>

#include <cstdint>
#include <memory>

#include "chip/core.hpp"
#include "chip/semantics.hpp"

namespace tpuemu::chip {
namespace {

mxu::Mxu& unit(Core& c, const ExecOp& op) {
  // Not reached after isa::check_program, which refuses these programs first.
  if (c.mxus.empty()) {
    throw ProgramFault(fmt::format("mxu{}: {}'s {}x{} MXU is not modelled", op.unit, c.chip.name, c.chip.mxu.size,
                                   c.chip.mxu.size));
  }
  if (op.unit >= c.mxus.size()) {
    throw ProgramFault(
        fmt::format("mxu{} does not exist: {} has {} MXUs per core", op.unit, c.chip.name, c.mxus.size()));
  }
  return c.mxus[op.unit];
}

const vpu::Vreg& vreg_operand(Core& c, const ExecOp& op, std::size_t i) {
  return c.vregs[op.op->operands[i].reg.index];
}

// A copy of a register read by multiplies deferred to the host pool, shared
// by the multiplies of one bundle that read it (the 4 units fed the same LHS):
// within a bundle registers do not change, and (first unit's serial, register,
// cycle) names one bundle of one core.
const std::shared_ptr<const mxu::SharedLhs>& lhs_copy(const Core& c, const vpu::Vreg& lhs) {
  struct Last {
    std::uint64_t serial = 0;
    const vpu::Vreg* reg = nullptr;
    std::uint64_t cycle = 0;
    std::shared_ptr<const mxu::SharedLhs> copy;
  };
  thread_local Last last;
  const std::uint64_t serial = c.mxus.front().serial();
  if (!last.copy || last.serial != serial || last.reg != &lhs || last.cycle != c.now()) {
    last = Last{serial, &lhs, c.now(), std::make_shared<const mxu::SharedLhs>(lhs)};
  }
  return last.copy;
}

void multiply(Core& c, const ExecOp& op, bool latch, bool masked) {
  mxu::Mxu& m = unit(c, op);
  const vpu::Vmask* mask = masked ? &c.masks[op.op->operands[0].reg.index] : nullptr;
  const vpu::Vreg& lhs = vreg_operand(c, op, masked ? 1 : 0);
  const auto fault = m.defers_multiplies() ? m.matmul(lhs, mask, latch, c.now(), lhs_copy(c, lhs))
                                           : m.matmul(lhs, mask, latch, c.now());
  if (fault) throw ProgramFault(fault->message);
  c.record_mxu_flops(2ULL * vpu::kSublanes * c.chip.mxu.size * c.chip.mxu.size);
}

void push(Core& c, const ExecOp& op, bool transposed) {
  if (auto fault = unit(c, op).push_weights(vreg_operand(c, op, 0), transposed, c.now())) {
    throw ProgramFault(fault->message);
  }
}

}  // namespace

void exec_VmatpushMsra(Core& c, const ExecOp& op) {
  push(c, op, false);
}
void exec_VmatpushXposeMsra(Core& c, const ExecOp& op) {
  push(c, op, true);
}
void exec_VmatmulLatch(Core& c, const ExecOp& op) {
  multiply(c, op, true, false);
}
void exec_Vmatmul(Core& c, const ExecOp& op) {
  multiply(c, op, false, false);
}
void exec_VmatmulMskLatch(Core& c, const ExecOp& op) {
  multiply(c, op, true, true);
}
void exec_VmatmulMsk(Core& c, const ExecOp& op) {
  multiply(c, op, false, true);
}
void exec_VpopMrf(Core& c, const ExecOp& op) {
  unit(c, op).pop_into(c.stage_vreg_buffer(op));
}

std::uint64_t ready_mxu_matmul(Core& c, const ExecOp& op) {
  mxu::Mxu& m = unit(c, op);
  if (m.fifo_full()) {
    throw ProgramFault(
        fmt::format("the result FIFO of mxu{} is full ({} results, mxu.result_fifo_depth): pop results "
                    "before multiplying more",
                    op.unit, m.queued()));
  }
  c.set_stall_cause(StallCause::kUnitBusy);
  return m.next_matmul_cycle;
}

std::uint64_t ready_mxu_pop(Core& c, const ExecOp& op) {
  const mxu::Mxu& m = unit(c, op);
  if (m.backend() != nullptr) {
    if (auto failure = m.backend()->failure()) throw ProgramFault(*failure);
  }
  const std::optional<std::uint64_t> ready = m.head_ready_cycle(c.now());
  if (!ready) {
    throw ProgramFault(
        fmt::format("pop from the empty result FIFO of mxu{}: no multiply is queued or in flight", op.unit));
  }
  c.set_stall_cause(StallCause::kFifo);
  return *ready;
}

}  // namespace tpuemu::chip
