// Semantics of the matrix units: weight pushes, multiplies, result pops.
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "chip/core.hpp"
#include "chip/semantics.hpp"

namespace tpuemu::chip {
namespace {

mxu::Mxu& unit(Core& c, const ExecOp& op) {
  // Not reached after isa::check_program, which refuses these programs first.
  if (c.mxus.empty()) {
    throw ProgramFault(
        fmt::format("mxu{}: {}'s {}x{} MXU is not modelled", op.unit, c.chip.name, c.chip.mxu.size, c.chip.mxu.size));
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
// cycle) names one bundle of one core. Copies no multiply holds any more
// (only the pool does: use_count 1; multiplies release theirs on this
// thread, after their arithmetic finished) are reused, so a bundle costs no
// allocation.
const SingleThreadRc<mxu::SharedLhs>& lhs_copy(const Core& c, const vpu::Vreg& lhs) {
  struct Last {
    std::uint64_t serial = 0;
    const vpu::Vreg* reg = nullptr;
    std::uint64_t cycle = 0;
    SingleThreadRc<mxu::SharedLhs> copy;
    std::vector<SingleThreadRc<mxu::SharedLhs>> pool;  // every copy made, reused in turn
    std::size_t next = 0;                              // where the search for a free one starts
  };
  constexpr std::size_t kMaxPool = 256;
  thread_local Last last;
  const std::uint64_t serial = c.mxus.front().serial();
  if (!last.copy || last.serial != serial || last.reg != &lhs || last.cycle != c.now()) {
    last.copy.reset();
    SingleThreadRc<mxu::SharedLhs> copy;
    for (std::size_t i = 0; i < last.pool.size() && !copy; ++i) {
      auto& candidate = last.pool[(last.next + i) % last.pool.size()];
      if (candidate.use_count() == 1) {
        copy = candidate;
        last.next = (last.next + i + 1) % last.pool.size();
      }
    }
    if (copy) {
      copy->value = lhs;
      copy->scan.state.store(mxu::LhsScan::kEmpty, std::memory_order_relaxed);
    } else {
      copy = SingleThreadRc<mxu::SharedLhs>::make(lhs);
      if (last.pool.size() < kMaxPool) last.pool.push_back(copy);
    }
    last.serial = serial;
    last.reg = &lhs;
    last.cycle = c.now();
    last.copy = std::move(copy);
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
  std::unique_ptr<vpu::Vreg>& out = c.stage_vreg_buffer(op);
  unit(c, op).pop_into(out);
  if (!c.options.compute_numerics) return;  // a timing-only result is discarded (Core::stage_vreg_buffer)
  // The result was usually written by a host thread on another core: start
  // fetching all of it now, so the op that reads it (a bundle or two later)
  // finds it in this core's cache. A hint only.
  const auto* bytes = reinterpret_cast<const char*>(out->words.data());
  for (std::size_t at = 0; at < sizeof(out->words); at += 64) __builtin_prefetch(bytes + at);
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
